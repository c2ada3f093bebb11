package main

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Counts is a model the library does not ship, with a two-dimensional
// state: two series of counts whose log-intensities move together,
//
//	x_t = diag(φ₁, φ₂) x_{t−1} + η_t,  η_t ~ N(0, Σ),
//	Σ = [σ₁², ρσ₁σ₂; ρσ₁σ₂, σ₂²],
//	y_{t,i} ~ Poisson(exp(c_i + x_{t,i})),  i = 1, 2,
//
// with x_0 from the stationary law N(0, P), P_ij = Σ_ij/(1 − φ_iφ_j).
// The natural parameters are, in this order, phi1, phi2, sigma1, sigma2,
// rho, c1, c2; the embedded [models.Params] maps them to u (tanh for φ and
// ρ, exp for σ, the identity for c) and holds the prior.
//
// The kernel has, besides [ssm.Kernel], the two capabilities that put a
// vector-state model on the library's fast path (Laplace importance
// sampling, pf.Laplace, with pseudo-marginal full-data chains):
// [ssm.LinearGaussian], the transition's F, c, Q and the initial law, and
// [ssm.EmissionCurvature], the emission's gradient and Hessian in x. The
// Poisson emission is log-concave in x, so the Laplace approximation of
// p(x_{1:T} | y) has a unique mode; [ssm.SeparableEmission] says that
// count i depends on x_i only.
type Counts struct {
	models.Params // set by NewCounts; change Prior to change the prior
}

// NewCounts returns the model with the prior (φ_i+1)/2 ~ Beta(5, 1.5)
// (persistent log-intensities), σ_i² ~ InvGamma(2, 0.5), ρ ~ Uniform(−1,
// 1) and c_i ~ N(0, 3²).
func NewCounts() Counts {
	persist := models.Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}
	scale := models.InvGammaSq{A: 2, B: 0.5}
	level := models.Normal{Mu: 0, Sigma: 3}
	return Counts{Params: models.Params{
		Names: []string{"phi1", "phi2", "sigma1", "sigma2", "rho", "c1", "c2"},
		Transforms: []models.Transform{models.Symmetric, models.Symmetric, models.Positive, models.Positive,
			models.Symmetric, models.Real, models.Real},
		Prior: []models.Marginal{persist, persist, scale, scale, models.Uniform{Lo: -1, Hi: 1}, level, level},
	}}
}

// Dims implements [ssm.Model]: a 2-dimensional state, 2 counts per row, 7 parameters.
func (Counts) Dims() ssm.Dims { return ssm.Dims{State: 2, Obs: 2, Param: nParams} }

const nParams = 7

// Parameter indices, in the order of the names.
const (
	iPhi1 = iota
	iPhi2
	iSigma1
	iSigma2
	iRho
	iC1
	iC2
)

// Bind implements [ssm.Model], precomputing what depends only on u; bad u
// give a *[ssm.ParamError].
func (m Counts) Bind(u []float64) (ssm.Kernel, error) {
	k := &countsKernel{}
	if err := m.Natural(k.th[:], k.dth[:], u); err != nil {
		return nil, err
	}
	phi1, phi2, s1, s2, rho := k.th[iPhi1], k.th[iPhi2], k.th[iSigma1], k.th[iSigma2], k.th[iRho]
	k.q = sym2{s1 * s1, rho * s1 * s2, s2 * s2}
	k.p = sym2{s1 * s1 / (1 - phi1*phi1), rho * s1 * s2 / (1 - phi1*phi2), s2 * s2 / (1 - phi2*phi2)}
	var ok bool
	if k.qInv, k.qLogDet, ok = k.q.inverse(); !ok {
		return nil, &ssm.ParamError{Name: "rho", Value: rho, Reason: "the shocks' covariance is singular"}
	}
	if k.pInv, k.pLogDet, ok = k.p.inverse(); !ok {
		return nil, &ssm.ParamError{Name: "phi1", Value: phi1, Reason: "the stationary covariance is singular or overflows"}
	}
	// Cholesky factors for sampling: Q = L Lᵀ, P = M Mᵀ.
	k.qChol = k.q.chol()
	k.pChol = k.p.chol()
	// ∂P/∂θ for the initial law's score (θ = φ₁, φ₂, σ₁, σ₂, ρ).
	d1, d2, d12 := 1-phi1*phi1, 1-phi2*phi2, 1-phi1*phi2
	k.dP[iPhi1] = sym2{s1 * s1 * 2 * phi1 / (d1 * d1), rho * s1 * s2 * phi2 / (d12 * d12), 0}
	k.dP[iPhi2] = sym2{0, rho * s1 * s2 * phi1 / (d12 * d12), s2 * s2 * 2 * phi2 / (d2 * d2)}
	k.dP[iSigma1] = sym2{2 * s1 / d1, rho * s2 / d12, 0}
	k.dP[iSigma2] = sym2{0, rho * s1 / d12, 2 * s2 / d2}
	k.dP[iRho] = sym2{0, s1 * s2 / d12, 0}
	// ∂Σ/∂θ for the transition's score (θ = σ₁, σ₂, ρ).
	k.dQ[iSigma1] = sym2{2 * s1, rho * s2, 0}
	k.dQ[iSigma2] = sym2{0, rho * s1, 2 * s2}
	k.dQ[iRho] = sym2{0, s1 * s2, 0}
	return k, nil
}

