package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// LGSSM is the scalar linear Gaussian state space model
//
//	x_0 ~ N(0, σ²/(1−φ²)),  x_t = φ x_{t−1} + σ ε_t,  y_t = x_t + τ η_t,
//
// with ε_t, η_t independent standard normals. The natural parameters are
// (φ, σ, τ), named "phi", "sigma", "tau", with |φ| < 1 and σ, τ > 0; the
// unconstrained vector is u = (atanh φ, log σ, log τ). State and
// observation are scalars.
//
// The bound kernel implements ssm.Proposer with the locally optimal
// proposal
//
//	q(x_t | x_{t−1}, y_t) = N((τ²φx_{t−1} + σ²y_t)/(σ²+τ²), σ²τ²/(σ²+τ²)),
//
// whose incremental weight is the predictive density
// log N(y_t | φx_{t−1}, σ²+τ²) (when y_t is missing it is the transition
// with weight 0), and ssm.TransitionBounder with
// max log p(x_t|x_{t−1}) = −½ log(2πσ²).
type LGSSM struct {
	// Prior is the prior on u. Nil means DefaultLGSSMPrior().
	Prior ssm.Prior
}

// ar1Params is the parameter dimension of LGSSM and SVM.
const ar1Params = 3

// ar1Spec is the parameter map and default prior of LGSSM and SVM; it is
// read-only (DefaultLGSSMPrior and DefaultSVMPrior hand out copies).
var ar1Spec = Params{
	Names:      []string{"phi", "sigma", "tau"},
	Transforms: []Transform{Symmetric, Positive, Positive},
	Prior:      []Marginal{Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}, InvGammaSq{A: 2, B: 0.5}, InvGammaSq{A: 2, B: 0.5}},
}

// DefaultLGSSMPrior returns the default LGSSM prior pushed forward to u:
// (φ+1)/2 ~ Beta(5, 1.5), σ² ~ InvGamma(2, 0.5), τ² ~ InvGamma(2, 0.5),
// independent (InvGamma(a, b) has density ∝ v^(−a−1) e^(−b/v)). The result
// is a fresh copy the caller may modify.
func DefaultLGSSMPrior() Independent { return ar1Spec.Clone().Independent() }

// orPrior returns LogPrior of prior, or of spec's own prior when nil.
func orPrior(prior ssm.Prior, spec Params, grad, u []float64) float64 {
	if prior == nil {
		return spec.LogPrior(grad, u)
	}
	return prior.LogPrior(grad, u)
}

// Dims implements ssm.Model.
func (LGSSM) Dims() ssm.Dims { return ssm.Dims{State: 1, Obs: 1, Param: ar1Params} }

// ParamNames implements ssm.Model: "phi", "sigma", "tau".
func (LGSSM) ParamNames() []string { return ar1Spec.ParamNames() }

// LogPrior implements ssm.Prior.
func (m LGSSM) LogPrior(grad, u []float64) float64 { return orPrior(m.Prior, ar1Spec, grad, u) }

// Constrain implements ssm.Model.
func (LGSSM) Constrain(theta, u []float64) float64 {
	ar1CheckParams("LGSSM.Constrain", theta, u)
	return ar1Spec.Constrain(theta, u)
}

// Unconstrain implements ssm.Model.
func (LGSSM) Unconstrain(u, theta []float64) error {
	ar1CheckParams("LGSSM.Unconstrain", u, theta)
	return ar1Spec.Unconstrain(u, theta)
}

// Params returns u = (atanh φ, log σ, log τ), or a *ssm.ParamError when
// |φ| ≥ 1, σ ≤ 0, τ ≤ 0, or any of them is NaN or +Inf.
func (m LGSSM) Params(phi, sigma, tau float64) ([]float64, error) {
	return ar1Params3(phi, sigma, tau)
}

// Bind implements ssm.Model. The kernel also implements ssm.Proposer and
// ssm.TransitionBounder.
func (LGSSM) Bind(u []float64) (ssm.Kernel, error) {
	k := new(lgssmKernel)
	if err := k.Rebind(u); err != nil {
		return nil, err
	}
	return k, nil
}

