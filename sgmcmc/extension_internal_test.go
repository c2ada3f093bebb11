package sgmcmc

import (
	"math"
	"testing"
)

// TestSegmentsMore checks the extension for segments of different
// autocorrelation times against its defining equation, the old linear
// rule it must reduce to when every draw mixes alike, and GARCH on DAX,
// seed 7 (two segments: ESS 115 over 1,800 draws, the second segment's
// 1,200 draws ESS 492).
func TestSegmentsMore(t *testing.T) {
	const target = 480.0
	for _, c := range []struct{ n, ess, tau float64 }{
		{1800, 115, 1200.0 / 492}, {600, 25, 7}, {4000, 380, 3}, {1200, 50, 40},
	} {
		s := c.n * c.n / c.ess
		x := segmentsMore(c.n, s, c.tau, target)
		if got := (c.n + x) * (c.n + x) / (s + x*c.tau); !(x > 0) || math.Abs(got-target) > 1e-9*target {
			t.Errorf("n %v, ESS %v, τ %v: x = %v gives ESS %v, want %v", c.n, c.ess, c.tau, x, got, target)
		}
		// Alike: τ = n/ess for the new draws too: the linear rule.
		tau := c.n / c.ess
		if x, want := segmentsMore(c.n, s, tau, target), (target-c.ess)*tau; math.Abs(x-want) > 1e-9*want {
			t.Errorf("n %v, ESS %v with τ %v alike: x = %v, want the linear rule's %v", c.n, c.ess, tau, x, want)
		}
	}
	if x := segmentsMore(1000, 1000*1000/500.0, 2, target); x != 0 {
		t.Errorf("ESS 500 ≥ %v: x = %v, want 0", target, x)
	}
	// Seed 7: 2,214 more draws (554 per chain) instead of the linear rule's
	// (480 − 115)·1,800/115 = 5,713.
	x := segmentsMore(1800, 1800*1800/115.0, 1200.0/492, target)
	if x < 1800 || x > 2400 {
		t.Errorf("GARCH on DAX, seed 7: x = %v, want about 2,100", x)
	}
	t.Logf("seed 7: %.0f more draws (linear rule: %.0f)", x, (target-115)*1800/115)
}
