package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// msvBound is everything an msvKernel derives from u, in one buffer.
// Matrices are D×D row-major; L, (SL)⁻¹ and L_P are lower triangular.
type msvBound struct {
	d, nc, np int
	buf       []float64

	phi, dphi []float64 // φ_i and 1 − φ_i² = dφ_i/du
	om, op    []float64 // 1 − φ_i and 1 + φ_i, without cancellation
	sig, tau  []float64
	normT     []float64 // −½ log 2π − log τ_i
	logHalfT2 []float64 // log(1/(2τ_i²))
	z         []float64 // CPCs, one per correlation coordinate
	lr        []float64 // L, R = L Lᵀ
	sl        []float64 // diag(σ) L, the Cholesky factor of Σ
	linv      []float64 // (diag(σ) L)⁻¹
	q         []float64 // Σ⁻¹
	g         []float64 // nc×D: G_c = linvᵀ (∂L/∂u_c row l), see compute
	p, lp     []float64 // stationary P and its Cholesky factor
	pinv      []float64 // P⁻¹
	ih        []float64 // (2D+nc)×D: ∂P/∂u_j = e_r hᵀ + h e_rᵀ, h here
	itr       []float64 // tr(P⁻¹ ∂P/∂u_j)
	work      []float64 // Bind-time scratch: D² + D

	transConst float64 // −½ log det(2πΣ) = MaxLogTransition
	initConst  float64 // −½ log det(2πP)
}

// init sizes b for d series (a no-op when it already has them).
func (b *msvBound) init(d int) {
	if b.d == d && b.buf != nil {
		return
	}
	nc := d * (d - 1) / 2
	np := 3*d + nc
	d2 := d * d
	nP := 2*d + nc
	size := 8*d + nc + 7*d2 + nc*d + nP*d + nP + d2 + d
	b.d, b.nc, b.np = d, nc, np
	b.buf = make([]float64, size)
	rest := b.buf
	take := func(n int) []float64 {
		s := rest[:n:n]
		rest = rest[n:]
		return s
	}
	b.phi, b.dphi, b.om, b.op = take(d), take(d), take(d), take(d)
	b.sig, b.tau, b.normT, b.logHalfT2 = take(d), take(d), take(d), take(d)
	b.z = take(nc)
	b.lr, b.sl, b.linv, b.q = take(d2), take(d2), take(d2), take(d2)
	b.g = take(nc * d)
	b.p, b.lp, b.pinv = take(d2), take(d2), take(d2)
	b.ih, b.itr = take(nP*d), take(nP)
	b.work = take(d2 + d)
}

// name returns the parameter name of u-coordinate k.
func (b *msvBound) name(k int) string { return MSV{D: b.d}.paramName(k) }

// oneMinusProd returns 1 − φ_iφ_j without cancellation when both are close
// to 1 or to −1.
func (b *msvBound) oneMinusProd(i, j int) float64 {
	pi, pj := b.phi[i], b.phi[j]
	switch {
	case i == j:
		return b.dphi[i]
	case pi >= 0 && pj >= 0:
		return b.om[i] + pi*b.om[j] // 1 − φ_i + φ_i(1 − φ_j)
	case pi <= 0 && pj <= 0:
		return b.op[i] - pi*b.op[j] // 1 + φ_i − φ_i(1 + φ_j)
	default:
		return 1 - pi*pj
	}
}

// compute validates u and fills b (sized by init) from it. On error b's
// contents are unspecified.
func (b *msvBound) compute(u []float64) error {
	d := b.d
	if len(u) != b.np {
		panic(fmt.Sprintf("models: MSV: len(u) = %d, want %d for D = %d", len(u), b.np, d))
	}
	for k, v := range u {
		if math.IsNaN(v) {
			return &ssm.ParamError{Name: b.name(k), Value: v, Reason: fmt.Sprintf("u[%d] is NaN", k)}
		}
	}
	logDetS, err := b.scales(u)
	if err != nil {
		return err
	}
	logDetL, err := b.correlationFactor(u)
	if err != nil {
		return err
	}
	b.transConst = -float64(d)*halfLog2Pi - logDetS - logDetL
	b.transitionInverse()
	b.correlationGrads()
	if err := b.stationary(logDetS); err != nil {
		return err
	}
	b.stationaryGrads()
	return nil
}

