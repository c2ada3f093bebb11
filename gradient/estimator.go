package gradient

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Choice selects how a sequence of a multi-sequence data set is picked for
// each subsequence draw.
type Choice int

const (
	// ByLength picks sequence j with probability T_j / Σ T (zero value).
	ByLength Choice = iota
	// UniformSequence picks each sequence with probability 1/J.
	UniformSequence
	// AllSequences evaluates every sequence at every call (one draw per
	// sequence, summed, Draws ignored): no sequence-choice noise, at J
	// times the cost. With Sampling Full it is the full-data gradient of
	// the whole data set.
	AllSequences
)

// ErrSettings reports invalid estimator settings.
var ErrSettings = errors.New("gradient: invalid settings")

// ErrNoExact is returned when Settings.Exact is set for a model that does
// not implement ssm.ExactScorer.
var ErrNoExact = errors.New("gradient: model has no exact (Kalman) scorer")

// Settings configures an Estimator. The zero value of each field is a
// documented default.
type Settings struct {
	// Subsequence sampling: S, B and the scheme (Uniform by default).
	Subsequencer
	// PF configures the particle filter (N, resampling, smoother, proposal).
	PF pf.Settings
	// Exact uses the model's ssm.ExactScorer (the Kalman smoother for the
	// LGSSM) instead of a particle filter: the N = ∞ estimator ĝ(S, B).
	Exact bool
	// Grid, when Grid.Nodes > 0, filters each window with a pf.GridFilter
	// on these nodes instead of a particle filter (scalar states with a
	// transition density; pf.GridFor chooses one): deterministic, so
	// g_S(u) is smooth in u, with quadrature error only. PF is then
	// unused. Exact takes precedence.
	Grid pf.Grid
	// Choice picks the sequence of a multi-sequence data set.
	Choice Choice
	// Draws is the number of subsequences averaged per gradient (0 → 1).
	Draws int
	// Workers evaluates the draws on this many goroutines (0 → 1). Results
	// are bit-identical for any value: child generators are seeded from
	// the caller's generator in draw order before workers start, and the
	// reduction runs in draw order.
	Workers int
}

// Estimator computes the buffered stochastic gradient g^PF(S, B, N) of the
// log-likelihood (and, through Grad, of the log-posterior) in the
// unconstrained parameters u. It owns particle filter workspaces and is not
// safe for concurrent use: use one per chain.
type Estimator struct {
	model ssm.Model
	dims  ssm.Dims
	data  ssm.Dataset
	set   Settings
	exact ssm.ExactScorer

	seqProb []float64 // Pr(sequence j)
	seqCum  []float64 // cumulative, for drawing
	slots   []slot
	filters []*pf.Filter
	grids   []*pf.GridFilter
	scores  []score // one Additive per worker, pointed at the bound kernel
	prior   []float64
	info    Info
	kernel  ssm.Kernel // reused through ssm.Rebinder when the model offers it

	// noGrad asks the exact scorer for the log-likelihood only
	// (LogPosterior); scratch receives the unused gradient otherwise.
	noGrad  bool
	scratch []float64
}

// slot is one subsequence draw of a gradient evaluation.
type slot struct {
	seq    int
	window ssm.Window
	src    *rand.PCG
	rng    *rand.Rand
	grad   []float64
	loglik float64
	minESS float64
	err    error
}

// Info describes the last gradient evaluation.
type Info struct {
	Windows  []ssm.Window // one per draw (slices reused between calls)
	Sequence []int        // sequence index of each draw
	LogLik   []float64    // window log-likelihood estimates
	MinESS   []float64    // smallest ESS over each window (NaN for Exact)
}

