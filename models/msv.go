package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// MSV is the multivariate stochastic volatility model of D return series
// with correlated log-volatility shocks:
//
//	x_t = diag(φ) x_{t−1} + η_t,  η_t ~ N(0, Σ),  Σ = diag(σ) R diag(σ),
//	x_0 ~ N(0, P),  P_ij = Σ_ij / (1 − φ_i φ_j),
//	y_{t,i} = τ_i exp(x_{t,i}/2) ε_{t,i},  ε_t ~ N(0, I),
//
// with |φ_i| < 1, σ_i, τ_i > 0 and R a D×D correlation matrix. P is the
// stationary covariance of x_t, the exact solution of the discrete Lyapunov
// equation P = diag(φ) P diag(φ) + Σ (element-wise, as diag(φ) is
// diagonal). Each component i is the scalar SVM; MSV{D: 1} is the SVM
// with parameters renamed (the same u, prior, densities and score).
//
// Natural parameters, in order (Param = 3D + D(D−1)/2):
//
//	φ_1..φ_D ("phi1", …), σ_1..σ_D ("sigma1", …),
//	the correlations R_ij, i < j, row by row (R_12, R_13, …, R_1D, R_23, …),
//	τ_1..τ_D ("tau1", …).
//
// For D = 2 the correlation is named "rho" (phi1, phi2, sigma1, sigma2, rho,
// tau1, tau2); for D > 2 R_ij is named "rho12", "rho13", … ("rho1,10" and so
// on when D ≥ 10).
//
// Unconstrained vector: u = atanh φ_i, log σ_i, log τ_i, and for R the
// canonical partial correlations (CPCs) z_ij = tanh u_ij of Lewandowski,
// Kurowicka and Joe (2009), the transform of the Stan reference manual's
// "Correlation matrices" section: z_ij (i < j) is the partial correlation
// of series i and j given series 1..i−1, and the Cholesky factor L of
// R = L Lᵀ has, row j,
//
//	L_j1 = z_1j,  L_jk = z_kj √(1 − Σ_{m<k} L_jm²) (1 < k < j),  L_jj = √(1 − Σ_{m<j} L_jm²).
//
// Every z ∈ (−1, 1)^{D(D−1)/2} gives a positive definite R, and back. For
// D = 2, R_12 = z_12: u_rho = atanh ρ. The log-Jacobian of u ↦ R is
// Σ_{i<j} (1 + (D−1−i)/2) log(1 − z_ij²) (i 1-based), which Constrain
// includes in log|det ∂θ/∂u|.
//
// Default prior (Prior nil): (φ_i+1)/2 ~ Beta(5, 1.5), σ_i² ~ InvGamma(2,
// 0.5), τ_i² ~ InvGamma(2, 0.5) (the SVM's), independent, and R ~ LKJ(1),
// the uniform law on correlation matrices. Under LKJ(η) the CPCs are
// independent with (z_ij+1)/2 ~ Beta(β_i, β_i), β_i = η + (D−1−i)/2
// (Lewandowski et al. 2009), so the default prior is a product
// of per-coordinate laws pushed forward to u (see DefaultMSVPrior), and
// normalised: for D = 2 it is ρ ~ Uniform(−1, 1); for D = 3 its density on
// R is 2/π² (the set of 3×3 correlation matrices has volume π²/2); every
// R_ij has the marginal law (R_ij+1)/2 ~ Beta(D/2, D/2).
//
// A missing component y_{t,i} (NaN) adds nothing to the emission density
// and to the τ_i score; the other components count as usual.
//
// The kernel uses the bootstrap proposal (it has no ssm.Proposer); it
// implements ssm.TransitionBounder (max log p(x_t|x_{t−1}) = −½ log det(2πΣ))
// and ssm.Rebinder, whose first call sizes a spare buffer and later calls
// allocate nothing. The bulk methods allocate nothing for D ≤ msvStackD
// (16); above it they allocate one scratch vector per call (not per
// particle).
//
// An MSV with D < 1 has no valid parameters: Bind, Unconstrain, Params,
// StationaryCov, Start and Simulate return a *ssm.ParamError naming "D";
// Dims reports zero sizes, ParamNames nil, LogPrior −Inf and Constrain NaN.
type MSV struct {
	D     int       // number of series, ≥ 1
	Prior ssm.Prior // prior on u; nil means DefaultMSVPrior(D)
}

// msvStackD is the largest D whose scratch vectors the kernel's bulk
// methods keep on the stack.
const msvStackD = 16

