package sgmcmc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
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
	// LGSSM's Kalman filter, GARCH's filter on σ² nodes), else a
	// pf.GridFilter (pf.GridFor at the warm-up's mode) for models with a
	// scalar state and a transition density, and particle filters
	// otherwise or when no grid of at most pf.MaxGridNodes nodes resolves
	// the filter (the zero value).
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
	// 0 (the default) uses the plain chains' filter (N particles,
	// ancestral). Models with a degenerate transition (GARCH) always do.
	CVParticles int
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
	// Kalman filter, GARCH's filter on σ² nodes) for everything, the
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
	// 0 meaning 0.7 tuned towards an acceptance rate of 0.7.
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
	// full-data chains run at least when that costs under 15 s at their
	// rate so far (0: 10,000; negative: no minimum): their ESS and R-hat
	// reach the targets before the chains have found a tail their
	// proposals barely reach (see cheapMore).
	MinIterations int
	// AdaptWindow is the number of iterations of each of the three
	// adaptation windows of SGLD, which are discarded (0: ten
	// autocorrelation times of the current step, at least 300 and at most
	// 3000). FullGradient chains are prepared by adaptive importance
	// sampling instead (Posterior.BurnIn then counts its log posteriors
	// per chain) and use the windows only when that fails.
	AdaptWindow int
	// MaxTime, when positive, bounds the wall time of the sampling: all
	// chains and extensions together (each chain of a segment gets what
	// is left over the waves in which Workers run the Chains). A fit that
	// reaches it stops with a warning; one that does not runs as it would
	// without it. A fit that reaches it depends on timing: its draws
	// differ between runs with the same Seed.
	MaxTime time.Duration
	// Thin keeps every Thin-th draw (0: 1).
	Thin int
	// Chains is the number of chains (0: 4); Workers the number of
	// goroutines used (0: GOMAXPROCS).
	Chains, Workers int
	// Seed seeds every random number of the fit: the same Seed, data and
	// settings give the same draws, except where the clock decides (a
	// MaxTime that is reached; extensions past the planned sampling
	// segments, which continue only while the sampling so far took less
	// than a minute).
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
	// 20 s of sampling (at the planned cost per iteration). The sampling is then one segment of
	// the planned length (no refit of the independence proposal, no
	// extensions: a checkpoint holds one Run), so its draws differ from
	// those of the same fit without a checkpoint. A Fit whose checkpointed
	// run had finished returns its Posterior again without sampling.
	// Remove the three files for a fresh run.
	Checkpoint string
	// Recorder observes every iteration of the sampling, burn-in included
	// (Draw.Discarded marks the iterations that are not kept draws), e.g.
	// a CSVRecorder, which writes the kept ones.
	Recorder Recorder
	// Progress receives progress lines (nil: silent).
	Progress io.Writer

	// KSDDraws is the number of kept draws (evenly thinned) at which the
	// kernel Stein discrepancy is computed from full-data scores: one exact
	// pass over the data each with a deterministic filter (the model's
	// exact scorer or a grid), one tiling of buffered blocks each with
	// particles. 0 means 50, or none when the data have more than 10⁵
	// observations; negative skips it.
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

// newtonUnconverged is the length, in posterior sds, of a last Newton
// step past which the preparation warns.
const newtonUnconverged = 3

// maxNoiseProbes, maxChains and maxThin bound FitSettings.NoiseProbes,
// Chains and Thin.
const (
	maxNoiseProbes = 100000
	maxChains      = 4096
	maxThin        = 100000
)

// maxKSDObs is the data size above which the KSD is skipped by default.
const maxKSDObs = 100000

// fit holds the normalised settings and what the preparation finds.
type fit struct {
	s     FitSettings
	model ssm.Model // the chains' model: user's, or its coarser discretisation
	user  ssm.Model // the model Fit was given (the Posterior's)
	// trial: model is user's coarser discretisation, prepared first and
	// kept when its discretisation correction is small (checkDiscretisation).
	trial bool
	// widened counts widenGrid's widenings.
	widened int
	// resumed: the preparation was read from the checkpoint.
	resumed bool
	// dataWarn is what the model's ssm.DataChecker said of the data.
	dataWarn []string
	// newtonWarn says that the preparation's Newton steps did not
	// converge.
	newtonWarn string
	data       ssm.Dataset
	dim        int
	precs      []*Precond                   // the SGLD chains' methods, for clippedSteps
	gridEdges  func() (edge, proposals int) // the full-data chains' proposals refused at a grid's edge, and all of them (nil: none)
	isEdge     [2]int                       // importance sampling's log posteriors refused at a grid's edge, and all of them
	gset       gradient.Settings            // the plain chains' filter
	cvset      gradient.Settings            // the control-variate chains' filter
	aset       gradient.Settings            // the anchor's filter (AnchorParticles)
	u0         []float64                    // starting point
	gridB      int                          // the buffer with the grid filter
	short      int                          // the shortest sequence's length
	total      int                          // the number of observations
	scale      float64                      // nonzero in a subset's fit: its scores are scaled by it
	warm       []float64                    // the warm-up's end
	log        func(format string, a ...any)
	// diff, while set, makes the full data's tilings after the first
	// from a subset's differences (scoreTile); diffOK allows newton to
	// set it.
	diff   *diffBase
	diffOK bool

	prep Preparation
	// isPts are the importance-sampling rounds' points, log posteriors
	// and log weights, to which the surrogate is refitted with the
	// chains' draws.
	isPts struct {
		xs      [][]float64
		lps, lw []float64
	}
	// fallback says why AutoFilter left the deterministic filter for
	// particle filters (toParticles; Preparation.Fallback).
	fallback string
}

// Preparation is what Fit learns before sampling: the mode, the
// preconditioner, the anchor gradient and the gradient noise. It is
// reported in Posterior and saved with a checkpoint.
type Preparation struct {
	Mode     []float64 // u*, the anchor
	Chol     []float64 // L, lower Cholesky factor of the inverse Hessian at u*, row-major
	Hessian  []float64 // −∇² log π at u* (empirical Fisher + prior), row-major
	Anchor   []float64 // ĝ_full(u*), likelihood part
	AnchorSE []float64 // its standard error per coordinate
	Passes   int       // tiling passes averaged into Anchor
	// Correction is added to the plain estimator: Anchor minus the tiled
	// score at u* of the plain chains' own filter (zero for exact
	// gradients), and CorrectionSE its standard error.
	Correction, CorrectionSE []float64
	ShiftSD                  float64   // max |Lᵀ AnchorSE|: the mean shift, in posterior sds, that the anchor error may cause
	NoisePlain               []float64 // W of the plain estimator, row-major (posterior scale)
	NoiseCV                  []float64 // W of the control-variate estimator
	LambdaPlain, LambdaCV    float64   // their largest eigenvalues
	CostPlain, CostCV        float64   // counted cost per gradient of each, in nominal seconds of one worker of a reference machine (never timed: see cost.go); CostCV is 2 or 3 windows of the control variate's filter
	CostFull                 float64   // counted cost per full-data score, T/(S+2B) windows (0: not deterministic)
	LambdaCVTail             float64   // the control variate's λ_max on the 0.99 contour (see tailNoise; 0: not measured)
	Accept                   float64   // FullGradient: the Langevin (with a Surrogate, random-walk) proposals' Metropolis–Hastings acceptance rate (of the last adaptation window; in a Posterior, of the sampling)
	AcceptIndependent        float64   // FullGradient: the independence proposals' acceptance rate (see mala; after importance sampling, the expected one until the sampling measures it)
	// Proposal is FullGradient's independence proposal fitted by
	// importance sampling (nil: a Student-t at Mode with scale Chol), and
	// Independence its share of the steps (0: 0.5).
	Proposal     []ProposalComponent
	Independence float64
	// Surrogate, when set, turns the independence steps into surrogate
	// transitions on π̃ = Proposal·exp(r) (see Surrogate). It is saved
	// with a checkpoint but left out of the Posterior's JSON (its design
	// points are hundreds of numbers); SurrogateHold reports its expected
	// holding time (0: none).
	Surrogate     *Surrogate `json:"-"`
	SurrogateHold float64
	Gradient      Gradient // the estimator chosen
	// Grid is the grid filter's grid (Nodes 0: particle filters).
	Grid pf.Grid
	// Exact reports that AutoFilter chose the model's ssm.ExactScorer
	// because the grid filter does not apply (GARCH: its state row is not
	// scalar; its exact scorer filters on nodes for σ²).
	Exact bool
	// Fallback, when not empty, says why AutoFilter left the grid filter
	// or the model's exact scorer for particle filters (a warning of the
	// Posterior: their bias can widen it).
	Fallback string
	// Discretisation, for a model's exact scorer that is exact only up to
	// a discretisation (ssm.RefinedScorer), is the correction the chains
	// apply towards the finer scorer (nil: none).
	Discretisation *Discretisation `json:",omitempty"`
	// S and B are the subsequence and buffer lengths the chains use
	// (FitSettings' after the defaults and the sequences' lengths).
	S, B int
	// Jacobian is ∂ĝ_full/∂u at u* (deterministic gradients only), which
	// makes the control variate second order (gradient.ControlVariate).
	Jacobian []float64
	StepSize float64
	Seconds  float64 // time the preparation took
	// After the adaptation: each chain's state, the iterations it took
	// per chain, and the autocorrelation time measured in its last window.
	Starts          [][]float64
	AdaptIterations int
	IAT             float64
}

// Discretisation models the difference r = ℓ_refined − ℓ between a
// model's finer log-likelihood (ssm.RefinedScorer) and the chains' exact
// scorer near the mode as a quadratic in the whitened coordinates
// z = L⁻¹(u − u*): r ≈ r(u*) + Σ_k a_k z_k + ½ b_k z_k², with
// a_k = [r(z = e_k) − r(−e_k)]/2 and b_k = r(e_k) + r(−e_k) − 2r(0)
// (both scorers at 2p + 1 points). The chains' target is the exact
// scorer's posterior times exp(Σ_k a_k z_k + ½ b_k z_k²): the finer
// scorer's, to second order along each axis, at the coarse one's cost (a
// control variate for the discretisation). A curvature |b_k| > 0.5 is not
// applied (the Posterior warns).
type Discretisation struct {
	// Mode and Chol are the centre uc and the row-major lower L of the
	// correction, z = L⁻¹(u − uc): the preparation's mode u* and L (the
	// adaptation may change Preparation's).
	Mode []float64 `json:"mode"`
	Chol []float64 `json:"chol"`
	// Tilt and Curve are a and b.
	Tilt  []float64 `json:"tilt"`
	Curve []float64 `json:"curve"`
	// Cross, when set, is the full curvature B (p×p, row-major) of a
	// correction a·z + ½ zᵀBz (+ Cubic) fitted by least squares to a
	// Coarse model's design (quadDesign, chooseCoarse); Curve is then B's
	// diagonal, for the record, and B is applied as it is (it was
	// validated).
	Cross []float64 `json:"cross,omitempty"`
	// Cubic, when set with Cross, adds Σ_k d_k z_k³ to the correction
	// (fitted with it on points out to quadFar along the axes).
	Cubic []float64 `json:"cubic,omitempty"`
	// TargetChol, when set, is the lower Cholesky factor (row-major) of
	// the covariance of the chains' target's Gaussian approximation,
	// N(u* + shift, C Cᵀ), which targetLaplace uses.
	TargetChol []float64 `json:"target_chol,omitempty"`
	// Level is the number of ssm.Coarsener steps from the user's model
	// to the chains' (0 with Coarse means 1, as written before levels).
	Level int `json:"level,omitempty"`
	// Shift is how far the correction moves the posterior mean of each u
	// coordinate, in its posterior sds, for a Gaussian posterior:
	// L (a_k/(1 − b_k))_k, divided by the sds. Above 1 sd the Posterior
	// warns: the correction then rests on a quadratic model of a large
	// difference.
	Shift []float64 `json:"shift"`
	// Coarse reports that the chains use one of the model's coarser
	// discretisations (ssm.Coarsener; Level says which), chosen by
	// chooseCoarse.
	Coarse bool `json:"coarse,omitempty"`
	// Residual checks the correction after sampling, when it moves a mean
	// by more than 0.1 sd or is Coarse: evenly thinned draws (Draws) are
	// importance-weighted from the chains' target to the finer scorer's
	// posterior (log w = ℓ_refined − ℓ − correction), and Residual is how
	// far that moves each natural parameter's mean, in its posterior sds,
	// with ResidualSE its delta-method standard error; ResidualSD is the
	// ratio of each weighted sd to the chains' and ResidualSDSE its
	// standard error. The Posterior warns when a mean moves by more than
	// 0.1 sd or an sd by more than 10%, beyond the 95% band of the
	// check's own Monte Carlo error. Nil when not checked.
	Residual     []float64 `json:"residual,omitempty"`
	ResidualSE   []float64 `json:"residual_se,omitempty"`
	ResidualSD   []float64 `json:"residual_sd,omitempty"`
	ResidualSDSE []float64 `json:"residual_sd_se,omitempty"`
	// Draws is the number of draws the check weighed (12, or 24 when
	// the first 12 left a residual above 0.1 sd or an SE above 0.05 sd).
	Draws int `json:"draws,omitempty"`
}

// ProposalComponent is one multivariate Student-t (ν = 5) component of
// FullGradient's independence proposal: its weight, centre and the lower
// Cholesky factor (row-major) of its scale matrix, in u.
type ProposalComponent struct {
	Weight float64
	Center []float64
	Chol   []float64
}

