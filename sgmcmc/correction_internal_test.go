package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestPlainCorrection checks the plain estimator's bias correction
// (Preparation.Correction) on the simulated LGSSM with a small bootstrap
// filter (N = 20), whose particle bias is large: at u* the mean over
// random windows of the corrected gradient agrees with the exact (Kalman)
// full-data score within 4 standard errors plus the anchor's own error,
// while the uncorrected mean is measurably off (more than 4 SE).
func TestPlainCorrection(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	f, err := newFit(models.LGSSM{}, data, FitSettings{Seed: 3, N: 20, AnchorParticles: 2000, Proposal: pf.Bootstrap, Filter: ParticleFilter,
		Gradient: PlainGradient, NoiseProbes: 4, WarmUp: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	u := f.prep.Mode
	exact, err := gradient.New(models.LGSSM{}, data, gradient.Settings{Exact: true, Subsequencer: gradient.Subsequencer{S: 40, B: 10}})
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, f.dim)
	if _, err := exact.Tile(ctx, want, u, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	prior := make([]float64, f.dim)
	f.model.LogPrior(prior, u)
	const M = 4000
	est, err := f.estimator()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	sum, sum2 := make([]float64, f.dim), make([]float64, f.dim)
	g := make([]float64, f.dim)
	for range M {
		if _, err := est.Grad(ctx, g, u, rng); err != nil {
			t.Fatal(err)
		}
		for i := range g {
			v := g[i] - prior[i]
			sum[i] += v / M
			sum2[i] += v * v / M
		}
	}
	biased := 0
	for i := range want {
		se := math.Sqrt((sum2[i] - sum[i]*sum[i]) / M)
		tol := 4*se + 4*f.prep.AnchorSE[i]
		corr := sum[i] - want[i]
		plain := corr - f.prep.Correction[i]
		t.Logf("coordinate %d: exact %.2f, corrected %.2f (off %.2f), uncorrected off %.2f, SE %.2f, anchor SE %.2f",
			i, want[i], sum[i], corr, plain, se, f.prep.AnchorSE[i])
		if math.Abs(corr) > tol {
			t.Errorf("coordinate %d: corrected mean %.2f vs exact %.2f (tolerance %.2f)", i, sum[i], want[i], tol)
		}
		if math.Abs(plain) > tol {
			biased++
		}
	}
	if biased == 0 {
		t.Error("the uncorrected N = 20 filter shows no bias here, so the test cannot tell the correction works")
	}
}
