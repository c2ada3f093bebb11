package pf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// StateMethod selects how States draws from the smoothing law of the
// states.
type StateMethod int

const (
	// AutoStates uses FFBSi when the kernel has a transition density and
	// FixedLag when it reports ssm.Degenerate (GARCH). The default.
	AutoStates StateMethod = iota
	// FFBSi is forward filtering, backward simulation (Godsill, Doucet and
	// West 2004): after a forward filter that keeps every generation, each
	// of M trajectories is drawn backwards, J_End ~ W_End and
	//
	//	P(J_t = j | J_{t+1}) ∝ W_t^j f(x_{t+1}^{J_{t+1}} | x_t^j),
	//
	// so the draws of x_t are (given the forward particles) exact draws
	// from the particle approximation of p(x_t | y_window), free of the
	// path degeneracy of ancestral tracing. Backward draws use
	// accept-reject against the bound of an ssm.TransitionBounder kernel
	// (Douc, Garivier, Moulines and Olsson 2011; expected O(1) per draw when
	// the acceptance rate is fair), with an exact O(N) draw after
	// max(32, N/4) rejections or when the kernel has no bound. Needs a
	// transition density.
	FFBSi
	// FixedLag traces ancestral lines back a fixed lag L (Kitagawa and Sato
	// 2001): x_t is drawn as the ancestor at time t of a particle drawn
	// from W_{min(t+L, End)}, an approximation of p(x_t | y_window) whose
	// bias decays with L while its path degeneracy grows with L. It needs
	// no transition density. O(M·L) per state.
	FixedLag
)

// String returns the method's name.
func (m StateMethod) String() string {
	switch m {
	case AutoStates:
		return "auto"
	case FFBSi:
		return "ffbsi"
	case FixedLag:
		return "fixed-lag"
	}
	return fmt.Sprintf("StateMethod(%d)", int(m))
}

// Defaults used for zero StateSettings fields.
const (
	DefaultStateN = 256
	DefaultPaths  = 10
	DefaultLag    = 20
)

// StateSettings configures States. The zero value is an FFBSi (or, for
// degenerate transitions, fixed-lag) smoother over a filter of 256
// particles with the kernel's guided proposal when it has one, systematic
// resampling at every step, and 10 draws of each state.
type StateSettings struct {
	// N is the number of forward particles, >= 0; 0 means DefaultStateN.
	N int
	// Paths is the number M of draws of each state (backward trajectories
	// or traced lines), >= 0; 0 means DefaultPaths.
	Paths int
	// Method selects the smoother.
	Method StateMethod
	// Lag is FixedLag's L, >= 0; 0 means DefaultLag.
	Lag int
	// Proposal selects bootstrap or guided proposals.
	Proposal Proposal
	// Resampling is the forward filter's scheme (zero value Systematic).
	Resampling Resampling
	// ESSThreshold resamples only when ESS < ESSThreshold·N, in [0, 1]; 0
	// resamples at every step.
	ESSThreshold float64
}

// StateOutput holds the caller's buffers for one States.Run; nil slices
// are skipped. With n = w.KeepEnd − w.KeepStart + 1 reported states
// (t = KeepStart..KeepEnd, see ssm's state numbering), M = Paths and
// S = State:
type StateOutput struct {
	// Smoothed (n·M·S) receives M draws of x_t from the particle
	// smoothing law p(x_t | y_Start..y_End−1): draw m of state KeepStart+i
	// is the row at (i·M + m)·S. Only Smoothed makes Run keep every
	// generation of particles (O((End−Start)·N·S) memory).
	Smoothed []float64
	// Filtered (n·M·S) receives M draws of x_t from the filtering law
	// p(x_t | y_Start..y_t), resampled from the weighted particles of that
	// step, laid out as Smoothed. The draws of state End are the starting
	// points of a forecast.
	Filtered []float64
	// LogPred (End−Start) receives per filtered row t the estimate of the
	// one-step-ahead predictive density, log Σ_i W̄_{t−1}^i exp(ι_t^i)
	// (the factor of row t in the unbiased likelihood estimate).
	LogPred []float64
}

