// Package compare is the harness behind the paper-reproduction examples
// (lgssm_ksd, synthetic, realdata): it runs SGLD with several gradient
// estimators for the same wall-clock time, picks each estimator's step size
// by the smallest kernel Stein discrepancy, and tabulates and plots the
// outcome.
//
// # Protocol
//
// For every method m (a gradient estimator) and every step size ε of a grid,
// Run draws Chains SGLD chains
//
//	u_{k+1} = u_k + h ĝ_m(u_k) + √(2h) ξ_k,   h = ε / T,
//
// with T the number of training observations (so ε is the step size per
// observation, the paper's grid {1, 0.1, 0.01, 0.001} "after scaling"),
// each for Settings.Runtime of its own compute time (or Settings.Iterations).
// The first BurnIn fraction of each chain's iterations is discarded; up to
// KSDDraws evenly spaced draws of the rest are scored with a reference
// estimator of ∇_u log π(u | y) (the exact Kalman gradient for the LGSSM,
// a full-data particle filter gradient otherwise, after Gorham et al. 2020)
// and the paper's kernel Stein discrepancy is computed per chain,
//
//	KSD = Σ_d KSD_d,  KSD_d = √( (1/K²) Σ_{k,k'} k0^d(u_k, u_k') ),
//
// with the IMQ kernel (1 + ‖u − u'‖²)^(−1/2) on the unconstrained vector u
// (package ksd). Tables report log10 KSD_d and log10 KSD as mean (sd) over
// the chains. The step size of a method is the grid point with the fewest
// failed chains (a NaN gradient, a particle filter collapse or a parameter
// leaving its domain) and, among those, the smallest mean log10 KSD, as the
// paper selects "the method with smallest KSD". The same runs serve for the
// selection and for the table, which slightly favours every method alike.
//
// # Traces
//
// Draws are stored with a doubling thinning (when a chain's buffer is full,
// every other draw is dropped and the stride doubles), so memory is bounded
// while the stored draws stay evenly spaced over the whole run. The MSE trace
// at time t is the mean over chains of (m_c(t) − θ*)², where m_c(t) is the
// mean of the natural parameters over the second half of chain c's draws made
// before t (a running posterior-mean estimate with a growing burn-in) and θ*
// the data-generating value: the quantity of the paper's Figure 5.
//
// # Commands
//
// CommonFlags defines, parses and checks the flags the three commands share
// (-time, -iters, -chains, -eps, -N, -S, -B, -burnin, -ksddraws, -seed, -out,
// -concurrency; FlagDefaults holds the defaults and help texts that differ)
// and turns them into Settings; JitteredInit, WriteReport and WriteFile are
// the starting points, the printed report and the output files they share.
// Package examples/internal/paper is the commands' driver built on them.
// CheckHelpExits, ReadJSON and CheckPNG serve the commands' tests.
package compare
