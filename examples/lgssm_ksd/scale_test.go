package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestTimeTo: the time to accuracy is the first time after the last
// excursion above the level, and nothing when the trace ends above it.
func TestTimeTo(t *testing.T) {
	times := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	errs := []float64{5, 3, 0.4, 0.6, 0.3, 0.2, 0.05, 0.08}
	for _, c := range []struct {
		level, want float64
		ok          bool
	}{{0.5, 5, true}, {0.1, 7, true}, {0.06, 0, false}, {10, 1, true}, {0.6, 3, true}} {
		got, ok := timeTo(times, errs, c.level)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("level %g: got %g, %v; want %g, %v", c.level, got, ok, c.want, c.ok)
		}
	}
	if _, ok := timeTo(times, append(errs[:7:7], math.NaN()), 10); ok {
		t.Error("a NaN last error reaches the level")
	}
	// Crossing: Buffer reaches 0.5 at t = 2, Full at t = 5 (T = 100); at
	// T = 1000 only Full does.
	runs := []*scaleRun{
		{T: 100, Method: "buf", Label: "b", Times: []float64{1, 2, 3}, Err: [][]float64{{1, 0, 0}, {0.4, 0.2, 0}, {0.3, 0.45, 0.1}}},
		{T: 100, Method: "full", Times: []float64{1, 5}, Err: [][]float64{{2, 0, 0}, {0.1, 0.1, 0.1}}},
		{T: 1000, Method: "buf", Times: []float64{1, 2}, Err: [][]float64{{1, 0, 0}, {0.4, 0.7, 0}}},
		{T: 1000, Method: "full", Times: []float64{3}, Err: [][]float64{{0.1, 0.1, 0.1}}},
	}
	got := crossover(runs, []int{100, 1000}, []float64{0.5})
	for _, want := range []string{"T=100: Buffer 2.5x faster", "T=1000: only Full reaches it"} {
		if !strings.Contains(got, want) {
			t.Errorf("crossover lacks %q:\n%s", want, got)
		}
	}
	if !runs[0].better(runs[1], 0.5) || runs[1].better(runs[0], 0.5) || runs[2].better(runs[3], 0.5) {
		t.Error("better disagrees with the times to 0.5 sd")
	}
}

