package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
)

// newtonUnconverged is the length, in posterior sds, of a last Newton
// step past which the preparation warns (newtonWarning): well below the
// 15–90 sds of the steps on data that do not suit the model.
const newtonUnconverged = 3

// newtonWarning returns the preparation's warning when the Newton steps
// did not converge and the last moved more than newtonUnconverged
// posterior sds ("" for none; det: deterministic gradients). Subsets
// (scale set) do not warn, nor the exact scorer's steps, which go on
// with observedNewton. Eight steps and still far: the mode, the metric
// and the anchor rest on a point that is not the mode (constant,
// all-zero or mis-scaled data: steps of 15–90 sds).
func (f *fit) newtonWarning(conv, det bool, last float64) string {
	if conv || !(last > newtonUnconverged) || f.scale != 0 || det && f.prep.Exact {
		return ""
	}
	return fmt.Sprintf("Newton steps towards the posterior mode did not converge (the last moved %.1f posterior sds): "+
		"the preparation may be far from the mode, and the data may not suit the model or its prior", last)
}

// hessian returns −∇² log π at u: the information fisher (the blocks'
// empirical Fisher information, or −J) plus the prior's curvature (central
// differences of its gradient), made positive definite (eigenvalues below
// 10⁻⁸ of the largest replaced by their magnitude, at least that floor).
func (f *fit) hessian(u, fisher []float64) (*mat.SymDense, error) {
	p := f.dim
	h := f.information(u, fisher)
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		return nil, errors.New("sgmcmc: eigendecomposition of the Hessian failed")
	}
	vals := eig.Values(nil)
	top := vals[len(vals)-1]
	if !(top > 0) || math.IsInf(top, 0) {
		return nil, fmt.Errorf("sgmcmc: the information matrix at the mode is not positive (largest eigenvalue %v)", top)
	}
	clipped := false
	for k, v := range vals {
		if v < 1e-8*top {
			// A negative curvature (an indefinite −J away from the mode)
			// keeps its magnitude as the scale: clipped to 1e-8·top it
			// would make that direction's sd 10⁴ times the narrowest.
			vals[k], clipped = max(math.Abs(v), 1e-8*top), true
		}
	}
	if clipped {
		var q mat.Dense
		eig.VectorsTo(&q)
		var r mat.Dense
		r.Mul(&q, mat.NewDiagDense(p, vals))
		var full mat.Dense
		full.Mul(&r, q.T())
		for i := range p {
			for j := i; j < p; j++ {
				h.SetSym(i, j, 0.5*(full.At(i, j)+full.At(j, i)))
			}
		}
	}
	return h, nil
}

// information returns the symmetrised information matrix fisher (row-major
// p×p) plus the prior's curvature −∇²log p(u) (central differences), not
// clipped: it may be indefinite.
func (f *fit) information(u, fisher []float64) *mat.SymDense {
	p := f.dim
	hp := make([]float64, p*p)
	gp, gm := make([]float64, p), make([]float64, p)
	x := append([]float64(nil), u...)
	for j := range p {
		d := 1e-4 * math.Max(1, math.Abs(u[j]))
		x[j] = u[j] + d
		f.model.LogPrior(gp, x)
		x[j] = u[j] - d
		f.model.LogPrior(gm, x)
		x[j] = u[j]
		for i := range p {
			hp[i*p+j] = -(gp[i] - gm[i]) / (2 * d)
		}
	}
	h := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			h.SetSym(i, j, 0.5*(fisher[i*p+j]+fisher[j*p+i])+0.5*(hp[i*p+j]+hp[j*p+i]))
		}
	}
	return h
}

