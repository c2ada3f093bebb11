package sgmcmc

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// cholInverse returns the row-major lower Cholesky factor of H⁻¹.
func cholInverse(h *mat.SymDense) ([]float64, error) {
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

// lTrans returns Lᵀv.
func lTrans(l, v []float64) []float64 {
	p := len(v)
	out := make([]float64, p)
	for j := range p {
		for i := j; i < p; i++ {
			out[j] += l[i*p+j] * v[i]
		}
	}
	return out
}

// lMul returns u + L z.
func lMul(u, l, z []float64) []float64 {
	p := len(z)
	out := append([]float64(nil), u...)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i] += l[i*p+j] * z[j]
		}
	}
	return out
}

// negated returns −a.
func negated(a []float64) []float64 {
	n := make([]float64, len(a))
	for i, v := range a {
		n[i] = -v
	}
	return n
}

// sandwich returns Lᵀ V L (row-major) for lower-triangular L.
func sandwich(l, v []float64) []float64 {
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

func maxEigen(w []float64, p int) float64 {
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

func symData(h *mat.SymDense) []float64 {
	p := h.SymmetricDim()
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			out[i*p+j] = h.At(i, j)
		}
	}
	return out
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
