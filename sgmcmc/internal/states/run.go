package states

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// errNoDraws is returned for a posterior without a single draw.
var errNoDraws = errors.New("sgmcmc: the posterior holds no draws")

// Settings are the caller's settings with its defaults applied (see
// sgmcmc.StateSettings for each field's meaning): Draws, Block and
// Workers are positive; Buffer is the number of rows (negative: none, and
// 0 means the whole sequence in Forecast and PredictiveScore); End is the
// last state of States. Components must lie in 0..State−1, which the
// caller checks (nil: the default components).
type Settings struct {
	Draws      int
	PF         pf.StateSettings
	Particles  bool
	Start, End int
	Filtered   bool
	Components []int
	Block      int
	Buffer     int
	Workers    int
	Seed       uint64
}

// Streams are the random streams of the computations: draw d of Forecast
// uses Forecast|d, draw d of PredictiveScore Score|d, particle filter i of
// LogLik LogLik|i; States seeds draw d of block b with b<<32|d.
type Streams struct {
	Forecast, Score, LogLik uint64
}

// Input is everything the computations read.
type Input struct {
	Model ssm.Model
	// Chains holds each chain's draws of u, Dim values per draw, one
	// after another.
	Chains [][]float64
	Dim    int
	// Seq is the sequence whose states, forecasts and scores are computed.
	Seq ssm.Sequence
	// Exact lets a model's ssm.StateSmoother replace the particle
	// smoother (unless Settings.Particles).
	Exact    bool
	Settings Settings
	Streams  Streams
}

// Run is the normalised setup shared by the computations.
type Run struct {
	s       Settings
	streams Streams
	model   ssm.Model
	dims    ssm.Dims
	seq     ssm.Sequence
	draws   [][]float64 // u of each posterior draw
	exact   ssm.StateSmoother
	comps   []int
	vol     bool // kernels implement ssm.Volatility
	degen   bool
	method  pf.StateMethod
	M       int
}

// New sets up the computations: the particle smoother's settings, D
// draws evenly thinned from the pooled chains, and what the kernel at the
// first of them offers (volatility, degenerate transition, completed
// states).
func New(in Input) (*Run, error) {
	s := in.Settings
	st, err := pf.NewStates(s.PF)
	if err != nil {
		return nil, err
	}
	s.PF = st.Settings()
	r := &Run{s: s, streams: in.Streams, model: in.Model, dims: in.Model.Dims(), seq: in.Seq, M: s.PF.Paths}
	var pooled [][]float64
	for _, c := range in.Chains {
		for i := 0; i+in.Dim <= len(c); i += in.Dim {
			pooled = append(pooled, c[i:i+in.Dim:i+in.Dim])
		}
	}
	if len(pooled) == 0 {
		return nil, errNoDraws
	}
	D := min(s.Draws, len(pooled))
	r.draws = make([][]float64, D)
	for i := range D {
		r.draws[i] = pooled[i*len(pooled)/D]
	}
	if ex, ok := in.Model.(ssm.StateSmoother); ok && in.Exact && !s.Particles {
		r.exact = ex
	}
	k, err := in.Model.Bind(r.draws[0])
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: posterior draw 0: %w", err)
	}
	_, r.vol = k.(ssm.Volatility)
	_, completer := k.(ssm.StateCompleter)
	if dg, ok := k.(ssm.Degenerate); ok && dg.DegenerateTransition() {
		r.degen = true
	}
	r.method = s.PF.Method
	if r.method == pf.AutoStates {
		r.method = pf.FFBSi
		if r.degen {
			r.method = pf.FixedLag
		}
	}
	switch {
	case s.Components != nil:
		r.comps = slices.Clone(s.Components)
	case completer && r.exact == nil:
		r.comps = []int{0}
	default:
		for c := range r.dims.State {
			r.comps = append(r.comps, c)
		}
	}
	return r, nil
}

// forEach runs job(w, d) for every posterior draw d on the workers; w is
// the worker's index (for its buffers). Errors are joined; the context
// stops the remaining jobs.
func (r *Run) forEach(ctx context.Context, n int, job func(w, d int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range min(r.s.Workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				if err := ctx.Err(); err != nil {
					errs[d] = err
					continue
				}
				errs[d] = job(w, d)
			}
		}()
	}
	for d := range n {
		next <- d
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// worker is one goroutine's reusable state.
type worker struct {
	st     *pf.States
	k      ssm.Kernel
	src    *rand.PCG
	rng    *rand.Rand
	out    pf.StateOutput
	mom    ssm.StateMoments
	x, x2  []float64
	y      []float64
	logp   []float64
	concat []float64
}

func (r *Run) newWorkers() ([]*worker, error) {
	ws := make([]*worker, r.s.Workers)
	for i := range ws {
		st, err := pf.NewStates(r.s.PF)
		if err != nil {
			return nil, err
		}
		src := rand.NewPCG(0, 0)
		ws[i] = &worker{st: st, src: src, rng: rand.New(src)}
	}
	return ws, nil
}

// bind returns the kernel at draw d, rebinding the worker's kernel in place
// when it can.
func (r *Run) bind(w *worker, d int) (ssm.Kernel, error) {
	u := r.draws[d]
	if rb, ok := w.k.(ssm.Rebinder); ok && w.k != nil {
		if err := rb.Rebind(u); err != nil {
			return nil, fmt.Errorf("posterior draw %d: %w", d, err)
		}
		return w.k, nil
	}
	k, err := r.model.Bind(u)
	if err != nil {
		return nil, fmt.Errorf("posterior draw %d: %w", d, err)
	}
	w.k = k
	return k, nil
}