// halfLog2Pi is ½ log 2π.
const halfLog2Pi = 0.91893853320467274178

// scales fills φ, σ and τ and what derives from them, and returns
// Σ log σ_i.
func (b *msvBound) scales(u []float64) (float64, error) {
	d, nc := b.d, b.nc
	logDetS := 0.0 // Σ log σ_i
	for i := 0; i < d; i++ {
		v, dv, _, _ := Symmetric.Forward(u[i])
		if !(v > -1 && v < 1) || !(dv > 0) {
			return 0, &ssm.ParamError{Name: b.name(i), Value: v, Reason: fmt.Sprintf("must lie strictly inside (-1, 1) (u[%d] = %v)", i, u[i])}
		}
		b.phi[i], b.dphi[i] = v, dv
		// 1 ∓ φ from the logistic s = 1/(1 + e^(−2u)): 1 − φ = 2(1 − s), 1 + φ = 2s.
		if t := 2 * u[i]; t >= 0 {
			e := math.Exp(-t)
			b.om[i], b.op[i] = 2*e/(1+e), 2/(1+e)
		} else {
			e := math.Exp(t)
			b.om[i], b.op[i] = 2/(1+e), 2*e/(1+e)
		}
		for _, k := range [2]int{d + i, 2*d + nc + i} {
			s := math.Exp(u[k])
			if s2 := s * s; !(s2 > 0) || math.IsInf(s2, 0) {
				return 0, &ssm.ParamError{Name: b.name(k), Value: s, Reason: "its square under- or overflows"}
			}
			if k == d+i {
				b.sig[i] = s
				logDetS += u[k]
			} else {
				b.tau[i] = s
				b.normT[i] = -halfLog2Pi - u[k]
				b.logHalfT2[i] = -math.Ln2 - 2*u[k]
			}
		}
	}
	return logDetS, nil
}

// correlationFactor fills the Cholesky factor L of R from the canonical
// partial correlations and returns log det L.
func (b *msvBound) correlationFactor(u []float64) (float64, error) {
	d := b.d
	// L from the CPCs, with log L_jj = ½ Σ_{k<j} log(1 − z_kj²).
	l := b.lr
	clear(l)
	l[0] = 1
	logDetL := 0.0
	for j := 1; j < d; j++ {
		rem, logRem := 1.0, 0.0
		for k := 0; k < j; k++ {
			c := msvCorrIndex(d, k, j)
			z, dz, lj, _ := Symmetric.Forward(u[2*d+c])
			if !(z > -1 && z < 1) || !(dz > 0) {
				return 0, &ssm.ParamError{Name: b.name(2*d + c), Value: z,
					Reason: fmt.Sprintf("its partial correlation must lie strictly inside (-1, 1) (u[%d] = %v)", 2*d+c, u[2*d+c])}
			}
			b.z[c] = z
			l[j*d+k] = z * math.Sqrt(rem)
			rem *= dz
			logRem += lj
		}
		if !(rem > 0) {
			c := msvCorrIndex(d, j-1, j)
			return 0, &ssm.ParamError{Name: b.name(2*d + c), Value: b.z[c], Reason: "the correlation matrix R is numerically singular"}
		}
		l[j*d+j] = math.Sqrt(rem)
		logDetL += 0.5 * logRem
	}
	return logDetL, nil
}