// Fit samples the posterior of model given data: one call from a model and
// its data to a summarised posterior.
//
// It runs, in order:
//
//  1. a warm-up: Adam on the buffered particle gradient from the starting
//     point, averaging the last half of its iterates, to find the mode;
//  2. a preparation at the mode u*: the full-data score by tiling the data
//     into buffered blocks (Estimator.Tile), averaged over passes until its
//     error shifts the mean by less than 0.1 posterior sd, the empirical
//     Fisher information of the blocks plus the prior's curvature as the
//     Hessian H, Newton steps to refine u*, and the covariance of the
//     gradient noise of the plain and the control-variate estimators,
//     measured in pairs at draws from N(u*, H⁻¹);
//  3. sampling: Chains chains of Precond (SGLD preconditioned by H⁻¹ with
//     the injected noise reduced by the measured gradient noise, so the
//     draws are not widened by it), started from N(u*, H⁻¹), with the
//     estimator of the lower cost per effective draw; or, when the run
//     planned with it costs less, with the full-data score of a
//     deterministic filter (FullGradient): exact
//     Metropolis–Hastings chains whose independence proposal is fitted by
//     adaptive importance sampling and refitted to their draws (doc.go);
//  4. a summary with diagnostics and warnings (Posterior), the data's
//     first when the model checks them (ssm.DataChecker: the shipped
//     models warn about constant data, gross outliers and zeros under the
//     SVM, and stop the fit before step 1 at data their default priors
//     cannot describe: a scale they do not expect, prices for returns).
//
// The error is non-nil only when no posterior can be reported; problems
// that leave draws (chains stopped, budget exhausted) become warnings. It
// wraps ErrNoMode when step 2's Newton search runs to ever wider state
// ranges (an improper posterior: the SVM with many exact zeros).
func Fit(ctx context.Context, model ssm.Model, data ssm.Dataset, s FitSettings) (*Posterior, error) {
	start := time.Now()
	f, err := newFit(model, data, s)
	if err != nil {
		return nil, err
	}
	if c, ok := model.(ssm.DataChecker); ok {
		var err error
		f.dataWarn, err = c.CheckData(data)
		for _, w := range f.dataWarn {
			f.log("warning: %s", w)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := f.prepare(ctx); err != nil {
		return nil, err
	}
	return f.sample(ctx, start)
}

func newFit(model ssm.Model, data ssm.Dataset, s FitSettings) (*fit, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: Fit needs a model", ErrSettings)
	}
	d := model.Dims()
	if err := data.Validate(d.Obs); err != nil {
		return nil, err
	}
	T := 0
	for j, seq := range data.Sequences {
		if !seq.Observed(0, seq.Len()) {
			return nil, fmt.Errorf("%w: sequence %d has no observed values (every cell is missing)", ssm.ErrData, j)
		}
		// Memory-mapped data (ssm.OpenBinary) were not scanned at open.
		if err := seq.CheckFinite(); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", j, err)
		}
		T = max(T, seq.Len())
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	switch {
	case s.S < 0:
		return nil, bad("S = %d is negative", s.S)
	case s.N < 0 || s.AnchorParticles < 0 || s.CVParticles < 0:
		return nil, bad("N = %d, CVParticles = %d and AnchorParticles = %d must not be negative", s.N, s.CVParticles, s.AnchorParticles)
	case s.AnchorParticles > 0 && s.AnchorParticles < cmp.Or(s.N, 1000):
		// The control-variate chains inherit the anchor's particle bias,
		// which no diagnostic sees: AnchorParticles = 1 on 300 LGSSM steps
		// gave φ 0.733 ± 0.045 against 0.904 ± 0.031, R-hat ≤ 1.01.
		return nil, bad("AnchorParticles = %d is below the chains' N = %d: the control-variate chains inherit the anchor's particle bias (0: 16N)", s.AnchorParticles, cmp.Or(s.N, 1000))
	case s.Thin > maxThin:
		return nil, bad("Thin = %d exceeds %d", s.Thin, maxThin)
	case s.WarmUp < 0 || s.AnchorPasses < 0 || s.NoiseProbes < 0 || s.PrepObs < 0:
		return nil, bad("WarmUp, AnchorPasses, NoiseProbes and PrepObs must not be negative")
	case s.StepSize < 0 || math.IsNaN(s.StepSize) || s.StepSize >= 1:
		return nil, bad("StepSize = %v must be in [0, 1) (0 chooses it)", s.StepSize)
	case s.Iterations < 0 || s.TargetESS < 0 || s.AdaptWindow < 0 || s.Thin < 0:
		return nil, bad("Iterations, TargetESS, AdaptWindow and Thin must not be negative")
	case s.Chains < 0 || s.Workers < 0:
		return nil, bad("Chains and Workers must not be negative")
	case s.MaxTime < 0:
		return nil, bad("MaxTime = %v is negative", s.MaxTime)
	case s.Gradient < AutoGradient || s.Gradient > FullGradient:
		return nil, bad("unknown Gradient %d", s.Gradient)
	case s.Filter < AutoFilter || s.Filter > GridFilter:
		return nil, bad("unknown Filter %d", s.Filter)
	case s.Init != nil && len(s.Init) != len(model.ParamNames()):
		return nil, bad("Init has %d values for %d parameters", len(s.Init), len(model.ParamNames()))
	}
	// Fit keeps every draw in memory (Posterior.U and Natural) and the
	// noise probes' points: absurd counts are refused here, not met by an
	// allocation that never returns (Iterations = MaxInt hung, and did
	// not answer a cancelled context).
	if s.Chains > maxChains {
		return nil, bad("Chains = %d exceeds %d", s.Chains, maxChains)
	}
	if s.Iterations > 0 && s.Iterations > math.MaxInt/max(s.Thin, 1) {
		return nil, bad("Iterations × Thin = %d × %d overflows", s.Iterations, s.Thin)
	}
	if n := cmp.Or(s.Chains, 4); s.Iterations > 0 {
		draws := float64(s.Iterations) * float64(n)
		if need := draws * float64(2*len(model.ParamNames())) * 8; need > 4<<30 {
			return nil, bad("Iterations = %d would keep %.3g draws (%.1f GB) in memory; the limit is 4 GB: lower Iterations or raise Thin", s.Iterations, draws, need/(1<<30))
		}
	}
	if s.Checkpoint != "" {
		if err := checkWritable(s.Checkpoint); err != nil {
			return nil, err
		}
	}
	if s.NoiseProbes > maxNoiseProbes {
		return nil, bad("NoiseProbes = %d exceeds %d (each probe costs four gradients; the default 96 measures the noise to about 15%%)", s.NoiseProbes, maxNoiseProbes)
	}
	if s.S == 0 {
		s.S = 40
	}
	autoB := s.B == 0
	switch {
	case s.B == 0:
		s.B = 10
	case s.B < 0:
		s.B = 0
	}
	// Sequences shorter than S are each one whole window
	// (gradient.Subsequencer); the others keep S and B.
	short := math.MaxInt
	for _, seq := range data.Sequences {
		short = min(short, seq.Len())
	}
	gridB := s.B
	if autoB {
		gridB = 40
	}
	if s.N == 0 {
		s.N = 1000
	}
	// A filter holds about 3 state rows, 2 statistic rows and 6 scalars
	// per particle in float64; the anchor's filter has AnchorParticles.
	perParticle := 8 * (3*d.State + 2*d.Param + 6)
	for _, n := range []int{s.N, s.AnchorParticles, 16 * s.N, s.CVParticles} {
		if need := float64(n) * float64(perParticle); need > 4<<30 {
			return nil, bad("%d particles would need %.1f GB per filter (%d bytes each); the limit is 4 GB", n, need/(1<<30), perParticle)
		}
	}
	if s.WarmUp == 0 {
		s.WarmUp = 300
	}
	if s.AnchorPasses == 0 {
		s.AnchorPasses = 48
	}
	if s.NoiseProbes == 0 {
		s.NoiseProbes = 96
	}
	if s.TargetESS == 0 {
		s.TargetESS = 400
	}
	if s.Thin == 0 {
		s.Thin = 1
	}
	if s.Chains == 0 {
		s.Chains = 4
	}
	if s.Workers == 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	total := 0
	for _, seq := range data.Sequences {
		total += seq.Len()
	}
	if s.KSDDraws == 0 {
		s.KSDDraws = 50
		if total > maxKSDObs {
			s.KSDDraws = -1 // 50 full passes would dwarf the fit
		}
	}
	f := &fit{s: s, model: model, user: model, data: data, dim: d.Param, gridB: gridB, short: short, total: total,
		gset: gradient.Settings{
			Subsequencer: gradient.Subsequencer{S: s.S, B: s.B, Sampling: gradient.Uniform},
			PF:           pf.Settings{N: s.N, Proposal: s.Proposal},
			Exact:        s.Exact,
		}}
	f.log = func(format string, a ...any) {
		if s.Progress != nil {
			fmt.Fprintf(s.Progress, "fit: "+format+"\n", a...)
		}
	}
	if _, err := gradient.New(model, data, f.gset); err != nil {
		return nil, err
	}
	f.aset = f.gset
	f.aset.PF.N = s.AnchorParticles
	if f.aset.PF.N == 0 {
		f.aset.PF.N = 16 * s.N
	}
	u0, err := f.startPoint()
	if err != nil {
		return nil, err
	}
	f.u0 = u0
	f.cvset = f.gset
	if s.CVParticles > 0 && !s.Exact && hasTransitionDensity(model, u0) {
		f.cvset.PF.N = s.CVParticles
		f.cvset.PF.Smoother = pf.ForwardOnly
		f.cvset.PF.Sorted = true
	}
	return f, nil
}

// hasTransitionDensity reports whether the model's kernel at u has a
// transition density (is not ssm.Degenerate), which the forward-only
// smoother needs.
func hasTransitionDensity(model ssm.Model, u []float64) bool {
	k, err := model.Bind(u)
	if err != nil {
		return false
	}
	dg, ok := k.(ssm.Degenerate)
	return !ok || !dg.DegenerateTransition()
}

// newEstimator returns a fresh estimator with settings set (validated in
// newFit); estimators own filter workspaces, so every goroutine needs one.
func (f *fit) newEstimator(set gradient.Settings) *gradient.Estimator {
	e, err := gradient.New(f.model, f.data, set)
	if err != nil {
		panic(err) // validated in newFit with the same arguments
	}
	return e
}

// startPoint returns the starting point u0 in unconstrained coordinates.
func (f *fit) startPoint() ([]float64, error) {
	u := make([]float64, f.dim)
	switch {
	case f.s.Init != nil:
		if err := f.model.Unconstrain(u, f.s.Init); err != nil {
			return nil, fmt.Errorf("sgmcmc: Init: %w", err)
		}
	default:
		if st, ok := f.model.(ssm.Starter); ok {
			if err := st.Start(u, f.data); err != nil {
				return nil, fmt.Errorf("sgmcmc: model's starting point: %w", err)
			}
		}
	}
	if i := firstNonFinite(u); i >= 0 {
		return nil, fmt.Errorf("%w: starting point u[%d] = %v", ErrSettings, i, u[i])
	}
	return u, nil
}

// warmUp runs Adam from u0 and returns the average of its last half.
func (f *fit) warmUp(ctx context.Context, u0 []float64) ([]float64, error) {
	est := f.newEstimator(f.gset)
	rng := rand.New(rand.NewPCG(f.s.Seed, 1<<40))
	steps := f.s.WarmUp
	smp := NewSampler(est, &Adam{}, u0, Polynomial{A: 0.05, B: float64(steps) / 10, C: 0.5}, rng)
	avg := make([]float64, f.dim)
	n := 0
	for k := 0; k < steps; k++ {
		if err := smp.Step(ctx); err != nil {
			var nf *NonFiniteError
			if errors.As(err, &nf) {
				continue
			}
			return nil, fmt.Errorf("sgmcmc: warm-up: %w", err)
		}
		if k >= steps/2 {
			n++
			for i, v := range smp.U() {
				avg[i] += (v - avg[i]) / float64(n)
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("sgmcmc: warm-up: no finite iterate")
	}
	return avg, nil
}

// tiling is the result of tiling passes at one point.
type tiling struct {
	mean, se []float64 // full-data likelihood score: average over passes and its standard error
	fisher   []float64 // empirical Fisher information of the blocks, averaged over passes
	passes   int
	loglik   float64 // the passes' mean log-likelihood estimate
	// subSE is, on a subset (fit.scale ≠ 0), the standard error of mean
	// as an estimate of the whole data's score from the subset's sampling
	// alone: the subset's blocks are a sample of the data's, and every
	// pass shares them, so more passes do not reduce it.
	subSE []float64
	// blk is, on a subset with one pass, the score summed per block
	// (block-major, unscaled): scoreTile differences it.
	blk []float64
	// full marks the exact full-data score (every sequence one window)
	// with fisher = −J, from observedNewton.
	full bool
}

// anchorSE returns the anchor's standard error: Monte Carlo and, on a
// subset, sampling.
func (t *tiling) anchorSE() []float64 {
	se := append([]float64(nil), t.se...)
	for a := range t.subSE {
		se[a] = math.Hypot(se[a], t.subSE[a])
	}
	return se
}

// parallel calls job(est, i) for every i in [0, n) on up to Workers
// goroutines, each with its own estimator of settings set (estimators own
// filter workspaces). Jobs write only to their own index; the errors are
// joined.
func (f *fit) parallel(n int, set gradient.Settings, job func(est *gradient.Estimator, i int) error) error {
	return workerPool(n, f.s.Workers, func() func(int) error {
		est := f.newEstimator(set)
		return func(i int) error { return job(est, i) }
	})
}

// workerPool runs jobs 0 … n−1 on min(workers, n) goroutines; each
// goroutine calls newWorker once for its own job function (its own
// workspace). It returns the jobs' errors joined.
func workerPool(n, workers int, newWorker func() func(int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			job := newWorker()
			for i := range next {
				errs[i] = job(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// tile runs passes tiling passes at u on the workers, with random offsets.
// A single pass of a deterministic estimator is split over the workers
// by blocks (Estimator.TilePart), so a long series' exact score takes
// 1/Workers of the time.
func (f *fit) tile(ctx context.Context, u []float64, passes int, stream uint64, set gradient.Settings) (*tiling, error) {
	p := f.dim
	parts := 1
	if passes == 1 && (set.Exact || set.Grid.Nodes > 0) {
		parts = f.s.Workers
	}
	type partial struct {
		g, fi, sum []float64
		blk        []float64 // on a subset: the score summed per block (sequence)
		nw         int
		ll         float64
	}
	nblk := 0
	if f.scale != 0 {
		nblk = len(f.data.Sequences)
	}
	res := make([]partial, passes*parts)
	err := f.parallel(passes*parts, set, func(est *gradient.Estimator, job int) error {
		i, part := job/parts, job%parts
		rng := rand.New(rand.NewPCG(f.s.Seed, stream+uint64(i)))
		offset := rng.IntN(max(f.s.S, 1))
		r := partial{g: make([]float64, p), fi: make([]float64, p*p), sum: make([]float64, p), blk: make([]float64, nblk*p)}
		ll, err := est.TilePart(ctx, r.g, u, offset, part, parts, rng, func(seq int, _ ssm.Window, gw []float64) {
			r.nw++
			if nblk > 0 {
				for a, va := range gw {
					r.blk[seq*p+a] += va
				}
			}
			for a, va := range gw {
				r.sum[a] += va
				for b, vb := range gw {
					r.fi[a*p+b] += va * vb
				}
			}
		})
		if err != nil {
			return err
		}
		r.ll = ll
		res[job] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: full-data score: %w", err)
	}
	grads := make([][]float64, passes)
	fishers := make([][]float64, passes)
	ll := 0.0
	for i := range passes {
		g, fi, sum, nw := make([]float64, p), make([]float64, p*p), make([]float64, p), 0
		for _, r := range res[i*parts : (i+1)*parts] {
			for a := range p {
				g[a] += r.g[a]
				sum[a] += r.sum[a]
			}
			for a := range fi {
				fi[a] += r.fi[a]
			}
			nw += r.nw
			ll += r.ll / float64(passes)
		}
		// Centre: Σ (g_w − ḡ)(g_w − ḡ)ᵀ, so the information is right away
		// from the mode too.
		for a := range p {
			for b := range p {
				fi[a*p+b] -= sum[a] * sum[b] / float64(max(nw, 1))
			}
		}
		grads[i], fishers[i] = g, fi
	}
	t := &tiling{mean: make([]float64, p), se: make([]float64, p), fisher: make([]float64, p*p), passes: passes, loglik: ll}
	if f.scale != 0 {
		t.subSE = subsetSE(res, passes, parts, nblk, p, f.scale, func(r partial) []float64 { return r.blk })
		if passes == 1 {
			t.blk = make([]float64, nblk*p)
			for _, r := range res {
				for k, v := range r.blk {
					t.blk[k] += v
				}
			}
		}
		for i := range grads {
			for a := range grads[i] {
				grads[i][a] *= f.scale
			}
			for a := range fishers[i] {
				fishers[i][a] *= f.scale
			}
		}
		t.loglik *= f.scale
	}
	for i := range grads {
		for a := range p {
			t.mean[a] += grads[i][a] / float64(passes)
		}
		for a := range p * p {
			t.fisher[a] += fishers[i][a] / float64(passes)
		}
	}
	if passes > 1 {
		for a := range p {
			v := 0.0
			for i := range grads {
				d := grads[i][a] - t.mean[a]
				v += d * d
			}
			t.se[a] = math.Sqrt(v / float64(passes-1) / float64(passes))
		}
	}
	return t, nil
}

// subsetSE returns the sampling standard error of a subset's scaled score
// total/n·Σ_blocks b_k as an estimate of the whole data's: the m blocks
// are treated as a sample without replacement of the data's m·scale,
// Var = scale²·m·s²_b·(1 − 1/scale) with s²_b the blocks' sample variance
// (averaged over the passes, which share the blocks). blocks(r) returns a
// job's per-block sums (the parts of a pass own disjoint tiling blocks
// but may share a subset block, so they are added first).
func subsetSE[R any](res []R, passes, parts, m, p int, scale float64, blocks func(R) []float64) []float64 {
	se := make([]float64, p)
	if m < 2 {
		return se
	}
	b := make([]float64, m*p)
	for i := range passes {
		clear(b)
		for _, r := range res[i*parts : (i+1)*parts] {
			for k, v := range blocks(r) {
				b[k] += v
			}
		}
		addBlockVar(se, b, m, p, scale, 1/float64(passes))
	}
	for a := range se {
		se[a] = math.Sqrt(se[a])
	}
	return se
}

// addBlockVar adds w·scale²·m·s²_b·(1 − 1/scale) to v[a] for every
// coordinate a: the sampling variance of scale·Σ_k b_k (m blocks,
// block-major b) as an estimate of the whole data's total, s²_b the
// blocks' sample variance (see subsetSE).
func addBlockVar(v, b []float64, m, p int, scale, w float64) {
	for a := range p {
		mean := 0.0
		for k := range m {
			mean += b[k*p+a]
		}
		mean /= float64(m)
		ss := 0.0
		for k := range m {
			d := b[k*p+a] - mean
			ss += d * d
		}
		v[a] += w * scale * scale * float64(m) * ss / float64(m-1) * max(0, 1-1/scale)
	}
}

// diffBase is the full data's tiling at u0 and a subset's at u0, from
// which scoreTile makes the full data's score at any u without reading
// all the data again.
type diffBase struct {
	full, at0 *tiling
	sub       *fit
	stream    uint64 // the subset's tiling stream (its offsets)
}

// scoreTile is the deterministic full-data tiling at u that Newton and its
// line search use: f.tile, or, once newton has read all the data at u0
// (diff set), the difference estimate
//
//	ĝ(u) = ĝ_full(u0) + scale·Σ_{b ∈ subset} [g_b(u) − g_b(u0)]
//
// on the same blocks and windows. Its error is the subset's sampling
// error of a difference of scores at nearby points, not of a score (which
// would move the mean by √(T/n − 1) sds, see PrepObs): on a simulated SVM
// series of 10⁷ observations, with 10⁶ of them in the subset and Newton's
// steps 5.51, 0.67 and 0.18 posterior sds from u0, it may move the mean by
// 0.05 posterior sd (reported in subSE, so the anchor's ShiftSD includes
// it; prepareAt reads all the data again above 0.1). The full data are
// read once instead of two or three times (about ten minutes a pass at
// T = 10⁸).
func (f *fit) scoreTile(ctx context.Context, u []float64, passes int, stream uint64) (*tiling, error) {
	d := f.diff
	if d == nil {
		return f.tile(ctx, u, passes, stream, f.tileSet())
	}
	ts, err := d.sub.tile(ctx, u, 1, d.stream, d.sub.tileSet())
	if err != nil {
		return nil, err
	}
	p := f.dim
	t := &tiling{mean: make([]float64, p), se: make([]float64, p), fisher: ts.fisher, passes: 1,
		loglik: d.full.loglik + ts.loglik - d.at0.loglik, subSE: make([]float64, p)}
	for a := range p {
		t.mean[a] = d.full.mean[a] + ts.mean[a] - d.at0.mean[a]
	}
	m := len(ts.blk) / p
	if m >= 2 {
		b := make([]float64, len(ts.blk))
		for k := range b {
			b[k] = ts.blk[k] - d.at0.blk[k]
		}
		addBlockVar(t.subSE, b, m, p, d.sub.scale, 1)
		for a := range t.subSE {
			t.subSE[a] = math.Sqrt(t.subSE[a])
		}
	}
	return t, nil
}

// setDiff makes scoreTile difference from f's tiling t at u0 (newton
// calls it when diffOK): a subset of diffObs observations (a tenth of f's at most) is
// tiled at u0 once. f is the whole data or, from 10⁶ observations on, a
// Newton level's subset (whose own subset thins its blocks).
func (f *fit) setDiff(ctx context.Context, u0 []float64, t *tiling, stream uint64) error {
	sub := f.subset(min(diffObs, f.total/10))
	at0, err := sub.tile(ctx, u0, 1, stream, sub.tileSet())
	if err != nil {
		return err
	}
	f.diff = &diffBase{full: t, at0: at0, sub: sub, stream: stream}
	f.log("Newton's next scores: this point's from all %d observations plus differences on a subset of %d", f.total, sub.total)
	return nil
}

// diffObs is the size of the subset scoreTile differences on.
const diffObs = 1000000

// merge adds the passes of o to t.
func (t *tiling) merge(o *tiling) {
	n1, n2 := float64(t.passes), float64(o.passes)
	n := n1 + n2
	for a := range t.mean {
		// Pooled variance of the pass values from the two groups.
		v1 := t.se[a] * t.se[a] * n1 * (n1 - 1)
		v2 := o.se[a] * o.se[a] * n2 * (n2 - 1)
		m := (n1*t.mean[a] + n2*o.mean[a]) / n
		v := v1 + v2 + n1*(t.mean[a]-m)*(t.mean[a]-m) + n2*(o.mean[a]-m)*(o.mean[a]-m)
		t.mean[a] = m
		if n > 1 {
			t.se[a] = math.Sqrt(v / (n - 1) / n)
		}
	}
	for a := range t.fisher {
		t.fisher[a] = (n1*t.fisher[a] + n2*o.fisher[a]) / n
	}
	t.passes += o.passes
}

// hessian returns −∇² log π at u: the information fisher (the blocks'
// empirical Fisher information, or −J) plus the prior's curvature (central
// differences of its gradient), made positive definite (eigenvalues below
// 10⁻⁸ of the largest replaced by their magnitude, at least that floor).
func (f *fit) hessian(u, fisher []float64) (*mat.SymDense, error) {
	p := f.dim
	h := f.information(u, fisher)
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		return nil, errors.New("sgmcmc: eigendecomposition of the Hessian failed")
	}
	vals := eig.Values(nil)
	top := vals[len(vals)-1]
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, fmt.Errorf("sgmcmc: the information matrix at the mode is not positive (largest eigenvalue %v)", top)
	}
	clipped := false
	for k, v := range vals {
		if v < 1e-8*top {
			// A negative curvature (an indefinite −J away from the mode)
			// keeps its magnitude as the scale: clipped to 1e-8·top it
			// would make that direction's sd 10⁴ times the narrowest.
			vals[k], clipped = max(math.Abs(v), 1e-8*top), true
		}
	}
	if clipped {
		var q mat.Dense
		eig.VectorsTo(&q)
		var r mat.Dense
		r.Mul(&q, mat.NewDiagDense(p, vals))
		var full mat.Dense
		full.Mul(&r, q.T())
		for i := range p {
			for j := i; j < p; j++ {
				h.SetSym(i, j, 0.5*(full.At(i, j)+full.At(j, i)))
			}
		}
	}
	return h, nil
}

// information returns the symmetrised information matrix fisher (row-major
// p×p) plus the prior's curvature −∇²log p(u) (central differences), not
// clipped: it may be indefinite.
func (f *fit) information(u, fisher []float64) *mat.SymDense {
	p := f.dim
	hp := make([]float64, p*p)
	gp, gm := make([]float64, p), make([]float64, p)
	x := append([]float64(nil), u...)
	for j := range p {
		d := 1e-4 * math.Max(1, math.Abs(u[j]))
		x[j] = u[j] + d
		f.model.LogPrior(gp, x)
		x[j] = u[j] - d
		f.model.LogPrior(gm, x)
		x[j] = u[j]
		for i := range p {
			hp[i*p+j] = -(gp[i] - gm[i]) / (2 * d)
		}
	}
	h := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			h.SetSym(i, j, 0.5*(fisher[i*p+j]+fisher[j*p+i])+0.5*(hp[i*p+j]+hp[j*p+i]))
		}
	}
	return h
}

// cholInverse returns the row-major lower Cholesky factor of H⁻¹.
func cholInverse(h *mat.SymDense) ([]float64, error) {
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		return nil, errors.New("sgmcmc: the Hessian at the mode is not positive definite")
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, err
	}
	var ci mat.Cholesky
	if !ci.Factorize(&inv) {
		return nil, errors.New("sgmcmc: the inverse Hessian is not positive definite")
	}
	var l mat.TriDense
	ci.LTo(&l)
	p := h.SymmetricDim()
	out := make([]float64, p*p)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i*p+j] = l.At(i, j)
		}
	}
	return out, nil
}

