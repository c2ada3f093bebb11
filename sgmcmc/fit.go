package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// fit holds the normalised settings and what the preparation finds.
type fit struct {
	s     FitSettings
	model ssm.Model // the chains' model: user's, or its coarser discretisation
	user  ssm.Model // the model Fit was given (the Posterior's)
	// laplace, when set, is the model as scored by pf.Laplace (f.model
	// until a fallback to particles).
	laplace *laplaceModel
	// trial: model is user's coarser discretisation, prepared first and
	// kept when its discretisation correction is small (checkDiscretisation).
	trial bool
	// widened counts widenGrid's widenings.
	widened int
	// resumed: the preparation was read from the checkpoint.
	resumed bool
	// ck is a checkpointed fit's sampling after its last segment done
	// (segments.go).
	ck *ckSampling
	// dataWarn is what the model's ssm.DataChecker said of the data.
	dataWarn []string
	// newtonWarn says that the preparation's Newton steps did not
	// converge.
	newtonWarn string
	// noStall keeps observedNewton's damped steps going after a step
	// that gains under newtonStallGain (tests compare the two).
	noStall   bool
	data      ssm.Dataset
	dim       int
	precs     []*Precond                   // the SGLD chains' methods, for clippedSteps
	gridEdges func() (edge, proposals int) // the full-data chains' proposals refused at a grid's edge, and all of them (nil: none)
	isEdge    [2]int                       // importance sampling's log posteriors refused at a grid's edge, and all of them
	gset      gradient.Settings            // the plain chains' filter
	cvset     gradient.Settings            // the control-variate chains' filter
	aset      gradient.Settings            // the anchor's filter (AnchorParticles)
	u0        []float64                    // starting point
	gridB     int                          // the buffer with the grid filter
	short     int                          // the shortest sequence's length
	total     int                          // the number of observations
	scale     float64                      // nonzero in a subset's fit: its scores are scaled by it
	warm      []float64                    // the warm-up's end
	log       func(format string, a ...any)
	start     time.Time // when Fit was called (MaxTime counts from it)
	// diff, while set, makes the full data's tilings after the first
	// from a subset's differences (scoreTile); diffOK allows newton to
	// set it.
	diff   *diffBase
	diffOK bool
	// subInfo, when set, is the observed information −J of the last
	// subset Newton ran on (newtonOnSubsets, scaled to the whole data):
	// observedNewton's steps on the whole data use it (subsetNewton).
	subInfo []float64

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
	// path is Preparation.Path.
	path string
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
	LambdaCVTail             float64   // the control variate's λ_max on the 0.99 contour (0: not measured)
	Accept                   float64   // FullGradient: the Langevin proposals' (with surrogate transitions, SurrogateHold > 0: the random-walk steps') Metropolis–Hastings acceptance rate (of the last adaptation window; in a Posterior, of the sampling)
	AcceptIndependent        float64   // FullGradient: the independence proposals' (with surrogate transitions: theirs) acceptance rate (after importance sampling, the expected one until the sampling measures it)
	// proposal is FullGradient's independence proposal fitted by
	// importance sampling (nil: a Student-t at Mode with scale Chol), and
	// Independence its share of the steps (0: 0.5).
	proposal []proposalComponent
	// Independence is the share of FullGradient's steps that are
	// independence proposals, or surrogate transitions when
	// SurrogateHold > 0 (0: 0.5; 0.1 after an adaptation window that
	// accepted under 2% of them); the other steps are Langevin proposals,
	// or random-walk steps with surrogate transitions or with Walk.
	Independence float64
	// Walk: the full-data chains' local steps are random-walk Metropolis
	// steps instead of Langevin proposals, because the scores are not the
	// log posterior's gradient (Laplace importance sampling).
	Walk bool
	// sur, when set, turns the independence steps into surrogate
	// transitions on π̃ = Proposal·exp(r) (package surrogate). It is
	// saved with a checkpoint; SurrogateHold reports its expected holding
	// time (0: none).
	sur *surrogate.Surrogate
	// SurrogateHold is the surrogate transitions' expected holding time
	// when the chains use them (FullGradient), 0 when they do not.
	SurrogateHold float64
	Gradient      Gradient // the estimator chosen
	// Grid is the grid filter's grid (Nodes 0: particle filters).
	Grid pf.Grid
	// Exact reports that AutoFilter chose the model's ssm.ExactScorer
	// because the grid filter does not apply (GARCH: its state row is not
	// scalar; its exact scorer filters σ² alone, on a quadrature rule in
	// log σ²).
	Exact bool
	// Laplace reports that the exact scorer is Laplace importance
	// sampling (pf.Laplace) of a model with a linear Gaussian state.
	Laplace bool `json:",omitempty"`
	// Path is the filter the fit runs on and why: the grid filter for a
	// scalar state, the model's exact scorer (ssm.ExactScorer), or
	// particle filters, with the reason (a vector state without an exact
	// scorer, FitSettings.Filter, or a failure of the others).
	Path string
	// Fallback, when not empty, says why AutoFilter left the grid filter
	// or the model's exact scorer for particle filters (a warning of the
	// Posterior: their bias can widen it).
	Fallback string
	// dc, for a model's exact scorer that is exact only up to a
	// discretisation (ssm.RefinedScorer), is the correction the chains
	// apply towards the finer scorer (nil: none; Discretisation reports it).
	dc *discretisation
	// S and B are the subsequence and buffer lengths the chains use
	// (FitSettings' after the defaults and the sequences' lengths).
	S, B int
	// jacobian is ∂ĝ_full/∂u at u* (deterministic gradients only), which
	// makes the control variate second order (gradient.ControlVariate).
	jacobian []float64
	// StepSize is the step in posterior-scale units of SGLD, or of the
	// Langevin proposals with full-data scores (unused with surrogate
	// transitions, whose local steps are random walks of a fixed scale).
	StepSize float64
	Seconds  float64 // time the preparation took
	// After the adaptation: each chain's state (starts), the iterations
	// it took per chain, and the autocorrelation time measured in its last
	// window.
	starts [][]float64
	// AdaptIterations is the adaptation's iterations per chain (with
	// importance sampling, its log posteriors per chain).
	AdaptIterations int
	// IAT is the autocorrelation time the sampling is planned from: the
	// one measured in the adaptation's last window or, after importance
	// sampling, predicted from the independence steps' holding time; with
	// full-data scores, a Posterior's is the one measured on its draws
	// when the sampling was last extended.
	IAT float64
}