// transitionInverse fills S L, (S L)⁻¹ and Σ⁻¹.
func (b *msvBound) transitionInverse() {
	d, l := b.d, b.lr
	// S L, its inverse L⁻¹ S⁻¹ (forward substitution on L, then column
	// j divided by σ_j) and Σ⁻¹ = linvᵀ linv.
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			b.sl[i*d+j] = b.sig[i] * l[i*d+j]
		}
	}
	linv := b.linv
	clear(linv)
	for c := 0; c < d; c++ {
		for i := c; i < d; i++ {
			s := 0.0
			if i == c {
				s = 1
			}
			for k := c; k < i; k++ {
				s -= l[i*d+k] * linv[k*d+c]
			}
			linv[i*d+c] = s / l[i*d+i]
		}
	}
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			linv[i*d+j] /= b.sig[j]
		}
	}
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			s := 0.0
			for m := i; m < d; m++ { // linv[m][i] ≠ 0 needs m ≥ i ≥ j
				s += linv[m*d+i] * linv[m*d+j]
			}
			b.q[i*d+j], b.q[j*d+i] = s, s
		}
	}
}

// correlationGrads fills G_c = linvᵀ ∂L/∂u_c for every CPC.
func (b *msvBound) correlationGrads() {
	d, l, linv := b.d, b.lr, b.linv
	// ∂L/∂u_c for the CPC z_kl is nonzero in row l only:
	// ∂L_lk/∂u = √rem_k (1 − z²), ∂L_lj/∂u = −z L_lj for k < j ≤ l.
	// The transition score of u_c is a_l (gᵀ v) + z with v = linv e, so
	// store G_c = linvᵀ g: gᵀ v = G_c · e.
	gr := b.work[:d] // g, the row of ∂L/∂u_c
	for ll := 1; ll < d; ll++ {
		rem := 1.0
		for k := 0; k < ll; k++ {
			c := msvCorrIndex(d, k, ll)
			z := b.z[c]
			dz := (1 - z) * (1 + z)
			clear(gr)
			gr[k] = math.Sqrt(rem) * dz
			for j := k + 1; j <= ll; j++ {
				gr[j] = -z * l[ll*d+j]
			}
			rem *= dz
			gc := b.g[c*d : (c+1)*d]
			for col := 0; col < d; col++ {
				s := 0.0
				for j := col; j <= ll; j++ {
					s += gr[j] * linv[j*d+col]
				}
				gc[col] = s
			}
		}
	}
}

// stationary fills the stationary covariance P, its scaled Cholesky
// factor and inverse, and the initial density's constant.
func (b *msvBound) stationary(logDetS float64) error {
	d, l := b.d, b.lr
	// Stationary P = S (R ∘ C) S, C_ij = 1/(1 − φ_iφ_j), through the
	// Cholesky factor of M = R ∘ C (better scaled than P).
	mm := b.work[:d*d]
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			r := 0.0
			for k := 0; k <= j; k++ {
				r += l[i*d+k] * l[j*d+k]
			}
			if i == j {
				r = 1
			}
			v := r / b.oneMinusProd(i, j)
			mm[i*d+j], mm[j*d+i] = v, v
			pv := b.sig[i] * b.sig[j] * v
			b.p[i*d+j], b.p[j*d+i] = pv, pv
		}
	}
	for _, v := range b.p {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return &ssm.ParamError{Name: b.name(b.maxPhi()), Value: b.phi[b.maxPhi()], Reason: "the stationary covariance P_ij = Σ_ij/(1 − φ_iφ_j) overflows"}
		}
	}
	if !kfChol(b.lp, mm, d) {
		return &ssm.ParamError{Name: b.name(b.maxPhi()), Value: b.phi[b.maxPhi()],
			Reason: "the stationary covariance P_ij = Σ_ij/(1 − φ_iφ_j) is numerically not positive definite"}
	}
	logDetP := 0.0
	for i := 0; i < d; i++ {
		logDetP += math.Log(b.lp[i*d+i])
		for j := 0; j <= i; j++ {
			b.lp[i*d+j] *= b.sig[i]
		}
	}
	b.initConst = -float64(d)*halfLog2Pi - logDetS - logDetP
	// P⁻¹ column by column from L_P (mm reused as the identity).
	clear(mm)
	for i := 0; i < d; i++ {
		mm[i*d+i] = 1
	}
	kfCholSolve(b.pinv, b.lp, mm, d, b.work[d*d:])
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			s := 0.5 * (b.pinv[i*d+j] + b.pinv[j*d+i])
			b.pinv[i*d+j], b.pinv[j*d+i] = s, s
		}
	}
	return nil
}

