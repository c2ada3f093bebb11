package gradient

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Sampling selects how the subsequence S is drawn from a sequence of
// length T.
type Sampling int

const (
	// Uniform draws the start s uniformly from the T−S+1 possible
	// positions. Pr(t ∈ S) = #{s : s ≤ t < s+S}/(T−S+1) is computed per t,
	// so times near the ends, which fewer windows cover, get larger weights
	// and the estimator stays unbiased.
	Uniform Sampling = iota
	// Strict partitions 0..T−1 into ⌈T/S⌉ consecutive blocks (the last may
	// be shorter) and draws one block uniformly: Pr(t ∈ S) = 1/⌈T/S⌉.
	Strict
	// Full uses the whole sequence (S = T, no buffer): the full-data
	// gradient, exact up to particle error.
	Full
)

func (s Sampling) String() string {
	switch s {
	case Uniform:
		return "uniform"
	case Strict:
		return "strict"
	case Full:
		return "full"
	}
	return fmt.Sprintf("Sampling(%d)", int(s))
}

var (
	// ErrSubsequence reports an impossible subsequence or buffer length.
	ErrSubsequence = errors.New("gradient: invalid subsequence settings")
)

// Subsequencer draws buffered subsequences: S* = S padded by B steps on each
// side, truncated at the sequence ends (paper section 2.2). A sequence
// shorter than S is one subsequence, the whole sequence, kept with weight
// 1: in a data set of sequences of different lengths the long ones keep
// their S and B (cutting S and B to the shortest sequence took the long
// ones' buffers away).
type Subsequencer struct {
	S, B     int // subsequence and buffer lengths (S ignored for Full)
	Sampling Sampling
}

// Check validates the settings against a sequence of length T.
func (q Subsequencer) Check(T int) error {
	switch {
	case T < 1:
		return fmt.Errorf("%w: sequence of length %d", ErrSubsequence, T)
	case q.Sampling == Full:
		return nil
	case q.Sampling != Uniform && q.Sampling != Strict:
		return fmt.Errorf("%w: unknown sampling %v", ErrSubsequence, q.Sampling)
	case q.S < 1:
		return fmt.Errorf("%w: subsequence length S = %d must be at least 1", ErrSubsequence, q.S)
	case q.B < 0:
		return fmt.Errorf("%w: buffer length B = %d is negative", ErrSubsequence, q.B)
	}
	return nil
}

// length returns the subsequence length in a sequence of length T:
// S, or T when the sequence is shorter.
func (q Subsequencer) length(T int) int { return min(q.S, T) }

// positions returns how many subsequences can be drawn.
func (q Subsequencer) positions(T int) int {
	s := q.length(T)
	switch q.Sampling {
	case Full:
		return 1
	case Strict:
		return (T + s - 1) / s
	}
	return T - s + 1
}

// window fills w for the position-th subsequence, reusing w.Weights.
func (q Subsequencer) window(w *ssm.Window, T, position int) {
	var start, end int
	s := q.length(T)
	switch q.Sampling {
	case Full:
		*w = ssm.Full(T)
		return
	case Strict:
		start = position * s
		end = min(start+s, T)
	default:
		start, end = position, position+s
	}
	weights := w.Weights
	if cap(weights) < end-start {
		weights = make([]float64, q.S)
	}
	weights = weights[:end-start]
	n := q.positions(T)
	for t := start; t < end; t++ {
		weights[t-start] = float64(n) / float64(q.cover(t, T))
	}
	*w = ssm.Window{
		Start: max(0, start-q.B), End: min(T, end+q.B),
		KeepStart: start, KeepEnd: end,
		Weights: weights,
	}
}

// cover returns the number of positions whose subsequence contains t.
func (q Subsequencer) cover(t, T int) int {
	if q.Sampling != Uniform {
		return 1
	}
	s := q.length(T)
	return min(t, T-s) - max(0, t-s+1) + 1
}

// Draw samples a buffered subsequence of a sequence of length T into w.
// The weights are Pr(t ∈ S)^-1; w.Weights is reused across calls.
func (q Subsequencer) Draw(w *ssm.Window, T int, rng *rand.Rand) {
	q.window(w, T, rng.IntN(q.positions(T)))
}

// Enumerate calls fn for every possible buffered subsequence with its
// probability. The window passed to fn is reused between calls.
func (q Subsequencer) Enumerate(T int, fn func(w ssm.Window, prob float64)) {
	n := q.positions(T)
	var w ssm.Window
	for p := 0; p < n; p++ {
		q.window(&w, T, p)
		fn(w, 1/float64(n))
	}
}
