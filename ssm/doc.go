// Package ssm is the vocabulary of pbsgmcmc: the state space model
// interfaces a model implements, the observed data, the windows a particle
// filter runs over, and reading data from CSV and binary files.
//
// # The model
//
// A state space model with parameters θ is
//
//	x_0 ~ ν_0(·|θ),
//	x_t | x_{t-1} ~ p(x_t | x_{t-1}, θ),   t = 1..T  (transition),
//	y_t | x_t     ~ p(y_t | x_t, θ),       t = 1..T  (emission).
//
// A Model is the family; Model.Bind fixes the parameters and returns a
// Kernel, which samples and evaluates ν_0, the transition and the emission
// on blocks of particles: n×State row-major []float64 slices, so that a
// filter makes one interface call per time step and allocates nothing.
// Simulate draws a path and data from a Kernel.
//
// # Time convention
//
// A Sequence holds y_1..y_T as rows 0..T−1: row t (0-based) is y_{t+1},
// and x_0 ~ ν_0 is the state just before row 0. A Window filters rows
// [Start, End) and keeps the statistic of rows [KeepStart, KeepEnd); the
// state just before row Start is drawn from ν_0, which is the exact prior
// only when Start = 0 and otherwise the paper's choice for the first state
// of a buffered subsequence (exact when ν_0 is the stationary law). In the
// paper's 1-based notation, the subsequence S = {s+1..s+S} with buffer
// S* = {s+1−B..s+S+B} is the window Start = s−B, KeepStart = s,
// KeepEnd = s+S, End = s+S+B (truncated to [0, T]).
//
// # Fisher's identity and the pairwise statistic
//
// The score of the data is the smoothed expectation of the complete-data
// score (Fisher's identity),
//
//	∇ log p(y_{1:T}|θ) = E[∇ log ν_0(x_0|θ) | y_{1:T}] + Σ_{t=1..T} E[h_t(x_t, x_{t-1}) | y_{1:T}],
//	h_t(x_t, x_{t-1}) = ∇ [log p(x_t | x_{t-1}, θ) + log p(y_t | x_t, θ)].
//
// Kernel.AddScore adds w·h_t for every particle row (and w·∇ log ν_0 when
// prev is nil), so a filter can carry the running sums H_t of Algorithm 1
// of the paper. The buffered stochastic gradient of the paper is
//
//	ĝ(S, B) = Σ_{t∈S} w_t E[h_t | y_{S*}],  w_t = 1 / Pr(t ∈ S),
//
// with the weights in Window.Weights; the initial term belongs to it only
// when the window starts at the start of the sequence and keeps time 0
// (Window.KeepsInitial).
//
// # Parameters, transforms and priors
//
// Samplers move an unconstrained vector u ∈ R^p; the natural parameters
// are θ = Constrain(u) (for example φ = tanh u_1, σ = exp u_2), and every
// gradient in this module, AddScore's included, is with respect to u.
// A prior π_θ on the natural parameters becomes on u
//
//	log π_u(u) = log π_θ(θ(u)) + log|det ∂θ/∂u|,
//
// and Prior.LogPrior returns this, Jacobian included, with its gradient in
// u. The samplers target π_u(u)·p(y | θ(u)). Invalid natural parameters
// give a *ParamError (wrapping ErrInvalidParam) naming the parameter.
//
// # Missing data
//
// A NaN component of an observation is missing: it adds 0 to the emission
// log density and to the score, so a wholly missing y_t leaves the filter
// to propagate the state. Kernels must honour this component by component.
//
// # Optional capabilities
//
// Algorithms discover extra abilities by type assertion:
//
//   - Proposer (Kernel): a guided proposal q(x_t | x_{t-1}, y_t), such as
//     the locally optimal one; without it filters use the transition
//     (the bootstrap filter).
//   - TransitionBounder (Kernel): an upper bound on log p(x_t|x_{t-1}),
//     enabling accept-reject backward sampling (PaRIS).
//   - Degenerate (Kernel): the transition has no density in the full state
//     (GARCH's σ_t²), so backward smoothers are refused.
//   - StateCompleter (Kernel): recomputes the deterministic part of a
//     state row from the previous row, for derivative checks.
//   - ExactScorer (Model): exact (N = ∞) log-likelihood and smoothed score
//     over a window, as the Kalman filter gives for linear Gaussian models.
//   - RefinedScorer (Model): for an ExactScorer exact only up to a
//     discretisation, the log-likelihood at a finer one.
//   - StateSmoother (Model): exact filtered and smoothed state moments.
//   - Rebinder (Kernel), Starter (Model), Volatility (Kernel): in-place
//     rebinding, a starting point, the volatility of a state.
//   - DataChecker (Model): warnings about the data for this model, and
//     an error for data it cannot describe as it stands.
//
// "Writing your own model" below says which algorithms each one unlocks.
//
// # Writing your own model
//
// A model is a [Model] (the family: parameters, prior, Bind) and the
// [Kernel] that Bind returns (one member: samplers, log densities, score).
// examples/custom_model is a complete one in one file of under 150 lines.
//
// Parameters and prior. Embed a [github.com/pbsgmcmc/pbsgmcmc/models.Params]
// (names, one Transform per parameter such as models.Real,
// models.Positive, models.Unit, models.Symmetric or models.Interval(a, b),
// and one prior Marginal per parameter such as models.Normal,
// models.Uniform, models.Beta on a shifted scale or models.InvGammaSq on
// the square): it supplies ParamNames, Constrain, Unconstrain and LogPrior
// (Jacobian included), and its Natural method gives Bind θ(u) with a
// *[ParamError] for NaN or saturated u. The model then writes Dims and
// Bind only.
//
// State layout. A state row is Dims.State float64s, and blocks of particles
// are n×State row-major, one row per particle. The row holds whatever the
// transition and emission need from the past: the random part first (as
// x_t), then any deterministic functions of the past, such as GARCH's
// σ_t² = α + βx_{t−1}² + γσ_{t−1}² and its tangent ∂σ_t²/∂u, which AddScore
// needs for the total derivative. SampleTransition fills whole rows;
// LogTransitions and LogInitial give the density of the random part only.
//
// Emissions that depend on the previous state. The interface has
// y_t | x_t only. For y_t | x_t, x_{t−1} (or any function of the past),
// carry x_{t−1} in the state: z_t = (x_t, x_{t−1}), whose second half the
// transition copies from z_{t−1}. The emission reads both halves of its
// row; LogTransitions is the density of x_t given z_{t−1} alone, and the
// copy adds nothing to it or to the score. The kernel is then degenerate:
//
// Degenerate transitions. A deterministic part of the row (a copied x_{t−1},
// GARCH's σ_t²) means the full-state transition has no density. The kernel
// must then implement [Degenerate] returning true, and [StateCompleter],
// whose Complete(x, prev) recomputes the deterministic part of x from prev
// under the kernel's parameters (ssm/ssmtest re-derives paths with it when
// it perturbs u). Filters, the ancestral and shrinkage smoothers, fixed-lag
// state draws and every gradient estimator that uses them work as usual;
// what needs f(x_t | x_{t−1}) is refused or replaced, as below.
//
// Capabilities and what they unlock:
//
//   - a transition density (not [Degenerate]): the backward smoothers
//     pf.ForwardOnly (O(N²), low variance) and pf.PaRIS, FFBSi state draws
//     in pf.States and sgmcmc.Posterior.States (fixed-lag otherwise), and
//     sgmcmc.Fit's forward-only control variate; a degenerate kernel gets
//     pf.ErrNoTransitionDensity from the first two;
//   - [TransitionBounder]: accept-reject backward draws in PaRIS and FFBSi
//     (expected O(1) per draw instead of O(N));
//   - [Proposer]: the guided filter (pf.Auto picks it, pf.Guided requires
//     it); Propose must add the exact weight log p(y|x) + log p(x|prev) −
//     log q(x|prev, y);
//   - [ExactScorer] (Model): exact log-likelihood and smoothed score over a
//     window, used by sgmcmc.FitSettings.Exact and by exact
//     sgmcmc.Posterior.LogLik and PredictiveScore;
//   - [RefinedScorer] (Model, with ExactScorer): sgmcmc.Fit corrects its
//     chains towards the finer log-likelihood (a quadratic fitted at the
//     mode ± one sd) and checks the correction after sampling;
//   - [LinearGaussian] with [EmissionCurvature] (a linear Gaussian
//     transition, any emission with a gradient and Hessian in x; best a
//     log-concave one): a vector state scored by Laplace importance
//     sampling (pf.Laplace) instead of particles, with sgmcmc.Fit's
//     pseudo-marginal full-data chains, the fast path for a vector state
//     (examples/custom_vector: two Poisson count series with correlated
//     log-intensities, against Stan's NUTS); [SeparableEmission] when
//     component i of y depends on x_i only. ssmtest.CheckLaplace checks
//     both against the kernel's own densities;
//   - [StateSmoother] (Model): exact filtered and smoothed state moments in
//     sgmcmc.Posterior.States and Forecast;
//   - [Rebinder]: re-target a kernel in place so estimators allocate
//     nothing per iteration; [Starter]: a data-based starting point for
//     sgmcmc.Fit; [Volatility]: the volatility reported by States;
//     [DataChecker]: what the data say against the model (a scale its
//     prior does not expect, say), which sgmcmc.Fit logs before it starts
//     and puts first in the posterior's warnings, and an error (data the
//     model cannot describe as it stands) at which Fit stops before any
//     work.
//
// Testing a model. Package [github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest] checks
// a model against independent numerical answers: ssmtest.Model runs
// CheckScore (the summed AddScore against finite differences of the
// complete-data log-likelihood, with and without missing data),
// CheckTransform and CheckPrior; ssmtest.Simulator runs CheckSampler
// (SampleInitial, SampleTransition and SampleEmission against the log
// densities by score, information and Stein moments) and, for a [Proposer],
// CheckProposal (Propose's draws against LogProposal and its weights
// against the densities). A model whose SampleEmission returns 3·y passes
// the first and fails the second. Stein's identity in y needs a density in
// y: for discrete observations (counts) call ssmtest.SamplerMoments and
// leave out the emission's Stein moments, as examples/custom_vector does.
//
// # Data
//
// A Sequence is one T×Obs row-major series; a Dataset is several
// independent sequences sharing θ, with optional ids. Validate checks
// shapes in O(1); CheckFinite scans the values for ±Inf.
//
// ReadCSV reads one sequence, one column per observation component, with
// an optional header; "", "NaN" and the missing-value markers of common
// sources (NA, null, ".", #N/A, N/A, None) are missing, and "-0.52%"
// reads as -0.52 (percent). CSVDataset (and
// ReadCSVDataset) read several sequences told apart by an id column; its
// Column picks the value column of a panel (ticker,date,close,volume).
// CSVDateOrder (CSVDatasetDateOrder within each id of a panel) tells
// whether a file's date column runs oldest or newest first (Investing.com
// and Nasdaq.com downloads: newest), and Reversed puts
// a newest-first series in time order. Every reader skips a leading UTF-8
// byte order mark, also before a quoted first cell.
// Malformed input gives a *ParseError naming the line and column and
// wrapping ErrData; the readers never panic. WriteCSV writes the format
// back. LogReturns turns prices or index levels into the log returns
// scale·(log y_t − log y_{t−1}) that stochastic volatility and GARCH
// models describe (scale 100: percent).
//
// Long series are stored as raw little-endian float64, row-major, without
// a header (WriteBinary; NumPy's y.astype("<f8").tofile). OpenBinary maps
// such a file read-only on Unix systems, so T = 10^9 observations are used
// without being loaded into memory; ReadBinary reads one into memory on
// any host.
package ssm
