// Package surrogate fits the surrogate π̃ of sgmcmc.Fit's full-data
// posterior and runs the surrogate transitions of its chains.
//
// FullGradient's chains spend nearly all of their
// time in log posteriors, and an independence step from the t mixture q
// is a fresh draw only when it is accepted: GARCH on DAX holds about 1.5
// steps per move. The points where π has already been evaluated (the
// importance-sampling rounds, then the chains' own draws) describe
// log π − log q well in the bulk (residuals of 0.03–0.13 nats on GARCH's
// DAX posterior within 2.3 nats of its top), so the chains propose from a
// surrogate
//
//	π̃(u) = q(u)·((1 − ε)(e^{r_u(u) − Z_u} + e^{r_θ(u) − Z_θ})/2 + ε),
//
// q's share ε defensive, and two fits to the same points, each
// normalised under q (Z = log E_q e^r):
//
//	r_u(u) = min(a(ẑ) + g(z), C),                z = L⁻¹(u − m),
//	r_θ(u) = min(log p(u) − log q(u) + a′(ẑ′) + g′(z′), C),  z′ = L′⁻¹(θ(u) − m′),
//
// with a, a′ quadratics in the whitened coordinates fitted by weighted
// least squares (weights: the points' importance weights as draws from
// π) and held beyond the design's radius at their value on the sphere
// (ẑ = z·min(1, R/|z|)), g, g′ Gaussian-process interpolations of the
// rest (length ℓ chosen by leave-one-out error), and C the largest
// log π − log q at the points plus a margin, so that π̃ ≤ e^C q is proper
// with q's heavy tails. r_u models log π − log q in u. r_θ models only
// the log-likelihood log π − log p, in the natural parameters θ =
// Constrain(u), where a bounded parameter's log-likelihood stays finite
// at its bound, and leaves π̃'s tails to the prior p (exact, with the
// transform's Jacobian): GARCH's μ has its posterior tail at its bound
// (u_μ → ∞ as φ → 1) from the transform's Jacobian alone, the DAX
// log-likelihood along that ridge changing by 0.27 nats from μ = 1.2 to
// 2 (nearly a quadratic in μ) while the log prior falls by 7. A quadratic
// in u cannot follow that, and a surrogate short of π there holds chains
// where they stand (stays of 15–25 iterations at μ ≈ 1.97 on DAX seeds
// 4 and 5). But θ is the worse frame in the bulk where a parameter
// crowds its bound (φ ≈ 0.99): r_θ alone fitted the simulated GARCH
// series worse than r_u (leave-one-out holding time 1.37–1.43 against
// 1.1–1.2) and took eight importance-sampling rounds. In equal shares
// π̃ falls short of π only where both fits do, at a cost of at most a
// factor 2 where one of them is right.
package surrogate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/internal/par"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
	"gonum.org/v1/gonum/mat"
)

// A surrogate transition (Liu 2001, §9.4.3; delayed acceptance, Christen
// and Fox 2005) runs surSteps steps of a π̃-reversible kernel P from the
// current point u (a mixture of independence steps from q and random-walk
// steps, both Metropolis–Hastings on π̃) to a point u', then accepts u'
// with probability min(1, π(u')π̃(u)/(π(u)π̃(u'))). P^K is π̃-reversible
// (a power of a reversible kernel), so this is a Metropolis–Hastings step
// on π with a proposal whose ratio is π̃'s: the chain targets π exactly
// whatever the surrogate's error, which costs only acceptance. It needs
// one log posterior without gradient per step, as an independence step.

