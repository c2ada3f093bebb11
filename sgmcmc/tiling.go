package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// tiling is the result of tiling passes at one point.
type tiling struct {
	mean, se []float64 // full-data likelihood score: average over passes and its standard error
	fisher   []float64 // empirical Fisher information of the blocks, averaged over passes
	passes   int
	loglik   float64 // the passes' mean log-likelihood estimate
	// subSE is, on a subset (fit.scale ≠ 0), the standard error of mean
	// as an estimate of the whole data's score from the subset's sampling
	// alone: the subset's blocks are a sample of the data's, and every
	// pass shares them, so more passes do not reduce it.
	subSE []float64
	// blk is, on a subset with one pass, the score summed per block
	// (block-major, unscaled): scoreTile differences it.
	blk []float64
	// full marks the exact full-data score (every sequence one window)
	// with fisher = −J, from observedNewton.
	full bool
}

// anchorSE returns the anchor's standard error: Monte Carlo and, on a
// subset, sampling.
func (t *tiling) anchorSE() []float64 {
	se := append([]float64(nil), t.se...)
	for a := range t.subSE {
		se[a] = math.Hypot(se[a], t.subSE[a])
	}
	return se
}

// parallel calls job(est, i) for every i in [0, n) on up to Workers
// goroutines, each with its own estimator of settings set (estimators own
// filter workspaces). Jobs write only to their own index; the errors are
// joined.
func (f *fit) parallel(n int, set gradient.Settings, job func(est *gradient.Estimator, i int) error) error {
	return workerPool(n, f.s.Workers, func() func(int) error {
		est := f.newEstimator(set)
		return func(i int) error { return job(est, i) }
	})
}

