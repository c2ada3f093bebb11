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

// Observed reports whether some component of rows [start, end) is not NaN
// (missing). It scans the rows, so it costs O((end − start)·Obs).
func (s Sequence) Observed(start, end int) bool {
	for _, v := range s.Y[start*s.Obs : end*s.Obs] {
		if v == v {
			return true
		}
	}
	return false
}

// Validate checks that the sequence is non-empty, rectangular and has the
// given observation dimension (when obs > 0). It does not scan the values,
// so that it costs O(1) even on a memory-mapped sequence of 10^9 steps; use
// CheckFinite for that.
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

// CheckFinite scans every value and reports the first ±Inf, naming its
// time step and component. NaN (missing) is allowed. ReadCSV already
// rejects ±Inf; data from memory, ReadBinary or OpenBinary is not checked
// on loading, so call this once after loading such data.
func (s Sequence) CheckFinite() error {
	for i, v := range s.Y {
		if math.IsInf(v, 0) {
			t, j := i, 0
			if s.Obs > 0 {
				t, j = i/s.Obs, i%s.Obs
			}
			return fmt.Errorf("%w: observation %d, component %d is %v", ErrData, t, j, v)
		}
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

// Validate checks that the dataset holds at least one sequence, that IDs is
// nil or has one entry per sequence, and validates every sequence with
// Sequence.Validate(obs); when obs <= 0 the sequences must all share the
// first one's dimension. Like Sequence.Validate it does not scan values.
func (d Dataset) Validate(obs int) error {
	if len(d.Sequences) == 0 {
		return fmt.Errorf("%w: dataset holds no sequences", ErrData)
	}
	if obs <= 0 {
		obs = d.Sequences[0].Obs
	}
	if d.IDs != nil && len(d.IDs) != len(d.Sequences) {
		return fmt.Errorf("%w: %d ids for %d sequences", ErrData, len(d.IDs), len(d.Sequences))
	}
	for i, s := range d.Sequences {
		if err := s.Validate(obs); err != nil {
			if d.IDs != nil {
				return fmt.Errorf("sequence %d (id %q): %w", i, d.IDs[i], err)
			}
			return fmt.Errorf("sequence %d: %w", i, err)
		}
	}
	return nil
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
