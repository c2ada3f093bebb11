// Package models implements the state space models of the paper as
// ssm.Model values, their default priors, and exact (Kalman) inference for
// the linear Gaussian ones.
//
// Every model is a family
//
//	x_0 ~ ν_0(·|θ),  x_t | x_{t−1} ~ p(·|x_{t−1}, θ),  y_t | x_t ~ p(·|x_t, θ),  t = 1..T,
//
// with observation y_t stored in row t−1 of an ssm.Sequence. Samplers move
// an unconstrained vector u ∈ R^p; the natural parameters are θ = θ(u),
// one Transform per coordinate (u = atanh φ, u = log σ, ...). A Prior on the
// natural parameters is pushed forward to u with the log-Jacobian included,
// so LogPrior is the density of u. [Params] bundles names, transforms and
// an independent prior; a model of your own embeds it to get ParamNames,
// Constrain, Unconstrain and LogPrior (the shipped models use it too).
//
// The models:
//
//   - LGSSM, the scalar linear Gaussian model x_t = φx_{t−1} + σε_t,
//     y_t = x_t + τη_t, with the locally optimal proposal and exact Kalman
//     inference;
//   - LGSSMd, its d-dimensional version with a full transition matrix A;
//   - SVM, the stochastic volatility model x_t = φx_{t−1} + σε_t,
//     y_t ~ N(0, τ² e^{x_t}), with the bootstrap filter (the paper's) by
//     default and, with SVM{Guided: true}, a Laplace proposal: a Gaussian at
//     three Newton steps towards the mode of p(y_t|x_t) p(x_t|x_{t−1}), with
//     exact importance weights, which removes most of the bootstrap filter's
//     particle bias in the τ score on heavy-tailed returns;
//   - GARCH, GARCH(1,1) observed with Gaussian noise, whose state rows carry
//     σ_t² and its tangent ∂σ_t²/∂u. Its exact scorer (for sgmcmc.Fit)
//     filters σ² alone, which is a Markov chain given the data, on a
//     K-point quadrature rule in log σ² that moves with the filtered law:
//     each step maps the rule through the transition on a Gauss–Hermite
//     rule in x_t | y_t, weighs the atoms by the next emission, whose
//     weighted sum is that observation's predictive density, and compresses
//     them to the K-point Gauss rule of their law (Stieltjes procedure and
//     Golub–Welsch eigenvalues), keeping its first 2K moments
//     (garch_quad.go); the score is its exact derivative, carried through
//     the same pass in forward mode for about three passes' work
//     (garch_quad_tangent.go). With GARCH.Nodes it is a filter on fixed
//     σ² nodes instead (garch_exact.go).
//
// For LGSSM, LGSSMd and SVM, ν_0 is the stationary law of the latent AR
// process. Each bound kernel's AddScore is the exact gradient in u of the
// pairwise complete-data log-likelihood log p(x_t|x_{t−1}) + log p(y_t|x_t)
// (and of log ν_0(x_0), which depends on the parameters too); the tests
// check it against finite differences with package ssm/ssmtest. A missing
// (NaN) observation adds 0 to the log-likelihood and to the score.
//
// Invalid parameters (|φ| ≥ 1, σ ≤ 0, NaN, ...) give a *ssm.ParamError
// naming the parameter, never a panic; wrong slice lengths are programmer
// errors and panic with a "models:" message.
package models