// lTrans returns Lᵀv.
func lTrans(l, v []float64) []float64 {
	p := len(v)
	out := make([]float64, p)
	for j := range p {
		for i := j; i < p; i++ {
			out[j] += l[i*p+j] * v[i]
		}
	}
	return out
}

// lMul returns u + L z.
func lMul(u, l, z []float64) []float64 {
	p := len(z)
	out := append([]float64(nil), u...)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i] += l[i*p+j] * z[j]
		}
	}
	return out
}

// prepare fills f.prep: mode, Hessian, anchor and gradient noise.
func (f *fit) prepare(ctx context.Context) error {
	t0 := time.Now()
	if f.s.Checkpoint != "" {
		if ok, err := f.loadPreparation(); err != nil || ok {
			if ok {
				f.resumed = true
				f.log("resuming: preparation read from %s.prep", f.s.Checkpoint)
			}
			return err
		}
	}
	u0 := f.u0
	f.log("warm-up: %d Adam iterations from the starting point", f.s.WarmUp)
	u, err := f.warmUp(ctx, u0)
	if err != nil {
		return err
	}
	f.warm = u
	if err := f.chooseFilter(u); err != nil {
		return err
	}
	f.tryCoarser()
	for {
		err = f.prepareAt(ctx, u)
		for f.widenGrid(err) {
			err = f.prepareAt(ctx, u)
		}
		if f.toParticles(ctx, err, "preparation") {
			err = f.prepareAt(ctx, u)
		}
		if err != nil {
			return err
		}
		retry, err := f.checkDiscretisation(ctx)
		if err != nil {
			return err
		}
		if !retry {
			break
		}
		// The coarser discretisation's correction is too large: the
		// model as given, from the coarser one's mode.
		u = f.prep.Mode
	}
	f.prep.Seconds = time.Since(t0).Seconds()
	if f.s.Checkpoint != "" {
		return f.savePreparation()
	}
	return nil
}

// valid reports whether d is nil or has the dimensions of p parameters
// with finite entries (a checkpoint's, read back).
func (d *Discretisation) valid(p int) bool {
	if d == nil {
		return true
	}
	for _, v := range [][]float64{d.Mode, d.Tilt, d.Curve, d.Shift} {
		if len(v) != p || firstNonFinite(v) >= 0 {
			return false
		}
	}
	if len(d.Chol) != p*p || firstNonFinite(d.Chol) >= 0 {
		return false
	}
	for _, v := range [][]float64{d.Cross, d.TargetChol} {
		if v != nil && (len(v) != p*p || firstNonFinite(v) >= 0) {
			return false
		}
	}
	if d.Cubic != nil && (len(d.Cubic) != p || firstNonFinite(d.Cubic) >= 0) {
		return false
	}
	for i := range p {
		if !(d.Chol[i*p+i] > 0) {
			return false
		}
	}
	return true
}

// discretisationMaxCurve is the largest |b_k| of the discretisation
// correction that is applied (a larger one would change a posterior sd by
// more than 1/√(1 − 0.5) = 1.41 on a quadratic model measured at ± one sd).
const discretisationMaxCurve = 0.5

// discretisationMaxShift is the correction's mean shift (posterior sds)
// above which the Posterior warns: the cubic remainder of the quadratic
// model, about a tenth of the linear term over ± two sds on the S&P 500
// GARCH, then exceeds 0.1 sd.
const discretisationMaxShift = 1.0

// discretisationMaxResidual is the Residual (posterior sds), and
// discretisationMaxSDRatio the ResidualSD's distance from 1, beyond which
// the Posterior warns when the shift is also beyond discretisationBand
// standard errors of the check (a 95% band).
const (
	discretisationMaxResidual = 0.1
	discretisationMaxSDRatio  = 0.1
	discretisationBand        = 1.96
)

// residualWarning returns the warning for a discretisation check whose
// weights move a mean or an sd beyond the bounds ("" for none).
func residualWarning(dc *Discretisation, names []string) string {
	for k, r := range dc.Residual {
		if math.Abs(r) > discretisationMaxResidual && math.Abs(r) > discretisationBand*dc.ResidualSE[k] {
			return fmt.Sprintf("the discretisation correction falls short: importance weights to the model's finer scorer at %d draws move the mean of %s by %.2f ± %.2f posterior sd; refine the scorer (GARCH: Nodes)",
				dc.Draws, names[k], r, dc.ResidualSE[k])
		}
	}
	for k, r := range dc.ResidualSD {
		if math.Abs(r-1) > discretisationMaxSDRatio && math.Abs(r-1) > discretisationBand*dc.ResidualSDSE[k] {
			return fmt.Sprintf("the discretisation correction falls short: importance weights to the model's finer scorer at %d draws change the sd of %s by a factor %.2f ± %.2f; refine the scorer (GARCH: Nodes)",
				dc.Draws, names[k], r, dc.ResidualSDSE[k])
		}
	}
	return ""
}

