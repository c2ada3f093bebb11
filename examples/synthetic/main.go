// Command synthetic reproduces the paper's appendix Tables 7 and 8: SGLD on
// synthetic stochastic volatility (SVM) and GARCH data with the full-data
// particle filter gradient (Full), subsequences without a buffer (No
// Buffer) and buffered subsequences (Buffer), all run for the same compute
// time and compared by the kernel Stein discrepancy, whose score is the
// full-sequence particle filter gradient.
//
// Run go run ./examples/synthetic -h for the flags; see README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() { compare.Main("synthetic", run) }

// experiment is one model of the comparison.
type experiment struct {
	name  string
	model ssm.Model
	truth []float64 // natural parameters generating the data
	start []float64 // natural parameters every chain starts from (plus jitter)
	paper compare.PaperTable
}

func experiments() map[string]experiment {
	return map[string]experiment{
		// Section 5.2 of the paper: (φ, σ, τ) = (0.9, 0.5, 0.5).
		"svm": {name: "svm", model: models.SVM{}, truth: []float64{0.9, 0.5, 0.5}, start: []float64{0.5, 1, 1}, paper: paperSVM},
		// (α, β, γ, τ) = (0.1, 0.8, 0.05, 0.3), i.e. μ = α/(1−β−γ) = 2/3,
		// φ = β+γ = 0.85, λ = β/(β+γ) = 16/17.
		"garch": {name: "garch", model: models.GARCH{}, truth: []float64{0.1 / 0.15, 0.85, 0.8 / 0.85, 0.3}, start: []float64{1, 0.7, 0.8, 0.5}, paper: paperGARCH},
	}
}

