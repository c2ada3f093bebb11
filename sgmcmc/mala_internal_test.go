package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
)

// TestMALAExact samples the correlated Gaussian N(0, Σ), Σ = [[1, 0.9],
// [0.9, 1]], with a wrong metric (L = I, ten times the variance of the
// narrow direction) at step h = 0.15, where the unadjusted update
// (Precond) is measurably biased, and checks that mala's
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
	run := func(adjusted bool, center []float64) (cov [3]float64, se [3]float64, acc float64) {
		const chains, iters = 4, 40000
		ms := make([]*mala, chains)
		newEst := func(c int) Estimator {
			if !adjusted {
				return target
			}
			ms[c] = newMALA(target, l, center, 2)
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
				a += m.accepted
				p += m.proposed
			}
			acc = float64(a) / float64(p)
		}
		return cov, se, acc
	}
	want := [3]float64{1, 1, 2 * (1 - rho)}
	names := [3]string{"Var u₀", "Var u₁", "Var(u₀ − u₁)"}
	// Langevin proposals only (nil centre), then mixed with independence
	// proposals from a t distribution off the posterior's centre and shape.
	for _, center := range [][]float64{nil, {0.3, 0.3}} {
		cov, se, acc := run(true, center)
		t.Logf("mala (centre %v): Langevin acceptance rate %.2f", center, acc)
		for k := range cov {
			t.Logf("mala (centre %v): %s %.4f ± %.4f (exact %.2f)", center, names[k], cov[k], se[k], want[k])
			if math.Abs(cov[k]-want[k]) > 4*se[k] {
				t.Errorf("mala (centre %v): %s = %.4f, want %.2f within 4 SE (%.4f)", center, names[k], cov[k], want[k], 4*se[k])
			}
		}
	}
	cov, se, _ := run(false, nil)
	t.Logf("unadjusted: Var(u₀ − u₁) %.4f ± %.4f (exact %.2f)", cov[2], se[2], want[2])
	if math.Abs(cov[2]-want[2]) <= 4*se[2] {
		t.Errorf("the unadjusted update at h = 0.15 was not measurably biased (%.4f ± %.4f vs %.2f): the test cannot tell mala from it", cov[2], se[2], want[2])
	}
}
