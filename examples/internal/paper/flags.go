package paper

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
)

// Command is what a paper-protocol command tells the driver about its
// flags.
type Command struct {
	// Name of the command (the flag set's name).
	Name string
	// Usage is the -h text printed before the flag list.
	Usage string
	// Defaults are the shared flags' defaults and help texts.
	Defaults compare.FlagDefaults
	// Proposal adds -proposal (default auto).
	Proposal bool
	// Models, when non-empty, adds -models: a comma-separated subset of
	// these names, all of them by default.
	Models []string
}

// Flags are the flags every paper-protocol command has.
type Flags struct {
	compare.CommonFlags
	Proposal compare.ProposalFlag // -proposal, with Command.Proposal
	Models   []string             // -models, with Command.Models; set by Parse

	cmd    Command
	models string
}

// Define returns a flag set for cmd, writing its errors and usage to
// stderr, with the shared flags defined on f. The command defines its own
// flags on it before calling Parse.
func (f *Flags) Define(cmd Command, stderr io.Writer) *flag.FlagSet {
	f.cmd = cmd
	fs := compare.NewFlagSet(cmd.Name, cmd.Usage, stderr)
	f.Register(fs, cmd.Defaults)
	if cmd.Proposal {
		f.Proposal.Register(fs, "auto")
	}
	if len(cmd.Models) > 0 {
		fs.StringVar(&f.models, "models", strings.Join(cmd.Models, ","), "models: "+strings.Join(cmd.Models, " and/or "))
	}
	return fs
}

// Parse parses args with fs from Define and checks the shared flags; the
// command checks its own flags after it.
func (f *Flags) Parse(fs *flag.FlagSet, args []string) error {
	if err := f.CommonFlags.Parse(fs, args); err != nil {
		return err
	}
	if len(f.cmd.Models) > 0 {
		var err error
		if f.Models, err = compare.ParseSet(f.models, f.cmd.Models...); err != nil {
			return fmt.Errorf("-models: %w", err)
		}
	}
	if err := f.Check(); err != nil {
		return err
	}
	if f.cmd.Proposal {
		return f.Proposal.Check()
	}
	return nil
}

// Budget describes the compute budget for the header: chains, time per
// chain and, with -iters, the iteration limit.
func (f *Flags) Budget() string {
	s := fmt.Sprintf("%d chains per method and step size, %v per chain", f.Chains, f.Runtime)
	if f.Iters > 0 {
		s += fmt.Sprintf(", at most %d iterations", f.Iters)
	}
	return s
}

// KSD describes the discrepancy for the header: computed on coords with
// the reference scores scores.
func (f *Flags) KSD(coords, scores string) string {
	return fmt.Sprintf("KSD: IMQ(1, -1/2) V-statistic on %s, %d draws per chain after %g burn-in, %s.",
		coords, f.KSDDraws, f.BurnIn, scores)
}
