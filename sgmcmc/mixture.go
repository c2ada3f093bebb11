package sgmcmc

import (
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// The Student-t mixtures and weighted-sample functions live in package
// internal/tmix. tailcheck.go still calls them by the names below.

// tMixture is a tmix.Mixture under its former method names.
type tMixture struct{ *tmix.Mixture }

// newTMixture is tmix.New.
func newTMixture(weight []float64, center, chol [][]float64) *tMixture {
	return &tMixture{tmix.New(weight, center, chol)}
}

// draw is tmix.Mixture.Draw.
func (q *tMixture) draw(dst, s []float64, rng *rand.Rand) { q.Draw(dst, s, rng) }

// logDensity is tmix.Mixture.LogDensity.
func (q *tMixture) logDensity(x, z []float64) float64 { return q.LogDensity(x, z) }

// normalized is tmix.Normalized.
func normalized(lw []float64) []float64 { return tmix.Normalized(lw) }

// weightedMoments is tmix.WeightedMoments.
func weightedMoments(xs [][]float64, lw []float64) (mean, cov []float64, ess float64) {
	return tmix.WeightedMoments(xs, lw)
}

// choleskyOf is tmix.Cholesky.
func choleskyOf(cov []float64, p int) ([]float64, error) { return tmix.Cholesky(cov, p) }