// New validates the model, the data and the settings and returns an
// estimator. Every sequence must fit the subsequence and buffer lengths
// and match the model's observation dimension.
func New(m ssm.Model, data ssm.Dataset, s Settings) (*Estimator, error) {
	if m == nil {
		return nil, errors.New("gradient: nil model")
	}
	if len(data.Sequences) == 0 {
		return nil, fmt.Errorf("%w: empty data set", ssm.ErrData)
	}
	d := m.Dims()
	if data.IDs != nil && len(data.IDs) != len(data.Sequences) {
		return nil, fmt.Errorf("gradient: %w: %d ids for %d sequences", ssm.ErrData, len(data.IDs), len(data.Sequences))
	}
	total := 0
	for j, seq := range data.Sequences {
		if err := seq.Validate(d.Obs); err != nil {
			return nil, fmt.Errorf("gradient: sequence %d: %w", j, err)
		}
		if err := s.Subsequencer.Check(seq.Len()); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", j, err)
		}
		total += seq.Len()
	}
	if s.Draws < 0 || s.Workers < 0 {
		return nil, fmt.Errorf("%w: Draws = %d and Workers = %d must be non-negative", ErrSettings, s.Draws, s.Workers)
	}
	if s.Draws == 0 {
		s.Draws = 1
	}
	if s.Choice == AllSequences {
		s.Draws = len(data.Sequences)
	} else if s.Choice != ByLength && s.Choice != UniformSequence {
		return nil, fmt.Errorf("%w: unknown sequence choice %d", ErrSettings, s.Choice)
	}
	if s.Workers == 0 {
		s.Workers = 1
	}
	s.Workers = min(s.Workers, s.Draws)
	e := &Estimator{model: m, dims: d, data: data, set: s, prior: make([]float64, d.Param)}
	if s.Exact {
		ex, ok := m.(ssm.ExactScorer)
		if !ok {
			return nil, ErrNoExact
		}
		e.exact = ex
	} else if s.Grid.Nodes > 0 {
		if d.State != 1 {
			return nil, fmt.Errorf("%w: %w: state dimension %d is not 1", ErrSettings, pf.ErrGrid, d.State)
		}
		for w := 0; w < s.Workers; w++ {
			g, err := pf.NewGridFilter(s.Grid)
			if err != nil {
				return nil, err
			}
			e.grids = append(e.grids, g)
		}
		e.scores = make([]score, s.Workers)
	} else {
		for w := 0; w < s.Workers; w++ {
			f, err := pf.New(s.PF)
			if err != nil {
				return nil, err
			}
			e.filters = append(e.filters, f)
		}
		e.scores = make([]score, s.Workers)
	}
	J := len(data.Sequences)
	e.seqProb = make([]float64, J)
	e.seqCum = make([]float64, J)
	cum := 0.0
	for j, seq := range data.Sequences {
		p := 1 / float64(J)
		switch s.Choice {
		case ByLength:
			p = float64(seq.Len()) / float64(total)
		case AllSequences:
			p = 1 / float64(J) // scale 1/(Draws·p) = 1: a plain sum
		}
		e.seqProb[j] = p
		cum += p
		e.seqCum[j] = cum
	}
	e.slots = make([]slot, s.Draws)
	for i := range e.slots {
		e.slots[i].src = rand.NewPCG(0, 0)
		e.slots[i].rng = rand.New(e.slots[i].src)
		e.slots[i].grad = make([]float64, d.Param)
	}
	e.info = Info{
		Windows:  make([]ssm.Window, s.Draws),
		Sequence: make([]int, s.Draws),
		LogLik:   make([]float64, s.Draws),
		MinESS:   make([]float64, s.Draws),
	}
	return e, nil
}

// Dims returns the model's dimensions.
func (e *Estimator) Dims() ssm.Dims { return e.dims }

// Grad stores an estimate of ∇_u log π(u | y) = g^PF(S, B, N) + ∇_u log π(u)
// in grad and returns a noisy log-posterior: the sum of the window
// log-likelihood estimates, each divided by its draw probability, plus the
// log prior, when Sampling is Full, and NaN otherwise (a subsequence
// log-likelihood is not an estimate of the full one). It satisfies
// sgmcmc.Estimator.
func (e *Estimator) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	ll, err := e.Likelihood(ctx, grad, u, rng)
	if err != nil {
		return math.NaN(), err
	}
	lp := e.model.LogPrior(e.prior, u)
	for i, v := range e.prior {
		grad[i] += v
	}
	if math.IsInf(lp, -1) || math.IsNaN(lp) {
		return lp, fmt.Errorf("gradient: log prior is %v at u = %v", lp, u)
	}
	return ll + lp, nil
}

// LogPosterior returns the log posterior at u as Grad does, without its
// gradient: with Settings.Exact the model's exact scorer then runs on
// values only (GARCH's quadrature filter: one pass, about a quarter of a
// score's work, 139 ms against 586 ms on the S&P 500 returns, go test
// -run '^$' -bench GARCHQuad -benchtime 5x ./models; its σ² node filter:
// about half), with the other filters it is
// Grad's value with the gradient discarded. It is NaN unless Sampling is
// Full.
func (e *Estimator) LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	if e.scratch == nil {
		e.scratch = make([]float64, e.dims.Param)
	}
	e.noGrad = true
	defer func() { e.noGrad = false }()
	return e.Grad(ctx, e.scratch, u, rng)
}

