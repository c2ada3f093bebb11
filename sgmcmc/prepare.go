package sgmcmc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// prepare fills f.prep: mode, Hessian, anchor and gradient noise.
func (f *fit) prepare(ctx context.Context) error {
	t0 := time.Now()
	if f.s.Checkpoint != "" {
		if ok, err := f.loadPreparation(); err != nil || ok {
			if ok {
				f.resumed = true
				f.log("resuming: preparation read from %s.prep", f.s.Checkpoint)
			}
			return err
		}
	}
	u0 := f.u0
	f.log("warm-up: %d Adam iterations from the starting point", f.s.WarmUp)
	u, err := f.warmUp(ctx, u0)
	if err != nil {
		return err
	}
	f.warm = u
	if err := f.chooseFilter(u); err != nil {
		return err
	}
	f.tryCoarser()
	for {
		err = f.prepareAt(ctx, u)
		for f.widenGrid(err) {
			err = f.prepareAt(ctx, u)
		}
		if f.toParticles(ctx, err, "preparation") {
			err = f.prepareAt(ctx, u)
		}
		if err != nil {
			return err
		}
		retry, err := f.checkDiscretisation(ctx)
		if err != nil {
			return err
		}
		if !retry {
			break
		}
		// The coarser discretisation's correction is too large: the
		// model as given, from the coarser one's mode.
		u = f.prep.Mode
	}
	f.prep.Seconds = time.Since(t0).Seconds()
	if f.s.Checkpoint != "" {
		return f.savePreparation()
	}
	return nil
}

