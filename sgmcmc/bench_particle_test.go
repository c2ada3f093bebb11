package sgmcmc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

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

// BenchmarkFitLaplace times whole fits with the defaults on Laplace
// importance sampling, the path of a vector state with linear Gaussian
// dynamics, and checks them against an exact posterior: LGSSMd{D: d},
// d = 2, 3, 5, simulated (T = 2,000; A = 0.7 I plus 0.1 on the
// superdiagonal, σ_i = 0.5, τ_i = 0.4; PCG seed 3, d) and fitted without
// its Kalman scorer (withoutKalman), against the same fit on the Kalman
// scorer. Metrics: the Laplace fit's seconds ("s/op" is ns/op), the Kalman
// fit's ("kalman-s"), the largest |mean difference| in Kalman posterior
// sds ("max-z") and the smallest and largest ratio of sds ("sd-lo",
// "sd-hi"); seed 1, no KSD.
func BenchmarkFitLaplace(b *testing.B) {
	for _, d := range []int{2, 3, 5} {
		lg := models.LGSSMd{D: d}
		A, sig, tau := make([]float64, d*d), make([]float64, d), make([]float64, d)
		for i := range d {
			A[i*d+i], sig[i], tau[i] = 0.7, 0.5, 0.4
			if i+1 < d {
				A[i*d+i+1] = 0.1
			}
		}
		u, err := lg.Params(A, sig, tau)
		if err != nil {
			b.Fatal(err)
		}
		_, y, err := lg.Simulate(2000, u, rand.New(rand.NewPCG(3, uint64(d))))
		if err != nil {
			b.Fatal(err)
		}
		data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
		set := sgmcmc.FitSettings{Seed: 1, KSDDraws: -1}
		b.Run(fmt.Sprintf("lgssmd%d/sim/T=2000", d), func(b *testing.B) {
			var lap *sgmcmc.Posterior
			for b.Loop() {
				if lap, err = sgmcmc.Fit(context.Background(), withoutKalman{lg}, data, set); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			ref, err := sgmcmc.Fit(context.Background(), lg, data, set)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "kalman-s")
			maxZ, lo, hi := 0.0, math.Inf(1), 0.0
			rs := ref.Summary()
			for i, s := range lap.Summary() {
				maxZ = math.Max(maxZ, math.Abs(s.Mean-rs[i].Mean)/rs[i].SD)
				lo, hi = math.Min(lo, s.SD/rs[i].SD), math.Max(hi, s.SD/rs[i].SD)
			}
			b.ReportMetric(maxZ, "max-z")
			b.ReportMetric(lo, "sd-lo")
			b.ReportMetric(hi, "sd-hi")
			if len(lap.Warnings) > 0 {
				b.Logf("warnings: %q", lap.Warnings)
			}
		})
	}
}
