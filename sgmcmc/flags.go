package sgmcmc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
)

// RegisterFlags defines on fs a command-line flag for each FitSettings field
// a user of a command tunes, with the field's current value as the flag's
// default, so a command sets the defaults it wants first:
//
//	set := sgmcmc.FitSettings{N: 300, Seed: 1, Progress: os.Stderr}
//	set.RegisterFlags(fs)
//	err := fs.Parse(os.Args[1:])
//
// The flags are -S, -B, -N, -Ncv (CVParticles), -paths (LaplacePaths),
// -filter auto|grid|particles,
// -gradient auto|cv|plain|full, -step (StepSize), -warmup, -adapt (AdaptWindow),
// -iters (Iterations), -time (MaxTime), -thin, -chains, -seed, -ksd
// (KSDDraws, where 0 skips the KSD), -q, which sets Progress to nil, and
// -v (Verbose). A value means what the field's documentation says (0 is
// Fit's default); Fit checks the values, as it does for every FitSettings. The fields a
// command derives from its own flags (Proposal, Exact, Init, Checkpoint,
// Recorder, Workers, AnchorParticles, ...) have no flag here.
func (s *FitSettings) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&s.S, "S", s.S, "subsequence length S (0: 40)")
	fs.IntVar(&s.B, "B", s.B, "buffer length B on each side (0: 40 with the grid filter, 10 with particles; negative: none)")
	fs.IntVar(&s.N, "N", s.N, "number of particles of the plain gradient's filter (0: 1000)")
	fs.IntVar(&s.CVParticles, "Ncv", s.CVParticles, "particles of a forward-only filter with sorted resampling for the control-variate gradient (0: the plain gradient's filter)")
	fs.IntVar(&s.LaplacePaths, "paths", s.LaplacePaths, "importance paths of Laplace importance sampling for a vector-state model with linear Gaussian dynamics (0: 128; even)")
	fs.Var(&s.Filter, "filter", "window filter: `auto|grid|particles`; auto takes the model's exact scorer, Laplace importance sampling for linear Gaussian vector states, a grid filter for scalar states with a transition density, else particles")
	fs.Var(&s.Gradient, "gradient", "gradient: `auto|cv|plain|full`; auto measures them and keeps the cheapest for the whole run, cv is control variates, full the exact full-data score (deterministic filters only)")
	fs.Float64Var(&s.StepSize, "step", s.StepSize, "step in posterior-scale units, in (0, 1): SGLD's (0: from the measured gradient noise, at most 0.25) or, with full-data scores, the Langevin proposals', kept fixed (0: from 0.5, tuned to their acceptance rate)")
	fs.IntVar(&s.WarmUp, "warmup", s.WarmUp, "Adam iterations that look for the mode (0: 300)")
	fs.IntVar(&s.AdaptWindow, "adapt", s.AdaptWindow, "iterations of each of the 3 metric-adaptation windows of SGLD (0: 10 autocorrelation times, 300 to 3000); full-data chains are prepared by importance sampling instead, unless it fails")
	fs.IntVar(&s.Iterations, "iters", s.Iterations, fmt.Sprintf("sampling iterations per chain after the adaptation, in one segment (0: planned for %d effective draws from the measured autocorrelation, at least %d for SGLD and %d for full-data chains, and extended while the ESS or R-hat falls short)", minESS, sgldMinIters, fullMinIters))
	fs.IntVar(&s.PrepObs, "prepobs", s.PrepObs, "observations the preparation (Newton, anchor, Jacobian) reads at most, on long data (0: all; fewer skips every full-data pass but the anchor's sampling error shifts the mean by about sqrt(T/prepobs - 1) posterior sds, which the fit reports)")
	fs.DurationVar(&s.MaxTime, "time", s.MaxTime, "wall-time budget of the whole fit, preparation and sampling (e.g. 60s; 0: none); a run that reaches it while sampling stops with a warning, one whose preparation spends it stops with an error (its preparation saved with a checkpoint), one that does not is the run without it")
	fs.IntVar(&s.Thin, "thin", s.Thin, "keep every thin-th draw (0: 1)")
	fs.IntVar(&s.Chains, "chains", s.Chains, "number of chains (0: 4)")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "random seed")
	ksd := "`draws` at which full-data scores are computed for the KSD (0: skip)"
	if s.KSDDraws == 0 {
		ksd += "; not given: Fit's default, see FitSettings.KSDDraws"
	}
	fs.Var(ksdFlag{&s.KSDDraws}, "ksd", ksd)
	fs.Var(&quietFlag{p: &s.Progress, w: s.Progress}, "q", "no progress lines")
	fs.BoolVar(&s.Verbose, "v", s.Verbose, "the technical log on stderr (the measurements of every phase, per-chain progress) instead of plain progress lines")
}

