package pf_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

var schemes = []pf.Resampling{pf.Systematic, pf.Stratified, pf.Multinomial, pf.Residual}

// TestResampleUnbiased checks E[count_i] = M w_i for every scheme, with the
// mean over R replications within 4 standard errors estimated from the
// replications; components whose count never varies must equal M w_i
// exactly. It also checks the structural guarantees: systematic counts are
// floor or ceil of M w_i, residual counts are at least floor(M w_i), and a
// zero weight is never drawn.
func TestResampleUnbiased(t *testing.T) {
	weightSets := [][]float64{
		{0.05, 0.3, 0, 0.15, 0.1, 0.25, 0.125, 0.025}, // normalised, one zero
		{1, 2, 3, 4, 0, 0, 7, 0.5},                    // unnormalised
		{0.5, 0.5},                                    // M w_i integers: counts deterministic for systematic/residual
		{1e-12, 1, 1e-12},
	}
	const R = 20000
	rng := rand.New(rand.NewPCG(1, 2))
	for _, scheme := range schemes {
		for _, w := range weightSets {
			for _, m := range []int{len(w), 13} {
				total := 0.0
				for _, v := range w {
					total += v
				}
				dst := make([]int, m)
				sum := make([]float64, len(w))
				sum2 := make([]float64, len(w))
				count := make([]float64, len(w))
				for r := 0; r < R; r++ {
					clear(count)
					pf.Resample(dst, w, scheme, rng)
					for _, a := range dst {
						count[a]++
					}
					for i, c := range count {
						e := float64(m) * w[i] / total
						if w[i] == 0 && c != 0 {
							t.Fatalf("%v: zero weight %d drawn", scheme, i)
						}
						switch scheme {
						case pf.Systematic:
							if c != math.Floor(e) && c != math.Ceil(e) {
								t.Fatalf("%v M=%d w=%v: count %v of particle %d not floor/ceil of %v", scheme, m, w, c, i, e)
							}
						case pf.Residual:
							if c < math.Floor(e) {
								t.Fatalf("%v M=%d: count %v of particle %d below floor(%v)", scheme, m, c, i, e)
							}
						}
						sum[i] += c
						sum2[i] += c * c
					}
				}
				for i := range w {
					e := float64(m) * w[i] / total
					mean := sum[i] / R
					v := (sum2[i]/R - mean*mean) * R / (R - 1)
					se := math.Sqrt(math.Max(v, 0) / R)
					if se == 0 {
						if mean != e && math.Abs(mean-e) > 1e-9 {
							t.Errorf("%v M=%d w=%v: deterministic count %v of %d, want %v", scheme, m, w, mean, i, e)
						}
						continue
					}
					if math.Abs(mean-e) > 4*se {
						t.Errorf("%v M=%d w=%v: mean count of %d = %v, want %v (SE %.3g, z = %.2f)", scheme, m, w, i, mean, e, se, (mean-e)/se)
					}
				}
			}
		}
	}
}

// TestResampleSingle checks the degenerate sizes: one particle, one draw.
func TestResampleSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, scheme := range schemes {
		dst := []int{-1}
		pf.Resample(dst, []float64{2}, scheme, rng)
		if dst[0] != 0 {
			t.Errorf("%v: one particle gave ancestor %d", scheme, dst[0])
		}
		dst = make([]int, 5)
		pf.Resample(dst, []float64{0, 0, 3, 0}, scheme, rng)
		for _, a := range dst {
			if a != 2 {
				t.Errorf("%v: all mass on 2 gave ancestor %d", scheme, a)
			}
		}
	}
}

func TestResamplePanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cases := map[string]func(){
		"empty dst":     func() { pf.Resample(nil, []float64{1}, pf.Systematic, rng) },
		"empty weights": func() { pf.Resample(make([]int, 2), nil, pf.Systematic, rng) },
		"zero sum":      func() { pf.Resample(make([]int, 2), []float64{0, 0}, pf.Systematic, rng) },
		"negative":      func() { pf.Resample(make([]int, 2), []float64{1, -1}, pf.Systematic, rng) },
		"NaN":           func() { pf.Resample(make([]int, 2), []float64{1, math.NaN()}, pf.Systematic, rng) },
		"scheme":        func() { pf.Resample(make([]int, 2), []float64{1, 1}, pf.Resampling(9), rng) },
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// TestESS checks ESS against the direct formula (Σw)²/Σw².
func TestESS(t *testing.T) {
	w := []float64{0.1, 2, 0.5, 0, 3}
	lw := make([]float64, len(w))
	s, s2 := 0.0, 0.0
	for i, v := range w {
		lw[i] = math.Log(v) - 700 // shifted far down: needs the max trick
		s += v
		s2 += v * v
	}
	if got, want := pf.ESS(lw), s*s/s2; math.Abs(got-want) > 1e-12*want {
		t.Errorf("ESS = %v, want %v", got, want)
	}
	if got := pf.ESS([]float64{math.Inf(-1), math.NaN()}); got != 0 {
		t.Errorf("ESS of zero weights = %v, want 0", got)
	}
	if got := pf.ESS([]float64{1, 1, 1, math.NaN()}); math.Abs(got-3) > 1e-12 {
		t.Errorf("ESS of equal weights with a NaN = %v, want 3", got)
	}
	if got := pf.ESS([]float64{math.Inf(1), 0, math.Inf(1)}); got != 2 {
		t.Errorf("ESS with two +Inf = %v, want 2", got)
	}
}