type config struct {
	compare.CommonFlags
	proposal compare.ProposalFlag
	models   []string
	T        int
	ksdN     int
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := compare.NewFlagSet("synthetic", `Usage: go run ./examples/synthetic [flags]

Appendix Tables 7 and 8 of the paper: SGLD on synthetic SVM data
(phi, sigma, tau) = (0.9, 0.5, 0.5) and GARCH data (alpha, beta, gamma, tau)
= (0.1, 0.8, 0.05, 0.3), T observations, with Full (S = T), No Buffer (S,
B = 0) and Buffer (S, B) particle filter gradients (N particles), each run
for the same compute time per chain. The SGLD step is h = eps / T (eps is
the step size per observation); each method's eps is chosen from the grid
by the smallest mean log10 KSD, computed on the unconstrained parameters
(SVM: atanh phi, log sigma, log tau; GARCH: logit(mu/2), logit phi,
logit lambda, log tau) with full-sequence particle filter scores (-ksdN
particles). Prints the grid search, our tables next to the paper's, and
writes results_<model>.json and MSE traces mse_<model>_<param>.png to -out.

Longer runs: -time 1m -ksddraws 200. Defaults take 3-5 minutes.

Flags:`, stderr)
	c := &config{}
	c.Register(fs, compare.FlagDefaults{
		Out:        filepath.Join("out", "synthetic"),
		KSDDraws:   25,
		EpsHelp:    "comma-separated step sizes per observation (h = eps/T)",
		NHelp:      "particles of the gradient estimators",
		BurnInHelp: "fraction of each chain's iterations discarded before the KSD (0 keeps all)",
	})
	c.proposal.Register(fs, "auto")
	ms := fs.String("models", "svm,garch", "models: svm and/or garch")
	fs.IntVar(&c.T, "T", 1000, "sequence length")
	fs.IntVar(&c.ksdN, "ksdN", 1000, "particles of the full-sequence filter giving the KSD scores")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	var err error
	if c.models, err = compare.ParseSet(*ms, "svm", "garch"); err != nil {
		return nil, fmt.Errorf("-models: %w", err)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	if err := c.proposal.Check(); err != nil {
		return nil, err
	}
	switch {
	case c.N < 1 || c.ksdN < 1:
		return nil, fmt.Errorf("-N = %d and -ksdN = %d must be at least 1", c.N, c.ksdN)
	case c.S+2*c.B > c.T:
		return nil, fmt.Errorf("S + 2B = %d exceeds the sequence length T = %d", c.S+2*c.B, c.T)
	case c.KSDDraws < 2:
		return nil, fmt.Errorf("-ksddraws = %d must be at least 2", c.KSDDraws)
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "SGLD on synthetic data, T = %d; %d chains per method and step size, %v per chain", c.T, c.Chains, c.Runtime)
	if c.Iters > 0 {
		fmt.Fprintf(stdout, ", at most %d iterations", c.Iters)
	}
	fmt.Fprintf(stdout, "\nKSD: IMQ(1, -1/2) V-statistic on the unconstrained parameters, %d draws per chain after %g burn-in, full-sequence PF scores (N = %d).\n",
		c.KSDDraws, c.BurnIn, c.ksdN)
	all := experiments()
	for k, name := range c.models {
		if err := runModel(stdout, stderr, c, all[name], uint64(k)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	fmt.Fprintf(stdout, "\nOutputs in %s\n", c.Out)
	return nil
}

func runModel(stdout, stderr io.Writer, c *config, ex experiment, stream uint64) error {
	m := ex.model
	p := m.Dims().Param
	u0, uStart := make([]float64, p), make([]float64, p)
	if err := m.Unconstrain(u0, ex.truth); err != nil {
		return err
	}
	if err := m.Unconstrain(uStart, ex.start); err != nil {
		return err
	}
	k, err := m.Bind(u0)
	if err != nil {
		return err
	}
	_, y := ssm.Simulate(k, m.Dims(), c.T, rand.New(rand.NewPCG(c.Seed, stream)))
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	m, prop := c.proposal.Apply(m)
	pfs := pf.Settings{N: c.N, Proposal: prop}
	methods := []compare.Method{
		{Name: "Full", New: func(int) (sgmcmc.Estimator, error) { return compare.FullGradient(m, data, pfs, false) }},
		{Name: "No Buffer", New: func(int) (sgmcmc.Estimator, error) {
			return gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: c.S}, PF: pfs})
		}},
		{Name: "Buffer", New: func(int) (sgmcmc.Estimator, error) {
			return gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: c.S, B: c.B}, PF: pfs})
		}},
	}
	set := c.Settings()
	set.Model, set.Obs, set.Seed = m, c.T, c.Seed+stream<<20
	set.Init = compare.JitteredInit(uStart, c.Chains, 0.1, rand.New(rand.NewPCG(c.Seed, 1000+stream)))
	set.NewScore = func() (sgmcmc.Estimator, error) {
		return compare.FullGradient(m, data, pf.Settings{N: c.ksdN, Proposal: prop}, false)
	}
	set.Truth, set.Progress, set.Prefix = ex.truth, stderr, ex.name+" "
	t0 := time.Now()
	res, err := compare.Run(context.Background(), methods, set)
	if err != nil {
		return err
	}
	w := stdout
	fmt.Fprintf(w, "\n=== %s, T = %d (%.0f s); truth %v ===\n", ex.name, c.T, time.Since(t0).Seconds(), ex.truth)
	if err := compare.WriteReport(w, res, c.Chains, ex.paper, "Total log10 KSD, ours vs the paper",
		"Posterior mean (sd) after burn-in at the selected eps, averaged over chains"); err != nil {
		return err
	}
	if err := compare.WriteFile(filepath.Join(c.Out, fmt.Sprintf("results_%s.json", ex.name)), res.WriteJSON); err != nil {
		return err
	}
	for j, name := range res.Names {
		path := filepath.Join(c.Out, fmt.Sprintf("mse_%s_%s.png", ex.name, name))
		if err := compare.PlotMSE(path, res, j, fmt.Sprintf("SGLD on synthetic %s, T = %d", ex.name, c.T)); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}
