package ssm

import (
	"fmt"
	"math"
)

// Sequence is one observed series y_1..y_T stored row-major: observation
// t (0-based) is Y[t*Obs : (t+1)*Obs]. NaN marks a missing component.
// Y may be backed by a memory-mapped file (see OpenBinary).
type Sequence struct {
	Obs int
	Y   []float64
}

// Len returns the number of time steps T.
func (s Sequence) Len() int {
	if s.Obs <= 0 {
		return 0
	}
	return len(s.Y) / s.Obs
}

// At returns observation t (0-based) as a sub-slice of Y.
func (s Sequence) At(t int) []float64 { return s.Y[t*s.Obs : (t+1)*s.Obs : (t+1)*s.Obs] }

// Validate checks that the sequence is non-empty, rectangular, has the
// given observation dimension (when obs > 0) and holds no ±Inf.
func (s Sequence) Validate(obs int) error {
	if s.Obs <= 0 {
		return fmt.Errorf("%w: observation dimension %d must be positive", ErrData, s.Obs)
	}
	if obs > 0 && s.Obs != obs {
		return fmt.Errorf("%w: sequence has %d observation components, model wants %d", ErrData, s.Obs, obs)
	}
	if len(s.Y) == 0 {
		return fmt.Errorf("%w: sequence of length 0", ErrData)
	}
	if len(s.Y)%s.Obs != 0 {
		return fmt.Errorf("%w: %d values do not fill rows of %d", ErrData, len(s.Y), s.Obs)
	}
	return nil
}

// Dataset is a set of independent sequences sharing the parameters (for
// example weekly segments of one long series).
type Dataset struct {
	Sequences []Sequence
	IDs       []string // optional, one per sequence (from the CSV id column)
}

// TotalLen returns the number of time steps over all sequences.
func (d Dataset) TotalLen() int {
	n := 0
	for _, s := range d.Sequences {
		n += s.Len()
	}
	return n
}

// Window selects the span a filter runs over and the span whose pairwise
// statistic is kept (the buffered subsequence S* and the subsequence S).
// The state immediately before Start (x_Start in the paper's 1-based time)
// is drawn from ν_0; observations Start..End-1 (0-based) are filtered.
type Window struct {
	Start, End         int       // filtered observations [Start, End)
	KeepStart, KeepEnd int       // kept observations [KeepStart, KeepEnd) ⊆ [Start, End)
	Weights            []float64 // per kept t (length KeepEnd-KeepStart); nil means all 1
}

// Full returns the window over a whole sequence of length T, all kept.
func Full(T int) Window { return Window{Start: 0, End: T, KeepStart: 0, KeepEnd: T} }

// Weight returns the weight of kept time t.
func (w Window) Weight(t int) float64 {
	if w.Weights == nil {
		return 1
	}
	return w.Weights[t-w.KeepStart]
}

// KeepsInitial reports whether the initial-state term ∇ log ν_0(x_0) belongs
// to the statistic: only when the window starts at the start of the
// sequence, where ν_0 is the model's true prior, and time 0 is kept. It gets
// the weight of time 0.
func (w Window) KeepsInitial() bool { return w.Start == 0 && w.KeepStart == 0 && w.KeepEnd > 0 }

// Validate checks the window against a sequence of length T.
func (w Window) Validate(T int) error {
	switch {
	case w.Start < 0 || w.End > T || w.Start >= w.End:
		return fmt.Errorf("%w: filter span [%d,%d) not inside [0,%d)", ErrWindow, w.Start, w.End, T)
	case w.KeepStart < w.Start || w.KeepEnd > w.End || w.KeepStart > w.KeepEnd:
		return fmt.Errorf("%w: kept span [%d,%d) not inside filter span [%d,%d)", ErrWindow, w.KeepStart, w.KeepEnd, w.Start, w.End)
	case w.Weights != nil && len(w.Weights) != w.KeepEnd-w.KeepStart:
		return fmt.Errorf("%w: %d weights for %d kept steps", ErrWindow, len(w.Weights), w.KeepEnd-w.KeepStart)
	}
	for i, v := range w.Weights {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: weight of time %d is %v", ErrWindow, w.KeepStart+i, v)
		}
	}
	return nil
}
