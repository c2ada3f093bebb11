package gradient

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Tile computes the likelihood part of the full-data score by a
// deterministic tiling: every sequence is cut into consecutive blocks of S
// observations, the first block ending at offset mod S (so different
// offsets tile differently), and each block is filtered with its buffers
// of B observations on each side (truncated at the ends), keeping the
// statistic of the block only. Every time point is kept exactly once, so
// with an exact scorer the result is ĝ(S, B) summed over a partition, and
// there is no subsampling noise; it costs about (1 + 2B/S)·T filter steps.
//
// Tile stores the sum in grad and returns the sum of the windows'
// log-likelihood estimates. When each is non-nil it is called after every
// window with the sequence index, the window and the window's gradient (a
// view valid during the call), e.g. to accumulate the empirical Fisher
// information Σ g_w g_wᵀ. With Sampling Full each sequence is one window.
// rng may be nil for a deterministic estimator (Exact or Grid).
func (e *Estimator) Tile(ctx context.Context, grad, u []float64, offset int, rng *rand.Rand,
	each func(seq int, w ssm.Window, g []float64)) (float64, error) {
	return e.TilePart(ctx, grad, u, offset, 0, 1, rng, each)
}

// TilePart is Tile restricted to every parts-th block, starting with block
// part (blocks numbered over all sequences in order): the sums of
// TilePart over part = 0..parts−1, each on its own estimator and
// goroutine, are Tile's, for deterministic estimators exactly.
func (e *Estimator) TilePart(ctx context.Context, grad, u []float64, offset, part, parts int, rng *rand.Rand,
	each func(seq int, w ssm.Window, g []float64)) (float64, error) {
	if parts < 1 || part < 0 || part >= parts {
		return 0, fmt.Errorf("%w: TilePart: part %d of %d", ErrSettings, part, parts)
	}
	if len(grad) != e.dims.Param || len(u) != e.dims.Param {
		return 0, fmt.Errorf("%w: Tile: len(grad) = %d, len(u) = %d, want %d", ErrSettings, len(grad), len(u), e.dims.Param)
	}
	if !e.Deterministic() && rng == nil {
		return 0, fmt.Errorf("%w: Tile needs a random generator for the particle filter", ErrSettings)
	}
	clear(grad)
	g := make([]float64, e.dims.Param)
	ll := 0.0
	block := 0
	for j, seq := range e.data.Sequences {
		T := seq.Len()
		S, B := e.set.S, e.set.B
		if e.set.Sampling == Full || S >= T {
			S, B = T, 0
		}
		first := offset % S
		if first < 0 {
			first += S
		}
		if first == 0 {
			first = S
		}
		for ks := 0; ks < T; {
			ke := min(T, ks+first)
			if ks > 0 {
				ke = min(T, ks+S)
			}
			w := ssm.Window{Start: max(0, ks-B), End: min(T, ke+B), KeepStart: ks, KeepEnd: ke}
			block++
			if (block-1)%parts != part {
				ks = ke
				continue
			}
			l, err := e.Fixed(ctx, g, u, j, w, rng)
			if err != nil {
				return 0, fmt.Errorf("gradient: tile of sequence %d, window [%d,%d): %w", j, w.Start, w.End, err)
			}
			ll += l
			for i, v := range g {
				grad[i] += v
			}
			if each != nil {
				each(j, w, g)
			}
			ks = ke
		}
	}
	return ll, nil
}
