package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Latent states, forecasts and predictive scores integrated over the
// posterior.
//
// For a thinned set of posterior draws u_1..u_D, each quantity q (a state
// component x_t,c, a volatility, a forecast y_T+h) is summarised by its
// posterior-integrated (predictive) law
//
//	p(q | y) = (1/D) Σ_d p(q | y, u_d),
//
// a mixture over the draws. Each p(q | y, u_d) is represented by M draws
// from a particle smoother, filter or simulation at u_d (pf.States), or,
// for models with an exact ssm.StateSmoother (the LGSSM), by its Gaussian
// moments; the summary reports the mixture's mean, sd and 5/50/95%
// quantiles: for draws, the pooled D·M values; for Gaussians, the mean
// (1/D)Σ m_d, the variance (1/D)Σ(v_d + m_d²) − mean², and quantiles
// solving (1/D)Σ Φ((q − m_d)/√v_d) = p.

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

func newBand(n int) Band {
	b := make([]float64, 5*n)
	return Band{Mean: b[:n:n], SD: b[n : 2*n : 2*n], Q05: b[2*n : 3*n : 3*n], Q50: b[3*n : 4*n : 4*n], Q95: b[4*n:]}
}

// Len returns the number of times.
func (b Band) Len() int { return len(b.Mean) }

func (b *Band) appendBand(o Band) {
	b.Mean = append(b.Mean, o.Mean...)
	b.SD = append(b.SD, o.SD...)
	b.Q05 = append(b.Q05, o.Q05...)
	b.Q50 = append(b.Q50, o.Q50...)
	b.Q95 = append(b.Q95, o.Q95...)
}

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

// stateRun is the normalised setup shared by the methods.
type stateRun struct {
	s      StateSettings
	model  ssm.Model
	dims   ssm.Dims
	seq    ssm.Sequence
	draws  [][]float64 // u of each posterior draw
	exact  ssm.StateSmoother
	comps  []int
	vol    bool // kernels implement ssm.Volatility
	degen  bool
	method pf.StateMethod
	M      int
}

