package ssmtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The toy models below are written independently of package models, row by
// row and as plainly as possible, so that these tests check the checker.

const ln2pi = 1.8378770664093453 // log(2π)

func logNorm(x, mean, v float64) float64 { return -0.5*(ln2pi+math.Log(v)) - 0.5*(x-mean)*(x-mean)/v }

// toyLGSSM is x_t = φ x_{t-1} + σ ε, y_t = x_t + τ η with u = (atanh φ,
// log σ, log τ), ν_0 the stationary law and a N(0, 1) prior on each u_i.
// The bug fields plant one error each.
type toyLGSSM struct {
	scoreSignBug bool // flips the sign of the φ score of transitions
	nanBug       bool // adds the emission even when y is missing
	jacBug       bool // Constrain returns a log-Jacobian off by 0.1
	priorBug     bool // flips the sign of the prior gradient

	// Sampler bugs, for the checks of sampler.go.
	initialBug    bool // SampleInitial draws with sd σ, not the stationary sd
	transitionBug bool // SampleTransition uses φ² for φ
	emissionBug   bool // SampleEmission returns 3·y
}

type toyLGSSMKernel struct {
	m               toyLGSSM
	phi, s2, t2, v0 float64
}

func (toyLGSSM) Dims() ssm.Dims       { return ssm.Dims{State: 1, Obs: 1, Param: 3} }
func (toyLGSSM) ParamNames() []string { return []string{"phi", "sigma", "tau"} }
func (m toyLGSSM) LogPrior(grad, u []float64) float64 {
	l := 0.0
	for i, v := range u {
		l += logNorm(v, 0, 1)
		if grad != nil {
			grad[i] = -v
			if m.priorBug {
				grad[i] = v
			}
		}
	}
	return l
}
func (m toyLGSSM) Constrain(theta, u []float64) float64 {
	theta[0], theta[1], theta[2] = math.Tanh(u[0]), math.Exp(u[1]), math.Exp(u[2])
	l := math.Log(1-theta[0]*theta[0]) + u[1] + u[2]
	if m.jacBug {
		l += 0.1
	}
	return l
}
func (toyLGSSM) Unconstrain(u, theta []float64) error {
	if !(math.Abs(theta[0]) < 1) {
		return &ssm.ParamError{Name: "phi", Value: theta[0], Reason: "must satisfy |phi| < 1"}
	}
	u[0], u[1], u[2] = math.Atanh(theta[0]), math.Log(theta[1]), math.Log(theta[2])
	return nil
}
func (m toyLGSSM) Bind(u []float64) (ssm.Kernel, error) {
	phi := math.Tanh(u[0])
	s2 := math.Exp(2 * u[1])
	return toyLGSSMKernel{m: m, phi: phi, s2: s2, t2: math.Exp(2 * u[2]), v0: s2 / (1 - phi*phi)}, nil
}

func (k toyLGSSMKernel) SampleInitial(x []float64, rng *rand.Rand) {
	sd := math.Sqrt(k.v0)
	if k.m.initialBug {
		sd = math.Sqrt(k.s2)
	}
	for i := range x {
		x[i] = sd * rng.NormFloat64()
	}
}
func (k toyLGSSMKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	phi := k.phi
	if k.m.transitionBug {
		phi *= phi
	}
	for i := range x {
		x[i] = phi*prev[i] + math.Sqrt(k.s2)*rng.NormFloat64()
	}
}
func (k toyLGSSMKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	y[0] = x[0] + math.Sqrt(k.t2)*rng.NormFloat64()
	if k.m.emissionBug {
		y[0] *= 3
	}
}
func (k toyLGSSMKernel) LogInitial(x []float64) float64 { return logNorm(x[0], 0, k.v0) }
func (k toyLGSSMKernel) LogTransitions(dst, x, prev []float64) {
	for j := range prev {
		dst[j] = logNorm(x[0], k.phi*prev[j], k.s2)
	}
}
func (k toyLGSSMKernel) AddLogEmission(logw, y, x []float64) {
	if math.IsNaN(y[0]) && !k.m.nanBug {
		return
	}
	for i := range x {
		logw[i] += logNorm(y[0], x[i], k.t2)
	}
}
func (k toyLGSSMKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	for i := range x {
		g := h[3*i : 3*i+3]
		if prev == nil {
			// log ν_0 depends on log v0 = 2u_σ − log(1−φ²); d log v0/du_φ = 2φ.
			dv := -0.5 + 0.5*x[i]*x[i]/k.v0
			g[0] += w * dv * 2 * k.phi
			g[1] += w * dv * 2
			continue
		}
		r := x[i] - k.phi*prev[i]
		sphi := r * prev[i] * (1 - k.phi*k.phi) / k.s2
		if k.m.scoreSignBug {
			sphi = -sphi
		}
		g[0] += w * sphi
		g[1] += w * (-1 + r*r/k.s2)
		if !math.IsNaN(y[0]) {
			e := y[0] - x[i]
			g[2] += w * (-1 + e*e/k.t2)
		}
	}
}