// Rebind implements ssm.Rebinder.
func (dst *lgssmKernel) Rebind(u []float64) error {
	ar, err := newScalarAR1("LGSSM", u)
	if err != nil {
		return err
	}
	k := lgssmKernel{scalarAR1: ar}
	s2, t2 := ar.s2, ar.t2
	k.invT2 = 1 / t2
	k.logNormT = -0.5*math.Log(2*math.Pi) - math.Log(ar.tau)
	pv := s2 + t2
	k.invPV = 1 / pv
	k.logNormPV = -0.5 * math.Log(2*math.Pi*pv)
	k.qPrev = ar.phi * t2 / pv
	k.qY = s2 / pv
	k.qSD = ar.sigma * ar.tau / math.Sqrt(pv)
	// 1/q² = (σ²+τ²)/(σ²τ²) = 1/σ² + 1/τ², and log q from the logs, so
	// neither underflows when σ and τ are both tiny.
	k.halfInvQV = 0.5 * (1/s2 + 1/t2)
	k.logNormQ = -0.5*math.Log(2*math.Pi) - math.Log(ar.sigma) - math.Log(ar.tau) + 0.5*math.Log(pv)
	if math.IsInf(pv, 0) || !(k.qSD > 0) || math.IsInf(k.halfInvQV, 0) {
		return &ssm.ParamError{Name: "tau", Value: ar.tau, Reason: fmt.Sprintf("σ = %v and τ = %v overflow the proposal variance", ar.sigma, ar.tau)}
	}
	*dst = k
	return nil
}

// Simulate draws x_0..x_T (length T+1) and y_1..y_T at u.
func (m LGSSM) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	return ar1Simulate(m, "LGSSM", T, u, rng)
}

// ar1Params3 validates (φ, σ, τ) and returns u.
func ar1Params3(phi, sigma, tau float64) ([]float64, error) {
	return ar1Spec.FromNatural(phi, sigma, tau)
}

func ar1Simulate(m ssm.Model, name string, T int, u []float64, rng *rand.Rand) ([]float64, ssm.Sequence, error) {
	if T < 0 {
		return nil, ssm.Sequence{}, fmt.Errorf("models: %s.Simulate: T = %d must be non-negative", name, T)
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, ssm.Sequence{}, err
	}
	x, y := ssm.Simulate(k, m.Dims(), T, rng)
	return x, y, nil
}

func ar1CheckParams(method string, a, b []float64) {
	if len(a) != ar1Params || len(b) != ar1Params {
		panic(fmt.Sprintf("models: %s: slice lengths %d and %d, want %d", method, len(a), len(b), ar1Params))
	}
}

// scalarAR1 holds the parts shared by LGSSM and SVM: the stationary
// Gaussian AR(1) latent process x_t = φx_{t−1} + σε_t, x_0 ~ N(0, σ²/(1−φ²)),
// and τ. All constants are computed once at Bind.
type scalarAR1 struct {
	phi, sigma, tau float64
	s2, t2          float64
	halfInvS2       float64 // 1/(2σ²)
	logNormS        float64 // −½ log(2πσ²)
	dPhi            float64 // dφ/du_1 = 1 − φ², computed without cancellation
	dPhiInvS2       float64 // (1 − φ²)/σ²
	sd0             float64 // √v0, v0 = σ²/(1−φ²)
	halfInvV0       float64 // 1/(2 v0)
	logNormV0       float64 // −½ log(2π v0)
}

// newScalarAR1 validates u and precomputes the AR(1) constants.
func newScalarAR1(name string, u []float64) (scalarAR1, error) {
	if len(u) != ar1Params {
		panic(fmt.Sprintf("models: %s.Bind: len(u) = %d, want %d", name, len(u), ar1Params))
	}
	var v, dv [ar1Params]float64
	if err := ar1Spec.Natural(v[:], dv[:], u); err != nil {
		return scalarAR1{}, err
	}
	var a scalarAR1
	a.phi, a.sigma, a.tau = v[0], v[1], v[2]
	a.s2, a.t2 = a.sigma*a.sigma, a.tau*a.tau
	a.dPhi = dv[0]
	if !(a.s2 > 0) || math.IsInf(a.s2, 0) || !(a.t2 > 0) || math.IsInf(a.t2, 0) {
		name, val := "sigma", a.sigma
		if !(a.t2 > 0) || math.IsInf(a.t2, 0) {
			name, val = "tau", a.tau
		}
		return scalarAR1{}, &ssm.ParamError{Name: name, Value: val, Reason: "its square under- or overflows"}
	}
	a.halfInvS2 = 0.5 / a.s2
	a.logNormS = -0.5*math.Log(2*math.Pi) - math.Log(a.sigma)
	a.dPhiInvS2 = a.dPhi / a.s2
	v0 := a.s2 / a.dPhi
	if math.IsInf(v0, 0) {
		return scalarAR1{}, &ssm.ParamError{Name: "phi", Value: a.phi, Reason: "stationary variance σ²/(1−φ²) overflows"}
	}
	a.sd0 = math.Sqrt(v0)
	a.halfInvV0 = 0.5 / v0
	a.logNormV0 = -0.5 * math.Log(2*math.Pi*v0)
	return a, nil
}

