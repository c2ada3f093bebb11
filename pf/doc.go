// Package pf runs particle filters over a window of a sequence and
// estimates smoothed additive functionals, the building block of the
// particle buffered stochastic gradient g^PF(S, B, N).
//
// For a window of observation rows [a, b) a Filter draws N particles
// x_0^i from ν_0 (the state before row a), then for each row t it
//
//  1. resamples ancestor indices a_i with probabilities W_{t-1}^i
//     (systematic, stratified, multinomial or residual; at every step, or
//     only when the effective sample size falls below a threshold),
//  2. propagates x_t^i ~ q(·|x_{t-1}^{a_i}, y_t) (the transition, or the
//     kernel's guided ssm.Proposer),
//  3. reweights, W_t^i ∝ W̄_{t-1}^i p(y_t|x_t^i) f(x_t^i|x_{t-1}^{a_i}) /
//     q(x_t^i|x_{t-1}^{a_i}, y_t), with W̄ the weights carried into the step
//     (uniform after resampling),
//  4. updates per-particle statistics.
//
// The statistics estimate the smoothed additive functional
//
//	Σ_{t ∈ [c, d)} w_t E[h_t(X_{t-1}, X_t) | y_{a:b}]
//
// over a kept sub-range [c, d) ⊆ [a, b) with weights w_t; rows outside it
// (the buffers) are filtered but add nothing.
// The estimate is Σ_i W_b^i T_b^i for statistics T chosen by Smoother:
// ancestral paths (the paper's Algorithm 1, O(N) per step), shrinkage of
// the paths towards their mean (Nemeth et al. 2016, biased for λ < 1),
// the forward-only smoother (Poyiadjis et al. 2011, O(N²) per step) and
// PaRIS (Olsson and Westerborn 2017, O(N·Ñ) expected per step with
// accept-reject backward draws). The filter also returns the unbiased
// likelihood estimate p̂(y_{a:b}) = Π_t Σ_i W̄_{t-1}^i exp(ι_t^i) on the
// log scale, ι being the incremental log-weights.
//
// With h_t = ∇_u log p(x_t, y_t | x_{t-1}) (Score) and w_t = 1/Pr(t ∈ S)
// the statistic is the paper's buffered gradient estimate (Fisher's
// identity).
//
// Missing observations (NaN components) contribute weight 1 (the kernel
// adds 0). A window with no observation at all is valid: the particles
// are propagated, the log-likelihood is 0 and the statistic holds only
// the transition (and initial) terms. A step at which every weight is zero, infinite or
// NaN is an error (*DegeneracyError), as is a non-finite result
// (ErrNonFinite); NaN is never returned silently.
//
// A Filter owns all its buffers: after the first Run with the same sizes,
// Run allocates nothing. Randomness comes only from the *rand.Rand passed
// to Run.
//
// States draws the states themselves over a window: M draws of each x_t
// from the filtering law, and from the smoothing law by forward filtering
// and backward simulation (FFBSi, accept-reject backward draws under a
// TransitionBounder) or, for degenerate transitions, fixed-lag ancestral
// tracing; it also returns the one-step predictive densities. It keeps
// every generation of particles only when smoothing.
//
// GridFilter scores a scalar state exactly on a grid of cells. Laplace
// scores a vector state whose transition is linear Gaussian
// (ssm.LinearGaussian) and whose emission has derivatives in the state
// (ssm.EmissionCurvature) without particles: M paths from the Gaussian
// model at the mode of p(x | y) (Newton steps, each a Kalman filter and
// smoother, then Gauss–Hermite refits), drawn backwards in time and
// weighted by p(y_s | x_s)/q_s(x_s) as they go, resampled when their ESS
// falls below M/2 unless Plain is set; a window much longer than the
// state's memory is scored in blocks, each block's conditional likelihood
// the difference of two windows that start a lag before it, unless Whole
// is set; see laplace.go.
package pf
