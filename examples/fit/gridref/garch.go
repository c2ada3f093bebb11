package main

import (
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// garchLogLik returns an unbiased estimate of p(y | θ(u)) (as its log) for
// GARCH(1,1) observed with noise (models.GARCH),
//
//	σ_t² = α + β x_{t−1}² + γ σ_{t−1}²,  x_t ~ N(0, σ_t²),  y_t ~ N(x_t, τ²),
//	x_0 ~ N(0, μ), σ_0² = μ,
//
// by a fully adapted auxiliary particle filter with n particles: σ_t² is a
// deterministic function of the previous particle, so the predictive
// p(y_t | x_{t−1}, σ_{t−1}²) = N(y_t; 0, σ_t² + τ²) is exact; particles
// are resampled (systematically) in proportion to it and then moved by the
// locally optimal proposal x_t ~ N(σ_t² y_t/(σ_t²+τ²), σ_t²τ²/(σ_t²+τ²)),
// after which all weights are equal. The estimate of log p(y) is the sum
// of the logs of the mean predictive weights. It is self-contained (no
// library particle filter, no gradients); only models.GARCH's transform
// is used. It returns −Inf at invalid parameters.
func garchLogLik(y, u []float64, n int, rng *rand.Rand) float64 {
	var th [4]float64
	models.GARCH{}.Constrain(th[:], u)
	mu, phi, lam, tau := th[0], th[1], th[2], th[3]
	if !(mu > 0 && phi > 0 && phi < 1 && lam > 0 && lam < 1 && tau > 0) {
		return math.Inf(-1)
	}
	alpha, beta, gamma := mu*(1-phi), phi*lam, phi*(1-lam)
	t2 := tau * tau
	x := make([]float64, n)
	s2 := make([]float64, n)
	nx := make([]float64, n)
	ns2 := make([]float64, n) // σ_t² by parent
	cs2 := make([]float64, n) // σ_t² by child
	lw := make([]float64, n)
	sd0 := math.Sqrt(mu)
	for i := range x {
		x[i] = sd0 * rng.NormFloat64()
		s2[i] = mu
	}
	ll := 0.0
	const halfLog2Pi = 0.91893853320467274178
	for _, yt := range y {
		for i := range ns2 {
			ns2[i] = alpha + beta*x[i]*x[i] + gamma*s2[i]
		}
		if math.IsNaN(yt) {
			for i := range x {
				x[i] = math.Sqrt(ns2[i]) * rng.NormFloat64()
			}
			s2, ns2 = ns2, s2
			continue
		}
		y2 := yt * yt
		mx := math.Inf(-1)
		for i, v := range ns2 {
			v += t2
			lw[i] = -0.5*math.Log(v) - 0.5*y2/v
			mx = math.Max(mx, lw[i])
		}
		sw := 0.0
		for i, l := range lw {
			lw[i] = math.Exp(l - mx)
			sw += lw[i]
		}
		ll += mx + math.Log(sw/float64(n)) - halfLog2Pi
		// Systematic resampling, then the locally optimal move.
		step := sw / float64(n)
		pos := rng.Float64() * step
		cum, j := lw[0], 0
		for i := range n {
			for pos > cum && j < n-1 {
				j++
				cum += lw[j]
			}
			s := ns2[j]
			f := s / (s + t2)
			nx[i] = f*yt + math.Sqrt(f*t2)*rng.NormFloat64()
			cs2[i] = s
			pos += step
		}
		x, nx = nx, x
		s2, cs2 = cs2, s2
	}
	return ll
}
