package mh

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// TestRefusedCounted: a proposal whose window's grid does not cover the
// filter's mass (gradient.GridEdgeError, possibly wrapped) is refused and
// counted, other errors are refused and not counted.
func TestRefusedCounted(t *testing.T) {
	m := &Kernel{}
	edgeErr := fmt.Errorf("window 3: %w", &gradient.GridEdgeError{Edge: 2e-4})
	if !m.refused(edgeErr) || !m.refused(errors.New("filter failed")) || m.refused(nil) {
		t.Fatal("refused: want true for any error, false for nil")
	}
	if _, _, _, _, edge := m.Counts(); edge != 1 {
		t.Errorf("grid-edge count %d after one grid-edge error and one other, want 1", edge)
	}
}

// TestDefaultIndependence: a new kernel with an independence proposal
// spends DefaultIndependence = 1/2 of its steps on it (global moves,
// whose autocorrelation time grows as 1/share: amis.IndependenceIAT) and
// the rest on Langevin steps, or on surrogate transitions when it has a
// surrogate (local moves, which follow the posterior where the
// independence proposal fits it badly). Over 10⁴ draws the share is 0.5
// within 3 binomial standard errors (0.015).
func TestDefaultIndependence(t *testing.T) {
	for _, sur := range []*surrogate.Surrogate{nil, {}} {
		m := New(nil, []float64{1}, tmix.New([]float64{1}, [][]float64{{0}}, [][]float64{{1}}), 1)
		m.sur = sur
		rng := rand.New(rand.NewPCG(1, 2))
		var kinds [4]int
		const n = 10000
		for range n {
			kinds[m.choose(rng)]++
		}
		other := 1
		if sur != nil {
			other = 3
		}
		share := float64(kinds[2]) / n
		t.Logf("surrogate %v: independence share %.4f (DefaultIndependence %g)", sur != nil, share, DefaultIndependence)
		if math.Abs(share-0.5) > 0.015 || kinds[2]+kinds[other] != n {
			t.Errorf("surrogate %v: kinds %v, want half independence (2), half %d", sur != nil, kinds, other)
		}
	}
}

// gaussEst is N(0, I) as an Estimator.
type gaussEst struct{}

func (gaussEst) Grad(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
	lp := 0.0
	for i, v := range u {
		lp -= 0.5 * v * v
		if grad != nil {
			grad[i] = -v
		}
	}
	return lp, nil
}

// TestWalk: the random-walk steps of chains with a surrogate, of scale
// surrogate.Walk = 1 over √p in the chains' metric, are there to move a
// chain the surrogate holds, so they favour acceptance over jump size:
// on N(0, I) in four dimensions with the exact metric they were accepted
// 65% of the time over 4000 steps (2Φ(−1/2) = 62% for large p), with a
// mean squared jump of 0.57. The test asks for an acceptance of at least
// 0.55 and a squared jump of at least 0.45 (their standard errors are
// about 0.01 and 0.02); Walk = 2 (acceptance 0.38) or 0.5 (jump 0.19)
// fails it.
func TestWalk(t *testing.T) {
	const p, n = 4, 4000
	l := make([]float64, p*p)
	for i := range p {
		l[i*p+i] = 1
	}
	m := New(gaussEst{}, l, nil, p)
	rng := rand.New(rand.NewPCG(3, 4))
	u := make([]float64, p)
	for i := range u {
		u[i] = rng.NormFloat64()
	}
	prev := slices.Clone(u)
	jump := 0.0
	for range n {
		lp0, _ := gaussEst{}.Grad(context.Background(), nil, u, nil)
		m.randomWalk(u, lp0, 0.5, rng)
		for i := range u {
			jump += (u[i] - prev[i]) * (u[i] - prev[i]) / n
		}
		copy(prev, u)
	}
	acc, _, _, _, _ := m.Counts()
	rate := float64(acc) / n
	t.Logf("Walk %g: acceptance %.3f, mean squared jump %.3f", surrogate.Walk, rate, jump)
	if rate < 0.55 || jump < 0.45 {
		t.Errorf("acceptance %.3f (want ≥ 0.55), mean squared jump %.3f (want ≥ 0.45)", rate, jump)
	}
}

// TestSetWalk: with SetWalk and no surrogate or independence proposal
// every step is a random-walk Metropolis step of whitened sd √(2h − h²),
// and the chain keeps N(0, I) in four dimensions: over 40,000 steps at
// h = 0.6 the mean and variance of every coordinate are within 4
// standard errors (batch means of 100 batches) of 0 and 1, and the
// acceptance rate within 0.02 of E min(1, π(u')/π(u)) at stationarity
// (0.41, from 200,000 independent draws): a scale of surrogate.Walk/√p
// instead is accepted 65% of the time.
func TestSetWalk(t *testing.T) {
	const p, n, h = 4, 40000, 0.6
	l := make([]float64, p*p)
	for i := range p {
		l[i*p+i] = 1
	}
	m := New(gaussEst{}, l, nil, p)
	m.SetWalk()
	rng := rand.New(rand.NewPCG(5, 6))
	u, g := make([]float64, p), make([]float64, p)
	const batches = 100
	var mean, sq [p][batches]float64
	for it := range n {
		if _, err := m.Grad(context.Background(), g, u, rng); err != nil {
			t.Fatal(err)
		}
		m.Step(u, g, h, rng)
		b := it * batches / n
		for i, v := range u {
			mean[i][b] += v / (n / batches)
			sq[i][b] += v * v / (n / batches)
		}
	}
	acc, prop, _, _, _ := m.Counts()
	rate := float64(acc) / float64(prop)
	// The acceptance rate at stationarity, E min(1, π(u + sξ)/π(u)) for
	// u ~ N(0, I) and ξ ~ N(0, I), by independent draws.
	want, sd := 0.0, math.Sqrt(2*h-h*h)
	mc := rand.New(rand.NewPCG(7, 8))
	const draws = 200000
	for range draws {
		d := 0.0
		for range p {
			x, xi := mc.NormFloat64(), mc.NormFloat64()
			y := x + sd*xi
			d += 0.5 * (x*x - y*y)
		}
		want += math.Min(1, math.Exp(d)) / draws
	}
	t.Logf("acceptance %.3f (about %.3f expected), %d proposals", rate, want, prop)
	if prop != n || math.Abs(rate-want) > 0.02 {
		t.Errorf("acceptance %.3f of %d proposals, want %d near %.3f", rate, prop, n, want)
	}
	check := func(what string, xs []float64, target float64) {
		mu, v := 0.0, 0.0
		for _, x := range xs {
			mu += x / batches
		}
		for _, x := range xs {
			v += (x - mu) * (x - mu) / (batches - 1)
		}
		se := math.Sqrt(v / batches)
		if math.Abs(mu-target) > 4*se {
			t.Errorf("%s %.4f, want %g within 4 standard errors (%.4f)", what, mu, target, 4*se)
		}
	}
	for i := range p {
		check(fmt.Sprintf("mean of u[%d]", i), mean[i][:], 0)
		check(fmt.Sprintf("variance of u[%d]", i), sq[i][:], 1)
	}
}