// prepareAt is the preparation from the warm-up's end u: Newton steps, the
// anchor, the Jacobian, the noise and the step.
func (f *fit) prepareAt(ctx context.Context, u []float64) (err error) {
	p := f.dim
	passes := 4
	if f.deterministic() {
		passes = 1
	}
	passes = min(passes, f.s.AnchorPasses)
	stream := uint64(anchorStream)
	u, stream, subsets, err := f.newtonOnSubsets(ctx, u, passes, stream)
	if err != nil {
		return err
	}
	// sf is f, or with PrepObs a subset of it: the Newton steps from here
	// on, the anchor and the Jacobian read sf's observations only.
	sf := f
	var t *tiling
	var h *mat.SymDense
	var l []float64
	// After the subsets, the full data are read once: Newton's later
	// scores difference a subset (scoreTile).
	f.diffOK = subsets > 0
	defer func() { f.diff, f.diffOK = nil, false }()
	for round := 0; ; round++ {
		if f.prepSubset() {
			sf = f.subset(f.s.PrepObs) // subset copies the current grid
			f.log("PrepObs: the mode, anchor, Jacobian and metric come from a subset of %d of the %d observations (no full-data pass)", sf.total, f.total)
		}
		if u, t, h, l, stream, err = sf.newton(ctx, u, passes, stream); err != nil {
			return err
		}
		// (The whole data's Newton re-chooses the grid itself.)
		if sf == f || round == 1 || !f.regrid(u) {
			break
		}
	}
	if sf != f && t.full && t.subSE == nil {
		// observedNewton's exact score of the subset carries no error of
		// its own, but as the whole data's score it carries the subset's
		// sampling error, which moves the mean by about √(T/PrepObs − 1)
		// posterior sds.
		if t.subSE, err = sf.subsetScoreSE(ctx, u); err != nil {
			return err
		}
	}
	if f.diff != nil {
		if s := linalg.MaxAbs(linalg.LTrans(l, t.anchorSE())); s > 0.1 {
			// The subset's differences are too imprecise for the anchor:
			// read all the data at u after all.
			f.log("the subset's score differences may move the mean by %.2f posterior sd: a full-data pass at the mode", s)
			if t, err = f.tile(ctx, u, passes, stream, f.tileSet()); err != nil {
				return err
			}
			stream += uint64(passes)
		}
	}
	// The anchor: fresh passes with AnchorParticles until its error moves
	// the mean by < 0.1 sd. The control-variate chains inherit the
	// anchor's particle bias (the bias of g_S(u) − g_S(u*) mostly cancels),
	// so a larger filter here buys a smaller bias at the cost of the
	// preparation only.
	fisher := t.fisher
	var jac []float64
	if f.deterministic() {
		// (Not subsetNewton's −J, a subset's: the second-order control
		// variate's mean gradient has the slope J, so J's error is the
		// posterior covariance's. On GARCH at T = 10⁶ the 10⁵-row
		// subset's made the sd along one axis 1.39 times too small: the
		// exact log posterior's curvature there was 0.52 of the chains'.)
		if jac, err = f.jacobianAt(ctx, sf, u, stream); err != nil {
			return err
		}
		stream++
	}
	own := t // the chains' own filter's tiled score at u
	if !f.deterministic() {
		if t, stream, err = f.anchorPasses(ctx, sf, u, l, stream); err != nil {
			return err
		}
	}
	if f.prep.Exact && jac != nil && !t.full {
		// The model's exact scorer: the observed information −J is the
		// Hessian (the blocks' empirical Fisher information overstated
		// GARCH's 3- to 10-fold in two directions on DAX; see
		// observedNewton). observedNewton's exact full-data −J comes with
		// t, and subsetNewton's the last subset's (as a metric the exact
		// −J made the control variate's noise λ 333 at T = 10⁶ for GARCH,
		// the subset's 0.03); the tilings' −J is the
		// fallback (on the S&P 500 it was nearly singular along μ: probes
		// went to u₀ = 400).
		fisher = linalg.Negated(jac)
	}
	if h, err = f.hessian(u, fisher); err != nil {
		return err
	}
	if l, err = linalg.CholInverse(h); err != nil {
		return err
	}
	// The plain chains' bias correction c = ĝ_full(u*) − ĝ_gset(u*): the
	// tiled score of their own (smaller) filter at u* measures its
	// particle bias there, so g_S(u) + c has the bias b(u) − b(u*), which
	// is small near u*, as for the control variate. Its error adds to the
	// anchor's; more passes of the cheap filter until it too moves the
	// mean by < 0.1 sd.
	correction := make([]float64, p)
	corrSE := make([]float64, p)
	if !f.deterministic() {
		if err := f.biasCorrection(ctx, sf, u, l, t, own, stream, correction, corrSE); err != nil {
			return err
		}
	}
	f.prep = Preparation{Mode: u, Chol: l, Hessian: linalg.SymData(h), Anchor: t.mean, AnchorSE: t.anchorSE(), Grid: f.gset.Grid, Exact: f.gset.Exact && !f.s.Exact, jacobian: jac, S: f.gset.S, B: f.gset.B,
		Passes: t.passes, ShiftSD: linalg.MaxAbs(linalg.LTrans(l, t.anchorSE())), Correction: correction, CorrectionSE: corrSE, Fallback: f.fallback, Path: f.path}
	if f.prep.Walk, err = f.chooseWalk(u); err != nil {
		return err
	}
	f.log("anchor: %d tiling passes, mean shift from its error ≤ %.2f posterior sd; plain-gradient bias correction %.3g (shift ≤ %.2f sd)",
		t.passes, f.prep.ShiftSD, correction, linalg.MaxAbs(linalg.LTrans(l, corrSE)))

	return f.measureNoise(ctx)
}

// newtonOnSubsets runs Newton's steps on growing subsets of the data
// from u and returns where they end, the next random stream and the
// number of subsets (0: none).
//
// With deterministic gradients on long data, Newton first runs on
// subsets of 10⁵, 10⁶, ... observations (evenly spread blocks, the
// score scaled up to the whole), each tenfold larger, while smaller
// than half the data: a full tiling of 10⁸ observations takes ten
// minutes and the warm-up may end hundreds of posterior sds from the
// mode, while each level starts a few sds from its own mode (5–11 on
// the simulated SVM at 10⁷ and 10⁸), so the full data take two or
// three Newton steps, of which only the first reads them all
// (scoreTile).
func (f *fit) newtonOnSubsets(ctx context.Context, u []float64, passes int, stream uint64) ([]float64, uint64, int, error) {
	levels := f.newtonLevels()
	for _, n := range levels {
		sub := f.newtonLevel(n)
		f.log("Newton on a subset of %d of the %d observations first", sub.total, f.total)
		var err error
		var t *tiling
		if u, t, _, _, stream, err = sub.newton(ctx, u, passes, stream); err != nil {
			return nil, 0, 0, err
		}
		f.subInfo = nil
		if t.full && t.fisher != nil {
			f.subInfo = t.fisher
		}
		// The grid at the subset's mode serves the full data (their mode
		// is a few of their posterior sds away), so their Newton needs no
		// second round after a regrid.
		f.regrid(u)
	}
	return u, stream, len(levels), nil
}