// checkDiscretisation sets Preparation.Discretisation when the
// estimators use the model's exact scorer and it is an ssm.RefinedScorer:
// for the model as given, both discretisations' full-data
// log-likelihoods at u* and u* ± L e_k, on the workers (a diagonal
// quadratic). A coarser model on trial (tryCoarser) is judged by
// chooseCoarse on a full quadratic design instead, which keeps it (or a
// coarser one still) or sends the chains back to the model as given:
// retry then reports that its preparation must run. (The diagonal
// measurement had to be repeated around the corrected mode's prediction,
// 0.36 sd away in GARCH's λ on DAX, for a residual of −0.01 ± 0.02 sd
// instead of −0.10 ± 0.09; the design, reaching 3 sds, leaves 0.03 ±
// 0.02 sd measured once around u*.)
func (f *fit) checkDiscretisation(ctx context.Context) (retry bool, err error) {
	ex, ok := f.model.(ssm.ExactScorer)
	rs, ok2 := f.model.(ssm.RefinedScorer)
	l, u0 := f.prep.Chol, f.prep.Mode
	if !ok || !ok2 || !f.gset.Exact || l == nil {
		return false, nil
	}
	if f.trial {
		f.trial = false
		return f.chooseCoarse(ctx, rs, u0, l)
	}
	dc, err := f.measureDiscretisation(ctx, ex, rs, u0, l)
	if err != nil {
		return false, err
	}
	f.prep.Discretisation = dc
	f.log("discretisation correction (the model's finer scorer at the mode and ± one sd): tilt %.3f, curvature %.3f per whitened axis; it moves the posterior mean by %.2f posterior sds (per coordinate of u)", dc.Tilt, dc.Curve, dc.Shift)
	return false, nil
}

// measureDiscretisation measures the correction around the mode uc:
// both scorers' full-data log-likelihoods at uc and uc ± L e_k, on the
// workers.
func (f *fit) measureDiscretisation(ctx context.Context, ex ssm.ExactScorer, rs ssm.RefinedScorer, uc, l []float64) (*Discretisation, error) {
	p := f.dim
	pts := make([][]float64, 2*p+1)
	for k := range p {
		z := make([]float64, p)
		z[k] = 1
		pts[2*k] = lMul(uc, l, z)
		z[k] = -1
		pts[2*k+1] = lMul(uc, l, z)
	}
	pts[2*p] = uc
	fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
	if err != nil {
		return nil, err
	}
	base, err := f.fullLogLiks(ctx, pts, exactLogLik(ex))
	if err != nil {
		return nil, err
	}
	return newDiscretisation(pts, fine, base, uc, l)
}

// coarseMaxShift is the largest mean shift (posterior sds) of a coarser
// model's discretisation correction for which Fit samples with it.
const coarseMaxShift = 0.5

// tryCoarser puts the chains on trial on the model's coarser
// discretisation (ssm.Coarsener, with an exact and a finer scorer) when
// they use the model's exact scorer: the preparation then runs at the
// coarser model's cost (GARCH: 32 σ² nodes, a third of 64's, refined by
// extrapolation from 32 and 64), and checkDiscretisation keeps it or
// goes back to the model as given. The check after sampling always runs
// for a coarser model.
func (f *fit) tryCoarser() {
	cs, ok := f.model.(ssm.Coarsener)
	if !ok || !f.gset.Exact {
		return
	}
	coarse, ok := cs.Coarsen()
	if !ok {
		return
	}
	_, ok = coarse.(ssm.ExactScorer)
	if _, ok2 := coarse.(ssm.RefinedScorer); !ok || !ok2 {
		return
	}
	f.model, f.trial = coarse, true
	f.log("preparing at the model's coarser discretisation first (kept when its correction towards its finer scorer is small)")
}

// exactLogLik returns ex's log-likelihood alone.
func exactLogLik(ex ssm.ExactScorer) func([]float64, ssm.Sequence, ssm.Window) (float64, error) {
	return func(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
		return ex.ExactScore(nil, u, seq, w)
	}
}

// fullLogLiks returns the full-data log-likelihood ll (every sequence
// one window) at each of pts, on the workers.
func (f *fit) fullLogLiks(ctx context.Context, pts [][]float64, ll func([]float64, ssm.Sequence, ssm.Window) (float64, error)) ([]float64, error) {
	out := make([]float64, len(pts))
	err := workerPool(len(pts), f.s.Workers, func() func(int) error {
		return func(i int) error {
			for _, seq := range f.data.Sequences {
				if err := ctx.Err(); err != nil {
					return err
				}
				v, err := ll(pts[i], seq, ssm.Full(seq.Len()))
				if err != nil {
					return err
				}
				out[i] += v
			}
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: discretisation check: %w", err)
	}
	return out, nil
}

// correctedMode returns the mode of −|z|²/2 + Σ_k a_k z_k + ½b_k z_k²
// (the chains' posterior N(0, I) in whitened coordinates times the
// correction), with the applied curvatures: z_k = a_k/(1 − b_k).
func correctedMode(tilt, curve []float64) []float64 {
	z := make([]float64, len(tilt))
	for k, a := range tilt {
		z[k] = a / (1 - appliedCurve(curve[k]))
	}
	return z
}

// newDiscretisation fits the correction's quadratic to r = fine − base at
// pts = (u0 + L e_1, u0 − L e_1, …, u0), centred at the mode u0 of the
// chains' posterior N(u0, L Lᵀ), for the shift of its mean.
func newDiscretisation(pts [][]float64, fine, base, u0, l []float64) (*Discretisation, error) {
	p := len(u0)
	r := make([]float64, len(pts))
	for i := range r {
		r[i] = fine[i] - base[i]
	}
	if i := firstNonFinite(r); i >= 0 {
		return nil, fmt.Errorf("sgmcmc: discretisation check: the log-likelihoods' difference at %v is %v", pts[i], r[i])
	}
	tilt, curve := make([]float64, p), make([]float64, p)
	for k := range p {
		tilt[k] = (r[2*k] - r[2*k+1]) / 2
		curve[k] = r[2*k] + r[2*k+1] - 2*r[2*p]
	}
	shift := lMul(make([]float64, p), l, correctedMode(tilt, curve))
	for i, sd := range cholSD(l, p) {
		shift[i] /= sd
	}
	return &Discretisation{Mode: slices.Clone(u0), Chol: slices.Clone(l), Tilt: tilt, Curve: curve, Shift: shift}, nil
}

// discretisationDraws is the number of draws at which the correction is
// checked after sampling (Discretisation.Residual).
const discretisationDraws = 24

// checkResidual sets Discretisation.Residual from post's draws: both
// scorers at discretisationDraws evenly thinned draws, on the workers.
func (f *fit) checkResidual(ctx context.Context, post *Posterior) error {
	dc := f.prep.Discretisation
	if _, v := argMaxAbs(dc.Shift); v <= 0.1 && !dc.Coarse {
		return nil
	}
	ex, ok := f.model.(ssm.ExactScorer)
	rs, ok2 := f.model.(ssm.RefinedScorer)
	if !ok || !ok2 {
		return fmt.Errorf("the model %T has no exact and finer scorer", f.model)
	}
	var us, nat []float64
	for c := range post.U {
		us, nat = append(us, post.U[c]...), append(nat, post.Natural[c]...)
	}
	p, d := f.dim, len(post.Names)
	n := len(us) / p
	K := min(discretisationDraws, n)
	at := func(i int) int { return i * n / K } // the i-th of K evenly thinned draws
	corr := newDiscretised(nil, dc)
	logw := make([]float64, K)
	// weigh sets logw at the draws idx (of the K).
	weigh := func(idx []int) error {
		pts := make([][]float64, len(idx))
		for k, i := range idx {
			pts[k] = us[at(i)*p : (at(i)+1)*p]
		}
		fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
		if err != nil {
			return err
		}
		base, err := f.fullLogLiks(ctx, pts, exactLogLik(ex))
		if err != nil {
			return err
		}
		for k, i := range idx {
			if logw[i] = fine[k] - base[k] - corr.correction(nil, pts[k]); math.IsNaN(logw[i]) || math.IsInf(logw[i], 0) {
				return fmt.Errorf("log weight %v at draw %d", logw[i], at(i))
			}
		}
		return nil
	}
	// First every other draw; the rest only when those leave a doubt.
	var half, rest []int
	for i := range K {
		if i%2 == 0 {
			half = append(half, i)
		} else {
			rest = append(rest, i)
		}
	}
	if err := weigh(half); err != nil {
		return err
	}
	// x[k][j]: the k-th of the K draws' natural parameter j, in posterior
	// sds from its mean.
	x := make([][]float64, K)
	for k := range x {
		x[k] = make([]float64, d)
		for j, row := range post.Summary() {
			x[k][j] = (nat[at(k)*d+j] - row.Mean) / row.SD
		}
	}
	used := half
	ess := residualShift(dc, used, logw, x)
	if _, r := argMaxAbs(dc.Residual); r > discretisationSure || maxAbs(dc.ResidualSE) > discretisationSureSE {
		if err := weigh(rest); err != nil {
			return err
		}
		used = make([]int, K)
		for i := range used {
			used[i] = i
		}
		ess = residualShift(dc, used, logw, x)
	}
	dc.Draws = len(used)
	f.log("discretisation correction checked at %d draws (importance weights to the finer scorer, ESS %.1f): it leaves the means %.3f ± %.3f posterior sds from the finer scorer's", len(used), ess, dc.Residual, dc.ResidualSE)
	return nil
}

// The residual check weighs discretisationDraws/2 draws first and all
// discretisationDraws when some |Residual| exceeds discretisationSure or
// some ResidualSE exceeds discretisationSureSE (so a residual near the
// warning's 0.2 sd is always measured at all of them). GARCH: 12 passes
// at 256 nodes cost 35 s of the S&P 500 fit.
const (
	discretisationSure   = 0.1
	discretisationSureSE = 0.05
)

// residualShift sets dc.Residual and dc.ResidualSE from the draws used
// (indices into logw, their log weights, and x, their standardised
// natural parameters) and returns the weights' ESS.
func residualShift(dc *Discretisation, used []int, logw []float64, x [][]float64) float64 {
	K, d := len(used), len(x[0])
	lw := make([]float64, K)
	for k, i := range used {
		lw[k] = logw[i]
	}
	wts := normalized(lw)
	s2 := 0.0
	for i, w := range wts {
		s2 += w * w
		wts[i] = w * float64(K) // mean 1
	}
	dc.Residual, dc.ResidualSE = make([]float64, d), make([]float64, d)
	dc.ResidualSD, dc.ResidualSDSE = make([]float64, d), make([]float64, d)
	for j := range d {
		xm := 0.0
		for _, i := range used {
			xm += x[i][j]
		}
		xm /= float64(K)
		// The self-normalised mean Σ w x / Σ w minus the plain mean, and
		// its delta-method variance Σ w_i²(x_i − m_w)² / K².
		mw := 0.0
		for k, i := range used {
			mw += wts[k] * x[i][j] / float64(K)
		}
		v := 0.0
		for k, i := range used {
			e := wts[k]*(x[i][j]-mw) - (x[i][j] - xm)
			v += e * e
		}
		dc.Residual[j] = mw - xm
		dc.ResidualSE[j] = math.Sqrt(v) / float64(K)
		// The sds: weighted variance vw against the plain vp, with the
		// delta-method variance of vw − vp, and r = √(vw/vp) with
		// SE(r) ≈ SE(vw − vp)/(2 vp).
		vw, vp := 0.0, 0.0
		for k, i := range used {
			vw += wts[k] * (x[i][j] - mw) * (x[i][j] - mw) / float64(K)
			vp += (x[i][j] - xm) * (x[i][j] - xm) / float64(K)
		}
		ve := 0.0
		for k, i := range used {
			e := wts[k]*((x[i][j]-mw)*(x[i][j]-mw)-vw) - ((x[i][j]-xm)*(x[i][j]-xm) - vp)
			ve += e * e
		}
		if vp > 0 {
			dc.ResidualSD[j] = math.Sqrt(vw / vp)
			dc.ResidualSDSE[j] = math.Sqrt(ve) / float64(K) / (2 * vp)
		}
	}
	return 1 / s2
}

// discretised is an estimator of the chains' target plus the
// discretisation correction a·z + ½ zᵀBz, z = L⁻¹(u − u*)
// (Discretisation; B diagonal unless Cross is set): it adds the
// correction to the log posterior and its gradient L⁻ᵀ(a + Bz) to the
// gradient.
type discretised struct {
	est         Estimator
	mode, l     []float64
	a, b        []float64 // b: B, p×p row-major
	cubic       []float64 // d, the cubes' coefficients (nil: none)
	trust       float64   // the trust radius (0: none)
	z, v, gs, g []float64 // scratch
}

func newDiscretised(est Estimator, dc *Discretisation) *discretised {
	p := len(dc.Mode)
	b := slices.Clone(dc.Cross)
	if b == nil {
		b = make([]float64, p*p)
		for k, v := range dc.Curve {
			b[k*p+k] = appliedCurve(v)
		}
	}
	trust := 0.0
	if dc.Cross != nil {
		trust = quadTrust
	}
	return &discretised{est: est, mode: dc.Mode, l: dc.Chol, a: dc.Tilt, b: b, cubic: dc.Cubic, trust: trust,
		z: make([]float64, p), v: make([]float64, p), gs: make([]float64, p), g: make([]float64, p)}
}

// appliedCurve is the curvature b of the discretisation correction that
// is applied: b, or 0 when |b| > discretisationMaxCurve.
func appliedCurve(b float64) float64 {
	if math.Abs(b) > discretisationMaxCurve {
		return 0
	}
	return b
}

// correction returns the correction at u and adds its gradient to grad
// (grad nil: the value only).
func (d *discretised) correction(grad, u []float64) float64 {
	p := len(u)
	// z = L⁻¹(u − u*) by forward substitution.
	for i := range p {
		s := u[i] - d.mode[i]
		for j := range i {
			s -= d.l[i*p+j] * d.z[j]
		}
		d.z[i] = s / d.l[i*p+i]
	}
	// Beyond the trust radius R the curved part h(z) = ½zᵀBz + Σ d_k z_k³
	// is held at its value on the sphere through z, h(zc), zc = s z,
	// s = R/|z|, whose gradient is s(g − (g·ẑ)ẑ), g = ∇h(zc), ẑ = z/|z|.
	zz := 0.0
	for k := range p {
		zz += d.z[k] * d.z[k]
	}
	s := 1.0
	if d.trust > 0 && zz > d.trust*d.trust {
		s = d.trust / math.Sqrt(zz)
	}
	c, gz := 0.0, 0.0
	for k := range p {
		bz := 0.0
		for j := range p {
			bz += d.b[k*p+j] * d.z[j]
		}
		zk := s * d.z[k]
		g := s * bz // (B zc)_k
		c += 0.5 * zk * g
		if d.cubic != nil {
			c += d.cubic[k] * zk * zk * zk
			g += 3 * d.cubic[k] * zk * zk
		}
		d.v[k] = g
		gz += g * d.z[k]
	}
	for k := range p {
		if s < 1 {
			d.v[k] = s * (d.v[k] - gz*d.z[k]/zz)
		}
		c += d.a[k] * d.z[k]
		d.v[k] += d.a[k]
	}
	if grad == nil {
		return c
	}
	// L⁻ᵀ v by back substitution.
	for i := p - 1; i >= 0; i-- {
		s := d.v[i]
		for j := i + 1; j < p; j++ {
			s -= d.l[j*p+i] * d.gs[j]
		}
		d.gs[i] = s / d.l[i*p+i]
		grad[i] += d.gs[i]
	}
	return c
}

func (d *discretised) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	lp, err := d.est.Grad(ctx, grad, u, rng)
	if err != nil {
		return lp, err
	}
	return lp + d.correction(grad, u), nil
}

// LogPosterior implements logDensity: the estimator's log posterior alone
// when it has one.
func (d *discretised) LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	var lp float64
	var err error
	if ld, ok := d.est.(logDensity); ok {
		lp, err = ld.LogPosterior(ctx, u, rng)
	} else {
		lp, err = d.est.Grad(ctx, d.g, u, rng)
	}
	if err != nil {
		return lp, err
	}
	return lp + d.correction(nil, u), nil
}

