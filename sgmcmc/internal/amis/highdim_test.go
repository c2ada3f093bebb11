package amis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// firstRoundESS returns the ESS fraction of n draws from a t at scale s
// around the mode of the standard normal in p dimensions.
func firstRoundESS(p int, s float64, seed uint64) float64 {
	l := make([]float64, p*p)
	for i := range p {
		l[i*p+i] = s
	}
	q := tmix.New([]float64{1}, [][]float64{make([]float64, p)}, [][]float64{l})
	rng := rand.New(rand.NewPCG(seed, 1))
	n := Draws(p)
	lw := make([]float64, n)
	x, tmp, z := make([]float64, p), make([]float64, p), make([]float64, p)
	for i := range lw {
		q.Draw(x, tmp, rng)
		lp := 0.0
		for _, v := range x {
			lp -= 0.5 * v * v
		}
		lw[i] = lp - q.LogDensity(x, z)
	}
	ess, _, _ := Quality(lw)
	return ess / float64(n)
}

// TestFirstScale: up to HighDim parameters q₀'s scale is Scale0; above,
// 1 + (Scale0 − 1)·HighDim/p. Against the standard normal in 35
// dimensions the first round's 875 t draws keep at least twice the ESS at
// FirstScale that they keep at Scale0 (three seeds: 0.40 against 0.17),
// and in 4 dimensions the scale is unchanged (0.45).
func TestFirstScale(t *testing.T) {
	for _, p := range []int{1, 4, HighDim} {
		if s := FirstScale(p); s != Scale0 {
			t.Errorf("FirstScale(%d) = %g, want Scale0 %g", p, s, Scale0)
		}
	}
	if s := FirstScale(35); math.Abs(s-(1+(Scale0-1)*HighDim/35.0)) > 1e-12 {
		t.Errorf("FirstScale(35) = %g", s)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		at, old := firstRoundESS(35, FirstScale(35), seed), firstRoundESS(35, Scale0, seed)
		if at < 2*old {
			t.Errorf("seed %d: ESS fraction %.3f at FirstScale, %.3f at Scale0: want at least twice", seed, at, old)
		}
	}
}

// TestShrink: the shrunk covariance is the inverse-Wishart posterior mean
// (ess·cov + (p+2)·prior)/(ess + p + 2), and nil prior leaves cov alone.
func TestShrink(t *testing.T) {
	cov, prior := []float64{4, 1, 1, 2}, []float64{1, 0, 0, 1}
	got := shrink(cov, prior, 12, 2)
	for i, want := range []float64{(48 + 4) / 16.0, 12 / 16.0, 12 / 16.0, (24 + 4) / 16.0} {
		if math.Abs(got[i]-want) > 1e-12 {
			t.Errorf("shrink[%d] = %g, want %g", i, got[i], want)
		}
	}
	if got := shrink(cov, nil, 12, 2); &got[0] != &cov[0] {
		t.Error("shrink with a nil prior copied or changed cov")
	}
}
