package sgmcmc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
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
	r, err := p.stateSetup(s, true)
	if err != nil {
		return nil, err
	}
	s = r.s
	if r.exact != nil && r.dims.State != 1 {
		r.exact = nil // exact draws of x_T need the joint law; the marginals are all we get
	}
	T := r.seq.Len()
	win := historyWindow(s.Buffer, T, 0)
	win.KeepStart, win.KeepEnd = T, T
	D, M, S, O := len(r.draws), r.M, r.dims.State, r.dims.Obs
	per := D * M
	states := make([]*pool, len(r.comps))
	for j := range states {
		states[j] = newPool(H, per, false)
	}
	obs := make([]*pool, O)
	for j := range obs {
		obs[j] = newPool(H, per, false)
	}
	var vol *pool
	if r.vol {
		vol = newPool(H, per, false)
	}
	workers, err := r.newWorkers()
	if err != nil {
		return nil, err
	}
	err = r.forEach(ctx, D, func(wi, d int) error {
		w := workers[wi]
		k, err := r.bind(w, d)
		if err != nil {
			return err
		}
		w.src.Seed(s.Seed, forecastStream|uint64(d))
		if len(w.x) != M*S {
			w.x, w.x2, w.y = make([]float64, M*S), make([]float64, M*S), make([]float64, O)
		}
		if r.exact != nil {
			if w.mom.FilterMean == nil || len(w.mom.FilterMean) != 1 {
				w.mom = ssm.StateMoments{FilterMean: make([]float64, 1), FilterVar: make([]float64, 1)}
			}
			if _, err := r.exact.SmoothStates(r.draws[d], r.seq, win, w.mom); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
			sd := math.Sqrt(w.mom.FilterVar[0])
			for m := range M {
				w.x[m] = w.mom.FilterMean[0] + sd*w.rng.NormFloat64()
			}
		} else {
			if len(w.out.Filtered) != M*S || w.out.Smoothed != nil {
				w.out = pf.StateOutput{Filtered: make([]float64, M*S)}
			}
			if _, err := w.st.Run(ctx, k, r.dims, r.seq, win, w.out, w.rng); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
			copy(w.x, w.out.Filtered)
		}
		vk, _ := k.(ssm.Volatility)
		cur, next := w.x, w.x2
		for h := range H {
			k.SampleTransition(next, cur, w.rng)
			cur, next = next, cur
			for m := range M {
				row := cur[m*S : (m+1)*S]
				at := h*per + d*M + m
				for j, c := range r.comps {
					states[j].v[at] = float32(row[c])
				}
				k.SampleEmission(w.y, row, w.rng)
				for j := range O {
					obs[j].v[at] = float32(w.y[j])
				}
				if vol != nil {
					vol.v[at] = float32(vk.Volatility(row))
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: forecast: %w", err)
	}
	out := &ForecastSummary{Sequence: s.Sequence, Origin: T, Horizon: H, Components: r.comps, Draws: D, Paths: M, Exact: r.exact != nil}
	for _, ps := range states {
		out.States = append(out.States, ps.summarise(s.Workers))
	}
	for _, ps := range obs {
		out.Obs = append(out.Obs, ps.summarise(s.Workers))
	}
	if vol != nil {
		v := vol.summarise(s.Workers)
		out.Volatility = &v
	}
	return out, nil
}

// historyWindow returns the window of the last buf rows (0: all, negative:
// one) of a sequence of length T, extended by extra rows after it.
func historyWindow(buf, T, extra int) ssm.Window {
	start := 0
	switch {
	case buf > 0:
		start = max(0, T-buf)
	case buf < 0:
		start = max(0, T-1)
	}
	return ssm.Window{Start: start, End: T + extra, KeepStart: start, KeepEnd: start}
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
	r, err := p.stateSetup(s, true)
	if err != nil {
		return nil, err
	}
	s = r.s
	if err := heldOut.Validate(r.dims.Obs); err != nil {
		return nil, fmt.Errorf("held-out data: %w", err)
	}
	T, H, O := r.seq.Len(), heldOut.Len(), r.dims.Obs
	hw := historyWindow(s.Buffer, T, 0)
	L := T - hw.Start + H // rows of the concatenated sequence
	win := ssm.Full(L)
	D := len(r.draws)
	logp := make([]float64, D*H)
	workers, err := r.newWorkers()
	if err != nil {
		return nil, err
	}
	err = r.forEach(ctx, D, func(wi, d int) error {
		w := workers[wi]
		if len(w.concat) != L*O {
			w.concat = make([]float64, L*O)
			copy(w.concat, r.seq.Y[hw.Start*O:T*O])
			copy(w.concat[(T-hw.Start)*O:], heldOut.Y)
			w.logp = make([]float64, L)
		}
		cat := ssm.Sequence{Obs: O, Y: w.concat}
		if r.exact != nil {
			if _, err := r.exact.SmoothStates(r.draws[d], cat, win, ssm.StateMoments{LogPred: w.logp}); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
		} else {
			k, err := r.bind(w, d)
			if err != nil {
				return err
			}
			w.src.Seed(s.Seed, predictiveScoreStream|uint64(d))
			if _, err := w.st.Run(ctx, k, r.dims, cat, win, pf.StateOutput{LogPred: w.logp}, w.rng); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
		}
		copy(logp[d*H:(d+1)*H], w.logp[L-H:])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: predictive score: %w", err)
	}
	sc := &Score{PerRow: make([]float64, H), ByDraw: make([]float64, D), Draws: D, Exact: r.exact != nil}
	for d := range D {
		for t := range H {
			sc.ByDraw[d] += logp[d*H+t]
		}
	}
	sc.LogScore, sc.SE, sc.ESS = logMeanExp(sc.ByDraw)
	col := make([]float64, D)
	for t := range H {
		for d := range D {
			col[d] = logp[d*H+t]
		}
		sc.PerRow[t], _, _ = logMeanExp(col)
		sc.Pointwise += sc.PerRow[t]
	}
	return sc, nil
}

// logMeanExp returns log((1/n)Σ e^{l_i}), the delta-method standard error
// of that log-mean (sd(e^l)/(√n·mean(e^l))) and the ESS (Σe^l)²/Σe^{2l},
// computed relative to the largest l.
func logMeanExp(l []float64) (lme, se, ess float64) {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, v)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN(), 0
	}
	n := float64(len(l))
	s1, s2 := 0.0, 0.0
	for _, v := range l {
		e := math.Exp(v - m)
		s1 += e
		s2 += e * e
	}
	mean := s1 / n
	lme = m + math.Log(mean)
	ess = s1 * s1 / s2
	se = math.NaN()
	if n > 1 {
		vr := math.Max((s2-n*mean*mean)/(n-1), 0)
		se = math.Sqrt(vr/n) / mean
	}
	return lme, se, ess
}

// LogLik returns an estimate of log p(y | u) over every fitted sequence and
// its standard error: exact (se 0) for a model with an ssm.ExactScorer
// (unless s.Particles); otherwise the log of the mean of 8 independent
// particle-filter estimates, each unbiased for p(y | u), with
// 4·s.PF.N particles (1024 by default) and the delta-method standard
// error of that log-mean.
func (p *Posterior) LogLik(ctx context.Context, u []float64, s StateSettings) (ll, se float64, err error) {
	r, err := p.stateSetup(s, false)
	if err != nil {
		return 0, 0, err
	}
	if len(u) != p.Dim {
		return 0, 0, fmt.Errorf("%w: len(u) = %d, the model has %d parameters", ErrSettings, len(u), p.Dim)
	}
	if ex, ok := p.model.(ssm.ExactScorer); ok && !s.Particles {
		for _, seq := range p.data.Sequences {
			l, err := ex.ExactScore(nil, u, seq, ssm.Full(seq.Len()))
			if err != nil {
				return 0, 0, err
			}
			ll += l
		}
		return ll, 0, nil
	}
	const runs = 8
	lls := make([]float64, runs)
	r.draws = [][]float64{u}
	err = r.forEach(ctx, runs, func(_, i int) error {
		k, err := p.model.Bind(u)
		if err != nil {
			return err
		}
		f, err := pf.New(pf.Settings{N: 4 * r.s.PF.N, Proposal: r.s.PF.Proposal, Resampling: r.s.PF.Resampling})
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(r.s.Seed, loglikStream|uint64(i)))
		for _, seq := range p.data.Sequences {
			res, err := f.Run(ctx, k, r.dims, seq, ssm.Full(seq.Len()), nil, nil, rng)
			if err != nil {
				return err
			}
			lls[i] += res.LogLik
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("sgmcmc: log-likelihood: %w", err)
	}
	ll, se, _ = logMeanExp(lls)
	return ll, se, nil
}

// MeanU returns u(θ̄), the unconstrained point of the posterior mean θ̄ of
// the natural parameters (the point a plug-in log-likelihood is usually
// reported at).
func (p *Posterior) MeanU() ([]float64, error) {
	if p.model == nil {
		return nil, ErrNoModel
	}
	d := len(p.Names)
	theta := make([]float64, d)
	n := 0
	for _, c := range p.Natural {
		for i := 0; i+d <= len(c); i += d {
			n++
			for j := range d {
				theta[j] += (c[i+j] - theta[j]) / float64(n)
			}
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("sgmcmc: the posterior holds no draws")
	}
	u := make([]float64, p.Dim)
	if err := p.model.Unconstrain(u, theta); err != nil {
		return nil, fmt.Errorf("sgmcmc: posterior mean: %w", err)
	}
	return u, nil
}
