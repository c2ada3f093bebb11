package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// GARCH is the GARCH(1,1) model observed with Gaussian noise:
//
//	σ_t² = α + β x_{t−1}² + γ σ_{t−1}²,  x_t ~ N(0, σ_t²),  y_t ~ N(x_t, τ²),
//	x_0 ~ N(0, μ),  σ_0² = μ,
//
// parameterised as in the paper by the natural parameters (μ, φ, λ, τ) with
// α = μ(1−φ), β = φλ, γ = φ(1−λ), so μ = α/(1−β−γ) is the stationary
// variance of x and φ = β+γ its persistence. The unconstrained vector is
//
//	u = (u_μ, logit φ, logit λ, log τ),  μ = 2·logistic(4u_μ)^(1/4),
//
// so μ ∈ (0, 2), φ, λ ∈ (0, 1) and τ > 0. The paper uses log μ; u_μ maps R
// onto the support of the default prior μ ~ Uniform(0, 2) and is log μ up
// to a slope 1 − (μ/2)⁴ (a [Transform] of Power 4): ≥ 0.94 for μ ≤ 1.
// The data identify α = μ(1−φ) far better than μ or φ when φ is near 1,
// so the posterior is a ridge along log μ − logit φ ≈ log α; with
// u_μ = logit(μ/2), whose slope against log μ is 1 − μ/2, the ridge bent,
// and the samplers' Gaussian proposals and Newton steps missed it. On a
// series simulated at μ 1.1, φ 0.99 with T = 62,000 (examples/simulate
// -model garch -T 62000 -params 1.1,0.99,0.27,0.64), whose posterior of μ
// spans 0.74–1.73, the residual sd of logit φ about a line in the μ
// coordinate is 0.120 for logit(μ/2), 0.091 for u_μ and 0.078 for log μ,
// and 0.079 about a quadratic in each (over the posterior draws).
//
// A state row has six entries: [x_t, σ_t², ∂σ_t²/∂u_1, …, ∂σ_t²/∂u_4].
// The σ² part is a deterministic function of the past, so the transition has
// no density in the full state: the kernel reports
// ssm.Degenerate and backward smoothers cannot be used with it. The tangent
// ∂σ_t²/∂u is the total derivative along the path,
//
//	∂σ_t²/∂u = ∂α/∂u + ∂β/∂u x_{t−1}² + ∂γ/∂u σ_{t−1}² + γ ∂σ_{t−1}²/∂u,
//
// which makes AddScore the exact derivative of the complete-data
// log-likelihood. (The paper's appendix formula, and the authors' code, drop
// the last term; the resulting gradient is biased whenever γ is not small.)
//
// ExactScore, a deterministic log-likelihood and score for sgmcmc.Fit,
// runs a quadrature filter by default: the filtered law of log σ_t² is a
// K-point rule (Points, 10) that moves with the data and u. Each step
// maps every point through σ_{t+1}² = α + γs + βZ², Z = x_t | y_t
// Gaussian, on an 8-point Gauss–Hermite rule in Z, weighs the K·8 atoms
// by the next emission N(y_{t+1}; 0, σ² + τ²) (whose sum is that
// observation's predictive density) and compresses them to the K-point
// Gauss rule of their law in log σ² (Stieltjes procedure, Golub–Welsch),
// which keeps its first 2K moments. Every step is smooth in u, and the
// score is the exact derivative of the log-likelihood, carried through
// the same pass in forward mode (the Gauss rule's derivative is that of a
// symmetric tridiagonal eigenproblem). On the S&P 500
// returns (T = 17,055) at the posterior mean, against 512 σ² nodes, the
// log-likelihood is off by −1.65, −0.71, −0.29, −0.048 and −0.004 nats at
// 6, 7, 8, 10 and 12 points, and the 10-point error varies by 0.06 nats
// over ±2 posterior sds; the fixed-node filter (Nodes) is off by 4.7 nats
// at 64 nodes there, by 0.04 at 256, because the filtered law, about 0.2
// wide in log σ², is narrower than the node spacing that a range covering
// the 1987 crash allows (go test -run TestGARCHQuad -v ./models).
type GARCH struct {
	// Prior is the prior on u. Nil means DefaultGARCHPrior().
	Prior ssm.Prior
	// Points is the size of the rule of ExactScore's quadrature filter
	// (below): 0 means 10, otherwise 3 to garchMaxPoints (24): above it
	// the score's forward-mode derivative of the Gauss rule loses its
	// accuracy (at 26 points it is 10⁻⁴ relative off its log-likelihood's
	// central differences, at 27 and more wholly wrong; 3 to 25 agree to
	// 10⁻⁹). RefinedLogLik, values only, goes to 32. With Nodes set, it must be
	// 0.
	Points int
	// Nodes, when not 0, replaces the quadrature filter by the filter on
	// that many fixed σ² nodes (16 to 1024; see garch_exact.go): a pass
	// costs about Nodes^1.7 (64 nodes: five times 10 quadrature points on
	// the S&P 500 returns), and on the S&P 500 series 64 nodes tilt the
	// posterior of λ by about 0.6 sd, which sgmcmc.Fit measures with
	// RefinedLogLik and corrects.
	Nodes int
	// Refine is the size of RefinedLogLik's filter: quadrature points
	// (0: ExactScore's plus 4; 3 to 32) or, with Nodes, σ² nodes (0: four
	// times Nodes; 16 to 4096).
	Refine int
}

