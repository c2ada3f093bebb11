package ssm

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidParam is wrapped by every *ParamError.
	ErrInvalidParam = errors.New("ssm: invalid parameter")
	// ErrData marks malformed observations.
	ErrData = errors.New("ssm: invalid data")
	// ErrWindow marks a window that does not fit its sequence.
	ErrWindow = errors.New("ssm: invalid window")
)

// ParamError names a parameter outside its domain.
type ParamError struct {
	Name   string  // natural parameter name, e.g. "phi"
	Value  float64 // offending value
	Reason string  // e.g. "must satisfy |phi| < 1"
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("ssm: invalid parameter %s = %v: %s", e.Name, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidParam) true.
func (e *ParamError) Unwrap() error { return ErrInvalidParam }

// OutsideSupport reports that the parameter lies outside the model's
// support, where the posterior density is zero: a sampler that moved
// there rejects the move (sgmcmc.Sampler does) instead of failing.
func (e *ParamError) OutsideSupport() bool { return true }
