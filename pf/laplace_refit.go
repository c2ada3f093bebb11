package pf

import (
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Gauss–Hermite rules for N(0, 1): nodes and weights, 5 points per axis
// for d ≤ 3 and 3 for larger states (3^d nodes).
var (
	gh5Nodes   = []float64{-2.856970013872806, -1.355626179974266, 0, 1.355626179974266, 2.856970013872806}
	gh5Weights = []float64{0.011257411327720691, 0.2220759220056126, 0.5333333333333333, 0.2220759220056126, 0.011257411327720691}
	gh3Nodes   = []float64{-math.Sqrt(3), 0, math.Sqrt(3)}
	gh3Weights = []float64{1.0 / 6, 2.0 / 3, 1.0 / 6}
)

// smoothCovs sets w.xs and w.vs to the Gaussian model's smoothed means
// and covariances (Rauch–Tung–Striebel).
func (w *laplaceWork) smoothCovs(n int) {
	d := w.d
	d2 := d * d
	copy(w.xs[n*d:(n+1)*d], w.mf[n*d:(n+1)*d])
	copy(w.vs[n*d2:(n+1)*d2], w.pf[n*d2:(n+1)*d2])
	for s := n - 1; s >= 0; s-- {
		pf := w.pf[s*d2 : (s+1)*d2]
		matMulT(w.a1, pf, w.F, d)
		matMul(w.a2, w.a1, w.ppinv[(s+1)*d2:(s+2)*d2], d) // J
		for i := 0; i < d; i++ {
			w.v1[i] = w.xs[(s+1)*d+i] - w.mp[(s+1)*d+i]
		}
		matVec(w.v2, w.a2, w.v1, d)
		for i := 0; i < d; i++ {
			w.xs[s*d+i] = w.mf[s*d+i] + w.v2[i]
		}
		// V_s = P_s + J (V_{s+1} − P⁻_{s+1}) Jᵀ.
		for i := range w.a3[:d2] {
			w.a3[i] = w.vs[(s+1)*d2+i] - w.pp[(s+1)*d2+i]
		}
		matMul(w.a1, w.a2, w.a3, d)
		matMulT(w.a3, w.a1, w.a2, d)
		vs := w.vs[s*d2 : (s+1)*d2]
		for i := range vs {
			vs[i] = pf[i] + w.a3[i]
		}
		symmetrize(vs, d)
	}
}

// refitGH replaces each q_s by the weighted least-squares fit of the
// emission log p(y_s | x) over Gauss–Hermite nodes of the Gaussian
// model's smoothed marginal N(μ_s, V_s) (features 1, z_i and z_i z_j in
// the standardised z = L_s⁻¹(x − μ_s), V_s = L_s L_sᵀ): the numerically
// accelerated importance sampling of Koopman, Lucas and Scharth (2015),
// which makes ℓ_s − q_s small where the smoothed law puts its mass rather
// than at the mode only. In z the nodes, their weights and the normal
// equations' matrix are the same at every step (ghRule), so a step costs
// one AddLogEmission over the nodes and one solve. It returns log ĝ(y)
// of the refitted model, or keeps the current one where a fit fails or
// makes no positive definite model. Deterministic: no random numbers.
//
// For a separable emission (sep: ssm.SeparableEmission) the fit is done
// one component at a time (refitSeparable): under a Gaussian law the
// least-squares projection of a function of x_i onto quadratics in x is a
// quadratic in x_i alone (the Hermite expansion of the function up to
// second order), so the separate fits on the marginals N(μ_si, V_s,ii) are
// the same fit, with d one-dimensional rules instead of a d-dimensional
// one.
func (w *laplaceWork) refitGH(k ssm.Kernel, seq ssm.Sequence, win ssm.Window, n int, lnG float64, sep bool) (float64, error) {
	d := w.d
	d2 := d * d
	w.smoothCovs(n)
	copy(w.cs0, w.cs)
	copy(w.hv0, w.hvec)
	copy(w.lam0, w.lam)
	if !sep && !w.ghRule() {
		return lnG, nil
	}
	total, nf := len(w.ghW), len(w.feat)
	for s := 1; s <= n; s++ {
		y := seq.At(win.Start + s - 1)
		if allMissing(y) {
			continue
		}
		if sep {
			w.refitSeparable(k, y, s)
			continue
		}
		l := w.a1
		if !chol(l, w.vs[s*d2:(s+1)*d2], d) {
			continue
		}
		mu := w.xs[s*d : (s+1)*d]
		for c := 0; c < total; c++ {
			x := w.ghX[c*d : (c+1)*d]
			lowerVec(x, l, w.ghZ[c*d:(c+1)*d], d)
			for i := range x {
				x[i] += mu[i]
			}
		}
		clear(w.ghL)
		k.AddLogEmission(w.ghL, y, w.ghX)
		clear(w.xty)
		for c, v := range w.ghL {
			wv := w.ghW[c] * v
			for a, f := range w.ghF[c*nf : (c+1)*nf] {
				w.xty[a] += wv * f
			}
		}
		cholSolve(w.ghG, w.xty, nf)
		if fmath.FirstNonFinite(w.xty) < 0 {
			w.setQz(s, w.xty, l, mu)
		}
	}
	next, err := w.filter(n)
	if err != nil || !(math.Abs(next) <= laplaceMaxLog) { // NaN, ±Inf, or rounding only
		copy(w.cs, w.cs0)
		copy(w.hvec, w.hv0)
		copy(w.lam, w.lam0)
		return w.filter(n)
	}
	return next, nil
}

// refitSeparable sets q_s to the sum over components i of the
// least-squares quadratic fit of ℓ(x) along x_i (the other components at
// the smoothed mean μ_s) over the five-point Gauss–Hermite rule of the
// marginal N(μ_si, V_s,ii), minus (d − 1) ℓ(μ_s) (each fit's constant
// holds the other components' terms at μ_s). With the rule's moments
// (E z² = 1, E z⁴ = 3) the normal equations of the fit b_0 + b_1 z +
// b_2 z² in z = (x_i − μ_si)/s_i have the solution b_1 = E[ℓz], b_2 =
// (E[ℓz²] − E[ℓ])/2, b_0 = E[ℓ] − b_2. It keeps the current q_s where a
// variance is not positive or a coefficient not finite.
func (w *laplaceWork) refitSeparable(k ssm.Kernel, y []float64, s int) {
	d := w.d
	d2 := d * d
	mu, v := w.xs[s*d:(s+1)*d], w.vs[s*d2:(s+1)*d2]
	np := 4*d + 1 // the mean, then four off-centre nodes per component
	pts, vals := w.sepX[:np*d], w.sepL[:np]
	for q := range np {
		copy(pts[q*d:(q+1)*d], mu)
	}
	for i := range d {
		sd := math.Sqrt(v[i*d+i])
		if !(sd > 0) || math.IsInf(sd, 0) {
			return
		}
		for q, j := range sepNodes {
			pts[(1+4*i+q)*d+i] += sd * gh5Nodes[j]
		}
	}
	clear(vals)
	k.AddLogEmission(vals, y, pts)
	l0 := vals[0]
	c := -float64(d-1) * l0
	for i := range d {
		el, elz, elz2 := gh5Weights[2]*l0, 0.0, 0.0
		for q, j := range sepNodes {
			z, l := gh5Nodes[j], gh5Weights[j]*vals[1+4*i+q]
			el += l
			elz += l * z
			elz2 += l * z * z
		}
		b1, b2 := elz, (elz2-el)/2
		b0 := el - b2
		sd, m := math.Sqrt(v[i*d+i]), mu[i]
		w.v1[i] = -2 * b2 / (sd * sd)    // Λ_ii
		w.v2[i] = b1/sd - 2*b2*m/(sd*sd) // h_i
		c += b0 - b1*m/sd + b2*m*m/(sd*sd)
	}
	if math.IsNaN(c) || math.IsInf(c, 0) || fmath.FirstNonFinite(w.v1) >= 0 || fmath.FirstNonFinite(w.v2) >= 0 {
		return
	}
	lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
	clear(lam)
	for i := range d {
		lam[i*d+i] = w.v1[i]
		hv[i] = w.v2[i]
	}
	w.cs[s] = c
}

// sepNodes are the indices of gh5Nodes other than the centre.
var sepNodes = [4]int{0, 1, 3, 4}

// ghRule fills, once for the state's dimension, the product
// Gauss–Hermite rule in z (nodes w.ghZ, weights w.ghW), the nodes'
// features w.ghF and the lower Cholesky factor w.ghG of the normal
// equations' matrix Σ_c w_c f(z_c) f(z_c)ᵀ; false if that is singular.
func (w *laplaceWork) ghRule() bool {
	d := w.d
	if w.ghD == d {
		return true
	}
	nodes, weights := gh5Nodes, gh5Weights
	if d > 3 {
		nodes, weights = gh3Nodes, gh3Weights
	}
	K := len(nodes)
	total := 1
	for range d {
		total *= K
	}
	nf := len(w.feat)
	w.ghZ, w.ghX, w.ghW, w.ghL = make([]float64, total*d), make([]float64, total*d), make([]float64, total), make([]float64, total)
	w.ghF, w.ghG = make([]float64, total*nf), make([]float64, nf*nf)
	g := make([]float64, nf*nf)
	for c := 0; c < total; c++ {
		wt, r := 1.0, c
		for i := 0; i < d; i++ {
			j := r % K
			r /= K
			w.ghZ[c*d+i] = nodes[j]
			wt *= weights[j]
		}
		w.ghW[c] = wt
		f := w.ghF[c*nf : (c+1)*nf]
		quadFeatures(f, w.ghZ[c*d:(c+1)*d])
		for a := range nf {
			for b := range nf {
				g[a*nf+b] += wt * f[a] * f[b]
			}
		}
	}
	if !chol(w.ghG, g, nf) {
		return false
	}
	w.ghD = d
	return true
}

// setQz sets q_s from the coefficients β of the fit in z = L⁻¹(x − μ):
// q = β_0 + bᵀz + ½ zᵀCz (b_i = β_i, C_ii = 2β_ii, C_ij = β_ij), which in
// x, with A = L⁻ᵀ C L⁻¹, is c + hᵀx − ½ xᵀΛx with Λ = −A,
// h = L⁻ᵀb − Aμ and c = β_0 − bᵀL⁻¹μ + ½ μᵀAμ.
func (w *laplaceWork) setQz(s int, beta, l, mu []float64) {
	d := w.d
	d2 := d * d
	m := w.a2 // L⁻¹, column by column
	for j := 0; j < d; j++ {
		clear(w.v1)
		w.v1[j] = 1
		lowerSolve(l, w.v1, d)
		for i := 0; i < d; i++ {
			m[i*d+j] = w.v1[i]
		}
	}
	cm := w.a3 // C
	c := 1 + d
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if i == j {
				cm[i*d+i] = 2 * beta[c]
			} else {
				cm[i*d+j], cm[j*d+i] = beta[c], beta[c]
			}
			c++
		}
	}
	lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
	matMul(lam, cm, m, d)    // C L⁻¹ (scratch)
	for i := 0; i < d; i++ { // cm ← L⁻ᵀ (C L⁻¹) = A
		for j := 0; j < d; j++ {
			v := 0.0
			for k := 0; k < d; k++ {
				v += m[k*d+i] * lam[k*d+j]
			}
			cm[i*d+j] = v
		}
	}
	symmetrize(cm, d)
	b := beta[1 : 1+d]
	matVec(w.v2, cm, mu, d) // Aμ
	for i := 0; i < d; i++ {
		v := 0.0
		for k := 0; k < d; k++ {
			v += m[k*d+i] * b[k]
		}
		hv[i] = v - w.v2[i]
	}
	matVec(w.v3, m, mu, d) // L⁻¹μ
	w.cs[s] = beta[0] - dot(b, w.v3) + 0.5*dot(mu, w.v2)
	for i := range lam[:d2] {
		lam[i] = -cm[i]
	}
}
