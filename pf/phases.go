package pf

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The phases of Filter.Run, one method each so that every step of the
// algorithm can be read (and profiled) on its own: prepare, initialise,
// then per observation row saveLast, resampleAncestors, propagate,
// reweight and accumulate, and finish. Run calls them in this order,
// which is also the order in which they draw random numbers.

// run is what one Filter.Run carries between its phases: the arguments
// they share and the running log-likelihood and ESS. It lives on Run's
// stack, so passing it between the phases allocates nothing.
type run struct {
	k      ssm.Kernel
	prop   ssm.Proposer // nil: propose from the transition (bootstrap)
	h      Additive
	w      ssm.Window
	maxLog float64 // ssm.TransitionBounder's bound for PaRIS; +Inf without one
	statOn bool    // h has a dimension and the window keeps some row

	logN   float64 // log N, the carry after resampling
	thr    float64 // resample when ESS < thr; 0 resamples at every row
	carry  float64 // log Σ_i exp(logw_i) of the weights carried into a row
	ll     float64 // log-likelihood of the rows so far
	ess    float64 // ESS after the last reweighting
	minESS float64
}

// prepare checks Run's arguments (panicking on misuse, returning errors
// for data, proposal and smoother problems), picks the proposal and sizes
// the buffers. It draws no random numbers from rng.
func (f *Filter) prepare(k ssm.Kernel, d ssm.Dims, seq ssm.Sequence, w ssm.Window, h Additive, stat []float64, rng *rand.Rand) (run, error) {
	p := 0
	if h != nil {
		p = h.Dim()
	}
	switch {
	case k == nil:
		panic("pf: nil kernel")
	case rng == nil:
		panic("pf: nil rng")
	case d.State < 1:
		panic(fmt.Sprintf("pf: state dimension %d < 1", d.State))
	case len(stat) != p:
		panic(fmt.Sprintf("pf: len(stat) = %d, statistic dimension %d", len(stat), p))
	}
	if err := seq.Validate(d.Obs); err != nil {
		return run{}, err
	}
	if err := w.Validate(seq.Len()); err != nil {
		return run{}, err
	}
	r := run{k: k, h: h, w: w, maxLog: math.Inf(1)}
	switch f.set.Proposal {
	case Auto:
		r.prop, _ = k.(ssm.Proposer)
	case Guided:
		var ok bool
		if r.prop, ok = k.(ssm.Proposer); !ok {
			return run{}, ErrNoProposal
		}
	}
	if sm := f.set.Smoother; sm.backward() {
		if dg, ok := k.(ssm.Degenerate); ok && dg.DegenerateTransition() {
			return run{}, fmt.Errorf("%w: the kernel's transition is degenerate; use Ancestral or Shrinkage, not %v", ErrNoTransitionDensity, sm)
		}
	}
	if tb, ok := k.(ssm.TransitionBounder); ok {
		r.maxLog = tb.MaxLogTransition()
	}
	f.ensure(f.set.N, d.State, p, w.End-w.Start)
	r.statOn = p > 0 && w.KeepStart < w.KeepEnd
	return r, nil
}

// initialise draws the N particles before the window (Settings.Initial
// or ν_0), gives them equal weights and starts their statistics: zero,
// plus the initial term h_0 when the window keeps it.
func (f *Filter) initialise(r *run, rng *rand.Rand) {
	if f.set.Initial != nil {
		f.set.Initial(f.x, rng)
	} else {
		r.k.SampleInitial(f.x, rng)
	}
	for i := range f.logw {
		f.logw[i] = 0
		f.w[i] = 1
	}
	n := float64(f.n)
	f.wsum = n
	if r.statOn {
		clear(f.h)
		if r.w.KeepsInitial() && f.set.Initial == nil {
			r.h.Add(f.h, r.w.Weight(0), nil, f.x, nil)
		}
	}
	r.logN = math.Log(n)
	r.carry = r.logN
	r.thr = f.set.ESSThreshold * n
	r.ll = 0
	r.ess = n
	r.minESS = math.Inf(1)
}

// saveLast keeps what the smoother needs from time t-1 before resampling
// overwrites the weights: their weighted mean of the statistics
// (Shrinkage), the log-weights (ForwardOnly, PaRIS) and their alias table
// (PaRIS).
func (f *Filter) saveLast() {
	switch f.set.Smoother {
	case Shrinkage:
		f.weightedMean(f.hbar, f.h)
	case ForwardOnly:
		copy(f.lwPrev, f.logw)
	case PaRIS:
		copy(f.lwPrev, f.logw)
		f.buildAlias()
	}
}

