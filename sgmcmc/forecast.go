package sgmcmc

import (
	"context"
	"fmt"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/states"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// ForecastSummary is the posterior predictive law of the next H states and
// observations after the end of a fitted sequence: entry h−1 of every
// band is time T+h (state T+h, observation row T+h−1).
type ForecastSummary struct {
	Sequence   int
	Origin     int   // T: the forecasts start from the filtering law of state T
	Horizon    int   // H
	Components []int // the state components of States
	// States[j] summarises p(x_T+h,c | y_1..y_T) for c = Components[j].
	States []Band
	// Obs[i] summarises p(y_T+h,i | y_1..y_T), observation component i.
	Obs []Band
	// Volatility summarises the volatility of x_T+h (ssm.Volatility); nil
	// for models without one.
	Volatility *Band
	Draws      int // posterior draws D
	Paths      int // simulated paths M per posterior draw
	Exact      bool
}

// Forecast returns the h-step-ahead predictive laws of the states, the
// observations and (for volatility models) the volatility, for h = 1..H
// after the end of sequence s.Sequence, integrated over D thinned posterior
// draws:
//
//	p(x_T+h | y) = (1/D) Σ_d ∫ p(x_T+h | x_T, u_d) p(x_T | y_1..y_T, u_d) dx_T.
//
// At each draw M states x_T come from the filtering law (a particle
// filter over the last s.Buffer rows, 0 meaning all of them; for a scalar
// model with an exact ssm.StateSmoother, exact Gaussian draws), and each
// is carried forward by the kernel's transition, with an observation
// drawn from the emission at every step. O(D·(N·Buffer + M·H)).
func (p *Posterior) Forecast(ctx context.Context, H int, s StateSettings) (*ForecastSummary, error) {
	if H < 1 {
		return nil, fmt.Errorf("%w: forecast horizon %d must be at least 1", ErrSettings, H)
	}
	r, s, err := p.stateRun(s, true)
	if err != nil {
		return nil, err
	}
	fc, err := r.Forecast(ctx, H)
	if err != nil {
		return nil, err
	}
	return &ForecastSummary{
		Sequence: s.Sequence, Origin: fc.Origin, Horizon: fc.Horizon, Components: fc.Components,
		States: bands(fc.States), Obs: bands(fc.Obs), Volatility: bandPtr(fc.Volatility),
		Draws: fc.Draws, Paths: fc.Paths, Exact: fc.Exact,
	}, nil
}

// Score is a posterior predictive score of held-out observations.
type Score struct {
	// LogScore is log p(y_held | y) = log (1/D) Σ_d p(y_held | y, u_d),
	// the log of the mean over posterior draws of the joint predictive
	// density of the held-out block (each density the product of the
	// one-step-ahead densities p(y_t | y_1..y_t−1, u_d) over held-out
	// rows).
	LogScore float64
	// SE is the delta-method standard error of LogScore over the draws,
	// sd(p_d)/(√D·mean(p_d)) with p_d = p(y_held | y, u_d), treating the
	// thinned draws as independent.
	SE float64
	// ESS is (Σ p_d)²/Σ p_d²: how many draws carry LogScore (small values
	// mean a few draws dominate and LogScore is noisy).
	ESS float64
	// Pointwise is Σ_t log (1/D) Σ_d p(y_t | y_1..y_t−1, u_d), the sum over
	// held-out rows of the log of the posterior-mean one-step density
	// (each row scored with the fit-data posterior, not updated by the
	// earlier held-out rows).
	Pointwise float64
	// PerRow[t] is the t-th held-out row's term of Pointwise.
	PerRow []float64
	// ByDraw[d] is log p(y_held | y, u_d).
	ByDraw []float64
	Draws  int
	Exact  bool // Kalman predictive densities (ssm.StateSmoother)
}

// PredictiveScore scores held-out observations that continue sequence
// s.Sequence (heldOut's rows are y_T+1, y_T+2, …): at each of D thinned
// posterior draws the one-step-ahead predictive densities of the held-out
// rows come from a filter run over the fitted rows (the last s.Buffer of
// them; 0: all) and on through the held-out ones (a particle filter's
// factors Σ_i W̄_t−1^i exp(ι_t^i), or the exact Kalman densities of a
// model with an ssm.StateSmoother unless s.Particles), and are averaged
// over the draws on the density scale. Comparing LogScore between models
// (SVM against GARCH, say) fitted to the same rows compares their
// out-of-sample predictive performance.
func (p *Posterior) PredictiveScore(ctx context.Context, heldOut ssm.Sequence, s StateSettings) (*Score, error) {
	r, _, err := p.stateRun(s, true)
	if err != nil {
		return nil, err
	}
	if err := heldOut.Validate(p.model.Dims().Obs); err != nil {
		return nil, fmt.Errorf("held-out data: %w", err)
	}
	sc, err := r.PredictiveScore(ctx, heldOut)
	if err != nil {
		return nil, err
	}
	// states.Score has Score's fields in Score's order: the compiler
	// checks that the two stay alike.
	out := Score(*sc)
	return &out, nil
}

// LogLik returns an estimate of log p(y | u) over every fitted sequence and
// its standard error: exact (se 0) for a model with an ssm.ExactScorer
// (unless s.Particles); otherwise the log of the mean of 8 independent
// particle-filter estimates, each unbiased for p(y | u), with
// 4·s.PF.N particles (1024 by default) and the delta-method standard
// error of that log-mean.
func (p *Posterior) LogLik(ctx context.Context, u []float64, s StateSettings) (ll, se float64, err error) {
	r, _, err := p.stateRun(s, false)
	if err != nil {
		return 0, 0, err
	}
	if len(u) != p.Dim {
		return 0, 0, fmt.Errorf("%w: len(u) = %d, the model has %d parameters", ErrSettings, len(u), p.Dim)
	}
	return r.LogLik(ctx, p.data.Sequences, u)
}

// MeanU returns u(θ̄), the unconstrained point of the posterior mean θ̄ of
// the natural parameters (the point a plug-in log-likelihood is usually
// reported at).
func (p *Posterior) MeanU() ([]float64, error) {
	if p.model == nil {
		return nil, ErrNoModel
	}
	return states.MeanU(p.model, p.Natural, len(p.Names), p.Dim)
}