// Surrogate is a fitted π̃ relative to the independence proposal it was
// fitted with (sgmcmc.Fit's independence proposal).
type Surrogate struct {
	// PriorBase: the quadratic and the Gaussian process model
	// log π − log p in the natural parameters θ, the prior p evaluated
	// exactly (base); false: they model log π − log q in u.
	PriorBase bool
	Mean      []float64 // m, the whitening centre
	Chol      []float64 // L, row-major lower triangular
	Quad      []float64 // a's coefficients, monomials of z of degree ≤ 2: 1, z_j, then z_j z_k for j ≤ k
	Radius    float64   // a is held beyond |z| = Radius
	Points    []float64 // z_i, row-major n×p
	Alpha     []float64 // α_i
	Ell       float64   // ℓ
	// Cap bounds a + gp from above: the largest log π − log q at the
	// fitted points plus 0.5 (2 with PriorBase). A quadratic curving upwards along
	// some axis would otherwise put most of π̃'s mass in q's far tails
	// (the LGSSM on the S&P 500: its surrogate's mass there made it no
	// better than q).
	Cap float64
	// Defensive is ε and LogZ log E_q[e^min(a+gp, Cap)]: the surrogate's
	// density is q·((1 − ε)e^{min(a+gp, Cap)−LogZ} + ε), never below εq.
	Defensive, LogZ float64
	// base is the prior and θ(u) when PriorBase (not saved: bound by
	// the fit).
	base *Base
	// Natural, when set, is a second fit on the prior and θ
	// (PriorBase) to the same points: π̃/q is then
	// (1 − ε)(e^{raw−LogZ} + e^{raw_N−LogZ_N})/2 + ε, each fit
	// normalised under q, so that π̃ falls short of π only where both
	// do.
	Natural *Surrogate `json:",omitempty"`
	// Hold and HoldProposal are the expected holding times of surrogate
	// transitions and of independence steps from q alone, estimated on
	// the fitted points (leave-one-out residuals for the surrogate).
	Hold, HoldProposal float64
}

// Surrogate fitting settings.
const (
	// surSteps is the number of steps of P per surrogate transition (each
	// costs one evaluation of r: microseconds against a log posterior's
	// milliseconds).
	surSteps = 20

	// surMaxPoints bounds the Gaussian process's design (its Cholesky
	// factor costs n³/3 per length tried).
	surMaxPoints = 800
	// surNugget is the Gaussian process's noise variance (nats²) over a
	// unit prior variance.
	surNugget = 0.01
	// Gain is how much shorter the surrogate's holding time must be
	// than q's for the chains to use it: a surrogate costs its fit and
	// surSteps evaluations of r per transition, so a gain below 5% is
	// left unused (TestSurrogateWorth).
	Gain = 0.95
	// surDefensive is ε, the share of q in the surrogate's density: the
	// Gaussian process follows the bulk closely but can fall short of π
	// in a thin tail (GARCH's μ → 2 as φ → 1 on DAX, where chains stood
	// for 7–14 steps without it), and a surrogate below π holds a chain
	// where it is; q's share bounds π/π̃ by π/(εq).
	surDefensive = 0.2
	// WalkShare is the share of random-walk Metropolis steps on π
	// (values only) among the steps of chains with a surrogate, and
	// Walk their scale (over √p, in the chains' metric): where the
	// surrogate has far too little mass a chain stands still until a
	// local step moves it on.
	WalkShare = 0.1
	// surCapMargin is Cap's margin over the largest fitted log π − log q,
	// and surCapMarginNatural the natural fit's (PriorBase): the fit in
	// u extrapolates its quadratic upwards beyond the points and needs a
	// tight cap, while the natural fit's prior term is exact, and where
	// the likelihood flattens towards a bound (GARCH's μ → 2) π/q at the
	// tail's few points is below what it is farther out, so a tight cap
	// cut the very tail mass that fit is for (TestSurCapMargin: on such
	// a target the u fit's tail mass is 0.8 of π's at 0.5 and 2.9 times
	// it at 2; the natural fit's is 0.67 of its uncapped one at 0.5 and
	// all of it at 2). GARCH on DAX, seeds 1–8: 3,633 iterations in all,
	// 4,119 with 0.5 for both, 3,673 with 2 for both.
	// GARCH on DAX (σ² node filter at 24 nodes, when it was the
	// default), seeds 1–8: 204 s in all with 2 against
	// 226 s with 0.5 (seed 5: 22.3 s against 33.7, seed 7: 35.4 against
	// 43.5), the same accuracy; at 32 nodes, a margin of 5 took 247 s
	// against 296 but made seed 2 slower (46.9 s against 37.3: its
	// chains then proposed far out and its proposal could not be
	// refitted after the first segment).
	surCapMargin        = 0.5
	surCapMarginNatural = 2.0
	Walk                = 1.0
)

// surZDraws is the number of draws from q that estimate LogZ.
const surZDraws = 4000

// surLengths are the Gaussian-process lengths (in whitened sds) tried.
var surLengths = []float64{0.6, 0.9, 1.3}

// surCut returns how far below the best log posterior a point may lie
// to be fitted, for p parameters: beyond it π has no mass to speak of
// (the 1 − 10⁻⁶ contour of a Gaussian in p = 4 dimensions is 16 nats
// down) and the points only distort the fit.
func surCut(p int) float64 { return 10 + 1.5*float64(p) }