// newton runs Newton steps from u on the tiled score (see prepare) and
// returns the point, its tiling, Hessian and L, and the next stream.
func (f *fit) newton(ctx context.Context, u []float64, passes int, stream uint64) (_ []float64, t *tiling, h *mat.SymDense, l []float64, _ uint64, err error) {
	// Newton steps on the tiled score: each moves u towards the mode by
	// H⁻¹∇log π, limited to 5 posterior sds. With deterministic gradients
	// a secant line search on the directional derivative replaces the
	// limit (on a simulated SVM series of 10⁶ observations the warm-up
	// ends 77 posterior sds from the mode).
	det := f.deterministic()
	if det && f.prep.Exact && f.subInfo != nil && f.scale == 0 {
		// After Newton on a subset the model's exact scorer needs no
		// tiling of the whole data (a pass: 20 s at T = 10⁶ for GARCH).
		v, t, h, l, next, err := f.observedNewton(ctx, u, stream)
		if err != nil || h != nil {
			return v, t, h, l, next, err
		}
		u, stream = v, next
	}
	var run runaway
	for round := 0; round < 3; round++ {
		t = nil
		conv := false
		last := 0.0 // the last Newton step's length in posterior sds
		for it := 0; ; it++ {
			if t == nil {
				if t, err = f.scoreTile(ctx, u, passes, stream); err != nil {
					return nil, nil, nil, nil, stream, err
				}
				stream += uint64(passes)
				if det && f.diff == nil && f.diffOK {
					if err = f.setDiff(ctx, u, t, stream); err != nil {
						return nil, nil, nil, nil, stream, err
					}
					stream++
				}
			}
			if h, err = f.hessian(u, t.fisher); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if l, err = linalg.CholInverse(h); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if it == 8 || (det && f.prep.Exact) {
				// (The model's exact scorer goes to observedNewton from
				// the start: the blocks' Fisher information misleads it.)
				break
			}
			z, norm := f.newtonStep(u, t, l)
			if limit := 5.0; !det && norm > limit {
				for i := range z {
					z[i] *= limit / norm
				}
			}
			f.log("Newton step %d: %.2f posterior sds", it+1, norm)
			last = norm
			if det && norm < 0.5 {
				conv = true
				// Close enough: the anchor only needs a precise score at a
				// point near the mode, and u has its tiling already (one
				// full pass saved: 15 minutes at T = 10⁸).
				break
			}
			if !det || norm < 3 {
				// Near the mode the Newton step needs no line search.
				u = linalg.LMul(u, l, z)
				t = nil
				continue
			}
			if u, t, stream, err = f.lineSearch(ctx, u, l, z, t, stream); err != nil {
				return nil, nil, nil, nil, stream, err
			}
		}
		f.newtonWarn = f.newtonWarning(conv, det, last)
		if det && !conv && f.prep.Exact {
			var hObs *mat.SymDense
			var lObs []float64
			if u, t, hObs, lObs, stream, err = f.observedNewton(ctx, u, stream); err != nil {
				return nil, nil, nil, nil, stream, err
			}
			if hObs != nil {
				h, l = hObs, lObs
			}
		}
		before := f.gset.Grid
		if f.scale != 0 || !f.regrid(u) {
			break
		}
		run.add(conv, last, before, f.gset.Grid)
	}
	if err := run.check(f.dataWarn); err != nil {
		return nil, nil, nil, nil, stream, err
	}
	return u, t, h, l, stream, nil
}

// runaway records the Newton rounds of a grid filter's preparation that
// end with a regrid: unconverged rounds in a row, each of which moved u
// to where the grid must cover a state range runawayWiden times wider,
// are the log posterior rising without bound away from the data's scale.
// That is an improper posterior, not a far start: the SVM with exact
// zeros in the data (a zero's density N(0; 0, τ²eˣ) integrates to
// e^{σ²/8}/(√(2π)τ) over x ~ N(0, σ²), so the likelihood grows like
// e^{n₀σ²/8} along φ = 0, faster than any polynomial prior tail falls)
// ran to steps of 24–148 posterior sds on grids 3.6–7 times wider in two
// or three rounds at 15–30% zeros among the DAX returns, and the fit then
// sampled for more than ten minutes without an answer. At 10% zeros, and
// on every validated series, the preparation regrids at most once.
type runaway struct {
	streak                int // unconverged widening rounds in a row
	lastStep              float64
	firstGrid, latestGrid pf.Grid
}

func (r *runaway) add(conv bool, last float64, before, after pf.Grid) {
	if conv || after.Hi-after.Lo < runawayWiden*(before.Hi-before.Lo) {
		r.streak = 0
		return
	}
	if r.streak == 0 {
		r.firstGrid = before
	}
	r.streak++
	r.lastStep, r.latestGrid = last, after
}

// A runaway is runawayRounds widening rounds in a row whose last step is
// at least runawaySteps posterior sds, each widening the grid's range by
// runawayWiden at least.
const (
	runawayRounds = 2
	runawaySteps  = 10.0
	runawayWiden  = 1.5
)

