package models

import (
	"math"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestGARCHQuadNodes compares the quadrature filter with the σ² node
// filter at 512 nodes (within about 10⁻³ nats of converged on these
// returns: 64 nodes are within 0.04 of 256) on the DAX returns with four
// gaps: the log-likelihood of the whole series at gxU0 and one sd away
// along λ's axis, at 7, 10 and 14 points (the coarser level, the default
// and RefinedLogLik's), and the seeded score of a buffered window.
func TestGARCHQuadNodes(t *testing.T) {
	skipShort(t)
	seq := gxDAX(t, 1<<30)
	seq.Y = append([]float64(nil), seq.Y...)
	for _, i := range []int{3, 500, 501, 1200} {
		seq.Y[i] = math.NaN()
	}
	T := seq.Len()
	full := ssm.Window{Start: 0, End: T, KeepStart: 0, KeepEnd: T}
	// Measured: 7 points −0.31 and −0.24, 10 points −0.125 and −0.115,
	// 14 points 0.0002 and −0.0003 (τ's axis, not run here: −0.25,
	// −0.084, 0.0000).
	tols := map[int]float64{7: 0.5, 10: 0.2, 14: 0.01}
	var first [15]float64
	for a, k := range []int{-1, 2} {
		u := append([]float64(nil), gxU0[:]...)
		if k >= 0 {
			u[k] += gxU0SD[k]
		}
		ln, err := garchExactScore(nil, u, seq, full, 512)
		if err != nil {
			t.Fatal(err)
		}
		for _, K := range []int{7, 10, 14} {
			lq, err := garchQuadScore(nil, u, seq, full, K, garchQuadJ(K))
			if err != nil {
				t.Fatal(err)
			}
			d := lq - ln
			t.Logf("axis %d, %d points: quadrature − nodes(512) = %.4f", k, K, d)
			if math.Abs(d) > tols[K] {
				t.Errorf("axis %d, %d points: off by %.4f nats (at most %g)", k, K, d, tols[K])
			}
			// What moves the posterior is how the error varies with u.
			if a == 0 {
				first[K] = d
			} else if v := math.Abs(d - first[K]); v > tols[K]/3 {
				t.Errorf("axis %d, %d points: the error varies by %.4f from the mode's (at most %g)", k, K, v, tols[K]/3)
			}
		}
	}
	w := ssm.Window{Start: 400, End: 700, KeepStart: 480, KeepEnd: 620}
	gn, gq := make([]float64, 4), make([]float64, 4)
	if _, err := garchExactScore(gn, gxU0[:], seq, w, 512); err != nil {
		t.Fatal(err)
	}
	if _, err := garchQuadScore(gq, gxU0[:], seq, w, 10, garchQuadJ(10)); err != nil {
		t.Fatal(err)
	}
	for i := range gn {
		t.Logf("window score [%d]: nodes(512) %.6f, quadrature %.6f", i, gn[i], gq[i])
		if math.Abs(gq[i]-gn[i]) > 1e-3*(1+math.Abs(gn[i])) {
			t.Errorf("window score [%d] = %.6f, nodes(512) %.6f", i, gq[i], gn[i])
		}
	}
}

// TestGARCHQuadDerivative: on a full window with missing values the score
// is the derivative of the log-likelihood (extrapolated central
// differences of ExactScore's value), and the log-likelihood is smooth: second
// differences at steps of 10⁻³ are of order h² ℓ” without jumps.
func TestGARCHQuadDerivative(t *testing.T) {
	seq := gxDAX(t, 600)
	// Missing values: the first (the start's atoms meet no emission) and
	// a run of two.
	seq.Y = append([]float64(nil), seq.Y...)
	seq.Y[0], seq.Y[300], seq.Y[301] = math.NaN(), math.NaN(), math.NaN()
	T := seq.Len()
	w := ssm.Window{Start: 0, End: T, KeepStart: 0, KeepEnd: T}
	u := gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3])
	// The smallest and largest rules (3 points: fewer than the start's
	// 4 distinct atoms, so they are compressed; 24: kept) on the first
	// 200 rows, and the default rule below.
	for _, K := range []int{3, 24} {
		short := w
		short.End, short.KeepEnd = 200, 200
		garchScoreMatchesFD(t, GARCH{Points: K}, u, seq, short)
	}
	m := GARCH{}
	ll := garchScoreMatchesFD(t, m, u, seq, w)
	for i := range u {
		// Second differences along the axis over 11 steps of 10⁻³: smooth
		// means they change little from one step to the next.
		var d2 [11]float64
		for k := range d2 {
			at := func(s float64) float64 {
				v := append([]float64(nil), u...)
				v[i] += s
				return ll(v)
			}
			x := float64(k-5) * 1e-3
			d2[k] = at(x+1e-3) - 2*at(x) + at(x-1e-3)
		}
		for k := 1; k < len(d2); k++ {
			if math.Abs(d2[k]-d2[k-1]) > 1e-6+0.05*math.Abs(d2[k]) {
				t.Errorf("axis %d: second differences jump from %.3g to %.3g", i, d2[k-1], d2[k])
			}
		}
	}
}

