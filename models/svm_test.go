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

// The guided SVM proposal: q integrates to 1, the fused weight equals
// log p(y|x) + log p(x|prev) − log q(x|prev, y) at every draw, draws follow
// q's mean and variance, and the weight's mean e^w over draws estimates
// p(y|prev) (computed by quadrature) within 4 SE. A missing y gives the
// transition with weight 0.
func TestSVMGuidedProposal(t *testing.T) {
	const phi, sigma, tau = 0.95, 0.3, 0.8
	m := models.SVM{Guided: true}
	k, err := m.Bind(ar1Params(t, phi, sigma, tau))
	if err != nil {
		t.Fatal(err)
	}
	prop, ok := k.(ssm.Proposer)
	if !ok {
		t.Fatal("guided SVM kernel is not an ssm.Proposer")
	}
	if b, err := (models.SVM{}).Bind(ar1Params(t, phi, sigma, tau)); err != nil {
		t.Fatal(err)
	} else if _, isProp := b.(ssm.Proposer); isProp {
		t.Error("the default SVM kernel must stay a bootstrap (no ssm.Proposer)")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range []struct{ prev, y float64 }{{0, 0.5}, {1.2, -3}, {0.5, 9.7}, {0.5, 0}, {0.3, math.NaN()}} {
		prev, y := []float64{c.prev}, []float64{c.y}
		xbar := phi * c.prev
		lo, hi := xbar-20*sigma, xbar+20*sigma
		qf := func(x float64) float64 { return math.Exp(prop.LogProposal([]float64{x}, prev, y)) }
		if z := ar1Integrate(qf, lo-10, hi+10, 40); math.Abs(z-1) > 1e-10 {
			t.Errorf("prev %v, y %v: LogProposal integrates to %.15f", c.prev, c.y, z)
		}
		const n = 200000
		xs, logw, prevs := make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range prevs {
			prevs[i] = c.prev
		}
		prop.Propose(xs, logw, prevs, y, rng)
		for i := 0; i < 20; i++ {
			xi := xs[i : i+1]
			lt := make([]float64, 1)
			k.LogTransitions(lt, xi, prev)
			le := []float64{0}
			k.AddLogEmission(le, y, xi)
			if d := le[0] + lt[0] - prop.LogProposal(xi, prev, y) - logw[i]; math.Abs(d) > 1e-9 {
				t.Fatalf("prev %v, y %v: weight differs from p·p/q at draw %d by %.3g", c.prev, c.y, i, d)
			}
		}
		// Different previous states across several batches of the
		// proposal's inner loop: every weight is still exact.
		const nv = 700
		vx, vw, vp := make([]float64, nv), make([]float64, nv), make([]float64, nv)
		for i := range vp {
			vp[i] = c.prev + math.Sin(float64(i))
		}
		prop.Propose(vx, vw, vp, y, rng)
		for i := range vx {
			xi, pi := vx[i:i+1], vp[i:i+1]
			lt := make([]float64, 1)
			k.LogTransitions(lt, xi, pi)
			le := []float64{0}
			k.AddLogEmission(le, y, xi)
			if d := le[0] + lt[0] - prop.LogProposal(xi, pi, y) - vw[i]; math.Abs(d) > 1e-9 {
				t.Fatalf("prev %v, y %v: weight differs from p·p/q at varied-prev draw %d by %.3g", vp[i], c.y, i, d)
			}
		}
		if math.IsNaN(c.y) {
			if logw[0] != 0 {
				t.Errorf("missing y: weight %v, want 0", logw[0])
			}
			continue
		}
		// E_q[e^w] = p(y|prev) = ∫ p(y|x) p(x|prev) dx.
		joint := func(x float64) float64 {
			return (distuv.Normal{Mu: 0, Sigma: tau * math.Exp(x/2)}).Prob(c.y) * (distuv.Normal{Mu: xbar, Sigma: sigma}).Prob(x)
		}
		want := ar1Integrate(joint, lo, hi, 40)
		ws := make([]float64, n)
		for i, v := range logw {
			ws[i] = math.Exp(v)
		}
		mean, se := ar1Mean(ws), math.Sqrt(ar1Var(ws)/n)
		// 1e-9 relative covers the quadrature (y = 0 makes q exact, se 0).
		if math.Abs(mean-want) > 4*se+1e-9*want {
			t.Errorf("prev %v, y %v: E[e^w] = %.6g ± %.2g, quadrature p(y|prev) = %.6g", c.prev, c.y, mean, se, want)
		}
		// Guidance pays off: the relative sd of the weights is below the
		// bootstrap's on the extreme observation.
		if c.y == 9.7 {
			bx, bw := make([]float64, n), make([]float64, n)
			k.SampleTransition(bx, prevs, rng)
			k.AddLogEmission(bw, y, bx)
			for i, v := range bw {
				bw[i] = math.Exp(v)
			}
			if g, b := math.Sqrt(ar1Var(ws))/mean, math.Sqrt(ar1Var(bw))/ar1Mean(bw); !(g < b/2) {
				t.Errorf("y = 9.7: relative weight sd guided %.3g, bootstrap %.3g", g, b)
			}
		}
	}
}
