package main

import (
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// StudentT is an AR(1) latent process observed with Student-t noise, a
// model the library does not ship:
//
//	x_0 ~ N(0, σ²/(1−φ²)),  x_t = φ x_{t−1} + σ ε_t,  y_t = x_t + τ η_t,
//
// with ε_t ~ N(0, 1) and η_t ~ t_ν (ν fixed). The embedded [models.Params]
// gives the parameter map θ = (φ, σ, τ) = (tanh u_1, e^{u_2}, e^{u_3}) and
// the prior (ParamNames, Constrain, Unconstrain, LogPrior); the model adds
// Dims and Bind, whose kernel samples and evaluates the densities and score.
type StudentT struct {
	models.Params         // set by NewStudentT; change Prior to change the prior
	Nu            float64 // degrees of freedom ν > 0 of the noise
}

// NewStudentT returns the model with ν degrees of freedom and the prior
// (φ+1)/2 ~ Beta(5, 1.5), σ², τ² ~ InvGamma(2, 0.5).
func NewStudentT(nu float64) StudentT {
	return StudentT{Nu: nu, Params: models.Params{
		Names:      []string{"phi", "sigma", "tau"},
		Transforms: []models.Transform{models.Symmetric, models.Positive, models.Positive},
		Prior:      []models.Marginal{models.Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}, models.InvGammaSq{A: 2, B: 0.5}, models.InvGammaSq{A: 2, B: 0.5}},
	}}
}

// Dims implements [ssm.Model]: a scalar state and observation, 3 parameters.
func (StudentT) Dims() ssm.Dims { return ssm.Dims{State: 1, Obs: 1, Param: 3} }

// Bind implements [ssm.Model], precomputing what depends only on u; bad u give a *[ssm.ParamError].
func (m StudentT) Bind(u []float64) (ssm.Kernel, error) {
	var th [3]float64
	if err := m.Natural(th[:], nil, u); err != nil {
		return nil, err
	}
	k := &kernel{phi: th[0], sigma: th[1], tau: th[2], nu: m.Nu}
	if !(k.nu > 0) || math.IsInf(k.nu, 0) {
		return nil, &ssm.ParamError{Name: "nu", Value: k.nu, Reason: "must be positive and finite"}
	}
	k.s2, k.dphi = k.sigma*k.sigma, 1-k.phi*k.phi
	if k.p0 = k.s2 / k.dphi; math.IsInf(k.p0, 0) || !(k.p0 > 0) {
		return nil, &ssm.ParamError{Name: "phi", Value: k.phi, Reason: "stationary variance σ²/(1−φ²) overflows"}
	}
	lg1, _ := math.Lgamma((k.nu + 1) / 2)
	lg2, _ := math.Lgamma(k.nu / 2)
	k.logNorm, k.logT = -0.5*math.Log(2*math.Pi*k.s2), lg1-lg2-0.5*math.Log(k.nu*math.Pi)-math.Log(k.tau)
	return k, nil
}

// kernel is StudentT at one u, an [ssm.Kernel] and [ssm.TransitionBounder],
// read-only after Bind (goroutines may share it).
type kernel struct {
	phi, sigma, tau, nu float64
	s2, p0, dphi        float64 // σ², stationary variance σ²/(1−φ²), dφ/du_1 = 1−φ²
	logNorm, logT       float64 // −½ log(2πσ²); log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log τ
}

// SampleInitial implements [ssm.Kernel]: x_0 from the stationary law.
func (k *kernel) SampleInitial(x []float64, rng *rand.Rand) {
	for i := range x {
		x[i] = math.Sqrt(k.p0) * rng.NormFloat64()
	}
}

// SampleTransition implements [ssm.Kernel]: x = φ prev + σε.
func (k *kernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	for i, xp := range prev[:len(x)] {
		x[i] = k.phi*xp + k.sigma*rng.NormFloat64()
	}
}

// SampleEmission implements [ssm.Kernel]: η = Z/√(V/ν), Z ~ N(0, 1), V ~ χ²_ν = 2·Gamma(ν/2).
func (k *kernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	y[0] = x[0] + k.tau*rng.NormFloat64()/math.Sqrt(2*gamma(k.nu/2, rng)/k.nu)
}

// gamma draws Gamma(a, 1) by Marsaglia and Tsang (a < 1: Gamma(a+1)·U^(1/a)).
func gamma(a float64, rng *rand.Rand) float64 {
	if a < 1 {
		return gamma(a+1, rng) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	for c := 1 / math.Sqrt(9*d); ; {
		z := rng.NormFloat64()
		if v := 1 + c*z; v > 0 && math.Log(rng.Float64()) < 0.5*z*z+d-d*v*v*v+d*math.Log(v*v*v) {
			return d * v * v * v
		}
	}
}

// LogInitial implements [ssm.Kernel]: log N(x_0 | 0, σ²/(1−φ²)).
func (k *kernel) LogInitial(x []float64) float64 {
	return -0.5*math.Log(2*math.Pi*k.p0) - x[0]*x[0]/(2*k.p0)
}

// LogTransitions implements [ssm.Kernel]: dst[j] = log p(x | prev_j).
func (k *kernel) LogTransitions(dst, x, prev []float64) {
	for j, xp := range prev[:len(dst)] {
		d := x[0] - k.phi*xp
		dst[j] = k.logNorm - d*d/(2*k.s2)
	}
}

// MaxLogTransition implements [ssm.TransitionBounder] (for PaRIS): −½ log(2πσ²).
func (k *kernel) MaxLogTransition() float64 { return k.logNorm }

// AddLogEmission implements [ssm.Kernel]: with e = (y − x)/τ,
// log p(y|x) = logT − (ν+1)/2 · log(1 + e²/ν); a missing (NaN) y adds 0.
func (k *kernel) AddLogEmission(logw, y, x []float64) {
	if math.IsNaN(y[0]) {
		return
	}
	for i, xv := range x[:len(logw)] {
		e := (y[0] - xv) / k.tau
		logw[i] += k.logT - (k.nu+1)/2*math.Log1p(e*e/k.nu)
	}
}

// AddScore implements [ssm.Kernel]: w times ∇_u of one step's log density,
// added to row i of the n×3 block h. With d = x_t − φx_{t−1} and e as above,
//
//	transition: ∂/∂u_1 = d·x_{t−1}(1−φ²)/σ²,  ∂/∂u_2 = d²/σ² − 1,
//	emission:   ∂/∂u_3 = (ν+1)e²/(ν+e²) − 1,
//
// and for x_0 (prev nil), with P = σ²/(1−φ²), ∂/∂u_1 = φ(x_0²/P − 1), ∂/∂u_2 = x_0²/P − 1.
func (k *kernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	for i, xv := range x {
		g := h[3*i : 3*i+3]
		if q := xv*xv/k.p0 - 1; prev == nil {
			g[0], g[1] = g[0]+w*k.phi*q, g[1]+w*q
			continue
		}
		d := xv - k.phi*prev[i]
		g[0] += w * d * prev[i] * k.dphi / k.s2
		g[1] += w * (d*d/k.s2 - 1)
		if e := (y[0] - xv) / k.tau; !math.IsNaN(e) {
			g[2] += w * ((k.nu+1)*e*e/(k.nu+e*e) - 1)
		}
	}
}
