package sgmcmc

import (
	"errors"
	"fmt"
)

var (
	// ErrNonFinite is wrapped by every *NonFiniteError.
	ErrNonFinite = errors.New("sgmcmc: non-finite value")
	// ErrSettings marks invalid Settings or arguments of Run.
	ErrSettings = errors.New("sgmcmc: invalid settings")
	// ErrStepSize marks a schedule that returned a step size that is not
	// finite and positive.
	ErrStepSize = errors.New("sgmcmc: invalid step size")
	// ErrCheckpoint marks a checkpoint that cannot be written, read or
	// matched with the run that tries to resume from it.
	ErrCheckpoint = errors.New("sgmcmc: checkpoint")
	// ErrPanic marks a chain stopped by a panic in its estimator or
	// method, recovered by Run and reported as a *ChainError.
	ErrPanic = errors.New("sgmcmc: recovered panic")
	// ErrFinished is returned by Fit resuming from a checkpoint whose
	// chains had already finished without a kept draw: there is nothing
	// left to sample and nothing to summarise. (A finished run with draws
	// returns its Posterior again, read from Checkpoint+".draws".)
	ErrFinished = errors.New("sgmcmc: the checkpointed run had already finished")
	// ErrNoMode is wrapped by the error of a Fit whose search for the
	// posterior mode runs away to ever wider state ranges: the log
	// posterior rises without bound, an improper posterior (two widening
	// rounds in a row, each widening the grid's range by 1.5 times at
	// least, whose last Newton step is 10 posterior sds or more).
	ErrNoMode = errors.New("sgmcmc: no posterior mode")
)

// NonFiniteError reports a NaN or infinite gradient estimate or parameter.
type NonFiniteError struct {
	Chain int // chain index
	Iter  int // iteration k whose gradient ĝ(u_k), or whose step to u_{k+1}, was non-finite
	// Param is true when the step produced a non-finite parameter u_{k+1}
	// from a finite gradient, false when the gradient ĝ(u_k) was non-finite.
	Param bool
	// Outside is true when the estimator refused u_k as outside the
	// model's support (an error with OutsideSupport() true, such as
	// ssm.ParamError): the Sampler moved back to u_{k−1}, as a
	// Metropolis–Hastings test would reject the move. Index is then −1.
	Outside bool
	Index   int // first offending component
}

func (e *NonFiniteError) Error() string {
	what := "gradient estimate at u_k"
	switch {
	case e.Outside:
		return fmt.Sprintf("sgmcmc: chain %d, iteration %d: u_k is outside the model's support; back to u_{k−1}", e.Chain, e.Iter)
	case e.Param:
		what = "parameter u_{k+1} after the step"
	}
	return fmt.Sprintf("sgmcmc: chain %d, iteration %d: non-finite %s (component %d)", e.Chain, e.Iter, what, e.Index)
}

// Unwrap makes errors.Is(err, ErrNonFinite) true.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }

// ChainError wraps an error returned by an Estimator or a Schedule, naming the
// chain and iteration where it happened.
type ChainError struct {
	Chain int
	Iter  int
	Err   error
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("sgmcmc: chain %d, iteration %d: %v", e.Chain, e.Iter, e.Err)
}

func (e *ChainError) Unwrap() error { return e.Err }
