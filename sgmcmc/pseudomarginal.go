package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Pseudo-marginal chains on Laplace importance sampling.
//
// With its random numbers fixed, pf.Laplace's plain estimate is a smooth,
// deterministic function of u, but a biased one where the Gaussian model
// is poor: on MSV{D: 2} on the DAX and CAC 40 returns its ESS was 2–4 of
// any number of paths, and chains on it missed the NUTS posterior of ρ by
// 0.48 sd (docs/particles.md). Its backward sweep with resampling is a
// sequential Monte Carlo sampler whose estimate of p(y | u) is unbiased
// for every u (sd 0.33 of the log over seeds there, 128 paths). A
// Metropolis–Hastings chain that evaluates each proposal's log posterior
// with fresh random numbers and keeps the current state's value until it
// moves (mh.Kernel's cache does) targets the exact posterior, whatever
// the estimate's noise (Andrieu and Roberts 2009): the pseudo-marginal
// chain. Its noise costs mixing, not accuracy; with an sd of the log
// estimate below 1 the chain mixes nearly as well as on the exact
// likelihood (Doucet, Pitt, Deligiannidis and Kohn 2015).
//
// So the full-data chains and the importance sampling of their adaptation
// use pmLaplace, and no correction towards a finer scorer is needed: the
// deterministic plain estimate serves the preparation alone (the Newton
// steps, the metric and the noise measurement).
//
// Where the weights are uneven the chains' local steps are random walks
// (Preparation.Walk), so no proposal depends on the noisy score. Where
// they are even (a Gaussian emission) the estimate is exact and only the
// score is random: a Langevin proposal's drift then uses the score kept
// with the current state (mh.Kernel's cache) or a fresh one drawn from
// its law given the state, and either way the Metropolis–Hastings test
// on the extended state leaves the posterior invariant.

// pmLaplace is the chains' estimator on the Laplace path: the log
// posterior with the log-likelihood of every sequence estimated by
// pf.Laplace's resampling sweep over the whole sequence, with random
// numbers drawn from the caller's generator, and the Fisher-identity
// score of the same paths.
type pmLaplace struct {
	m     *laplaceModel
	data  ssm.Dataset
	prior []float64 // scratch: the prior's gradient
	g     []float64 // scratch: one sequence's score
}

func newPMLaplace(m *laplaceModel, data ssm.Dataset, dim int) *pmLaplace {
	return &pmLaplace{m: m, data: data, prior: make([]float64, dim), g: make([]float64, dim)}
}

// Grad implements Estimator: the log posterior estimate and its score.
func (e *pmLaplace) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	return e.eval(ctx, grad, u, rng)
}

// LogPosterior returns the log posterior estimate alone.
func (e *pmLaplace) LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	return e.eval(ctx, nil, u, rng)
}

func (e *pmLaplace) eval(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	lp := e.m.LogPrior(e.prior, u)
	if math.IsInf(lp, -1) {
		return lp, nil
	}
	if grad != nil {
		copy(grad, e.prior)
	}
	seed := rng.Uint64()
	for j, seq := range e.data.Sequences {
		if err := ctx.Err(); err != nil {
			return math.NaN(), err
		}
		var g []float64
		if grad != nil {
			g = e.g
			clear(g)
		}
		var start []float64
		if j < len(e.m.starts) {
			start = e.m.starts[j]
		}
		ll, err := e.m.sweep(g, u, seq, ssm.Full(seq.Len()), seed+uint64(j), start)
		if err != nil {
			return math.NaN(), fmt.Errorf("sgmcmc: sequence %d: %w", j, err)
		}
		lp += ll
		for i, v := range g {
			grad[i] += v
		}
	}
	return lp, nil
}

// pseudoMarginal reports whether the full-data chains run on pmLaplace:
// full-data scores on Laplace importance sampling. (Chains on subsequence
// gradients keep the plain estimate, corrected towards the finer scorer.)
func (f *fit) pseudoMarginal() bool {
	return f.prep.Gradient == FullGradient && f.onLaplace()
}

// pmKSDScores sets scores (K×dim) to the pseudo-marginal estimator's
// scores of the log posterior at the K rows of x, the i-th with the
// generator PCG(Seed, ksdStream + i), on the fit's workers. The KSD
// measures the draws against the target's score field: the resampling
// sweep's Fisher-identity score estimates the exact posterior's, with
// noise, where the plain estimate's deterministic score is biased (its
// mean over the chains' draws was 4–5 standard errors from 0 where the
// sweep's was within 1: TestPseudoMarginalKSDScores).
func (f *fit) pmKSDScores(ctx context.Context, x, scores []float64, K int) error {
	return f.withEstimators(K, func(_ int, est Estimator, i int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed, ksdStream+uint64(i)))
		_, err := est.Grad(ctx, scores[i*f.dim:(i+1)*f.dim], x[i*f.dim:(i+1)*f.dim], rng)
		return err
	})
}

// workersFor returns the number of workers that n items get.
func (f *fit) workersFor(n int) int { return max(1, min(f.s.Workers, n)) }

// withEstimators runs job(w, est, i) for every i in [0, n) on
// f.workersFor(n) goroutines, item i on worker w = i mod workers, each
// worker with an estimator of its own (f.estimator): a job depends on its
// own generator, not on which worker runs it. An error (of the estimator
// or a job) ends that worker's items; the errors are returned joined.
func (f *fit) withEstimators(n int, job func(w int, est Estimator, i int) error) error {
	workers := f.workersFor(n)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			est, err := f.estimator()
			if err != nil {
				errs[w] = err
				return
			}
			for i := w; i < n; i += workers {
				if err := job(w, est, i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
