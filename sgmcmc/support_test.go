package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestOutsideSupportRejected: SGLD on N(0.9, 0.1²) restricted to u < 1,
// whose estimator refuses u ≥ 1 with an *ssm.ParamError (as LGSSMd does
// for a transition matrix of spectral radius ≥ 1). A step out of the
// support must be rejected, back to the previous point, and the chain go
// on (NonFinite: Skip) instead of failing: every draw stays inside, and
// the draws' mean is the truncated normal's, E u = 0.9 − 0.1·φ(1)/Φ(1).
func TestOutsideSupportRejected(t *testing.T) {
	const mu, sd = 0.9, 0.1
	est := EstimatorFunc(func(_ context.Context, g, u []float64, _ *rand.Rand) (float64, error) {
		if u[0] >= 1 {
			return math.NaN(), &ssm.ParamError{Name: "u", Value: u[0], Reason: "must be < 1"}
		}
		g[0] = -(u[0] - mu) / (sd * sd)
		return -0.5 * (u[0] - mu) * (u[0] - mu) / (sd * sd), nil
	})
	tr := &Trace{}
	res, err := Run(context.Background(), func(int) Estimator { return est }, func(int) Method { return &SGLD{} },
		func(_ int, u []float64) error { u[0] = mu; return nil }, 1,
		Settings{Iterations: 40000, BurnIn: 1000, Schedule: Constant(2e-4), Chains: 2, Seed: 3, NonFinite: Skip, Recorder: tr})
	if err != nil {
		t.Fatal(err)
	}
	skipped, n, sum, sum2 := 0, 0, 0.0, 0.0
	for c, ch := range res.Chains {
		if ch.Status != IterationLimit {
			t.Errorf("chain %d: status %v (%v), want IterationLimit", c, ch.Status, ch.Err)
		}
		skipped += ch.Skipped
	}
	for _, ch := range tr.Chains {
		for _, v := range ch.U {
			if v >= 1 {
				t.Fatalf("a draw at %v, outside the support", v)
			}
			n++
			sum += v
			sum2 += v * v
		}
	}
	if skipped == 0 {
		t.Errorf("no step left the support: the test does not reach the boundary")
	}
	// The truncated normal's mean; the draws' standard error with an
	// autocorrelation time of about 2s²/h = 100 iterations.
	phi1 := math.Exp(-0.5) / math.Sqrt(2*math.Pi)
	Phi1 := 0.5 * (1 + math.Erf(1/math.Sqrt2))
	want := mu - sd*phi1/Phi1
	mean := sum / float64(n)
	se := math.Sqrt((sum2/float64(n)-mean*mean)*100/float64(n)) + 0.5*2e-4/sd // plus the O(h) bias bound
	t.Logf("%d draws, %d steps rejected at the boundary, mean %.4f, truncated normal's %.4f (SE %.4f)", n, skipped, mean, want, se)
	if math.Abs(mean-want) > 4*se {
		t.Errorf("mean %.4f, want %.4f ± 4 × %.4f", mean, want, se)
	}
}