// prepareAt is the preparation from the warm-up's end u: Newton steps, the
// anchor, the Jacobian, the noise and the step.
func (f *fit) prepareAt(ctx context.Context, u []float64) (err error) {
	p := f.dim
	passes := 4
	if f.deterministic() {
		passes = 1
	}
	passes = min(passes, f.s.AnchorPasses)
	stream := uint64(1 << 41)
	// With deterministic gradients on long data, Newton first runs on
	// subsets of 10⁵, 10⁶, ... observations (evenly spread blocks, the
	// score scaled up to the whole), each tenfold larger, while smaller
	// than half the data: a full tiling of 10⁸ observations takes ten
	// minutes and the warm-up may end hundreds of posterior sds from the
	// mode, while each level starts a few sds from its own mode (5–11 on
	// the simulated SVM at 10⁷ and 10⁸), so the full data take two or
	// three Newton steps, of which only the first reads them all
	// (scoreTile).
	// sf is f, or with PrepObs a subset of it: the Newton steps from here
	// on, the anchor and the Jacobian read sf's observations only.
	var levels []int
	for n := subsetObs; f.deterministic() && f.total > 2*n; n *= 10 {
		levels = append(levels, n)
	}
	sf := f
	if f.prepSubset() {
		for len(levels) > 0 && levels[len(levels)-1] >= f.s.PrepObs {
			levels = levels[:len(levels)-1]
		}
	}
	for _, n := range levels {
		sub := f.subset(n)
		// From diffObs observations on, a level reads its own subset
		// once too (differences on a tenth of it, 100 blocks of 1000 at
		// least).
		sub.diffOK = sub.total >= diffObs
		f.log("Newton on a subset of %d of the %d observations first", sub.total, f.total)
		if u, _, _, _, stream, err = sub.newton(ctx, u, passes, stream); err != nil {
			return err
		}
		// The grid at the subset's mode serves the full data (their mode
		// is a few of their posterior sds away), so their Newton needs no
		// second round after a regrid.
		f.regrid(u)
	}
	var t *tiling
	var h *mat.SymDense
	var l []float64
	// After the subsets, the full data are read once: Newton's later
	// scores difference a subset (scoreTile).
	f.diffOK = len(levels) > 0
	defer func() { f.diff, f.diffOK = nil, false }()
	for round := 0; ; round++ {
		if f.prepSubset() {
			sf = f.subset(f.s.PrepObs) // subset copies the current grid
			f.log("PrepObs: the mode, anchor, Jacobian and metric come from a subset of %d of the %d observations (no full-data pass)", sf.total, f.total)
		}
		if u, t, h, l, stream, err = sf.newton(ctx, u, passes, stream); err != nil {
			return err
		}
		// (The whole data's Newton re-chooses the grid itself.)
		if sf == f || round == 1 || !f.regrid(u) {
			break
		}
	}
	if f.diff != nil {
		if s := maxAbs(lTrans(l, t.anchorSE())); s > 0.1 {
			// The subset's differences are too imprecise for the anchor:
			// read all the data at u after all.
			f.log("the subset's score differences may move the mean by %.2f posterior sd: a full-data pass at the mode", s)
			if t, err = f.tile(ctx, u, passes, stream, f.tileSet()); err != nil {
				return err
			}
			stream += uint64(passes)
		}
	}
	// The anchor: fresh passes with AnchorParticles until its error moves
	// the mean by < 0.1 sd. The control-variate chains inherit the
	// anchor's particle bias (the bias of g_S(u) − g_S(u*) mostly cancels),
	// so a larger filter here buys a smaller bias at the cost of the
	// preparation only.
	fisher := t.fisher
	var jac []float64
	if f.deterministic() {
		// Above jacobianObs observations the Jacobian comes from a subset
		// of jacobianObs, scaled up: p + 1 full passes would dominate the
		// preparation. Its error only rescales the control variate's
		// linear term: on the simulated SVM with T = 10⁶, a 10⁵ subset's
		// diagonal was within 0.7–5% of the full data's, and τ's
		// posterior sd moved by 2.6% (0.00334 vs 0.00343).
		jf := sf
		if sf.total > 2*jacobianObs {
			jf = f.subset(jacobianObs)
		}
		if jac, err = jf.jacobian(ctx, u, stream); err != nil {
			return err
		}
		stream++
	}
	own := t // the chains' own filter's tiled score at u
	if !f.deterministic() {
		// Four passes at least: their spread is the standard error's
		// estimate, and two would give it one degree of freedom.
		first := min(4, f.s.AnchorPasses)
		if t, err = sf.tile(ctx, u, first, stream, f.aset); err != nil {
			return err
		}
		stream += uint64(first)
	}
	shift := func() float64 { return maxAbs(lTrans(l, t.se)) }
	for !f.deterministic() && t.passes < f.s.AnchorPasses && shift() > 0.1 {
		need := int(math.Ceil(float64(t.passes) * math.Pow(shift()/0.1, 2)))
		more := min(max(need-t.passes, f.s.Workers), f.s.AnchorPasses-t.passes)
		o, err := sf.tile(ctx, u, more, stream, f.aset)
		if err != nil {
			return err
		}
		stream += uint64(more)
		t.merge(o)
	}
	if f.prep.Exact && jac != nil && !t.full {
		// The model's exact scorer: the observed information −J is the
		// Hessian (the blocks' empirical Fisher information overstated
		// GARCH's 3- to 10-fold in two directions on DAX; see
		// observedNewton). observedNewton's exact full-data −J comes with
		// t; the tilings' −J is the fallback (on the S&P 500 it was
		// nearly singular along μ: probes went to u₀ = 400).
		fisher = negated(jac)
	}
	if h, err = f.hessian(u, fisher); err != nil {
		return err
	}
	if l, err = cholInverse(h); err != nil {
		return err
	}
	// The plain chains' bias correction c = ĝ_full(u*) − ĝ_gset(u*): the
	// tiled score of their own (smaller) filter at u* measures its
	// particle bias there, so g_S(u) + c has the bias b(u) − b(u*), which
	// is small near u*, as for the control variate. Its error adds to the
	// anchor's; more passes of the cheap filter until it too moves the
	// mean by < 0.1 sd.
	correction := make([]float64, p)
	corrSE := make([]float64, p)
	setCorr := func() {
		for i := range correction {
			correction[i] = t.mean[i] - own.mean[i]
			corrSE[i] = math.Hypot(t.se[i], own.se[i])
		}
	}
	if !f.deterministic() {
		setCorr()
		for own.passes < f.s.AnchorPasses && maxAbs(lTrans(l, corrSE)) > 0.1 {
			more := min(max(own.passes, f.s.Workers), f.s.AnchorPasses-own.passes)
			o, err := sf.tile(ctx, u, more, stream, f.gset)
			if err != nil {
				return err
			}
			stream += uint64(more)
			own.merge(o)
			setCorr()
		}
	}
	f.prep = Preparation{Mode: u, Chol: l, Hessian: symData(h), Anchor: t.mean, AnchorSE: t.anchorSE(), Grid: f.gset.Grid, Exact: f.gset.Exact && !f.s.Exact, Jacobian: jac, S: f.gset.S, B: f.gset.B,
		Passes: t.passes, ShiftSD: maxAbs(lTrans(l, t.anchorSE())), Correction: correction, CorrectionSE: corrSE, Fallback: f.fallback}
	f.log("anchor: %d tiling passes, mean shift from its error ≤ %.2f posterior sd; plain-gradient bias correction %.3g (shift ≤ %.2f sd)",
		t.passes, f.prep.ShiftSD, correction, maxAbs(lTrans(l, corrSE)))

	return f.measureNoise(ctx)
}

// jacobian returns J = ∂ĝ_full/∂u at u (row-major, J[i*p+k] = ∂ĝ_i/∂u_k)
// by forward differences of deterministic tilings, all with the same
// tiling (the same stream) so that they differentiate one function.
func (f *fit) jacobian(ctx context.Context, u []float64, stream uint64) ([]float64, error) {
	pts := jacobianPoints(u)
	cols := make([][]float64, len(pts))
	for i, v := range pts {
		t, err := f.tile(ctx, v, 1, stream, f.tileSet())
		if err != nil {
			return nil, fmt.Errorf("sgmcmc: Jacobian of the full-data score: %w", err)
		}
		cols[i] = t.mean
	}
	return forwardDiff(cols, f.dim), nil
}

// jacobianEta is the step of the differences of the scores.
const jacobianEta = 1e-4

// jacobianPoints returns u and u + ηe_k for k = 0 … p−1, in that order:
// p + 1 full-data passes, where central differences took 2p (at T = 10⁶
// each is a tenth of the fit).
func jacobianPoints(u []float64) [][]float64 {
	pts := make([][]float64, 1+len(u))
	pts[0] = append([]float64(nil), u...)
	for k := range u {
		v := append([]float64(nil), u...)
		v[k] += jacobianEta
		pts[1+k] = v
	}
	return pts
}

// forwardDiff returns J (row-major, J[i*p+k] = ∂g_i/∂u_k) from the scores
// at jacobianPoints, (g(u + ηe_k) − g(u))/η. Its error against the
// derivative is η/2 times a second derivative of g: relative to J, η/2
// over the scale on which the curvature of the log-likelihood changes in
// u (of order 1), about 10⁻⁴ (TestForwardDiff), where the posterior sd
// needs J to a few per cent.
func forwardDiff(cols [][]float64, p int) []float64 {
	j := make([]float64, p*p)
	for k := range p {
		for i := range p {
			j[i*p+k] = (cols[1+k][i] - cols[0][i]) / jacobianEta
		}
	}
	return j
}

// newCV returns the control variate on est: second order when the
// preparation has a Jacobian (deterministic gradients).
// cvFilters is the number of window filters per control-variate
// gradient: g_S(u) and g_S(u*), and the second-order term's g_S at a
// point near u* when there is a Jacobian (ControlVariate.Difference).
func (f *fit) cvFilters() float64 {
	if f.prep.Jacobian != nil {
		return 3
	}
	return 2
}

func (f *fit) newCV(est *gradient.Estimator) (*gradient.ControlVariate, error) {
	pr := &f.prep
	cv, err := gradient.NewControlVariate(est, pr.Mode, pr.Anchor)
	if err != nil {
		return nil, err
	}
	if pr.Jacobian != nil {
		if err := cv.SetJacobian(pr.Jacobian); err != nil {
			return nil, err
		}
	}
	return cv, nil
}

// newton runs Newton steps from u on the tiled score (see prepare) and
// returns the point, its tiling, Hessian and L, and the next stream.
func (f *fit) newton(ctx context.Context, u []float64, passes int, stream uint64) (_ []float64, t *tiling, h *mat.SymDense, l []float64, _ uint64, err error) {
	// Newton steps on the tiled score: each moves u towards the mode by
	// H⁻¹∇log π, limited to 5 posterior sds. With deterministic gradients
	// a secant line search on the directional derivative replaces the
	// limit (on a simulated SVM series of 10⁶ observations the warm-up
	// ends 77 posterior sds from the mode).
	det := f.deterministic()
	var run runaway
	for round := 0; round < 3; round++ {
		t = nil
		conv := false
		last := 0.0 // the last Newton step's length in posterior sds
		for it := 0; ; it++ {
			if t == nil {
				if t, err = f.scoreTile(ctx, u, passes, stream); err != nil {
					return nil, nil, nil, nil, stream, err
				}
				stream += uint64(passes)
				if det && f.diff == nil && f.diffOK {
					if err = f.setDiff(ctx, u, t, stream); err != nil {
						return nil, nil, nil, nil, stream, err
					}
					stream++
				}
			}
			if h, err = f.hessian(u, t.fisher); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if l, err = cholInverse(h); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if it == 8 || (det && f.prep.Exact) {
				// (The model's exact scorer goes to observedNewton from
				// the start: the blocks' Fisher information misleads it.)
				break
			}
			z, norm := f.newtonStep(u, t, l)
			if limit := 5.0; !det && norm > limit {
				for i := range z {
					z[i] *= limit / norm
				}
			}
			f.log("Newton step %d: %.2f posterior sds", it+1, norm)
			last = norm
			if det && norm < 0.5 {
				conv = true
				// Close enough: the anchor only needs a precise score at a
				// point near the mode, and u has its tiling already (one
				// full pass saved: 15 minutes at T = 10⁸).
				break
			}
			if !det || norm < 3 {
				// Near the mode the Newton step needs no line search.
				u = lMul(u, l, z)
				t = nil
				continue
			}
			if u, t, stream, err = f.lineSearch(ctx, u, l, z, t, stream); err != nil {
				return nil, nil, nil, nil, stream, err
			}
		}
		f.newtonWarn = ""
		if !conv && last > newtonUnconverged && f.scale == 0 && !(det && f.prep.Exact) {
			// Eight steps and still far: the mode, the metric and the
			// anchor rest on a point that is not the mode (constant,
			// all-zero or mis-scaled data: steps of 15–90 sds).
			f.newtonWarn = fmt.Sprintf("Newton steps towards the posterior mode did not converge (the last moved %.1f posterior sds): "+
				"the preparation may be far from the mode, and the data may not suit the model or its prior", last)
		}
		if det && !conv && f.prep.Exact {
			var hObs *mat.SymDense
			var lObs []float64
			if u, t, hObs, lObs, stream, err = f.observedNewton(ctx, u, stream); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if hObs != nil {
				h, l = hObs, lObs
			}
		}
		before := f.gset.Grid
		if f.scale != 0 || !f.regrid(u) {
			break
		}
		run.add(conv, last, before, f.gset.Grid)
	}
	if err := run.check(f.dataWarn); err != nil {
		return nil, nil, nil, nil, stream, err
	}
	return u, t, h, l, stream, nil
}

// runaway records the Newton rounds of a grid filter's preparation that
// end with a regrid: unconverged rounds in a row, each of which moved u
// to where the grid must cover a state range runawayWiden times wider,
// are the log posterior rising without bound away from the data's scale.
// That is an improper posterior, not a far start: the SVM with exact
// zeros in the data (a zero's density N(0; 0, τ²eˣ) integrates to
// e^{σ²/8}/(√(2π)τ) over x ~ N(0, σ²), so the likelihood grows like
// e^{n₀σ²/8} along φ = 0, faster than any polynomial prior tail falls)
// ran to steps of 24–148 posterior sds on grids 3.6–7 times wider in two
// or three rounds at 15–30% zeros among the DAX returns, and the fit then
// sampled for more than ten minutes without an answer. At 10% zeros, and
// on every validated series, the preparation regrids at most once.
type runaway struct {
	streak                int // unconverged widening rounds in a row
	lastStep              float64
	firstGrid, latestGrid pf.Grid
}

func (r *runaway) add(conv bool, last float64, before, after pf.Grid) {
	if conv || after.Hi-after.Lo < runawayWiden*(before.Hi-before.Lo) {
		r.streak = 0
		return
	}
	if r.streak == 0 {
		r.firstGrid = before
	}
	r.streak++
	r.lastStep, r.latestGrid = last, after
}

