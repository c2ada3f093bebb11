package sgmcmc

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

// TestWidenGrid puts the SVM fit of the first 200 DAX returns on the grid
// that failed on the first 201 ([−8, 8], 59 nodes, chosen at the warm-up's end) and
// evaluates the full-data log posterior at the point where a noise probe
// lost filter mass at its edges (φ ≈ −0.5, σ = 1.66): a GridEdgeError
// naming u. widenGrid must widen the grid so that the same point
// evaluates without error and with the log posterior of a grid chosen at
// that point alone (pf.GridFor, independent of the fit's grids) to 1e−5
// (their quadrature errors leave them 7·10⁻⁷ apart),
// and must refuse other errors and a fourth widening.
func TestWidenGrid(t *testing.T) {
	data := daxInternal(t)
	data.Sequences[0].Y = data.Sequences[0].Y[:200]
	f, err := newFit(models.SVM{}, data, FitSettings{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	u := []float64{-0.5794, 0.5089, -0.5254}
	f.setGrid(pf.Grid{Lo: -7.98, Hi: 8, Nodes: 59})
	_, err = f.fullLogPost()(context.Background(), u)
	var ge *gradient.GridEdgeError
	if !errors.As(err, &ge) || !errors.Is(err, pf.ErrGrid) {
		t.Fatalf("log posterior at %v on [-7.98, 8]: error %v, want a GridEdgeError wrapping pf.ErrGrid", u, err)
	}
	t.Logf("narrow grid: %v", err)
	if !f.widenGrid(err) {
		t.Fatal("widenGrid refused the edge error")
	}
	g := f.gset.Grid
	t.Logf("widened: %d nodes on [%.3g, %.3g], spacing %.3g", g.Nodes, g.Lo, g.Hi, g.Spacing())
	lp, err := f.fullLogPost()(context.Background(), u)
	if err != nil {
		t.Fatalf("log posterior on the widened grid: %v", err)
	}
	own, err := f.gridAt(u)
	if err != nil {
		t.Fatal(err)
	}
	f.setGrid(own)
	want, err := f.fullLogPost()(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("log posterior at u: widened grid %.8f, its own grid (%d nodes on [%.3g, %.3g]) %.8f", lp, own.Nodes, own.Lo, own.Hi, want)
	if math.Abs(lp-want) > 1e-5 {
		t.Errorf("log posterior on the widened grid %.8f, on the grid chosen at u %.8f", lp, want)
	}
	if f.widenGrid(errors.New("another failure")) {
		t.Error("widenGrid accepted an error that is not a GridEdgeError")
	}
	f.widened = gridWidenings
	if f.widenGrid(err) || f.widenGrid(ge) {
		t.Error("widenGrid widened more than gridWidenings times")
	}
}