// stationaryGrads fills the derivatives of P (as rows h) and the traces
// tr(P⁻¹ ∂P) of every coordinate P depends on.
func (b *msvBound) stationaryGrads() {
	d, l := b.d, b.lr
	gr := b.work[:d]
	// ∂P/∂u_j = e_r hᵀ + h e_rᵀ for the coordinates P depends on (φ_i, σ_i,
	// CPCs), so xᵀ P⁻¹ ∂P P⁻¹ x = 2 x̃_r (h · x̃) with x̃ = P⁻¹ x.
	clear(b.ih)
	for i := 0; i < d; i++ {
		hp, hs := b.ih[i*d:(i+1)*d], b.ih[(d+i)*d:(d+i+1)*d]
		for j := 0; j < d; j++ {
			pij := b.p[i*d+j]
			hs[j] = pij // log σ_i scales row and column i
			if j == i {
				hp[j] = b.phi[i] * pij // ½ ∂P_ii = φ_i P_ii
			} else {
				hp[j] = pij * b.phi[j] * b.dphi[i] / b.oneMinusProd(i, j)
			}
		}
		b.itr[i] = b.traceRow(i, hp)
		b.itr[d+i] = b.traceRow(i, hs)
	}
	// The CPC z_kl: ∂R = e_l (L g)ᵀ + (L g) e_lᵀ with (L g)_l = 0 (R_ll = 1),
	// so h_j = σ_l σ_j (L g)_j / (1 − φ_lφ_j).
	for ll := 1; ll < d; ll++ {
		rem := 1.0
		for k := 0; k < ll; k++ {
			c := msvCorrIndex(d, k, ll)
			z := b.z[c]
			dz := (1 - z) * (1 + z)
			clear(gr)
			gr[k] = math.Sqrt(rem) * dz
			for j := k + 1; j <= ll; j++ {
				gr[j] = -z * l[ll*d+j]
			}
			rem *= dz
			h := b.ih[(2*d+c)*d : (2*d+c+1)*d]
			for j := 0; j < d; j++ {
				if j == ll {
					h[j] = 0
					continue
				}
				s := 0.0
				for col := 0; col <= min(j, ll); col++ {
					s += l[j*d+col] * gr[col]
				}
				h[j] = b.sig[ll] * b.sig[j] * s / b.oneMinusProd(ll, j)
			}
			b.itr[2*d+c] = b.traceRow(ll, h)
		}
	}
}

// traceRow returns tr(P⁻¹ (e_r hᵀ + h e_rᵀ)) = 2 (P⁻¹ h)_r.
func (b *msvBound) traceRow(r int, h []float64) float64 {
	d := b.d
	s := 0.0
	for j := 0; j < d; j++ {
		s += b.pinv[r*d+j] * h[j]
	}
	return 2 * s
}

// maxPhi returns the index of the largest |φ_i|.
func (b *msvBound) maxPhi() int {
	best := 0
	for i, v := range b.phi {
		if math.Abs(v) > math.Abs(b.phi[best]) {
			best = i
		}
	}
	return best
}

// msvKernel is MSV bound at one u. spare holds the storage Rebind
// computes into, swapped in on success so that a failed Rebind leaves the
// kernel unchanged.
type msvKernel struct {
	msvBound
	spare msvBound
}

// Rebind implements ssm.Rebinder. u must have the length of the kernel's
// D; the first call allocates the spare buffer, later calls nothing.
func (k *msvKernel) Rebind(u []float64) error {
	k.spare.init(k.d)
	if err := k.spare.compute(u); err != nil {
		return err
	}
	k.msvBound, k.spare = k.spare, k.msvBound
	return nil
}