// Set sets f from its String form (auto, grid or particles): with String,
// *Filter is a flag.Value.
func (f *Filter) Set(v string) error {
	for _, g := range []Filter{AutoFilter, GridFilter, ParticleFilter} {
		if v == g.String() {
			*f = g
			return nil
		}
	}
	return fmt.Errorf("unknown filter %q (want auto, grid or particles)", v)
}

// Set sets g from auto, cv (or control-variate) or plain: with String,
// *Gradient is a flag.Value.
func (g *Gradient) Set(v string) error {
	switch v {
	case "auto":
		*g = AutoGradient
	case "cv", "control-variate":
		*g = ControlVariateGradient
	case "plain":
		*g = PlainGradient
	case "full":
		*g = FullGradient
	default:
		return fmt.Errorf("unknown gradient %q (want auto, cv, plain or full)", v)
	}
	return nil
}

// ksdFlag is -ksd: 0 on the command line skips the KSD (KSDDraws < 0), and
// a KSDDraws of 0, Fit's default, has no command-line spelling.
type ksdFlag struct{ p *int }

func (k ksdFlag) String() string {
	switch {
	case k.p == nil || *k.p == 0:
		return ""
	case *k.p < 0:
		return "0"
	}
	return strconv.Itoa(*k.p)
}

func (k ksdFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("parse error")
	}
	if n < 0 {
		return errors.New("negative (0 skips the KSD)")
	}
	if n == 0 {
		n = -1
	}
	*k.p = n
	return nil
}

// quietFlag is -q: it sets *p to nil, and -q=false back to w.
type quietFlag struct {
	p     *io.Writer
	w     io.Writer
	quiet bool
}

func (q *quietFlag) String() string   { return strconv.FormatBool(q != nil && q.quiet) }
func (q *quietFlag) IsBoolFlag() bool { return true }

func (q *quietFlag) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return errors.New("parse error")
	}
	q.quiet = b
	*q.p = q.w
	if b {
		*q.p = nil
	}
	return nil
}

// CheckFlags returns an error naming the flag (as RegisterFlags defines
// it) of the first value Fit would refuse: a negative count, size or
// duration, a step outside [0, 1), too many chains or too much thinning.
// A command calls it after parsing, so that a bad value is reported
// before any work (reading the data) and in the command's own terms;
// Fit checks the same values again, with the fields' names.
func (s *FitSettings) CheckFlags() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"-S", s.S}, {"-N", s.N}, {"-Ncv", s.CVParticles}, {"-warmup", s.WarmUp}, {"-adapt", s.AdaptWindow},
		{"-iters", s.Iterations}, {"-prepobs", s.PrepObs}, {"-thin", s.Thin}, {"-chains", s.Chains}} {
		if f.v < 0 {
			return fmt.Errorf("%s = %d is negative (0: the default)", f.name, f.v)
		}
	}
	switch {
	case s.StepSize < 0 || s.StepSize >= 1 || math.IsNaN(s.StepSize):
		return fmt.Errorf("-step = %v: want a value in (0, 1), or 0 to choose it", s.StepSize)
	case s.MaxTime < 0:
		return fmt.Errorf("-time = %v is negative (0: no budget)", s.MaxTime)
	case s.Thin > maxThin:
		return fmt.Errorf("-thin = %d exceeds %d", s.Thin, maxThin)
	case s.Chains > maxChains:
		return fmt.Errorf("-chains = %d exceeds %d", s.Chains, maxChains)
	}
	return nil
}
