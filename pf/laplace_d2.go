package pf

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Laplace's per-row work for a 2-dimensional state (the bivariate SV
// model's), unrolled: the information-form Kalman filter, the smoothed
// means, the backward draws and the weights, each the same operations in
// the same order as the d×d loops (chol, cholInverse, matMul, …), so the
// same numbers, without the loops' overhead, which for d = 2 is most of
// their cost (go test -run TestLaplaceD2 ./pf checks the equality bit for
// bit).

// m2 is a 2×2 matrix, row-major.
type m2 [4]float64

// chol2 is chol for d = 2.
func chol2(a m2) (l m2, ok bool) {
	s := a[0]
	if !(s > 0) {
		return l, false
	}
	l[0] = math.Sqrt(s)
	l[2] = a[2] / l[0]
	s = a[3]
	s -= l[2] * l[2]
	if !(s > 0) {
		return l, false
	}
	l[3] = math.Sqrt(s)
	return l, true
}

// cholSolve2 is cholSolve for d = 2.
func cholSolve2(l m2, b0, b1 float64) (float64, float64) {
	b0 = b0 / l[0]
	s := b1
	s -= l[2] * b0
	b1 = s / l[3]
	b1 = b1 / l[3]
	s = b0
	s -= l[2] * b1
	b0 = s / l[0]
	return b0, b1
}

// cholInverse2 is cholInverse for d = 2 (then symmetrized).
func cholInverse2(l m2) m2 {
	var inv m2
	inv[0], inv[2] = cholSolve2(l, 1, 0)
	inv[1], inv[3] = cholSolve2(l, 0, 1)
	v := 0.5 * (inv[2] + inv[1])
	inv[2], inv[1] = v, v
	return inv
}

// mul2 is matMul (a b) and mulT2 matMulT (a bᵀ) for d = 2.
func mul2(a, b m2) m2 {
	return m2{a[0]*b[0] + a[1]*b[2], a[0]*b[1] + a[1]*b[3], a[2]*b[0] + a[3]*b[2], a[2]*b[1] + a[3]*b[3]}
}

func mulT2(a, b m2) m2 {
	return m2{a[0]*b[0] + a[1]*b[1], a[0]*b[2] + a[1]*b[3], a[2]*b[0] + a[3]*b[1], a[2]*b[2] + a[3]*b[3]}
}

// logDet2 is logDetChol for d = 2.
func logDet2(l m2) float64 {
	return 2 * math.Log(l[0]*l[3])
}

// load2 returns the 2×2 block at a[0:4].
func load2(a []float64) m2 { return m2(a[:4]) }

// filter2 is filter for d = 2.
func (w *laplaceWork) filter2(n int) (float64, error) {
	copy(w.mf[:2], w.m0)
	copy(w.pf[:4], w.P0)
	F, Q := load2(w.F), load2(w.Q)
	c0, c1 := w.c[0], w.c[1]
	lnG := 0.0
	for s := 1; s <= n; s++ {
		lam, hv := load2(w.lam[s*4:]), w.hvec[s*2:s*2+2]
		// Predict.
		mf0, mf1 := w.mf[(s-1)*2], w.mf[(s-1)*2+1]
		mp0 := F[0]*mf0 + F[1]*mf1
		mp1 := F[2]*mf0 + F[3]*mf1
		mp0 += c0
		mp1 += c1
		w.mp[s*2], w.mp[s*2+1] = mp0, mp1
		pp := mulT2(mul2(F, load2(w.pf[(s-1)*4:])), F)
		for i := range pp {
			pp[i] += Q[i]
		}
		v := 0.5 * (pp[2] + pp[1])
		pp[2], pp[1] = v, v
		copy(w.pp[s*4:s*4+4], pp[:])
		// Update in information form: A = P⁻⁻¹ + Λ, b = P⁻⁻¹ m⁻ + h.
		lp, ok := chol2(pp)
		if !ok {
			return 0, fmt.Errorf("%w: predicted covariance at step %d is not positive definite", ErrLaplace, s)
		}
		logDetP := logDet2(lp)
		ppinv := cholInverse2(lp)
		copy(w.ppinv[s*4:s*4+4], ppinv[:])
		v30 := ppinv[0]*mp0 + ppinv[1]*mp1
		v31 := ppinv[2]*mp0 + ppinv[3]*mp1
		mpq := mp0*v30 + mp1*v31
		var a m2
		for i := range a {
			a[i] = ppinv[i] + lam[i]
		}
		la, ok := chol2(a)
		if !ok {
			return 0, fmt.Errorf("%w: the emission's negative Hessian makes no positive definite posterior at step %d (the emission is not log-concave there)", ErrLaplace, s)
		}
		b0, b1 := v30+hv[0], v31+hv[1]
		m0, m1 := cholSolve2(la, b0, b1)
		w.mf[s*2], w.mf[s*2+1] = m0, m1
		pfs := cholInverse2(la)
		copy(w.pf[s*4:s*4+4], pfs[:])
		lnG += w.cs[s] - 0.5*mpq + 0.5*(b0*m0+b1*m1) - 0.5*logDetP - 0.5*logDet2(la)
	}
	return lnG, nil
}