// MaxLogTransition implements ssm.TransitionBounder: −½ log(2πσ²).
func (a *scalarAR1) MaxLogTransition() float64 { return a.logNormS }

// SampleInitial implements ssm.Kernel: each x_0 ~ N(0, σ²/(1−φ²)).
func (a *scalarAR1) SampleInitial(x []float64, rng *rand.Rand) {
	sd := a.sd0
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
}

// SampleTransition implements ssm.Kernel.
func (a *scalarAR1) SampleTransition(x, prev []float64, rng *rand.Rand) {
	if len(prev) != len(x) {
		panic(fmt.Sprintf("models: SampleTransition: len(prev) = %d, len(x) = %d", len(prev), len(x)))
	}
	phi, sd := a.phi, a.sigma
	prev = prev[:len(x)]
	for i := range x {
		x[i] = phi*prev[i] + sd*rng.NormFloat64()
	}
}

// LogInitial implements ssm.Kernel.
func (a *scalarAR1) LogInitial(x []float64) float64 {
	ar1CheckRow("LogInitial", x)
	return a.logNormV0 - x[0]*x[0]*a.halfInvV0
}

// LogTransitions implements ssm.Kernel.
func (a *scalarAR1) LogTransitions(dst, x, prev []float64) {
	ar1CheckRow("LogTransitions", x)
	if len(dst) != len(prev) {
		panic(fmt.Sprintf("models: LogTransitions: len(dst) = %d, len(prev) = %d", len(dst), len(prev)))
	}
	xv, phi, c, h := x[0], a.phi, a.logNormS, a.halfInvS2
	prev = prev[:len(dst)]
	for j := range dst {
		r := xv - phi*prev[j]
		dst[j] = c - r*r*h
	}
}

// addLatentScore adds w·∇_u of log ν_0(x_i) (prev nil) or of
// log p(x_i|prev_i) to the first two columns of each 3-column row of h.
func (a *scalarAR1) addLatentScore(h []float64, w float64, x, prev []float64) {
	if len(h) != ar1Params*len(x) {
		panic(fmt.Sprintf("models: AddScore: len(h) = %d, want %d×%d", len(h), len(x), ar1Params))
	}
	if prev == nil {
		// log ν_0 = −½ log(2π v0) − x²/(2v0) with log v0 = 2u_2 − log(1−φ²),
		// so ∂ log v0/∂u_1 = 2φ and ∂ log v0/∂u_2 = 2.
		hv, c1 := a.halfInvV0, 2*w*a.phi
		for i, xv := range x {
			d := xv*xv*hv - 0.5
			g := h[3*i : 3*i+2 : 3*i+2]
			g[0] += c1 * d
			g[1] += 2 * w * d
		}
		return
	}
	if len(prev) != len(x) {
		panic(fmt.Sprintf("models: AddScore: len(prev) = %d, len(x) = %d", len(prev), len(x)))
	}
	// log p = −½ log(2πσ²) − r²/(2σ²), r = x − φ x_prev:
	// ∂/∂u_1 = r x_prev (1−φ²)/σ², ∂/∂u_2 = r²/σ² − 1.
	phi, c1, is2 := a.phi, w*a.dPhiInvS2, 2*a.halfInvS2
	prev = prev[:len(x)]
	for i, xv := range x {
		p := prev[i]
		r := xv - phi*p
		g := h[3*i : 3*i+2 : 3*i+2]
		g[0] += c1 * r * p
		g[1] += w * (r*r*is2 - 1)
	}
}

func ar1CheckRow(method string, x []float64) {
	if len(x) != 1 {
		panic(fmt.Sprintf("models: %s: len(x) = %d, want one row of 1", method, len(x)))
	}
}

