package states

import (
	"context"
	"fmt"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Summary is sgmcmc.StateSummary without the sequence's index: entry i of
// every band is state First+i.
type Summary struct {
	First                    int
	Components               []int
	Smoothed, Filtered       []Band
	SmoothedVol, FilteredVol *Band
	Draws, Paths             int
	Exact                    bool
	Method                   pf.StateMethod
}

// States returns the posterior-integrated smoothed (and, with Filtered,
// filtered) laws of the states Start..End, per component, and of the
// volatility for kernels with one (not on the exact path), computed in
// blocks of at most Block states, each filtered with Buffer rows on both
// sides. With emit non-nil each block goes to emit as soon as it is
// computed and the result holds only the metadata (empty bands).
func (r *Run) States(ctx context.Context, emit func(*Summary) error) (*Summary, error) {
	s := r.s
	T := r.seq.Len()
	buf := max(s.Buffer, 0)
	D, M := len(r.draws), r.M
	out := &Summary{First: s.Start, Components: r.comps, Draws: D, Exact: r.exact != nil}
	if r.exact == nil {
		out.Paths, out.Method = M, r.method
	}
	nc := len(r.comps)
	out.Smoothed = make([]Band, nc)
	if s.Filtered {
		out.Filtered = make([]Band, nc)
	}
	vol := r.vol && r.exact == nil
	if vol {
		out.SmoothedVol = &Band{}
		if s.Filtered {
			out.FilteredVol = &Band{}
		}
	}
	workers, err := r.newWorkers()
	if err != nil {
		return nil, err
	}
	for a := s.Start; a <= s.End; a += s.Block {
		b := min(a+s.Block-1, s.End)
		win := ssm.Window{Start: max(0, a-buf), End: min(T, b+buf), KeepStart: a, KeepEnd: b}
		if win.End < b || win.End <= win.Start {
			win.End = min(T, max(b, win.Start+1))
		}
		blk, err := r.stateBlock(ctx, workers, win, out)
		if err != nil {
			return nil, err
		}
		if emit != nil {
			if err := emit(blk); err != nil {
				return nil, err
			}
			continue
		}
		for j := range blk.Smoothed {
			out.Smoothed[j].appendBand(blk.Smoothed[j])
			if s.Filtered {
				out.Filtered[j].appendBand(blk.Filtered[j])
			}
		}
		if vol {
			out.SmoothedVol.appendBand(*blk.SmoothedVol)
			if s.Filtered {
				out.FilteredVol.appendBand(*blk.FilteredVol)
			}
		}
	}
	return out, nil
}

// statePools are one block's pooled values: per state component, smoothed
// and (with Filtered) filtered, and the volatility's (nil: none).
type statePools struct {
	sm, fi     []*pool
	smV, fiV   *pool
	n, per     int
	filtered   bool
	volatility bool
}

// stateBlock summarises the states win.KeepStart..win.KeepEnd over every
// posterior draw, filtering the rows of win; out holds the summary's
// metadata.
func (r *Run) stateBlock(ctx context.Context, workers []*worker, win ssm.Window, out *Summary) (*Summary, error) {
	s, a := r.s, win.KeepStart
	D := len(r.draws)
	sp := &statePools{n: win.KeepEnd - a + 1, per: D * r.M, filtered: s.Filtered, volatility: r.vol && r.exact == nil}
	if r.exact != nil {
		sp.per = 2 * D
	}
	mk := func() []*pool {
		ps := make([]*pool, len(r.comps))
		for j := range ps {
			ps[j] = newPool(sp.n, sp.per, r.exact != nil)
		}
		return ps
	}
	sp.sm = mk()
	if s.Filtered {
		sp.fi = mk()
	}
	if sp.volatility {
		sp.smV = newPool(sp.n, sp.per, false)
		if s.Filtered {
			sp.fiV = newPool(sp.n, sp.per, false)
		}
	}
	block := uint64(a / s.Block)
	err := r.forEach(ctx, D, func(wi, d int) error {
		if r.exact != nil {
			return r.exactDraw(workers[wi], d, win, sp)
		}
		return r.particleDraw(ctx, workers[wi], d, win, sp, block)
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: states: %w", err)
	}
	nc := len(r.comps)
	blk := &Summary{First: a, Components: r.comps, Draws: D, Paths: out.Paths, Exact: out.Exact, Method: out.Method}
	blk.Smoothed = make([]Band, nc)
	for j := range nc {
		blk.Smoothed[j] = sp.sm[j].summarise(s.Workers)
	}
	if s.Filtered {
		blk.Filtered = make([]Band, nc)
		for j := range nc {
			blk.Filtered[j] = sp.fi[j].summarise(s.Workers)
		}
	}
	if sp.volatility {
		v := sp.smV.summarise(s.Workers)
		blk.SmoothedVol = &v
		if s.Filtered {
			f := sp.fiV.summarise(s.Workers)
			blk.FilteredVol = &f
		}
	}
	return blk, nil
}

// exactDraw puts the exact smoothed (and filtered) moments at posterior
// draw d into the block's pools.
func (r *Run) exactDraw(w *worker, d int, win ssm.Window, sp *statePools) error {
	n, per, S := sp.n, sp.per, r.dims.State
	if len(w.mom.SmoothMean) != n*S {
		w.mom = ssm.StateMoments{SmoothMean: make([]float64, n*S), SmoothVar: make([]float64, n*S)}
		if sp.filtered {
			w.mom.FilterMean, w.mom.FilterVar = make([]float64, n*S), make([]float64, n*S)
		}
	}
	if _, err := r.exact.SmoothStates(r.draws[d], r.seq, win, w.mom); err != nil {
		return fmt.Errorf("posterior draw %d: %w", d, err)
	}
	put := func(ps []*pool, mean, vr []float64) {
		for j, c := range r.comps {
			g := ps[j].g
			for i := range n {
				g[i*per+2*d], g[i*per+2*d+1] = mean[i*S+c], vr[i*S+c]
			}
		}
	}
	put(sp.sm, w.mom.SmoothMean, w.mom.SmoothVar)
	if sp.filtered {
		put(sp.fi, w.mom.FilterMean, w.mom.FilterVar)
	}
	return nil
}

// particleDraw puts the particle smoother's (and filter's) state draws at
// posterior draw d into the block's pools.
func (r *Run) particleDraw(ctx context.Context, w *worker, d int, win ssm.Window, sp *statePools, block uint64) error {
	n, per, S, M := sp.n, sp.per, r.dims.State, r.M
	k, err := r.bind(w, d)
	if err != nil {
		return err
	}
	if len(w.out.Smoothed) != n*M*S {
		w.out = pf.StateOutput{Smoothed: make([]float64, n*M*S)}
		if sp.filtered {
			w.out.Filtered = make([]float64, n*M*S)
		}
	}
	w.src.Seed(r.s.Seed, block<<32|uint64(d))
	if _, err := w.st.Run(ctx, k, r.dims, r.seq, win, w.out, w.rng); err != nil {
		return fmt.Errorf("posterior draw %d: %w", d, err)
	}
	vk, _ := k.(ssm.Volatility)
	put := func(ps []*pool, vp *pool, x []float64) {
		for i := range n {
			for m := range M {
				row := x[(i*M+m)*S : (i*M+m+1)*S]
				at := i*per + d*M + m
				for j, c := range r.comps {
					ps[j].v[at] = float32(row[c])
				}
				if vp != nil {
					vp.v[at] = float32(vk.Volatility(row))
				}
			}
		}
	}
	put(sp.sm, sp.smV, w.out.Smoothed)
	if sp.filtered {
		put(sp.fi, sp.fiV, w.out.Filtered)
	}
	return nil
}
