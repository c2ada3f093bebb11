package sgmcmc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestFitLGSSMd3Default fits a simulated 3-dimensional LGSSM (T = 2,000,
// A with spectral radius 0.99) with the defaults. Near the boundary of the
// stable region some of the gradient-noise probes around the mode have
// spectral radius ≥ 1, outside the model: they must be left out, as a
// Metropolis–Hastings proposal there would be rejected, not stop the fit
// ("measuring the gradient noise: … invalid parameter A"). The posterior
// must cover the truth: every parameter within 4 posterior sds of it.
func TestFitLGSSMd3Default(t *testing.T) {
	longtest.Skip(t, "a whole fit")
	t.Parallel() // a whole fit: it shares the cores with the other long fits
	m := models.LGSSMd{D: 3}
	A := []float64{0.99, 0, 0, 0.3, 0.5, 0, 0, 0.2, 0.7}
	u, err := m.Params(A, []float64{0.5, 0.7, 0.6}, []float64{0.4, 0.5, 0.3})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(2000, u, rand.New(rand.NewPCG(3, 5)))
	if err != nil {
		t.Fatal(err)
	}
	post, err := sgmcmc.Fit(context.Background(), m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, sgmcmc.FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, len(u))
	m.Constrain(theta, u)
	for i, r := range post.Summary() {
		z := (r.Mean - theta[i]) / r.SD
		if math.Abs(z) > 4 || r.Rhat > 1.01 {
			t.Errorf("%s: mean %.4f ± %.4f, truth %.4f (%.1f sds), R-hat %.3f", r.Name, r.Mean, r.SD, theta[i], z, r.Rhat)
		}
	}
	t.Logf("%d iterations per chain, gradient %v, warnings %q", post.Iterations, post.Preparation.Gradient, post.Warnings)
}