// MaxLogTransition implements ssm.TransitionBounder: −½ log det(2πΣ), the
// transition density at its mode.
func (k *msvKernel) MaxLogTransition() float64 { return k.transConst }

func (k *msvKernel) rows(method string, x []float64) int {
	if len(x)%k.d != 0 {
		panic(fmt.Sprintf("models: MSV.%s: block length %d is not a multiple of %d", method, len(x), k.d))
	}
	return len(x) / k.d
}

func (k *msvKernel) checkPrev(method string, x, prev []float64) int {
	n := k.rows(method, x)
	if len(prev) != len(x) {
		panic(fmt.Sprintf("models: MSV.%s: len(prev) = %d, len(x) = %d", method, len(prev), len(x)))
	}
	return n
}

func (k *msvKernel) checkRow(method string, x []float64) {
	if len(x) != k.d {
		panic(fmt.Sprintf("models: MSV.%s: len(x) = %d, want one row of %d", method, len(x), k.d))
	}
}

func (k *msvKernel) checkObs(method string, y []float64) {
	if len(y) != k.d {
		panic(fmt.Sprintf("models: MSV.%s: len(y) = %d, want %d", method, len(y), k.d))
	}
}

// SampleInitial implements ssm.Kernel: x = L_P ε with L_P L_Pᵀ = P.
func (k *msvKernel) SampleInitial(x []float64, rng *rand.Rand) {
	d, n := k.d, k.rows("SampleInitial", x)
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		for i := range row {
			row[i] = rng.NormFloat64()
		}
		for i := d - 1; i >= 0; i-- { // bottom up: row[j], j ≤ i, still hold ε
			s := 0.0
			for j := 0; j <= i; j++ {
				s += k.lp[i*d+j] * row[j]
			}
			row[i] = s
		}
	}
}

// SampleTransition implements ssm.Kernel: x = φ ∘ prev + diag(σ) L ε.
func (k *msvKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	d, n := k.d, k.checkPrev("SampleTransition", x, prev)
	for r := 0; r < n; r++ {
		row, pr := x[r*d:(r+1)*d], prev[r*d:(r+1)*d]
		for i := range row {
			row[i] = rng.NormFloat64()
		}
		for i := d - 1; i >= 0; i-- {
			s := k.phi[i] * pr[i]
			for j := 0; j <= i; j++ {
				s += k.sl[i*d+j] * row[j]
			}
			row[i] = s
		}
	}
}

// SampleEmission implements ssm.Kernel: y_i = τ_i exp(x_i/2) ε_i.
func (k *msvKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	k.checkObs("SampleEmission", y)
	k.checkRow("SampleEmission", x)
	for i := range y {
		y[i] = k.tau[i] * math.Exp(0.5*x[i]) * rng.NormFloat64()
	}
}

// LogInitial implements ssm.Kernel: log N(x | 0, P).
func (k *msvKernel) LogInitial(x []float64) float64 {
	k.checkRow("LogInitial", x)
	d := k.d
	q := 0.0
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += k.pinv[i*d+j] * x[j]
		}
		q += x[i] * s
	}
	return k.initConst - 0.5*q
}

// quadTrans returns eᵀ Σ⁻¹ e = |L⁻¹ S⁻¹ e|² for e = x − φ ∘ prev, with e
// written into e.
func (k *msvKernel) quadTrans(e, x, prev []float64) float64 {
	d := k.d
	for i := range e {
		e[i] = x[i] - k.phi[i]*prev[i]
	}
	q := 0.0
	for i := 0; i < d; i++ {
		v := 0.0
		for j, ej := range e[:i+1] {
			v += k.linv[i*d+j] * ej
		}
		q += v * v
	}
	return q
}