// smoothMeans2 is smoothMeans for d = 2.
func (w *laplaceWork) smoothMeans2(n int) {
	copy(w.xs[n*2:n*2+2], w.mf[n*2:n*2+2])
	F := load2(w.F)
	for s := n - 1; s >= 0; s-- {
		j := mul2(mulT2(load2(w.pf[s*4:]), F), load2(w.ppinv[(s+1)*4:]))
		v0 := w.xs[(s+1)*2] - w.mp[(s+1)*2]
		v1 := w.xs[(s+1)*2+1] - w.mp[(s+1)*2+1]
		w.xs[s*2] = w.mf[s*2] + (j[0]*v0 + j[1]*v1)
		w.xs[s*2+1] = w.mf[s*2+1] + (j[2]*v0 + j[3]*v1)
	}
}

// draw2 is sweep's draw of x_s for every path with d = 2, unrolled: the
// same operations in the same order as the general loop (lowerVec, matVec,
// the sums), so the same numbers, at about half the time.
func (w *laplaceWork) draw2(cur, next []float64, s, n int, rng *rand.Rand) {
	m := w.m
	lc := w.lc[s*4 : s*4+4]
	l00, l10, l11 := lc[0], lc[2], lc[3]
	mf0, mf1 := w.mf[s*2], w.mf[s*2+1]
	var j00, j01, j10, j11, mp0, mp1 float64
	if s < n {
		jm := w.jmat[s*4 : s*4+4]
		j00, j01, j10, j11 = jm[0], jm[1], jm[2], jm[3]
		mp0, mp1 = w.mp[(s+1)*2], w.mp[(s+1)*2+1]
	}
	cur, next = cur[:2*m], next[:2*m]
	for q := 0; q < m; q += 2 {
		z0 := rng.NormFloat64()
		z1 := rng.NormFloat64()
		v0 := l00 * z0
		v1 := l10*z0 + l11*z1
		for r, sign := q, 1.0; r < q+2; r, sign = r+1, -1 {
			x0, x1 := mf0, mf1
			if s < n {
				e0, e1 := next[2*r]-mp0, next[2*r+1]-mp1
				x0 = j00*e0 + j01*e1
				x1 = j10*e0 + j11*e1
				x0 += mf0
				x1 += mf1
			}
			cur[2*r] = x0 + sign*v0
			cur[2*r+1] = x1 + sign*v1
		}
	}
}

// weigh2 is sweep's weight update for every path with d = 2, unrolled as
// draw2: lw_q += tmp_q − (c + hᵀx − ½ xᵀΛx).
func (w *laplaceWork) weigh2(cur, lam, hv []float64, c float64) {
	a00, a01, a10, a11 := lam[0], lam[1], lam[2], lam[3]
	h0, h1 := hv[0], hv[1]
	lw, tmp := w.lw[:w.m], w.tmp[:w.m]
	cur = cur[:2*w.m]
	for q := range lw {
		x0, x1 := cur[2*q], cur[2*q+1]
		quad := x0*(a00*x0+a01*x1) + x1*(a10*x0+a11*x1)
		lw[q] += tmp[q] - (c + (h0*x0 + h1*x1) - 0.5*quad)
	}
}