// sym2 is a symmetric 2×2 matrix [a, b; b, c].
type sym2 struct{ a, b, c float64 }

// inverse returns the inverse and the log-determinant, and false when the
// matrix is not positive definite (or not finite).
func (s sym2) inverse() (sym2, float64, bool) {
	det := s.a*s.c - s.b*s.b
	if !(det > 0) || !(s.a > 0) || math.IsInf(det, 0) {
		return sym2{}, 0, false
	}
	return sym2{s.c / det, -s.b / det, s.a / det}, math.Log(det), true
}

// chol returns the lower Cholesky factor [l11, 0; l21, l22] as (l11, l21, l22).
func (s sym2) chol() [3]float64 {
	l11 := math.Sqrt(s.a)
	l21 := s.b / l11
	return [3]float64{l11, l21, math.Sqrt(s.c - l21*l21)}
}

// quad returns vᵀ S v.
func (s sym2) quad(v0, v1 float64) float64 { return s.a*v0*v0 + 2*s.b*v0*v1 + s.c*v1*v1 }

// trProd returns tr(S T) for symmetric S and T.
func (s sym2) trProd(t sym2) float64 { return s.a*t.a + 2*s.b*t.b + s.c*t.c }

// countsKernel is Counts at one u, read-only after Bind (goroutines may
// share it).
type countsKernel struct {
	th, dth          [nParams]float64 // natural parameters θ(u) and dθ_i/du_i
	q, qInv, p, pInv sym2             // Σ, Σ⁻¹, P, P⁻¹
	qLogDet, pLogDet float64
	qChol, pChol     [3]float64
	dP, dQ           [nParams]sym2 // ∂P/∂θ_i and ∂Σ/∂θ_i (zero where θ_i does not enter)
}

const log2Pi = 1.8378770664093454835606594728112352797227949472755668 // log 2π

// SampleInitial implements [ssm.Kernel]: every row from N(0, P).
func (k *countsKernel) SampleInitial(x []float64, rng *rand.Rand) {
	for r := 0; r+1 < len(x); r += 2 {
		z0, z1 := rng.NormFloat64(), rng.NormFloat64()
		x[r], x[r+1] = k.pChol[0]*z0, k.pChol[1]*z0+k.pChol[2]*z1
	}
}

// SampleTransition implements [ssm.Kernel]: x = diag(φ) prev + η, η ~ N(0, Σ).
func (k *countsKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	for r := 0; r+1 < len(x); r += 2 {
		z0, z1 := rng.NormFloat64(), rng.NormFloat64()
		x[r] = k.th[iPhi1]*prev[r] + k.qChol[0]*z0
		x[r+1] = k.th[iPhi2]*prev[r+1] + k.qChol[1]*z0 + k.qChol[2]*z1
	}
}

// SampleEmission implements [ssm.Kernel]: y_i ~ Poisson(exp(c_i + x_i)).
func (k *countsKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	for i := range 2 {
		y[i] = distuv.Poisson{Lambda: math.Exp(k.th[iC1+i] + x[i]), Src: rng}.Rand()
	}
}

// LogInitial implements [ssm.Kernel]: log N(x_0 | 0, P).
func (k *countsKernel) LogInitial(x []float64) float64 {
	return -log2Pi - 0.5*k.pLogDet - 0.5*k.pInv.quad(x[0], x[1])
}

// LogTransitions implements [ssm.Kernel]: dst[j] = log N(x | diag(φ) prev_j, Σ).
func (k *countsKernel) LogTransitions(dst, x, prev []float64) {
	for j := range dst {
		e0 := x[0] - k.th[iPhi1]*prev[2*j]
		e1 := x[1] - k.th[iPhi2]*prev[2*j+1]
		dst[j] = -log2Pi - 0.5*k.qLogDet - 0.5*k.qInv.quad(e0, e1)
	}
}