// States draws filtered and smoothed states over windows. It owns its
// buffers: a Run after the first with the same sizes and no longer window
// allocates nothing. Not safe for concurrent use: use one per goroutine.
type States struct {
	set StateSettings

	n, s  int
	store bool // every generation kept (smoothing)

	xs     []float64 // generations of particles, n×s each (all, or a ring of 2)
	ws     []float64 // their weights exp(log w − max), n each
	wsum   []float64 // their sums
	anc    []int     // FixedLag: ancestors of every generation, n each
	xAnc   []float64 // n×s gathered ancestors
	logw   []float64 // n current log-weights (max 0)
	ancCur []int     // n ancestors when not stored
	scr    []float64 // resampling scratch, n+M+n

	idx          []int     // M path indices
	cum          []float64 // n cumulative weights of one generation
	guide        []int     // n: its guide table (see buildGuide)
	lt           []float64 // n backward weights
	candJ        []int     // accept-reject candidates
	candX, candL []float64 // their rows and log-densities
}

// NewStates returns a States after validating s.
func NewStates(s StateSettings) (*States, error) {
	switch {
	case s.N < 0 || s.Paths < 0 || s.Lag < 0:
		return nil, fmt.Errorf("%w: N = %d, Paths = %d and Lag = %d must be >= 0", ErrSettings, s.N, s.Paths, s.Lag)
	case s.Method < AutoStates || s.Method > FixedLag:
		return nil, fmt.Errorf("%w: unknown state method %d", ErrSettings, int(s.Method))
	case s.Proposal < Auto || s.Proposal > Guided:
		return nil, fmt.Errorf("%w: unknown proposal %d", ErrSettings, int(s.Proposal))
	case !s.Resampling.valid():
		return nil, fmt.Errorf("%w: unknown resampling scheme %d", ErrSettings, int(s.Resampling))
	case !(s.ESSThreshold >= 0 && s.ESSThreshold <= 1):
		return nil, fmt.Errorf("%w: ESSThreshold = %v must be in [0, 1]", ErrSettings, s.ESSThreshold)
	}
	if s.N == 0 {
		s.N = DefaultStateN
	}
	if s.Paths == 0 {
		s.Paths = DefaultPaths
	}
	if s.Lag == 0 {
		s.Lag = DefaultLag
	}
	return &States{set: s}, nil
}

// Settings returns the settings with defaults filled in.
func (st *States) Settings() StateSettings { return st.set }

// ensure sizes the buffers for gens generations.
func (st *States) ensure(n, s, gens int, fixedLag bool) {
	st.n, st.s = n, s
	m := st.set.Paths
	st.xs = grow(st.xs, gens*n*s)
	st.ws = grow(st.ws, gens*n)
	st.wsum = grow(st.wsum, gens)
	if fixedLag {
		st.anc = growInt(st.anc, gens*n)
	}
	st.xAnc = grow(st.xAnc, n*s)
	st.logw = grow(st.logw, n)
	st.ancCur = growInt(st.ancCur, n)
	st.scr = grow(st.scr, 2*n+m)
	st.idx = growInt(st.idx, m)
	st.cum = grow(st.cum, n)
	st.guide = growInt(st.guide, n)
	st.lt = grow(st.lt, n)
	st.candJ = growInt(st.candJ, ffbsiBatch)
	st.candX = grow(st.candX, ffbsiBatch*s)
	st.candL = grow(st.candL, ffbsiBatch)
}

// gen returns the particles of generation g (state Start+g).
func (st *States) gen(g int) []float64 {
	if !st.store {
		g &= 1
	}
	ns := st.n * st.s
	return st.xs[g*ns : (g+1)*ns : (g+1)*ns]
}

// weights returns the weights of generation g and their sum.
func (st *States) weights(g int) ([]float64, float64) {
	if !st.store {
		g &= 1
	}
	return st.ws[g*st.n : (g+1)*st.n : (g+1)*st.n], st.wsum[g]
}

