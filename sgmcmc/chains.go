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

// chainFactories returns Run's estimator and method factories for the
// chosen gradient with noise covariance w, a function that reports the
// Metropolis–Hastings acceptance rates of the Langevin and of the
// independence proposals or surrogate transitions over the chains (NaN
// unless the chains are mh.Kernels; the Langevin rate NaN when there were no
// Langevin steps), and one that gives the chains a new independence
// proposal, surrogate and independence share between runs (nil unless
// they are mh.Kernels). The chains persist across
// Runs with the same factories. Estimator errors are stored in *setupErr.
func (f *fit) chainFactories(w []float64, setupErr *error) (func(int) Estimator, func(int) Method, func() (float64, float64), func(*tmix.Mixture, *surrogate.Surrogate, float64)) {
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
			func() (float64, float64) { return math.NaN(), math.NaN() }, nil
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
	rates := func() (float64, float64) {
		acc, prop, ia, ip := 0, 0, 0, 0
		for _, m := range chains {
			if m != nil {
				a, p, i, n, _ := m.Counts()
				acc += a
				prop += p
				ia += i
				ip += n
			}
		}
		la := math.NaN() // no Langevin proposal (surrogate transitions only)
		if prop > 0 {
			la = float64(acc) / float64(prop)
		}
		return la, float64(ia) / float64(max(ip, 1))
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
		}, rates, retarget
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