// Likelihood stores the estimate g^PF(S, B, N) of ∇_u log p(y | u) in grad
// and returns the noisy log-likelihood described at Grad.
func (e *Estimator) Likelihood(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	if len(grad) != e.dims.Param || len(u) != e.dims.Param {
		panic(fmt.Sprintf("gradient: len(grad) = %d, len(u) = %d, want %d", len(grad), len(u), e.dims.Param))
	}
	// Draw every subsequence and child seed before any work starts, so the
	// result does not depend on the number of workers.
	for i := range e.slots {
		sl := &e.slots[i]
		sl.seq = e.pickSequence(i, rng)
		e.set.Subsequencer.Draw(&sl.window, e.data.Sequences[sl.seq].Len(), rng)
		sl.src.Seed(rng.Uint64(), rng.Uint64())
	}
	k, err := e.bind(u)
	if err != nil {
		return math.NaN(), err
	}
	if e.set.Workers <= 1 {
		for i := range e.slots {
			e.eval(ctx, 0, i, k, u)
		}
	} else {
		var wg sync.WaitGroup
		for w := 0; w < e.set.Workers; w++ {
			wg.Add(1)
			go func(w int, k ssm.Kernel) {
				defer wg.Done()
				for i := w; i < len(e.slots); i += e.set.Workers {
					e.eval(ctx, w, i, k, u)
				}
			}(w, k)
		}
		wg.Wait()
	}
	clear(grad)
	ll := 0.0
	inv := 1 / float64(len(e.slots))
	for i := range e.slots {
		sl := &e.slots[i]
		if sl.err != nil {
			return math.NaN(), fmt.Errorf("gradient: sequence %d window [%d,%d): %w", sl.seq, sl.window.Start, sl.window.End, sl.err)
		}
		scale := inv / e.seqProb[sl.seq]
		for j, v := range sl.grad {
			grad[j] += scale * v
		}
		ll += scale * sl.loglik
		e.info.Windows[i] = sl.window
		e.info.Sequence[i] = sl.seq
		e.info.LogLik[i] = sl.loglik
		e.info.MinESS[i] = sl.minESS
	}
	if e.set.Sampling != Full {
		ll = math.NaN()
	}
	return ll, nil
}

// bind returns the kernel at u, re-targeting the previous one in place when
// it is an ssm.Rebinder, or nil for the exact estimator (no kernel).
func (e *Estimator) bind(u []float64) (ssm.Kernel, error) {
	if e.exact != nil {
		return nil, nil
	}
	if r, ok := e.kernel.(ssm.Rebinder); ok {
		if err := r.Rebind(u); err != nil {
			return nil, err
		}
		return e.kernel, nil
	}
	k, err := e.model.Bind(u)
	if err != nil {
		return nil, err
	}
	e.kernel = k
	return k, nil
}

func (e *Estimator) pickSequence(i int, rng *rand.Rand) int {
	if e.set.Choice == AllSequences {
		return i
	}
	if len(e.seqCum) == 1 {
		return 0
	}
	v := rng.Float64()
	for j, c := range e.seqCum {
		if v < c {
			return j
		}
	}
	return len(e.seqCum) - 1
}

// eval computes draw i on worker w's filter.
func (e *Estimator) eval(ctx context.Context, w, i int, k ssm.Kernel, u []float64) {
	sl := &e.slots[i]
	seq := e.data.Sequences[sl.seq]
	if e.exact != nil {
		clear(sl.grad)
		// An exact scorer's pass cannot be interrupted (ExactScore takes no
		// context), so a cancelled or expired context is checked before
		// each: on a long series one pass is the granularity of a time
		// budget (GARCH at T = 10⁶: 7–24 s), not a whole Newton step of
		// p + 1 of them.
		if sl.err = ctx.Err(); sl.err != nil {
			sl.loglik = math.NaN()
			return
		}
		g := sl.grad
		if e.noGrad {
			g = nil
		}
		sl.loglik, sl.err = e.exact.ExactScore(g, u, seq, sl.window)
		sl.minESS = math.NaN()
		return
	}
	sc := &e.scores[w]
	sc.k, sc.p = k, e.dims.Param
	if e.grids != nil {
		clear(sl.grad)
		res, err := e.grids[w].Run(ctx, k, u, e.dims, seq, sl.window, sc, sl.grad)
		// Mass on the outermost nodes is lost: refuse the window rather
		// than return its biased gradient. (Widening the grid in place was
		// tried: on returns with every other day 0 the chains went on to
		// σ = 17, τ = 0.01 and 2000-node grids; sgmcmc.Fit falls back to
		// particles instead.)
		if err == nil && res.Edge > maxGridEdge {
			err = &GridEdgeError{U: slices.Clone(u), Edge: res.Edge, Grid: e.grids[w].Grid()}
		}
		sl.loglik, sl.minESS, sl.err = res.LogLik, math.NaN(), err
		return
	}
	res, err := e.filters[w].Run(ctx, k, e.dims, seq, sl.window, sc, sl.grad, sl.rng)
	sl.loglik, sl.minESS, sl.err = res.LogLik, res.MinESS, err
}