// toyMean has a state row (x, m, ∂m/∂c) where m_t = m_{t-1}/2 + c +
// x_{t-1}/10 is deterministic given the past, x_t ~ N(m_t, 1), y_t ~ N(x_t,
// 1), m_0 = c, parameter u = c. With partialBug the score uses ∂m_t/∂c = 1
// instead of the total derivative, the error the completer path of the
// checker exists to catch.
type toyMean struct{ partialBug bool }
type toyMeanKernel struct {
	c          float64
	partialBug bool
}

func (toyMean) Dims() ssm.Dims       { return ssm.Dims{State: 3, Obs: 1, Param: 1} }
func (toyMean) ParamNames() []string { return []string{"c"} }
func (toyMean) LogPrior(grad, u []float64) float64 {
	if grad != nil {
		grad[0] = -u[0]
	}
	return logNorm(u[0], 0, 1)
}
func (toyMean) Constrain(theta, u []float64) float64 { theta[0] = u[0]; return 0 }
func (toyMean) Unconstrain(u, theta []float64) error { u[0] = theta[0]; return nil }
func (m toyMean) Bind(u []float64) (ssm.Kernel, error) {
	return toyMeanKernel{c: u[0], partialBug: m.partialBug}, nil
}

func (k toyMeanKernel) Complete(x, prev []float64) {
	if prev == nil {
		x[1], x[2] = k.c, 1
		return
	}
	x[1] = 0.5*prev[1] + k.c + 0.1*prev[0]
	x[2] = 0.5*prev[2] + 1
}
func (k toyMeanKernel) SampleInitial(x []float64, rng *rand.Rand) {
	for i := 0; i < len(x); i += 3 {
		k.Complete(x[i:i+3], nil)
		x[i] = x[i+1] + rng.NormFloat64()
	}
}
func (k toyMeanKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	for i := 0; i < len(x); i += 3 {
		k.Complete(x[i:i+3], prev[i:i+3])
		x[i] = x[i+1] + rng.NormFloat64()
	}
}
func (k toyMeanKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	y[0] = x[0] + rng.NormFloat64()
}
func (k toyMeanKernel) LogInitial(x []float64) float64 { return logNorm(x[0], k.c, 1) }
func (k toyMeanKernel) LogTransitions(dst, x, prev []float64) {
	for j := range dst {
		p := prev[3*j : 3*j+3]
		dst[j] = logNorm(x[0], 0.5*p[1]+k.c+0.1*p[0], 1)
	}
}
func (k toyMeanKernel) AddLogEmission(logw, y, x []float64) {
	if math.IsNaN(y[0]) {
		return
	}
	for i := range logw {
		logw[i] += logNorm(y[0], x[3*i], 1)
	}
}
func (k toyMeanKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	for i := range h {
		r := x[3*i] - x[3*i+1]
		dm := x[3*i+2]
		if k.partialBug {
			dm = 1
		}
		h[i] += w * r * dm
	}
}

var (
	_ ssm.Model          = toyLGSSM{}
	_ ssm.Model          = toyMean{}
	_ ssm.StateCompleter = toyMeanKernel{}
)

func TestScoreCorrectModels(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 5; trial++ {
		u := []float64{rng.Float64()*3 - 1.5, rng.Float64()*2 - 1, rng.Float64()*2 - 1}
		e, err := CheckScore(toyLGSSM{}, u, 50, rng)
		if err != nil || e > ScoreTol {
			t.Errorf("toy LGSSM at u = %v: rel. error %.3g, err %v", u, e, err)
		}
		t.Logf("toy LGSSM u = %.3f: rel. error %.2g", u, e)
		uc := []float64{rng.NormFloat64()}
		e, err = CheckScore(toyMean{}, uc, 50, rng)
		if err != nil || e > ScoreTol {
			t.Errorf("toy completer at u = %v: rel. error %.3g, err %v", uc, e, err)
		}
		t.Logf("toy completer u = %.3f: rel. error %.2g", uc, e)
	}
}

