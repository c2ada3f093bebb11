package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSpreadOff: the spread check reports a parameter whose chains' sd is
// short of the importance-sampling estimate's by more than spreadTol
// (ratio below 1/1.15 = 0.87) and by more than spreadZ = 2 standard
// errors, the worst such one; a wide spread is never reported. The LGSSM
// on the S&P 500 returns stopped with sds 0.70–0.80 of the Kalman
// posterior's, which a check of standard error 0.05 reports.
func TestSpreadOff(t *testing.T) {
	for _, c := range []struct {
		name      string
		ratio, se []float64
		want      int
	}{
		{"lgssm on the S&P 500", []float64{0.95, 0.8, 0.7}, []float64{0.05, 0.05, 0.05}, 2},
		{"within spreadTol", []float64{0.88}, []float64{0.001}, -1},
		{"beyond spreadTol", []float64{0.86}, []float64{0.001}, 0},
		{"within 2 SE", []float64{0.8}, []float64{0.11}, -1},
		{"beyond 2 SE", []float64{0.8}, []float64{0.09}, 0},
		{"wide", []float64{1.5}, []float64{0.01}, -1},
		{"at spreadTol", []float64{1 / (1 + spreadTol)}, []float64{0.001}, -1},
		{"at spreadZ SE", []float64{0.8}, []float64{0.2 / spreadZ}, -1},
	} {
		r := &spreadResult{ratio: c.ratio, se: c.se}
		if k := r.off(); k != c.want {
			t.Errorf("%s: off() = %d, want %d", c.name, k, c.want)
		}
	}
}

// TestSpreadDraws: the spread check runs with FullGradient only, spends
// at most spreadWork = 3 nominal seconds of one worker on log
// posteriors, at most spreadMax = 2,000 of them, and is skipped when the
// budget buys fewer than spreadMin = 200.
func TestSpreadDraws(t *testing.T) {
	for _, c := range []struct {
		cost float64
		grad Gradient
		want int
	}{
		{0.0001, FullGradient, 2000},
		{0.01, FullGradient, 300},
		{0.015, FullGradient, 200},
		{0.016, FullGradient, 0},
		{0.0001, ControlVariateGradient, 0},
		{0, FullGradient, 0},
		{spreadWork / spreadMin, FullGradient, spreadMin},
		{spreadWork / spreadMax, FullGradient, spreadMax},
	} {
		f := &fit{}
		f.prep.Gradient, f.prep.CostFull = c.grad, c.cost
		if got := f.spreadDraws(); got != c.want {
			t.Errorf("%v at %g s per log posterior: %d draws, want %d", c.grad, c.cost, got, c.want)
		}
	}
}

// TestGridEdgeWarning: the fit warns when more than maxGridEdgeShare =
// 0.1% of the proposals (the chains' and importance sampling's together)
// were refused at a grid's edge.
func TestGridEdgeWarning(t *testing.T) {
	for _, c := range []struct {
		chains, is [2]int // refused, all
		warn       bool
	}{
		{[2]int{1, 1000}, [2]int{0, 0}, false},
		{[2]int{2, 1000}, [2]int{0, 0}, true},
		{[2]int{1, 500}, [2]int{1, 1500}, false},
		{[2]int{2, 500}, [2]int{1, 1500}, true},
		{[2]int{0, 0}, [2]int{0, 0}, false},
		{[2]int{maxGridEdgeShare * 1e6, 1e6}, [2]int{0, 0}, false},
		{[2]int{maxGridEdgeShare*1e6 + 1, 1e6}, [2]int{0, 0}, true},
	} {
		f := &fit{isEdge: c.is}
		f.gridEdges = func() (int, int) { return c.chains[0], c.chains[1] }
		if got := f.gridEdgeWarning() != ""; got != c.warn {
			t.Errorf("chains %v, importance sampling %v refused of all: warns %v, want %v", c.chains, c.is, got, c.warn)
		}
	}
}

// TestBatchRel: the spread check's standard error of an
// importance-sampling variance comes from spreadBatches = 8 batches: on
// N = 800 equally weighted standard normal draws its mean over 400
// replications is within 10% of the exact sqrt(2/N) = 0.05, and its own
// relative spread is that of an sd with 7 degrees of freedom, about
// 1/√14 = 0.27 (4 batches would give 0.41, 16 batches 0.18 but need 160
// draws). Below 10 draws a batch it gives 0 (no check).
func TestBatchRel(t *testing.T) {
	const n, reps = 800, 400
	rng := rand.New(rand.NewPCG(3, 4))
	xs := make([][]float64, n)
	lw := make([]float64, n)
	var sum, sum2 float64
	for range reps {
		for i := range xs {
			xs[i] = []float64{rng.NormFloat64()}
		}
		r := batchRel(xs, lw, 0)
		sum, sum2 = sum+r, sum2+r*r
	}
	mean := sum / reps
	cv := math.Sqrt(sum2/reps-mean*mean) / mean
	exact := math.Sqrt(2.0 / n)
	t.Logf("batch standard error %.4f (exact %.4f), its relative spread %.3f with %d batches", mean, exact, cv, spreadBatches)
	if math.Abs(mean/exact-1) > 0.1 {
		t.Errorf("mean batch standard error %.4f, exact %.4f", mean, exact)
	}
	if cv < 0.22 || cv > 0.33 {
		t.Errorf("relative spread %.3f, want about 0.27 (7 degrees of freedom)", cv)
	}
	if r := batchRel(xs[:10*spreadBatches-1], lw, 0); r != 0 {
		t.Errorf("%d draws: %g, want 0", 10*spreadBatches-1, r)
	}
}
