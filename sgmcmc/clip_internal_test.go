package sgmcmc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
)

// TestClippedStepsCounted: a 1-D standard normal posterior with gradient
// noise λ = 4 and the user step h = 0.5, where the injected variance
// 2h − h² − h²λ = −0.25 < 0 must be clipped (the draws' variance is then
// ×1.33). Fit's SGLD chains must count it, so that the fit warns
// (clippedSteps); at h = 0.25 (h(1 + λ) = 1.25 ≤ 2) nothing is clipped.
func TestClippedStepsCounted(t *testing.T) {
	for _, c := range []struct {
		h    float64
		want bool
	}{{0.5, true}, {0.25, false}} {
		f := &fit{s: FitSettings{Chains: 1}, dim: 1, prep: Preparation{Gradient: PlainGradient, Chol: []float64{1}}}
		var setupErr error
		_, newMethod, _, _ := f.chainFactories([]float64{4}, &setupErr)
		m := newMethod(0)
		m.Init(1)
		u, g := []float64{0.3}, []float64{-0.3}
		m.Step(u, g, c.h, rand.New(rand.NewPCG(1, 2)))
		if got := f.clippedSteps() > 0; got != c.want {
			t.Errorf("h = %v, λ = 4: clipped steps %d, want clipping %v", c.h, f.clippedSteps(), c.want)
		}
	}
}

// TestGridEdgeCounted: a proposal whose window's grid does not cover the
// filter's mass (gradient.GridEdgeError, possibly wrapped) is refused and
// counted, other errors are refused and not counted, and the fit warns
// once the refusals exceed 0.1% of the proposals, the chains' and
// importance sampling's together.
func TestGridEdgeCounted(t *testing.T) {
	m := &mala{}
	edgeErr := fmt.Errorf("window 3: %w", &gradient.GridEdgeError{Edge: 2e-4})
	if !m.refused(edgeErr) || !m.refused(errors.New("filter failed")) || m.refused(nil) {
		t.Fatal("refused: want true for any error, false for nil")
	}
	if m.edge != 1 {
		t.Errorf("edge = %d after one grid-edge error and one other, want 1", m.edge)
	}
	for _, c := range []struct {
		is, chains [2]int
		warn       bool
	}{
		{[2]int{0, 400}, [2]int{1, 4000}, false}, // 1 in 4,400
		{[2]int{3, 400}, [2]int{3, 4000}, true},  // 6 in 4,400
		{[2]int{5, 400}, [2]int{0, 0}, true},     // importance sampling alone
	} {
		f := &fit{isEdge: c.is}
		f.gridEdges = func() (int, int) { return c.chains[0], c.chains[1] }
		if got := f.gridEdgeWarning() != ""; got != c.warn {
			t.Errorf("importance sampling %v, chains %v: warning %q, want one: %v", c.is, c.chains, f.gridEdgeWarning(), c.warn)
		}
	}
}
