package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/mh"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// TestMALAExact samples the correlated Gaussian N(0, Σ), Σ = [[1, 0.9],
// [0.9, 1]], with a wrong metric (L = I, ten times the variance of the
// narrow direction) at step h = 0.15, where the unadjusted update
// (Precond) is measurably biased, and checks that mh.Kernel's
// Metropolis–Hastings test makes the draws exact: E u₀², E u₁² and
// E(u₀ − u₁)² within 4 standard errors (bulk ESS) of 1, 1 and 0.2, while
// Precond's E(u₀ − u₁)² is off by more than 4; likewise with every
// other proposal an independent Student-t draw centred off the mean.
func TestMALAExact(t *testing.T) {
	const rho = 0.9
	target := EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		// Σ⁻¹ = [[1, −ρ], [−ρ, 1]] / (1 − ρ²).
		a, b := u[0], u[1]
		c := 1 / (1 - rho*rho)
		grad[0] = -c * (a - rho*b)
		grad[1] = -c * (b - rho*a)
		return -0.5 * c * (a*a - 2*rho*a*b + b*b), nil
	})
	l := []float64{1, 0, 0, 1}
	run := func(adjusted bool, ind *tmix.Mixture, pInd float64, target Estimator) (cov [3]float64, se [3]float64, acc float64) {
		const chains, iters = 4, 40000
		ms := make([]*mh.Kernel, chains)
		newEst := func(c int) Estimator {
			if !adjusted {
				return target
			}
			ms[c] = mh.New(target, l, ind, 2)
			if pInd > 0 {
				ms[c].Retarget(ind, nil, pInd)
			}
			return ms[c]
		}
		newMethod := func(c int) Method {
			if !adjusted {
				return &Precond{L: l}
			}
			return ms[c]
		}
		trace := &Trace{}
		_, err := Run(context.Background(), newEst, newMethod, func(_ int, u []float64) error { return nil }, 2,
			Settings{Iterations: iters, Schedule: Constant(0.15), Chains: chains, Seed: 11, Recorder: trace})
		if err != nil {
			t.Fatal(err)
		}
		// Per chain and statistic (u₀², u₁², (u₀ − u₁)²) after a burn-in;
		// the standard error from the bulk ESS over the chains.
		stats := make([][][]float64, 3)
		for _, ch := range trace.Chains {
			var s [3][]float64
			for i := 1000; i < ch.Len(); i++ {
				a, b := ch.U[2*i], ch.U[2*i+1]
				s[0] = append(s[0], a*a)
				s[1] = append(s[1], b*b)
				s[2] = append(s[2], (a-b)*(a-b))
			}
			for k := range s {
				stats[k] = append(stats[k], s[k])
			}
		}
		for k, cs := range stats {
			n, m, m2 := 0.0, 0.0, 0.0
			for _, c := range cs {
				for _, v := range c {
					n++
					m += v
					m2 += v * v
				}
			}
			m /= n
			cov[k] = m
			se[k] = math.Sqrt((m2/n - m*m) / ksd.BulkESS(cs))
		}
		if adjusted {
			a, p := 0, 0
			for _, m := range ms {
				ma, mp, _, _, _ := m.Counts()
				a += ma
				p += mp
			}
			acc = float64(a) / float64(p)
		}
		return cov, se, acc
	}
	want := [3]float64{1, 1, 2 * (1 - rho)}
	names := [3]string{"Var u₀", "Var u₁", "Var(u₀ − u₁)"}
	// Langevin proposals only, then mixed with independence proposals
	// from a t distribution off the posterior's centre and shape, then
	// from a two-component t mixture in 80% of the steps with the log
	// posterior alone evaluated for them (the Sampler skips the gradient).
	lazy := &countingTarget{est: target}
	mix := tmix.New([]float64{0.7, 0.3}, [][]float64{{0.3, 0.3}, {-0.5, 0.2}}, [][]float64{{1, 0, 0, 1}, {0.8, 0, 0.5, 0.6}})
	for _, c := range []struct {
		name   string
		ind    *tmix.Mixture
		pInd   float64
		target Estimator
	}{
		{"Langevin", nil, 0, target},
		{"t at (0.3, 0.3)", tmix.New([]float64{1}, [][]float64{{0.3, 0.3}}, [][]float64{l}), 0, target},
		{"t mixture, 80%, lazy gradients", mix, 0.8, lazy},
	} {
		cov, se, acc := run(true, c.ind, c.pInd, c.target)
		t.Logf("mala (%s): Langevin acceptance rate %.2f", c.name, acc)
		for k := range cov {
			t.Logf("mala (%s): %s %.4f ± %.4f (exact %.2f)", c.name, names[k], cov[k], se[k], want[k])
			if math.Abs(cov[k]-want[k]) > 4*se[k] {
				t.Errorf("mala (%s): %s = %.4f, want %.2f within 4 SE (%.4f)", c.name, names[k], cov[k], want[k], 4*se[k])
			}
		}
	}
	// 4 × 40000 iterations: an independence step (80%, binomial sd 160)
	// evaluates the log posterior alone at its proposal, once; a Langevin
	// step the gradients at the current point (unless cached) and at its
	// proposal: at most two. The current point's log posterior comes from
	// the cache (a re-evaluation would count).
	const iters, lazySD = 160000, 160
	t.Logf("lazy: %d gradients, %d log posteriors alone over %d iterations", lazy.grads, lazy.logPosts, iters)
	if math.Abs(float64(lazy.logPosts)-0.8*iters) > 4*lazySD+4 {
		t.Errorf("lazy: %d log posteriors alone, want 128000 ± %d (one per independence step)", lazy.logPosts, 4*lazySD+4)
	}
	if langevin := iters - lazy.logPosts; lazy.grads > 2*langevin+8 {
		t.Errorf("lazy: %d gradients for about %d Langevin steps, want at most two each", lazy.grads, langevin)
	}
	cov, se, _ := run(false, nil, 0, target)
	t.Logf("unadjusted: Var(u₀ − u₁) %.4f ± %.4f (exact %.2f)", cov[2], se[2], want[2])
	if math.Abs(cov[2]-want[2]) <= 4*se[2] {
		t.Errorf("the unadjusted update at h = 0.15 was not measurably biased (%.4f ± %.4f vs %.2f): the test cannot tell mala from it", cov[2], se[2], want[2])
	}
}

// countingTarget is an Estimator with a log posterior alone (logDensity),
// counting the calls of each.
type countingTarget struct {
	est             Estimator
	grads, logPosts int
	mu              sync.Mutex
}

func (c *countingTarget) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	c.mu.Lock()
	c.grads++
	c.mu.Unlock()
	return c.est.Grad(ctx, grad, u, rng)
}

func (c *countingTarget) LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	c.mu.Lock()
	c.logPosts++
	c.mu.Unlock()
	var g [2]float64
	return c.est.Grad(ctx, g[:], u, rng)
}