// garchQuadPoints is the default size of the quadrature filter's rule,
// garchMaxPoints the largest whose score is exact (see GARCH.Points).
const (
	garchQuadPoints = 10
	garchMaxPoints  = 24
)

// quadrature reports whether ExactScore runs the quadrature filter, with
// its points and those of RefinedLogLik.
func (m GARCH) quadrature() (k, refine int, ok bool, err error) {
	if m.Nodes != 0 {
		if m.Points != 0 {
			return 0, 0, false, fmt.Errorf("models: GARCH.Points = %d with Nodes = %d: set one of them", m.Points, m.Nodes)
		}
		return 0, 0, false, nil
	}
	k, refine = m.Points, m.Refine
	switch {
	case k == 0:
		k = garchQuadPoints
	case k < 3 || k > garchMaxPoints:
		return 0, 0, true, fmt.Errorf("models: GARCH.Points = %d: want 0 (10 points) or 3 to %d", m.Points, garchMaxPoints)
	}
	switch {
	case refine == 0:
		refine = k + 4
	case refine < 3 || refine > 32:
		return 0, 0, true, fmt.Errorf("models: GARCH.Refine = %d: want 0 (Points + 4) or 3 to 32 quadrature points", m.Refine)
	}
	return k, refine, true, nil
}

// garchQuadJ is the size of the rule in Z for k points in log σ²: more
// changes the S&P 500 log-likelihood by under 0.02 nats at k = 10.
func garchQuadJ(k int) int { return max(8, k-2) }

// nodes returns the σ² node count of ExactScore's node filter.
func (m GARCH) nodes() (int, error) {
	switch {
	case m.Refine != 0 && (m.Refine < 16 || m.Refine > 4096):
		return 0, fmt.Errorf("models: GARCH.Refine = %d: want 0 (four times the nodes) or 16 to 4096", m.Refine)
	case m.Nodes == 0:
		return garchExactG, nil
	case m.Nodes < 16 || m.Nodes > 1024:
		return 0, fmt.Errorf("models: GARCH.Nodes = %d: want 0 (the quadrature filter) or 16 to 1024", m.Nodes)
	}
	return m.Nodes, nil
}

// refineNodes returns the σ² node count of RefinedLogLik.
func (m GARCH) refineNodes() (int, error) {
	g, err := m.nodes()
	if err != nil || m.Refine == 0 {
		return 4 * g, err
	}
	return m.Refine, nil
}

var _ ssm.Coarsener = GARCH{}

// Coarsen implements ssm.Coarsener: with Points, Nodes and Refine 0, the
// same model on a 7-point rule whose RefinedLogLik is the 14-point rule
// of the default's; none for any other setting. On the S&P 500 returns a
// pass costs 80 ms at 7 points against 139 ms at 10 (go test -run '^$'
// -bench GARCHQuad ./models), and the 7-point log-likelihood is 0.7
// nats below the converged one where 10 points are 0.05 below; sgmcmc.Fit
// samples the coarser rule only where its correction towards the finer
// one is small and fits well.
func (m GARCH) Coarsen() (ssm.Model, bool) {
	if m.Points != 0 || m.Nodes != 0 || m.Refine != 0 {
		return nil, false
	}
	return GARCH{Prior: m.Prior, Points: garchQuadCoarse, Refine: garchQuadPoints + 4}, true
}

