package states

import (
	"math"
	"testing"
)

// TestMixtureSummary: one Gaussian's band is its mean, sd and quantiles
// m + z_p·s; a symmetric mixture has its median at the centre and
// symmetric quantiles.
func TestMixtureSummary(t *testing.T) {
	b := newBand(2)
	mixtureSummary(&b, 0, []float64{1, 4})
	want := []float64{1, 2, 1 - 1.6448536269514722*2, 1, 1 + 1.6448536269514722*2}
	for f, got := range []float64{b.Mean[0], b.SD[0], b.Q05[0], b.Q50[0], b.Q95[0]} {
		if math.Abs(got-want[f]) > 1e-9 {
			t.Errorf("field %d: %v, want %v", f, got, want[f])
		}
	}
	mixtureSummary(&b, 1, []float64{-1, 1, 1, 1})
	if math.Abs(b.Mean[1]) > 1e-12 || math.Abs(b.SD[1]-math.Sqrt2) > 1e-12 || math.Abs(b.Q50[1]) > 1e-9 || math.Abs(b.Q05[1]+b.Q95[1]) > 1e-9 {
		t.Errorf("two components: mean %v, sd %v, quantiles %v, %v, %v", b.Mean[1], b.SD[1], b.Q05[1], b.Q50[1], b.Q95[1])
	}
}

// TestSampleSummary: mean, sd with divisor n−1 and type-7 quantiles of
// 0..4 (in any order).
func TestSampleSummary(t *testing.T) {
	b := newBand(1)
	sampleSummary(&b, 0, []float32{3, 0, 4, 1, 2})
	want := []float64{2, math.Sqrt(2.5), 0.2, 2, 3.8}
	for f, got := range []float64{b.Mean[0], b.SD[0], b.Q05[0], b.Q50[0], b.Q95[0]} {
		if math.Abs(got-want[f]) > 1e-12 {
			t.Errorf("field %d: %v, want %v", f, got, want[f])
		}
	}
}

// TestLogMeanExp: against the direct sums where they do not overflow,
// and finite far beyond where they do.
func TestLogMeanExp(t *testing.T) {
	l := []float64{-1, 0.5, 2}
	s1, s2 := 0.0, 0.0
	for _, v := range l {
		s1 += math.Exp(v)
		s2 += math.Exp(2 * v)
	}
	mean := s1 / 3
	se := math.Sqrt((s2-3*mean*mean)/2/3) / mean
	lme, gse, ess := LogMeanExp(l)
	if math.Abs(lme-math.Log(mean)) > 1e-12 || math.Abs(gse-se) > 1e-12 || math.Abs(ess-s1*s1/s2) > 1e-12 {
		t.Errorf("LogMeanExp = %v, %v, %v; want %v, %v, %v", lme, gse, ess, math.Log(mean), se, s1*s1/s2)
	}
	if lme, _, ess := LogMeanExp([]float64{-2000, -2000}); math.Abs(lme+2000) > 1e-9 || ess != 2 {
		t.Errorf("underflowing terms: %v, ESS %v", lme, ess)
	}
}
