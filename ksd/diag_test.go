package ksd

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ar1 returns m stationary AR(1) chains x_t = ρ x_{t−1} + √(1−ρ²) ε_t, x_0 ~ N(mu_c, 1)
// shifted by mu[c] (0 when mu is nil) and scaled by sd[c] (1 when sd is nil).
func ar1(rng *rand.Rand, m, n int, rho float64, mu, sd []float64) [][]float64 {
	out := make([][]float64, m)
	e := math.Sqrt(1 - rho*rho)
	for c := range out {
		out[c] = make([]float64, n)
		x := rng.NormFloat64()
		for t := range n {
			if t > 0 {
				x = rho*x + e*rng.NormFloat64()
			}
			v := x
			if sd != nil {
				v *= sd[c]
			}
			if mu != nil {
				v += mu[c]
			}
			out[c][t] = v
		}
	}
	return out
}

func TestAutocovFFTvsDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 1))
	for _, n := range []int{64, 100, 257} {
		x := ar1(rng, 1, n, 0.7, nil, nil)[0]
		fft := newAutocov(n)
		direct := &autocov{n: n, out: make([]float64, n)}
		m1, m2 := fft.compute(x), direct.compute(x)
		if m1 != m2 {
			t.Errorf("n=%d: means differ %v %v", n, m1, m2)
		}
		for lag := range n {
			if d := math.Abs(fft.out[lag] - direct.out[lag]); d > 1e-12 {
				t.Errorf("n=%d lag %d: FFT %v, direct %v", n, lag, fft.out[lag], direct.out[lag])
			}
		}
	}
}

func TestESSAR1(t *testing.T) {
	// For a stationary AR(1), the integrated autocorrelation time is (1+ρ)/(1−ρ),
	// so ESS = m n (1−ρ)/(1+ρ). The tolerance is 4 standard errors of the mean
	// over replications, plus 3% for the estimator's finite-n bias (truncation
	// of the autocorrelation sum).
	const m, n = 4, 10000
	reps := 20
	if testing.Short() {
		reps = 5
	}
	for _, rho := range []float64{0, 0.5, 0.9} {
		rng := rand.New(rand.NewPCG(11, uint64(rho*10)))
		truth := float64(m*n) * (1 - rho) / (1 + rho)
		ratio := make([]float64, reps)
		mcse := make([]float64, reps)
		for r := range ratio {
			ch := ar1(rng, m, n, rho, nil, nil)
			ratio[r] = ESS(ch) / truth
			// MCSE of the mean of unit-variance draws: √(1/ESS_true).
			mcse[r] = MCSE(ch) / math.Sqrt(1/truth)
		}
		mean, se := meanSE(ratio)
		tol := 4*se + 0.03
		t.Logf("rho=%.1f: ESS/truth = %.4f ± %.4f (truth %.0f), tolerance %.3f", rho, mean, se, truth, tol)
		if math.Abs(mean-1) > tol {
			t.Errorf("rho=%v: mean ESS/truth = %v, want 1 within %v", rho, mean, tol)
		}
		mm, ms := meanSE(mcse)
		// MCSE ∝ ESS^(−1/2) and the pooled sd: half the relative error, plus sd noise.
		if tol := 4*ms + 0.02; math.Abs(mm-1) > tol {
			t.Errorf("rho=%v: mean MCSE/truth = %v, want 1 within %v", rho, mm, tol)
		}
		t.Logf("rho=%.1f: MCSE/truth = %.4f ± %.4f", rho, mm, ms)
	}
}

func TestBulkESSIID(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 1))
	const m, n, reps = 4, 2000, 10
	ratio := make([]float64, reps)
	for r := range ratio {
		// A heavy-tailed target: rank normalisation makes ESS insensitive to it.
		ch := ar1(rng, m, n, 0, nil, nil)
		for _, c := range ch {
			for i, v := range c {
				c[i] = v * v * v
			}
		}
		ratio[r] = BulkESS(ch) / (m * n)
	}
	mean, se := meanSE(ratio)
	t.Logf("iid cubed normals: BulkESS/(mn) = %.4f ± %.4f", mean, se)
	if tol := 4*se + 0.03; math.Abs(mean-1) > tol {
		t.Errorf("BulkESS/(mn) = %v, want 1 within %v", mean, tol)
	}
}

