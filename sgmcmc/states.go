package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/states"
)

// Latent states, forecasts and predictive scores integrated over the
// posterior: the public types and methods are here, the computation (the
// mixture over D thinned posterior draws of each quantity's law given a
// draw, and its mean, sd and quantiles) in package internal/states.

// ErrNoModel is returned by the state methods of a Posterior that was not
// built by Fit (it does not know the model and data).
var ErrNoModel = errors.New("sgmcmc: the posterior carries no model and data (it was not built by Fit)")

// Defaults of StateSettings.
const (
	DefaultStateDraws  = 200
	DefaultStateBlock  = 2048
	DefaultStateBuffer = 250
)

// StateSettings configures Posterior.States, Forecast, PredictiveScore and
// LogLik. Every zero value is a documented default.
type StateSettings struct {
	// Draws is the number D of posterior draws integrated over, evenly
	// thinned from the pooled chains (0: DefaultStateDraws; at most the
	// number kept).
	Draws int
	// PF configures the particle filter and smoother run at each draw
	// (zero value: N = 256 particles, M = 10 draws of each state, FFBSi, or
	// fixed-lag for degenerate transitions such as GARCH's, the kernel's
	// guided proposal when it has one). PF.Paths is M.
	PF pf.StateSettings
	// Particles uses the particle smoother even for a model with an exact
	// ssm.StateSmoother.
	Particles bool
	// Sequence is the index of the fitted sequence (0: the first).
	Sequence int
	// Start and End select the states t = Start..End reported by States
	// (state t follows observation row t−1; state 0 is x_0); End 0 means
	// the sequence's length T.
	Start, End int
	// Filtered also summarises the filtering laws p(x_t | y_1..y_t)
	// (States).
	Filtered bool
	// Components lists the state components summarised (nil: all of them,
	// except for models whose kernel is an ssm.StateCompleter, whose rows
	// carry derived quantities after the random part: component 0 only).
	Components []int
	// Block bounds the states computed at once: longer ranges are
	// processed block by block, each filtered with Buffer rows on each
	// side (0: DefaultStateBlock). Memory is O(Block·D·M) besides the
	// returned summaries.
	Block int
	// Buffer is the number of rows filtered before (and, in States, after)
	// the rows a computation needs, from ν_0 at the first: in States, at
	// the edges of blocks (0: DefaultStateBuffer); in Forecast and
	// PredictiveScore, before the forecast origin (0: the whole
	// sequence). Negative means none.
	Buffer int
	// Emit, when non-nil, makes States stream: each block's summary is
	// passed to Emit as soon as it is computed and States returns only
	// the metadata (empty bands), so memory does not grow with the range.
	Emit func(*StateSummary) error
	// Workers is the number of goroutines (0: GOMAXPROCS).
	Workers int
	// Seed seeds every random number; results do not depend on Workers.
	Seed uint64
}

// Band summarises a scalar quantity at consecutive times: mean, sd and the
// 5/50/95% quantiles of its posterior-integrated law, one entry per time.
type Band struct {
	Mean, SD, Q05, Q50, Q95 []float64
}

// Len returns the number of times.
func (b Band) Len() int { return len(b.Mean) }

// StateSummary is the posterior-integrated law of the latent states: entry
// i of every band is state First+i.
type StateSummary struct {
	Sequence   int
	First      int   // state index of entry 0
	Components []int // the state components of Smoothed and Filtered, in order
	// Smoothed[j] summarises p(x_t,c | y_1..y_T) for c = Components[j].
	Smoothed []Band
	// Filtered[j] summarises p(x_t,c | y_1..y_t) (nil unless
	// StateSettings.Filtered).
	Filtered []Band
	// SmoothedVol and FilteredVol summarise the volatility (ssm.Volatility:
	// τe^{x_t/2} for the SVM, σ_t for GARCH); nil for models without one
	// and on the exact path.
	SmoothedVol, FilteredVol *Band
	Draws                    int  // posterior draws D
	Paths                    int  // draws M per posterior draw (0 on the exact path)
	Exact                    bool // moments from the model's ssm.StateSmoother
	Method                   pf.StateMethod
}

// Len returns the number of states summarised.
func (s *StateSummary) Len() int {
	if len(s.Smoothed) == 0 {
		return 0
	}
	return s.Smoothed[0].Len()
}

