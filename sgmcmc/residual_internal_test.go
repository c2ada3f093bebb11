package sgmcmc

import (
	"math"
	"testing"
)

func residualCheck(r, se, sd, sdse float64) *discretisation {
	return &discretisation{DiscretisationReport: DiscretisationReport{
		Residual: []float64{r}, ResidualSE: []float64{se}, ResidualSD: []float64{sd}, ResidualSDSE: []float64{sdse}, Draws: 24}}
}

// TestResidualWarning: the Posterior warns of a discretisation residual
// beyond 0.1 posterior sd (discretisationMaxResidual), or an sd ratio
// beyond 1 ± 0.1 (discretisationMaxSDRatio), only when it is also
// beyond 1.96 standard errors of the check (discretisationBand): a
// residual the check cannot tell from 0 is not warned of, however large.
func TestResidualWarning(t *testing.T) {
	for _, c := range []struct {
		r, se, sd, sdse float64
		warn            bool
	}{
		{0.12, 0.05, 1, 0, true},   // beyond 0.1 and 1.96 SE (0.098)
		{-0.12, 0.05, 1, 0, true},  // either side
		{0.12, 0.065, 1, 0, false}, // within the band (0.127)
		{0.09, 0.01, 1, 0, false},  // small, however sure
		{0.3, 0.2, 1, 0, false},    // large, but the check cannot tell
		{0, 0.01, 1.12, 0.05, true},
		{0, 0.01, 0.88, 0.05, true},
		{0, 0.01, 1.12, 0.065, false},
		{0, 0.01, 1.09, 0.01, false},
		{discretisationMaxResidual, 0.01, 1, 0, false},
		{0.2, 0.2 / discretisationBand, 1, 0, false},
		{0, 0.01, 1 - discretisationMaxSDRatio, 0.01, false},
	} {
		got := residualWarning(residualCheck(c.r, c.se, c.sd, c.sdse), []string{"x"}, "hint") != ""
		if got != c.warn {
			t.Errorf("residual %.2f ± %.3f, sd ratio %.2f ± %.3f: warns %v, want %v", c.r, c.se, c.sd, c.sdse, got, c.warn)
		}
	}
}

// TestResidualDoubt: the residual check on half the draws goes on to all
// of them whenever its mean could warn (every residual residualWarning
// warns of is a doubt: the warning always rests on all the draws), and
// when its standard error exceeds discretisationSureSE; a small residual
// measured closely stops there.
func TestResidualDoubt(t *testing.T) {
	for r := -0.3; r <= 0.3; r += 0.005 {
		for se := 0.0; se <= 0.1; se += 0.0025 {
			dc := residualCheck(r, se, 1, 0)
			if residualWarning(dc, []string{"x"}, "") != "" && !residualDoubt(dc) {
				t.Fatalf("residual %.3f ± %.4f warns on half the draws without a doubt", r, se)
			}
		}
	}
	for _, c := range []struct {
		r, se float64
		doubt bool
	}{
		{0.05, 0.03, false}, {-0.09, 0.049, false}, {0.05, discretisationSureSE, false}, {0.05, 0.06, true}, {0.11, 0.01, true}, {-0.11, 0.01, true},
	} {
		if got := residualDoubt(residualCheck(c.r, c.se, 1, 0)); got != c.doubt {
			t.Errorf("residual %.2f ± %.3f: doubt %v, want %v", c.r, c.se, got, c.doubt)
		}
	}
}

// TestAppliedCurve: the correction applies a curvature b_k only up to
// |b_k| = 0.5 (discretisationMaxCurve), so it changes a posterior sd
// (1/√(1 − b) in z_k) by a factor within [0.82, 1.41], and a tilt's mode
// a/(1 − b) by at most twice the tilt; a larger curvature is dropped (at
// b ≥ 1 the corrected posterior would not even be proper).
func TestAppliedCurve(t *testing.T) {
	for _, b := range []float64{-2, -0.6, -0.5, 0, 0.3, 0.5, 0.51, 0.9, 1.2, discretisationMaxCurve, -discretisationMaxCurve} {
		a := appliedCurve(b)
		keep := math.Abs(b) <= 0.5
		if (a == b) != keep || (!keep && a != 0) {
			t.Errorf("appliedCurve(%g) = %g, want %g", b, a, map[bool]float64{true: b, false: 0}[keep])
		}
		if sd := 1 / math.Sqrt(1-a); sd > math.Sqrt2+1e-12 || sd < 1/math.Sqrt(1.5)-1e-12 {
			t.Errorf("b = %g: sd factor %.3f", b, sd)
		}
		if z := correctedMode([]float64{1}, []float64{b})[0]; z > 2+1e-12 || z < 2.0/3-1e-12 {
			t.Errorf("b = %g: corrected mode %.3f for a unit tilt", b, z)
		}
	}
}

// TestResidualDraws: the residual check weighs discretisationDraws = 24
// of the draws at most (each costs a pass of both scorers over the data:
// GARCH's 12 passes at 256 nodes cost 35 s of the S&P 500 fit), 12 of
// them first, every other one, and the other 12 only on a doubt (more
// draws would narrow the check's standard error). Fewer draws than 24
// are all weighed.
func TestResidualDraws(t *testing.T) {
	for _, c := range []struct{ n, k, half int }{{4000, 24, 12}, {25, 24, 12}, {24, 24, 12}, {23, 23, 12}, {5, 5, 3}} {
		k, half, rest := residualDraws(c.n)
		if k != c.k || len(half) != c.half || len(half)+len(rest) != k || (len(half) > 1 && half[1] != 2) {
			t.Errorf("%d draws: %d weighed, first %v, then %v; want %d, %d first (discretisationDraws %d)", c.n, k, half, rest, c.k, c.half, discretisationDraws)
		}
	}
}
