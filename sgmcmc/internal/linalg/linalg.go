// Package linalg holds the dense linear algebra of sgmcmc.Fit on
// row-major []float64 matrices (Cholesky factors, whitening, the largest
// eigenvalue) and the quadratic fits of its discretisation correction.
package linalg

import (
	"errors"
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"gonum.org/v1/gonum/mat"
)

// CholInverse returns the row-major lower Cholesky factor of H⁻¹.
func CholInverse(h *mat.SymDense) ([]float64, error) {
	var ch mat.Cholesky
	if !ch.Factorize(h) {
		return nil, errors.New("sgmcmc: the Hessian at the mode is not positive definite")
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, err
	}
	var ci mat.Cholesky
	if !ci.Factorize(&inv) {
		return nil, errors.New("sgmcmc: the inverse Hessian is not positive definite")
	}
	var l mat.TriDense
	ci.LTo(&l)
	p := h.SymmetricDim()
	out := make([]float64, p*p)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i*p+j] = l.At(i, j)
		}
	}
	return out, nil
}

// LTrans returns Lᵀv.
func LTrans(l, v []float64) []float64 {
	p := len(v)
	out := make([]float64, p)
	for j := range p {
		for i := j; i < p; i++ {
			out[j] += l[i*p+j] * v[i]
		}
	}
	return out
}

// LMul returns u + L z.
func LMul(u, l, z []float64) []float64 {
	p := len(z)
	out := append([]float64(nil), u...)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i] += l[i*p+j] * z[j]
		}
	}
	return out
}

// Negated returns −a.
func Negated(a []float64) []float64 {
	n := make([]float64, len(a))
	for i, v := range a {
		n[i] = -v
	}
	return n
}

// Sandwich returns Lᵀ V L (row-major) for lower-triangular L.
func Sandwich(l, v []float64) []float64 {
	p := int(math.Sqrt(float64(len(l))))
	vl := make([]float64, p*p)
	for i := range p {
		for j := range p {
			for k := j; k < p; k++ {
				vl[i*p+j] += v[i*p+k] * l[k*p+j]
			}
		}
	}
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			for k := i; k < p; k++ {
				out[i*p+j] += l[k*p+i] * vl[k*p+j]
			}
		}
	}
	return out
}

func MaxEigen(w []float64, p int) float64 {
	s := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			s.SetSym(i, j, 0.5*(w[i*p+j]+w[j*p+i]))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, false) {
		return math.NaN()
	}
	v := eig.Values(nil)
	return v[len(v)-1]
}

func SymData(h *mat.SymDense) []float64 {
	p := h.SymmetricDim()
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			out[i*p+j] = h.At(i, j)
		}
	}
	return out
}

func Dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func MaxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// QuadRadius is the whitened radius of QuadDesign's points for the
// quadratic, and QuadFar that of its points along the axes for the
// cubes, so that the fit and its leave-one-out check reach the
// posterior's tails.
const (
	QuadRadius = 1.5
	QuadFar    = 3.0
)

// QuadDesign returns the whitened points at which a full quadratic in p
// dimensions is fitted: the centre, ±r e_k, ±r(e_j + e_k)/√2 (j < k),
// ±(r/2)(1, …, 1)/√p (r = QuadRadius) and ±QuadFar e_k: 3 + 4p + p(p−1)
// distinct points for the 1 + 2p + p(p+1)/2 coefficients with the cubes
// (GARCH: 31 for 19), so that p(p−1)/2 + 2 residuals are left to
// cross-validate the fit, and the fit without any one point is still
// determined.
func QuadDesign(p int) [][]float64 { return quadDesign(p, QuadRadius) }

// quadDesign is QuadDesign with radius r for the quadratic's points.
func quadDesign(p int, r float64) [][]float64 {
	zs := [][]float64{make([]float64, p)}
	add := func(idx []int, v float64) {
		for _, s := range []float64{1, -1} {
			z := make([]float64, p)
			for _, k := range idx {
				z[k] = s * v
			}
			zs = append(zs, z)
		}
	}
	for k := range p {
		add([]int{k}, r)
	}
	for j := range p {
		for k := j + 1; k < p; k++ {
			add([]int{j, k}, r/math.Sqrt2)
		}
	}
	all := make([]int, p)
	for k := range all {
		all[k] = k
	}
	add(all, r/(2*math.Sqrt(float64(p))))
	for k := range p {
		add([]int{k}, QuadFar)
	}
	return zs
}