var (
	_ ssm.Model             = MSV{}
	_ ssm.Starter           = MSV{}
	_ ssm.TransitionBounder = (*msvKernel)(nil)
	_ ssm.Rebinder          = (*msvKernel)(nil)
)

// msvPhiPrior and msvScalePrior are the SVM's marginals (ar1Spec).
var (
	msvPhiPrior   = Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}
	msvScalePrior = InvGammaSq{A: 2, B: 0.5}
)

// msvCorrBeta returns the LKJ(1) shape β of the CPCs z_kl in row k
// (0-based) of D series: β = 1 + (D−2−k)/2.
func msvCorrBeta(d, k int) float64 { return 1 + 0.5*float64(d-2-k) }

// msvCorrJac returns the exponent of log(1 − z_kl²) in log|det ∂R/∂u| for
// row k (0-based): 1 + (D−2−k)/2 (1 from the tanh, (D−2−k)/2 from the CPC
// map). It equals the LKJ(1) shape msvCorrBeta: LKJ(1) is flat in R.
func msvCorrJac(d, k int) float64 { return 1 + 0.5*float64(d-2-k) }

func (m MSV) nCorr() int { return m.D * (m.D - 1) / 2 }

func (m MSV) nParam() int { return 3*m.D + m.nCorr() }

// errD is the error of an MSV with D < 1, or nil.
func (m MSV) errD() error {
	if m.D < 1 {
		return &ssm.ParamError{Name: "D", Value: float64(m.D), Reason: "MSV needs at least one series (D ≥ 1)"}
	}
	return nil
}

func (m MSV) checkLen(method string, a, b []float64) {
	if p := m.nParam(); len(a) != p || len(b) != p {
		panic(fmt.Sprintf("models: MSV.%s: slice lengths %d and %d, want %d for D = %d", method, len(a), len(b), p, m.D))
	}
}

// msvCorrIndex returns the position among the correlation coordinates of
// the pair k < l (0-based): pairs run row by row, (0,1), (0,2), …, (1,2), ….
func msvCorrIndex(d, k, l int) int { return k*d - k*(k+1)/2 + l - k - 1 }

// msvCorrName names the correlation coordinate c of D series.
func msvCorrName(d, c int) string {
	if d == 2 {
		return "rho"
	}
	for k := 0; k < d; k++ {
		if n := d - 1 - k; c < n {
			if d < 10 {
				return fmt.Sprintf("rho%d%d", k+1, k+2+c)
			}
			return fmt.Sprintf("rho%d,%d", k+1, k+2+c)
		} else {
			c -= n
		}
	}
	panic(fmt.Sprintf("models: MSV: correlation index out of range for D = %d", d))
}

// paramName names coordinate k of u.
func (m MSV) paramName(k int) string {
	d, nc := m.D, m.nCorr()
	switch {
	case k < d:
		return fmt.Sprintf("phi%d", k+1)
	case k < 2*d:
		return fmt.Sprintf("sigma%d", k-d+1)
	case k < 2*d+nc:
		return msvCorrName(d, k-2*d)
	default:
		return fmt.Sprintf("tau%d", k-2*d-nc+1)
	}
}

// Dims implements ssm.Model: State = Obs = D, Param = 3D + D(D−1)/2 (all
// zero when D < 1).
func (m MSV) Dims() ssm.Dims {
	if m.D < 1 {
		return ssm.Dims{}
	}
	return ssm.Dims{State: m.D, Obs: m.D, Param: m.nParam()}
}

// ParamNames implements ssm.Model (see the type's documentation).
func (m MSV) ParamNames() []string {
	if m.D < 1 {
		return nil
	}
	names := make([]string, m.nParam())
	for k := range names {
		names[k] = m.paramName(k)
	}
	return names
}

