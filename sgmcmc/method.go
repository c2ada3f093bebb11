package sgmcmc

import (
	"context"
	"encoding"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

// Estimator estimates the gradient of the log-posterior.
//
// Grad stores an estimate of ∇_u log π(u | y) (log-likelihood plus log-prior,
// on the unconstrained scale) in grad, which has len(u), and returns a noisy
// estimate of log π(u | y) up to a constant, or NaN when it does not know one.
// All randomness must come from rng. An Estimator is used by one goroutine at a
// time; Run asks for one per chain.
//
// An Estimator that keeps state between calls (other than scratch space) should
// implement encoding.BinaryMarshaler and encoding.BinaryUnmarshaler so that
// checkpoints capture it.
type Estimator interface {
	Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (logPost float64, err error)
}

// EstimatorFunc adapts a function to the Estimator interface.
type EstimatorFunc func(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error)

// Grad calls f.
func (f EstimatorFunc) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	return f(ctx, grad, u, rng)
}

// Method is an SG-MCMC update rule (or an optimiser) holding per-chain state:
// use one value per chain.
//
// Init prepares the state for dimension dim and resets it. Step moves u in
// place, given the gradient estimate grad at u and the step size h > 0; it must
// not keep grad or u and must draw all randomness from rng.
//
// Checkpointing requires Method to also implement encoding.BinaryMarshaler and
// encoding.BinaryUnmarshaler (every Method of this package does); the state is
// restored after Init.
type Method interface {
	Init(dim int)
	Step(u, grad []float64, h float64, rng *rand.Rand)
}

// SGLD is stochastic gradient Langevin dynamics in the paper's convention,
//
//	u ← u + h ĝ + √(2h) ξ,  ξ ~ N(0, I),
//
// which is Welling and Teh's update with their ε = 2h. It has no state.
type SGLD struct{}

// Init does nothing: SGLD has no state.
func (*SGLD) Init(int) {}

// Step does one SGLD update.
func (*SGLD) Step(u, grad []float64, h float64, rng *rand.Rand) {
	checkLen(u, grad)
	s := math.Sqrt(2 * h)
	for i, g := range grad {
		u[i] += h*g + s*rng.NormFloat64()
	}
}

// MarshalBinary returns no bytes: SGLD has no state.
func (*SGLD) MarshalBinary() ([]byte, error) { return nil, nil }

// UnmarshalBinary accepts only the empty state.
func (*SGLD) UnmarshalBinary(b []byte) error { return expectFloats("SGLD", b, 0) }

// PSGLD is preconditioned SGLD with an RMSprop diagonal (Li et al. 2016):
//
//	V ← αV + (1−α) ĝ⊙ĝ,  G = 1/(λ + √V),
//	u ← u + h G⊙ĝ + √(2h G)⊙ξ.
//
// The term Γ_i = ∂G_ii/∂u_i of the exact preconditioned dynamics is dropped,
// as Li et al. do in all their experiments (their Theorem 2 bounds the extra
// bias). This is accurate when V averages the squared gradients over many
// mixing times of the chain, i.e. 1/(1−α) ≫ mixing time, or when ĝ⊙ĝ is
// dominated by gradient noise rather than by the position. Otherwise G tracks
// the position and, like any position-dependent diffusion without its
// divergence term, the chain targets approximately π/G rather than π: on a
// Gaussian with exact gradients and α = 0.99 the variances came out 20–45%
// too large in this package's tests, and with α = 0.9999 within 3%.
//
// V starts at ĝ⊙ĝ of the first step rather than Li et al.'s 0, whose
// first steps would have G = 1/(√(1−α)|ĝ|), ten times too large for α = 0.99.
type PSGLD struct {
	Alpha  float64 // decay of the squared-gradient average, in (0, 1); 0 means 0.99
	Lambda float64 // diagonal bias λ > 0 keeping G bounded; 0 means 1e-5

	v    []float64
	init bool
}

func (p *PSGLD) params() (alpha, lambda float64) {
	alpha, lambda = p.Alpha, p.Lambda
	if alpha == 0 {
		alpha = 0.99
	}
	if lambda == 0 {
		lambda = 1e-5
	}
	if !(alpha > 0 && alpha < 1) || !(lambda > 0) || math.IsInf(lambda, 1) {
		panic(fmt.Sprintf("sgmcmc: PSGLD needs 0 < Alpha < 1 and Lambda > 0, have %v and %v", p.Alpha, p.Lambda))
	}
	return alpha, lambda
}

