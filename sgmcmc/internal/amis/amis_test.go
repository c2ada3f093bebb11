package amis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// TestIndependenceRates checks the expected acceptance rate and holding
// time of an independence chain computed from weighted draws (Quality,
// ExpectedHold) against a simulated independence Metropolis–Hastings
// chain: target N(0, 1), proposal a Student-t (ν = 5) at 0.3 with scale
// 0.6. The holding time is also checked exactly where the proposal is the
// target (1: every proposal accepted).
func TestIndependenceRates(t *testing.T) {
	q := tmix.New([]float64{1}, [][]float64{{0.3}}, [][]float64{{0.6}})
	logPi := func(x float64) float64 { return -0.5 * x * x }
	z := make([]float64, 1)
	rng := rand.New(rand.NewPCG(7, 8))
	s := make([]float64, 1)
	// Importance draws from q.
	const n = 3000
	xs := make([][]float64, n)
	lps := make([]float64, n)
	lw := make([]float64, n)
	for i := range xs {
		xs[i] = make([]float64, 1)
		q.Draw(xs[i], s, rng)
		lps[i] = logPi(xs[i][0])
		lw[i] = lps[i] - q.LogDensity(xs[i], z)
	}
	_, acc, hold := Quality(lw)
	holdQ := ExpectedHold(q, xs, lps, lw, z)
	// The chain.
	const iters = 400000
	x := []float64{0}
	y := make([]float64, 1)
	lwx := logPi(0) - q.LogDensity(x, z)
	accepted := 0
	for range iters {
		q.Draw(y, s, rng)
		lwy := logPi(y[0]) - q.LogDensity(y, z)
		if math.Log(rng.Float64()) < lwy-lwx {
			x[0], lwx = y[0], lwy
			accepted++
		}
	}
	rate := float64(accepted) / iters
	// The estimate's own error dominates: a few thousand weighted draws.
	t.Logf("acceptance: from weighted draws %.4f, simulated %.4f; holding time %.3f (ExpectedHold %.3f)", acc, rate, hold, holdQ)
	if math.Abs(acc-rate) > 0.02 {
		t.Errorf("expected acceptance %.4f, simulated chain %.4f", acc, rate)
	}
	if math.Abs(hold-holdQ) > 1e-9 || !(hold > 1/rate-0.05) {
		t.Errorf("holding time %.4f (ExpectedHold %.4f); want equal and at least 1/acceptance (Jensen) = %.4f", hold, holdQ, 1/rate)
	}
	// q = π: weights constant, every proposal accepted.
	for i := range lps {
		lps[i] = q.LogDensity(xs[i], z)
		lw[i] = 0
	}
	if h := ExpectedHold(q, xs, lps, lw, z); math.Abs(h-1) > 1e-12 {
		t.Errorf("ExpectedHold with q = π: %.6f, want 1", h)
	}
}