// A runaway is runawayRounds widening rounds in a row whose last step is
// at least runawaySteps posterior sds, each widening the grid's range by
// runawayWiden at least.
const (
	runawayRounds = 2
	runawaySteps  = 10.0
	runawayWiden  = 1.5
)

// check returns nil, or the error of a runaway, naming the data's
// warnings (which may say why: zeros under the SVM).
func (r *runaway) check(dataWarn []string) error {
	if r.streak < runawayRounds || r.lastStep < runawaySteps {
		return nil
	}
	why := ""
	if len(dataWarn) > 0 {
		why = "; the data warn: " + strings.Join(dataWarn, "; ")
	}
	return fmt.Errorf("%w: %d rounds of Newton steps in a row moved to where the state's range grows, from [%.3g, %.3g] to [%.3g, %.3g], the last step %.1f posterior sds: "+
		"the log posterior keeps rising, so the posterior is improper or nearly so for these data and this model%s",
		ErrNoMode, r.streak, r.firstGrid.Lo, r.firstGrid.Hi, r.latestGrid.Lo, r.latestGrid.Hi, r.lastStep, why)
}

// observedNewton finds the mode for the model's exact scorer, on the
// exact full-data score (each sequence one window: no buffers) with the
// observed information −J (J its Jacobian by central differences) plus
// the prior's curvature. Two things mislead the tiled Newton steps here.
// The blocks' empirical Fisher information assumes independent blocks:
// for GARCH on DAX (φ ≈ 0.99: the variance remembers about 100 days) it
// overstated the information 3- to 10-fold in two directions and its steps
// went on at 0.8–1.9 posterior sds. And a tiling's buffers forget the
// state too slowly: on the S&P 500 (φ ≈ 0.998, 0.998⁴⁰ = 0.92) the tiled
// score's zero was 1.3 posterior sds from the exact one. Far from the mode
// −J may be indefinite (on the S&P 500 at the warm-up's end one eigenvalue
// is −53), so the steps are Levenberg–Marquardt's:
// (−J − ∇²log p + μI) d = ∇log π, each accepted only where the exact
// log posterior increases (one pass on values), μ shrunk after a success
// and grown after a failure. It stops when −J + prior curvature is
// positive definite and its Newton step is < 0.1 posterior sd, and
// returns u, the exact score there as a tiling (se 0, fisher −J), that H
// and its Cholesky factor; if it never gets there, h is nil (the caller's
// H stands).
func (f *fit) observedNewton(ctx context.Context, u []float64, stream uint64) (_ []float64, _ *tiling, h *mat.SymDense, l []float64, _ uint64, err error) {
	p := f.dim
	lpost := f.fullLogPost()
	cur, err := lpost(ctx, u)
	if err != nil {
		return nil, nil, nil, nil, stream, err
	}
	var t *tiling
	mu := 0.0
	for range 20 {
		// The score at u and at u + ηe_k, in parallel.
		sc, err := f.fullScores(ctx, jacobianPoints(u))
		if err != nil {
			return nil, nil, nil, nil, stream, err
		}
		j := forwardDiff(sc, p)
		t = &tiling{mean: sc[0], se: make([]float64, p), fisher: negated(j), passes: 1, loglik: math.NaN(), full: true}
		hj := f.information(u, t.fisher)
		var eig mat.EigenSym
		if !eig.Factorize(hj, false) {
			return nil, nil, nil, nil, stream, errors.New("sgmcmc: eigendecomposition of the observed information failed")
		}
		vals := eig.Values(nil)
		top := vals[p-1]
		if !(top > 0) || math.IsInf(top, 0) {
			return nil, nil, nil, nil, stream, fmt.Errorf("sgmcmc: the observed information is not positive (largest eigenvalue %v)", top)
		}
		g := make([]float64, p)
		f.model.LogPrior(g, u)
		for i := range g {
			g[i] += t.mean[i]
		}
		h, l = nil, nil
		if vals[0] > 0 {
			if lj, err := cholInverse(hj); err == nil {
				h, l = hj, lj
				z := lTrans(l, g)
				norm := math.Sqrt(dot(z, z))
				f.log("Newton step with the observed information: %.2f posterior sds", norm)
				if norm < 0.1 {
					// Take this last step too (one pass): the anchor and
					// the IS proposal's centre then sit at the mode to
					// ~0.01 sd.
					v := lMul(u, l, z)
					sc, err := f.fullScores(ctx, [][]float64{v})
					if err != nil {
						return nil, nil, nil, nil, stream, err
					}
					t.mean = sc[0]
					return v, t, h, l, stream, nil
				}
			}
		} else {
			f.log("observed information not positive definite (smallest eigenvalue %.3g): damped steps", vals[0])
		}
		mu = max(mu, -vals[0]+1e-3*top)
		moved := false
		for try := 0; try < 30 && !moved; try++ {
			a := mat.NewSymDense(p, nil)
			a.CopySym(hj)
			for i := range p {
				a.SetSym(i, i, a.At(i, i)+mu)
			}
			var d mat.VecDense
			if err := d.SolveVec(a, mat.NewVecDense(p, g)); err != nil {
				mu = 4*mu + 1e-3*top
				continue
			}
			v := make([]float64, p)
			for i := range v {
				v[i] = u[i] + d.AtVec(i)
			}
			lv, err := lpost(ctx, v)
			if ctx.Err() != nil {
				return nil, nil, nil, nil, stream, ctx.Err()
			}
			if err != nil || !(lv > cur) {
				mu = 4*mu + 1e-3*top
				continue
			}
			if mu > 0 {
				f.log("damped Newton step (μ = %.3g): log posterior %+.3f", mu, lv-cur)
			}
			u, cur, moved = v, lv, true
			if mu /= 4; mu < 1e-6*top {
				mu = 0
			}
		}
		if !moved {
			// No ascent along any damped step: u is the mode to the
			// precision of the log posterior's rounding.
			return u, t, h, l, stream, nil
		}
	}
	// Not converged in 20 steps: the score at the last u (t was the
	// previous point's), with the last −J; no H (the caller's stands).
	sc, err := f.fullScores(ctx, [][]float64{u})
	if err != nil {
		return nil, nil, nil, nil, stream, err
	}
	t = &tiling{mean: sc[0], se: make([]float64, p), fisher: t.fisher, passes: 1, loglik: math.NaN(), full: true}
	return u, t, nil, nil, stream, nil
}

// fullSet is the estimator settings of the exact full-data score: every
// sequence one window.
func (f *fit) fullSet() gradient.Settings {
	set := f.gset
	set.Sampling = gradient.Full
	set.Choice = gradient.AllSequences
	set.Workers = 1
	return set
}

// fullScores returns the exact full-data score (f a subset: scaled up to
// the whole) at each of pts, evaluated in parallel.
func (f *fit) fullScores(ctx context.Context, pts [][]float64) ([][]float64, error) {
	out := make([][]float64, len(pts))
	err := f.parallel(len(pts), f.fullSet(), func(est *gradient.Estimator, i int) error {
		g := make([]float64, f.dim)
		if _, err := est.Likelihood(ctx, g, pts[i], rand.New(rand.NewPCG(f.s.Seed, 0))); err != nil {
			return err
		}
		if f.scale != 0 {
			for a := range g {
				g[a] *= f.scale
			}
		}
		out[i] = g
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: full-data score: %w", err)
	}
	return out, nil
}

// fullLogPost returns the log posterior of all of f's data by the exact
// full-data filter on values only (f a subset: its log-likelihood scaled
// up to the whole).
func (f *fit) fullLogPost() func(ctx context.Context, u []float64) (float64, error) {
	est := f.newEstimator(f.fullSet())
	scratch := make([]float64, f.dim)
	return func(ctx context.Context, u []float64) (float64, error) {
		lp, err := est.LogPosterior(ctx, u, rand.New(rand.NewPCG(f.s.Seed, 0)))
		if err != nil || f.scale == 0 {
			return lp, err
		}
		prior := f.model.LogPrior(scratch, u)
		return prior + f.scale*(lp-prior), nil
	}
}

// newtonStep returns z = Lᵀg for the log posterior's gradient g at u (the
// tiled score t plus the prior's): the Newton step H⁻¹g = L Lᵀ g is L z,
// and its length in posterior sds is |z|.
func (f *fit) newtonStep(u []float64, t *tiling, l []float64) ([]float64, float64) {
	g := make([]float64, f.dim)
	f.model.LogPrior(g, u)
	for i := range g {
		g[i] += t.mean[i]
	}
	z := lTrans(l, g)
	return z, math.Sqrt(dot(z, z))
}

// negated returns −a.
func negated(a []float64) []float64 {
	n := make([]float64, len(a))
	for i, v := range a {
		n[i] = -v
	}
	return n
}

// prepSubset reports whether PrepObs makes the preparation use a subset.
// A PrepObs below one block counts as one block (subsetBlock): a subset
// of PrepObs = 1 of 300 observations was empty, and the tiling panicked.
func (f *fit) prepSubset() bool {
	return f.s.PrepObs > 0 && f.total > 2*max(f.s.PrepObs, subsetBlock)
}

// subsetBlock is the length of the blocks a subset is made of.
const subsetBlock = 1000

// jacobianObs is the size of the subset the Jacobian uses on data more
// than twice as long.
const jacobianObs = 1000000

// subsetObs is the size of the subset the first Newton steps use on long
// data with deterministic gradients.
const subsetObs = 100000

// subset returns a copy of f whose data are blocks of 1000 observations
// spread evenly over the sequences, about n in all, and whose tilings are
// scaled by total/n to estimate the whole data's score and information.
func (f *fit) subset(n int) *fit {
	const blk = subsetBlock
	if f.scale != 0 {
		return f.thin(n)
	}
	stride := max(blk, int(float64(blk)*float64(f.total)/float64(max(n, 1))))
	var data ssm.Dataset
	kept, short := 0, blk
	for _, seq := range f.data.Sequences {
		// A sequence shorter than a block is one block.
		b := min(blk, seq.Len())
		for start := 0; b > 0 && start+b <= seq.Len(); start += stride {
			data.Sequences = append(data.Sequences, ssm.Sequence{Obs: seq.Obs, Y: seq.Y[start*seq.Obs : (start+b)*seq.Obs]})
			kept += b
			short = min(short, b)
		}
	}
	g := *f
	g.data, g.total, g.short = data, kept, short
	g.diff, g.diffOK = nil, false
	g.scale = float64(f.total) / float64(kept)
	g.log = func(format string, a ...any) { f.log("subset: "+format, a...) }
	return &g
}

// thin returns a subset of about n observations of the subset f: every
// k-th of its blocks, k ≈ f.total/n, its scores scaled to the whole data
// (subsetSE's finite-population factor 1 − 1/scale then counts the whole
// data, which overstates the variance a little).
func (f *fit) thin(n int) *fit {
	k := max(1, int(math.Round(float64(f.total)/float64(n))))
	var data ssm.Dataset
	kept := 0
	for i := 0; i < len(f.data.Sequences); i += k {
		data.Sequences = append(data.Sequences, f.data.Sequences[i])
		kept += f.data.Sequences[i].Len()
	}
	g := *f
	g.data, g.total = data, kept
	g.scale = f.scale * float64(f.total) / float64(kept)
	g.diff, g.diffOK = nil, false
	g.log = func(format string, a ...any) { f.log("subset: "+format, a...) }
	return &g
}

// lineSearch moves u along the Newton direction d = L z to where the
// log posterior's directional derivative φ'(s) = ∇log π(u + s d)·d
// vanishes, by one secant step from φ'(0) and φ'(1): each evaluation is
// one deterministic tiling, and only scores are used (the windows'
// log-likelihoods count the buffers and are not the full one's). The
// step is capped at 4 (an undershooting metric: the empirical Fisher
// information overstates the curvature under heavy tails).
func (f *fit) lineSearch(ctx context.Context, u, l, z []float64, t0 *tiling, stream uint64) ([]float64, *tiling, uint64, error) {
	p := f.dim
	d := lMul(make([]float64, p), l, z) // L z
	slope := func(t *tiling, v []float64) float64 {
		g := make([]float64, p)
		f.model.LogPrior(g, v)
		s := 0.0
		for i := range g {
			s += (g[i] + t.mean[i]) * d[i]
		}
		return s
	}
	at := func(s float64) ([]float64, *tiling, error) {
		v := make([]float64, p)
		for i := range v {
			v[i] = u[i] + s*d[i]
		}
		t, err := f.scoreTile(ctx, v, 1, stream)
		stream++
		return v, t, err
	}
	d0 := slope(t0, u)
	// A trial that fails (outside the parameter space, or a filter that
	// breaks down at absurd parameters) is too far: halve it.
	s1 := 1.0
	v1, t1, err := at(s1)
	for k := 0; err != nil && ctx.Err() == nil && k < 40; k++ {
		s1 /= 2
		v1, t1, err = at(s1)
	}
	if err != nil {
		return nil, nil, stream, err
	}
	d1 := slope(t1, v1)
	if !(d0 > 0) || d0-d1 <= 0 {
		return v1, t1, stream, nil
	}
	s := min(4, d0/(d0-d1)) * s1
	if math.Abs(s-s1) < 0.1*s1 {
		return v1, t1, stream, nil
	}
	v2, t2, err := at(s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, stream, err
		}
		return v1, t1, stream, nil
	}
	return v2, t2, stream, nil
}

// tileSet is the estimator settings of tiling passes. With deterministic
// gradients on long data the blocks are up to 10S long: a pass costs (1 + 2B/S')·T
// filter steps, and unlike a particle filter's a long block's statistic
// does not degenerate. The block length does not matter otherwise (B is
// long enough for the buffer bias to be negligible, so every tiling and
// the windows' mean estimate the same full-data score).
func (f *fit) tileSet() gradient.Settings {
	set := f.gset
	if f.deterministic() {
		// At least 500 blocks: the empirical Fisher information of the
		// blocks sets the first metric, and a few blocks give a poor one
		// (with 4 blocks of 400 on DAX the first adaptation window's
		// chains ran 2–3 posterior sds wide).
		set.S = max(set.S, min(10*set.S, f.short-2*set.B, f.total/500))
	}
	return set
}

// deterministic reports whether a window's gradient has no Monte Carlo
// error (Kalman or grid filter): one tiling pass is then exact.
func (f *fit) deterministic() bool { return f.gset.Exact || f.gset.Grid.Nodes > 0 }

// chooseFilter switches every estimator after the warm-up to the grid
// filter chosen by pf.GridFor at u (the warm-up's mode) when Filter
// allows it and the model has one.
func (f *fit) chooseFilter(u []float64) error {
	if f.s.Exact || f.s.Filter == ParticleFilter {
		return nil
	}
	if _, ok := f.model.(ssm.ExactScorer); ok && f.s.Filter == AutoFilter {
		// Exact (the LGSSM's Kalman filter) beats any grid: no
		// discretisation, and the preparation's Newton steps run on the
		// exact full-data log posterior (observedNewton).
		f.setExact(true)
		f.log("the model's exact scorer, B = %d", f.gridB)
		return nil
	}
	g, err := f.gridAt(u)
	if err != nil {
		if f.s.Filter == GridFilter {
			return fmt.Errorf("sgmcmc: Filter: %w", err)
		}
		f.log("grid filter not used (%v): particle filters with N = %d", err, f.s.N)
		return nil
	}
	f.setGrid(g)
	f.log("grid filter: %d nodes on [%.3g, %.3g], spacing %.3g", g.Nodes, g.Lo, g.Hi, g.Spacing())
	return nil
}