// Init resets the squared-gradient average.
func (p *PSGLD) Init(dim int) {
	p.params()
	p.v = resize(p.v, dim)
	p.init = false
}

// Step does one preconditioned SGLD update.
func (p *PSGLD) Step(u, grad []float64, h float64, rng *rand.Rand) {
	checkLen(u, grad)
	if len(p.v) != len(u) {
		panic("sgmcmc: PSGLD used before Init or with another dimension")
	}
	alpha, lambda := p.params()
	for i, g := range grad {
		if p.init {
			p.v[i] = alpha*p.v[i] + (1-alpha)*g*g
		} else {
			p.v[i] = g * g
		}
		gi := 1 / (lambda + math.Sqrt(p.v[i]))
		u[i] += h*gi*g + math.Sqrt(2*h*gi)*rng.NormFloat64()
	}
	p.init = true
}

// MarshalBinary encodes the squared-gradient average.
func (p *PSGLD) MarshalBinary() ([]byte, error) {
	b := fmath.AppendFloats(nil, boolFloat(p.init))
	return fmath.AppendFloats(b, p.v...), nil
}

// UnmarshalBinary restores a state written by MarshalBinary after Init.
func (p *PSGLD) UnmarshalBinary(b []byte) error {
	if err := expectFloats("PSGLD", b, 1+len(p.v)); err != nil {
		return err
	}
	p.init = fmath.ReadFloat(b, 0) != 0
	fmath.ReadFloats(p.v, b[8:])
	return nil
}

// SGHMC is stochastic gradient Hamiltonian Monte Carlo (Chen et al. 2014) with
// identity mass matrix, friction C and the gradient-noise estimate B̂ = 0:
//
//	r ← (1 − hC) r + h ĝ + √(2Ch) ξ,  u ← u + h r.
//
// The momentum r starts at 0 and is never resampled. With their η = h² and
// α = hC this is their practical update v ← (1−α)v + ηĝ + N(0, 2αη), v = hr.
// Stability needs hC < 1 and, for a Gaussian of variance s², h < s roughly.
type SGHMC struct {
	Friction float64 // C > 0; 0 means 1

	r []float64
}

func (m *SGHMC) friction() float64 {
	c := m.Friction
	if c == 0 {
		c = 1
	}
	if !(c > 0) || math.IsInf(c, 1) {
		panic(fmt.Sprintf("sgmcmc: SGHMC needs Friction > 0, have %v", m.Friction))
	}
	return c
}

// Init sets the momentum to 0.
func (m *SGHMC) Init(dim int) {
	m.friction()
	m.r = resize(m.r, dim)
}

// Step does one SGHMC update.
func (m *SGHMC) Step(u, grad []float64, h float64, rng *rand.Rand) {
	checkLen(u, grad)
	if len(m.r) != len(u) {
		panic("sgmcmc: SGHMC used before Init or with another dimension")
	}
	c := m.friction()
	decay, s := 1-h*c, math.Sqrt(2*c*h)
	for i, g := range grad {
		m.r[i] = decay*m.r[i] + h*g + s*rng.NormFloat64()
		u[i] += h * m.r[i]
	}
}

// Momentum returns the current momentum r (a view; do not modify).
func (m *SGHMC) Momentum() []float64 { return m.r }

// MarshalBinary encodes the momentum.
func (m *SGHMC) MarshalBinary() ([]byte, error) { return fmath.AppendFloats(nil, m.r...), nil }

// UnmarshalBinary restores a momentum written by MarshalBinary after Init.
func (m *SGHMC) UnmarshalBinary(b []byte) error {
	if err := expectFloats("SGHMC", b, len(m.r)); err != nil {
		return err
	}
	fmath.ReadFloats(m.r, b)
	return nil
}

// SGD is plain gradient ascent on the log-posterior, u ← u + h ĝ, for
// maximum a posteriori initialisation. It draws no random numbers.
type SGD struct{}

// Init does nothing: SGD has no state.
func (*SGD) Init(int) {}

// Step does one ascent step.
func (*SGD) Step(u, grad []float64, h float64, _ *rand.Rand) {
	checkLen(u, grad)
	for i, g := range grad {
		u[i] += h * g
	}
}