// check returns nil, or the error of a runaway, naming the data's
// warnings (which may say why: zeros under the SVM).
func (r *runaway) check(dataWarn []string) error {
	if r.streak < runawayRounds || r.lastStep < runawaySteps {
		return nil
	}
	why := ""
	if len(dataWarn) > 0 {
		why = "; the data warn: " + strings.Join(dataWarn, "; ")
	}
	return fmt.Errorf("%w: %d rounds of Newton steps in a row moved to where the state's range grows, from [%.3g, %.3g] to [%.3g, %.3g], the last step %.1f posterior sds: "+
		"the log posterior keeps rising, so the posterior is improper or nearly so for these data and this model%s",
		ErrNoMode, r.streak, r.firstGrid.Lo, r.firstGrid.Hi, r.latestGrid.Lo, r.latestGrid.Hi, r.lastStep, why)
}

// observedNewton finds the mode for the model's exact scorer, on the
// exact full-data score (each sequence one window: no buffers) with the
// observed information −J (J its Jacobian by forward differences) plus
// the prior's curvature; on Laplace importance sampling, whose score is
// not its estimate's derivative, both come from differences of the
// estimate's values instead (valueNewton). Two things mislead the tiled Newton steps here.
// The blocks' empirical Fisher information assumes independent blocks:
// for GARCH on DAX (φ ≈ 0.99: the variance remembers about 100 days) it
// overstated the information 3- to 10-fold in two directions and its steps
// went on at 0.8–1.9 posterior sds. And a tiling's buffers forget the
// state too slowly: on the S&P 500 (φ ≈ 0.998, 0.998⁴⁰ = 0.92) the tiled
// score's zero was 1.3 posterior sds from the exact one. Far from the mode
// −J may be indefinite (on the S&P 500 at the warm-up's end one eigenvalue
// is −53), so the steps are Levenberg–Marquardt's:
// (H + μD) d = ∇log π with H = −J − ∇²log p, each accepted only where the
// exact log posterior increases (one pass on values), μ shrunk after a
// success and grown after a failure; D is diag(H) where H is positive
// definite (the full Newton step first), I where it is not (dampedStep).
// It stops when −J + prior curvature is
// positive definite and its Newton step is < 0.1 posterior sd, and
// returns u, the exact score there as a tiling (se 0, fisher −J), that H
// and its Cholesky factor; if it never gets there, h is nil (the caller's
// H stands).
func (f *fit) observedNewton(ctx context.Context, u []float64, stream uint64) (_ []float64, _ *tiling, h *mat.SymDense, l []float64, _ uint64, err error) {
	p := f.dim
	values, err := f.valueNewton(u)
	if err != nil {
		return nil, nil, nil, nil, stream, err
	}
	if info := f.subInfo; info != nil && !values && f.scale == 0 {
		f.subInfo = nil // one try
		v, t, h, l, err := f.subsetNewton(ctx, u, info)
		if err != nil || h != nil {
			return v, t, h, l, stream, err
		}
		u = v
	}
	lpost := f.fullLogPost()
	cur, err := lpost(ctx, u)
	if err != nil {
		return nil, nil, nil, nil, stream, err
	}
	var t *tiling
	var lm marquardt
	for range 20 {
		if t, err = f.observedDerivatives(ctx, u, values); err != nil {
			return nil, nil, nil, nil, stream, err
		}
		hj := f.information(u, t.fisher)
		var eig mat.EigenSym
		if !eig.Factorize(hj, false) {
			return nil, nil, nil, nil, stream, errors.New("sgmcmc: eigendecomposition of the observed information failed")
		}
		vals := eig.Values(nil)
		top := vals[p-1]
		if !(top > 0) || math.IsInf(top, 0) {
			return nil, nil, nil, nil, stream, fmt.Errorf("sgmcmc: the observed information is not positive (largest eigenvalue %v)", top)
		}
		g := make([]float64, p)
		f.model.LogPrior(g, u)
		for i := range g {
			g[i] += t.mean[i]
		}
		h, l = nil, nil
		if vals[0] > 0 {
			if lj, err := linalg.CholInverse(hj); err == nil {
				h, l = hj, lj
				z := linalg.LTrans(l, g)
				norm := math.Sqrt(linalg.Dot(z, z))
				f.log("Newton step with the observed information: %.2f posterior sds", norm)
				if norm < 0.1 {
					// Take this last step too (one pass): the anchor and
					// the IS proposal's centre then sit at the mode to
					// ~0.01 sd.
					v := linalg.LMul(u, l, z)
					sc, err := f.fullScores(ctx, [][]float64{v})
					if err != nil {
						return nil, nil, nil, nil, stream, err
					}
					t.mean = sc[0]
					return v, t, h, l, stream, nil
				}
			}
		} else {
			f.log("observed information not positive definite (smallest eigenvalue %.3g): damped steps", vals[0])
		}
		pd := h != nil
		u2, lv, moved, stalled, err := f.dampedStep(ctx, lpost, &lm, u, cur, hj, g, pd, vals[0], top)
		if err != nil {
			return nil, nil, nil, nil, stream, err
		}
		if !moved {
			// No ascent along any damped step: u is the mode to the
			// precision of the log posterior's rounding.
			return u, t, h, l, stream, nil
		}
		u, cur = u2, lv
		if stalled {
			f.log("Newton steps stalled: the last step, damped, gained under %g in log posterior", newtonStallGain)
			break
		}
	}
	// Not converged in 20 steps, or stalled: the score at the last u (t
	// was the previous point's), with the last −J; no H (the caller's
	// stands).
	sc, err := f.fullScores(ctx, [][]float64{u})
	if err != nil {
		return nil, nil, nil, nil, stream, err
	}
	t = &tiling{mean: sc[0], se: make([]float64, p), fisher: t.fisher, passes: 1, loglik: math.NaN(), full: true}
	return u, t, nil, nil, stream, nil
}