// Run filters observation rows [w.Start, w.End) of seq with kernel k
// (dimensions d), the state before w.Start drawn from ν_0, and fills the
// non-nil buffers of out for the states t = w.KeepStart..w.KeepEnd
// (w.Weights are ignored). It returns the estimate log p̂(y_window), the
// sum of LogPred.
//
// Errors: ssm.ErrData and ssm.ErrWindow for a malformed sequence or
// window, ErrNoProposal, ErrNoTransitionDensity (FFBSi with an
// ssm.Degenerate kernel), a *DegeneracyError when every forward or
// backward weight of a step vanishes, ErrNonFinite for a non-finite
// log-likelihood, and the context's error (wrapped), checked before each
// step. Run panics when a buffer of out has the wrong length, d.State < 1,
// or k or rng is nil.
func (st *States) Run(ctx context.Context, k ssm.Kernel, d ssm.Dims, seq ssm.Sequence, w ssm.Window, out StateOutput, rng *rand.Rand) (float64, error) {
	switch {
	case k == nil:
		panic("pf: nil kernel")
	case rng == nil:
		panic("pf: nil rng")
	case d.State < 1:
		panic(fmt.Sprintf("pf: state dimension %d < 1", d.State))
	}
	if err := seq.Validate(d.Obs); err != nil {
		return 0, err
	}
	if err := w.Validate(seq.Len()); err != nil {
		return 0, err
	}
	n, s := st.set.N, d.State
	nStates := w.KeepEnd - w.KeepStart + 1
	steps := w.End - w.Start
	prop, method, err := st.plan(k, out, n, s, nStates, steps)
	if err != nil {
		return 0, err
	}
	smooth := out.Smoothed != nil
	fixedLag := smooth && method == FixedLag

	gLo, gHi := w.KeepStart-w.Start, w.KeepEnd-w.Start // generations reported
	x0 := st.gen(0)
	k.SampleInitial(x0, rng)
	w0, _ := st.weights(0)
	for i := range w0 {
		w0[i] = 1
		st.logw[i] = 0
	}
	st.wsum[0] = float64(n)
	if out.Filtered != nil && gLo == 0 {
		st.drawFiltered(out.Filtered, 0, 0, rng)
	}

	logN := math.Log(float64(n))
	carry := logN
	thr := st.set.ESSThreshold * float64(n)
	ll := 0.0
	ess := float64(n)
	for g := 1; g <= steps; g++ {
		t := w.Start + g - 1 // observation row
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("pf: stopped before observation row %d of window [%d,%d): %w", t, w.Start, w.End, err)
		}
		y := seq.At(t)
		prevX := st.gen(g - 1)
		prevW, prevSum := st.weights(g - 1)
		anc := st.ancCur
		if fixedLag {
			anc = st.anc[g*n : (g+1)*n]
		}
		prev := prevX
		if g > 1 && (thr == 0 || ess < thr) {
			resample(anc, prevW, prevSum, st.set.Resampling, rng, st.scr)
			gather(st.xAnc, prevX, anc, s)
			prev = st.xAnc
			clear(st.logw)
			carry = logN
		} else if fixedLag {
			for i := range anc {
				anc[i] = i
			}
		}
		cur := st.gen(g)
		if prop != nil {
			prop.Propose(cur, st.logw, prev, y, rng)
		} else {
			k.SampleTransition(cur, prev, rng)
			k.AddLogEmission(st.logw, y, cur)
		}
		wv, _ := st.weights(g)
		m, sum, sum2 := expWeights(wv[:len(st.logw)], st.logw)
		if math.IsInf(m, 0) {
			return 0, &DegeneracyError{T: t, Start: w.Start, End: w.End}
		}
		if !st.store {
			st.wsum[g&1] = sum
		} else {
			st.wsum[g] = sum
		}
		ls := math.Log(sum)
		inc := m + ls - carry
		if out.LogPred != nil {
			out.LogPred[g-1] = inc
		}
		ll += inc
		carry = ls
		ess = sum * sum / sum2
		if out.Filtered != nil && g >= gLo && g <= gHi {
			st.drawFiltered(out.Filtered, g, g-gLo, rng)
		}
	}
	if math.IsNaN(ll) || math.IsInf(ll, 0) {
		return 0, fmt.Errorf("%w: log-likelihood %v for window [%d,%d)", ErrNonFinite, ll, w.Start, w.End)
	}
	if !smooth {
		return ll, nil
	}
	if method == FixedLag {
		st.fixedLag(out.Smoothed, gLo, gHi, steps, rng)
		return ll, nil
	}
	maxLog := math.Inf(1)
	if tb, ok := k.(ssm.TransitionBounder); ok {
		maxLog = tb.MaxLogTransition()
	}
	if err := st.ffbsi(k, out.Smoothed, gLo, gHi, steps, maxLog, rng); err != nil {
		err.Start, err.End = w.Start, w.End
		err.T += w.Start
		return 0, err
	}
	return ll, nil
}