// DefaultMSVPrior returns the default prior of MSV{D: d} on u: per
// coordinate, (φ_i+1)/2 ~ Beta(5, 1.5), σ_i² and τ_i² ~ InvGamma(2, 0.5)
// (as DefaultSVMPrior) and, for the CPC z_kl of the pair k < l,
// (z_kl+1)/2 ~ Beta(β_k, β_k) with β_k = 1 + (d−1−k)/2 (k 1-based), which
// makes R ~ LKJ(1), the uniform law on correlation matrices. The result is
// a fresh copy the caller may modify (d < 1 gives an empty prior).
func DefaultMSVPrior(d int) Independent {
	if d < 1 {
		return Independent{}
	}
	m := MSV{D: d}
	p := m.nParam()
	ind := Independent{Transforms: make([]Transform, p), Marginals: make([]Marginal, p)}
	nc := m.nCorr()
	for i := 0; i < d; i++ {
		ind.Transforms[i], ind.Marginals[i] = Symmetric, msvPhiPrior
		ind.Transforms[d+i], ind.Marginals[d+i] = Positive, msvScalePrior
		ind.Transforms[2*d+nc+i], ind.Marginals[2*d+nc+i] = Positive, msvScalePrior
	}
	for k := 0; k < d; k++ {
		b := msvCorrBeta(d, k)
		for l := k + 1; l < d; l++ {
			c := 2*d + msvCorrIndex(d, k, l)
			ind.Transforms[c], ind.Marginals[c] = Symmetric, Beta{A: b, B: b, Lo: -1, Hi: 1}
		}
	}
	return ind
}

// LogPrior implements ssm.Prior with m.Prior, or the default prior (see
// DefaultMSVPrior) when it is nil; the default allocates nothing. D < 1
// gives −Inf.
func (m MSV) LogPrior(grad, u []float64) float64 {
	if m.Prior != nil {
		return m.Prior.LogPrior(grad, u)
	}
	if m.D < 1 {
		return math.Inf(-1)
	}
	if p := m.nParam(); len(u) != p || (grad != nil && len(grad) != p) {
		panic(fmt.Sprintf("models: MSV.LogPrior: len(u) = %d, len(grad) = %d, want %d", len(u), len(grad), p))
	}
	d, nc := m.D, m.nCorr()
	total := 0.0
	add := func(k int, lp, dlp, dv, logJ, dlogJ float64) {
		total += lp + logJ
		if grad != nil {
			grad[k] = dlp*dv + dlogJ
		}
	}
	for i := 0; i < d; i++ {
		v, dv, logJ, dlogJ := Symmetric.Forward(u[i])
		lp, dlp := msvPhiPrior.LogDensity(v)
		add(i, lp, dlp, dv, logJ, dlogJ)
		for _, k := range [2]int{d + i, 2*d + nc + i} {
			v, dv, logJ, dlogJ := Positive.Forward(u[k])
			lp, dlp := msvScalePrior.LogDensity(v)
			add(k, lp, dlp, dv, logJ, dlogJ)
		}
	}
	c := 2 * d
	for k := 0; k < d; k++ {
		b := msvCorrBeta(d, k)
		beta := Beta{A: b, B: b, Lo: -1, Hi: 1}
		for l := k + 1; l < d; l++ {
			v, dv, logJ, dlogJ := Symmetric.Forward(u[c])
			lp, dlp := beta.LogDensity(v)
			add(c, lp, dlp, dv, logJ, dlogJ)
			c++
		}
	}
	return total
}

// Constrain implements ssm.Model: θ = (tanh u_φ, exp u_σ, R(z), exp u_τ)
// with z = tanh u_R (see the type's documentation), returning
// log|det ∂θ/∂u|. D < 1 gives NaN.
func (m MSV) Constrain(theta, u []float64) float64 {
	if m.D < 1 {
		return math.NaN()
	}
	m.checkLen("Constrain", theta, u)
	d, nc := m.D, m.nCorr()
	logJ := 0.0
	for i := 0; i < d; i++ {
		v, _, lj, _ := Symmetric.Forward(u[i])
		theta[i] = v
		logJ += lj
		for _, k := range [2]int{d + i, 2*d + nc + i} {
			v, _, lj, _ := Positive.Forward(u[k])
			theta[k] = v
			logJ += lj
		}
	}
	if nc == 0 {
		return logJ
	}
	// Row l of L from the CPCs z_kl, k < l; R_kl = Σ_{m≤k} L_km L_lm.
	l := make([]float64, d*d)
	l[0] = 1
	for j := 1; j < d; j++ {
		rem := 1.0 // 1 − Σ_{m<k} L_jm², kept as a product of (1 − z²)
		for k := 0; k < j; k++ {
			z, dz, lj, _ := Symmetric.Forward(u[2*d+msvCorrIndex(d, k, j)])
			l[j*d+k] = z * math.Sqrt(rem)
			rem *= dz
			logJ += msvCorrJac(d, k) * lj
		}
		l[j*d+j] = math.Sqrt(rem)
	}
	for k := 0; k < d; k++ {
		for j := k + 1; j < d; j++ {
			s := 0.0
			for p := 0; p <= k; p++ {
				s += l[k*d+p] * l[j*d+p]
			}
			theta[2*d+msvCorrIndex(d, k, j)] = s
		}
	}
	return logJ
}