// proposalComponent is one multivariate Student-t (ν = 5) component of
// FullGradient's independence proposal: its weight, centre and the lower
// Cholesky factor (row-major) of its scale matrix, in u.
type proposalComponent struct {
	Weight float64
	Center []float64
	Chol   []float64
}

// Fit samples the posterior of model given data: one call from a model and
// its data to a summarised posterior. Every zero field of s has a working
// default; the ones users change most are Chains, MaxTime (a budget for
// the whole fit), Seed, Checkpoint (resume after an interrupt) and
// Progress (plain progress lines; Verbose for the technical log).
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
//     cannot describe: a scale they do not expect, prices for returns,
//     12% or more exact zeros under the SVM).
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
			if s.Progress != nil { // plain or verbose: a data warning is worth reading first
				fmt.Fprintf(s.Progress, "fit: warning: %s\n", w)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	f.say("preparing: finding the posterior mode and measuring the gradient noise")
	// A time budget stops the preparation at its end, unless a
	// checkpoint is to keep the finished preparation for a resume.
	f.start = start
	pctx := ctx
	if s.Checkpoint == "" {
		var cancel context.CancelFunc
		pctx, cancel = f.budgetContext(ctx)
		defer cancel()
	}
	if err := f.prepare(pctx); err != nil {
		if ctx.Err() == nil && overBudget(pctx) {
			return nil, f.prepOverBudget(time.Since(start))
		}
		return nil, err
	}
	f.say("prepared in %.1f s; sampling by %s", f.prep.Seconds, f.pathWords())
	post, err := f.sample(ctx, start)
	if err == nil {
		f.say("%s", post.doneWords())
	}
	return post, err
}