// regrid re-chooses the grid at the mode u found with the grid chosen at
// the warm-up's end, which may be far from it (on the S&P 500 series 11
// posterior sds, where σ was larger: the first grid had 0.86 nodes per
// transition sd at the mode and the posterior means came out a posterior
// sd off). It reports whether the grid changed, so that the Newton steps
// are repeated on the new one.
func (f *fit) regrid(u []float64) bool {
	cur := f.gset.Grid
	if cur.Nodes == 0 {
		return false
	}
	g, err := f.gridAt(u)
	slack := 0.05 * (cur.Hi - cur.Lo)
	if err != nil || g.Spacing() >= 0.9*cur.Spacing() && g.Lo >= cur.Lo-slack && g.Hi <= cur.Hi+slack {
		return false
	}
	if g, err = gridUnion(g, cur); err != nil {
		return false
	}
	f.setGrid(g)
	f.log("grid filter at the mode: %d nodes on [%.3g, %.3g], spacing %.3g", g.Nodes, g.Lo, g.Hi, g.Spacing())
	return true
}

// gridUnion returns the grid over the union of a's and b's ranges at the
// finer of their spacings, or an error when it needs more than
// pf.MaxGridNodes nodes.
func gridUnion(a, b pf.Grid) (pf.Grid, error) {
	g := pf.Grid{Lo: min(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi)}
	g.Nodes = int(math.Ceil((g.Hi-g.Lo)/min(a.Spacing(), b.Spacing()))) + 1
	if g.Nodes > pf.MaxGridNodes {
		return pf.Grid{}, fmt.Errorf("%w: the union of [%.3g, %.3g] and [%.3g, %.3g] needs %d nodes, more than %d",
			pf.ErrGrid, a.Lo, a.Hi, b.Lo, b.Hi, g.Nodes, pf.MaxGridNodes)
	}
	return g, nil
}

func (f *fit) gridAt(u []float64) (pf.Grid, error) {
	k, err := f.model.Bind(u)
	if err != nil {
		return pf.Grid{}, err
	}
	return pf.GridFor(k, u, f.model.Dims(), f.data, rand.New(rand.NewPCG(f.s.Seed, 1<<39)))
}

// widenGrid reports whether err is a grid filter that was too narrow at
// some u (gradient.GridEdgeError) and, if so, widens the grid to the
// union of the current one and the grid chosen at u (pf.GridFor, at the
// finer of the two spacings), at most gridWidenings times and within
// pf.MaxGridNodes. The preparation then runs again on the wider grid. A
// short series has a wide posterior: on the first 201 DAX returns the
// SVM's noise probes (draws from the Laplace approximation) reached
// φ = −0.5, σ = 1.7, where the grid chosen at the mode lost 3·10⁻⁴ of the
// filter mass at its edges; the fit fell back to particle filters and
// planned 4 × 50,000 SGLD iterations (more than ten minutes).
func (f *fit) widenGrid(err error) bool {
	var ge *gradient.GridEdgeError
	cur := f.gset.Grid
	if !errors.As(err, &ge) || cur.Nodes == 0 || f.widened >= gridWidenings {
		return false
	}
	g, gerr := f.gridAt(ge.U)
	if gerr == nil {
		g, gerr = gridUnion(g, cur)
	}
	if gerr != nil {
		return false
	}
	f.widened++
	f.setGrid(g)
	f.log("the grid filter lost mass at its edges at u = %.4g: grid widened to %d nodes on [%.3g, %.3g], spacing %.3g; preparing again", ge.U, g.Nodes, g.Lo, g.Hi, g.Spacing())
	return true
}

// gridWidenings is the most times widenGrid widens the grid.
const gridWidenings = 3