func ar1CheckObs(method string, y []float64) {
	if len(y) != 1 {
		panic(fmt.Sprintf("models: %s: len(y) = %d, want 1", method, len(y)))
	}
}

// lgssmKernel is LGSSM bound at one u.
type lgssmKernel struct {
	scalarAR1
	invT2     float64 // 1/τ²
	logNormT  float64 // −½ log(2πτ²)
	invPV     float64 // 1/(σ²+τ²), predictive variance
	logNormPV float64 // −½ log(2π(σ²+τ²))
	qPrev     float64 // proposal mean coefficient of x_prev: τ²φ/(σ²+τ²)
	qY        float64 // proposal mean coefficient of y: σ²/(σ²+τ²)
	qSD       float64 // proposal standard deviation στ/√(σ²+τ²)
	halfInvQV float64 // 1/(2 qSD²)
	logNormQ  float64 // −½ log(2π qSD²)
}

var (
	_ ssm.Model             = LGSSM{}
	_ ssm.Proposer          = (*lgssmKernel)(nil)
	_ ssm.TransitionBounder = (*lgssmKernel)(nil)
)

// SampleEmission implements ssm.Kernel: y = x + τη.
func (k *lgssmKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	ar1CheckObs("LGSSM.SampleEmission", y)
	ar1CheckRow("LGSSM.SampleEmission", x)
	y[0] = x[0] + k.tau*rng.NormFloat64()
}

// AddLogEmission implements ssm.Kernel.
func (k *lgssmKernel) AddLogEmission(logw, y, x []float64) {
	ar1CheckObs("LGSSM.AddLogEmission", y)
	if len(logw) != len(x) {
		panic(fmt.Sprintf("models: LGSSM.AddLogEmission: len(logw) = %d, len(x) = %d", len(logw), len(x)))
	}
	yv := y[0]
	if math.IsNaN(yv) {
		return
	}
	c, h := k.logNormT, 0.5*k.invT2
	x = x[:len(logw)]
	for i := range logw {
		e := yv - x[i]
		logw[i] += c - e*e*h
	}
}

// AddScore implements ssm.Kernel.
func (k *lgssmKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	k.addLatentScore(h, w, x, prev)
	if prev == nil {
		return
	}
	ar1CheckObs("LGSSM.AddScore", y)
	yv := y[0]
	if math.IsNaN(yv) {
		return
	}
	// log p(y|x) = −½ log(2πτ²) − (y−x)²/(2τ²): ∂/∂u_3 = (y−x)²/τ² − 1.
	it2 := k.invT2
	for i, xv := range x {
		e := yv - xv
		h[3*i+2] += w * (e*e*it2 - 1)
	}
}

// Propose implements ssm.Proposer with the locally optimal proposal.
func (k *lgssmKernel) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	ar1CheckObs("LGSSM.Propose", y)
	if len(prev) != len(x) || len(logw) != len(x) {
		panic(fmt.Sprintf("models: LGSSM.Propose: len(x) = %d, len(prev) = %d, len(logw) = %d", len(x), len(prev), len(logw)))
	}
	yv := y[0]
	if math.IsNaN(yv) {
		// Without an observation the optimal proposal is the transition and
		// the weight increment is 0.
		k.SampleTransition(x, prev, rng)
		return
	}
	a, b, sd, phi := k.qPrev, k.qY*yv, k.qSD, k.phi
	c, hp := k.logNormPV, 0.5*k.invPV
	prev, logw = prev[:len(x)], logw[:len(x)]
	for i := range x {
		p := prev[i]
		e := yv - phi*p
		logw[i] += c - e*e*hp
		x[i] = a*p + b + sd*rng.NormFloat64()
	}
}

// LogProposal implements ssm.Proposer.
func (k *lgssmKernel) LogProposal(x, prev, y []float64) float64 {
	ar1CheckRow("LGSSM.LogProposal", x)
	ar1CheckRow("LGSSM.LogProposal", prev)
	ar1CheckObs("LGSSM.LogProposal", y)
	if math.IsNaN(y[0]) {
		r := x[0] - k.phi*prev[0]
		return k.logNormS - r*r*k.halfInvS2
	}
	r := x[0] - k.qPrev*prev[0] - k.qY*y[0]
	return k.logNormQ - r*r*k.halfInvQV
}
