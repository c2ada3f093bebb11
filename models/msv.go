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
// allocate nothing. The bulk methods allocate nothing for D ≤ 16; above
// it they allocate one scratch vector per call (not per
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
	_ ssm.LinearGaussian    = (*msvKernel)(nil)
	_ ssm.EmissionCurvature = (*msvKernel)(nil)
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