// Unconstrain implements ssm.Model. |φ_i| ≥ 1, σ_i ≤ 0, τ_i ≤ 0, a
// correlation outside (−1, 1), a correlation matrix that is not positive
// definite, NaN or Inf give a *ssm.ParamError naming the parameter (for a
// matrix that is not positive definite, the correlation at which its
// Cholesky factorisation fails).
func (m MSV) Unconstrain(u, theta []float64) error {
	if err := m.errD(); err != nil {
		return err
	}
	m.checkLen("Unconstrain", u, theta)
	d, nc := m.D, m.nCorr()
	tmp := make([]float64, len(u))
	for k, v := range theta {
		var ok bool
		switch {
		case k < d:
			if tmp[k], ok = Symmetric.Inverse(v); !ok {
				return &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: "must satisfy |phi| < 1"}
			}
		case k < 2*d || k >= 2*d+nc:
			if tmp[k], ok = Positive.Inverse(v); !ok || math.IsInf(v, 1) {
				return &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: "must be positive and finite"}
			}
		default:
			if !(v > -1 && v < 1) {
				return &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: "a correlation must lie in (-1, 1)"}
			}
		}
	}
	// CPCs from R by the Cholesky factorisation, row by row: with
	// rem_k = 1 − Σ_{m<k} L_jm², z_kj = L_jk / √rem_k.
	l := make([]float64, d*d)
	if d > 0 {
		l[0] = 1
	}
	for j := 1; j < d; j++ {
		rem := 1.0
		for k := 0; k < j; k++ {
			c := msvCorrIndex(d, k, j)
			s := theta[2*d+c]
			for p := 0; p < k; p++ {
				s -= l[k*d+p] * l[j*d+p]
			}
			ljk := s / l[k*d+k]
			z := ljk / math.Sqrt(rem)
			zu, ok := Symmetric.Inverse(z)
			if !ok {
				return &ssm.ParamError{Name: m.paramName(2*d + c), Value: theta[2*d+c],
					Reason: fmt.Sprintf("the correlation matrix R is not positive definite (partial correlation %.6g given the earlier series)", z)}
			}
			tmp[2*d+c] = zu
			l[j*d+k] = ljk
			rem *= (1 - z) * (1 + z)
		}
		if !(rem > 0) {
			return &ssm.ParamError{Name: m.paramName(2*d + msvCorrIndex(d, j-1, j)), Value: theta[2*d+msvCorrIndex(d, j-1, j)],
				Reason: "the correlation matrix R is numerically singular"}
		}
		l[j*d+j] = math.Sqrt(rem)
	}
	copy(u, tmp)
	return nil
}

// Params returns u for the natural parameters φ, σ, τ (length D each) and
// the correlations rho (length D(D−1)/2, R_12, R_13, …, R_23, … as in
// ParamNames), or a *ssm.ParamError as Unconstrain gives. Wrong lengths
// panic.
func (m MSV) Params(phi, sigma, rho, tau []float64) ([]float64, error) {
	if err := m.errD(); err != nil {
		return nil, err
	}
	d := m.D
	if len(phi) != d || len(sigma) != d || len(rho) != m.nCorr() || len(tau) != d {
		panic(fmt.Sprintf("models: MSV.Params: lengths %d, %d, %d, %d, want %d, %d, %d, %d",
			len(phi), len(sigma), len(rho), len(tau), d, d, m.nCorr(), d))
	}
	theta := make([]float64, 0, m.nParam())
	theta = append(append(append(append(theta, phi...), sigma...), rho...), tau...)
	u := make([]float64, len(theta))
	if err := m.Unconstrain(u, theta); err != nil {
		return nil, err
	}
	return u, nil
}

// Bind implements ssm.Model. Invalid parameters (NaN in u, or a φ_i or
// CPC so close to ±1 that it rounds onto the boundary, a σ_i² or τ_i² that
// under- or overflows, a stationary covariance that is numerically not
// positive definite) give a *ssm.ParamError.
func (m MSV) Bind(u []float64) (ssm.Kernel, error) {
	if err := m.errD(); err != nil {
		return nil, err
	}
	if len(u) != m.nParam() {
		panic(fmt.Sprintf("models: MSV.Bind: len(u) = %d, want %d for D = %d", len(u), m.nParam(), m.D))
	}
	k := &msvKernel{}
	k.msvBound.init(m.D)
	if err := k.msvBound.compute(u); err != nil {
		return nil, err
	}
	return k, nil
}

