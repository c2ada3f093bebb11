package sgmcmc

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

// Gradient selects the stochastic gradient Fit samples with.
type Gradient int

const (
	// AutoGradient measures the noise of both estimators at the start and
	// keeps the one with the smaller cost per effective draw, or, with a
	// deterministic filter, the full-data score when the run planned with
	// it costs less (the zero value).
	AutoGradient Gradient = iota
	// ControlVariateGradient is gradient.ControlVariate around the mode.
	ControlVariateGradient
	// PlainGradient is the buffered subsequence gradient g^PF(S, B, N).
	PlainGradient
	// FullGradient is the exact full-data score at every iteration
	// (deterministic filters only: Kalman, grid, the model's exact
	// scorer): no gradient noise, at the cost of a pass over the data per
	// iteration. AutoGradient takes it when the whole run planned with it
	// (importance sampling and exact chains) costs less than with the
	// subsequence estimators: short series whose subsequence gradients
	// are noisy (GARCH on DAX, where the control variate's noise grows so
	// fast away from the mode that the chains ran off to φ → 1; the SVM on
	// DAX, 12 s instead of 28 s).
	FullGradient
)

// Filter selects what filters Fit's windows.
type Filter int

const (
	// AutoFilter uses the model's ssm.ExactScorer when it has one (the
	// LGSSM's Kalman filter, GARCH's quadrature filter), else Laplace
	// importance sampling (pf.Laplace) when the model's kernel implements
	// ssm.LinearGaussian and ssm.EmissionCurvature (models.MSV: a vector
	// state with linear Gaussian dynamics), else a pf.GridFilter
	// (pf.GridFor at the warm-up's mode) for models with a scalar state
	// and a transition density, and particle filters otherwise or when no
	// grid of at most pf.MaxGridNodes nodes resolves the filter (the zero
	// value). Preparation.Path says which and why.
	AutoFilter Filter = iota
	// ParticleFilter always uses particle filters (N, Proposal).
	ParticleFilter
	// GridFilter requires the grid filter; Fit fails when the model has
	// none.
	GridFilter
)

func (f Filter) String() string {
	switch f {
	case AutoFilter:
		return "auto"
	case ParticleFilter:
		return "particles"
	case GridFilter:
		return "grid"
	}
	return fmt.Sprintf("Filter(%d)", int(f))
}

func (g Gradient) String() string {
	switch g {
	case AutoGradient:
		return "auto"
	case ControlVariateGradient:
		return "control-variate"
	case PlainGradient:
		return "plain"
	case FullGradient:
		return "full"
	}
	return fmt.Sprintf("Gradient(%d)", int(g))
}