// LogTransitions implements ssm.Kernel: log N(x | φ ∘ prev_j, Σ).
func (k *msvKernel) LogTransitions(dst, x, prev []float64) {
	k.checkRow("LogTransitions", x)
	d, n := k.d, k.rows("LogTransitions", prev)
	if len(dst) != n {
		panic(fmt.Sprintf("models: MSV.LogTransitions: len(dst) = %d, want %d", len(dst), n))
	}
	var stack [msvStackD]float64
	e := stack[:]
	if d > len(e) {
		e = make([]float64, d)
	}
	e = e[:d]
	for r := range dst {
		dst[r] = k.transConst - 0.5*k.quadTrans(e, x, prev[r*d:(r+1)*d])
	}
}

// logA returns log(y²/(2τ_i²)), −Inf for y = 0 (see svmKernel.logA).
func (k *msvKernel) logA(i int, y float64) float64 {
	if y == 0 {
		return math.Inf(-1)
	}
	return 2*math.Log(math.Abs(y)) + k.logHalfT2[i]
}

// AddLogEmission implements ssm.Kernel: for each observed component i,
// −½ log(2πτ_i²) − x_i/2 − y_i² e^(−x_i)/(2τ_i²) (the SVM's, with the
// same care for y_i = 0 and extreme states); missing components add 0.
func (k *msvKernel) AddLogEmission(logw, y, x []float64) {
	k.checkObs("AddLogEmission", y)
	d, n := k.d, k.rows("AddLogEmission", x)
	if len(logw) != n {
		panic(fmt.Sprintf("models: MSV.AddLogEmission: len(logw) = %d, want %d", len(logw), n))
	}
	for i, yi := range y {
		if math.IsNaN(yi) {
			continue
		}
		c := k.normT[i]
		if yi == 0 {
			for r := range logw {
				logw[r] += c - 0.5*x[r*d+i]
			}
			continue
		}
		la := k.logA(i, yi)
		for r := range logw {
			xv := x[r*d+i]
			logw[r] += c - 0.5*xv - expShifted(la, xv)
		}
	}
}

// AddScore implements ssm.Kernel. With e = x − φ ∘ prev, a = diag(σ) Σ⁻¹ e
// and z the CPCs, the transition adds
//
//	∂/∂u_φi = (Σ⁻¹e)_i prev_i (1 − φ_i²),  ∂/∂u_σi = e_i (Σ⁻¹e)_i − 1,
//	∂/∂u_kl = a_l (∂L_l·/∂u_kl) · (L⁻¹ diag(σ)⁻¹ e) + z_kl,
//
// and each observed component the SVM's ∂/∂u_τi = y_i² e^(−x_i)/τ_i² − 1.
// For initial states (prev nil), ∂/∂u_j log N(x|0, P) = x̃_r (h_j·x̃) −
// ½ tr(P⁻¹ ∂P/∂u_j) with x̃ = P⁻¹x and ∂P/∂u_j = e_r h_jᵀ + h_j e_rᵀ.
func (k *msvKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	d, nc, np := k.d, k.nc, k.np
	n := k.rows("AddScore", x)
	if len(h) != n*np {
		panic(fmt.Sprintf("models: MSV.AddScore: len(h) = %d, want %d", len(h), n*np))
	}
	var stack [3 * msvStackD]float64
	buf := stack[:]
	if 3*d > len(buf) {
		buf = make([]float64, 3*d)
	}
	e, qe, la := buf[:d:d], buf[d:2*d:2*d], buf[2*d:3*d:3*d]
	if prev == nil {
		nP := 2*d + nc
		for r := 0; r < n; r++ {
			row, hr := x[r*d:(r+1)*d], h[r*np:(r+1)*np]
			kfMatVec(qe, k.pinv, row, d) // x̃
			for j := 0; j < nP; j++ {
				ri := j % d // φ_i and σ_i: row i
				if j >= 2*d {
					ri = k.corrRow(j - 2*d)
				}
				hj := k.ih[j*d : (j+1)*d]
				s := 0.0
				for c, v := range hj {
					s += v * qe[c]
				}
				hr[j] += w * (qe[ri]*s - 0.5*k.itr[j])
			}
		}
		return
	}
	k.checkPrev("AddScore", x, prev)
	k.checkObs("AddScore", y)
	for i, yi := range y {
		la[i] = math.NaN()
		if !math.IsNaN(yi) {
			la[i] = k.logA(i, yi) + math.Ln2 // log(y²/τ²)
		}
	}
	tauCol := 2*d + nc
	for r := 0; r < n; r++ {
		row, pr, hr := x[r*d:(r+1)*d], prev[r*d:(r+1)*d], h[r*np:(r+1)*np]
		for i := range e {
			e[i] = row[i] - k.phi[i]*pr[i]
		}
		kfMatVec(qe, k.q, e, d)
		for i := 0; i < d; i++ {
			hr[i] += w * qe[i] * pr[i] * k.dphi[i]
			hr[d+i] += w * (e[i]*qe[i] - 1)
			if l := la[i]; !math.IsNaN(l) {
				if math.IsInf(l, -1) { // y_i = 0
					hr[tauCol+i] -= w
				} else {
					hr[tauCol+i] += w * (expShifted(l, row[i]) - 1)
				}
			}
		}
		c := 0
		for kk := 0; kk < d; kk++ {
			for l := kk + 1; l < d; l++ {
				g := k.g[c*d : (c+1)*d]
				s := 0.0
				for m := 0; m <= l; m++ {
					s += g[m] * e[m]
				}
				hr[2*d+c] += w * (k.sig[l]*qe[l]*s + k.z[c])
				c++
			}
		}
	}
}

