package sgmcmc_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// BenchmarkFitParticle times whole fits on the particle path (particle
// filters for the warm-up, the preparation and the chains) at fixed, small
// iteration counts: Iterations 100 kept draws per chain after three
// adaptation windows of 50, a warm-up of 100 Adam iterations, 4 tiling
// passes for the anchor, 16 gradient-noise probes, 4 chains, no KSD, seed
// 1, the filter's defaults otherwise (N = 1000 particles, 16,000 for the
// anchor).
// The cases are the vector-state models, whose states the grid filter
// cannot hold — models.MSV{D: 2} on a simulated series (T = 2,000 at φ
// (0.95, 0.9), σ (0.2, 0.3), ρ 0.5, τ (1, 0.8)) and models.LGSSMd{D: 2}
// on a simulated series (T = 2,000, Filter ParticleFilter: its Kalman
// scorer would replace the particles otherwise) — and the SVM on the DAX
// returns with Filter ParticleFilter, the particle path of a scalar model
// whose default is the grid filter, for comparison.
func BenchmarkFitParticle(b *testing.B) {
	msv := models.MSV{D: 2}
	uMSV, err := msv.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		b.Fatal(err)
	}
	_, yMSV, err := msv.Simulate(2000, uMSV, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	lg := models.LGSSMd{D: 2}
	uLG, err := lg.Params([]float64{0.8, 0.1, -0.2, 0.6}, []float64{0.5, 0.4}, []float64{0.3, 0.5})
	if err != nil {
		b.Fatal(err)
	}
	_, yLG, err := lg.Simulate(2000, uLG, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		b.Fatal(err)
	}
	one := func(s ssm.Sequence) ssm.Dataset { return ssm.Dataset{Sequences: []ssm.Sequence{s}} }
	for _, c := range []struct {
		name   string
		m      ssm.Model
		data   ssm.Dataset
		filter sgmcmc.Filter
	}{
		{"msv2/sim/T=2000", msv, one(yMSV), sgmcmc.AutoFilter},
		{"lgssmd2/sim/T=2000", lg, one(yLG), sgmcmc.ParticleFilter},
		{"svm/dax/pf", models.SVM{}, one(daxSeq(b)), sgmcmc.ParticleFilter},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := sgmcmc.FitSettings{Iterations: 100, AdaptWindow: 50, WarmUp: 100, AnchorPasses: 4, NoiseProbes: 16, KSDDraws: -1, Seed: 1, Filter: c.filter}
			for b.Loop() {
				post, err := sgmcmc.Fit(context.Background(), c.m, c.data, s)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(post.Preparation.Seconds, "prep-s/op")
			}
		})
	}
}
