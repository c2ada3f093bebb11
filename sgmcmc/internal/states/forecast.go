package states

import (
	"context"
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Forecast is sgmcmc.ForecastSummary without the sequence's index: entry
// h−1 of every band is time T+h.
type Forecast struct {
	Origin, Horizon int
	Components      []int
	States, Obs     []Band
	Volatility      *Band
	Draws, Paths    int
	Exact           bool
}

// Forecast returns the h-step-ahead predictive laws of the states, the
// observations and (for volatility models) the volatility, for h = 1..H
// after the end of the sequence: at each draw M states x_T from the
// filtering law (a particle filter over the last Buffer rows, 0 meaning
// all; exact Gaussian draws for a scalar model with an ssm.StateSmoother)
// carried forward by the kernel's transition, with an observation drawn
// from the emission at every step.
func (r *Run) Forecast(ctx context.Context, H int) (*Forecast, error) {
	s := r.s
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
		w.src.Seed(s.Seed, r.streams.Forecast|uint64(d))
		if len(w.x) != M*S {
			w.x, w.x2, w.y = make([]float64, M*S), make([]float64, M*S), make([]float64, O)
		}
		if err := r.forecastStart(ctx, w, k, d, win); err != nil {
			return err
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
	out := &Forecast{Origin: T, Horizon: H, Components: r.comps, Draws: D, Paths: M, Exact: r.exact != nil}
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

// forecastStart puts M draws of x_T from the filtering law at posterior
// draw d into w.x.
func (r *Run) forecastStart(ctx context.Context, w *worker, k ssm.Kernel, d int, win ssm.Window) error {
	M, S := r.M, r.dims.State
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
		return nil
	}
	if len(w.out.Filtered) != M*S || w.out.Smoothed != nil {
		w.out = pf.StateOutput{Filtered: make([]float64, M*S)}
	}
	if _, err := w.st.Run(ctx, k, r.dims, r.seq, win, w.out, w.rng); err != nil {
		return fmt.Errorf("posterior draw %d: %w", d, err)
	}
	copy(w.x, w.out.Filtered)
	return nil
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
