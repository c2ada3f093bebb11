package compare

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// FullGradient returns an estimator of the full-data posterior gradient
//
//	∇_u log π(u) + Σ_j ∇_u log p(y_j | u)
//
// summed over every sequence of data (gradient.Estimator with Sampling Full
// draws one sequence at random when there are several). With exact it uses
// the model's ssm.ExactScorer, otherwise a particle filter with settings pfs.
// Its log-posterior is the sum of the sequences' log-likelihood estimates
// plus the log prior.
func FullGradient(m ssm.Model, data ssm.Dataset, pfs pf.Settings, exact bool) (sgmcmc.Estimator, error) {
	set := gradient.Settings{Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, PF: pfs, Exact: exact}
	e, err := gradient.New(m, data, set)
	if err != nil {
		return nil, err
	}
	if len(data.Sequences) == 1 {
		return e, nil
	}
	f := &fullData{m: m, e: e, data: data, g: make([]float64, m.Dims().Param), prior: make([]float64, m.Dims().Param)}
	return f, nil
}

type fullData struct {
	m        ssm.Model
	e        *gradient.Estimator
	data     ssm.Dataset
	g, prior []float64
}

func (f *fullData) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	lp := f.m.LogPrior(grad, u)
	if math.IsInf(lp, -1) || math.IsNaN(lp) {
		return math.NaN(), fmt.Errorf("compare: log prior is %v at u = %v", lp, u)
	}
	for j, seq := range f.data.Sequences {
		ll, err := f.e.Fixed(ctx, f.g, u, j, ssm.Full(seq.Len()), rng)
		if err != nil {
			return math.NaN(), fmt.Errorf("compare: sequence %d: %w", j, err)
		}
		lp += ll
		for i, v := range f.g {
			grad[i] += v
		}
	}
	return lp, nil
}