// subsetNewton is observedNewton's first steps on data long enough for
// Newton to have run on a subset first (newtonOnSubsets): quasi-Newton
// steps on the whole data's exact score, one full-data score a step where
// observedDerivatives takes p + 1 and a value pass (at T = 10⁶, GARCH's
// step took 85 s). The curvature starts as the subset's observed
// information info (f.subInfo, plus the prior's curvature at u) and is
// corrected after every step by the BFGS update from the step and the
// change of the score: the subset's −J is off by its sampling error,
// which for GARCH on 100 blocks of 1000 simulated rows at T = 10⁶ left a
// Newton step of 2.37 posterior sds after one of 4.73. It stops as
// observedNewton does, below 0.1 posterior sd (the step taken, with its
// score as the anchor and the updated curvature as the Hessian), and
// returns h = nil, and the point reached, when a step is longer than 6
// sds, longer than the one before, or eight steps do not get there:
// observedNewton then goes on from that point with the exact −J.
func (f *fit) subsetNewton(ctx context.Context, u, info []float64) (_ []float64, _ *tiling, h *mat.SymDense, l []float64, err error) {
	p := f.dim
	hj := f.information(u, info)
	var gPrev, uPrev []float64
	prev := math.Inf(1)
	for range 8 {
		sc, err := f.fullScores(ctx, [][]float64{u})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		g := make([]float64, p)
		f.model.LogPrior(g, u)
		for i := range g {
			g[i] += sc[0][i]
		}
		if gPrev != nil {
			bfgs(hj, uPrev, u, gPrev, g)
		}
		lj, err := linalg.CholInverse(hj)
		if err != nil {
			return u, nil, nil, nil, nil
		}
		z := linalg.LTrans(lj, g)
		norm := math.Sqrt(linalg.Dot(z, z))
		f.log("Newton step with the subset's observed information: %.2f posterior sds", norm)
		if norm < 0.1 {
			v := linalg.LMul(u, lj, z)
			sc, err := f.fullScores(ctx, [][]float64{v})
			if err != nil {
				return nil, nil, nil, nil, err
			}
			fisher := make([]float64, p*p)
			copy(fisher, info)
			t := &tiling{mean: sc[0], se: make([]float64, p), fisher: fisher, passes: 1, loglik: math.NaN(), full: true}
			return v, t, hj, lj, nil
		}
		if norm > 6 || norm >= prev {
			break
		}
		uPrev, gPrev, prev = u, g, norm
		u = linalg.LMul(u, lj, z)
	}
	f.log("Newton steps with the subset's observed information did not converge: steps with the whole data's")
	return u, nil, nil, nil, nil
}

