package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"gonum.org/v1/gonum/mat"
)

// TestPrecondStationary checks Precond on a correlated 2-D Gaussian target
// whose gradient carries N(0, 3²I) noise. With L = chol(Σ) and W = Lᵀ V L
// the chain z ← (1−h)z + hLᵀξ + ζ has stationary covariance exactly Σ (the
// discrete Lyapunov equation); plain preconditioned SGLD (W = nil) has
// Σ·(1 + h·w)/(1 − h/2)-type inflation, which the test also sees, so the
// correction is what makes the first pass.
func TestPrecondStationary(t *testing.T) {
	sigma := mat.NewSymDense(2, []float64{1, 0.8, 0.8, 2})
	var ch mat.Cholesky
	ch.Factorize(sigma)
	var lt mat.TriDense
	ch.LTo(&lt)
	l := []float64{lt.At(0, 0), 0, lt.At(1, 0), lt.At(1, 1)}
	var prec mat.SymDense
	ch.InverseTo(&prec)
	p := []float64{prec.At(0, 0), prec.At(0, 1), prec.At(1, 0), prec.At(1, 1)}
	const noise = 3.0
	// W = Lᵀ (noise² I) L.
	w := make([]float64, 4)
	for i := range 2 {
		for j := range 2 {
			for k := range 2 {
				w[i*2+j] += noise * noise * l[k*2+i] * l[k*2+j]
			}
		}
	}
	lam := linalg.MaxEigen(w, 2)
	h := 1 / (1 + lam)
	run := func(m *Precond) (v0, v1, se0, se1 float64) {
		g := &gauss{Mu: []float64{1, -1}, P: p, Noise: noise}
		smp := NewSampler(g, m, []float64{1, -1}, Constant(h), rand.New(rand.NewPCG(7, 8)))
		const n, burn, batches = 400000, 2000, 40
		var xs [2][]float64
		for k := 0; k < n+burn; k++ {
			if err := smp.Step(t.Context()); err != nil {
				t.Fatal(err)
			}
			if k >= burn {
				u := smp.U()
				xs[0] = append(xs[0], u[0]-1)
				xs[1] = append(xs[1], u[1]+1)
			}
		}
		// Variance and its batch-means standard error.
		est := func(x []float64) (float64, float64) {
			size := len(x) / batches
			var bm []float64
			tot := 0.0
			for b := range batches {
				s := 0.0
				for _, v := range x[b*size : (b+1)*size] {
					s += v * v
				}
				bm = append(bm, s/float64(size))
				tot += s / float64(size)
			}
			mean := tot / batches
			ss := 0.0
			for _, v := range bm {
				ss += (v - mean) * (v - mean)
			}
			return mean, math.Sqrt(ss / (batches - 1) / batches)
		}
		v0, se0 = est(xs[0])
		v1, se1 = est(xs[1])
		return
	}
	v0, v1, se0, se1 := run(&Precond{L: l, W: w})
	t.Logf("corrected: var %.4f ± %.4f (exact 1), %.4f ± %.4f (exact 2), h = %.3g, λ(W) = %.3g", v0, se0, v1, se1, h, lam)
	if math.Abs(v0-1) > 4*se0 || math.Abs(v1-2) > 4*se1 {
		t.Errorf("corrected Precond: variances %.4f, %.4f, want 1 ± %.4f and 2 ± %.4f", v0, v1, 4*se0, 4*se1)
	}
	p0, p1, pse0, pse1 := run(&Precond{L: l})
	t.Logf("uncorrected: var %.4f ± %.4f, %.4f ± %.4f", p0, pse0, p1, pse1)
	if p0-1 < 10*pse0 || p1-2 < 10*pse1 {
		t.Errorf("uncorrected Precond: variances %.4f, %.4f not clearly inflated: the test could not tell", p0, p1)
	}
}