// garchQuadCoarse is the rule size of the coarser level (Coarsen).
const garchQuadCoarse = 7

// GARCH state row layout.
const (
	garchX      = 0 // x_t
	garchS2     = 1 // σ_t²
	garchTan    = 2 // ∂σ_t²/∂u_1..u_4 start here
	garchState  = 6
	garchParams = 4
)

// garchSpec is the GARCH parameter map and default prior; it is read-only
// (DefaultGARCHPrior hands out copies).
var garchSpec = Params{
	Names:      []string{"mu", "phi", "lambda", "tau"},
	Transforms: []Transform{{Lo: 0, Hi: 2, Rate: 1, Power: 4}, Unit, Unit, Positive},
	Prior: []Marginal{
		Uniform{Lo: 0, Hi: 2},
		Beta{A: 10, B: 1.5, Lo: -1, Hi: 1, TruncLo: 0, TruncHi: 1},
		Beta{A: 20, B: 1.5, Lo: -1, Hi: 1, TruncLo: 0, TruncHi: 1},
		InvGammaSq{A: 2, B: 0.5},
	},
}

// DefaultGARCHPrior returns the paper's GARCH prior pushed forward to u:
// μ ~ Uniform(0, 2); (φ+1)/2 ~ Beta(10, 1.5) restricted to φ ∈ (0, 1);
// (λ+1)/2 ~ Beta(20, 1.5) restricted to λ ∈ (0, 1); τ² ~ InvGamma(2, 0.5).
// The result is a fresh copy the caller may modify.
func DefaultGARCHPrior() Independent { return garchSpec.Clone().Independent() }

// Dims implements ssm.Model.
func (GARCH) Dims() ssm.Dims { return ssm.Dims{State: garchState, Obs: 1, Param: garchParams} }

// ParamNames implements ssm.Model: "mu", "phi", "lambda", "tau".
func (GARCH) ParamNames() []string { return garchSpec.ParamNames() }

// LogPrior implements ssm.Prior.
func (m GARCH) LogPrior(grad, u []float64) float64 { return orPrior(m.Prior, garchSpec, grad, u) }

// Constrain implements ssm.Model.
func (GARCH) Constrain(theta, u []float64) float64 {
	garchCheckParams("Constrain", theta, u)
	return garchSpec.Constrain(theta, u)
}

// Unconstrain implements ssm.Model.
func (GARCH) Unconstrain(u, theta []float64) error {
	garchCheckParams("Unconstrain", u, theta)
	return garchSpec.Unconstrain(u, theta)
}

// Params returns u for the natural parameters, or a *ssm.ParamError when
// μ ∉ (0, 2), φ ∉ (0, 1), λ ∉ (0, 1), τ ≤ 0, or any of them is NaN or Inf.
func (m GARCH) Params(mu, phi, lambda, tau float64) ([]float64, error) {
	u := make([]float64, garchParams)
	if err := m.Unconstrain(u, []float64{mu, phi, lambda, tau}); err != nil {
		return nil, err
	}
	return u, nil
}

// FromABG returns u for the GARCH coefficients (α, β, γ) of
// σ_t² = α + β x_{t−1}² + γ σ_{t−1}² and noise scale τ, the form in which the
// paper states its data-generating parameters (section 5.2: α = 0.1,
// β = 0.8, γ = 0.05, τ = 0.3). It needs α, β, γ > 0, β+γ < 1,
// μ = α/(1−β−γ) < 2 and τ > 0; otherwise it returns a *ssm.ParamError.
func (m GARCH) FromABG(alpha, beta, gamma, tau float64) ([]float64, error) {
	for _, p := range []struct {
		name string
		v    float64
	}{{"alpha", alpha}, {"beta", beta}, {"gamma", gamma}, {"tau", tau}} {
		if !(p.v > 0) || math.IsInf(p.v, 1) {
			return nil, &ssm.ParamError{Name: p.name, Value: p.v, Reason: "must be positive and finite"}
		}
	}
	phi := beta + gamma
	if !(phi < 1) {
		return nil, &ssm.ParamError{Name: "gamma", Value: gamma, Reason: fmt.Sprintf("beta+gamma = %v must be < 1", phi)}
	}
	mu := alpha / (1 - phi)
	if !(mu < 2) {
		return nil, &ssm.ParamError{Name: "alpha", Value: alpha, Reason: fmt.Sprintf("mu = alpha/(1-beta-gamma) = %v must be < 2", mu)}
	}
	return m.Params(mu, phi, beta/phi, tau)
}

