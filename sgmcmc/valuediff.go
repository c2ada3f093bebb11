package sgmcmc

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
)

// On Laplace importance sampling the Newton steps for the mode
// (observedNewton) take the gradient and the information from finite
// differences of the log-likelihood estimate's values instead of its
// Fisher-identity score. With common random numbers and no resampling
// (pf.Laplace's Plain) the estimate is a smooth function of u, and its
// differences are its derivatives: on the DAX and CAC 40 returns
// (MSV{D: 2}) steps of 10⁻⁵, 10⁻⁴ and 10⁻³ gave the same gradient to four
// digits. Its score is not, where the 128 paths' weights are uneven (the
// whole series' plain importance sampling keeps an ESS of a few near that
// posterior): at φ (0.82, 0.76), σ (0.48, 0.53), ρ 0.94 it was
// [23 13 78 −110 2.6 −31 2.0] against the values' [24 −39 28 −31 11 −1.1
// 19]. The steps on the score stopped there, 4–6 posterior sds from the
// posterior, no damped step along them raising the log posterior, and the
// importance sampling started from that point kept 1–3 of 175 draws in
// each of its three rounds; the steps on the values go on to the mode
// (TestValueNewton), and the first round keeps 25–49. The differences
// need 1 + 2p + p(p − 1)/2 log-likelihoods per step (36 for p = 7)
// against the score's p + 1, so they are used up to valueNewtonMaxDim
// parameters, and not where the weights are even (a Gaussian emission:
// the score is the estimate's derivative there).
const (
	valueEta          = 1e-4
	valueNewtonMaxDim = 12
)

// valueNewton reports whether observedNewton differentiates the
// log-likelihood's values at u (see valueEta).
func (f *fit) valueNewton(u []float64) (bool, error) {
	if !f.prep.Exact || !f.onLaplace() || f.dim > valueNewtonMaxDim {
		return false, nil
	}
	even, err := f.laplace.evenWeights(u, f.data)
	return !even, err
}

// valuePoints returns u, u ± ηe_i and u + η(e_i + e_j) for i < j, in that
// order: the points valueDerivatives differentiates from.
func valuePoints(u []float64) [][]float64 {
	p := len(u)
	pts := [][]float64{append([]float64(nil), u...)}
	for i := range p {
		for _, s := range []float64{valueEta, -valueEta} {
			v := append([]float64(nil), u...)
			v[i] += s
			pts = append(pts, v)
		}
	}
	for i := range p {
		for j := i + 1; j < p; j++ {
			v := append([]float64(nil), u...)
			v[i] += valueEta
			v[j] += valueEta
			pts = append(pts, v)
		}
	}
	return pts
}

// valueDiff returns the gradient (central differences) and minus the
// Hessian (row-major; central on the diagonal, forward off it) of a
// function whose values at valuePoints(u) are ls.
func valueDiff(ls []float64, p int) (grad, fisher []float64) {
	grad, fisher = make([]float64, p), make([]float64, p*p)
	f0, e2 := ls[0], valueEta*valueEta
	plus := func(i int) float64 { return ls[1+2*i] }
	for i := range p {
		minus := ls[2+2*i]
		grad[i] = (plus(i) - minus) / (2 * valueEta)
		fisher[i*p+i] = -(plus(i) - 2*f0 + minus) / e2
	}
	k := 1 + 2*p
	for i := range p {
		for j := i + 1; j < p; j++ {
			v := -(ls[k] - plus(i) - plus(j) + f0) / e2
			fisher[i*p+j], fisher[j*p+i] = v, v
			k++
		}
	}
	return grad, fisher
}

// valueDerivatives returns the full-data log-likelihood's gradient and
// information −∇² at u from the values of the exact scorer (see
// valueEta), evaluated on the fit's workers; a subset's (f.scale set)
// are scaled up to the whole, as fullScores' are.
func (f *fit) valueDerivatives(ctx context.Context, u []float64) (grad, fisher []float64, err error) {
	pts := valuePoints(u)
	ls := make([]float64, len(pts))
	err = f.parallel(len(pts), f.fullSet(), func(est *gradient.Estimator, i int) error {
		lp, err := est.LogPosterior(ctx, pts[i], rand.New(rand.NewPCG(f.s.Seed, exactStream)))
		if err != nil {
			return err
		}
		ls[i] = lp - f.model.LogPrior(nil, pts[i])
		if f.scale != 0 {
			ls[i] *= f.scale
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("sgmcmc: full-data log-likelihood for the Newton steps: %w", err)
	}
	grad, fisher = valueDiff(ls, f.dim)
	return grad, fisher, nil
}
