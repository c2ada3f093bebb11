// Package report holds the helpers the example programs share to report a
// sampler run: a posterior summary table, trace and density plots, and the
// score evaluations a kernel Stein discrepancy needs.
//
// # Summary
//
// Summarize pools the kept draws of m chains of one scalar parameter,
// θ_{c,k} for chain c and draw k, and reports
//
//	mean  = (1/n) Σ θ,   sd = √( Σ (θ − mean)² / (n − 1) ),
//	q05, q50, q95 = the 5, 50 and 95% quantiles of the pooled draws,
//	               linearly interpolated (Hyndman and Fan's type 7, R's default),
//	ESS   = ksd.ESS (pooled Geyer initial monotone sequence),
//	R-hat = ksd.RankRhat (rank-normalised split R-hat, Vehtari et al. 2021).
//
// The diagnostics need chains of equal length, so when the chains differ
// (a wall-clock budget, a chain stopped early) ESS and R-hat use the first
// n_min draws of every chain; the moments and quantiles use all draws. A
// Table prints as aligned text and encodes as a JSON object keyed by
// parameter name, with non-finite numbers (R-hat of a single constant chain,
// for example) written as null.
//
// # Kernel Stein discrepancy
//
// The KSD of a sample needs the score ∇ log π(u | y) at every draw. Thin
// keeps an evenly spaced subset of the draws and Scores evaluates an
// estimator (for example a full-sequence particle filter gradient, as in the
// paper) at each kept draw on several goroutines; ksd.Compute then gives the
// discrepancy. Draw i uses the generator rand.New(rand.NewPCG(seed,
// stream+i)), so the scores do not depend on the number of workers.
//
// # Plots
//
// TracePNG draws one panel per parameter with one line per chain against
// the iteration; DensityPNG draws, per parameter, a histogram of the pooled
// draws with a Gaussian kernel density estimate of each chain on top (chains
// that agree give overlapping curves). Both write PNG files with
// gonum.org/v1/plot, which only example programs import.
package report