// plan checks out's buffers, chooses the proposal and the smoother and
// sizes the buffers for a run of steps steps reporting nStates states.
func (st *States) plan(k ssm.Kernel, out StateOutput, n, s, nStates, steps int) (ssm.Proposer, StateMethod, error) {
	M := st.set.Paths
	for _, b := range []struct {
		name string
		v    []float64
		want int
	}{{"Smoothed", out.Smoothed, nStates * M * s}, {"Filtered", out.Filtered, nStates * M * s}, {"LogPred", out.LogPred, steps}} {
		if b.v != nil && len(b.v) != b.want {
			panic(fmt.Sprintf("pf: States.Run: len(%s) = %d, want %d", b.name, len(b.v), b.want))
		}
	}
	var prop ssm.Proposer
	switch st.set.Proposal {
	case Auto:
		prop, _ = k.(ssm.Proposer)
	case Guided:
		var ok bool
		if prop, ok = k.(ssm.Proposer); !ok {
			return nil, 0, ErrNoProposal
		}
	}
	degenerate := false
	if dg, ok := k.(ssm.Degenerate); ok && dg.DegenerateTransition() {
		degenerate = true
	}
	method := st.set.Method
	if method == AutoStates {
		method = FFBSi
		if degenerate {
			method = FixedLag
		}
	}
	smooth := out.Smoothed != nil
	if smooth && method == FFBSi && degenerate {
		return nil, 0, fmt.Errorf("%w: the kernel's transition is degenerate; use FixedLag, not FFBSi", ErrNoTransitionDensity)
	}
	st.store = smooth
	gens := 2
	if smooth {
		gens = steps + 1
	}
	st.ensure(n, s, gens, smooth && method == FixedLag)
	return prop, method, nil
}

// drawFiltered writes M rows resampled (systematically) from generation g
// into block i of dst.
func (st *States) drawFiltered(dst []float64, g, i int, rng *rand.Rand) {
	M, s := st.set.Paths, st.s
	wg, sum := st.weights(g)
	systematic(st.idx, wg, sum, rng.Float64())
	st.copyRows(dst[i*M*s:(i+1)*M*s], st.gen(g), st.idx)
}

// copyRows sets row m of dst to row idx[m] of x.
func (st *States) copyRows(dst, x []float64, idx []int) {
	s := st.s
	for m, j := range idx {
		copy(dst[m*s:(m+1)*s], x[j*s:(j+1)*s])
	}
}

// fixedLag writes, for every reported generation g, the ancestors at g of
// M particles drawn from generation min(g+L, G).
func (st *States) fixedLag(dst []float64, gLo, gHi, G int, rng *rand.Rand) {
	M, s, n := st.set.Paths, st.s, st.n
	for g := gLo; g <= gHi; g++ {
		g2 := min(g+st.set.Lag, G)
		wg, sum := st.weights(g2)
		systematic(st.idx, wg, sum, rng.Float64())
		for h := g2; h > g; h-- {
			a := st.anc[h*n : (h+1)*n]
			for m, j := range st.idx {
				st.idx[m] = a[j]
			}
		}
		i := g - gLo
		st.copyRows(dst[i*M*s:(i+1)*M*s], st.gen(g), st.idx)
	}
}

// ffbsiBatch is the number of accept-reject proposals of a backward draw
// evaluated by one LogTransitions call: with acceptance rates around ½ a
// draw needs about two.
const ffbsiBatch = 4