// say writes a plain progress line to Progress unless Verbose, whose
// technical log (log) says more.
func (f *fit) say(format string, a ...any) {
	if f.s.Progress != nil && !f.s.Verbose {
		fmt.Fprintf(f.s.Progress, "fit: "+format+"\n", a...)
	}
}

// pathWords names the sampling path in plain words.
func (f *fit) pathWords() string {
	if f.prep.Gradient == FullGradient {
		return "Metropolis–Hastings chains on the full-data posterior"
	}
	return fmt.Sprintf("Langevin dynamics (SGLD) on %v subsequence gradients", f.prep.Gradient)
}

// doneWords is the plain last progress line: the time and the
// diagnostics' worst values.
func (p *Posterior) doneWords() string {
	rhat, ess := 0.0, math.Inf(1)
	for _, r := range p.Summary() {
		rhat, ess = math.Max(rhat, r.Rhat), math.Min(ess, math.Min(r.BulkESS, r.TailESS))
	}
	w := "no warnings"
	switch n := len(p.Warnings); {
	case n == 1:
		w = "1 warning"
	case n > 1:
		w = fmt.Sprintf("%d warnings", n)
	}
	return fmt.Sprintf("done in %.1f s: R-hat ≤ %.3f, ESS ≥ %.0f, %s", p.Total.Seconds(), rhat, ess, w)
}

// checkData returns an error for a nil model, data that do not match its
// dimensions, or a sequence with no observed value or a non-finite one.
func checkData(model ssm.Model, data ssm.Dataset) error {
	if model == nil {
		return fmt.Errorf("%w: Fit needs a model", ErrSettings)
	}
	if err := data.Validate(model.Dims().Obs); err != nil {
		return err
	}
	for j, seq := range data.Sequences {
		if !seq.Observed(0, seq.Len()) {
			return fmt.Errorf("%w: sequence %d has no observed values (every cell is missing)", ssm.ErrData, j)
		}
		// Memory-mapped data (ssm.OpenBinary) were not scanned at open.
		if err := seq.CheckFinite(); err != nil {
			return fmt.Errorf("sequence %d: %w", j, err)
		}
	}
	return nil
}

// newFit checks the model, the data and the settings, sets the settings'
// defaults and returns the fit, ready to prepare.
func newFit(model ssm.Model, data ssm.Dataset, s FitSettings) (*fit, error) {
	if err := checkData(model, data); err != nil {
		return nil, err
	}
	if err := checkSettings(s, len(model.ParamNames())); err != nil {
		return nil, err
	}
	d := model.Dims()
	bad := badSettings
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
		s.TargetESS = minESS
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
		if s.Progress != nil && s.Verbose {
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
	if s.Filter == AutoFilter && !s.Exact {
		if lm := newLaplaceModel(model, u0, s.LaplacePaths, s.Seed^laplaceSeed); lm != nil {
			f.model, f.laplace = lm, lm
		}
	}
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
	if i := fmath.FirstNonFinite(u); i >= 0 {
		return nil, fmt.Errorf("%w: starting point u[%d] = %v", ErrSettings, i, u[i])
	}
	return u, nil
}

// warmUp runs Adam from u0 and returns the average of its last half.
func (f *fit) warmUp(ctx context.Context, u0 []float64) ([]float64, error) {
	est := f.newEstimator(f.gset)
	rng := rand.New(rand.NewPCG(f.s.Seed, warmUpStream))
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