// surMonomials returns the number of monomials of degree ≤ 2 in p
// variables, in surQuadRow's order: 1, z_j, then z_j z_k for j ≤ k.
func surMonomials(p int) int { return 1 + p + p*(p+1)/2 }

// surQuad returns the quadratic a(z) with coefficients c.
func surQuad(c, z []float64) float64 {
	p := len(z)
	v := c[0]
	for j := range p {
		v += c[1+j] * z[j]
	}
	k := 1 + p
	for j := range p {
		for l := j; l < p; l++ {
			v += c[k] * z[j] * z[l]
			k++
		}
	}
	return v
}

// surQuadRow stores the monomials of z in dst.
func surQuadRow(dst, z []float64) {
	p := len(z)
	dst[0] = 1
	copy(dst[1:], z)
	k := 1 + p
	for j := range p {
		for l := j; l < p; l++ {
			dst[k] = z[j] * z[l]
			k++
		}
	}
}

// Base is what a prior-based surrogate knows exactly: the log prior
// density in u and the natural parameters θ(u) (the model's LogPrior and
// Constrain).
type Base struct {
	LogPrior  func(u []float64) float64
	Constrain func(theta, u []float64)
}

// Work is a chain's scratch for the surrogate.
type Work struct {
	z, zc, th []float64
}

func NewWork(p int) *Work {
	return &Work{z: make([]float64, p), zc: make([]float64, p), th: make([]float64, p)}
}

// coords returns the point the fit sees for u: θ(u) in w.th when
// PriorBase, else u.
func (s *Surrogate) coords(u []float64, w *Work) []float64 {
	if !s.PriorBase {
		return u
	}
	s.base.Constrain(w.th, u)
	return w.th
}

// r returns r(u) = log π̃(u) − log q(u), given lq = log q(u). It
// allocates nothing beyond what the prior and Constrain do.
func (s *Surrogate) R(u []float64, lq float64, w *Work) float64 {
	a := s.raw(u, lq, w)
	if s.Natural == nil {
		if s.Defensive > 0 {
			return math.Log((1-s.Defensive)*math.Exp(a-s.LogZ) + s.Defensive)
		}
		return a
	}
	b := s.Natural.raw(u, lq, w)
	return surMix(a-s.LogZ, b-s.Natural.LogZ, s.Defensive)
}

// surMix returns log((1 − ε)(e^a + e^b)/2 + ε): the two fits (each
// normalised under q) in equal shares, and q's defensive share ε.
func surMix(a, b, eps float64) float64 {
	m := math.Max(a, b)
	mix := m + math.Log(0.5*(math.Exp(a-m)+math.Exp(b-m)))
	return math.Log((1-eps)*math.Exp(mix) + eps)
}

// raw returns this fit's own min(·, Cap) term of r (see Surrogate),
// unnormalised.
func (s *Surrogate) raw(u []float64, lq float64, w *Work) float64 {
	p := len(u)
	rad := math.Sqrt(tmix.Mahalanobis2(s.coords(u, w), s.Mean, s.Chol, w.z))
	copy(w.zc, w.z)
	if rad > s.Radius {
		for j := range w.zc {
			w.zc[j] *= s.Radius / rad
		}
	}
	v := surQuad(s.Quad, w.zc)
	c := -0.5 / (s.Ell * s.Ell)
	for i, a := range s.Alpha {
		zi := s.Points[i*p : (i+1)*p : (i+1)*p]
		d := 0.0
		for j, x := range zi {
			t := w.z[j] - x
			d += t * t
		}
		if e := c * d; e > -700 {
			v += a * fmath.ExpCore(e)
		}
	}
	if s.PriorBase {
		v += s.base.LogPrior(u) - lq
	}
	return math.Min(v, s.Cap)
}