// toParticles reports whether a failure err on the grid filter is to be
// retried on particle filters (AutoFilter, not cancelled), and switches
// to them if so. The grid is chosen at the warm-up's end and the mode;
// data such as returns with every other day exactly 0 drive the chains
// where the filter's mass leaves it (σ 17, τ 0.01), which particles, with
// no edges, survive.
func (f *fit) toParticles(ctx context.Context, err error, stage string) bool {
	if err == nil || f.gset.Grid.Nodes == 0 && !f.prep.Exact || f.s.Filter != AutoFilter || ctx.Err() != nil || f.warm == nil ||
		errors.Is(err, ErrNoMode) { // the posterior's fault, not the filter's
		return false
	}
	f.log("the deterministic filter failed during the %s (%v): particle filters with N = %d instead", stage, err, f.s.N)
	what := "grid filter"
	if f.prep.Exact {
		what = "model's exact scorer"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	f.fallback = fmt.Sprintf("the %s failed during the %s (%s): particle filters with N = %d were used instead, whose bias can widen the posterior", what, stage, msg, f.s.N)
	f.setGrid(pf.Grid{})
	f.setExact(false)
	f.prep.Jacobian = nil
	// The discretisation correction belongs to the exact scorer, and the
	// coarser model to its cost: particles filter the model as given.
	f.prep.Discretisation = nil
	f.model, f.trial = f.user, false
	return true
}

// toFull reports whether the adaptation error err, from chains on the
// plain or control-variate gradient with a deterministic filter, is
// handled by switching AutoGradient to the full-data score (which cannot
// run away: its Metropolis–Hastings test rejects what leaves the support
// or fails). The tail check (tailNoise) rests on 2p probes: GARCH on DAX
// measured h·λ = 123 with seed 1 and 18.5 with seed 2, whose
// control-variate chains then ran off to μ → 2 (u = 37).
func (f *fit) toFull(ctx context.Context, err error) bool {
	pr := &f.prep
	if err == nil || ctx.Err() != nil || f.s.Gradient != AutoGradient || !f.deterministic() || pr.Gradient == FullGradient {
		return false
	}
	f.log("the %v-gradient chains failed during the adaptation (%v): full-data scores instead", pr.Gradient, err)
	pr.Gradient = FullGradient
	pr.StepSize = 0
	f.setStep()
	return true
}

// setExact puts every estimator on the model's exact scorer (on), with
// the grid filter's buffer, or back on particle filters.
func (f *fit) setExact(on bool) {
	f.prep.Exact = on
	for _, set := range []*gradient.Settings{&f.gset, &f.cvset, &f.aset} {
		set.Exact = on
		set.B = f.s.B
		if on {
			set.B = f.gridB
		}
	}
}

// setGrid puts every estimator on grid g (Nodes 0: back on particles).
func (f *fit) setGrid(g pf.Grid) {
	f.diff = nil // its tilings are on the old grid
	for _, set := range []*gradient.Settings{&f.gset, &f.cvset, &f.aset} {
		set.Grid = g
		set.B = f.gridB
		if g.Nodes == 0 {
			set.B = f.s.B
		}
	}
}

// measureNoise estimates the covariance V of the gradient noise of both
// estimators, in u, from pairs of evaluations with independent windows and
// particles at draws u = u* + L z, z ~ N(0, I) (V = ½ Cov(d) for the
// difference d of two independent estimates), and chooses the estimator.
func (f *fit) measureNoise(ctx context.Context) error {
	pr := &f.prep
	if f.s.Gradient == FullGradient && f.deterministic() {
		// No noise, and no choice to make.
		pr.NoisePlain, pr.NoiseCV = make([]float64, f.dim*f.dim), make([]float64, f.dim*f.dim)
		return f.chooseGradient()
	}
	points := f.noisePoints()
	if f.s.Gradient == AutoGradient && f.deterministic() && len(points) > noiseFirstProbes {
		// Staged: the first points, and the rest unless the full-data
		// score is clearly cheaper (the same probes as in one call).
		first, err := f.probeNoise(ctx, points[:noiseFirstProbes], 1<<42)
		if err != nil {
			return err
		}
		// The control variate's plan rests on its tail noise.
		if err := f.tailNoise(ctx); err != nil {
			return err
		}
		if f.fullClearlyCheaper() {
			f.log("gradient noise measured at %d of %d points: the full-data score is over %d times cheaper than either subsequence gradient", noiseFirstProbes, len(points), noiseMargin)
			return f.chooseGradient()
		}
		rest, err := f.probeNoise(ctx, points[noiseFirstProbes:], 1<<42+noiseFirstProbes)
		if err != nil {
			return err
		}
		f.setNoise(first.merge(rest))
		return f.chooseGradient()
	}
	if err := f.noiseAt(ctx, points, 1<<42); err != nil {
		return err
	}
	if err := f.tailNoise(ctx); err != nil {
		return err
	}
	return f.chooseGradient()
}

// noisePoints returns measureNoise's NoiseProbes points u* + L z, z ~
// N(0, I).
func (f *fit) noisePoints() [][]float64 {
	pr := &f.prep
	rng := rand.New(rand.NewPCG(f.s.Seed, 1<<42))
	points := make([][]float64, f.s.NoiseProbes)
	for k := range points {
		z := make([]float64, f.dim)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		points[k] = lMul(pr.Mode, pr.Chol, z)
	}
	return points
}

// Staged noise measurement: with AutoGradient and a deterministic filter,
// the noise is first measured at noiseFirstProbes of the NoiseProbes
// points (and the control variate's tail, tailNoise); when the full-data
// score's planned cost is then below 1/noiseMargin of both subsequence
// estimators', the rest would not change the choice and is skipped. Measured plan ratios: GARCH on DAX 21 and on the S&P 500 9 in
// favour of the full-data score (6 of its 20 s preparation were
// probes), the SVM on DAX 2 (measured in full, as before). A λ from 16
// probes is off by far less than 4 (heavy-tailed noise is clipped,
// clippedNoise), and an underestimate only favours the subsequence
// estimators.
const (
	noiseFirstProbes = 16
	noiseMargin      = 4
)

// fullClearlyCheaper reports whether the full-data score's planned cost
// is below 1/noiseMargin of both subsequence estimators' at the noise
// measured so far (false unless AutoGradient may pick it).
func (f *fit) fullClearlyCheaper() bool {
	if f.s.Gradient != AutoGradient || !f.deterministic() {
		return false
	}
	lp, lc := f.lambdas()
	full := f.planCost(FullGradient, lp, lc)
	return full*noiseMargin < f.planCost(PlainGradient, lp, lc) && full*noiseMargin < f.planCost(ControlVariateGradient, lp, lc)
}

// tailNoise sets Preparation.LambdaCVTail, the second-order control
// variate's largest noise eigenvalue at 2p points on the 0.99 contour of
// N(u*, L Lᵀ) (u* ± r L e_k), when AutoGradient may pick it. The step h
// is set from the noise at typical draws; where the noise is larger the
// gradient injects h²λ of variance per step against the diffusion's 2h,
// the chains' excursions go further, see still more noise and, when it
// grows fast with the distance, run away. chooseGradient keeps the
// control variate only while hλ ≤ maxTailNoise on the contour.
func (f *fit) tailNoise(ctx context.Context) error {
	pr := &f.prep
	pr.LambdaCVTail = 0
	if f.s.Gradient != AutoGradient || !f.deterministic() || pr.Jacobian == nil {
		return nil
	}
	p := f.dim
	r := math.Sqrt(distuv.ChiSquared{K: float64(p)}.Quantile(0.99))
	var points [][]float64
	for k := range 2 * p {
		z := make([]float64, p)
		z[k/2] = r * float64(1-2*(k%2))
		points = append(points, lMul(pr.Mode, pr.Chol, z))
	}
	_, dCV, _, _, err := f.probe(ctx, points, 1<<42+1<<30)
	if err != nil {
		return err
	}
	for _, d := range dCV {
		z := lTrans(pr.Chol, d)
		pr.LambdaCVTail = math.Max(pr.LambdaCVTail, 0.5*dot(z, z))
	}
	return nil
}

// chooseGradient picks the estimator of the lower cost per effective
// draw (unless the user chose one) and sets the step for it. The step h =
// 1/(1+κλ) makes the chain's autocorrelation time about 2(1+κλ)
// iterations (setStep), each at the measured cost of its estimator. It is
// called once, at the mode: the noise measured later where the chains are
// only resets the step, because a λ estimated from heavy-tailed gradient
// noise varies two- to three-fold between windows, and a switch to the
// plain estimator on such a draw made the DAX posterior measurably worse
// (σ 0.6 reference sds off, sds 6–13% too wide; its noise correction h·W
// is about 1, so an error in W shows, while the control variate's is
// small).
func (f *fit) chooseGradient() error {
	pr := &f.prep
	lp, lc := f.lambdas()
	// The full-data score: no noise.
	pr.CostFull = f.costFull()
	switch f.s.Gradient {
	case AutoGradient:
		pr.Gradient = PlainGradient
		best := pr.CostPlain * (1 + lp)
		stable := f.step(f.cvKappa()*lc)*pr.LambdaCVTail <= maxTailNoise
		if c := pr.CostCV * (1 + f.cvKappa()*lc); c < best && stable && (pr.ShiftSD <= 0.25 || f.prepSubset()) {
			pr.Gradient, best = ControlVariateGradient, c
		}
		if pr.CostFull > 0 && f.planCost(FullGradient, lp, lc) < f.planCost(pr.Gradient, lp, lc) {
			pr.Gradient = FullGradient
		}
	case FullGradient:
		if !f.deterministic() {
			return fmt.Errorf("sgmcmc: Gradient full needs a deterministic filter (Exact, the grid filter or the model's exact scorer); the windows are filtered by particles")
		}
		pr.Gradient = FullGradient
	default:
		pr.Gradient = f.s.Gradient
	}
	f.setStep()
	f.log("gradient noise λ_max(W): plain %.3g (%.2f ms per gradient), control variate %.3g (%.2f ms; %.3g on the 0.99 contour), full-data score 0 (%.3g ms); using %v gradients",
		lp, 1e3*pr.CostPlain, lc, 1e3*pr.CostCV, pr.LambdaCVTail, 1e3*pr.CostFull, pr.Gradient)
	if f.s.Gradient == AutoGradient && pr.CostFull > 0 {
		f.log("planned cost of the run (one worker): plain %.3g s, control variate %.3g s, full-data score %.3g s",
			f.planCost(PlainGradient, lp, lc), f.planCost(ControlVariateGradient, lp, lc), f.planCost(FullGradient, lp, lc))
	}
	return nil
}

// costFull returns the predicted cost of a full-data score with a
// deterministic filter (0 without one): a pass over all T observations
// costs about T/(S+2B) windows.
func (f *fit) costFull() float64 {
	if !f.deterministic() {
		return 0
	}
	return f.prep.CostPlain * float64(f.total) / float64(f.gset.S+2*f.gset.B)
}

// planCost returns the predicted cost, in seconds of one worker, of the
// adaptation and the sampling with gradient g: the plan Fit makes for it
// at the measured costs and noise. Per draw, the full-data score is dear
// and noiseless, a subsequence gradient cheap and noisy; which wins
// depends on how many draws each needs, so they are compared over the
// whole run:
//   - SGLD (plain, control variate): three adaptation windows of ten
//     autocorrelation times (300 to 3000 iterations) and 1.25·TargetESS
//     autocorrelation times, at the step h = min(0.25, 1/(1 + κλ)) and
//     τ = (2 − h)/h. The control variate's λ is the larger of the mode's
//     and the 0.99 contour's (tailNoise): its noise grows away from u*,
//     the chains' windows re-measure it where they are and the step
//     follows. On DAX (SVM) λ is 0.31 at the mode and 25 on the contour;
//     planned at the mode the control variate looked four times cheaper
//     than the full-data score, and took 28 s (a window measured λ = 295
//     and ran 3000 iterations at h = 0.0034) against the full-data
//     path's 12 s at the same accuracy.
//   - FullGradient: isMinRounds rounds of importance sampling and chains
//     whose independence steps hold for planHold iterations
//     (independenceIAT), at least fullMinIters each, a full-data pass per
//     iteration.
func (f *fit) planCost(g Gradient, lp, lc float64) float64 {
	pr := &f.prep
	chains, ess := float64(f.s.Chains), float64(f.s.TargetESS)
	sampling := func(iat, least float64) float64 {
		if f.s.Iterations > 0 {
			return float64(f.s.Iterations)
		}
		return math.Max(least, 1.25*ess*iat/chains)
	}
	if g == FullGradient {
		iat := independenceIAT(planHold, isIndependence)
		return (float64(isMinRounds*isDraws(f.dim)) + chains*sampling(iat, fullMinIters)) * f.costFull()
	}
	cost, kl := pr.CostPlain, lp
	if g == ControlVariateGradient {
		cost, kl = pr.CostCV, f.cvKappa()*math.Max(lc, pr.LambdaCVTail)
	}
	h := f.step(kl)
	iat := (2 - h) / h
	window := float64(windowLen(h))
	if f.s.AdaptWindow > 0 {
		window = float64(f.s.AdaptWindow)
	}
	return chains * (adaptWindows*window + sampling(iat, sgldMinIters)) * cost
}

// planHold is the independence steps' holding time planCost assumes: the
// importance-sampled proposals measured 1.27–1.44 on the SVM and GARCH
// posteriors of DAX.
const planHold = 1.4

// fullMinIters and sgldMinIters are the fewest sampling iterations per
// chain that Fit plans with FullGradient and with SGLD.
const (
	fullMinIters = 200
	sgldMinIters = 500
)

// extendMax bounds an extension to this many times the iterations per
// chain so far (see Fit's segments).
const extendMax = 2

// capExtension returns the next segment's iterations per chain, at most
// extendMax times the done so far, and the last planned segment, one
// later (within maxSegments) when the cap binds. The ESS of short chains
// is a noisy, low estimate: GARCH on DAX, seed 3, measured 57 after 150
// iterations per chain and projected 1,088 more; the 1,238 gave 1,281.
func capExtension(iters, done, lastSeg int) (int, int) {
	if iters <= extendMax*done {
		return iters, lastSeg
	}
	return extendMax * done, min(lastSeg+1, maxSegments-1)
}

// noiseAt sets V for both estimators from probes at points (each point
// evaluated twice, independently), random stream stream.
func (f *fit) noiseAt(ctx context.Context, points [][]float64, stream uint64) error {
	_, err := f.probeNoise(ctx, points, stream)
	return err
}

// noiseProbes are the pairs' differences of both estimators at some
// points and their measured costs per gradient.
type noiseProbes struct {
	plain, cv         [][]float64
	costPlain, costCV float64
}

// merge returns the probes of n and o together (costs averaged by count).
func (n noiseProbes) merge(o noiseProbes) noiseProbes {
	a, b := float64(len(n.plain)), float64(len(o.plain))
	return noiseProbes{
		plain:     append(slices.Clip(n.plain), o.plain...),
		cv:        append(slices.Clip(n.cv), o.cv...),
		costPlain: (a*n.costPlain + b*o.costPlain) / (a + b),
		costCV:    (a*n.costCV + b*o.costCV) / (a + b),
	}
}

// probeNoise probes at points (stream: see probe), sets V for both
// estimators from them and returns them.
func (f *fit) probeNoise(ctx context.Context, points [][]float64, stream uint64) (noiseProbes, error) {
	var n noiseProbes
	var err error
	if n.plain, n.cv, n.costPlain, n.costCV, err = f.probe(ctx, points, stream); err != nil {
		return n, err
	}
	f.setNoise(n)
	return n, nil
}

// setNoise sets V and the costs of both estimators from n.
func (f *fit) setNoise(n noiseProbes) {
	pr := &f.prep
	pr.CostPlain, pr.CostCV = n.costPlain, n.costCV
	pr.NoisePlain = f.clippedNoise(n.plain, 1)
	pr.NoiseCV = f.clippedNoise(n.cv, f.cvKappa())
	pr.ShiftSD = maxAbs(lTrans(pr.Chol, pr.AnchorSE))
}

// clippedNoise returns the noise covariance V = ½ E[d dᵀ] (u coordinates,
// row-major) from the differences d of independent pairs of estimates, as
// the sampler feels it. Particle gradients on heavy-tailed data have
// heavy-tailed noise: a rare window with an extreme day gives a gradient
// tens of times the usual, and one such probe among 96 moved λ_max(W)
// from 12 to 549 between two windows of one DAX fit (and the step with
// it). Precond bounds every drift h·Lᵀĝ to MaxDrift = 1 posterior sd, so
// noise beyond |Lᵀξ| = 1/h never reaches the chain; each probe's noise is
// clipped there, with h the step that the clipped V itself gives (three
// fixed-point rounds from the unclipped V). Noise that is large but not
// rare (|Lᵀξ| ≈ √(λp) ≪ 1 + λ) is not touched.
func (f *fit) clippedNoise(d [][]float64, kappa float64) []float64 {
	p, K := f.dim, len(d)
	l := f.prep.Chol
	scale := make([]float64, K)
	for k := range scale {
		scale[k] = 1
	}
	cov := func() []float64 {
		v := make([]float64, p*p)
		for k, dk := range d {
			w := 0.5 * scale[k] * scale[k] / float64(K)
			for a := range p {
				for b := range p {
					v[a*p+b] += w * dk[a] * dk[b]
				}
			}
		}
		return v
	}
	v := cov()
	for range 3 {
		limit := 1 / f.step(kappa*maxEigen(sandwich(l, v), p)) // MaxDrift / h
		for k, dk := range d {
			z := lTrans(l, dk)
			r := math.Sqrt(0.5 * dot(z, z))
			scale[k] = 1
			if r > limit {
				scale[k] = limit / r
			}
		}
		v = cov()
	}
	return v
}

// lambdas returns λ_max of W = Lᵀ V L for both estimators at the current L.
func (f *fit) lambdas() (plain, cv float64) {
	pr := &f.prep
	return maxEigen(sandwich(pr.Chol, pr.NoisePlain), f.dim), maxEigen(sandwich(pr.Chol, pr.NoiseCV), f.dim)
}

// noiseW returns W = Lᵀ V L of the chosen estimator.
func (f *fit) noiseW() []float64 {
	pr := &f.prep
	switch pr.Gradient {
	case ControlVariateGradient:
		return sandwich(pr.Chol, pr.NoiseCV)
	case FullGradient:
		return make([]float64, f.dim*f.dim)
	}
	return sandwich(pr.Chol, pr.NoisePlain)
}

// setStep sets the step h = min(0.25, 1/(1 + κλ_max(W))) unless the user
// gave one: the injected covariance (2h − h²)I − h²W then keeps at least
// half of SGLD's noise. κ = 1 for the plain estimator and the ancestral
// control variate, whose noise (subsampling, resp. the particles'
// discontinuities) is about the same everywhere. The noise of the
// continuous control variate (CVParticles: forward-only, sorted) grows
// like the squared distance r² from u* (in posterior sds), and W is its average
// over the posterior (E r² = p): at r the chain sees about r²/p times W,
// and a step that is large against that excess widens the tails, which
// raises the noise further out, and the chains run away (measured on the
// SVM: φ → 1 within a few hundred iterations). So κ = r²₀.₉₉₉/p, with
// r²₀.₉₉₉ the 0.999 quantile of χ²_p, keeps hλ below about 1 out to the
// 0.999 contour of the posterior.
func (f *fit) setStep() {
	pr := &f.prep
	pr.LambdaPlain, pr.LambdaCV = f.lambdas()
	lambda := pr.LambdaPlain
	switch pr.Gradient {
	case ControlVariateGradient:
		lambda = pr.LambdaCV * f.cvKappa()
	case FullGradient:
		// Metropolis-adjusted (mala): the step is tuned for the
		// acceptance rate by tuneMALA, from malaStart.
		switch {
		case f.s.StepSize > 0:
			pr.StepSize = f.s.StepSize
		case pr.StepSize == 0:
			pr.StepSize = malaStart
		}
		return
	}
	pr.StepSize = f.step(lambda)
}

// maxTailNoise bounds hλ on the 0.99 contour for the control variate (see
// tailNoise): gradient noise there may inject up to 10 times the
// diffusion's variance (h²λ ≤ 10·2h). Measured hλ: GARCH on DAX 123 (λ 491;
// at typical draws 1.6; its chains ran off to φ → 1 at step 0.25), the
// SVM on DAX 6.4 (λ 25; calibrated with the control variate).
const maxTailNoise = 20

// malaStart is the first adaptation window's step with FullGradient.
const malaStart = 0.5

// tuneMALA records an adaptation window's acceptance rates (Langevin acc,
// independence ind) and sets the step from acc: h·exp(2(acc − 0.7)) within [0.05, 1]. h = 1 proposes from the
// Laplace approximation at the current point (for a Gaussian posterior
// with the right metric every proposal is accepted, at any h < 2); 0.7 is
// above MALA's asymptotically optimal 0.574 because four parameters are
// far from the asymptotic regime and a rejected step costs a full pass.
func (f *fit) tuneMALA(acc, ind float64) {
	pr := &f.prep
	pr.Accept, pr.AcceptIndependent = acc, ind
	if f.s.StepSize == 0 {
		pr.StepSize = math.Min(1, math.Max(0.05, pr.StepSize*math.Exp(2*(acc-0.7))))
	}
	f.log("Metropolis–Hastings acceptance rates: Langevin %.2f (step now %.3g), independence %.2f", acc, pr.StepSize, pr.AcceptIndependent)
}

// step returns the user's StepSize, or min(0.25, 1/(1 + κλ)) for the
// scaled largest noise eigenvalue kl = κλ.
func (f *fit) step(kl float64) float64 {
	if f.s.StepSize > 0 {
		return f.s.StepSize
	}
	return math.Min(0.25, 1/(1+kl))
}

// cvKappa returns κ for the control variate: the 0.999 quantile of χ²_p
// over its mean p for the continuous (sorted, forward-only) filter, else 1.
func (f *fit) cvKappa() float64 {
	if !f.cvset.PF.Sorted {
		return 1
	}
	return distuv.ChiSquared{K: float64(f.dim)}.Quantile(0.999) / float64(f.dim)
}

// sandwich returns Lᵀ V L (row-major) for lower-triangular L.
func sandwich(l, v []float64) []float64 {
	p := int(math.Sqrt(float64(len(l))))
	vl := make([]float64, p*p)
	for i := range p {
		for j := range p {
			for k := j; k < p; k++ {
				vl[i*p+j] += v[i*p+k] * l[k*p+j]
			}
		}
	}
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			for k := i; k < p; k++ {
				out[i*p+j] += l[k*p+i] * vl[k*p+j]
			}
		}
	}
	return out
}

// probe evaluates, at each point u, two independent plain estimates g_S(u)
// (filter gset) and two independent control-variate differences g_S(u) −
// g_S(u*) with common random numbers within each (filter cvset). It
// returns per point the difference of the two plain estimates and of the
// two control-variate differences, and the counted cost (windowCost) of
// a plain gradient and of a control-variate one: cvFilters (2, or 3 with
// the second-order term's directional difference) windows of its filter.
// Costs are counted, not timed, so that the plan is the same on every run
// with the same seed: timed, the control variate of the LGSSM's Kalman
// windows (0.01 ms) measured 0.06 ms on one run of four, enough to switch
// that run to full-data chains with other draws.
func (f *fit) probe(ctx context.Context, points [][]float64, stream uint64) (dPlain, dCV [][]float64, costPlain, costCV float64, err error) {
	p, K := f.dim, len(points)
	dPlain, dCV = make([][]float64, K), make([][]float64, K)
	// A probe outside the model's support (LGSSMd's A with spectral
	// radius ≥ 1 near a boundary) is left out, as an MH proposal there
	// would be rejected; only a failure of more than half of the probes
	// stops the fit.
	outside := func(err error) error {
		if errors.Is(err, ssm.ErrInvalidParam) {
			return nil
		}
		return err
	}
	err = f.parallel(K, f.gset, func(est *gradient.Estimator, k int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed^0x5851F42D4C957F2D, stream+uint64(k)))
		g0, g1 := make([]float64, p), make([]float64, p)
		if _, err := est.Likelihood(ctx, g0, points[k], rng); err != nil {
			return outside(err)
		}
		if _, err := est.Likelihood(ctx, g1, points[k], rng); err != nil {
			return outside(err)
		}
		for i := range g0 {
			g0[i] -= g1[i]
		}
		dPlain[k] = g0
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %w", err)
	}
	err = f.parallel(K, f.cvset, func(est *gradient.Estimator, k int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed^0x5851F42D4C957F2D, stream+uint64(k)+1<<32))
		cv, err := f.newCV(est)
		if err != nil {
			return err
		}
		d0, d1 := make([]float64, p), make([]float64, p)
		if err := cv.Difference(ctx, d0, points[k], rng); err != nil {
			return outside(err)
		}
		if err := cv.Difference(ctx, d1, points[k], rng); err != nil {
			return outside(err)
		}
		for i := range d0 {
			d0[i] -= d1[i]
		}
		dCV[k] = d0
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %w", err)
	}
	kept := func(d [][]float64) [][]float64 {
		return slices.DeleteFunc(d, func(x []float64) bool { return x == nil })
	}
	if dPlain, dCV = kept(dPlain), kept(dCV); 2*len(dPlain) < K || 2*len(dCV) < K {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %d of %d plain and %d control-variate probes are outside the model's support", K-len(dPlain), K, K-len(dCV))
	}
	if len(dPlain) < K || len(dCV) < K {
		f.log("gradient noise: %d plain and %d control-variate probes of %d fell outside the model's support and were left out", K-len(dPlain), K-len(dCV), K)
	}
	return dPlain, dCV, f.windowCost(f.gset), f.cvFilters() * f.windowCost(f.cvset), nil
}

func maxEigen(w []float64, p int) float64 {
	s := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			s.SetSym(i, j, 0.5*(w[i*p+j]+w[j*p+i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, false) {
		return math.NaN()
	}
	v := eig.Values(nil)
	return v[len(v)-1]
}

func symData(h *mat.SymDense) []float64 {
	p := h.SymmetricDim()
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			out[i*p+j] = h.At(i, j)
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
