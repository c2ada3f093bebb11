package gradient_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The exact (Kalman) buffered gradient of an LGSSM, averaged over every
// subsequence with B = T, is the full-data score.
func ExampleSubsequencer_Enumerate() {
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1)
	_, y, _ := m.Simulate(100, u, rand.New(rand.NewPCG(1, 2)))
	q := gradient.Subsequencer{S: 10, B: 100}
	est, _ := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, gradient.Settings{Subsequencer: q, Exact: true})

	mean, g := make([]float64, 3), make([]float64, 3)
	q.Enumerate(y.Len(), func(w ssm.Window, p float64) {
		est.Fixed(context.Background(), g, u, 0, w, nil)
		for j := range g {
			mean[j] += p * g[j]
		}
	})
	full := make([]float64, 3)
	m.ExactScore(full, u, y, ssm.Full(y.Len()))
	fmt.Printf("E[ĝ(10, T)] = %.6f\nfull score  = %.6f\n", mean, full)
	// Output:
	// E[ĝ(10, T)] = [-4.879577 -13.304828 -22.586102]
	// full score  = [-4.879577 -13.304828 -22.586102]
}

// A buffered particle gradient of the SVM's log-posterior at one u.
func ExampleEstimator_Grad() {
	m := models.SVM{}
	u, _ := m.Params(0.95, 0.3, 1.0)
	_, y, _ := m.Simulate(2000, u, rand.New(rand.NewPCG(3, 4)))
	est, err := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}},
		gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := make([]float64, 3)
	if _, err := est.Grad(context.Background(), g, u, rand.New(rand.NewPCG(5, 6))); err != nil {
		fmt.Println(err)
		return
	}
	w := est.Last().Windows[0]
	fmt.Printf("filtered [%d,%d), kept [%d,%d), gradient finite: %v\n", w.Start, w.End, w.KeepStart, w.KeepEnd, g[0] == g[0] && g[1] == g[1] && g[2] == g[2])
	// Output:
	// filtered [562,622), kept [572,612), gradient finite: true
}