// newtonLevels returns the sizes of the subsets newtonOnSubsets runs
// Newton on: subsetObs, 10·subsetObs, ... while less than half of f's
// observations, with deterministic gradients only, and smaller than
// PrepObs when the preparation uses a subset.
func (f *fit) newtonLevels() []int {
	var levels []int
	for n := subsetObs; f.deterministic() && f.total > 2*n; n *= 10 {
		levels = append(levels, n)
	}
	if f.prepSubset() {
		for len(levels) > 0 && levels[len(levels)-1] >= f.s.PrepObs {
			levels = levels[:len(levels)-1]
		}
	}
	return levels
}

// newtonLevel returns the subset of about n observations of Newton's
// level n. From diffObs observations on, a level reads its own subset
// once too (differences on a tenth of it, 100 blocks of 1000 at least).
func (f *fit) newtonLevel(n int) *fit {
	sub := f.subset(n)
	sub.diffOK = sub.total >= diffObs
	return sub
}

// subsetScoreSE returns the standard error of the subset f's exact
// full-data score at u, scaled up, as an estimate of the whole data's
// score: from the spread of its blocks' exact scores (addBlockVar). Nil
// when the model has no exact scorer or f has a single block.
func (f *fit) subsetScoreSE(ctx context.Context, u []float64) ([]float64, error) {
	ex, ok := f.model.(ssm.ExactScorer)
	seqs := f.data.Sequences
	m, p := len(seqs), f.dim
	if !ok || m < 2 || f.scale == 0 {
		return nil, nil
	}
	b := make([]float64, m*p)
	err := workerPool(m, f.s.Workers, func() func(int) error {
		return func(k int) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			_, err := ex.ExactScore(b[k*p:(k+1)*p], u, seqs[k], ssm.Full(seqs[k].Len()))
			return err
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: the subset's block scores: %w", err)
	}
	se := make([]float64, p)
	addBlockVar(se, b, m, p, f.scale, 1)
	for a := range se {
		se[a] = math.Sqrt(se[a])
	}
	return se, nil
}

// jacobianAt returns the Jacobian of the full-data score at u, from sf's
// observations. Above jacobianObs observations it comes from a subset
// of jacobianObs, scaled up: p + 1 full passes would dominate the
// preparation. Its error is the second-order control variate's in the
// slope of its mean gradient, so in the posterior's covariance: on the
// simulated SVM with T = 10⁶, a 10⁵ subset's diagonal was within 0.7–5%
// of the full data's, and τ's posterior sd moved by 2.6% (0.00334 vs
// 0.00343); on GARCH at T = 10⁶ a 10⁵ subset's made the posterior several
// times too narrow along one direction (docs/design.md), so the subset
// above 2·jacobianObs is 10⁶ observations.
func (f *fit) jacobianAt(ctx context.Context, sf *fit, u []float64, stream uint64) ([]float64, error) {
	return f.jacobianFit(sf).jacobian(ctx, u, stream)
}

// jacobianFit returns the fit whose observations jacobianAt reads: sf,
// or a subset of jacobianObs of f's when sf has more than twice as many.
func (f *fit) jacobianFit(sf *fit) *fit {
	if sf.total > 2*jacobianObs {
		return f.subset(jacobianObs)
	}
	return sf
}

// anchorPasses tiles sf's observations at u with the anchor's filter
// (AnchorParticles) from stream on: four passes at least (their spread
// is the standard error's estimate, and two would give it one degree of
// freedom), then more, up to AnchorPasses, until the error moves the
// mean (posterior scale L = l) by less than 0.1 sd. It returns the
// tiling and the next stream.
func (f *fit) anchorPasses(ctx context.Context, sf *fit, u, l []float64, stream uint64) (*tiling, uint64, error) {
	first := min(4, f.s.AnchorPasses)
	t, err := sf.tile(ctx, u, first, stream, f.aset)
	if err != nil {
		return nil, stream, err
	}
	stream += uint64(first)
	shift := func() float64 { return linalg.MaxAbs(linalg.LTrans(l, t.se)) }
	for t.passes < f.s.AnchorPasses && shift() > 0.1 {
		need := int(math.Ceil(float64(t.passes) * math.Pow(shift()/0.1, 2)))
		more := morePasses(need-t.passes, t.passes, f.s.AnchorPasses)
		o, err := sf.tile(ctx, u, more, stream, f.aset)
		if err != nil {
			return nil, stream, err
		}
		stream += uint64(more)
		t.merge(o)
	}
	return t, stream, nil
}

// biasCorrection sets the plain chains' bias correction t.mean − own.mean
// and its standard error in correction and corrSE, first from own's
// passes, then with more passes of the chains' own filter at u (merged
// into own; up to AnchorPasses) until corrSE moves the mean (posterior
// scale L = l) by less than 0.1 sd.
func (f *fit) biasCorrection(ctx context.Context, sf *fit, u, l []float64, t, own *tiling, stream uint64, correction, corrSE []float64) error {
	setCorr := func() {
		for i := range correction {
			correction[i] = t.mean[i] - own.mean[i]
			corrSE[i] = math.Hypot(t.se[i], own.se[i])
		}
	}
	setCorr()
	for own.passes < f.s.AnchorPasses && linalg.MaxAbs(linalg.LTrans(l, corrSE)) > 0.1 {
		more := morePasses(own.passes, own.passes, f.s.AnchorPasses)
		o, err := sf.tile(ctx, u, more, stream, f.gset)
		if err != nil {
			return err
		}
		stream += uint64(more)
		own.merge(o)
		setCorr()
	}
	return nil
}

// jacobian returns J = ∂ĝ_full/∂u at u (row-major, J[i*p+k] = ∂ĝ_i/∂u_k)
// by forward differences of deterministic tilings, all with the same
// tiling (the same stream) so that they differentiate one function.
func (f *fit) jacobian(ctx context.Context, u []float64, stream uint64) ([]float64, error) {
	pts := jacobianPoints(u)
	cols := make([][]float64, len(pts))
	for i, v := range pts {
		t, err := f.tile(ctx, v, 1, stream, f.tileSet())
		if err != nil {
			return nil, fmt.Errorf("sgmcmc: Jacobian of the full-data score: %w", err)
		}
		cols[i] = t.mean
	}
	return forwardDiff(cols, f.dim), nil
}

// jacobianEta is the step of the differences of the scores.
const jacobianEta = 1e-4

// jacobianPoints returns u and u + ηe_k for k = 0 … p−1, in that order:
// p + 1 full-data passes, where central differences took 2p (at T = 10⁶
// each is a tenth of the fit).
func jacobianPoints(u []float64) [][]float64 {
	pts := make([][]float64, 1+len(u))
	pts[0] = append([]float64(nil), u...)
	for k := range u {
		v := append([]float64(nil), u...)
		v[k] += jacobianEta
		pts[1+k] = v
	}
	return pts
}

// forwardDiff returns J (row-major, J[i*p+k] = ∂g_i/∂u_k) from the scores
// at jacobianPoints, (g(u + ηe_k) − g(u))/η. Its error against the
// derivative is η/2 times a second derivative of g: relative to J, η/2
// over the scale on which the curvature of the log-likelihood changes in
// u (of order 1), about 10⁻⁴ (TestForwardDiff), where the posterior sd
// needs J to a few per cent.
func forwardDiff(cols [][]float64, p int) []float64 {
	j := make([]float64, p*p)
	for k := range p {
		for i := range p {
			j[i*p+k] = (cols[1+k][i] - cols[0][i]) / jacobianEta
		}
	}
	return j
}

// newCV returns the control variate on est: second order when the
// preparation has a Jacobian (deterministic gradients).
// cvFilters is the number of window filters per control-variate
// gradient: g_S(u) and g_S(u*), and the second-order term's g_S at a
// point near u* when there is a Jacobian (ControlVariate.Difference).
func (f *fit) cvFilters() float64 {
	if f.prep.jacobian != nil {
		return 3
	}
	return 2
}

func (f *fit) newCV(est *gradient.Estimator) (*gradient.ControlVariate, error) {
	pr := &f.prep
	cv, err := gradient.NewControlVariate(est, pr.Mode, pr.Anchor)
	if err != nil {
		return nil, err
	}
	if pr.jacobian != nil {
		if err := cv.SetJacobian(pr.jacobian); err != nil {
			return nil, err
		}
	}
	return cv, nil
}

// fullSet is the estimator settings of the exact full-data score: every
// sequence one window.
func (f *fit) fullSet() gradient.Settings {
	set := f.gset
	set.Sampling = gradient.Full
	set.Choice = gradient.AllSequences
	set.Workers = 1
	return set
}

// fullScores returns the exact full-data score (f a subset: scaled up to
// the whole) at each of pts, evaluated in parallel.
func (f *fit) fullScores(ctx context.Context, pts [][]float64) ([][]float64, error) {
	if out, ok, err := f.chunkedScores(ctx, pts); ok || err != nil {
		return out, err
	}
	out := make([][]float64, len(pts))
	err := f.parallel(len(pts), f.fullSet(), func(est *gradient.Estimator, i int) error {
		g := make([]float64, f.dim)
		if _, err := est.Likelihood(ctx, g, pts[i], rand.New(rand.NewPCG(f.s.Seed, exactStream))); err != nil {
			return err
		}
		if f.scale != 0 {
			for a := range g {
				g[a] *= f.scale
			}
		}
		out[i] = g
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: full-data score: %w", err)
	}
	return out, nil
}

// fullChunk is the length of the chunks in which chunkedScores scores a
// sequence longer than twice as long, and fullBurn the rows on each side
// of a chunk that its filter and smoother read, their score not counted
// (ssm.Window's buffers: the smoothed statistics of a chunk's rows need
// the data after it too). The chunks are fixed by the data, not by the
// number of workers, so the scores are the same on any machine.
const (
	fullChunk = 250000
	fullBurn  = 10000
)

// chunkedScores is fullScores on data with a sequence longer than
// 2·fullChunk, by the model's exact scorer: each sequence's score is the
// sum of its chunks' scores, each chunk's window reaching fullBurn rows
// beyond it on either side, the chunks of every point on the workers (a
// single point's score on one worker took 21 s at T = 10⁶ for GARCH). The
// filter forgets its start, and the smoother its end, geometrically (GARCH on the S&P 500, the most persistent
// series here: φ ≈ 0.998, 0.998^10⁴ ≈ 2·10⁻⁹). It reports false, and
// does nothing, on shorter data or without an exact scorer.
func (f *fit) chunkedScores(ctx context.Context, pts [][]float64) ([][]float64, bool, error) {
	ex, ok := f.model.(ssm.ExactScorer)
	if !ok || !f.gset.Exact {
		return nil, false, nil
	}
	long := false
	for _, seq := range f.data.Sequences {
		long = long || seq.Len() > 2*fullChunk
	}
	if !long {
		return nil, false, nil
	}
	type job struct {
		pt, seq int
		w       ssm.Window
	}
	var jobs []job
	for i := range pts {
		for s, seq := range f.data.Sequences {
			T := seq.Len()
			for c := 0; c < T; c += fullChunk {
				e := c + fullChunk
				if T-e < fullChunk/2 {
					e = T
				}
				jobs = append(jobs, job{i, s, ssm.Window{Start: max(0, c-fullBurn), End: min(T, e+fullBurn), KeepStart: c, KeepEnd: e}})
				if e == T {
					break
				}
			}
		}
	}
	p := f.dim
	g := make([]float64, len(jobs)*p)
	err := workerPool(len(jobs), f.s.Workers, func() func(int) error {
		return func(j int) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			jb := jobs[j]
			_, err := ex.ExactScore(g[j*p:(j+1)*p], pts[jb.pt], f.data.Sequences[jb.seq], jb.w)
			return err
		}
	})
	if err != nil {
		return nil, true, fmt.Errorf("sgmcmc: full-data score: %w", err)
	}
	out := make([][]float64, len(pts))
	for i := range out {
		out[i] = make([]float64, p)
	}
	for j, jb := range jobs {
		for a, v := range g[j*p : (j+1)*p] {
			out[jb.pt][a] += v
		}
	}
	if f.scale != 0 {
		for _, o := range out {
			for a := range o {
				o[a] *= f.scale
			}
		}
	}
	return out, true, nil
}

// fullLogPost returns the log posterior of all of f's data by the exact
// full-data filter on values only (f a subset: its log-likelihood scaled
// up to the whole).
func (f *fit) fullLogPost() func(ctx context.Context, u []float64) (float64, error) {
	est := f.newEstimator(f.fullSet())
	scratch := make([]float64, f.dim)
	return func(ctx context.Context, u []float64) (float64, error) {
		lp, err := est.LogPosterior(ctx, u, rand.New(rand.NewPCG(f.s.Seed, exactStream)))
		if err != nil || f.scale == 0 {
			return lp, err
		}
		prior := f.model.LogPrior(scratch, u)
		return prior + f.scale*(lp-prior), nil
	}
}

// prepSubset reports whether PrepObs makes the preparation use a subset.
// A PrepObs below one block counts as one block (subsetBlock): a subset
// of PrepObs = 1 of 300 observations was empty, and the tiling panicked.
func (f *fit) prepSubset() bool {
	return f.s.PrepObs > 0 && f.total > 2*max(f.s.PrepObs, subsetBlock)
}

// subsetBlock is the length of the blocks a subset is made of.
const subsetBlock = 1000

// jacobianObs is the size of the subset the Jacobian uses on data more
// than twice as long.
const jacobianObs = 1000000

// subsetObs is the size of the subset the first Newton steps use on long
// data with deterministic gradients.
const subsetObs = 100000

// subset returns a copy of f whose data are blocks of subsetBlock observations
// spread evenly over the sequences, about n in all, and whose tilings are
// scaled by total/n to estimate the whole data's score and information.
func (f *fit) subset(n int) *fit {
	if f.scale != 0 {
		return f.thin(n)
	}
	stride := max(subsetBlock, int(float64(subsetBlock)*float64(f.total)/float64(max(n, 1))))
	var data ssm.Dataset
	kept, short := 0, subsetBlock
	for _, seq := range f.data.Sequences {
		// A sequence shorter than a block is one block.
		b := min(subsetBlock, seq.Len())
		for start := 0; b > 0 && start+b <= seq.Len(); start += stride {
			data.Sequences = append(data.Sequences, ssm.Sequence{Obs: seq.Obs, Y: seq.Y[start*seq.Obs : (start+b)*seq.Obs]})
			kept += b
			short = min(short, b)
		}
	}
	g := *f
	g.data, g.total, g.short = data, kept, short
	g.diff, g.diffOK = nil, false
	g.scale = float64(f.total) / float64(kept)
	g.log = func(format string, a ...any) { f.log("subset: "+format, a...) }
	return &g
}

// thin returns a subset of about n observations of the subset f: every
// k-th of its blocks, k ≈ f.total/n, its scores scaled to the whole data
// (subsetSE's finite-population factor 1 − 1/scale then counts the whole
// data, which overstates the variance a little).
func (f *fit) thin(n int) *fit {
	k := max(1, int(math.Round(float64(f.total)/float64(n))))
	var data ssm.Dataset
	kept := 0
	for i := 0; i < len(f.data.Sequences); i += k {
		data.Sequences = append(data.Sequences, f.data.Sequences[i])
		kept += f.data.Sequences[i].Len()
	}
	g := *f
	g.data, g.total = data, kept
	g.scale = f.scale * float64(f.total) / float64(kept)
	g.diff, g.diffOK = nil, false
	g.log = func(format string, a ...any) { f.log("subset: "+format, a...) }
	return &g
}

// anchorBatch is the fewest tiling passes each round of the anchor's
// refinement adds: a constant, not Workers, so that the number of passes,
// and the draws, do not depend on the machine.
const anchorBatch = 2

// morePasses returns the passes a round of the anchor's (or the bias
// correction's) refinement adds: want, at least anchorBatch, and no more
// than take the have passes so far to limit.
func morePasses(want, have, limit int) int {
	return min(max(want, anchorBatch), limit-have)
}
