package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// BenchmarkLGSSMdGradient times one stochastic gradient of each estimator
// of the appendix table and figure "LGSSM in higher dimensions" (No Buffer
// S = 40; Buffer S = 40, B = 10; particle filter N = 1000 or Kalman) and of
// the exact full-data score the KSD uses, at d = 5 and 10, T = 1000, at the
// data-generating parameters: what the equal-time budget buys each method.
func BenchmarkLGSSMdGradient(b *testing.B) {
	for _, d := range []int{5, 10} {
		m := models.LGSSMd{D: d}
		u := make([]float64, m.Dims().Param)
		if err := m.Unconstrain(u, natural(d, truth)); err != nil {
			b.Fatal(err)
		}
		_, y, err := m.Simulate(1000, u, rand.New(rand.NewPCG(1, 0)))
		if err != nil {
			b.Fatal(err)
		}
		data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
		cases := []struct {
			name string
			g    paper.Gradient
			e    paper.Estimators
		}{
			{"NoBuffer/N=1000", paper.NoBuffer, paper.Estimators{PF: pf.Settings{N: 1000}, S: 40}},
			{"NoBuffer/N=inf", paper.NoBuffer, paper.Estimators{Exact: true, S: 40}},
			{"Buffer/N=1000", paper.Buffer, paper.Estimators{PF: pf.Settings{N: 1000}, S: 40, B: 10}},
			{"Buffer/N=inf", paper.Buffer, paper.Estimators{Exact: true, S: 40, B: 10}},
			{"KSDScore/Full/N=inf", paper.Full, paper.Estimators{Exact: true}},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("d=%d/%s", d, c.name), func(b *testing.B) {
				c.e.Model, c.e.Data = m, data
				est, err := c.e.Method(c.g, c.name).New(0)
				if err != nil {
					b.Fatal(err)
				}
				g := make([]float64, len(u))
				rng := rand.New(rand.NewPCG(2, 3))
				for b.Loop() {
					if _, err := est.Grad(context.Background(), g, u, rng); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