// FitSettings configures Fit. Every zero value is a documented default that
// works for the shipped models on data in percent units.
type FitSettings struct {
	// S and B are the subsequence and buffer lengths (0: 40, and B 40
	// with the grid filter, 10 with particles; a negative B means no
	// buffer). A sequence shorter than S is one window, the whole
	// sequence; the buffers are truncated at the sequence ends.
	// The grid filter's windows are cheap and exact, and on the DAX SVM
	// its buffered τ score at B = 10 is 4.5 above the B = ∞ value (about
	// 0.27 posterior sd of τ), at B = 40 within 0.06.
	S, B int
	// N is the number of particles of the chains' filter (0: 1000).
	N int
	// CVParticles, when positive, gives the control-variate chains their
	// own filter: CVParticles particles, the forward-only smoother and
	// sorted resampling (pf.Settings.Sorted). Its statistic depends on the
	// particles' positions, not their ancestry, so that g_S(u) − g_S(u*)
	// under common random numbers is nearly continuous in u and its noise
	// shrinks with |u − u*| (on the DAX SVM at N = 50: λ_max(W) 5–12
	// against 11–28 for the ancestral filter with N = 1000) at O(N²) cost
	// per step; the small filter's bias mostly cancels in the difference
	// (measured: the slope of the τ score about 15% too steep at N = 50).
	// For a vector state the sorting follows a Hilbert curve, which is
	// not continuous: at CVParticles 100 on LGSSMd d = 2 and MSV D = 2
	// (T = 2,000) λ_max(W) was 0.64 and 0.84 times that of sorting by
	// the first component, 0.47 and 0.57 times that of no sorting
	// (pf.Settings.Sorted). 0 (the default) uses the plain chains' filter
	// (N particles, ancestral). Models with a degenerate transition
	// (GARCH) always do.
	CVParticles int
	// LaplacePaths is the number of importance paths of pf.Laplace for a
	// model scored by Laplace importance sampling (see AutoFilter), even
	// (0: 128). The full-data chains are pseudo-marginal on its unbiased
	// estimate, whose target is the exact posterior for any number of
	// paths: more paths make each estimate less noisy (the chains mix
	// better) and dearer. Chains on subsequence gradients use its plain
	// estimate corrected towards a finer one with four times the paths;
	// raise it when a warning says that correction falls short.
	LaplacePaths int
	// AnchorParticles is the number of particles of the filter that
	// estimates the full-data score at the mode, whose particle bias the
	// control-variate chains inherit (0: 16N). The particle smoothers'
	// bias on heavy-tailed data falls slowly with N: on the DAX returns at
	// the reference posterior mean the τ score of the whole series is
	// 9.4 ± 1.1 with N = 1000, 6.2 ± 2.0 with 4000 and 2.8 ± 1.9 with
	// 16000 (PaRIS and ancestral alike) against 2.21 from the grid
	// likelihood, and an error d in the anchor shifts the posterior mean by
	// about H⁻¹d (0.3 posterior sd of τ at 4000 on DAX, over 2 on the
	// S&P 500 series).
	AnchorParticles int
	// Proposal is the particle filter's proposal (zero value pf.Auto: the
	// model kernel's guided proposal when it has one).
	Proposal pf.Proposal
	// Exact uses the model's exact scorer (ssm.ExactScorer: the LGSSM's
	// Kalman filter, GARCH's quadrature filter) for everything, the
	// warm-up included. Without it such a model's exact scorer still
	// replaces the particle filters after the warm-up when Filter is
	// AutoFilter.
	Exact bool
	// Filter chooses between the grid filter and particle filters for
	// everything after the warm-up (zero value AutoFilter: the grid for
	// scalar states with a transition density). The grid filter is
	// deterministic, so the control variate's difference g_S(u) −
	// g_S(u*) is smooth in u and small near the mode, and the anchor has
	// no Monte Carlo error: on the DAX SVM the gradient noise λ_max(W) of
	// the control variate falls from 60–180 (particles, N = 1000) to about
	// 1, and a gradient costs a tenth as much. Exact takes precedence.
	//
	// AutoFilter chooses, in this order: the model's exact scorer (an
	// ssm.ExactScorer, such as LGSSM, LGSSMd and GARCH); Laplace
	// importance sampling for a kernel with linear Gaussian dynamics and
	// emission derivatives (models.MSV, or a user's model with a vector
	// state that implements ssm.LinearGaussian and ssm.EmissionCurvature;
	// LaplacePaths); the grid filter (a scalar state); particle filters
	// otherwise. On particles the fit is correct but slow: the gradient
	// noise is 10²–10⁴ times the posterior's curvature, so SGLD's steps
	// are small and a fit takes many minutes (docs/particles.md measures
	// it). Posterior.Preparation.Path names the choice and why, and the
	// report prints it.
	Filter Filter
	// Gradient selects the estimator (zero value AutoGradient).
	Gradient Gradient

	// WarmUp is the number of Adam iterations that look for the posterior
	// mode before anything else (0: 300).
	WarmUp int
	// AnchorPasses bounds the tiling passes that estimate the full-data
	// score at the mode (0: up to 48, fewer when the estimate is precise
	// to 0.1 posterior sd; exact gradients need one).
	AnchorPasses int
	// PrepObs, when positive and less than half the observations, makes
	// the preparation (Newton, Jacobian, the control variate's anchor)
	// use a subset of about PrepObs of them (blocks of 1000 spread evenly;
	// a PrepObs below 1000 counts as 1000)
	// instead of the whole data: no pass over all T observations, so the
	// preparation's cost stops growing with T. The price is calibration:
	// the anchor ĝ(u*) then carries the subset's sampling error, which
	// moves the control-variate chains' mean by about √(T/PrepObs − 1)
	// posterior sds (no unbiased gradient with a fixed anchor can avoid
	// it; the plain gradient needs no anchor but its noise grows like T/S,
	// so its cost per effective draw is O(T) again). Preparation.ShiftSD
	// reports the shift measured from the blocks' spread, and the fit
	// warns when it exceeds 0.25 sd. Setting PrepObs accepts that shift:
	// AutoGradient then compares the estimators by cost alone (otherwise
	// an imprecise anchor makes it keep the plain gradient). 0 (the
	// default) uses every observation.
	PrepObs int
	// NoiseProbes is the number of points at which the gradient noise is
	// measured, two evaluations each (0: 96).
	NoiseProbes int

	// StepSize is the step h in posterior-scale units (see Precond). For
	// SGLD, 0 chooses h = 1/(1 + λ_max(W)) from the measured gradient
	// noise W, capped at 0.25; for the Metropolis–Hastings chains on
	// full-data scores (FullGradient) it is the Langevin proposals' step,
	// kept fixed; 0 starts at 0.5 and tunes it after each adaptation
	// window towards an acceptance rate of 0.7 (on Laplace importance
	// sampling, whose score is not its likelihood estimate's derivative,
	// the random-walk steps' sd √(2h − h²) per whitened coordinate, tuned
	// towards 0.3: Preparation.Walk).
	StepSize float64
	// Iterations is the number of kept draws per chain after the burn-in
	// (the sampler runs Iterations × Thin iterations), run as one
	// segment. 0 plans enough for TargetESS effective draws by the
	// measured autocorrelation (at least 500 for SGLD, 200 for
	// FullGradient chains, whose first segment of 150 refits their
	// independence proposal) and extends the sampling while the smallest
	// bulk or tail ESS is below TargetESS or R-hat above 1.01 (up to 12
	// segments).
	Iterations int
	// TargetESS is the effective sample size Iterations aims at (0: 400).
	TargetESS int
	// MinIterations is the number of iterations per chain that
	// full-data chains run at least when the iterations still to run
	// cost under 50 nominal seconds of one worker, counted at their
	// measured cost per gradient (0: 10,000; negative: no minimum): their
	// ESS and R-hat reach the targets before the chains have found a tail
	// their proposals barely reach.
	MinIterations int
	// AdaptWindow is the number of iterations of each of the three
	// adaptation windows of SGLD, which are discarded (0: ten
	// autocorrelation times of the current step, at least 300 and at most
	// 3000). FullGradient chains are prepared by adaptive importance
	// sampling instead (Posterior.BurnIn then counts its log posteriors
	// per chain) and use the windows only when that fails.
	AdaptWindow int
	// MaxTime, when positive, bounds the wall time of the whole fit: the
	// preparation, then all chains and extensions together (each chain of
	// a segment gets what is left over the waves in which Workers run the
	// Chains). A fit whose preparation alone spends it stops with an error
	// before any draw (with Checkpoint the preparation is saved first, and
	// the same call resumes from it); one that reaches it while sampling
	// stops with a warning; one that does not runs as it would without it.
	// The preparation checks it between passes over the data (an exact
	// scorer's pass over a window cannot be interrupted), so a fit may
	// overrun it by one such pass: 18 s for GARCH at T = 10⁶ (-time 3m0s,
	// stopped at 3 min 18 s on a 2-core machine).
	// A fit that reaches it depends on timing: its draws differ between
	// runs with the same Seed. It is the only setting that reads the clock.
	MaxTime time.Duration
	// Thin keeps every Thin-th draw (0: 1).
	Thin int
	// Chains is the number of chains (0: 4); Workers the number of
	// goroutines used (0: GOMAXPROCS).
	Chains, Workers int
	// Seed seeds every random number of the fit: the same Seed, data and
	// settings give the same draws on any machine, idle or busy, whatever
	// GOMAXPROCS or Workers is, unless a MaxTime is reached (the plan
	// counts work, never seconds).
	Seed uint64
	// Init, when non-nil, is the starting point in natural parameters
	// (Model.Constrain's output); otherwise the model's ssm.Starter, or
	// u = 0.
	Init []float64

	// Checkpoint, when set, makes the run resumable: the preparation is
	// saved to Checkpoint+".prep", the chains to Checkpoint and their
	// kept draws to Checkpoint+".draws", and a Fit with the same settings
	// resumes from them; its Posterior holds every draw of the run, those
	// before the interruption too. Checkpoints are written about every
	// 20 s of sampling (at the planned cost per iteration). The fit
	// samples exactly as it would without a checkpoint (the same
	// segments, proposal refits and extensions: the same draws); each
	// segment is checkpointed, and the draws of the segments done are
	// saved with the preparation. A Fit whose checkpointed
	// run had finished returns its Posterior again without sampling.
	// Remove the three files for a fresh run.
	Checkpoint string
	// Recorder observes every iteration of the sampling, burn-in included
	// (Draw.Discarded marks the iterations that are not kept draws), e.g.
	// a CSVRecorder, which writes the kept ones.
	Recorder Recorder
	// Progress receives progress lines (nil: silent): in plain words, what
	// the fit is doing, the sampling's share done and its ETA, and the
	// result.
	Progress io.Writer
	// Verbose sends the technical log to Progress instead: every phase's
	// measurements (gradient noise, importance-sampling rounds, the plan,
	// each segment's ESS and R-hat) and per-chain progress with the
	// current parameters.
	Verbose bool

	// KSDDraws is the number of kept draws (evenly thinned) at which the
	// kernel Stein discrepancy is computed from full-data scores: one exact
	// pass over the data each with a deterministic filter (the model's
	// exact scorer or a grid), one tiling of buffered blocks each with
	// particles, one resampling sweep of Laplace importance sampling each
	// on the pseudo-marginal path (a noisy estimate of the exact score,
	// which adds to the KSD; the plain estimate's score is biased there).
	// 0 means 50, or none when the data have more than 10⁵ observations;
	// negative skips it.
	KSDDraws int
}