func TestRhat(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 1))
	const m, n = 4, 10000
	iid := ar1(rng, m, n, 0, nil, nil)
	// R-hat can fall below 1 by chance: B/W fluctuates around 1 and R̂² − 1 ≈ (B/W − 1)/n.
	for name, f := range map[string]func([][]float64) float64{"SplitRhat": SplitRhat, "RankRhat": RankRhat} {
		if r := f(iid); !(r > 0.995 && r < 1.01) {
			t.Errorf("%s of 4 iid chains = %v, want within [0.995, 1.01]", name, r)
		} else {
			t.Logf("%s(iid) = %.5f", name, r)
		}
	}

	// One chain shifted by 3 sd: the split-chain means are (0,0,0,0,0,0,3,3),
	// whose sample variance is B/n = 9·1.5/7 ≈ 1.93; with W ≈ 1,
	// R̂ ≈ √((n_h−1)/n_h + 1.93) ≈ 1.71 (n_h = n/2 draws per half).
	shifted := ar1(rng, m, n, 0, []float64{0, 0, 0, 3}, nil)
	want := math.Sqrt(((n/2-1)/(n/2.0))*1 + 9*1.5/7)
	for name, f := range map[string]func([][]float64) float64{"SplitRhat": SplitRhat} {
		r := f(shifted)
		t.Logf("%s(shifted) = %.4f (approx %.4f)", name, r, want)
		if r < 1.1 || math.Abs(r-want) > 0.05 {
			t.Errorf("%s of shifted chains = %v, want ≈ %v and > 1.1", name, r, want)
		}
	}
	if r := RankRhat(shifted); r < 1.1 {
		t.Errorf("RankRhat of shifted chains = %v, want > 1.1", r)
	}

	// One chain with 3 times the scale: the means agree, so the classic R-hat
	// barely moves, but the folded (tail) R-hat sees it.
	scaled := ar1(rng, m, n, 0, nil, []float64{1, 1, 1, 3})
	sr, rr := SplitRhat(scaled), RankRhat(scaled)
	t.Logf("scale-different chains: SplitRhat = %.4f, RankRhat = %.4f", sr, rr)
	if sr > 1.01 || rr < 1.05 {
		t.Errorf("scale-different chains: SplitRhat = %v (want < 1.01), RankRhat = %v (want > 1.05)", sr, rr)
	}

	// A trend inside each chain: split R-hat catches it with a single chain.
	trend := [][]float64{make([]float64, 1000)}
	for i := range trend[0] {
		trend[0][i] = float64(i)/500 + 0.1*rng.NormFloat64()
	}
	if r := SplitRhat(trend); r < 1.5 {
		t.Errorf("single trending chain: SplitRhat = %v, want > 1.5", r)
	}
}

func TestDiagNaN(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 1))
	fs := map[string]func([][]float64) float64{
		"ESS": ESS, "BulkESS": BulkESS, "MCSE": MCSE, "SplitRhat": SplitRhat, "RankRhat": RankRhat,
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		ch := ar1(rng, 3, 100, 0.5, nil, nil)
		ch[2][57] = bad
		for name, f := range fs {
			if v := f(ch); !math.IsNaN(v) {
				t.Errorf("%s with a %v draw = %v, want NaN", name, bad, v)
			}
		}
	}
	for name, f := range fs {
		if v := f(nil); !math.IsNaN(v) {
			t.Errorf("%s(no chains) = %v, want NaN", name, v)
		}
		if v := f([][]float64{{1, 2, 3}, {3, 2, 1}}); !math.IsNaN(v) {
			t.Errorf("%s(3 draws) = %v, want NaN", name, v)
		}
	}
	constant := [][]float64{{2, 2, 2, 2, 2, 2, 2, 2}, {2, 2, 2, 2, 2, 2, 2, 2}}
	if v := ESS(constant); v != 0 {
		t.Errorf("ESS(constant) = %v, want 0", v)
	}
	if v := BulkESS(constant); v != 0 {
		t.Errorf("BulkESS(constant) = %v, want 0", v)
	}
	if v := MCSE(constant); v != 0 {
		t.Errorf("MCSE(constant) = %v, want 0", v)
	}
	if v := SplitRhat(constant); !math.IsNaN(v) {
		t.Errorf("SplitRhat(constant) = %v, want NaN", v)
	}
	if v := RankRhat(constant); !math.IsNaN(v) {
		t.Errorf("RankRhat(constant) = %v, want NaN", v)
	}
	stuck := [][]float64{{1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2}}
	if v := SplitRhat(stuck); !math.IsInf(v, 1) {
		t.Errorf("SplitRhat(stuck at different values) = %v, want +Inf", v)
	}
	if v := ESS(stuck); !(v >= 0 && v < 12) {
		t.Errorf("ESS(stuck at different values) = %v, want small", v)
	}
	defer func() {
		if recover() == nil {
			t.Error("unequal chain lengths did not panic")
		}
	}()
	ESS([][]float64{{1, 2, 3, 4}, {1, 2, 3}})
}

func TestESSShortDirect(t *testing.T) {
	// Short chains use the direct autocovariance; an alternating chain is
	// antithetic, ESS above m n, limited by the floor τ ≥ 1/log10(m n).
	ch := [][]float64{make([]float64, 40), make([]float64, 40)}
	for c := range ch {
		for i := range ch[c] {
			ch[c][i] = float64(1 - 2*(i%2))
		}
	}
	ch[1][0] = 0.5 // not constant in the pooled sense, chain means differ slightly
	v := ESS(ch)
	if want := 80 * math.Log10(80); math.Abs(v-want) > 1e-9*want {
		t.Errorf("ESS(alternating) = %v, want the floor m n log10(m n) = %v", v, want)
	}
}

func BenchmarkESS(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ch := ar1(rng, 4, 10000, 0.9, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		ESS(ch)
	}
}

func BenchmarkRankRhat(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	ch := ar1(rng, 4, 10000, 0.9, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		RankRhat(ch)
	}
}