// garchScoreMatchesFD checks m's score at u on window w against central
// differences of its log-likelihood at h and h/2, extrapolated
// (Richardson): their error is O(h⁴), about 10⁻¹⁰ here, and the
// forward-mode score is exact, so they agree far below the 10⁻⁶ that a
// mistake in one step's tangent makes (a wrong first step was off by
// 3·10⁻⁴). It returns the log-likelihood as a function of u.
func garchScoreMatchesFD(t *testing.T, m GARCH, u []float64, seq ssm.Sequence, w ssm.Window) func([]float64) float64 {
	t.Helper()
	g := make([]float64, 4)
	if _, err := m.ExactScore(g, u, seq, w); err != nil {
		t.Fatal(err)
	}
	ll := func(v []float64) float64 {
		l, err := m.ExactScore(nil, v, seq, w)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for i := range u {
		cd := func(h float64) float64 {
			up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
			up[i] += h
			dn[i] -= h
			return (ll(up) - ll(dn)) / (2 * h)
		}
		a, b := cd(5e-4), cd(2.5e-4)
		fd := (4*b - a) / 3
		if math.Abs(fd-g[i]) > 1e-8*(1+math.Abs(fd)) {
			t.Errorf("%d points: score[%d] = %.10g, extrapolated central difference %.10g", m.Points, i, g[i], fd)
		}
	}
	return ll
}

// BenchmarkGARCHQuad is one log-likelihood pass over the S&P 500 returns
// (T = 17,055) near their posterior mean, at the coarser level, the
// default and RefinedLogLik's rule, and one score at the default.
func BenchmarkGARCHQuad(b *testing.B) {
	seq, err := ssm.ReadCSVFile("../testdata/sp500_returns.csv")
	if err != nil {
		b.Fatal(err)
	}
	w := ssm.Full(seq.Len())
	u, err := GARCH{}.Params(1.6218, 0.99822, 0.14125, 0.43256)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		k    int
		grad []float64
	}{{"loglik-7", 7, nil}, {"loglik-10", 10, nil}, {"loglik-14", 14, nil}, {"score-10", 10, make([]float64, 4)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := garchQuadScore(c.grad, u, seq, w, c.k, garchQuadJ(c.k)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGARCHPointsRange: Points beyond the range whose score is exact, or
// below 3, is an error naming the field; Refine, values only, goes to 32.
func TestGARCHPointsRange(t *testing.T) {
	seq := gxDAX(t, 50)
	u := gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3])
	w := ssm.Full(seq.Len())
	for _, k := range []int{2, garchMaxPoints + 1} {
		_, err := GARCH{Points: k}.ExactScore(make([]float64, 4), u, seq, w)
		if err == nil || !strings.Contains(err.Error(), "GARCH.Points") {
			t.Errorf("Points %d: error %v, want one naming GARCH.Points", k, err)
		}
	}
	if _, err := (GARCH{Points: garchMaxPoints}).ExactScore(make([]float64, 4), u, seq, w); err != nil {
		t.Errorf("Points %d: %v", garchMaxPoints, err)
	}
	if _, err := (GARCH{Refine: 32}).RefinedLogLik(u, seq, w); err != nil {
		t.Errorf("Refine 32: %v", err)
	}
}