// resampleAncestors draws the ancestors f.anc from the weights (in index
// or sorted order), gathers their rows into f.xAnc, which it returns as
// the rows to propagate, and resets the weights to equal.
func (f *Filter) resampleAncestors(r *run, rng *rand.Rand) []float64 {
	if f.set.Sorted {
		f.sortedResample(f.state, rng)
	} else {
		resample(f.anc, f.w, f.wsum, f.set.Resampling, rng, f.scratch)
	}
	gather(f.xAnc, f.x, f.anc, f.state)
	clear(f.logw)
	r.carry = r.logN
	return f.xAnc
}

// propagate draws x_t^i into f.xNext from the rows prev and adds the
// incremental log-weights ι_t^i to f.logw: the guided proposal's weight,
// or for the bootstrap filter the emission log-density of y.
func (f *Filter) propagate(r *run, prev, y []float64, rng *rand.Rand) {
	if r.prop != nil {
		r.prop.Propose(f.xNext, f.logw, prev, y, rng)
	} else {
		r.k.SampleTransition(f.xNext, prev, rng)
		r.k.AddLogEmission(f.logw, y, f.xNext)
	}
}

// reweight turns the log-weights into weights, one exp per particle: NaN
// log-weights become −Inf, the log-weights are shifted to a maximum of 0,
// and f.w, f.wsum, the log-likelihood and the ESS are updated. It reports
// false when every weight is zero, infinite or NaN.
func (f *Filter) reweight(r *run) bool {
	m, sum, sum2 := expWeights(f.w[:len(f.logw)], f.logw)
	if math.IsInf(m, 0) {
		return false
	}
	ls := math.Log(sum)
	r.ll += m + ls - r.carry
	r.carry = ls
	f.wsum = sum
	r.ess = sum * sum / sum2
	if r.ess < r.minESS {
		r.minESS = r.ess
	}
	return true
}

// expWeights shifts the log-weights lw to a maximum of 0 and sets w to
// their exponentials, one exp per particle; NaN log-weights become −Inf.
// It returns the maximum m (±Inf when no weight is finite and positive),
// Σw and Σw². The filter and the state sampler share it.
func expWeights(w, lw []float64) (m, sum, sum2 float64) {
	m = math.Inf(-1)
	for i, v := range lw {
		if v != v {
			lw[i] = math.Inf(-1)
			continue
		}
		if v > m {
			m = v
		}
	}
	if math.IsInf(m, 0) {
		return m, 0, 0
	}
	// After the shift every lw ≤ 0, so only the lower end of ExpCore's
	// range needs a check.
	for i, v := range lw {
		v -= m
		lw[i] = v
		e := 0.0
		if v >= -708 {
			e = fmath.ExpCore(v)
		} else {
			e = math.Exp(v)
		}
		w[i] = e
		sum += e
		sum2 += e * e
	}
	return m, sum, sum2
}

// accumulate adds row t's term (weight wt, zero unless kept) to the
// particles' statistics with the chosen smoother. It reports false when
// some particle has no backward weight (ForwardOnly, PaRIS).
func (f *Filter) accumulate(r *run, y []float64, wt float64, kept, resampled bool, prev []float64, rng *rand.Rand) bool {
	switch f.set.Smoother {
	case Ancestral, Shrinkage:
		f.ancestral(r.h, y, wt, kept, resampled, prev)
	case ForwardOnly:
		return f.forwardOnly(r.k, r.h, y, wt, kept)
	case PaRIS:
		return f.paris(r.k, r.h, y, wt, kept, r.maxLog, rng)
	}
	return true
}

// finish writes the smoothed statistic (the weighted mean of the
// particles' statistics, or zero) into stat and returns the result,
// refusing a non-finite statistic or log-likelihood.
func (f *Filter) finish(r *run, stat []float64) (Result, error) {
	if r.statOn {
		f.weightedMean(stat, f.h)
	} else {
		clear(stat)
	}
	for i, v := range stat {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Result{}, fmt.Errorf("%w: statistic component %d is %v for window [%d,%d)", ErrNonFinite, i, v, r.w.Start, r.w.End)
		}
	}
	if math.IsNaN(r.ll) || math.IsInf(r.ll, 0) {
		return Result{}, fmt.Errorf("%w: log-likelihood %v for window [%d,%d)", ErrNonFinite, r.ll, r.w.Start, r.w.End)
	}
	res := Result{LogLik: r.ll, MinESS: r.minESS}
	if f.set.Diagnostics {
		res.ESS, res.Resampled = f.ess, f.resampled
	}
	return res, nil
}
