package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// gridScore returns d/du log p(y | θ) of the SVM at u by central
// differences (step 1e-4 in u) of the grid log-likelihood with g points.
func gridScore(y, u []float64, g int) []float64 {
	m := models.SVM{}
	th := make([]float64, len(u))
	ll := func(v []float64) float64 {
		m.Constrain(th, v)
		return gridLogLik(y, th[0], th[1], th[2], g)
	}
	score := make([]float64, len(u))
	for i := range u {
		const h = 1e-4
		up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
		up[i] += h
		dn[i] -= h
		score[i] = (ll(up) - ll(dn)) / (2 * h)
	}
	return score
}

// scoreCheck compares particle estimates of the log-likelihood score
// d/du log p(y | θ) at u with the grid's (central differences of the grid
// log-likelihood, step 1e-4 in u). It prints, per coordinate of u, the mean
// ± standard error over reps independent full-sequence estimates (S = T)
// and over 10·reps buffered estimates (S = 40, B = 10), each with the
// bootstrap and the guided (Laplace) proposal and n particles, and z, the
// difference from the grid in standard errors: the particle bias that
// examples/fit/README.md measures.
func scoreCheck(w io.Writer, seq ssm.Sequence, u []float64, g, reps, n int, seed uint64) error {
	exact := gridScore(seq.Y, u, g)
	fmt.Fprintf(w, "score of log p(y|theta) in u = (atanh phi, log sigma, log tau) at the mode\n")
	fmt.Fprintf(w, "%-46s %8.2f %8.2f %8.2f\n", "grid (central differences)", exact[0], exact[1], exact[2])
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	for _, c := range []struct {
		full, guided bool
	}{{true, false}, {true, true}, {false, false}, {false, true}} {
		s := gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: pf.Settings{N: n}}
		r, name := 10*reps, "S = 40, B = 10"
		if c.full {
			s.Subsequencer, r, name = gradient.Subsequencer{Sampling: gradient.Full}, reps, "full"
		}
		prop := "bootstrap"
		if c.guided {
			prop = "guided"
		}
		e, err := gradient.New(models.SVM{Guided: c.guided}, data, s)
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(seed, 3))
		grad := make([]float64, len(u))
		sum, sum2 := make([]float64, len(u)), make([]float64, len(u))
		for range r {
			if _, err := e.Likelihood(context.Background(), grad, u, rng); err != nil {
				return err
			}
			for i, v := range grad {
				sum[i] += v
				sum2[i] += v * v
			}
		}
		fmt.Fprintf(w, "%-46s", fmt.Sprintf("PF %s, %s, N = %d (%d)", name, prop, n, r))
		for i := range u {
			mean := sum[i] / float64(r)
			se := math.Sqrt(math.Max(sum2[i]/float64(r)-mean*mean, 0) / float64(r-1))
			fmt.Fprintf(w, " %8.2f ± %5.2f (z %5.1f)", mean, se, (mean-exact[i])/se)
		}
		fmt.Fprintln(w)
	}
	return nil
}