// fitSurrogate fits π̃ relative to q to the points xs with log posteriors
// lps and log weights lw as draws from π (importance weights; equal for
// a chain's draws), on base (nil: the fit models log π − log q in u),
// with the fixed generator (seed, stream) for its normalisers. It
// returns an error when the points cannot support a fit; whether the fit
// is worth using is Hold against HoldProposal. The two fits (in u and on
// base) and their Gaussian processes' lengths run on up to workers
// goroutines; the result does not depend on their number.
func Fit(q *tmix.Mixture, xs [][]float64, lps, lw []float64, base *Base, seed, stream uint64, workers int) (*Surrogate, error) {
	var parts [2]struct {
		s              *Surrogate
		y, pred, omega []float64
		err            error
	}
	bases := []*Base{nil}
	if base != nil {
		bases = append(bases, base)
	}
	par.Do(len(bases), workers, func(i int) {
		r := &parts[i]
		r.s, r.y, r.pred, r.omega, r.err = fitPart(q, xs, lps, lw, bases[i], workers)
	})
	s, y, pred, omega, err := parts[0].s, parts[0].y, parts[0].pred, parts[0].omega, parts[0].err
	if err != nil {
		return nil, err
	}
	n, p := len(y), len(xs[0])
	var predN []float64
	if base != nil && parts[1].err == nil {
		s.Natural, predN = parts[1].s, parts[1].pred
	}
	// Holding times on the points: x weighted as draws from π, y as
	// draws from the proposal (π̃ or q), ν ∝ ω·π̃/π.
	hold := func(e []float64) float64 {
		nu := make([]float64, n)
		for j := range nu {
			nu[j] = math.Log(omega[j]) - e[j]
		}
		_, h := tmix.IndependenceRates(omega, tmix.Normalized(nu), e)
		return h
	}
	eps := surDefensive
	if eps > 0 || s.Natural != nil {
		// log E_q[e^raw] of each fit by draws from q (a fixed stream:
		// the fit is deterministic).
		rng := rand.New(rand.NewPCG(seed, stream))
		w := NewWork(p)
		v, sc := make([]float64, p), make([]float64, p)
		vals, valsN := make([]float64, surZDraws), make([]float64, surZDraws)
		for i := range vals {
			q.Draw(v, sc, rng)
			lq := q.LogDensity(v, sc)
			vals[i] = s.raw(v, lq, w)
			if s.Natural != nil {
				valsN[i] = s.Natural.raw(v, lq, w)
			}
		}
		s.LogZ = tmix.LogSumExp(vals) - math.Log(surZDraws)
		if s.Natural != nil {
			s.Natural.LogZ = tmix.LogSumExp(valsN) - math.Log(surZDraws)
		}
		s.Defensive = eps
	}
	// The LOO residuals log π − log q − r.
	res := make([]float64, n)
	for j := range res {
		switch {
		case s.Natural != nil:
			res[j] = y[j] - surMix(pred[j]-s.LogZ, predN[j]-s.Natural.LogZ, eps)
		case eps > 0:
			res[j] = y[j] - math.Log((1-eps)*math.Exp(pred[j]-s.LogZ)+eps)
		default:
			res[j] = y[j] - pred[j]
		}
	}
	s.Hold = hold(res)
	s.HoldProposal = hold(y)
	return s, nil
}