// AddLogEmission implements [ssm.Kernel]: Σ_i y_i(c_i + x_i) − e^{c_i+x_i}
// − log y_i! for every row of x; a missing (NaN) count adds 0.
func (k *countsKernel) AddLogEmission(logw, y, x []float64) {
	for i := range 2 {
		if math.IsNaN(y[i]) {
			continue
		}
		lf, _ := math.Lgamma(y[i] + 1)
		for r := range logw {
			eta := k.th[iC1+i] + x[2*r+i]
			logw[r] += y[i]*eta - math.Exp(eta) - lf
		}
	}
}

// AddScore implements [ssm.Kernel]: w times ∇_u of one step's log
// density, added to row r of the n×7 block h. With e = x_t − diag(φ)
// x_{t−1} and a = Σ⁻¹e,
//
//	∂/∂φ_i = a_i x_{t−1,i},  ∂/∂θ = −½ tr(Σ⁻¹ ∂Σ/∂θ) + ½ aᵀ(∂Σ/∂θ)a  (θ = σ₁, σ₂, ρ),
//	∂/∂c_i = y_i − e^{c_i + x_{t,i}},
//
// and for x_0 (prev nil), with b = P⁻¹x_0, ∂/∂θ = −½ tr(P⁻¹ ∂P/∂θ) + ½
// bᵀ(∂P/∂θ)b for θ = φ₁, φ₂, σ₁, σ₂, ρ. Each is then multiplied by dθ/du.
func (k *countsKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	for r := 0; 2*r+1 < len(x); r++ {
		g := h[nParams*r : nParams*(r+1)]
		x0, x1 := x[2*r], x[2*r+1]
		if prev == nil {
			b0 := k.pInv.a*x0 + k.pInv.b*x1
			b1 := k.pInv.b*x0 + k.pInv.c*x1
			for i := iPhi1; i <= iRho; i++ {
				g[i] += w * k.dth[i] * (-0.5*k.pInv.trProd(k.dP[i]) + 0.5*k.dP[i].quad(b0, b1))
			}
			continue
		}
		p0, p1 := prev[2*r], prev[2*r+1]
		e0, e1 := x0-k.th[iPhi1]*p0, x1-k.th[iPhi2]*p1
		a0 := k.qInv.a*e0 + k.qInv.b*e1
		a1 := k.qInv.b*e0 + k.qInv.c*e1
		g[iPhi1] += w * k.dth[iPhi1] * a0 * p0
		g[iPhi2] += w * k.dth[iPhi2] * a1 * p1
		for i := iSigma1; i <= iRho; i++ {
			g[i] += w * k.dth[i] * (-0.5*k.qInv.trProd(k.dQ[i]) + 0.5*k.dQ[i].quad(a0, a1))
		}
		for i := range 2 {
			if !math.IsNaN(y[i]) {
				g[iC1+i] += w * k.dth[iC1+i] * (y[i] - math.Exp(k.th[iC1+i]+x[2*r+i]))
			}
		}
	}
}

// LinearGaussian implements [ssm.LinearGaussian]: F = diag(φ), c = 0,
// Q = Σ, m0 = 0, P0 = P.
func (k *countsKernel) LinearGaussian(F, c, Q, m0, P0 []float64) {
	copy(F, []float64{k.th[iPhi1], 0, 0, k.th[iPhi2]})
	copy(c, []float64{0, 0})
	copy(Q, []float64{k.q.a, k.q.b, k.q.b, k.q.c})
	copy(m0, []float64{0, 0})
	copy(P0, []float64{k.p.a, k.p.b, k.p.b, k.p.c})
}

// LogEmissionCurvature implements [ssm.EmissionCurvature]: the Poisson log
// density at one row x, its gradient y_i − e^{c_i+x_i} and its diagonal
// Hessian −e^{c_i+x_i}; a missing count adds 0 to all three.
func (k *countsKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	clear(g)
	clear(H)
	ll := 0.0
	for i := range 2 {
		if math.IsNaN(y[i]) {
			continue
		}
		eta := k.th[iC1+i] + x[i]
		mu := math.Exp(eta)
		lf, _ := math.Lgamma(y[i] + 1)
		ll += y[i]*eta - mu - lf
		g[i] = y[i] - mu
		H[3*i] = -mu
	}
	return ll
}

// SeparableEmission implements [ssm.SeparableEmission]: count i depends on x_i only.
func (k *countsKernel) SeparableEmission() bool { return true }
