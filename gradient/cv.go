package gradient

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// ControlVariate is the control-variate gradient of Baker, Fearnhead, Fox
// and Nemeth (2019, "Control variates for stochastic gradient MCMC") for
// buffered subsequence gradients:
//
//	g(u) = ĝ_full(u*) + g_S(u) − g_S(u*) + ∇log π(u),
//
// where u* is a fixed anchor (a posterior mode), ĝ_full(u*) a precise
// estimate of the full-data score there (Estimator.Tile) and the two
// subsequence gradients g_S are computed on the same windows with the same
// random numbers (common random numbers), so that their difference is
// small when u is near u*. Its expectation over windows is that of the
// plain estimator plus the error of ĝ_full(u*), which is why the anchor
// gradient must be precise: an error d shifts the posterior mean by about
// H⁻¹d.
//
// Each call costs two evaluations of the wrapped estimator. A
// ControlVariate owns its estimator and is not safe for concurrent use.
type ControlVariate struct {
	Est        *Estimator
	Anchor     []float64 // u*
	AnchorGrad []float64 // ĝ_full(u*), the likelihood part (no prior)

	src   *rand.PCG
	rng   *rand.Rand
	buf   []float64
	prior []float64
}

// NewControlVariate returns the control-variate estimator around anchor
// with the full-data likelihood gradient anchorGrad at it. The slices are
// copied.
func NewControlVariate(est *Estimator, anchor, anchorGrad []float64) (*ControlVariate, error) {
	p := est.dims.Param
	if len(anchor) != p || len(anchorGrad) != p {
		return nil, fmt.Errorf("%w: control variate needs an anchor and a gradient of length %d (have %d and %d)",
			ErrSettings, p, len(anchor), len(anchorGrad))
	}
	for i := range anchor {
		if math.IsNaN(anchor[i]) || math.IsInf(anchor[i], 0) || math.IsNaN(anchorGrad[i]) || math.IsInf(anchorGrad[i], 0) {
			return nil, fmt.Errorf("%w: control variate anchor or its gradient is not finite", ErrSettings)
		}
	}
	src := rand.NewPCG(0, 0)
	return &ControlVariate{Est: est, Anchor: append([]float64(nil), anchor...),
		AnchorGrad: append([]float64(nil), anchorGrad...),
		src:        src, rng: rand.New(src), buf: make([]float64, p), prior: make([]float64, p)}, nil
}

// Grad stores the control-variate estimate of ∇_u log π(u | y) in grad and
// returns NaN (no log-posterior estimate). It satisfies sgmcmc.Estimator.
func (c *ControlVariate) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	if err := c.Difference(ctx, grad, u, rng); err != nil {
		return math.NaN(), err
	}
	lp := c.Est.model.LogPrior(c.prior, u)
	if math.IsInf(lp, -1) || math.IsNaN(lp) {
		return lp, fmt.Errorf("gradient: log prior is %v at u = %v", lp, u)
	}
	for i := range grad {
		grad[i] += c.AnchorGrad[i] + c.prior[i]
	}
	return math.NaN(), nil
}

// Difference stores g_S(u) − g_S(u*) in grad: both subsequence gradients on
// the same windows with the same random numbers, drawn from rng.
func (c *ControlVariate) Difference(ctx context.Context, grad, u []float64, rng *rand.Rand) error {
	s1, s2 := rng.Uint64(), rng.Uint64()
	c.src.Seed(s1, s2)
	if _, err := c.Est.Likelihood(ctx, grad, u, c.rng); err != nil {
		return err
	}
	c.src.Seed(s1, s2)
	if _, err := c.Est.Likelihood(ctx, c.buf, c.Anchor, c.rng); err != nil {
		return err
	}
	for i, v := range c.buf {
		grad[i] -= v
	}
	return nil
}