// bfgs updates h, a curvature (minus the Hessian) of the log posterior,
// by the BFGS formula from the step s = u1 − u0 and the change of the
// score y = g0 − g1: h + yyᵀ/(yᵀs) − (hs)(hs)ᵀ/(sᵀhs). It skips an update
// whose curvature along the step, yᵀs, is not positive (h would lose
// positive definiteness).
func bfgs(h *mat.SymDense, u0, u1, g0, g1 []float64) {
	p := len(u0)
	s, y, hs := make([]float64, p), make([]float64, p), make([]float64, p)
	for i := range s {
		s[i], y[i] = u1[i]-u0[i], g0[i]-g1[i]
	}
	ys, shs := 0.0, 0.0
	for i := range p {
		for j := range p {
			hs[i] += h.At(i, j) * s[j]
		}
		ys += y[i] * s[i]
		shs += s[i] * hs[i]
	}
	if !(ys > 0) || !(shs > 0) {
		return
	}
	for i := range p {
		for j := i; j < p; j++ {
			h.SetSym(i, j, h.At(i, j)+y[i]*y[j]/ys-hs[i]*hs[j]/shs)
		}
	}
}

// observedDerivatives returns the full-data score at u and its −J as a
// tiling: from the scores at u and u + ηe_k (in parallel), or with values
// from the log-likelihood's values (valueDerivatives).
func (f *fit) observedDerivatives(ctx context.Context, u []float64, values bool) (*tiling, error) {
	p := f.dim
	var mean, fisher []float64
	if values {
		var err error
		if mean, fisher, err = f.valueDerivatives(ctx, u); err != nil {
			return nil, err
		}
	} else {
		sc, err := f.fullScores(ctx, jacobianPoints(u))
		if err != nil {
			return nil, err
		}
		mean, fisher = sc[0], linalg.Negated(forwardDiff(sc, p))
	}
	return &tiling{mean: mean, se: make([]float64, p), fisher: fisher, passes: 1, loglik: math.NaN(), full: true}, nil
}

// marquardt is observedNewton's damping μ, kept from one step to the next
// apart for positive definite and indefinite information (their μ have
// different units).
type marquardt struct{ pd, indefinite float64 }

// dampedStep returns u + d for the first damping μ, from lm's, at which
// (H + μD) d = g raises the log posterior above cur, with that log
// posterior; moved false if none did. The damping is μ·diag(H) where H
// is positive definite (Marquardt's scaling: the step shrinks alike in
// every direction, whatever u's units, and the full Newton step comes
// first), μ·I where it is not, μ at least the shift that makes it
// positive (smallest and top are H's extreme eigenvalues). A μ·I of 10⁻³
// of the largest eigenvalue on a positive definite H shrank the steps
// along its weak directions 10- to 100-fold: on GARCH at T = 10⁶
// (condition number above 10⁵) the steps moved 6.0, 4.1, 3.5, 3.0
// posterior sds at a minute each. stalled reports a gain under
// newtonStallGain from a damped step (for a positive definite H, one
// damped past half its length: a full step of 0.1 sd gains 0.005).
func (f *fit) dampedStep(ctx context.Context, lpost func(context.Context, []float64) (float64, error), lm *marquardt,
	u []float64, cur float64, h *mat.SymDense, g []float64, pd bool, smallest, top float64) (v []float64, lv float64, moved, stalled bool, err error) {
	p := f.dim
	damp := make([]float64, p)
	mu := max(lm.indefinite, -smallest+1e-3*top)
	grow := func() { mu = 4*mu + 1e-3*top }
	for i := range damp {
		damp[i] = 1
		if pd {
			damp[i] = h.At(i, i)
		}
	}
	if pd {
		mu = lm.pd
		grow = func() { mu = 4*mu + 0.25 }
	}
	defer func() {
		if pd {
			lm.pd = mu
		} else {
			lm.indefinite = mu
		}
	}()
	for try := 0; try < 30; try++ {
		if pd && mu > pdMaxDamping {
			// A positive definite H whose step fails even shrunk a
			// thousandfold: the score is not the log posterior's
			// gradient here (Laplace importance sampling's), and more
			// tries only cost log posteriors.
			break
		}
		a := mat.NewSymDense(p, nil)
		a.CopySym(h)
		for i := range p {
			a.SetSym(i, i, a.At(i, i)+mu*damp[i])
		}
		var d mat.VecDense
		if err := d.SolveVec(a, mat.NewVecDense(p, g)); err != nil {
			grow()
			continue
		}
		v = make([]float64, p)
		for i := range v {
			v[i] = u[i] + d.AtVec(i)
		}
		lv, err := lpost(ctx, v)
		if ctx.Err() != nil {
			return nil, 0, false, false, ctx.Err()
		}
		if err != nil || !(lv > cur) {
			grow()
			continue
		}
		if mu > 0 {
			f.log("damped Newton step (μ = %.3g): log posterior %+.3f", mu, lv-cur)
		}
		stalled = lv-cur < newtonStallGain && (!pd || mu > 1) && !f.noStall
		if mu /= 4; pd && mu < 0.01 || !pd && mu < 1e-6*top {
			mu = 0
		}
		return v, lv, true, stalled, nil
	}
	return nil, 0, false, false, nil
}