func (p *Posterior) stateSetup(s StateSettings, exactOK bool) (*stateRun, error) {
	if p.model == nil {
		return nil, ErrNoModel
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	switch {
	case s.Draws < 0 || s.Block < 0 || s.Workers < 0:
		return nil, bad("Draws = %d, Block = %d and Workers = %d must not be negative", s.Draws, s.Block, s.Workers)
	case s.Sequence < 0 || s.Sequence >= len(p.data.Sequences):
		return nil, bad("Sequence = %d: the posterior was fitted to %d sequences", s.Sequence, len(p.data.Sequences))
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
	st, err := pf.NewStates(s.PF)
	if err != nil {
		return nil, err
	}
	s.PF = st.Settings()
	r := &stateRun{s: s, model: p.model, dims: p.model.Dims(), seq: p.data.Sequences[s.Sequence], M: s.PF.Paths}
	// Evenly thinned draws of the pooled chains.
	var pooled [][]float64
	for _, c := range p.U {
		for i := 0; i+p.Dim <= len(c); i += p.Dim {
			pooled = append(pooled, c[i:i+p.Dim:i+p.Dim])
		}
	}
	if len(pooled) == 0 {
		return nil, fmt.Errorf("sgmcmc: the posterior holds no draws")
	}
	D := min(s.Draws, len(pooled))
	r.draws = make([][]float64, D)
	for i := range D {
		r.draws[i] = pooled[i*len(pooled)/D]
	}
	if ex, ok := p.model.(ssm.StateSmoother); ok && exactOK && !s.Particles {
		r.exact = ex
	}
	k, err := p.model.Bind(r.draws[0])
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
		for _, c := range s.Components {
			if c < 0 || c >= r.dims.State {
				return nil, bad("state component %d: the model's state has %d", c, r.dims.State)
			}
		}
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
func (r *stateRun) forEach(ctx context.Context, n int, job func(w, d int) error) error {
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

func (r *stateRun) newWorkers() ([]*worker, error) {
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
func (r *stateRun) bind(w *worker, d int) (ssm.Kernel, error) {
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

// pool holds, per quantity and time, the D·M pooled draws (float32: the
// summaries need far less than their precision, and the pool is the
// memory that grows with D) or, on the exact path, D (mean, variance)
// pairs.
type pool struct {
	n, per int // times, values per time (D·M, or 2D)
	v      []float32
	g      []float64
}

func newPool(n, per int, gauss bool) *pool {
	p := &pool{n: n, per: per}
	if gauss {
		p.g = make([]float64, n*per)
	} else {
		p.v = make([]float32, n*per)
	}
	return p
}

// summarise computes the band of every time, in parallel over times.
func (p *pool) summarise(workers int) Band {
	b := newBand(p.n)
	var wg sync.WaitGroup
	chunk := (p.n + workers - 1) / workers
	for lo := 0; lo < p.n; lo += chunk {
		hi := min(lo+chunk, p.n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if p.g != nil {
					mixtureSummary(&b, i, p.g[i*p.per:(i+1)*p.per])
				} else {
					sampleSummary(&b, i, p.v[i*p.per:(i+1)*p.per])
				}
			}
		}()
	}
	wg.Wait()
	return b
}

// sampleSummary sets entry i of b from pooled draws (sorted in place):
// mean, sd (divisor n−1) and type-7 quantiles.
func sampleSummary(b *Band, i int, v []float32) {
	slices.Sort(v)
	n := len(v)
	m := 0.0
	for _, x := range v {
		m += float64(x)
	}
	m /= float64(n)
	ss := 0.0
	for _, x := range v {
		d := float64(x) - m
		ss += d * d
	}
	sd := math.NaN()
	if n > 1 {
		sd = math.Sqrt(ss / float64(n-1))
	}
	q := func(p float64) float64 {
		h := float64(n-1) * p
		lo := int(math.Floor(h))
		if lo >= n-1 {
			return float64(v[n-1])
		}
		return float64(v[lo]) + (h-float64(lo))*(float64(v[lo+1])-float64(v[lo]))
	}
	b.Mean[i], b.SD[i], b.Q05[i], b.Q50[i], b.Q95[i] = m, sd, q(0.05), q(0.5), q(0.95)
}

// mixtureSummary sets entry i of b for the equal-weight mixture of the
// Gaussians N(g[2d], g[2d+1]).
func mixtureSummary(b *Band, i int, g []float64) {
	D := len(g) / 2
	m, s2 := 0.0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for d := range D {
		md, vd := g[2*d], g[2*d+1]
		m += md
		s2 += vd + md*md
		sd := math.Sqrt(vd)
		lo, hi = math.Min(lo, md-9*sd), math.Max(hi, md+9*sd)
	}
	m /= float64(D)
	v := math.Max(s2/float64(D)-m*m, 0)
	b.Mean[i], b.SD[i] = m, math.Sqrt(v)
	b.Q05[i] = mixtureQuantile(g, 0.05, lo, hi)
	b.Q50[i] = mixtureQuantile(g, 0.5, lo, hi)
	b.Q95[i] = mixtureQuantile(g, 0.95, lo, hi)
}

// mixtureQuantile solves F(q) = p for F(q) = (1/D) Σ_d Φ((q − m_d)/s_d) by
// Newton steps kept inside a bisection bracket [lo, hi].
func mixtureQuantile(g []float64, p, lo, hi float64) float64 {
	D := float64(len(g) / 2)
	cdf := func(q float64) (float64, float64) {
		f, df := 0.0, 0.0
		for d := 0; d < len(g); d += 2 {
			sd := math.Sqrt(g[d+1])
			z := (q - g[d]) / sd
			f += 0.5 * math.Erfc(-z/math.Sqrt2)
			df += math.Exp(-0.5*z*z) / (sd * math.Sqrt(2*math.Pi))
		}
		return f/D - p, df / D
	}
	q := 0.5 * (lo + hi)
	for range 100 {
		f, df := cdf(q)
		if f > 0 {
			hi = q
		} else {
			lo = q
		}
		next := q - f/df
		if !(next > lo && next < hi) || df == 0 {
			next = 0.5 * (lo + hi)
		}
		if math.Abs(next-q) <= 1e-12*math.Max(1, math.Abs(q)) || hi-lo <= 1e-12*math.Max(1, math.Abs(q)) {
			return next
		}
		q = next
	}
	return q
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
	r, err := p.stateSetup(s, true)
	if err != nil {
		return nil, err
	}
	s = r.s
	T := r.seq.Len()
	if s.End == 0 {
		s.End = T
	}
	if s.Start < 0 || s.End > T || s.Start > s.End {
		return nil, fmt.Errorf("%w: states %d..%d are not inside 0..%d", ErrSettings, s.Start, s.End, T)
	}
	buf := s.Buffer
	switch {
	case buf == 0:
		buf = DefaultStateBuffer
	case buf < 0:
		buf = 0
	}
	D, M := len(r.draws), r.M
	out := &StateSummary{Sequence: s.Sequence, First: s.Start, Components: r.comps, Draws: D, Exact: r.exact != nil}
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
		if s.Emit != nil {
			if err := s.Emit(blk); err != nil {
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
func (r *stateRun) stateBlock(ctx context.Context, workers []*worker, win ssm.Window, out *StateSummary) (*StateSummary, error) {
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
	blk := &StateSummary{Sequence: s.Sequence, First: a, Components: r.comps, Draws: D, Paths: out.Paths, Exact: out.Exact, Method: out.Method}
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
func (r *stateRun) exactDraw(w *worker, d int, win ssm.Window, sp *statePools) error {
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
func (r *stateRun) particleDraw(ctx context.Context, w *worker, d int, win ssm.Window, sp *statePools, block uint64) error {
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