// checkWritable reports, before any work, whether the checkpoint files
// can be written: path is not a directory and its directory takes a new
// file (a read-only or missing directory used to fail only after the
// preparation, with a bare "open …prep.tmp" error).
func checkWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%w: %s is a directory", ErrCheckpoint, path)
	}
	fh, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-probe-*")
	if err != nil {
		return fmt.Errorf("%w: cannot write next to %s: %v", ErrCheckpoint, path, err)
	}
	name := fh.Name()
	fh.Close()
	return os.Remove(name)
}

// maxNoiseProbes, maxChains and maxThin bound FitSettings.NoiseProbes,
// Chains and Thin.
const (
	maxNoiseProbes = 100000
	maxChains      = 4096
	maxThin        = 100000
)

// maxKSDObs is the data size above which the KSD is skipped by default:
// its 50 draws each cost a full pass over the data, which on longer data
// would dwarf the fit (TestKSDDefault).
const maxKSDObs = 100000

// badSettings returns an error wrapping ErrSettings with the message
// format.
func badSettings(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
}

// checkSettings returns an error for settings out of their range, for
// a model with params parameters, before Fit sets the defaults.
func checkSettings(s FitSettings, params int) error {
	bad := badSettings
	switch {
	case s.S < 0:
		return bad("S = %d is negative", s.S)
	case s.N < 0 || s.AnchorParticles < 0 || s.CVParticles < 0:
		return bad("N = %d, CVParticles = %d and AnchorParticles = %d must not be negative", s.N, s.CVParticles, s.AnchorParticles)
	case s.LaplacePaths < 0 || s.LaplacePaths%2 != 0:
		return bad("LaplacePaths = %d must be even and not negative (0: %d)", s.LaplacePaths, laplacePaths)
	case s.AnchorParticles > 0 && s.AnchorParticles < cmp.Or(s.N, 1000):
		// The control-variate chains inherit the anchor's particle bias,
		// which no diagnostic sees: AnchorParticles = 1 on 300 LGSSM steps
		// gave φ 0.733 ± 0.045 against 0.904 ± 0.031, R-hat ≤ 1.01.
		return bad("AnchorParticles = %d is below the chains' N = %d: the control-variate chains inherit the anchor's particle bias (0: 16N)", s.AnchorParticles, cmp.Or(s.N, 1000))
	case s.Thin > maxThin:
		return bad("Thin = %d exceeds %d", s.Thin, maxThin)
	case s.WarmUp < 0 || s.AnchorPasses < 0 || s.NoiseProbes < 0 || s.PrepObs < 0:
		return bad("WarmUp, AnchorPasses, NoiseProbes and PrepObs must not be negative")
	case s.StepSize < 0 || math.IsNaN(s.StepSize) || s.StepSize >= 1:
		return bad("StepSize = %v must be in [0, 1) (0 chooses it)", s.StepSize)
	case s.Iterations < 0 || s.TargetESS < 0 || s.AdaptWindow < 0 || s.Thin < 0:
		return bad("Iterations, TargetESS, AdaptWindow and Thin must not be negative")
	case s.Chains < 0 || s.Workers < 0:
		return bad("Chains and Workers must not be negative")
	case s.MaxTime < 0:
		return bad("MaxTime = %v is negative", s.MaxTime)
	case s.Gradient < AutoGradient || s.Gradient > FullGradient:
		return bad("unknown Gradient %d", s.Gradient)
	case s.Filter < AutoFilter || s.Filter > GridFilter:
		return bad("unknown Filter %d", s.Filter)
	case s.Init != nil && len(s.Init) != params:
		return bad("Init has %d values for %d parameters", len(s.Init), params)
	}
	// Fit keeps every draw in memory (Posterior.U and Natural) and the
	// noise probes' points: absurd counts are refused here, not met by an
	// allocation that never returns (Iterations = MaxInt hung, and did
	// not answer a cancelled context).
	if s.Chains > maxChains {
		return bad("Chains = %d exceeds %d", s.Chains, maxChains)
	}
	if s.Iterations > 0 && s.Iterations > math.MaxInt/max(s.Thin, 1) {
		return bad("Iterations × Thin = %d × %d overflows", s.Iterations, s.Thin)
	}
	if n := cmp.Or(s.Chains, 4); s.Iterations > 0 {
		draws := float64(s.Iterations) * float64(n)
		if need := draws * float64(2*params) * 8; need > 4<<30 {
			return bad("Iterations = %d would keep %.3g draws (%.1f GB) in memory; the limit is 4 GB: lower Iterations or raise Thin", s.Iterations, draws, need/(1<<30))
		}
	}
	if s.Checkpoint != "" {
		if err := checkWritable(s.Checkpoint); err != nil {
			return err
		}
	}
	if s.NoiseProbes > maxNoiseProbes {
		return bad("NoiseProbes = %d exceeds %d (each probe costs four gradients; the default 96 measures the noise to about 15%%)", s.NoiseProbes, maxNoiseProbes)
	}
	return nil
}