// The checker must fail on wrong models; otherwise it could pass anything.
func TestScoreCatchesBugs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	u := []float64{0.9, -0.3, -0.5}
	e, err := CheckScore(toyLGSSM{scoreSignBug: true}, u, 50, rng)
	if err != nil || e < 1e-2 {
		t.Errorf("sign error in the φ score: rel. error %.3g, err %v; want a large error", e, err)
	}
	t.Logf("sign bug: rel. error %.3g", e)

	e, err = CheckScore(toyLGSSM{nanBug: true}, u, 50, rng)
	if err == nil && e < 1e-2 {
		t.Errorf("emission added for missing y: rel. error %.3g and no error", e)
	}
	t.Logf("NaN bug: rel. error %.3g, err %v", e, err)

	// Only the total derivative through the completed state is right.
	e, err = CheckScore(toyMean{partialBug: true}, []float64{0.7}, 50, rng)
	if err != nil || e < 1e-2 {
		t.Errorf("partial instead of total derivative: rel. error %.3g, err %v; want a large error", e, err)
	}
	t.Logf("partial-derivative bug: rel. error %.3g", e)
}

func TestScorePathComparison(t *testing.T) {
	// A hand-made path whose score is known in closed form: φ = 0
	// (u_φ = 0), σ = τ = 1, x = (0, 1, 2), y = (1, NaN).
	x := []float64{0, 1, 2}
	y := ssm.Sequence{Obs: 1, Y: []float64{1, math.NaN()}}
	c, err := ScorePath(toyLGSSM{}, []float64{0, 0, 0}, x, y)
	if err != nil {
		t.Fatal(err)
	}
	// φ: Σ r_t x_{t-1} = 1·0 + 2·1 = 2 (initial term 0 as φ = 0).
	// σ: initial −1 + x_0² = −1; transitions (−1+1) + (−1+4) = 3; total 2.
	// τ: one observed residual 0: −1.
	want := []float64{2, 2, -1}
	for i := range want {
		if math.Abs(c.Analytic[i]-want[i]) > 1e-12 || math.Abs(c.FD[i]-want[i]) > 1e-8 {
			t.Errorf("u[%d]: analytic %v, finite difference %v, want %v", i, c.Analytic[i], c.FD[i], want[i])
		}
	}
}

func TestTransform(t *testing.T) {
	u := []float64{0.4, -0.2, 1.1}
	if err := CheckTransform(toyLGSSM{}, u); err != nil {
		t.Error(err)
	}
	rt, ld, err := TransformErr(toyLGSSM{}, u)
	t.Logf("round trip %.2g, log-det %.2g", rt, ld)
	if err != nil {
		t.Fatal(err)
	}
	err = CheckTransform(toyLGSSM{jacBug: true}, u)
	if !errors.Is(err, ErrMismatch) {
		t.Errorf("log-Jacobian off by 0.1 not reported: %v", err)
	}
}

func TestPrior(t *testing.T) {
	u := []float64{0.4, -0.2, 1.1}
	if err := CheckPrior(toyLGSSM{}, u); err != nil {
		t.Error(err)
	}
	err := CheckPrior(toyLGSSM{priorBug: true}, u)
	if !errors.Is(err, ErrMismatch) {
		t.Errorf("prior gradient with the wrong sign not reported: %v", err)
	}
}

// recTB records failures instead of failing the test.
type recTB struct {
	testing.TB
	failed int
}

func (r *recTB) Helper()                           {}
func (r *recTB) Error(args ...any)                 { r.failed++ }
func (r *recTB) Errorf(format string, args ...any) { r.failed++ }

func TestModelHelper(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	u := []float64{0.4, -0.2, 0.1}
	good := &recTB{TB: t}
	Model(good, toyLGSSM{}, u, 30, rng)
	if good.failed != 0 {
		t.Errorf("correct model reported %d failures", good.failed)
	}
	bad := &recTB{TB: t}
	Model(bad, toyLGSSM{scoreSignBug: true, jacBug: true, priorBug: true}, u, 30, rng)
	if bad.failed != 3 {
		t.Errorf("model with three bugs reported %d failures, want 3", bad.failed)
	}
}
