package pf

import "math"

// Small dense matrices for Laplace: d×d, row-major, d up to a few tens.

// chol writes the lower Cholesky factor of the symmetric a into l and
// reports whether a is positive definite.
func chol(l, a []float64, d int) bool {
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			s := a[i*d+j]
			for k := 0; k < j; k++ {
				s -= l[i*d+k] * l[j*d+k]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				l[i*d+i] = math.Sqrt(s)
			} else {
				l[i*d+j] = s / l[j*d+j]
			}
		}
		for j := i + 1; j < d; j++ {
			l[i*d+j] = 0
		}
	}
	return true
}

// logDetChol returns log det(L Lᵀ) for the lower factor l.
func logDetChol(l []float64, d int) float64 {
	s := 0.0
	for i := 0; i < d; i++ {
		s += math.Log(l[i*d+i])
	}
	return 2 * s
}

// lowerSolve overwrites b with L⁻¹ b for the lower triangular l.
func lowerSolve(l, b []float64, d int) {
	for i := 0; i < d; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i*d+k] * b[k]
		}
		b[i] = s / l[i*d+i]
	}
}

// cholSolve overwrites b with (L Lᵀ)⁻¹ b.
func cholSolve(l, b []float64, d int) {
	for i := 0; i < d; i++ {
		s := b[i]
		for k := 0; k < i; k++ {
			s -= l[i*d+k] * b[k]
		}
		b[i] = s / l[i*d+i]
	}
	for i := d - 1; i >= 0; i-- {
		s := b[i]
		for k := i + 1; k < d; k++ {
			s -= l[k*d+i] * b[k]
		}
		b[i] = s / l[i*d+i]
	}
}

// cholInverse writes (L Lᵀ)⁻¹ into dst, using col (length d) as scratch.
func cholInverse(dst, l []float64, d int, col []float64) {
	for j := 0; j < d; j++ {
		clear(col)
		col[j] = 1
		cholSolve(l, col, d)
		for i := 0; i < d; i++ {
			dst[i*d+j] = col[i]
		}
	}
	symmetrize(dst, d)
}

// symmetrize replaces a by (a + aᵀ)/2.
func symmetrize(a []float64, d int) {
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * (a[i*d+j] + a[j*d+i])
			a[i*d+j], a[j*d+i] = v, v
		}
	}
}

// matVec sets dst = a x.
func matVec(dst, a, x []float64, d int) {
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += a[i*d+j] * x[j]
		}
		dst[i] = s
	}
}

// lowerVec sets dst = L x for the lower triangular l.
func lowerVec(dst, l, x []float64, d int) {
	for i := d - 1; i >= 0; i-- {
		s := 0.0
		for j := 0; j <= i; j++ {
			s += l[i*d+j] * x[j]
		}
		dst[i] = s
	}
}

// matMul sets dst = a b; dst must not alias a or b.
func matMul(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for k := 0; k < d; k++ {
				s += a[i*d+k] * b[k*d+j]
			}
			dst[i*d+j] = s
		}
	}
}

// matMulT sets dst = a bᵀ; dst must not alias a or b.
func matMulT(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for k := 0; k < d; k++ {
				s += a[i*d+k] * b[j*d+k]
			}
			dst[i*d+j] = s
		}
	}
}

// quadForm returns xᵀ a x.
func quadForm(a, x []float64, d int) float64 {
	q := 0.0
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += a[i*d+j] * x[j]
		}
		q += x[i] * s
	}
	return q
}