// TestCumTrace: the recorder's running means equal the brute-force mean of
// the draws after the record nearest below half of them, and that record is
// within 2% of the half.
func TestCumTrace(t *testing.T) {
	const n = 5000
	var c cumTrace
	draws := make([][]float64, n)
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range draws {
		draws[k] = []float64{float64(k), rng.NormFloat64(), math.Sin(float64(k))}
		if err := c.Record(&sgmcmc.Draw{Iter: k, U: draws[k], Elapsed: time.Duration(k) * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Done(nil); err != nil {
		t.Fatal(err)
	}
	if c.n[len(c.n)-1] != n || len(c.n) > 500 {
		t.Fatalf("%d records, last at %d draws", len(c.n), c.n[len(c.n)-1])
	}
	ref := &reference{Mean: []float64{0, 0, 0}, SD: []float64{1, 1, 1}}
	times, errs := c.errors(ref)
	for j, m := range c.n {
		h := 0
		for i := range j {
			if c.n[i] <= m/2 {
				h = c.n[i]
			}
		}
		if m >= 100 && float64(m/2-h) > 0.02*float64(m)+1 {
			t.Errorf("record %d (%d draws): lower record at %d", j, m, h)
		}
		for d := range 3 {
			s := 0.0
			for k := h; k < m; k++ {
				s += draws[k][d]
			}
			if want := math.Abs(s / float64(m-h)); math.Abs(errs[j][d]-want) > 1e-9*(1+want) {
				t.Errorf("record %d, coordinate %d: %g, want %g", j, d, errs[j][d], want)
			}
		}
		if want := float64(m-1) / 1000; math.Abs(times[j]-want) > 1e-12 {
			t.Errorf("record %d: time %g, want %g", j, times[j], want)
		}
	}
}

// TestExactReferenceVsMALA checks the Laplace reference at T = 10^4 (the
// study's data) against an exact MALA chain on the Kalman log-posterior and
// score (preconditioned by the Laplace covariance, so its proposal is
// nearly exact): posterior means within 0.05 sd and sds within 5%.
func TestExactReferenceVsMALA(t *testing.T) {
	if testing.Short() {
		t.Skip("12,000 Kalman log-posteriors over 10^4 observations")
	}
	const T, iters = 10000, 12000
	var m models.LGSSM
	u0, _ := m.Params(truth[0], truth[1], truth[2])
	_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	ctx := context.Background()
	ref, err := exactReference(ctx, m, data)
	if err != nil {
		t.Fatal(err)
	}
	est, err := compare.FullGradient(m, data, pf.Settings{}, true)
	if err != nil {
		t.Fatal(err)
	}
	var chol mat.Cholesky
	if !chol.Factorize(ref.Cov) {
		t.Fatal("Laplace covariance not positive definite")
	}
	var L mat.TriDense
	chol.LTo(&L)
	const d = 3
	rng := rand.New(rand.NewPCG(5, 6))
	eval := func(u []float64) (float64, []float64) {
		g := make([]float64, d)
		lp, err := est.Grad(ctx, g, u, rng)
		if err != nil {
			t.Fatal(err)
		}
		return lp, g
	}
	// Proposal u' = u + (h/2) Σ g + √h L ξ; log q(u'|u) up to a constant.
	const h = 1.5
	mean := func(u, g []float64) []float64 {
		var sg mat.VecDense
		sg.MulVec(ref.Cov, mat.NewVecDense(d, g))
		out := make([]float64, d)
		for i := range out {
			out[i] = u[i] + h/2*sg.AtVec(i)
		}
		return out
	}
	logq := func(to, mu []float64) float64 {
		diff := mat.NewVecDense(d, nil)
		for i := range d {
			diff.SetVec(i, to[i]-mu[i])
		}
		var z mat.VecDense
		if err := z.SolveVec(&L, diff); err != nil {
			t.Fatal(err)
		}
		return -mat.Dot(&z, &z) / (2 * h)
	}
	u := append([]float64(nil), ref.Mean...)
	lp, g := eval(u)
	var sum, sum2 [d]float64
	acc := 0
	for range iters {
		mu := mean(u, g)
		xi := mat.NewVecDense(d, []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()})
		var lx mat.VecDense
		lx.MulVec(&L, xi)
		prop := make([]float64, d)
		for i := range prop {
			prop[i] = mu[i] + math.Sqrt(h)*lx.AtVec(i)
		}
		lpp, gp := eval(prop)
		if a := lpp - lp + logq(u, mean(prop, gp)) - logq(prop, mu); math.Log(rng.Float64()) < a {
			u, lp, g = prop, lpp, gp
			acc++
		}
		for i := range d {
			sum[i] += u[i]
			sum2[i] += u[i] * u[i]
		}
	}
	t.Logf("acceptance %d/%d", acc, iters)
	if acc < iters/2 {
		t.Errorf("MALA acceptance %d/%d", acc, iters)
	}
	for i := range d {
		mm := sum[i] / iters
		sd := math.Sqrt(sum2[i]/iters - mm*mm)
		z := (mm - ref.Mean[i]) / ref.SD[i]
		t.Logf("u[%d]: MALA %.5f ± %.5f, Laplace %.5f ± %.5f (z %.3f, sd ratio %.3f)", i, mm, sd, ref.Mean[i], ref.SD[i], z, sd/ref.SD[i])
		if math.Abs(z) > 0.05 || math.Abs(sd/ref.SD[i]-1) > 0.05 {
			t.Errorf("u[%d]: MALA %.5f ± %.5f vs Laplace %.5f ± %.5f", i, mm, sd, ref.Mean[i], ref.SD[i])
		}
	}
	// The mode is where the exact score vanishes.
	_, g0 := eval(ref.Mode)
	if z := math.Sqrt(g0[0]*g0[0]*ref.Cov.At(0, 0) + g0[1]*g0[1]*ref.Cov.At(1, 1) + g0[2]*g0[2]*ref.Cov.At(2, 2)); z > 1e-3 {
		t.Errorf("score at the mode %v (%.2g in sd units)", g0, z)
	}
}

// TestScaleSmall runs the study end to end at a toy size.
func TestScaleSmall(t *testing.T) {
	out := t.TempDir()
	Ts, eps := "1000,2000", "0.1,0.01"
	if testing.Short() {
		Ts, eps = "1000,2000", "0.1"
	}
	text := compare.RunOK(t, run, []string{"-study", "scale", "-T", Ts, "-budget", "0.5s", "-N", "100",
		"-eps", eps, "-methods", "buf,full,bufkf", "-out", out})
	for _, want := range []string{"exact posterior (", "t(0.5 sd)", "Buffer N=inf", "Time to 0.5 sd, Buffer vs Full", "(selected)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	compare.CheckPNG(t, filepath.Join(out, "scale.png"), 300)
	b, err := os.ReadFile(filepath.Join(out, "scale_traces.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1000,buf,", "2000,full,", "2000,bufkf,"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("traces lack %q", want)
		}
	}
	compare.CheckRejects(t, run, [][]string{
		{"-study", "other"},
		{"-study=scale", "-budget", "1s,2s", "-T", "1000"},
		{"-study", "scale", "-methods", "buf,kf"},
		{"-study", "scale", "-T", "50"},
	})
}

// BenchmarkScaleGradient times one gradient of each method at T = 10^4,
// 10^5 and 10^6 (at the data-generating parameters): the cost per iteration
// of the scale study. Full N=1000 at 10^6 takes about a minute.
func BenchmarkScaleGradient(b *testing.B) {
	var m models.LGSSM
	u0, _ := m.Params(truth[0], truth[1], truth[2])
	ctx := context.Background()
	for ti, T := range []int{10_000, 100_000, 1_000_000} {
		_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(1, uint64(ti))))
		if err != nil {
			b.Fatal(err)
		}
		data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
		for _, name := range []string{"buf", "full", "bufkf", "fullkf"} {
			sm := scaleMethods[name]
			e := paper.Estimators{Model: m, Data: data, PF: pf.Settings{N: 1000}, Exact: sm.exact, S: 40, B: 10}
			b.Run(fmt.Sprintf("T=%d/%s", T, name), func(b *testing.B) {
				est, err := e.Method(sm.g, name).New(0)
				if err != nil {
					b.Fatal(err)
				}
				g := make([]float64, 3)
				rng := rand.New(rand.NewPCG(7, 8))
				for b.Loop() {
					if _, err := est.Grad(ctx, g, u0, rng); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