// Bind implements ssm.Model. The kernel's state rows follow the layout in
// the GARCH documentation; it also implements ssm.Proposer (the locally
// optimal proposal), ssm.StateCompleter and ssm.Degenerate. It fails for
// an invalid Nodes, so that a fit stops at once instead of falling back
// from the exact scorer.
func (m GARCH) Bind(u []float64) (ssm.Kernel, error) {
	if _, err := m.nodes(); err != nil {
		return nil, err
	}
	k := new(garchKernel)
	if err := k.Rebind(u); err != nil {
		return nil, err
	}
	return k, nil
}

// Rebind implements ssm.Rebinder.
func (dst *garchKernel) Rebind(u []float64) error {
	if len(u) != garchParams {
		panic(fmt.Sprintf("models: GARCH.Bind: len(u) = %d, want %d", len(u), garchParams))
	}
	var k garchKernel
	var v, dv [garchParams]float64
	if err := garchSpec.Natural(v[:], dv[:], u); err != nil {
		return err
	}
	mu, phi, lam, tau := v[0], v[1], v[2], v[3]
	k.mu, k.tau = mu, tau
	k.alpha, k.beta, k.gamma = mu*(1-phi), phi*lam, phi*(1-lam)
	k.tau2 = tau * tau
	if !(k.tau2 > 0) || math.IsInf(k.tau2, 1) {
		return &ssm.ParamError{Name: "tau", Value: tau, Reason: "tau² must be positive and finite in float64"}
	}
	k.logNormTau = -0.5*math.Log(2*math.Pi) - math.Log(tau)
	k.logMu = math.Log(mu)
	k.dmu = dv[0]
	// Partial derivatives of α, β, γ in u; zero entries are left implicit
	// in the recursion (u_4 = log τ does not enter σ²).
	k.da1 = dv[0] * (1 - phi)
	k.da2 = -mu * dv[1]
	k.db2 = dv[1] * lam
	k.dg2 = dv[1] * (1 - lam)
	k.db3 = phi * dv[2]
	k.dg3 = -phi * dv[2]
	*dst = k
	return nil
}

// Simulate draws x_0..x_T and y_1..y_T at u. x is the (T+1)×6 block of full
// state rows (row t is [x_t, σ_t², ∂σ_t²/∂u]); y has length T.
func (m GARCH) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	if T < 0 {
		return nil, ssm.Sequence{}, fmt.Errorf("models: GARCH.Simulate: T = %d must be non-negative", T)
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, ssm.Sequence{}, err
	}
	x, y = ssm.Simulate(k, m.Dims(), T, rng)
	return x, y, nil
}

// garchKernel is GARCH bound at one u. Everything that depends only on u is
// computed once in Bind.
type garchKernel struct {
	mu, tau            float64
	alpha, beta, gamma float64
	tau2               float64
	logNormTau         float64 // −½log 2π − log τ
	logMu              float64
	dmu                float64 // ∂μ/∂u_1
	da1, da2           float64 // ∂α/∂u_1, ∂α/∂u_2
	db2, db3, dg2, dg3 float64 // ∂β/∂u_{2,3}, ∂γ/∂u_{2,3}
}

var (
	_ ssm.Model          = GARCH{}
	_ ssm.Proposer       = (*garchKernel)(nil)
	_ ssm.StateCompleter = (*garchKernel)(nil)
	_ ssm.Degenerate     = (*garchKernel)(nil)
)