// workerPool runs jobs 0 … n−1 on min(workers, n) goroutines; each
// goroutine calls newWorker once for its own job function (its own
// workspace). It returns the jobs' errors joined.
func workerPool(n, workers int, newWorker func() func(int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			job := newWorker()
			for i := range next {
				errs[i] = job(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// tileParts is the number of interleaved sets of blocks a single pass of
// a deterministic estimator is split into (Estimator.TilePart), taken by
// the workers. It is fixed, not Workers: the parts' sums are added in part
// order, so the score, and every draw after it, is the same whatever
// GOMAXPROCS or Workers is (with parts = Workers the DAX fit's summary
// differed in the 15th digit between GOMAXPROCS 1 and 2).
const tileParts = 8

// tileSplit returns the number of parts each of passes tiling passes
// with set is split into: tileParts for a single pass of a deterministic
// estimator (a long series' exact score, read once), else 1 (the passes
// themselves keep the workers busy).
func tileSplit(passes int, set gradient.Settings) int {
	if passes == 1 && (set.Exact || set.Grid.Nodes > 0) {
		return tileParts
	}
	return 1
}

// tile runs passes tiling passes at u on the workers, with random offsets;
// a single pass of a deterministic estimator is split into tileParts, so
// that a long series' exact score takes about 1/Workers of the time.
func (f *fit) tile(ctx context.Context, u []float64, passes int, stream uint64, set gradient.Settings) (*tiling, error) {
	p := f.dim
	parts := tileSplit(passes, set)
	type partial struct {
		g, fi, sum []float64
		blk        []float64 // on a subset: the score summed per block (sequence)
		nw         int
		ll         float64
	}
	nblk := 0
	if f.scale != 0 {
		nblk = len(f.data.Sequences)
	}
	res := make([]partial, passes*parts)
	err := f.parallel(passes*parts, set, func(est *gradient.Estimator, job int) error {
		i, part := job/parts, job%parts
		rng := rand.New(rand.NewPCG(f.s.Seed, stream+uint64(i)))
		offset := rng.IntN(max(f.s.S, 1))
		r := partial{g: make([]float64, p), fi: make([]float64, p*p), sum: make([]float64, p), blk: make([]float64, nblk*p)}
		ll, err := est.TilePart(ctx, r.g, u, offset, part, parts, rng, func(seq int, _ ssm.Window, gw []float64) {
			r.nw++
			if nblk > 0 {
				for a, va := range gw {
					r.blk[seq*p+a] += va
				}
			}
			for a, va := range gw {
				r.sum[a] += va
				for b, vb := range gw {
					r.fi[a*p+b] += va * vb
				}
			}
		})
		if err != nil {
			return err
		}
		r.ll = ll
		res[job] = r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: full-data score: %w", err)
	}
	grads := make([][]float64, passes)
	fishers := make([][]float64, passes)
	ll := 0.0
	for i := range passes {
		g, fi, sum, nw := make([]float64, p), make([]float64, p*p), make([]float64, p), 0
		for _, r := range res[i*parts : (i+1)*parts] {
			for a := range p {
				g[a] += r.g[a]
				sum[a] += r.sum[a]
			}
			for a := range fi {
				fi[a] += r.fi[a]
			}
			nw += r.nw
			ll += r.ll / float64(passes)
		}
		// Centre: Σ (g_w − ḡ)(g_w − ḡ)ᵀ, so the information is right away
		// from the mode too.
		for a := range p {
			for b := range p {
				fi[a*p+b] -= sum[a] * sum[b] / float64(max(nw, 1))
			}
		}
		grads[i], fishers[i] = g, fi
	}
	t := &tiling{mean: make([]float64, p), se: make([]float64, p), fisher: make([]float64, p*p), passes: passes, loglik: ll}
	if f.scale != 0 {
		t.subSE = subsetSE(res, passes, parts, nblk, p, f.scale, func(r partial) []float64 { return r.blk })
		if passes == 1 {
			t.blk = make([]float64, nblk*p)
			for _, r := range res {
				for k, v := range r.blk {
					t.blk[k] += v
				}
			}
		}
		for i := range grads {
			for a := range grads[i] {
				grads[i][a] *= f.scale
			}
			for a := range fishers[i] {
				fishers[i][a] *= f.scale
			}
		}
		t.loglik *= f.scale
	}
	for i := range grads {
		for a := range p {
			t.mean[a] += grads[i][a] / float64(passes)
		}
		for a := range p * p {
			t.fisher[a] += fishers[i][a] / float64(passes)
		}
	}
	if passes > 1 {
		for a := range p {
			v := 0.0
			for i := range grads {
				d := grads[i][a] - t.mean[a]
				v += d * d
			}
			t.se[a] = math.Sqrt(v / float64(passes-1) / float64(passes))
		}
	}
	return t, nil
}

// subsetSE returns the sampling standard error of a subset's scaled score
// total/n·Σ_blocks b_k as an estimate of the whole data's: the m blocks
// are treated as a sample without replacement of the data's m·scale,
// Var = scale²·m·s²_b·(1 − 1/scale) with s²_b the blocks' sample variance
// (averaged over the passes, which share the blocks). blocks(r) returns a
// job's per-block sums (the parts of a pass own disjoint tiling blocks
// but may share a subset block, so they are added first).
func subsetSE[R any](res []R, passes, parts, m, p int, scale float64, blocks func(R) []float64) []float64 {
	se := make([]float64, p)
	if m < 2 {
		return se
	}
	b := make([]float64, m*p)
	for i := range passes {
		clear(b)
		for _, r := range res[i*parts : (i+1)*parts] {
			for k, v := range blocks(r) {
				b[k] += v
			}
		}
		addBlockVar(se, b, m, p, scale, 1/float64(passes))
	}
	for a := range se {
		se[a] = math.Sqrt(se[a])
	}
	return se
}

// addBlockVar adds w·scale²·m·s²_b·(1 − 1/scale) to v[a] for every
// coordinate a: the sampling variance of scale·Σ_k b_k (m blocks,
// block-major b) as an estimate of the whole data's total, s²_b the
// blocks' sample variance (see subsetSE).
func addBlockVar(v, b []float64, m, p int, scale, w float64) {
	for a := range p {
		mean := 0.0
		for k := range m {
			mean += b[k*p+a]
		}
		mean /= float64(m)
		ss := 0.0
		for k := range m {
			d := b[k*p+a] - mean
			ss += d * d
		}
		v[a] += w * scale * scale * float64(m) * ss / float64(m-1) * max(0, 1-1/scale)
	}
}

// diffBase is the full data's tiling at u0 and a subset's at u0, from
// which scoreTile makes the full data's score at any u without reading
// all the data again.
type diffBase struct {
	full, at0 *tiling
	sub       *fit
	stream    uint64 // the subset's tiling stream (its offsets)
}

// scoreTile is the deterministic full-data tiling at u that Newton and its
// line search use: f.tile, or, once newton has read all the data at u0
// (diff set), the difference estimate
//
//	ĝ(u) = ĝ_full(u0) + scale·Σ_{b ∈ subset} [g_b(u) − g_b(u0)]
//
// on the same blocks and windows. Its error is the subset's sampling
// error of a difference of scores at nearby points, not of a score (which
// would move the mean by √(T/n − 1) sds, see PrepObs): on a simulated SVM
// series of 10⁷ observations, with 10⁶ of them in the subset and Newton's
// steps 5.51, 0.67 and 0.18 posterior sds from u0, it may move the mean by
// 0.05 posterior sd (reported in subSE, so the anchor's ShiftSD includes
// it; prepareAt reads all the data again above 0.1). The full data are
// read once instead of two or three times (about ten minutes a pass at
// T = 10⁸).
func (f *fit) scoreTile(ctx context.Context, u []float64, passes int, stream uint64) (*tiling, error) {
	d := f.diff
	if d == nil {
		return f.tile(ctx, u, passes, stream, f.tileSet())
	}
	ts, err := d.sub.tile(ctx, u, 1, d.stream, d.sub.tileSet())
	if err != nil {
		return nil, err
	}
	p := f.dim
	t := &tiling{mean: make([]float64, p), se: make([]float64, p), fisher: ts.fisher, passes: 1,
		loglik: d.full.loglik + ts.loglik - d.at0.loglik, subSE: make([]float64, p)}
	for a := range p {
		t.mean[a] = d.full.mean[a] + ts.mean[a] - d.at0.mean[a]
	}
	m := len(ts.blk) / p
	if m >= 2 {
		b := make([]float64, len(ts.blk))
		for k := range b {
			b[k] = ts.blk[k] - d.at0.blk[k]
		}
		addBlockVar(t.subSE, b, m, p, d.sub.scale, 1)
		for a := range t.subSE {
			t.subSE[a] = math.Sqrt(t.subSE[a])
		}
	}
	return t, nil
}

// setDiff makes scoreTile difference from f's tiling t at u0 (newton
// calls it when diffOK): a subset of diffObs observations (a tenth of f's at most) is
// tiled at u0 once. f is the whole data or, from 10⁶ observations on, a
// Newton level's subset (whose own subset thins its blocks).
func (f *fit) setDiff(ctx context.Context, u0 []float64, t *tiling, stream uint64) error {
	sub := f.subset(min(diffObs, f.total/10))
	at0, err := sub.tile(ctx, u0, 1, stream, sub.tileSet())
	if err != nil {
		return err
	}
	f.diff = &diffBase{full: t, at0: at0, sub: sub, stream: stream}
	f.log("Newton's next scores: this point's from all %d observations plus differences on a subset of %d", f.total, sub.total)
	return nil
}

// diffObs is the size of the subset scoreTile differences on.
const diffObs = 1000000

// merge adds the passes of o to t.
func (t *tiling) merge(o *tiling) {
	n1, n2 := float64(t.passes), float64(o.passes)
	n := n1 + n2
	for a := range t.mean {
		// Pooled variance of the pass values from the two groups.
		v1 := t.se[a] * t.se[a] * n1 * (n1 - 1)
		v2 := o.se[a] * o.se[a] * n2 * (n2 - 1)
		m := (n1*t.mean[a] + n2*o.mean[a]) / n
		v := v1 + v2 + n1*(t.mean[a]-m)*(t.mean[a]-m) + n2*(o.mean[a]-m)*(o.mean[a]-m)
		t.mean[a] = m
		if n > 1 {
			t.se[a] = math.Sqrt(v / (n - 1) / n)
		}
	}
	for a := range t.fisher {
		t.fisher[a] = (n1*t.fisher[a] + n2*o.fisher[a]) / n
	}
	t.passes += o.passes
}

// tileSet is the estimator settings of tiling passes. With deterministic
// gradients on long data the blocks are up to 10S long: a pass costs (1 + 2B/S')·T
// filter steps, and unlike a particle filter's a long block's statistic
// does not degenerate. The block length does not matter otherwise (B is
// long enough for the buffer bias to be negligible, so every tiling and
// the windows' mean estimate the same full-data score).
func (f *fit) tileSet() gradient.Settings {
	set := f.gset
	if f.deterministic() {
		// At least 500 blocks: the empirical Fisher information of the
		// blocks sets the first metric, and a few blocks give a poor one
		// (with 4 blocks of 400 on DAX the first adaptation window's
		// chains ran 2–3 posterior sds wide).
		set.S = max(set.S, min(10*set.S, f.short-2*set.B, f.total/500))
	}
	return set
}
