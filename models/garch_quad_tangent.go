package models

import (
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The score of the quadrature filter in forward mode: every quantity of
// a pass (atoms, weights, the Stieltjes recurrence, the Gauss rule) carries
// its derivative in the four directions of the seeded score, in which the
// parameters of row t's factors move by w_t e_i (see ExactScore). The
// rule's derivative is that of a symmetric eigenproblem: for the Jacobi
// matrix T = V Λ Vᵀ with simple eigenvalues (a Gauss rule's nodes are),
//
//	dλ_k = v_kᵀ dT v_k,   dv_k[0] = Σ_{j≠k} v_j[0] v_jᵀ dT v_k / (λ_k − λ_j),
//
// so one pass, about three times the work of the log-likelihood's, gives
// the log-likelihood and its exact score (central differences took nine
// passes and had a truncation error).

// garchTangents holds ∂θ/∂u_i of the parameters a factor supplies, per
// direction i: a row's tangents are these times its seed.
type garchTangents struct {
	mu, alpha, beta, gamma, tau2 [garchParams]float64
}

func newGARCHTangents(u []float64) (garchTangents, error) {
	var v, dv [garchParams]float64
	if err := garchSpec.Natural(v[:], dv[:], u); err != nil {
		return garchTangents{}, err
	}
	mu, phi, lam, tau := v[0], v[1], v[2], v[3]
	var g garchTangents
	g.mu[0] = dv[0]
	g.alpha[0], g.alpha[1] = dv[0]*(1-phi), -mu*dv[1]
	g.beta[1], g.beta[2] = dv[1]*lam, phi*dv[2]
	g.gamma[1], g.gamma[2] = dv[1]*(1-lam), -phi*dv[2]
	g.tau2[3] = 2 * tau * dv[3]
	return g, nil
}

// scaled returns x·s per direction.
func scaled(x [garchParams]float64, s float64) (y [garchParams]float64) {
	for i := range x {
		y[i] = x[i] * s
	}
	return y
}

// garchQuadTan is the tangent part of the quadrature filter's workspace:
// per atom or rule point, its derivative in the four directions.
type garchQuadTan struct {
	da, dw, dx, dq0, dq1 []tan4    // atoms' σ², weights, standardised log σ², Stieltjes polynomials
	dd, de               []tan4    // the Jacobi matrix
	d0, e0               []float64 // the Jacobi matrix, kept from jacobiRule
	v, r                 []float64 // eigenvectors (K×K, column k is v_k) and r_k = Σ_{j≠k} v_j[0] v_j/(λ_k − λ_j)
	tv                   []float64 // dT v_k for one direction (K)
	dnode, dweight       []tan4    // the rule's σ² nodes and weights
	dll                  tan4
}

// tan4 is a quantity's derivative in the four directions.
type tan4 = [garchParams]float64

func (t *garchQuadTan) init(K, J int) {
	n := K * J
	t.da, t.dw, t.dx, t.dq0, t.dq1 = growSlice(t.da, n), growSlice(t.dw, n), growSlice(t.dx, n), growSlice(t.dq0, n), growSlice(t.dq1, n)
	t.dd, t.de, t.dnode, t.dweight = growSlice(t.dd, K), growSlice(t.de, K), growSlice(t.dnode, K), growSlice(t.dweight, K)
	t.v, t.r, t.tv, t.d0, t.e0 = growSlice(t.v, K*K), growSlice(t.r, K*K), growSlice(t.tv, K), growSlice(t.d0, K), growSlice(t.e0, K)
	t.dll = tan4{}
}

// growSlice returns b with length n, reallocated when too short (the
// package's pooled workspaces).
func growSlice[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// garchSeed is row r's seed in window w: its weight when kept, else 0.
func garchSeed(w ssm.Window, r int) float64 {
	if r < w.KeepStart || r >= w.KeepEnd {
		return 0
	}
	return w.Weight(r)
}

// startTangent sets the tangents of start's atoms: μ of factor 0 in x,
// α, β, γ and μ of factor Start in the map to σ².
func (q *garchQuadWork) startTangent(k *garchKernel, pt *garchTangents, w ssm.Window) {
	t := &q.tan
	s0 := 0.0
	if w.KeepsInitial() {
		s0 = w.Weight(0)
	}
	sS := garchSeed(w, w.Start)
	for j, z2 := range q.rj.z2 {
		for i := range garchParams {
			dc := sS * (pt.alpha[i] + pt.gamma[i]*k.mu + k.gamma*pt.mu[i])
			t.da[j][i] = dc + (sS*pt.beta[i]*k.mu+k.beta*s0*pt.mu[i])*z2
			t.dw[j][i] = 0
		}
	}
}

// compressTangent is compress with tangents: the Gauss rule's nodes and
// weights and their derivatives.
func (q *garchQuadWork) compressTangent(n int) {
	const P = garchParams
	t := &q.tan
	if q.keep(n) {
		clear(t.dnode)
		clear(t.dweight)
		copy(t.dnode, t.da[:n])
		copy(t.dweight, t.dw[:n])
		return
	}
	a, la, w := q.a[:n], q.la[:n], q.w[:n]
	var dmean [P]float64
	mean := 0.0
	for i := range a {
		la[i] = math.Log(a[i])
		mean += w[i] * la[i]
		for d := range P {
			t.dx[i][d] = t.da[i][d] / a[i] // d log a, for now
			dmean[d] += t.dw[i][d]*la[i] + w[i]*t.dx[i][d]
		}
	}
	// compress's centring and Stieltjes passes, the same arithmetic (the
	// same bits), with the tangents of x = log a − mean, of the stored
	// unnormalised polynomials (dq0, dq1) and of their scales.
	p0, p1 := q.p0[:n], q.p1[:n] // prev, cur
	dp0, dp1 := t.dq0[:n], t.dq1[:n]
	v, al := 0.0, 0.0
	var dal tan4
	for i := range la {
		x := la[i] - mean
		la[i] = x
		al += w[i] * x
		v += w[i] * x * x
		p1[i], p0[i] = 1, 0
		dxi, dwi := &t.dx[i], &t.dw[i]
		for d := range P {
			dxi[d] -= dmean[d]
			dal[d] += dwi[d]*x + w[i]*dxi[d]
		}
		dp0[i], dp1[i] = tan4{}, tan4{}
	}
	K := q.K
	if !(v > 1e-24) {
		for k := range K {
			q.node[k], q.weight[k] = math.Exp(mean), 1/float64(K)
			for d := range P {
				t.dnode[k][d], t.dweight[k][d] = q.node[k]*dmean[d], 0
			}
		}
		return
	}
	b, s0, s1 := 0.0, 0.0, 1.0
	var db, ds0, ds1 tan4
	for r := range K {
		q.d[r] = al
		t.dd[r] = dal
		if r == K-1 {
			break
		}
		c1, c0 := s1, b*s0
		nn, nx := 0.0, 0.0
		var n0, n1, n2, n3, x0, x1, x2, x3 float64
		// The four directions are written out: this is the score's hot
		// loop.
		for i, x := range la {
			xa, ci, pi := x-al, p1[i], p0[i]
			p := xa*c1*ci - c0*pi
			qr, qm := ci*s1, pi*s0
			dxi, dci, dpi := &t.dx[i], &dp1[i], &dp0[i]
			dpi[0] = (dxi[0]-dal[0])*qr + xa*(dci[0]*s1+ci*ds1[0]) - db[0]*qm - b*(dpi[0]*s0+pi*ds0[0])
			dpi[1] = (dxi[1]-dal[1])*qr + xa*(dci[1]*s1+ci*ds1[1]) - db[1]*qm - b*(dpi[1]*s0+pi*ds0[1])
			dpi[2] = (dxi[2]-dal[2])*qr + xa*(dci[2]*s1+ci*ds1[2]) - db[2]*qm - b*(dpi[2]*s0+pi*ds0[2])
			dpi[3] = (dxi[3]-dal[3])*qr + xa*(dci[3]*s1+ci*ds1[3]) - db[3]*qm - b*(dpi[3]*s0+pi*ds0[3])
			p0[i] = p
			wp := w[i] * p * p
			nn += wp
			nx += wp * x
			pp, w2p, dwi := p*p, 2*w[i]*p, &t.dw[i]
			xpp, wpp, w2xp := x*pp, w[i]*pp, w2p*x
			n0 += dwi[0]*pp + w2p*dpi[0]
			n1 += dwi[1]*pp + w2p*dpi[1]
			n2 += dwi[2]*pp + w2p*dpi[2]
			n3 += dwi[3]*pp + w2p*dpi[3]
			x0 += dwi[0]*xpp + dxi[0]*wpp + w2xp*dpi[0]
			x1 += dwi[1]*xpp + dxi[1]*wpp + w2xp*dpi[1]
			x2 += dwi[2]*xpp + dxi[2]*wpp + w2xp*dpi[2]
			x3 += dwi[3]*xpp + dxi[3]*wpp + w2xp*dpi[3]
		}
		p0, p1, dp0, dp1 = p1, p0, dp1, dp0
		b = math.Sqrt(nn)
		q.e[r] = b
		h := 0.5 / b
		db = tan4{n0 * h, n1 * h, n2 * h, n3 * h}
		t.de[r] = db
		s0, s1, ds0 = s1, 1/b, ds1
		for d := range P {
			ds1[d] = -db[d] * s1 * s1
		}
		al = nx / nn
		dnn, dnx := tan4{n0, n1, n2, n3}, tan4{x0, x1, x2, x3}
		for d := range P {
			dal[d] = (dnx[d] - al*dnn[d]) / nn
		}
	}
	q.e[K-1] = 0
	t.de[K-1] = tan4{}
	q.ruleTangent(mean, dmean)
}

// ruleTangent solves the Jacobi matrix (d, e, with tangents dd, de) for
// the rule's nodes and weights and their tangents.
func (q *garchQuadWork) ruleTangent(mean float64, dmean [garchParams]float64) {
	const P = garchParams
	t := &q.tan
	K := q.K
	d0, e0 := t.d0[:K], t.e0[:K]
	copy(d0, q.d[:K])
	copy(e0, q.e[:K])
	jacobiRule(q.d[:K], q.e[:K], q.z[:K])
	lam := q.d[:K]
	// The eigenvectors: v_k[m] = v_k[0] p_m(λ_k), with the orthonormal
	// polynomials of the matrix, e_m p_{m+1} = (λ − d_m) p_m − e_{m−1} p_{m−1},
	// p_0 = 1 (K² work, where rotating all K rows in jacobiRule took K³).
	V := t.v[:K*K]
	for k, l := range lam {
		pm, p := 0.0, 1.0
		for m := range K {
			V[m*K+k] = q.z[k] * p
			if m == K-1 {
				break
			}
			np := (l - d0[m]) * p
			if m > 0 {
				np -= e0[m-1] * pm
			}
			pm, p = p, np/e0[m]
		}
	}
	// r_k = Σ_{j≠k} v_j[0] v_j / (λ_k − λ_j).
	R := t.r[:K*K]
	clear(R)
	for k := range K {
		for j := range K {
			if j == k {
				continue
			}
			f := V[j] / (lam[k] - lam[j])
			for m := range K {
				R[m*K+k] += f * V[m*K+j]
			}
		}
	}
	tv := t.tv[:K]
	for k := range K {
		q.node[k] = math.Exp(mean + lam[k])
		z := q.z[k]
		q.weight[k] = z * z
		for d := range P {
			// dT v_k (dT tridiagonal: dd on the diagonal, de beside it).
			for m := range K {
				x := t.dd[m][d] * V[m*K+k]
				if m > 0 {
					x += t.de[m-1][d] * V[(m-1)*K+k]
				}
				if m < K-1 {
					x += t.de[m][d] * V[(m+1)*K+k]
				}
				tv[m] = x
			}
			dl, dz := 0.0, 0.0
			for m := range K {
				dl += V[m*K+k] * tv[m]
				dz += R[m*K+k] * tv[m]
			}
			t.dnode[k][d] = q.node[k] * (dmean[d] + dl)
			t.dweight[k][d] = 2 * z * dz
		}
	}
}

// moveTangent is move with tangents: τ² of row r's factor (seed st) in
// x | y, α, β, γ of factor r+1 (seed sn) in the map to the next σ².
func (q *garchQuadWork) moveTangent(k *garchKernel, pt *garchTangents, st, sn, y float64, miss bool) int {
	const P = garchParams
	t := &q.tan
	rj, n := q.rj, 0
	t2 := k.tau2
	dt2, dal, dbe, dga := scaled(pt.tau2, st), scaled(pt.alpha, sn), scaled(pt.beta, sn), scaled(pt.gamma, sn)
	for i := range q.K {
		s, pw := q.node[i], q.weight[i]
		ds, dpw := &t.dnode[i], &t.dweight[i]
		mz, sz := 0.0, math.Sqrt(s)
		var dmz, dsz [P]float64
		if !miss {
			den := s + t2
			f := s / den
			mz, sz = f*y, math.Sqrt(f*t2)
			for d := range P {
				df := (ds[d]*t2 - s*dt2[d]) / (den * den)
				dmz[d] = df * y
				dsz[d] = (df*t2 + f*dt2[d]) / (2 * sz)
			}
		} else {
			for d := range P {
				dsz[d] = ds[d] / (2 * sz)
			}
		}
		c := k.alpha + k.gamma*s
		var dc [P]float64
		for d := range P {
			dc[d] = dal[d] + dga[d]*s + k.gamma*ds[d]
		}
		for j, z := range rj.z {
			x := mz + sz*z
			q.a[n], q.w[n] = c+k.beta*x*x, pw*rj.w[j]
			for d := range P {
				dx := dmz[d] + dsz[d]*z
				t.da[n][d] = dc[d] + dbe[d]*x*x + 2*k.beta*x*dx
				t.dw[n][d] = dpw[d] * rj.w[j]
			}
			n++
		}
	}
	return n
}