const garchHalfLog2Pi = 0.91893853320467274178032973640561763986139747363778 // ½ log 2π

// garchRows returns the number of state rows in x and panics when x is ragged.
func garchRows(method string, x []float64) int {
	if len(x)%garchState != 0 {
		panic(fmt.Sprintf("models: GARCH.%s: len(x) = %d is not a multiple of %d", method, len(x), garchState))
	}
	return len(x) / garchState
}

func garchCheckPrev(method string, x, prev []float64) int {
	n := garchRows(method, x)
	if len(prev) != len(x) {
		panic(fmt.Sprintf("models: GARCH.%s: len(prev) = %d, len(x) = %d", method, len(prev), len(x)))
	}
	return n
}

func garchCheckObs(method string, y []float64) {
	if len(y) != 1 {
		panic(fmt.Sprintf("models: GARCH.%s: len(y) = %d, want 1", method, len(y)))
	}
}

// initRow sets σ_0² = μ and its tangent (∂μ/∂u_1, 0, 0, 0) in row r.
func (k *garchKernel) initRow(r []float64) {
	r[garchS2] = k.mu
	r[garchTan] = k.dmu
	r[garchTan+1] = 0
	r[garchTan+2] = 0
	r[garchTan+3] = 0
}

// stepRow sets σ_t² and its total tangent in row r from the previous row p.
// r and p must not overlap (they are distinct rows).
func (k *garchKernel) stepRow(r, p []float64) {
	x2, s2 := p[garchX]*p[garchX], p[garchS2]
	g := k.gamma
	r[garchS2] = k.alpha + k.beta*x2 + g*s2
	r[garchTan] = k.da1 + g*p[garchTan]
	r[garchTan+1] = k.da2 + k.db2*x2 + k.dg2*s2 + g*p[garchTan+1]
	r[garchTan+2] = k.db3*x2 + k.dg3*s2 + g*p[garchTan+2]
	r[garchTan+3] = g * p[garchTan+3]
}

// sigma2 returns σ_t² implied by the previous row p.
func (k *garchKernel) sigma2(p []float64) float64 {
	return k.alpha + k.beta*p[garchX]*p[garchX] + k.gamma*p[garchS2]
}

// SampleInitial implements ssm.Kernel: x_0 ~ N(0, μ), σ_0² = μ.
func (k *garchKernel) SampleInitial(x []float64, rng *rand.Rand) {
	n := garchRows("SampleInitial", x)
	sd := math.Sqrt(k.mu)
	for i := range n {
		r := x[i*garchState : (i+1)*garchState : (i+1)*garchState]
		k.initRow(r)
		r[garchX] = sd * rng.NormFloat64()
	}
}

// SampleTransition implements ssm.Kernel: σ_t² (and tangent) from the
// previous row, then x_t ~ N(0, σ_t²).
func (k *garchKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	n := garchCheckPrev("SampleTransition", x, prev)
	for i := range n {
		lo, hi := i*garchState, (i+1)*garchState
		r := x[lo:hi:hi]
		k.stepRow(r, prev[lo:hi:hi])
		r[garchX] = math.Sqrt(r[garchS2]) * rng.NormFloat64()
	}
}

// SampleEmission implements ssm.Kernel: y ~ N(x, τ²).
func (k *garchKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	garchCheckObs("SampleEmission", y)
	if len(x) != garchState {
		panic(fmt.Sprintf("models: GARCH.SampleEmission: len(x) = %d, want %d", len(x), garchState))
	}
	y[0] = x[garchX] + k.tau*rng.NormFloat64()
}

// LogInitial implements ssm.Kernel: log N(x_0 | 0, μ). The σ² part of the
// row is not checked (it is μ by construction).
func (k *garchKernel) LogInitial(x []float64) float64 {
	if len(x) != garchState {
		panic(fmt.Sprintf("models: GARCH.LogInitial: len(x) = %d, want %d", len(x), garchState))
	}
	return -garchHalfLog2Pi - 0.5*k.logMu - 0.5*x[garchX]*x[garchX]/k.mu
}