// pdMaxDamping is the largest Marquardt damping μ observedNewton tries on
// a positive definite information (its step then about a thousandth of
// Newton's). Where the score is not the log posterior's gradient the
// tries went on to μ ≈ 10¹² for a gain of 0.000: 26 log posteriors
// against 10 with the cap in TestNewtonDampingCap, 30 per step on
// MSV{D: 2} (testdata/msv_sim2.csv).
const pdMaxDamping = 1e3

// newtonStallGain ends observedNewton's damped steps on an indefinite
// information once a step gains less than this in log posterior. Such a
// score is not the derivative of the log posterior (Laplace importance
// sampling's Fisher-identity score is not that of its likelihood
// estimate), the damping grows, and the steps crawl: on MSV{D: 2}
// (testdata/msv_sim2.csv) ten steps in a row gained 0.001 or less, at
// p + 1 full-data scores each (4 s of a 68 s fit). TestNewtonStall
// checks that stopping loses under 20 times this against running on.
const newtonStallGain = 0.005

// newtonStep returns z = Lᵀg for the log posterior's gradient g at u (the
// tiled score t plus the prior's): the Newton step H⁻¹g = L Lᵀ g is L z,
// and its length in posterior sds is |z|.
func (f *fit) newtonStep(u []float64, t *tiling, l []float64) ([]float64, float64) {
	g := make([]float64, f.dim)
	f.model.LogPrior(g, u)
	for i := range g {
		g[i] += t.mean[i]
	}
	z := linalg.LTrans(l, g)
	return z, math.Sqrt(linalg.Dot(z, z))
}

// lineSearch moves u along the Newton direction d = L z to where the
// log posterior's directional derivative φ'(s) = ∇log π(u + s d)·d
// vanishes, by one secant step from φ'(0) and φ'(1): each evaluation is
// one deterministic tiling, and only scores are used (the windows'
// log-likelihoods count the buffers and are not the full one's). The
// step is capped at 4 (an undershooting metric: the empirical Fisher
// information overstates the curvature under heavy tails).
func (f *fit) lineSearch(ctx context.Context, u, l, z []float64, t0 *tiling, stream uint64) ([]float64, *tiling, uint64, error) {
	p := f.dim
	d := linalg.LMul(make([]float64, p), l, z) // L z
	slope := func(t *tiling, v []float64) float64 {
		g := make([]float64, p)
		f.model.LogPrior(g, v)
		s := 0.0
		for i := range g {
			s += (g[i] + t.mean[i]) * d[i]
		}
		return s
	}
	at := func(s float64) ([]float64, *tiling, error) {
		v := make([]float64, p)
		for i := range v {
			v[i] = u[i] + s*d[i]
		}
		t, err := f.scoreTile(ctx, v, 1, stream)
		stream++
		return v, t, err
	}
	d0 := slope(t0, u)
	// A trial that fails (outside the parameter space, or a filter that
	// breaks down at absurd parameters) is too far: halve it.
	s1 := 1.0
	v1, t1, err := at(s1)
	for k := 0; err != nil && ctx.Err() == nil && k < 40; k++ {
		s1 /= 2
		v1, t1, err = at(s1)
	}
	if err != nil {
		return nil, nil, stream, err
	}
	d1 := slope(t1, v1)
	if !(d0 > 0) || d0-d1 <= 0 {
		return v1, t1, stream, nil
	}
	s := min(4, d0/(d0-d1)) * s1
	if math.Abs(s-s1) < 0.1*s1 {
		return v1, t1, stream, nil
	}
	v2, t2, err := at(s)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, stream, err
		}
		return v1, t1, stream, nil
	}
	return v2, t2, stream, nil
}