// QuadFeatures returns (1, z_1, …, z_p, z_j z_k for j ≤ k, z_k³).
func QuadFeatures(z []float64) []float64 {
	x := append([]float64{1}, z...)
	for j := range z {
		for k := j; k < len(z); k++ {
			x = append(x, z[j]*z[k])
		}
	}
	for _, v := range z {
		x = append(x, v*v*v)
	}
	return x
}

// QuadFit is a quadratic c + a·z + ½ zᵀBz (B p×p row-major) and the root
// mean square of its leave-one-out errors at the points it was fitted to.
type QuadFit struct {
	C       float64
	A, B, D []float64 // D: the cubes' coefficients
	LOO     float64   // the root-mean-square leave-one-out error
}

// FitQuad fits a quadratic to r at the whitened points zs by least
// squares. The leave-one-out error at point i is e_i/(1 − h_ii), h the
// hat matrix.
func FitQuad(zs [][]float64, r []float64) (*QuadFit, error) {
	if i := fmath.FirstNonFinite(r); i >= 0 {
		return nil, fmt.Errorf("the log-likelihoods' difference at design point %d is %v", i, r[i])
	}
	p := len(zs[0])
	k := len(QuadFeatures(zs[0]))
	n := len(zs)
	if n <= k {
		return nil, fmt.Errorf("%d design points for %d coefficients", n, k)
	}
	x := mat.NewDense(n, k, nil)
	for i, z := range zs {
		x.SetRow(i, QuadFeatures(z))
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return nil, errors.New("singular design")
	}
	var xty, beta mat.VecDense
	xty.MulVec(x.T(), mat.NewVecDense(n, r))
	if err := ch.SolveVecTo(&beta, &xty); err != nil {
		return nil, err
	}
	q := &QuadFit{C: beta.AtVec(0), A: make([]float64, p), B: make([]float64, p*p), D: make([]float64, p)}
	for j := range p {
		q.A[j] = beta.AtVec(1 + j)
	}
	i := 1 + p
	for j := range p {
		for l := j; l < p; l++ {
			v := beta.AtVec(i)
			if j == l {
				q.B[j*p+j] = 2 * v
			} else {
				q.B[j*p+l], q.B[l*p+j] = v, v
			}
			i++
		}
	}
	for j := range p {
		q.D[j] = beta.AtVec(i + j)
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, err
	}
	ss, m := 0.0, 0
	var hx mat.VecDense
	for i := range n {
		xi := x.RowView(i)
		hx.MulVec(&inv, xi)
		h := mat.Dot(xi, &hx)
		if h > 1-1e-9 {
			continue
		}
		e := (r[i] - mat.Dot(xi, &beta)) / (1 - h)
		ss += e * e
		m++
	}
	if m == 0 {
		return nil, errors.New("no point to cross-validate the fit")
	}
	q.LOO = math.Sqrt(ss / float64(m))
	return q, nil
}

// GaussianTimes returns the mean z* and the lower Cholesky factor of the
// covariance of N(0, I) · exp(a·z + ½ zᵀBz): (I − B)⁻¹a and (I − B)⁻¹,
// or an error when I − B is not positive definite.
func GaussianTimes(a, b []float64) (mean, chol []float64, err error) {
	p := len(a)
	h := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			v := -0.5 * (b[i*p+j] + b[j*p+i])
			if i == j {
				v++
			}
			h.SetSym(i, j, v)
		}
	}
	if chol, err = CholInverse(h); err != nil {
		return nil, nil, fmt.Errorf("the corrected target is not proper (I − B): %w", err)
	}
	// (I − B)⁻¹a = C Cᵀ a.
	return LMul(make([]float64, p), chol, LTrans(chol, a)), chol, nil
}

// LowerMul returns the product of two lower triangular p×p matrices
// (row-major).
func LowerMul(a, b []float64, p int) []float64 {
	out := make([]float64, p*p)
	for i := range p {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := j; k <= i; k++ {
				s += a[i*p+k] * b[k*p+j]
			}
			out[i*p+j] = s
		}
	}
	return out
}
