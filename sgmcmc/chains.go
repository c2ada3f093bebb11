package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/mh"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// mhCounts are the Metropolis–Hastings proposals and acceptances of
// the full-data chains so far, summed over the chains: local (Langevin
// or random-walk) and independence steps or surrogate transitions.
type mhCounts struct {
	acc, prop, indAcc, indProp int
	mh                         bool // the chains are mh.Kernels
}

// rates returns the acceptance rates of the local and of the
// independence steps: NaN for both unless the chains are mh.Kernels, the
// local rate NaN when there were no local steps.
func (c mhCounts) rates() (local, ind float64) {
	if !c.mh {
		return math.NaN(), math.NaN()
	}
	local = math.NaN()
	if c.prop > 0 {
		local = float64(c.acc) / float64(c.prop)
	}
	return local, float64(c.indAcc) / float64(max(c.indProp, 1))
}

// since returns the counts after before.
func (c mhCounts) since(before mhCounts) mhCounts {
	return mhCounts{c.acc - before.acc, c.prop - before.prop, c.indAcc - before.indAcc, c.indProp - before.indProp, c.mh}
}

// chainFactories returns Run's estimator and method factories for the
// chosen gradient with noise covariance w, a function that reports the
// Metropolis–Hastings counts over the chains so far (mhCounts), and one
// that gives the chains a new independence proposal, surrogate and
// independence share between runs (nil unless they are mh.Kernels). The
// chains persist across Runs with the same factories. Estimator errors
// are stored in *setupErr.
func (f *fit) chainFactories(w []float64, setupErr *error) (func(int) Estimator, func(int) Method, func() mhCounts, func(*tmix.Mixture, *surrogate.Surrogate, float64)) {
	pr := &f.prep
	var mu sync.Mutex
	record := func(err error) { // with mu held
		if *setupErr == nil {
			*setupErr = err
		}
	}
	fail := func(err error) {
		mu.Lock()
		record(err)
		mu.Unlock()
	}
	if pr.Gradient != FullGradient {
		return func(int) Estimator {
				est, err := f.estimator()
				if err != nil {
					fail(err)
				}
				return est
			}, func(c int) Method {
				m := &Precond{L: pr.Chol, W: w, MaxDrift: 1}
				mu.Lock()
				f.precs = append(f.precs, m) // clippedSteps reads their counts
				mu.Unlock()
				return m
			},
			func() mhCounts { return mhCounts{} }, nil
	}
	chains := make([]*mh.Kernel, f.s.Chains)
	get := func(c int) *mh.Kernel {
		mu.Lock()
		defer mu.Unlock()
		if chains[c] == nil {
			est, err := f.estimator()
			if err != nil {
				record(err)
				return nil
			}
			ind := mixtureOf(pr.proposal)
			if ind == nil {
				ind = tmix.New([]float64{1}, [][]float64{pr.Mode}, [][]float64{pr.Chol})
			}
			chains[c] = mh.New(est, pr.Chol, ind, f.dim)
			var sur *surrogate.Surrogate
			if pr.sur.Valid(f.dim) && pr.proposal != nil {
				sur = pr.sur
			}
			pInd := mh.DefaultIndependence
			if pr.Independence > 0 {
				pInd = pr.Independence
			}
			chains[c].Retarget(ind, sur, pInd)
			if f.prep.Walk {
				chains[c].SetWalk()
			}
		}
		return chains[c]
	}
	f.gridEdges = func() (edge, proposals int) {
		for _, m := range chains {
			if m != nil {
				_, prop, _, indProp, e := m.Counts()
				edge += e
				proposals += prop + indProp
			}
		}
		return edge, proposals
	}
	counts := func() mhCounts {
		mu.Lock()
		defer mu.Unlock()
		c := mhCounts{mh: true}
		for _, m := range chains {
			if m != nil {
				a, p, i, n, _ := m.Counts()
				c.acc += a
				c.prop += p
				c.indAcc += i
				c.indProp += n
			}
		}
		return c
	}
	retarget := func(q *tmix.Mixture, sur *surrogate.Surrogate, pInd float64) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range chains {
			if m != nil {
				m.Retarget(q, sur, pInd)
			}
		}
	}
	// A nil *mh.Kernel must reach Run as a nil interface.
	return func(c int) Estimator {
			if m := get(c); m != nil {
				return m
			}
			return nil
		}, func(c int) Method {
			if m := get(c); m != nil {
				return m
			}
			return nil
		}, counts, retarget
}

// clippedSteps returns the SGLD steps, over every chain and segment, whose
// injected covariance (2h − h²)I − h²W was not positive semi-definite
// and was clipped (Precond.Clipped): there the gradient noise exceeds the
// diffusion the step allows, and the draws are wider than the posterior.
func (f *fit) clippedSteps() int {
	n := 0
	for _, m := range f.precs {
		n += m.Clipped
	}
	return n
}

// logDensity is an Estimator that can return the log posterior alone
// (gradient.Estimator.LogPosterior).
type logDensity interface {
	LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error)
}
