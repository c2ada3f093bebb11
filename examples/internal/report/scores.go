package report

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// Thin returns at most m rows of the row-major n×dim block x, evenly spaced
// over the whole block and always including its last row (row
// ⌊(i+1)·n/m⌋ − 1 for i = 0..m−1): a thinned sample whose KSD costs m score
// evaluations. All rows are returned (as a copy) when n ≤ m.
func Thin(x []float64, dim, m int) []float64 {
	if dim <= 0 || len(x)%dim != 0 || m < 0 {
		panic(fmt.Sprintf("report: Thin of %d values with dim %d and m %d", len(x), dim, m))
	}
	n := len(x) / dim
	if n <= m {
		return append([]float64(nil), x...)
	}
	out := make([]float64, 0, m*dim)
	for i := range m {
		r := (i+1)*n/m - 1
		out = append(out, x[r*dim:(r+1)*dim]...)
	}
	return out
}

// Scores evaluates the score ∇_u log π(u | y) at every row u of the
// row-major n×dim block x, with the estimators newEst returns (one per
// worker goroutine, since estimators are not safe for concurrent use), and
// returns the n×dim block of scores, ready for ksd.Compute(x, scores, dim,
// nil). Row i draws from rand.New(rand.NewPCG(seed, stream+i)), so the
// result does not depend on workers (<= 0 means 1); choose stream so that
// these generators differ from the sampler's. The first error stops the work and
// is returned with the row it happened at.
func Scores(ctx context.Context, x []float64, dim int, newEst func() (sgmcmc.Estimator, error), workers int, seed, stream uint64) ([]float64, error) {
	if dim <= 0 || len(x)%dim != 0 {
		panic(fmt.Sprintf("report: Scores of %d values with dim %d", len(x), dim))
	}
	n := len(x) / dim
	workers = max(1, min(workers, n))
	ests := make([]sgmcmc.Estimator, workers)
	for w := range ests {
		e, err := newEst()
		if err != nil {
			return nil, err
		}
		ests[w] = e
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	scores := make([]float64, len(x))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				if ctx.Err() != nil {
					errs[i] = ctx.Err()
					return
				}
				rng := rand.New(rand.NewPCG(seed, stream+uint64(i)))
				if _, err := ests[w].Grad(ctx, scores[i*dim:(i+1)*dim], x[i*dim:(i+1)*dim], rng); err != nil {
					errs[i] = fmt.Errorf("report: score at draw %d: %w", i, err)
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	// Report the first real error rather than the cancellations it caused.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return scores, nil
}