// ffbsi draws M backward trajectories from generation G down to gLo and
// writes the states of generations gLo..gHi. The returned error's T is a
// generation index (the caller makes it a row).
func (st *States) ffbsi(k ssm.Kernel, dst []float64, gLo, gHi, G int, maxLog float64, rng *rand.Rand) *DegeneracyError {
	M, s, n := st.set.Paths, st.s, st.n
	wG, sumG := st.weights(G)
	systematic(st.idx, wG, sumG, rng.Float64())
	if G <= gHi {
		i := G - gLo
		st.copyRows(dst[i*M*s:(i+1)*M*s], st.gen(G), st.idx)
	}
	bounded := !math.IsInf(maxLog, 0) && !math.IsNaN(maxLog)
	maxTries := max(parisMinTries, n/4)
	for g := G - 1; g >= gLo; g-- {
		xg := st.gen(g)
		xn := st.gen(g + 1)
		wg, _ := st.weights(g)
		// Cumulative weights of generation g and their guide table:
		// proposals j ~ W_g by indexed search (Chen and Asau 1974),
		// O(1) expected per draw. (An alias table costs about 17 ns per
		// particle to build, against a few for these, and only M
		// trajectories pass through each generation.)
		c, last := 0.0, 0
		if bounded {
			for j, v := range wg {
				if v > 0 {
					last = j
				}
				c += v
				st.cum[j] = c
			}
			buildGuide(st.guide, st.cum, c, last)
		}
		for m, jn := range st.idx {
			xi := xn[jn*s : (jn+1)*s]
			got := -1
			if bounded {
				tries := 0
			batches:
				for tries < maxTries {
					for b := range st.candJ {
						j := guidedDraw(st.guide, st.cum, rng.Float64()*c, last)
						st.candJ[b] = j
						if s == 1 {
							st.candX[b] = xg[j]
						} else {
							copy(st.candX[b*s:(b+1)*s], xg[j*s:(j+1)*s])
						}
					}
					k.LogTransitions(st.candL, xi, st.candX)
					for b, l := range st.candL {
						tries++
						if rng.ExpFloat64() >= maxLog-l {
							got = st.candJ[b]
							break batches
						}
						if tries == maxTries {
							break batches
						}
					}
				}
			}
			if got < 0 {
				// Exact draw: b_j ∝ W_g^j f(xi | x_g^j).
				lt := st.lt
				k.LogTransitions(lt, xi, xg)
				mx := math.Inf(-1)
				for j, v := range lt {
					if wg[j] > 0 && v > mx {
						mx = v
					}
				}
				if math.IsInf(mx, 0) || math.IsNaN(mx) {
					return &DegeneracyError{T: g}
				}
				sum := 0.0
				lastB := 0
				for j, v := range lt {
					b := 0.0
					if wg[j] > 0 && v == v {
						b = wg[j] * math.Exp(v-mx)
					}
					if b > 0 {
						lastB = j
					}
					sum += b
					lt[j] = sum
				}
				if !(sum > 0) || math.IsInf(sum, 0) {
					return &DegeneracyError{T: g}
				}
				got = searchCum(lt, rng.Float64()*sum, lastB)
			}
			st.idx[m] = got
		}
		if g <= gHi {
			i := g - gLo
			st.copyRows(dst[i*M*s:(i+1)*M*s], xg, st.idx)
		}
	}
	return nil
}

// buildGuide fills the guide table of the cumulative weights cum (total c,
// last positive weight at index last): guide[k] is the first j whose
// cum[j] exceeds k·c/K, K = len(guide).
func buildGuide(guide []int, cum []float64, c float64, last int) {
	K := len(guide)
	step := c / float64(K)
	j := 0
	for k := range guide {
		t := float64(k) * step
		for j < last && cum[j] <= t {
			j++
		}
		guide[k] = j
	}
}

// guidedDraw returns the first j with cum[j] > u (at most last), starting
// from the guide table's entry for u: about one comparison per draw when
// len(guide) = len(cum).
func guidedDraw(guide []int, cum []float64, u float64, last int) int {
	k := int(u * float64(len(guide)) / cum[last])
	if k >= len(guide) {
		k = len(guide) - 1
	}
	j := guide[k]
	for j < last && cum[j] <= u {
		j++
	}
	return j
}
