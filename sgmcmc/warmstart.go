package sgmcmc

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// WarmStart is a Method that runs Optimizer for the first Steps iterations
// and Sampler after them: a search for the bulk of the posterior (MAP
// initialisation with Adam or SGD on the same stochastic gradients) and
// the sampling in one Run per chain, so that burn-in, thinning, recorders
// and checkpoints see one iteration count. Pair it with a Phased schedule
// whose Steps is the same, so the optimiser gets its learning rate and the
// sampler its step size. Discard at least Steps iterations as burn-in:
// optimiser iterates are not posterior draws.
//
// Init resets both methods and the iteration counter. A WarmStart is
// checkpointed (MarshalBinary) only if both methods are.
type WarmStart struct {
	Steps     int    // iterations of Optimizer; ≥ 0
	Optimizer Method // e.g. &Adam{}
	Sampler   Method // e.g. &PSGLD{}

	k int
}

// Init implements Method.
func (w *WarmStart) Init(dim int) {
	if w.Steps < 0 || w.Optimizer == nil || w.Sampler == nil {
		panic(fmt.Sprintf("sgmcmc: WarmStart needs Steps ≥ 0 (have %d) and non-nil Optimizer and Sampler", w.Steps))
	}
	w.k = 0
	w.Optimizer.Init(dim)
	w.Sampler.Init(dim)
}

// Step implements Method: the optimiser's step while fewer than Steps
// steps were taken, the sampler's after.
func (w *WarmStart) Step(u, grad []float64, h float64, rng *rand.Rand) {
	if w.k < w.Steps {
		w.Optimizer.Step(u, grad, h, rng)
	} else {
		w.Sampler.Step(u, grad, h, rng)
	}
	w.k++
}

// MarshalBinary encodes the step count and both methods' states.
func (w *WarmStart) MarshalBinary() ([]byte, error) {
	b := binary.LittleEndian.AppendUint64(nil, uint64(w.k))
	for _, m := range []Method{w.Optimizer, w.Sampler} {
		mm, ok := m.(encoding.BinaryMarshaler)
		if !ok {
			return nil, fmt.Errorf("%w: WarmStart's %T does not implement encoding.BinaryMarshaler", ErrCheckpoint, m)
		}
		s, err := mm.MarshalBinary()
		if err != nil {
			return nil, err
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// UnmarshalBinary restores a state written by MarshalBinary (after Init).
func (w *WarmStart) UnmarshalBinary(b []byte) error {
	bad := fmt.Errorf("%w: WarmStart: truncated or malformed state", ErrCheckpoint)
	if len(b) < 8 {
		return bad
	}
	k := binary.LittleEndian.Uint64(b)
	b = b[8:]
	for _, m := range []Method{w.Optimizer, w.Sampler} {
		if len(b) < 8 {
			return bad
		}
		n := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if n > uint64(len(b)) {
			return bad
		}
		mu, ok := m.(encoding.BinaryUnmarshaler)
		if !ok {
			return fmt.Errorf("%w: WarmStart's %T does not implement encoding.BinaryUnmarshaler", ErrCheckpoint, m)
		}
		if err := mu.UnmarshalBinary(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	if len(b) != 0 || k > 1<<62 {
		return bad
	}
	w.k = int(k)
	return nil
}

// Phased is the schedule for a WarmStart: First for iterations k < Steps
// (the optimiser's learning rate), then Then at k − Steps, so a decaying
// sampler schedule starts from its own beginning.
type Phased struct {
	Steps       int
	First, Then Schedule
}

// At implements Schedule.
func (p Phased) At(k int) float64 {
	if k < p.Steps {
		return p.First.At(k)
	}
	return p.Then.At(k - p.Steps)
}
