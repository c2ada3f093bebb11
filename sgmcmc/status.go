package sgmcmc

import "fmt"

// Status says why a chain, or a run, stopped.
//
// When chains end differently, Result.Status is the one listed last here
// among them (Failure dominates NonFinite, which dominates Canceled, ...).
type Status int

const (
	// Running: the chain has not stopped (only seen in checkpoints and in
	// chains that never started because the run was aborted).
	Running Status = iota
	// IterationLimit: Settings.Iterations steps were done.
	IterationLimit
	// RuntimeLimit: the chain used its Settings.Runtime budget.
	RuntimeLimit
	// Canceled: the context was canceled, or a Recorder failed.
	Canceled
	// NonFinite: a gradient estimate or parameter was NaN or infinite and
	// Settings.NonFinite is Stop.
	NonFinite
	// Failure: the estimator, the schedule or a recorder returned an error.
	Failure
)

var statusNames = [...]string{"Running", "IterationLimit", "RuntimeLimit", "Canceled", "NonFinite", "Failure"}

func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Early reports whether the chain stopped before its iteration or runtime
// limit.
func (s Status) Early() bool { return s >= Canceled || s == Running }

// terminal reports whether a chain with this status never runs again, even on
// resume: errors are final, limits are re-evaluated against the new Settings.
func (s Status) terminal() bool { return s == NonFinite || s == Failure }

// OnNonFinite selects what happens when a gradient estimate or a parameter is
// NaN or infinite.
type OnNonFinite int

const (
	// Stop ends the chain with a *NonFiniteError; every draw recorded before
	// is kept (the zero value).
	Stop OnNonFinite = iota
	// Skip rejects the iteration and continues: a non-finite gradient
	// leaves u unchanged and records no draw; a step that produced a
	// non-finite u is undone and the method's state is reset with Init
	// (momentum or preconditioner may be what overflowed). Each event is
	// counted in ChainResult.Skipped and still counts as an iteration.
	Skip
)
