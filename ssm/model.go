package ssm

import (
	"math/rand/v2"
)

// Dims gives the sizes of a model family.
type Dims struct {
	State int // dimension of the latent state x_t as stored in a particle row
	Obs   int // dimension of an observation y_t
	Param int // dimension of the unconstrained parameter vector u (and of the natural parameters)
}

// Prior is a prior density on the unconstrained parameter vector u.
//
// LogPrior returns log π(u), the prior of the natural parameters pushed
// forward to u, so it includes log|det ∂θ/∂u|. When grad is non-nil it
// stores ∇_u log π(u) in grad (overwriting it).
type Prior interface {
	LogPrior(grad, u []float64) float64
}

// Model is a parametric state space model family
//
//	x_0 ~ ν_0(·|θ),  x_t | x_{t-1} ~ p(·|x_{t-1}, θ),  y_t | x_t ~ p(·|x_t, θ),  t = 1..T.
//
// Samplers move the unconstrained vector u ∈ R^p; θ = Constrain(u) are the
// natural parameters reported to users. A Model value is read-only and safe
// for concurrent use.
type Model interface {
	Prior
	Dims() Dims
	// ParamNames names the natural parameters, in order.
	ParamNames() []string
	// Constrain writes the natural parameters θ(u) into theta and returns
	// log|det ∂θ/∂u|.
	Constrain(theta, u []float64) float64
	// Unconstrain writes u(θ) into u. Invalid natural parameters give a
	// *ParamError naming the offending parameter.
	Unconstrain(u, theta []float64) error
	// Bind returns the member of the family at u, precomputing what depends
	// only on u. Invalid parameters give a *ParamError.
	Bind(u []float64) (Kernel, error)
}

// Kernel is a model with fixed parameters. Particle blocks are n×State
// row-major []float64 slices; n is len(x)/State. Methods on blocks work on
// all rows at once so a filter makes one interface call per time step.
// A Kernel is read-only and safe for concurrent use; all randomness comes
// from rng. Observation components that are NaN are missing: they add 0 to
// the emission log density and to the score.
type Kernel interface {
	// SampleInitial fills every row of x with an independent draw from ν_0.
	SampleInitial(x []float64, rng *rand.Rand)
	// SampleTransition fills row i of x with a draw from p(·|prev row i).
	SampleTransition(x, prev []float64, rng *rand.Rand)
	// SampleEmission fills y (length Obs) with a draw from p(·|x), x one row.
	SampleEmission(y, x []float64, rng *rand.Rand)

	// LogInitial returns log ν_0(x) for one row x.
	LogInitial(x []float64) float64
	// LogTransitions sets dst[j] = log p(x | prev row j) for one row x and
	// every row of prev (what backward smoothers need).
	LogTransitions(dst, x, prev []float64)
	// AddLogEmission adds log p(y | x row i) to logw[i] for every row of x.
	AddLogEmission(logw, y, x []float64)

	// AddScore adds w·∇_u[log p(x_i|prev_i) + log p(y|x_i)] to row i of h
	// (an n×Param block) for every row i of x and prev. When prev is nil, x
	// holds initial states and w·∇_u log ν_0(x_i) is added instead (y is
	// then ignored). This is the pairwise statistic of Fisher's identity.
	AddScore(h []float64, w float64, y, x, prev []float64)
}

// Proposer is an optional Kernel capability: a guided proposal
// q(x_t | x_{t-1}, y_t) such as the locally optimal one.
type Proposer interface {
	// Propose fills row i of x with a draw from q(·|prev row i, y) and adds
	// the incremental importance weight
	//	log p(y|x_i) + log p(x_i|prev_i) − log q(x_i|prev_i, y)
	// to logw[i]. Fusing the weight avoids cancellation (for the locally
	// optimal proposal it is the predictive density p(y|prev_i)).
	Propose(x, logw, prev, y []float64, rng *rand.Rand)
	// LogProposal returns log q(x|prev, y) for one pair of rows.
	LogProposal(x, prev, y []float64) float64
}

// TransitionBounder is an optional Kernel capability: an upper bound on
// log p(x|prev) over all x and prev, enabling accept-reject backward
// sampling in PaRIS.
type TransitionBounder interface {
	MaxLogTransition() float64
}

// Degenerate is an optional Kernel capability reporting that the transition
// has no density in the full state (part of the state is a deterministic
// function of the previous one, as σ_t² in GARCH). Backward smoothers
// (forward-only O(N²), PaRIS) are then undefined; filters refuse them.
type Degenerate interface {
	DegenerateTransition() bool
}

// ExactScorer is an optional Model capability: exact (N = ∞) filtering and
// smoothing, as the Kalman filter gives for linear Gaussian models.
type ExactScorer interface {
	// ExactScore returns log p(y[w.Start:w.End] | u) with the state before
	// w.Start distributed as ν_0, and adds to grad (length Param) the exact
	// smoothed expectation Σ_{t∈[KeepStart,KeepEnd)} w_t E[h_t | y_window],
	// where h_t is the pairwise score (Kernel.AddScore), including the
	// initial term ∇ log ν_0(x_0) at t = 0 when w.Start = w.KeepStart = 0.
	// grad may be nil when only the log-likelihood is wanted.
	ExactScore(grad []float64, u []float64, seq Sequence, w Window) (float64, error)
}

