package pf_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// A buffered window: filter rows [50, 110), keep the score of rows
// [60, 100). The linear Gaussian model has the exact (Kalman) answer to
// compare with.
func Example() {
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1)
	k, _ := m.Bind(u)
	_, y, _ := m.Simulate(200, u, rand.New(rand.NewPCG(1, 2)))
	w := ssm.Window{Start: 50, End: 110, KeepStart: 60, KeepEnd: 100}

	f, err := pf.New(pf.Settings{N: 5000}) // guided proposal, systematic resampling, ancestral paths
	if err != nil {
		panic(err)
	}
	score := make([]float64, 3)
	res, err := f.Run(context.Background(), k, m.Dims(), y, w, pf.Score(k, m.Dims()), score, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		panic(err)
	}
	exact := make([]float64, 3)
	ll, _ := m.ExactScore(exact, u, y, w)
	fmt.Printf("log-likelihood: PF %.1f, Kalman %.1f\n", res.LogLik, ll)
	fmt.Printf("score PF:     %.1f\n", score)
	fmt.Printf("score Kalman: %.1f\n", exact)
	// Output:
	// log-likelihood: PF -96.1, Kalman -96.0
	// score PF:     [-1.8 -8.8 -12.1]
	// score Kalman: [-1.9 -8.3 -12.9]
}

func ExampleResample() {
	w := []float64{0.1, 0.6, 0, 0.3}
	anc := make([]int, 10)
	pf.Resample(anc, w, pf.Systematic, rand.New(rand.NewPCG(1, 1)))
	fmt.Println(anc) // 1, 6, 0 and 3 copies
	// Output:
	// [0 1 1 1 1 1 1 3 3 3]
}