// LogTransitions implements ssm.Kernel with dst[j] = log N(x_t | 0, σ_t²(prev_j)),
// the density of the random part x_t only. The deterministic part
// (σ_t² = α + β x_{t−1}² + γ σ_{t−1}²) is ignored: the full-state transition
// is a point mass in σ², with no density, which is why the kernel reports
// ssm.Degenerate and backward smoothers must not use these values.
func (k *garchKernel) LogTransitions(dst, x, prev []float64) {
	if len(x) != garchState {
		panic(fmt.Sprintf("models: GARCH.LogTransitions: len(x) = %d, want %d", len(x), garchState))
	}
	n := garchRows("LogTransitions", prev)
	if len(dst) != n {
		panic(fmt.Sprintf("models: GARCH.LogTransitions: len(dst) = %d, want %d", len(dst), n))
	}
	xt2 := x[garchX] * x[garchX]
	for j := range n {
		s2 := k.sigma2(prev[j*garchState : (j+1)*garchState])
		dst[j] = -garchHalfLog2Pi - 0.5*math.Log(s2) - 0.5*xt2/s2
	}
}

// AddLogEmission implements ssm.Kernel: logw[i] += log N(y | x_i, τ²);
// a missing (NaN) y adds nothing.
func (k *garchKernel) AddLogEmission(logw, y, x []float64) {
	garchCheckObs("AddLogEmission", y)
	n := garchRows("AddLogEmission", x)
	if len(logw) != n {
		panic(fmt.Sprintf("models: GARCH.AddLogEmission: len(logw) = %d, want %d", len(logw), n))
	}
	yt := y[0]
	if math.IsNaN(yt) {
		return
	}
	c, s := k.logNormTau, -0.5/k.tau2
	for i := range n {
		e := yt - x[i*garchState+garchX]
		logw[i] += c + s*e*e
	}
}

// AddScore implements ssm.Kernel. With C = (x_t² − σ_t²)/(2σ_t⁴), the
// transition part is C·∂σ_t²/∂u using the σ_t² and total tangent stored in
// row x (computed from prev when x was sampled or completed), and the
// emission part is ((y−x_t)²/τ² − 1) in u_4 = log τ (zero for a missing y).
// With prev nil, the initial term ∇ log N(x_0 | 0, μ) = C·(∂μ/∂u_1, 0, 0, 0)
// is added, again read from the row.
func (k *garchKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	n := garchRows("AddScore", x)
	if len(h) != n*garchParams {
		panic(fmt.Sprintf("models: GARCH.AddScore: len(h) = %d, want %d", len(h), n*garchParams))
	}
	emit := false
	var yt float64
	if prev != nil {
		garchCheckPrev("AddScore", x, prev)
		garchCheckObs("AddScore", y)
		yt = y[0]
		emit = !math.IsNaN(yt)
	}
	invTau2 := 1 / k.tau2
	for i := range n {
		r := x[i*garchState : (i+1)*garchState : (i+1)*garchState]
		hi := h[i*garchParams : (i+1)*garchParams : (i+1)*garchParams]
		xt, s2 := r[garchX], r[garchS2]
		// (x² − σ²)/(2σ⁴) as (x·(x/σ²) − 1)/(2σ²): σ⁴ overflows from
		// σ² ≈ 1.3e154, which would make a finite score 0.
		c := w * (xt*(xt/s2) - 1) / (2 * s2)
		if c > math.MaxFloat64 || c < -math.MaxFloat64 {
			// A state whose transition density underflows (x² ≫ σ²):
			// keep c finite so that a zero tangent entry adds 0, not NaN.
			c = math.Copysign(math.MaxFloat64, c)
		}
		hi[0] += c * r[garchTan]
		hi[1] += c * r[garchTan+1]
		hi[2] += c * r[garchTan+2]
		hi[3] += c * r[garchTan+3]
		if emit {
			e := yt - xt
			hi[3] += w * (e*e*invTau2 - 1)
		}
	}
}

// Complete implements ssm.StateCompleter: it recomputes σ² and the tangent
// of row x from row prev (prev nil: σ_0² = μ), leaving x_t unchanged.
func (k *garchKernel) Complete(x, prev []float64) {
	if len(x) != garchState {
		panic(fmt.Sprintf("models: GARCH.Complete: len(x) = %d, want %d", len(x), garchState))
	}
	if prev == nil {
		k.initRow(x)
		return
	}
	if len(prev) != garchState {
		panic(fmt.Sprintf("models: GARCH.Complete: len(prev) = %d, want %d", len(prev), garchState))
	}
	k.stepRow(x, prev)
}

