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
