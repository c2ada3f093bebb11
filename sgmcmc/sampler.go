package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

// Sampler runs one chain step by step, for callers that want their own loop
// (Run is built on it). It is not safe for concurrent use.
//
// Iteration k evaluates ĝ(u_k) with the estimator, then moves u_k to u_{k+1}
// with the method and the step size h_k of the schedule.
type Sampler struct {
	est   Estimator
	m     Method
	sch   Schedule
	rng   *rand.Rand
	chain int // reported in errors

	u, g, prev []float64
	k          int
	logPost, h float64
	noGrad     bool // the last evaluation skipped the gradient (gradFree)
	moved      bool // prev holds u_{k−1}: the last iteration moved
}

// outsideSupport is implemented by errors that mark a parameter outside
// the model's support (ssm.ParamError), where the posterior is zero.
type outsideSupport interface {
	OutsideSupport() bool
}

// gradFree is an optional capability of a Method that is also its chain's
// Estimator (the Metropolis–Hastings chains of FullGradient, mh.Kernel): before
// each iteration the Sampler asks whether the coming step needs the
// gradient at u; when it does not (an independence proposal), the method
// returns the log posterior at u itself, which costs about half a
// gradient with an exact scorer or nothing when it is cached, and the
// iteration has no gradient (Grad and Draw.Grad are nil).
type gradFree interface {
	SkipGrad(ctx context.Context, u []float64, rng *rand.Rand) (lp float64, skip bool, err error)
}

// NewSampler returns a Sampler starting at a copy of u0 (u0 is not modified).
// It calls m.Init(len(u0)). All randomness comes from rng.
func NewSampler(est Estimator, m Method, u0 []float64, sch Schedule, rng *rand.Rand) *Sampler {
	if est == nil || m == nil || sch == nil || rng == nil {
		panic("sgmcmc: NewSampler needs a non-nil estimator, method, schedule and rng")
	}
	if len(u0) == 0 {
		panic("sgmcmc: NewSampler needs len(u0) > 0")
	}
	n := len(u0)
	buf := make([]float64, 3*n)
	s := &Sampler{est: est, m: m, sch: sch, rng: rng,
		u: buf[:n:n], g: buf[n : 2*n : 2*n], prev: buf[2*n:]}
	copy(s.u, u0)
	m.Init(n)
	return s
}

// Step does one iteration: it evaluates ĝ(u_k) and moves to u_{k+1}.
//
// It returns ctx.Err() without doing anything when ctx is done, a *ChainError
// when the schedule or the estimator fails, and a *NonFiniteError when the
// gradient or the new parameter is not finite. After a non-finite value the
// iteration is consumed (Iter advances) but U is left at u_k, and after a
// non-finite parameter the method is reset with Init. An estimator error
// that marks u_k outside the model's support (ssm.ParamError) returns a
// *NonFiniteError with Outside set and moves U back to u_{k−1}: the move
// is rejected.
func (s *Sampler) Step(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.evaluate(ctx); err != nil {
		if _, ok := err.(*NonFiniteError); ok {
			s.k++
		}
		return err
	}
	err := s.move()
	s.k++
	return err
}

// evaluate computes h_k and ĝ(u_k). A non-finite gradient returns a
// *NonFiniteError and leaves u unchanged.
func (s *Sampler) evaluate(ctx context.Context) error {
	s.h = s.sch.At(s.k)
	if !validStep(s.h) {
		return &ChainError{Chain: s.chain, Iter: s.k, Err: fmt.Errorf("%w: h = %v", ErrStepSize, s.h)}
	}
	s.noGrad = false
	if gf, ok := s.m.(gradFree); ok {
		lp, skip, err := gf.SkipGrad(ctx, s.u, s.rng)
		if err != nil {
			return &ChainError{Chain: s.chain, Iter: s.k, Err: err}
		}
		if skip {
			s.logPost, s.noGrad = lp, true
			return nil
		}
	}
	lp, err := s.est.Grad(ctx, s.g, s.u, s.rng)
	if err != nil {
		// A move out of the support is rejected: back to u_{k−1}, as a
		// Metropolis–Hastings test would, instead of failing the chain
		// (SGLD near a boundary of the parameter space).
		var o outsideSupport
		if errors.As(err, &o) && o.OutsideSupport() && s.moved {
			copy(s.u, s.prev)
			s.moved = false
			return &NonFiniteError{Chain: s.chain, Iter: s.k, Outside: true, Index: -1}
		}
		return &ChainError{Chain: s.chain, Iter: s.k, Err: err}
	}
	s.logPost = lp
	if i := fmath.FirstNonFinite(s.g); i >= 0 {
		return &NonFiniteError{Chain: s.chain, Iter: s.k, Index: i}
	}
	return nil
}

// move steps u_k to u_{k+1} with the gradient from evaluate. If u_{k+1} is
// not finite, u is restored to u_k, the method is reset and a
// *NonFiniteError is returned. It does not advance k.
func (s *Sampler) move() error {
	copy(s.prev, s.u)
	s.m.Step(s.u, s.Grad(), s.h, s.rng)
	s.moved = true
	if i := fmath.FirstNonFinite(s.u); i >= 0 {
		copy(s.u, s.prev)
		s.moved = false
		s.m.Init(len(s.u))
		return &NonFiniteError{Chain: s.chain, Iter: s.k, Param: true, Index: i}
	}
	return nil
}

// U returns the current parameter u_k (a view valid until the next Step; do
// not modify).
func (s *Sampler) U() []float64 { return s.u }

// Grad returns the gradient estimate of the last Step, evaluated at the
// parameter before that step (a view; do not modify), or nil when that
// step needed none (an independence proposal of FullGradient's chains).
func (s *Sampler) Grad() []float64 {
	if s.noGrad {
		return nil
	}
	return s.g
}

// LogPost returns the log-posterior estimate of the last Step (NaN if unknown).
func (s *Sampler) LogPost() float64 { return s.logPost }

// StepSize returns the step size used by the last Step.
func (s *Sampler) StepSize() float64 { return s.h }

// Iter returns the number of iterations done: U is u_Iter.
func (s *Sampler) Iter() int { return s.k }
