package mh

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
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