// stateRun checks s, applies its defaults and sets up the computation on
// sequence s.Sequence; exact lets a model's ssm.StateSmoother replace the
// particle smoother. The checks run in this order so that the first
// error of several stays the one reported.
func (p *Posterior) stateRun(s StateSettings, exact bool) (*states.Run, StateSettings, error) {
	if p.model == nil {
		return nil, s, ErrNoModel
	}
	switch {
	case s.Draws < 0 || s.Block < 0 || s.Workers < 0:
		return nil, s, badState("Draws = %d, Block = %d and Workers = %d must not be negative", s.Draws, s.Block, s.Workers)
	case s.Sequence < 0 || s.Sequence >= len(p.data.Sequences):
		return nil, s, badState("Sequence = %d: the posterior was fitted to %d sequences", s.Sequence, len(p.data.Sequences))
	}
	if s.Draws == 0 {
		s.Draws = DefaultStateDraws
	}
	if s.Block == 0 {
		s.Block = DefaultStateBlock
	}
	if s.Workers == 0 {
		s.Workers = runtime.GOMAXPROCS(0)
	}
	seq := p.data.Sequences[s.Sequence]
	if s.End == 0 {
		s.End = seq.Len()
	}
	r, err := states.New(states.Input{
		Model: p.model, Chains: p.U, Dim: p.Dim, Seq: seq, Exact: exact,
		Settings: states.Settings{
			Draws: s.Draws, PF: s.PF, Particles: s.Particles, Start: s.Start, End: s.End, Filtered: s.Filtered,
			Components: s.Components, Block: s.Block, Buffer: s.Buffer, Workers: s.Workers, Seed: s.Seed,
		},
		Streams: states.Streams{Forecast: forecastStream, Score: predictiveScoreStream, LogLik: loglikStream},
	})
	if err != nil {
		return nil, s, err
	}
	for _, c := range s.Components {
		if S := p.model.Dims().State; c < 0 || c >= S {
			return nil, s, badState("state component %d: the model's state has %d", c, S)
		}
	}
	return r, s, nil
}

// badState returns an error of the state methods' settings.
func badState(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
}

// States returns the posterior-integrated smoothed (and, with
// s.Filtered, filtered) laws of the states t = s.Start..s.End of sequence
// s.Sequence, per state component (s.Components), and of the volatility
// for models whose kernel implements ssm.Volatility.
//
// At each of D thinned posterior draws it runs pf.States (FFBSi, or
// fixed-lag smoothing for degenerate transitions) over the states' rows,
// in blocks of at most s.Block states each filtered with s.Buffer rows on
// both sides as the buffered gradient does; a model with an
// ssm.StateSmoother gets exact Gaussian moments instead (unless
// s.Particles). With s.Emit set, blocks stream out through it instead of
// accumulating. The cost is O(D·N·(T + 2·Buffer·blocks)) filter steps
// plus O(D·M) backward draws per state; the memory O(Block·D·M) floats
// plus the returned O(T) summaries.
func (p *Posterior) States(ctx context.Context, s StateSettings) (*StateSummary, error) {
	if s.Buffer == 0 {
		s.Buffer = DefaultStateBuffer
	}
	r, s, err := p.stateRun(s, true)
	if err != nil {
		return nil, err
	}
	if T := p.data.Sequences[s.Sequence].Len(); s.Start < 0 || s.End > T || s.Start > s.End {
		return nil, fmt.Errorf("%w: states %d..%d are not inside 0..%d", ErrSettings, s.Start, s.End, T)
	}
	var emit func(*states.Summary) error
	if s.Emit != nil {
		emit = func(b *states.Summary) error { return s.Emit(stateSummary(s.Sequence, b)) }
	}
	out, err := r.States(ctx, emit)
	if err != nil {
		return nil, err
	}
	return stateSummary(s.Sequence, out), nil
}

// stateSummary is b as the public type.
func stateSummary(seq int, b *states.Summary) *StateSummary {
	return &StateSummary{
		Sequence: seq, First: b.First, Components: b.Components,
		Smoothed: bands(b.Smoothed), Filtered: bands(b.Filtered),
		SmoothedVol: bandPtr(b.SmoothedVol), FilteredVol: bandPtr(b.FilteredVol),
		Draws: b.Draws, Paths: b.Paths, Exact: b.Exact, Method: b.Method,
	}
}

// bands converts bands to the public type (nil stays nil).
func bands(b []states.Band) []Band {
	if b == nil {
		return nil
	}
	out := make([]Band, len(b))
	for i, x := range b {
		out[i] = Band(x)
	}
	return out
}

func bandPtr(b *states.Band) *Band {
	if b == nil {
		return nil
	}
	v := Band(*b)
	return &v
}
