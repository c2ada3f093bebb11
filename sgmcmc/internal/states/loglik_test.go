package states

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestLogLikRuns: LogLik averages logLikRuns = 8 particle filters, so its
// variance is about that of one filter over 8 (the cost: 8 filters of
// 4·PF.N particles). On a simulated LGSSM (T = 200, 200 particles) the
// mean of the reported se² over 32 seeds, times 8, over the variance of
// 256 single filters' log-likelihoods (0.34) is 0.81: the delta method's
// se from 8 skewed likelihoods is a little short, and each side carries a
// Monte Carlo error of about 9%. The test asks for 0.6–1.1; with 4 runs
// the ratio is 1.37, with 16 0.54.
func TestLogLikRuns(t *testing.T) {
	m := models.LGSSM{}
	u := []float64{math.Atanh(0.9), math.Log(0.7), math.Log(1)}
	_, seq, err := m.Simulate(200, u, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const seeds = 32
	se2 := 0.0
	for s := range seeds {
		r, err := New(Input{Model: m, Chains: [][]float64{u}, Dim: len(u), Seq: seq,
			Settings: Settings{Draws: 1, PF: pf.StateSettings{N: 50}, Particles: true, Workers: 2, Seed: uint64(s + 1)}})
		if err != nil {
			t.Fatal(err)
		}
		_, se, err := r.LogLik(ctx, []ssm.Sequence{seq}, u)
		if err != nil {
			t.Fatal(err)
		}
		se2 += se * se / seeds
	}
	// One filter of LogLik's 4·PF.N particles at a time.
	k, errK := m.Bind(u)
	f, errF := pf.New(pf.Settings{N: 200})
	if err := errors.Join(errK, errF); err != nil {
		t.Fatal(err)
	}
	const singles = 256
	var sum, sum2 float64
	for i := range singles {
		res, err := f.Run(ctx, k, m.Dims(), seq, ssm.Full(seq.Len()), nil, nil, rand.New(rand.NewPCG(99, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		sum, sum2 = sum+res.LogLik, sum2+res.LogLik*res.LogLik
	}
	v1 := (sum2 - sum*sum/singles) / (singles - 1)
	ratio := 8 * se2 / v1
	t.Logf("one filter's variance %.4f; LogLik's mean se² %.5f; ratio ×8 %.3f (logLikRuns %d)", v1, se2, ratio, logLikRuns)
	if ratio < 0.6 || ratio > 1.1 {
		t.Errorf("8 se² / one filter's variance = %.3f, want 0.6–1.1", ratio)
	}
}