// score is the Fisher-identity statistic (Kernel.AddScore) as a pf.Additive.
// The estimator keeps one per worker and passes a pointer, so no value is
// boxed per call.
type score struct {
	k ssm.Kernel
	p int
}

func (s *score) Dim() int { return s.p }
func (s *score) Add(h []float64, w float64, y, x, prev []float64) {
	s.k.AddScore(h, w, y, x, prev)
}

// Fixed computes the likelihood part of the gradient for one given window
// of sequence j (no subsequence draw): Σ_{t∈[KeepStart,KeepEnd)} w_t
// E[h_t | y_window] by the particle filter, or exactly with Settings.Exact.
// It returns the window log-likelihood estimate. Experiments that study
// the estimator for a fixed subsequence use it. The window is used
// exactly as given (its buffers need not be Settings.B long); an invalid
// one is an ssm.ErrWindow error naming the sequence. rng may be nil with
// Exact; for the particle filter it is an ErrSettings error, as are grad
// or u not of length Dims().Param (nothing is truncated).
func (e *Estimator) Fixed(ctx context.Context, grad, u []float64, j int, w ssm.Window, rng *rand.Rand) (float64, error) {
	if j < 0 || j >= len(e.data.Sequences) {
		return math.NaN(), fmt.Errorf("gradient: sequence index %d out of range [0,%d)", j, len(e.data.Sequences))
	}
	if len(grad) != e.dims.Param || len(u) != e.dims.Param {
		return math.NaN(), fmt.Errorf("%w: Fixed: len(grad) = %d, len(u) = %d, want %d", ErrSettings, len(grad), len(u), e.dims.Param)
	}
	if !e.Deterministic() && rng == nil {
		return math.NaN(), fmt.Errorf("%w: Fixed needs a random generator for the particle filter (rng is nil)", ErrSettings)
	}
	seq := e.data.Sequences[j]
	if err := w.Validate(seq.Len()); err != nil {
		return math.NaN(), fmt.Errorf("gradient: Fixed: sequence %d of length %d: %w", j, seq.Len(), err)
	}
	sl := &e.slots[0]
	saved := sl.window.Weights
	sl.seq, sl.window = j, w
	if !e.Deterministic() {
		sl.src.Seed(rng.Uint64(), rng.Uint64())
	}
	k, err := e.bind(u)
	if err != nil {
		return math.NaN(), err
	}
	e.eval(ctx, 0, 0, k, u)
	sl.window = ssm.Window{Weights: saved} // keep our buffer, not the caller's weights
	if sl.err != nil {
		return math.NaN(), sl.err
	}
	copy(grad, sl.grad)
	return sl.loglik, nil
}

// GridEdgeError reports a window whose grid filter put more than 1e−4 of
// its mass on the grid's outermost nodes at U: the grid is too narrow
// there (sgmcmc.Fit widens it to cover U, or falls back to particles). It
// wraps pf.ErrGrid.
type GridEdgeError struct {
	U    []float64 // the parameters (unconstrained)
	Edge float64   // the largest mass on an outermost node
	Grid pf.Grid   // the grid
}

func (e *GridEdgeError) Error() string {
	return fmt.Sprintf("%v: filter mass %.2g on the outermost nodes of [%.3g, %.3g] at u = %.4g: the grid is too narrow here",
		pf.ErrGrid, e.Edge, e.Grid.Lo, e.Grid.Hi, e.U)
}

func (e *GridEdgeError) Unwrap() error { return pf.ErrGrid }

// maxGridEdge is the filter mass on a grid's outermost nodes above which
// a window's grid gradient is refused: the mass beyond the grid is lost.
const maxGridEdge = 1e-4

// Deterministic reports whether a window's gradient involves no random
// numbers (Settings.Exact or Settings.Grid): only the subsequence draw is
// random, and Fixed and Tile accept a nil generator.
func (e *Estimator) Deterministic() bool { return e.exact != nil || e.grids != nil }

// Last describes the most recent evaluation. Its slices are reused by the
// next call.
func (e *Estimator) Last() Info { return e.info }
