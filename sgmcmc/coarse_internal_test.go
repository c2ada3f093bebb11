package sgmcmc

import (
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
)

// quadFit2 is a two-parameter fitted correction with leave-one-out error
// loo, slopes a and diagonal curvature b.
func quadFit2(loo, a, b float64) *linalg.QuadFit {
	return &linalg.QuadFit{LOO: loo, A: []float64{a, -a / 2}, B: []float64{b, 0, 0, b / 2}}
}

// TestCoarseLevelValid: the levels chooseCoarse accepts, at the
// leave-one-out errors its constants' comments measured. Level 1
// (quadMaxLOO 0.15): GARCH on DAX at 32 nodes (0.019) is sampled, at 16
// nodes (0.158) and on a simulated series (0.233) not; neither is a
// correction that moves a mean by more than coarseMaxShift (0.5 sd) or
// curves by more than discretisationMaxCurve. A deeper level
// (quadMaxLOODeep 0.05): 24 nodes on DAX (0.033) is, the simulated
// series' 0.082 (μ 0.14 sd off) is not; nor slopes beyond coarseMaxTilt
// (3 nats per sd).
func TestCoarseLevelValid(t *testing.T) {
	for _, c := range []struct {
		name string
		mx   float64
		q    *linalg.QuadFit
		want bool
	}{
		{"32 nodes on DAX", 0.1, quadFit2(0.019, 0.5, -0.2), true},
		{"16 nodes on DAX", 0.1, quadFit2(0.158, 0.5, -0.2), false},
		{"16 nodes, simulated", 0.1, quadFit2(0.233, 0.5, -0.2), false},
		{"at quadMaxLOO", 0.1, quadFit2(quadMaxLOO, 0.5, -0.2), true},
		{"shift 0.5 sd", coarseMaxShift, quadFit2(0.019, 0.5, -0.2), true},
		{"shift 0.51 sd", 0.51, quadFit2(0.019, 0.5, -0.2), false},
		{"curvature 0.6", 0.1, quadFit2(0.019, 0.5, 0.6), false},
	} {
		if got := firstLevelValid(c.mx, c.q, 2); got != c.want {
			t.Errorf("level 1, %s: valid %v, want %v", c.name, got, c.want)
		}
	}
	for _, c := range []struct {
		name string
		q    *linalg.QuadFit
		want bool
	}{
		{"24 nodes on DAX", quadFit2(0.033, 1, -0.2), true},
		{"24 nodes, simulated", quadFit2(0.082, 1, -0.2), false},
		{"at quadMaxLOODeep", quadFit2(quadMaxLOODeep, 1, -0.2), true},
		{"slope 3", quadFit2(0.033, coarseMaxTilt, -0.2), true},
		{"slope 3.1", quadFit2(0.033, 3.1, -0.2), false},
		{"curvature 0.6", quadFit2(0.033, 1, 0.6), false},
		{"curvature at discretisationMaxCurve", quadFit2(0.033, 1, discretisationMaxCurve), true},
	} {
		if got := deeperLevelValid(c.q, 2); got != c.want {
			t.Errorf("deeper level, %s: valid %v, want %v", c.name, got, c.want)
		}
	}
}
