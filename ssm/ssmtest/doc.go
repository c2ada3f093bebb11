// Package ssmtest checks an ssm.Model against independent numerical answers,
// for use in the tests of a model's author.
//
// Five checks are provided: three of the densities, score, transform and
// prior (Model runs them), and two of the samplers (Simulator runs them).
//
// Score. For a path x_0..x_T and data y_1..y_T the complete-data
// log-likelihood is
//
//	L(u) = log ν_0(x_0|u) + Σ_{t=1..T} [log p(x_t|x_{t-1},u) + log p(y_t|x_t,u)].
//
// Its gradient in the unconstrained parameters u must equal the sum of the
// pairwise statistics that Kernel.AddScore adds (the initial term with prev
// nil, then one term per pair). CheckScore and ScorePath compare that sum
// with a Richardson-extrapolated central difference of L. When the kernel is
// an ssm.StateCompleter, the deterministic part of the path is re-derived
// under each perturbed kernel (Complete(x_0, nil), then Complete(x_t,
// x_{t-1}) in time order) before L is evaluated, so the difference is the
// total derivative.
//
// Transform. Unconstrain(Constrain(u)) = u, and the log|det ∂θ/∂u| that
// Constrain returns equals the log-determinant of a finite-difference
// Jacobian of the map u ↦ θ.
//
// Prior. The gradient that LogPrior stores equals a finite difference of
// LogPrior, and the value does not depend on whether a gradient is asked
// for.
//
// Samplers. CheckSampler draws n values from each of SampleInitial,
// SampleTransition and SampleEmission and averages, over the draws Z, the
// quantities whose expectation is zero when Z comes from the density f_u
// the kernel evaluates (LogInitial, LogTransitions, AddLogEmission):
//
//	∂_i log f_u(Z),   (∂_i log f_u(Z))² + ∂_i² log f_u(Z),   ∂/∂z_c log f_u(Z),
//
// the score and information identities in each u_i and Stein's identity in
// each component of Z, all by central differences of the log densities.
// A moment more than SamplerZ = 5 Monte Carlo standard errors from zero
// fails. CheckProposal does the same for Propose against LogProposal and
// checks the weight Propose adds against log p(y|x) + log p(x|prev) −
// log q(x|prev, y) to WeightTol. A SampleEmission returning 3·y passes the
// score check (the densities are right) and fails CheckSampler at z ≈ 40.
//
// Relative errors are measured per coordinate as |a − b| / max(|b|, 1), with
// b the finite-difference answer, so that a coordinate near zero is judged on
// an absolute scale; the reported error is the largest over coordinates.
package ssmtest