// surSelect returns the indices of the points a surrogate in p
// dimensions is fitted to: finite log posterior lps and log weight lw
// (not +∞), the log posterior within surCut(p) of the largest, evenly
// thinned to surMaxPoints.
func surSelect(lps, lw []float64, p int) []int {
	top := math.Inf(-1)
	for _, v := range lps {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	var sel []int
	for i, v := range lps {
		if !math.IsInf(v, 0) && !math.IsNaN(v) && !math.IsInf(lw[i], 1) && !math.IsNaN(lw[i]) && v >= top-surCut(p) {
			sel = append(sel, i)
		}
	}
	if len(sel) > surMaxPoints { // evenly thinned
		th := make([]int, surMaxPoints)
		for k := range th {
			th[k] = sel[k*len(sel)/surMaxPoints]
		}
		sel = th
	}
	return sel
}

// fitPart fits one term of the surrogate (on base, or in u when base is
// nil) and returns it with y = log π − log q at its design's points, its
// capped leave-one-out predictions of the term there, and the points'
// normalised weights.
func fitPart(q *tmix.Mixture, xs [][]float64, lps, lw []float64, base *Base, workers int) (s *Surrogate, y, pred, omega []float64, err error) {
	if len(xs) == 0 {
		return nil, nil, nil, nil, errors.New("no points")
	}
	p := len(xs[0])
	sel := surSelect(lps, lw, p)
	k := surMonomials(p)
	n := len(sel)
	if n < 4*k {
		return nil, nil, nil, nil, fmt.Errorf("%d points for a quadratic of %d coefficients", n, k)
	}
	// pts: the fit's coordinates (θ with a base, else u).
	pts := make([][]float64, n)
	slw := make([]float64, n)
	for j, i := range sel {
		pts[j], slw[j] = xs[i], lw[i]
		if base != nil {
			pts[j] = make([]float64, p)
			base.Constrain(pts[j], xs[i])
		}
	}
	mean, cov, _ := tmix.WeightedMoments(pts, slw)
	if mean == nil {
		return nil, nil, nil, nil, errors.New("no finite weight")
	}
	l, err := tmix.Cholesky(cov, p)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	s = &Surrogate{Mean: mean, Chol: l, Points: make([]float64, n*p), PriorBase: base != nil, base: base}
	omega = tmix.Normalized(slw)
	// y = log π − log q at the points, y − yb what the fit models
	// (yb = log p − log q with a base, else 0), whitened coordinates,
	// monomials.
	y = make([]float64, n)
	yb := make([]float64, n)
	xq := mat.NewDense(n, k, nil)
	row := make([]float64, k)
	scratch := make([]float64, p)
	for j, i := range sel {
		z := s.Points[j*p : (j+1)*p]
		s.Radius = math.Max(s.Radius, math.Sqrt(tmix.Mahalanobis2(pts[j], mean, l, z)))
		lq := q.LogDensity(xs[i], scratch)
		y[j] = lps[i] - lq
		if base != nil {
			yb[j] = base.LogPrior(xs[i]) - lq
		}
		surQuadRow(row, z)
		sw := math.Sqrt(omega[j])
		for c := range row {
			row[c] *= sw
		}
		xq.SetRow(j, row)
	}
	// Weighted least squares for a (a tiny ridge keeps a design with few
	// effective points solvable).
	var xtx mat.SymDense
	xtx.SymOuterK(1, xq.T())
	for c := range k {
		xtx.SetSym(c, c, xtx.At(c, c)*(1+1e-10)+1e-12)
	}
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return nil, nil, nil, nil, errors.New("the quadratic's design is singular")
	}
	yw := make([]float64, n)
	for j := range y {
		yw[j] = math.Sqrt(omega[j]) * (y[j] - yb[j])
	}
	var xty, beta mat.VecDense
	xty.MulVec(xq.T(), mat.NewVecDense(n, yw))
	if err := ch.SolveVecTo(&beta, &xty); err != nil {
		return nil, nil, nil, nil, err
	}
	s.Quad = make([]float64, k)
	for c := range k {
		s.Quad[c] = beta.AtVec(c)
	}
	res := make([]float64, n)
	for j := range res {
		res[j] = y[j] - yb[j] - surQuad(s.Quad, s.Points[j*p:(j+1)*p])
	}
	// The Gaussian process on the residuals, its length by weighted
	// leave-one-out error (Rasmussen and Williams 2006, §5.4.2:
	// e_i = [K⁻¹res]_i / [K⁻¹]_ii).
	var bestLOO []float64
	s.Alpha, bestLOO, s.Ell = gpChoose(s.Points, res, omega, p, workers)
	if s.Alpha == nil {
		return nil, nil, nil, nil, errors.New("the Gaussian process's design is singular")
	}
	margin := surCapMargin
	if base != nil {
		margin = surCapMarginNatural
	}
	s.Cap = slices.Max(y) + margin
	pred = make([]float64, n)
	for j := range bestLOO { // bestLOO is a residual of y − yb
		pred[j] = math.Min(y[j]-bestLOO[j], s.Cap)
	}
	return s, y, pred, omega, nil
}

// gpChoose fits the Gaussian process to the residuals res at the points
// zs for each of surLengths, on up to workers goroutines, and returns the
// weights, leave-one-out residuals and length of the one with the
// smallest weighted (omega) leave-one-out error; nil weights if none fits.
func gpChoose(zs, res, omega []float64, p, workers int) (alpha, loo []float64, ell float64) {
	gps := make([]struct {
		alpha, loo []float64
		err        error
	}, len(surLengths))
	par.Do(len(surLengths), workers, func(i int) {
		g := &gps[i]
		g.alpha, g.loo, g.err = gpFit(zs, res, p, surLengths[i], surNugget)
	})
	best := math.Inf(1)
	for i, g := range gps {
		if g.err != nil {
			continue
		}
		ss := 0.0
		for j, e := range g.loo {
			ss += omega[j] * e * e
		}
		if ss < best {
			best, alpha, loo, ell = ss, g.alpha, g.loo, surLengths[i]
		}
	}
	return alpha, loo, ell
}

