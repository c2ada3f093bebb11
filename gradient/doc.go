// Package gradient implements the buffered stochastic gradient of Aicher,
// Putcha, Nemeth, Fearnhead and Fox, "Stochastic gradient MCMC for
// nonlinear state space models": the particle estimate g^PF(S, B, N) of
//
//	ĝ(S, B) = Σ_{t∈S} Pr(t ∈ S)⁻¹ E[∇_u log p(x_t, y_t | x_{t−1}, u) | y_{S*}],
//
// where S is a random contiguous subsequence of length S and S* is S padded
// by a buffer of B observations on each side, truncated at the sequence
// ends. The filter runs over all of S* (starting from ν₀ just before S*),
// but only times in S contribute to the statistic: the buffers are there to
// make the conditioning on y_{S*} close to the conditioning on y_{1:T}; the
// error |ĝ(S,B) − ĝ(S,T)| decays geometrically in B.
//
// Subsequencer draws S with exact inclusion probabilities, so ĝ(S, T) is
// unbiased for the full-data score:
//   - Uniform: start uniform over the T−S+1 positions; Pr(t ∈ S) =
//     #{starts covering t}/(T−S+1), smaller near the ends.
//   - Strict: one of the ⌈T/S⌉ blocks of a partition; Pr(t ∈ S) = 1/⌈T/S⌉.
//   - Full: S = T, the full-data gradient.
//
// For a data set of several independent sequences, each draw picks
// sequence j with probability p_j (by length, or uniformly) and divides by
// p_j; Settings.Draws draws are averaged, optionally on several goroutines
// with results that are bit-identical for any worker count.
//
// Estimator.Grad adds the prior gradient ∇_u log π(u), giving the posterior
// gradient that the samplers of package sgmcmc consume (it satisfies
// sgmcmc.Estimator without importing it). Settings.Exact replaces the
// particle filter with the model's ssm.ExactScorer (the Kalman smoother for
// the LGSSM): the N = ∞ estimator ĝ(S, B) itself.
package gradient
