package compare_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Compare the full-data and the buffered Kalman gradients on a short LGSSM
// series, with a fixed number of iterations (so the run is reproducible)
// and the exact posterior score for the KSD.
func Example() {
	var m models.LGSSM
	u0, _ := m.Params(0.9, 0.7, 1)
	_, y, _ := m.Simulate(300, u0, rand.New(rand.NewPCG(1, 2)))
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	methods := []compare.Method{
		{Name: "Full", New: func(int) (sgmcmc.Estimator, error) {
			return compare.FullGradient(m, data, pf.Settings{}, true)
		}},
		{Name: "Buffer", New: func(int) (sgmcmc.Estimator, error) {
			return gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, Exact: true})
		}},
	}
	res, err := compare.Run(context.Background(), methods, compare.Settings{
		Model: m, Eps: []float64{0.1, 0.01}, Obs: 300, Iterations: 2000, Chains: 2, Seed: 1,
		Init:     func(_ int, u []float64) error { copy(u, u0); return nil },
		NewScore: func() (sgmcmc.Estimator, error) { return compare.FullGradient(m, data, pf.Settings{}, true) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mr := range res.Methods {
		g := mr.Selected()
		fmt.Printf("%s: %d step sizes tried, %d chains of %.0f iterations, %d failed\n",
			mr.Name, len(mr.Grid), len(g.Chains), g.MeanIter(), g.Failed)
	}
	// Output:
	// Full: 2 step sizes tried, 2 chains of 2000 iterations, 0 failed
	// Buffer: 2 step sizes tried, 2 chains of 2000 iterations, 0 failed
}