// StationaryCov returns the stationary covariance P of x_t at u (D×D
// row-major), P_ij = Σ_ij/(1 − φ_iφ_j).
func (m MSV) StationaryCov(u []float64) ([]float64, error) {
	k, err := m.Bind(u)
	if err != nil {
		return nil, err
	}
	return append([]float64(nil), k.(*msvKernel).p...), nil
}

// Simulate draws x_0..x_T ((T+1)×D block) and y_1..y_T at u.
func (m MSV) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	if err := m.errD(); err != nil {
		return nil, ssm.Sequence{}, err
	}
	if T < 0 {
		return nil, ssm.Sequence{}, fmt.Errorf("models: MSV.Simulate: T = %d must be non-negative", T)
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, ssm.Sequence{}, err
	}
	x, y = ssm.Simulate(k, m.Dims(), T, rng)
	return x, y, nil
}

// Start implements ssm.Starter: a persistent log-volatility in every
// series (φ_i = 0.9, σ_i = 0.3, as SVM.Start), uncorrelated shocks (R = I),
// and τ_i at the sd of series i's observed values (1 when it has fewer
// than two). Sequences with Obs ≠ D give an error wrapping ssm.ErrData.
func (m MSV) Start(u []float64, data ssm.Dataset) error {
	if err := m.errD(); err != nil {
		return err
	}
	d := m.D
	n, mean, m2 := make([]float64, d), make([]float64, d), make([]float64, d)
	for s, seq := range data.Sequences {
		if seq.Obs != d {
			return fmt.Errorf("%w: MSV with D = %d: sequence %d has %d components", ssm.ErrData, d, s, seq.Obs)
		}
		for t, y := range seq.Y {
			i := t % d
			if math.IsNaN(y) {
				continue
			}
			n[i]++
			dv := y - mean[i]
			mean[i] += dv / n[i]
			m2[i] += dv * (y - mean[i])
		}
	}
	theta := make([]float64, m.nParam())
	for i := 0; i < d; i++ {
		v := 1.0
		if n[i] >= 2 && m2[i] > 0 && !math.IsInf(m2[i], 0) {
			v = m2[i] / (n[i] - 1)
		}
		theta[i], theta[d+i], theta[2*d+m.nCorr()+i] = 0.9, 0.3, math.Sqrt(v)
	}
	return m.Unconstrain(u, theta)
}

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
	d, nc := b.d, b.nc
	if len(u) != b.np {
		panic(fmt.Sprintf("models: MSV: len(u) = %d, want %d for D = %d", len(u), b.np, d))
	}
	for k, v := range u {
		if math.IsNaN(v) {
			return &ssm.ParamError{Name: b.name(k), Value: v, Reason: fmt.Sprintf("u[%d] is NaN", k)}
		}
	}
	const halfLog2Pi = 0.91893853320467274178 // ½ log 2π
	logDetS := 0.0                            // Σ log σ_i
	for i := 0; i < d; i++ {
		v, dv, _, _ := Symmetric.Forward(u[i])
		if !(v > -1 && v < 1) || !(dv > 0) {
			return &ssm.ParamError{Name: b.name(i), Value: v, Reason: fmt.Sprintf("must lie strictly inside (-1, 1) (u[%d] = %v)", i, u[i])}
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
				return &ssm.ParamError{Name: b.name(k), Value: s, Reason: "its square under- or overflows"}
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
				return &ssm.ParamError{Name: b.name(2*d + c), Value: z,
					Reason: fmt.Sprintf("its partial correlation must lie strictly inside (-1, 1) (u[%d] = %v)", 2*d+c, u[2*d+c])}
			}
			b.z[c] = z
			l[j*d+k] = z * math.Sqrt(rem)
			rem *= dz
			logRem += lj
		}
		if !(rem > 0) {
			c := msvCorrIndex(d, j-1, j)
			return &ssm.ParamError{Name: b.name(2*d + c), Value: b.z[c], Reason: "the correlation matrix R is numerically singular"}
		}
		l[j*d+j] = math.Sqrt(rem)
		logDetL += 0.5 * logRem
	}
	b.transConst = -float64(d)*halfLog2Pi - logDetS - logDetL
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
	return nil
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