// gpFit returns the weights α = (K + nugget·I)⁻¹res of the Gaussian
// process with length ell at the points zs (row-major n×p) and its
// leave-one-out residuals.
func gpFit(zs, res []float64, p int, ell, nugget float64) (alpha, loo []float64, err error) {
	n := len(res)
	k := mat.NewSymDense(n, nil)
	c := -0.5 / (ell * ell)
	for i := range n {
		zi := zs[i*p : (i+1)*p]
		for j := i; j < n; j++ {
			zj := zs[j*p : (j+1)*p]
			d := 0.0
			for a := range p {
				t := zi[a] - zj[a]
				d += t * t
			}
			v := math.Exp(c * d)
			if i == j {
				v += nugget
			}
			k.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(k) {
		return nil, nil, errors.New("singular")
	}
	var a mat.VecDense
	if err := ch.SolveVecTo(&a, mat.NewVecDense(n, res)); err != nil {
		return nil, nil, err
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, nil, err
	}
	alpha, loo = make([]float64, n), make([]float64, n)
	for i := range n {
		alpha[i] = a.AtVec(i)
		loo[i] = alpha[i] / inv.At(i, i)
	}
	return alpha, loo, nil
}

// surrogateMove runs surSteps steps of P on π̃ = q·exp(r) from u, leaving
// the end point in y, and returns log π̃(y) − log π̃(u). P mixes, with
// equal probability, an independence step from q (accepted with
// min(1, e^{r(y′) − r(y)})) and a random-walk step of scale 2.38/√p in
// the surrogate's whitened coordinates (accepted with min(1,
// π̃(y′)/π̃(y))). v, s, z are scratch of length p.
func Move(sur *Surrogate, q *tmix.Mixture, w *Work, u, y, v, s, z []float64, rng *rand.Rand) float64 {
	p := len(u)
	copy(y, u)
	lq := q.LogDensity(y, z)
	r := sur.R(y, lq, w)
	lq0, r0 := lq, r
	sd := 2.38 / math.Sqrt(float64(p))
	for range surSteps {
		var lqv float64
		if rng.Float64() < 0.5 {
			q.Draw(v, s, rng)
			lqv = q.LogDensity(v, z)
			rv := sur.R(v, lqv, w)
			if math.Log(rng.Float64()) < rv-r {
				copy(y, v)
				r, lq = rv, lqv
			}
			continue
		}
		for j := range s {
			s[j] = sd * rng.NormFloat64()
		}
		for i := range p {
			a := y[i]
			for j := 0; j <= i; j++ {
				a += sur.Chol[i*p+j] * s[j]
			}
			v[i] = a
		}
		lqv = q.LogDensity(v, z)
		rv := sur.R(v, lqv, w)
		if math.Log(rng.Float64()) < rv+lqv-r-lq {
			copy(y, v)
			r, lq = rv, lqv
		}
	}
	return (r + lq) - (r0 + lq0)
}

// bind attaches the model's prior and Constrain to a surrogate read from
// a checkpoint (PriorBase).
func (s *Surrogate) Bind(b *Base) {
	if s != nil && s.PriorBase {
		s.base = b
	}
	if s != nil {
		s.Natural.Bind(b)
	}
}

// valid reports whether s is a surrogate in p dimensions (a checkpoint's).
func (s *Surrogate) Valid(p int) bool {
	return s != nil && (!s.PriorBase || s.base != nil) && (s.Natural == nil || s.Natural.Natural == nil && s.Natural.Valid(p)) && len(s.Mean) == p && len(s.Chol) == p*p && len(s.Quad) == surMonomials(p) &&
		len(s.Points) == p*len(s.Alpha) && s.Ell > 0 && s.Radius > 0 && !math.IsNaN(s.Cap) && !math.IsInf(s.Cap, 0) &&
		!math.IsNaN(s.LogZ) && !math.IsInf(s.LogZ, 0) && s.Defensive >= 0 && s.Defensive < 1 &&
		fmath.FirstNonFinite(s.Mean) < 0 && fmath.FirstNonFinite(s.Chol) < 0 && fmath.FirstNonFinite(s.Quad) < 0 &&
		fmath.FirstNonFinite(s.Points) < 0 && fmath.FirstNonFinite(s.Alpha) < 0 && !slices.ContainsFunc(diag(s.Chol, p), func(d float64) bool { return !(d > 0) })
}

// diag returns the diagonal of the p×p row-major a.
func diag(a []float64, p int) []float64 {
	d := make([]float64, p)
	for i := range d {
		d[i] = a[i*p+i]
	}
	return d
}