// DegenerateTransition implements ssm.Degenerate: σ_t² is a deterministic
// function of the previous row, so the transition has no density in the
// full state and backward smoothers are undefined.
func (k *garchKernel) DegenerateTransition() bool { return true }

// Propose implements ssm.Proposer with the locally optimal proposal
//
//	x_t ~ N(σ_t² y/(σ_t²+τ²), σ_t²τ²/(σ_t²+τ²)),
//
// σ_t² computed from prev, and adds the incremental weight
// log p(y | prev) = log N(y | 0, σ_t² + τ²) to logw. A missing y draws from
// the transition and adds 0.
func (k *garchKernel) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	garchCheckObs("Propose", y)
	n := garchCheckPrev("Propose", x, prev)
	if len(logw) != n {
		panic(fmt.Sprintf("models: GARCH.Propose: len(logw) = %d, want %d", len(logw), n))
	}
	yt := y[0]
	if math.IsNaN(yt) {
		k.SampleTransition(x, prev, rng)
		return
	}
	t2, y2 := k.tau2, yt*yt
	for i := range n {
		lo, hi := i*garchState, (i+1)*garchState
		r := x[lo:hi:hi]
		k.stepRow(r, prev[lo:hi:hi])
		s2 := r[garchS2]
		v := s2 + t2
		f := 1 / (1 + t2/s2) // s2/v, and 1 (not Inf/Inf) when σ² overflows
		r[garchX] = f*yt + math.Sqrt(f*t2)*rng.NormFloat64()
		logw[i] += -garchHalfLog2Pi - 0.5*math.Log(v) - 0.5*y2/v
	}
}

// LogProposal implements ssm.Proposer: the log density of x's x_t under the
// proposal from prev (the transition density when y is missing).
func (k *garchKernel) LogProposal(x, prev, y []float64) float64 {
	garchCheckObs("LogProposal", y)
	if len(x) != garchState || len(prev) != garchState {
		panic(fmt.Sprintf("models: GARCH.LogProposal: len(x) = %d, len(prev) = %d, want %d", len(x), len(prev), garchState))
	}
	s2 := k.sigma2(prev)
	xt := x[garchX]
	if math.IsNaN(y[0]) {
		return -garchHalfLog2Pi - 0.5*math.Log(s2) - 0.5*xt*xt/s2
	}
	f := 1 / (1 + k.tau2/s2) // s2/(s2+τ²)
	vv := f * k.tau2
	e := xt - f*y[0]
	return -garchHalfLog2Pi - 0.5*math.Log(vv) - 0.5*e*e/vv
}

func garchCheckParams(method string, a, b []float64) {
	if len(a) != garchParams || len(b) != garchParams {
		panic(fmt.Sprintf("models: GARCH.%s: slice lengths %d and %d, want %d", method, len(a), len(b), garchParams))
	}
}

var _ ssm.Coster = GARCH{}

// ScoreCost implements ssm.Coster. The quadrature filter's pass costs
// about 9.6 ns per point² per point in Z per observation (K = 10, 8 in Z:
// 132 ms over the 17,055 S&P 500 returns, go test -run '^$' -bench
// GARCHQuad ./models on a 2-core machine), and a score, whose tangents
// ride along the pass, about three passes. A
// pass over the σ² nodes with the score costs about 28 µs per observation
// at 32 nodes and grows like Nodes^1.6 (go test -run XXX -bench
// GARCHExactFull ./models: log-likelihood passes over the 1,859 DAX
// returns take 16.7, 25.1 and 77.4 ms at 24, 32 and 64 nodes, and the
// score at 64 nodes 160.8 ms).
func (m GARCH) ScoreCost() float64 {
	if k, _, quad, err := m.quadrature(); quad && err == nil {
		return 3 * 9.6 * float64(k*k*garchQuadJ(k))
	}
	g, err := m.nodes()
	if err != nil {
		g = garchExactG
	}
	return 28000 * math.Pow(float64(g)/32, 1.6)
}