// LinearGaussian is an optional Kernel capability: the state moves by a
// linear Gaussian transition,
//
//	x_t = F x_{t−1} + c + η_t,  η_t ~ N(0, Q),  x_0 ~ ν_0 = N(m0, P0),
//
// whatever the emission. LinearGaussian writes F, Q and P0 (State×State,
// row-major) and c and m0 (length State) into the given slices. With
// EmissionCurvature it lets a fit score the model by Laplace importance
// sampling (pf.Laplace) instead of particles: far less noise for a
// vector state.
type LinearGaussian interface {
	LinearGaussian(F, c, Q, m0, P0 []float64)
}

// EmissionCurvature is an optional Kernel capability: the emission's log
// density at one state row with its derivatives in the state, for Laplace
// approximations of p(x_{1:T} | y_{1:T}).
type EmissionCurvature interface {
	// LogEmissionCurvature returns log p(y | x) for one row x and writes
	// its gradient in x into g (length State) and its Hessian into H
	// (State×State, row-major). Missing components (NaN) add 0 to all
	// three.
	LogEmissionCurvature(g, H, y, x []float64) float64
}

// SeparableEmission is an optional capability of a Kernel with an
// EmissionCurvature: SeparableEmission reports whether log p(y | x) is a
// sum of functions of one state component each, Σ_i ℓ_i(x_i) (as when
// component i of y depends on x_i only: models.MSV, models.LGSSMd), so
// that its Hessian in x is diagonal at every x. Laplace importance
// sampling (pf.Laplace) then refits the emission's Gaussian
// approximation one component at a time: d one-dimensional quadratures
// per row instead of one d-dimensional one. ssmtest.CheckLaplace checks
// the claim.
type SeparableEmission interface {
	SeparableEmission() bool
}

// Coster is an optional capability of an ExactScorer: ScoreCost returns
// the work of ExactScore per observation, in nanoseconds of a reference
// machine (one core of a 2-core x86-64 machine, where a scalar Kalman step
// with its score is about 60). sgmcmc.Fit plans its run in such counted
// work, never in measured seconds, so that a seed gives the same draws on
// any machine, idle or busy. Without it an ExactScorer with a d-dimensional
// state counts 60·d³.
type Coster interface {
	ScoreCost() float64
}

// RefinedScorer is an optional capability of an ExactScorer that is exact
// only up to a discretisation (GARCH's quadrature filter): RefinedLogLik
// returns the same log-likelihood as ExactScore at a finer one (GARCH:
// 14 quadrature points instead of 10), so that a caller can measure how much the
// discretisation tilts the posterior near its mode and correct for it
// (sgmcmc.Fit does: see Preparation.DiscretisationTilt).
type RefinedScorer interface {
	RefinedLogLik(u []float64, seq Sequence, w Window) (float64, error)
}

// Coarsener is an optional capability of a RefinedScorer whose
// discretisation is left to the caller (GARCH with its defaults): Coarsen
// returns the same model at a coarser discretisation, cheaper per pass,
// and false when there is no such choice. Its RefinedLogLik may be
// coarser than the model's own too, as long as it is as close to exact
// wherever the coarser model's correction towards it is small (GARCH:
// 7 quadrature points refined to the default's 14). A coarser model may
// coarsen again, with the same RefinedLogLik (GARCH's does not). sgmcmc.Fit prepares the first coarser model, fits the
// correction of every level on one design of points, samples the
// coarsest whose correction it can trust, and checks it after sampling.
type Coarsener interface {
	Coarsen() (Model, bool)
}

// StateCompleter is an optional Kernel capability for models whose state
// rows carry deterministic functions of the past besides the random part
// (GARCH's σ_t² and its tangent ∂σ_t²/∂u). Complete recomputes those parts
// of row x from row prev (prev nil: x is an initial state) under this
// kernel's parameters, leaving the random part unchanged. Derivative checks
// use it to re-derive a fixed path under perturbed parameters.
type StateCompleter interface {
	Complete(x, prev []float64)
}

// Rebinder is an optional Kernel capability: Rebind re-targets the kernel
// at new parameters u in place, as Model.Bind would, so an estimator called
// at every sampler iteration allocates nothing. On error the kernel is left
// unchanged. Only the kernel's owner may call it: a kernel being rebound
// must not be in use by another goroutine.
type Rebinder interface {
	Rebind(u []float64) error
}

// Starter is an optional Model capability: Start writes into u a sensible
// starting point for inference on data (e.g. scaled by the data's variance),
// from which an optimiser can find the posterior mode. Fitting procedures
// use the origin u = 0 for models without it.
type Starter interface {
	Start(u []float64, data Dataset) error
}

// DataChecker is an optional Model capability: CheckData returns what the
// data say against fitting the model as it is (its prior's scale, data
// the model cannot explain), one sentence per problem, or nil; and a
// non-nil error (wrapping ErrData) when the model as it is cannot describe
// the data at all, such as a scale its default prior excludes. Fitting
// procedures report the warnings before they start and with the
// posterior, and stop at the error: a mis-scaled series (returns in
// fractions under priors for percent) fits for many minutes to a
// posterior that only reflects the prior (SVM on the DAX returns ÷ 14:
// φ 0.998 instead of 0.94, 2.5 minutes; ÷ 28: no convergence in 5).
type DataChecker interface {
	CheckData(data Dataset) (warnings []string, err error)
}