// corrRow returns l for the correlation coordinate c of the pair k < l.
func (b *msvBound) corrRow(c int) int {
	d := b.d
	for k := 0; k < d; k++ {
		if n := d - 1 - k; c < n {
			return k + 1 + c
		} else {
			c -= n
		}
	}
	panic("models: MSV: correlation index out of range")
}

// LinearGaussian implements ssm.LinearGaussian: F = diag(φ), c = 0,
// Q = Σ, m0 = 0 and P0 = P, the stationary covariance.
func (k *msvKernel) LinearGaussian(F, c, Q, m0, P0 []float64) {
	d := k.d
	for i := 0; i < d; i++ {
		c[i], m0[i] = 0, 0
		for j := 0; j < d; j++ {
			F[i*d+j] = 0
			Q[i*d+j], P0[i*d+j] = 0, k.p[i*d+j]
			for m := 0; m <= min(i, j); m++ {
				Q[i*d+j] += k.sl[i*d+m] * k.sl[j*d+m]
			}
		}
		F[i*d+i] = k.phi[i]
	}
}

// SeparableEmission implements ssm.SeparableEmission: y_i depends on x_i
// only.
func (k *msvKernel) SeparableEmission() bool { return true }

// LogEmissionCurvature implements ssm.EmissionCurvature: per observed
// component, ℓ_i = −½ log(2πτ_i²) − x_i/2 − a_i e^(−x_i) with
// a_i = y_i²/(2τ_i²), ∂ℓ_i/∂x_i = a_i e^(−x_i) − ½ and ∂²ℓ_i/∂x_i² =
// −a_i e^(−x_i): the Hessian is diagonal and never positive, so the
// emission is log-concave in x.
func (k *msvKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	k.checkObs("LogEmissionCurvature", y)
	k.checkRow("LogEmissionCurvature", x)
	d := k.d
	clear(g)
	clear(H[:d*d])
	l := 0.0
	for i, yi := range y {
		if math.IsNaN(yi) {
			continue
		}
		ae := 0.0
		if yi != 0 {
			ae = expShifted(k.logA(i, yi), x[i])
		}
		l += k.normT[i] - 0.5*x[i] - ae
		g[i] = ae - 0.5
		H[i*d+i] = -ae
	}
	return l
}
