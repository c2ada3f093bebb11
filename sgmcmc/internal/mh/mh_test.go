package mh

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
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
