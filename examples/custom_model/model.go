package main

import (
	"fmt"
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
// with ε_t ~ N(0, 1) and η_t ~ t_ν (ν degrees of freedom, fixed). Heavy
// tailed noise makes the model robust to outliers; it is not linear
// Gaussian, so there is no Kalman filter and the particle filter is needed.
//
// The natural parameters are θ = (φ, σ, τ), |φ| < 1, σ, τ > 0, and the
// samplers move u = (atanh φ, log σ, log τ) ∈ R³. A model is three things:
// the parameter map (Dims, ParamNames, Constrain, Unconstrain), the prior
// on u (LogPrior) and Bind, which returns the Kernel that samples and
// evaluates the densities, and their score, at one u.
type StudentT struct {
	// Nu is the degrees of freedom ν > 0 of the noise; 0 means 5.
	Nu float64
	// Prior is the prior on u; nil means models.DefaultLGSSMPrior(),
	// whose (φ+1)/2 ~ Beta(5, 1.5), σ² ~ InvGamma(2, 0.5) and
	// τ² ~ InvGamma(2, 0.5) fit this parameterisation too.
	Prior ssm.Prior
}

// The compiler checks that the types satisfy the interfaces.
var (
	_ ssm.Model             = StudentT{}
	_ ssm.Kernel            = (*studentTKernel)(nil)
	_ ssm.TransitionBounder = (*studentTKernel)(nil)
)

// defaultPrior is built once: a models.Independent is read-only.
var defaultPrior = models.DefaultLGSSMPrior()

// nu returns ν with the default filled in.
func (m StudentT) nu() float64 {
	if m.Nu == 0 {
		return 5
	}
	return m.Nu
}

// Dims implements ssm.Model: a scalar state and observation, 3 parameters.
func (StudentT) Dims() ssm.Dims { return ssm.Dims{State: 1, Obs: 1, Param: 3} }

// ParamNames implements ssm.Model.
func (StudentT) ParamNames() []string { return []string{"phi", "sigma", "tau"} }

// LogPrior implements ssm.Prior: the prior of the natural parameters pushed
// forward to u, Jacobian included (models.Independent does the push
// forward).
func (m StudentT) LogPrior(grad, u []float64) float64 {
	if m.Prior == nil {
		return defaultPrior.LogPrior(grad, u)
	}
	return m.Prior.LogPrior(grad, u)
}

// Constrain implements ssm.Model: θ = (tanh u_1, exp u_2, exp u_3), and
// log|det ∂θ/∂u| = log(1−φ²) + log σ + log τ.
func (StudentT) Constrain(theta, u []float64) float64 {
	if len(theta) != 3 || len(u) != 3 {
		panic("custom_model: StudentT.Constrain needs slices of length 3")
	}
	phi := math.Tanh(u[0])
	theta[0], theta[1], theta[2] = phi, math.Exp(u[1]), math.Exp(u[2])
	return math.Log1p(-phi*phi) + u[1] + u[2]
}

// Unconstrain implements ssm.Model.
func (m StudentT) Unconstrain(u, theta []float64) error {
	if len(theta) != 3 || len(u) != 3 {
		panic("custom_model: StudentT.Unconstrain needs slices of length 3")
	}
	if err := checkTheta(theta[0], theta[1], theta[2]); err != nil {
		return err
	}
	u[0], u[1], u[2] = math.Atanh(theta[0]), math.Log(theta[1]), math.Log(theta[2])
	return nil
}

// Params returns u for the natural parameters.
func (m StudentT) Params(phi, sigma, tau float64) ([]float64, error) {
	u := make([]float64, 3)
	return u, m.Unconstrain(u, []float64{phi, sigma, tau})
}

// checkTheta names the first natural parameter outside its domain.
func checkTheta(phi, sigma, tau float64) error {
	switch {
	case !(math.Abs(phi) < 1):
		return &ssm.ParamError{Name: "phi", Value: phi, Reason: "must satisfy |phi| < 1"}
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return &ssm.ParamError{Name: "sigma", Value: sigma, Reason: "must be positive and finite"}
	case !(tau > 0) || math.IsInf(tau, 1):
		return &ssm.ParamError{Name: "tau", Value: tau, Reason: "must be positive and finite"}
	}
	return nil
}

// Bind implements ssm.Model: it precomputes everything that depends only
// on u, so that the per-particle loops below are cheap.
func (m StudentT) Bind(u []float64) (ssm.Kernel, error) {
	if len(u) != 3 {
		panic("custom_model: StudentT.Bind needs len(u) = 3")
	}
	phi, sigma, tau := math.Tanh(u[0]), math.Exp(u[1]), math.Exp(u[2])
	if err := checkTheta(phi, sigma, tau); err != nil {
		return nil, err
	}
	nu := m.nu()
	if !(nu > 0) || math.IsInf(nu, 0) {
		return nil, &ssm.ParamError{Name: "nu", Value: nu, Reason: "must be positive and finite"}
	}
	lg1, _ := math.Lgamma((nu + 1) / 2)
	lg2, _ := math.Lgamma(nu / 2)
	p0 := sigma * sigma / (1 - phi*phi)
	if math.IsInf(p0, 0) {
		return nil, &ssm.ParamError{Name: "phi", Value: phi, Reason: "stationary variance σ²/(1−φ²) overflows"}
	}
	return &studentTKernel{
		phi: phi, sigma: sigma, tau: tau, nu: nu,
		s2: sigma * sigma, p0: p0,
		dphi:    1 - phi*phi,
		logNorm: -0.5 * math.Log(2*math.Pi*sigma*sigma),
		logT:    lg1 - lg2 - 0.5*math.Log(nu*math.Pi) - math.Log(tau),
	}, nil
}

// studentTKernel is StudentT at one u. It is read-only after Bind, so one
// kernel may serve several goroutines.
type studentTKernel struct {
	phi, sigma, tau, nu float64
	s2, p0              float64 // σ², stationary variance σ²/(1−φ²)
	dphi                float64 // dφ/du_1 = 1−φ²
	logNorm             float64 // −½ log(2πσ²)
	logT                float64 // log of the t_ν density's constant, scaled by τ
}

// SampleInitial implements ssm.Kernel: x_0 from the stationary law.
func (k *studentTKernel) SampleInitial(x []float64, rng *rand.Rand) {
	sd := math.Sqrt(k.p0)
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
}

// SampleTransition implements ssm.Kernel.
func (k *studentTKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	if len(x) != len(prev) {
		panic("custom_model: SampleTransition: len(x) != len(prev)")
	}
	for i, xp := range prev {
		x[i] = k.phi*xp + k.sigma*rng.NormFloat64()
	}
}

// SampleEmission implements ssm.Kernel. A t_ν variate is Z / √(V/ν) with
// Z ~ N(0, 1) and V ~ χ²_ν = Gamma(ν/2, scale 2).
func (k *studentTKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	v := 2 * gamma(k.nu/2, rng)
	y[0] = x[0] + k.tau*rng.NormFloat64()/math.Sqrt(v/k.nu)
}

// gamma draws from Gamma(a, 1) by Marsaglia and Tsang's method (a < 1 via
// the boost Gamma(a) = Gamma(a+1)·U^(1/a)).
func gamma(a float64, rng *rand.Rand) float64 {
	if a < 1 {
		return gamma(a+1, rng) * math.Pow(rng.Float64(), 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		z := rng.NormFloat64()
		v := 1 + c*z
		if v <= 0 {
			continue
		}
		v = v * v * v
		if math.Log(rng.Float64()) < 0.5*z*z+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// LogInitial implements ssm.Kernel.
func (k *studentTKernel) LogInitial(x []float64) float64 {
	return -0.5*math.Log(2*math.Pi*k.p0) - x[0]*x[0]/(2*k.p0)
}

// LogTransitions implements ssm.Kernel: dst[j] = log p(x | prev_j).
func (k *studentTKernel) LogTransitions(dst, x, prev []float64) {
	if len(dst) != len(prev) {
		panic("custom_model: LogTransitions: len(dst) != len(prev)")
	}
	for j, xp := range prev {
		d := x[0] - k.phi*xp
		dst[j] = k.logNorm - d*d/(2*k.s2)
	}
}

// MaxLogTransition implements ssm.TransitionBounder (optional): the
// Gaussian transition density is at most 1/√(2πσ²), which lets PaRIS use
// accept-reject backward sampling.
func (k *studentTKernel) MaxLogTransition() float64 { return k.logNorm }

// AddLogEmission implements ssm.Kernel:
//
//	log p(y|x) = log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) − log τ − (ν+1)/2 · log(1 + e²/ν),
//
// with e = (y − x)/τ. A missing (NaN) y adds nothing.
func (k *studentTKernel) AddLogEmission(logw, y, x []float64) {
	if len(logw) != len(x) {
		panic("custom_model: AddLogEmission: len(logw) != len(x)")
	}
	if math.IsNaN(y[0]) {
		return
	}
	c := -(k.nu + 1) / 2
	for i, xv := range x {
		e := (y[0] - xv) / k.tau
		logw[i] += k.logT + c*math.Log1p(e*e/k.nu)
	}
}

// AddScore implements ssm.Kernel: it adds w times the gradient in u of the
// log-density of one step to row i of the n×3 block h. With a = atanh φ,
// s = log σ, r = log τ, d = x_t − φx_{t−1} and e = (y_t − x_t)/τ:
//
//	transition: ∂/∂a = d·x_{t−1}(1−φ²)/σ²,  ∂/∂s = d²/σ² − 1,
//	emission:   ∂/∂r = (ν+1)e²/(ν+e²) − 1,
//
// and for the initial state (prev nil), with P = σ²/(1−φ²),
// ∂ log P/∂a = 2φ and ∂ log P/∂s = 2:
//
//	∂/∂a = φ(x_0²/P − 1),  ∂/∂s = x_0²/P − 1.
func (k *studentTKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	if len(h) != 3*len(x) {
		panic(fmt.Sprintf("custom_model: AddScore: len(h) = %d, want %d", len(h), 3*len(x)))
	}
	if prev == nil {
		for i, xv := range x {
			q := xv*xv/k.p0 - 1
			h[3*i] += w * k.phi * q
			h[3*i+1] += w * q
		}
		return
	}
	missing := math.IsNaN(y[0])
	for i, xv := range x {
		d := xv - k.phi*prev[i]
		h[3*i] += w * d * prev[i] * k.dphi / k.s2
		h[3*i+1] += w * (d*d/k.s2 - 1)
		if !missing {
			e := (y[0] - xv) / k.tau
			h[3*i+2] += w * ((k.nu+1)*e*e/(k.nu+e*e) - 1)
		}
	}
}

// Simulate draws x_0..x_T and y_1..y_T at u (for examples and tests).
func (m StudentT) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	k, err := m.Bind(u)
	if err != nil {
		return nil, ssm.Sequence{}, err
	}
	x, y = ssm.Simulate(k, m.Dims(), T, rng)
	return x, y, nil
}
