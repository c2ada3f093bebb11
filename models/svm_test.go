package models_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func TestSVMScore(t *testing.T) { ar1CheckModel(t, models.SVM{}, 2) }

func TestSVMSimulate(t *testing.T) {
	// T = 2·10⁵ takes about 20 ms, so it also runs under -short.
	const phi, sigma, tau, T = 0.95, 0.3, 0.8, 200000
	x, y, err := models.SVM{}.Simulate(T, ar1Params(t, phi, sigma, tau), rand.New(rand.NewPCG(13, 14)))
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != T+1 || y.Len() != T || y.Obs != 1 {
		t.Fatalf("Simulate returned %d states and %d×%d observations", len(x), y.Len(), y.Obs)
	}
	ar1CheckLatent(t, x, phi, sigma)
	v := sigma * sigma / (1 - phi*phi)
	y2 := make([]float64, T)
	for i, yv := range y.Y {
		y2[i] = yv * yv
	}
	// E[y²] = τ² E[e^x] = τ² e^(v/2); E[y⁴] = 3τ⁴ e^(2v); y_t/(τ e^(x_t/2))
	// is standard normal.
	ar1BatchCheck(t, y.Y, []ar1Stat{{"mean(y)", ar1Mean, 0}})
	ar1BatchCheck(t, y2, []ar1Stat{{"E[y²]", ar1Mean, tau * tau * math.Exp(v/2)}})
	z := make([]float64, T)
	for i, yv := range y.Y {
		z[i] = yv / (tau * math.Exp(x[i+1]/2))
	}
	ar1BatchCheck(t, z, []ar1Stat{{"var(y/(τe^(x/2)))", ar1Var, 1}, {"lag-1 corr of standardised y", ar1Lag1, 0}})
}

func TestSVMDensities(t *testing.T) {
	const phi, sigma, tau = 0.9, 0.5, 0.7
	k, err := models.SVM{}.Bind(ar1Params(t, phi, sigma, tau))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.(ssm.Proposer); ok {
		t.Error("SVM kernel claims a guided proposal")
	}
	v0 := sigma * sigma / (1 - phi*phi)
	xs := []float64{-3, -0.5, 0, 1.2, 4}
	for _, x := range xs {
		if got, want := k.LogInitial([]float64{x}), (distuv.Normal{Mu: 0, Sigma: math.Sqrt(v0)}).LogProb(x); math.Abs(got-want) > 1e-13 {
			t.Errorf("LogInitial(%v) = %v, want %v", x, got, want)
		}
	}
	dst := make([]float64, len(xs))
	k.LogTransitions(dst, []float64{0.3}, xs)
	maxT := k.(ssm.TransitionBounder).MaxLogTransition()
	for j, p := range xs {
		if want := (distuv.Normal{Mu: phi * p, Sigma: sigma}).LogProb(0.3); math.Abs(dst[j]-want) > 1e-13 {
			t.Errorf("LogTransitions[%d] = %v, want %v", j, dst[j], want)
		}
		if dst[j] > maxT {
			t.Errorf("log transition %v exceeds MaxLogTransition %v", dst[j], maxT)
		}
	}
	for _, y := range []float64{-1.1, 0, 0.05} {
		logw := []float64{1, 2, 3, 4, 5}
		k.AddLogEmission(logw, []float64{y}, xs)
		for i, x := range xs {
			want := float64(i+1) + (distuv.Normal{Mu: 0, Sigma: tau * math.Exp(x/2)}).LogProb(y)
			if math.Abs(logw[i]-want) > 1e-12 {
				t.Errorf("y = %v: AddLogEmission[%d] = %v, want %v", y, i, logw[i], want)
			}
		}
	}
	logw := []float64{1}
	k.AddLogEmission(logw, []float64{math.NaN()}, xs[:1])
	h := make([]float64, 3)
	k.AddScore(h, 1, []float64{math.NaN()}, []float64{0.4}, []float64{0.1})
	if logw[0] != 1 || h[2] != 0 {
		t.Errorf("missing y: log-weight %v (want 1), τ score %v (want 0)", logw[0], h[2])
	}
	// Far-negative volatility with y = 0 stays finite (no 0·Inf).
	logw[0] = 0
	k.AddLogEmission(logw, []float64{0}, []float64{-800})
	h[2] = 0
	k.AddScore(h, 1, []float64{0}, []float64{-800}, []float64{0})
	if math.IsNaN(logw[0]) || math.IsNaN(h[2]) {
		t.Errorf("y = 0, x = −800: log-weight %v, τ score %v", logw[0], h[2])
	}
}

// BenchmarkSVMKernel times the bulk methods on N = 1000 particles, and a
// 60-step bootstrap pass (transition, weight, score; resampling is the
// filter's business) that must stay well under 2 ms.
func BenchmarkSVMKernel(b *testing.B) {
	const n = 1000
	k, err := models.SVM{}.Bind([]float64{1.8, -1.2, -0.4})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x, prev, logw, dst := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	h := make([]float64, 3*n)
	k.SampleInitial(prev, rng)
	k.SampleTransition(x, prev, rng)
	y := []float64{0.3}
	b.Run("SampleTransition", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.SampleTransition(x, prev, rng)
		}
	})
	b.Run("AddLogEmission", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.AddLogEmission(logw, y, x)
		}
	})
	b.Run("AddScore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.AddScore(h, 1, y, x, prev)
		}
	})
	b.Run("LogTransitions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.LogTransitions(dst, x[:1], prev)
		}
	})
	b.Run("Bootstrap60", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.SampleInitial(prev, rng)
			for t := 0; t < 60; t++ {
				k.SampleTransition(x, prev, rng)
				k.AddLogEmission(logw, y, x)
				k.AddScore(h, 1, y, x, prev)
				x, prev = prev, x
			}
		}
	})
}
