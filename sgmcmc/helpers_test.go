package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// gauss is a Gaussian target N(Mu, Sigma) given by its precision P = Sigma⁻¹
// (row-major), with the exact gradient −P(u − Mu) plus optional N(0, Noise²)
// noise per component.
type gauss struct {
	Mu, P []float64
	Noise float64
	calls int
}

func (g *gauss) Grad(_ context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	g.calls++
	n := len(u)
	lp := 0.0
	for i := range n {
		s := 0.0
		for j := range n {
			s -= g.P[i*n+j] * (u[j] - g.Mu[j])
		}
		grad[i] = s
		lp += 0.5 * s * (u[i] - g.Mu[i])
		if g.Noise > 0 {
			grad[i] += g.Noise * rng.NormFloat64()
		}
	}
	return lp, nil
}

// std1 is the 1-D standard normal target.
func std1() *gauss { return &gauss{Mu: []float64{0}, P: []float64{1}} }

// batchStat returns the mean of the values and its standard error by
// non-overlapping batch means with nb batches per chain, so that the error
// accounts for autocorrelation (batches never cross chains).
func batchStat(t *testing.T, series [][]float64, nb int) (mean, se float64) {
	t.Helper()
	var bm []float64
	var sum float64
	var n int
	for _, x := range series {
		b := len(x) / nb
		if b < 50 {
			t.Fatalf("batches of %d values are too short", b)
		}
		for i := range nb {
			s := 0.0
			for _, v := range x[i*b : (i+1)*b] {
				s += v
			}
			bm = append(bm, s/float64(b))
		}
		for _, v := range x[:nb*b] {
			sum += v
			n++
		}
	}
	mean = sum / float64(n)
	var ss float64
	for _, m := range bm {
		ss += (m - mean) * (m - mean)
	}
	k := float64(len(bm))
	return mean, math.Sqrt(ss / (k - 1) / k)
}

// centredProduct returns (a − ma)(b − mb) elementwise, per chain.
func centredProduct(a, b [][]float64, ma, mb float64) [][]float64 {
	out := make([][]float64, len(a))
	for c := range a {
		out[c] = make([]float64, len(a[c]))
		for i := range a[c] {
			out[c][i] = (a[c][i] - ma) * (b[c][i] - mb)
		}
	}
	return out
}

// within reports an error when |got − want| > tol.
func within(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.6g, want %.6g ± %.3g (off by %.2f tolerances)", name, got, want, tol, math.Abs(got-want)/tol)
	} else {
		t.Logf("%s = %.6g, want %.6g ± %.3g (|z| in tolerance units %.2f)", name, got, want, tol, math.Abs(got-want)/tol)
	}
}

// sgldStationaryCov returns the exact stationary covariance of SGLD with exact
// gradients on a Gaussian with precision p (n×n, symmetric): in the eigenbasis
// of p each mode is the AR(1) x' = (1 − hλ)x + √(2h)ξ with variance
// 2h/(1 − (1 − hλ)²).
func sgldStationaryCov(p []float64, n int, h float64) *mat.SymDense {
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(n, append([]float64(nil), p...)), true) {
		panic("eigen decomposition failed")
	}
	lam := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	d := make([]float64, n)
	for i, l := range lam {
		a := 1 - h*l
		d[i] = 2 * h / (1 - a*a)
	}
	var qd, s mat.Dense
	qd.Mul(&q, mat.NewDiagDense(n, d))
	s.Mul(&qd, q.T())
	out := mat.NewSymDense(n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			out.SetSym(i, j, s.At(i, j))
		}
	}
	return out
}

// lyapunov solves Σ = AΣAᵀ + BBᵀ (the stationary covariance of z' = Az + Bξ)
// through vec(Σ) = (I − A⊗A)⁻¹ vec(BBᵀ).
func lyapunov(a, bbt *mat.Dense) *mat.Dense {
	n, _ := a.Dims()
	var kron mat.Dense
	kron.Kronecker(a, a)
	lhs := mat.NewDense(n*n, n*n, nil)
	for i := range n * n {
		for j := range n * n {
			v := -kron.At(i, j)
			if i == j {
				v++
			}
			lhs.Set(i, j, v)
		}
	}
	rhs := mat.NewVecDense(n*n, nil)
	for i := range n {
		for j := range n {
			rhs.SetVec(i*n+j, bbt.At(i, j))
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(lhs, rhs); err != nil {
		panic(err)
	}
	out := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			out.Set(i, j, x.AtVec(i*n+j))
		}
	}
	return out
}

// seriesRecorder stores component series of every chain's draws.
type seriesRecorder struct {
	x [][][]float64 // [chain][component][draw]
}

func (r *seriesRecorder) Init(info Info) error {
	r.x = make([][][]float64, info.Chains)
	for c := range r.x {
		r.x[c] = make([][]float64, info.Dim)
	}
	return nil
}

func (r *seriesRecorder) Record(d *Draw) error {
	for j, v := range d.U {
		r.x[d.Chain][j] = append(r.x[d.Chain][j], v)
	}
	return nil
}

func (r *seriesRecorder) Done(*Result) error { return nil }

// component returns component j of every chain.
func (r *seriesRecorder) component(j int) [][]float64 {
	out := make([][]float64, len(r.x))
	for c := range r.x {
		out[c] = r.x[c][j]
	}
	return out
}