// MarshalBinary returns no bytes: SGD has no state.
func (*SGD) MarshalBinary() ([]byte, error) { return nil, nil }

// UnmarshalBinary accepts only the empty state.
func (*SGD) UnmarshalBinary(b []byte) error { return expectFloats("SGD", b, 0) }

// Adam is the Adam optimiser (Kingma and Ba 2015) ascending the log-posterior
// with learning rate h:
//
//	m ← β₁m + (1−β₁)ĝ, v ← β₂v + (1−β₂)ĝ⊙ĝ,
//	u ← u + h m̂ / (√v̂ + ε), m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ).
//
// It draws no random numbers.
type Adam struct {
	Beta1 float64 // in [0, 1); 0 means 0.9
	Beta2 float64 // in (0, 1); 0 means 0.999
	Eps   float64 // > 0; 0 means 1e-8

	m, v []float64
	t    int
}

func (a *Adam) params() (b1, b2, eps float64) {
	b1, b2, eps = a.Beta1, a.Beta2, a.Eps
	if b1 == 0 {
		b1 = 0.9
	}
	if b2 == 0 {
		b2 = 0.999
	}
	if eps == 0 {
		eps = 1e-8
	}
	if !(b1 >= 0 && b1 < 1) || !(b2 > 0 && b2 < 1) || !(eps > 0) {
		panic(fmt.Sprintf("sgmcmc: Adam needs 0 ≤ Beta1 < 1, 0 < Beta2 < 1, Eps > 0, have %v, %v, %v", a.Beta1, a.Beta2, a.Eps))
	}
	return b1, b2, eps
}

// Init resets the moment estimates.
func (a *Adam) Init(dim int) {
	a.params()
	a.m = resize(a.m, dim)
	a.v = resize(a.v, dim)
	a.t = 0
}

// Step does one Adam step.
func (a *Adam) Step(u, grad []float64, h float64, _ *rand.Rand) {
	checkLen(u, grad)
	if len(a.m) != len(u) {
		panic("sgmcmc: Adam used before Init or with another dimension")
	}
	b1, b2, eps := a.params()
	a.t++
	c1 := 1 - math.Pow(b1, float64(a.t))
	c2 := 1 - math.Pow(b2, float64(a.t))
	for i, g := range grad {
		a.m[i] = b1*a.m[i] + (1-b1)*g
		a.v[i] = b2*a.v[i] + (1-b2)*g*g
		u[i] += h * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + eps)
	}
}

// MarshalBinary encodes the step count and both moment estimates.
func (a *Adam) MarshalBinary() ([]byte, error) {
	b := fmath.AppendFloats(nil, float64(a.t))
	b = fmath.AppendFloats(b, a.m...)
	return fmath.AppendFloats(b, a.v...), nil
}

// UnmarshalBinary restores a state written by MarshalBinary after Init.
func (a *Adam) UnmarshalBinary(b []byte) error {
	if err := expectFloats("Adam", b, 1+2*len(a.m)); err != nil {
		return err
	}
	a.t = int(fmath.ReadFloat(b, 0))
	fmath.ReadFloats(a.m, b[8:])
	fmath.ReadFloats(a.v, b[8+8*len(a.m):])
	return nil
}

var (
	_ encoding.BinaryMarshaler   = (*SGLD)(nil)
	_ encoding.BinaryUnmarshaler = (*PSGLD)(nil)
	_ encoding.BinaryUnmarshaler = (*SGHMC)(nil)
	_ encoding.BinaryUnmarshaler = (*SGD)(nil)
	_ encoding.BinaryUnmarshaler = (*Adam)(nil)
)

func checkLen(u, grad []float64) {
	if len(u) != len(grad) {
		panic("sgmcmc: slice lengths differ")
	}
}

func resize(x []float64, n int) []float64 {
	if cap(x) < n {
		return make([]float64, n)
	}
	x = x[:n]
	clear(x)
	return x
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// expectFloats checks that b holds exactly n floats.
func expectFloats(name string, b []byte, n int) error {
	if len(b) != 8*n {
		return fmt.Errorf("%w: %s state has %d bytes, want %d (was Init called with the same dimension?)", ErrCheckpoint, name, len(b), 8*n)
	}
	return nil
}
