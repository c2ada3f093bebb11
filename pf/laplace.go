package pf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Laplace importance sampling.
//
// For a kernel whose state moves by a linear Gaussian transition
// (ssm.LinearGaussian: x_s = F x_{s−1} + c + η_s, η_s ~ N(0, Q), x_0 ~
// N(m0, P0)) and whose emission has derivatives in the state
// (ssm.EmissionCurvature), Laplace estimates the log-likelihood of a
// window and its smoothed score (Fisher's identity) without particles, as
// Durbin and Koopman (1997) and Shephard and Pitt (1997) do for
// stochastic volatility:
//
//  1. The mode x̂_{0:n} of p(x_{0:n} | y) is found by Newton's method: at
//     x̂ each emission ℓ_s(x) = log p(y_s | x) is replaced by its
//     second-order expansion q_s(x) = c_s + h_sᵀx − ½ xᵀΛ_s x
//     (Λ_s = −∇²ℓ_s(x̂_s), h_s = ∇ℓ_s(x̂_s) + Λ_s x̂_s), whose posterior
//     mean under the linear Gaussian prior — a Kalman filter in
//     information form and a Rauch–Tung–Striebel smoother — is the next
//     x̂ (with step halving until log p(x, y) does not fall). The Newton
//     steps stop at a step below laplaceTol; a log-concave emission (the
//     SV models') makes the problem concave.
//  2. The q_s are then refitted laplaceRefits times by weighted least
//     squares over Gauss–Hermite nodes of the Gaussian model's smoothed
//     marginals (numerically accelerated importance sampling: Koopman,
//     Lucas and Scharth 2015), so that ℓ_s − q_s is small where the
//     smoothing law has its mass, not only at the mode. The Gaussian model
//     g(x | y) ∝ p(x) Π_s exp(q_s(x_s)) is the proposal. The same Kalman filter gives its normaliser
//     ĝ(y) = ∫ p(x) Π_s exp(q_s(x_s)) dx exactly, and M paths are drawn
//     from it by the simulation smoother (forward filtering, backward
//     sampling) in antithetic pairs.
//  3. p(y | θ) = ĝ(y) E_g[w(x)], w(x) = Π_s p(y_s | x_s)/exp(q_s(x_s)),
//     is estimated by ĝ(y) times the mean weight of the M paths, and the
//     score E[Σ_t h_t | y] by the weighted paths' pairwise statistics
//     (ssm.Kernel.AddScore). The paths are drawn backwards in time and
//     weighted factor by factor as they go (sweep). Unless Plain is set,
//     they are resampled whenever the weights' ESS falls below half of M:
//     where the Gaussian model is close to p(x | y) this seldom happens;
//     where it is not (an SV model with little persistence, whose
//     emissions' log-χ² shape adds up over thousands of rows), the sweep
//     is a sequential Monte Carlo sampler, unbiased like plain importance
//     sampling, whose error grows with the window's length instead of
//     exponentially in it.
//
// The M paths use common random numbers, fixed by Seed and the window, so
// that the estimate is a deterministic function of θ. With Plain it is
// also smooth in θ: the Laplace approximation moves with θ and the paths
// with it. A resampling makes it jump where an ancestor changes, which
// breaks derivatives by differences. The error is the importance
// sampling's, small when the Laplace approximation is close to p(x | y)
// (it is exact for a Gaussian emission, where every weight is 1); ESS and
// Resamples report it. The cost is O(n d³) per Newton step and O(M n d²)
// for the paths.

// DefaultLaplacePaths is Laplace's number of paths M when Paths is 0.
const DefaultLaplacePaths = 32

// laplaceTol is the largest change of any state component at which the
// Newton steps stop (after one more step, whose quadratic convergence
// puts the mode at working precision), and laplaceMaxSteps the most
// steps taken.
const (
	laplaceTol      = 1e-7
	laplaceMaxSteps = 100
)

// laplaceRefits is the number of Gauss–Hermite refits of the Gaussian
// model after the Laplace expansion (refitGH): on MSV{D: 2} over 2,000
// simulated rows, M = 32 paths, the log-likelihood's sd over seeds was
// 0.69 with three refits by least squares on the paths and 0.32 with
// three Gauss–Hermite refits.
const laplaceRefits = 3

// laplaceResample is the fraction of Paths below which the weights' ESS
// makes the backward sweep resample. On MSV{D: 2} at the DAX/CAC 40
// posterior (φ ≈ 0.6, σ ≈ 0.7, ρ ≈ 0.998; T = 1,859), where the Gaussian
// model is far from p(x | y), plain importance sampling had an ESS of 3–66
// of 8,192 paths; see TestLaplaceResampling for what resampling gains.
const laplaceResample = 0.5

// ErrLaplace is wrapped by Laplace's errors: a kernel without the
// capabilities it needs, or a Newton step that found no positive definite
// covariance or no mode.
var ErrLaplace = errors.New("pf: Laplace importance sampling")

// Laplace scores windows by Laplace importance sampling (see the
// comment above). The zero value uses DefaultLaplacePaths paths and seed
// 0. A Laplace owns its buffers: after the first call with the same sizes
// it allocates nothing. It is not safe for concurrent use.
type Laplace struct {
	// Paths is the number M of importance paths, even (antithetic pairs);
	// 0 means DefaultLaplacePaths.
	Paths int
	// Seed fixes the paths' random numbers (with the window's bounds).
	Seed uint64
	// Plain turns off the backward sweep's resampling: plain importance
	// sampling, a smooth function of θ under a fixed Seed (what
	// derivatives by differences and control variates need), whose error
	// can grow exponentially in the window's length where the Gaussian
	// model is poor. The zero value resamples (see the comment above).
	Plain bool
	// ESS is the smallest effective sample size (Σw)²/Σw² of the last
	// call's importance weights over its backward sweep (with Plain, that
	// of the final weights) and over its blocks, in (0, Paths], and Steps
	// its most Newton steps in one window.
	ESS   float64
	Steps int
	// Resamples is the number of times the last call resampled its
	// paths (see sweep); 0 when the importance weights stayed even.
	Resamples int
	// Lag is the lag L of the blocks a long window is scored in: 0 chooses
	// it per call from the transition (LaplaceLag). A window longer than
	// 2(K + L) rows, K = 4L, is split into blocks [c, e) of about K rows,
	// and log p(y_{c:e} | y_{<c}) is estimated by log p̂(y_{c−L:e}) −
	// log p̂(y_{c−L:c}), each window started from ν_0, and the score by the
	// same difference of the windows' scores (Fisher's identity). Each
	// window has far fewer rows for the importance weights to spread
	// over, which keeps their ESS up where the Gaussian model is poor and
	// the state forgets fast; the cost is about 1 + 2L/K = 1.5 times the
	// rows, and the error of order ρ(F)^L per block. A lag chosen per call
	// changes with θ, and the estimate jumps where it does: fix Lag for an
	// estimate smooth in θ.
	Lag int
	// Whole scores every window in one piece, whatever Lag.
	Whole bool
	// Blocks is the number of blocks of the last call: 1 for a window
	// scored whole.
	Blocks int

	ws laplaceWork
}

// laplaceWork holds Laplace's buffers; S = n + 1 states.
type laplaceWork struct {
	d, p, m, S               int
	F, c, Q, m0, P0, lq, lp0 []float64
	xhat, xnew, xs           []float64 // S×d
	mp, mf                   []float64 // S×d
	pp, ppinv, pf            []float64 // S×d²
	g, lam, hvec             []float64 // S×d (g: scratch), S×d², S×d
	cs                       []float64 // S
	cs0, hv0, lam0           []float64 // the last good q_s (refitGH)
	xtx, xty, feat           []float64 // least-squares scratch
	vs                       []float64 // S×d²: smoothed covariances (refitGH)
	// The Gauss–Hermite rule in z for dimension ghD (ghRule): nodes,
	// their features and weights, the normal equations' factor, and
	// scratch for the nodes in x and their log densities.
	ghD                    int
	ghZ, ghF, ghW, ghG     []float64
	ghX, ghL               []float64
	jmat, lc               []float64 // S×d²: J_s and the factor of the conditional covariance
	cur, next, xa          []float64 // M×d: the paths' states at s and s+1; resampling scratch
	anc                    []int     // M ancestors
	ha                     []float64 // M×p resampling scratch
	gs, gb                 []float64 // p: a window's score, the blocks' sum
	sepX, sepL             []float64 // refitSeparable's (4d+1) points and their log densities
	z                      []float64 // d
	lw, tmp                []float64 // M
	h                      []float64 // M×p
	v1, v2, v3, a1, a2, a3 []float64 // d, d², scratch
}

func (w *laplaceWork) init(d, p, m, S int) {
	if w.d == d && w.p == p && w.m == m && w.S >= S {
		return
	}
	w.d, w.p, w.m, w.S = d, p, m, S
	d2 := d * d
	w.F, w.c, w.Q, w.m0, w.P0 = make([]float64, d2), make([]float64, d), make([]float64, d2), make([]float64, d), make([]float64, d2)
	w.lq, w.lp0 = make([]float64, d2), make([]float64, d2)
	w.xhat, w.xnew, w.xs = make([]float64, S*d), make([]float64, S*d), make([]float64, S*d)
	w.mp, w.mf = make([]float64, S*d), make([]float64, S*d)
	w.pp, w.ppinv, w.pf = make([]float64, S*d2), make([]float64, S*d2), make([]float64, S*d2)
	w.g, w.lam, w.hvec = make([]float64, S*d), make([]float64, S*d2), make([]float64, S*d)
	w.cs = make([]float64, S)
	w.cs0, w.hv0, w.lam0 = make([]float64, S), make([]float64, S*d), make([]float64, S*d2)
	nf := 1 + d + d*(d+1)/2
	w.xtx, w.xty, w.feat = make([]float64, nf*nf), make([]float64, nf), make([]float64, nf)
	w.vs = make([]float64, S*d2)
	w.ghD = 0
	w.jmat, w.lc = make([]float64, S*d2), make([]float64, S*d2)
	w.cur, w.next, w.xa = make([]float64, m*d), make([]float64, m*d), make([]float64, m*d)
	w.anc, w.ha, w.gs, w.gb = make([]int, m), make([]float64, m*p), make([]float64, p), make([]float64, p)
	w.sepX, w.sepL = make([]float64, (4*d+1)*d), make([]float64, 4*d+1)
	w.z = make([]float64, d)
	w.lw, w.tmp = make([]float64, m), make([]float64, m)
	w.h = make([]float64, m*p)
	w.v1, w.v2, w.v3 = make([]float64, d), make([]float64, d), make([]float64, d)
	w.a1, w.a2, w.a3 = make([]float64, d2), make([]float64, d2), make([]float64, d2)
}

// Score returns the estimate of log p(y[w.Start:w.End] | θ) of the kernel
// k (the state before w.Start distributed as ν_0) and, when grad is not
// nil, adds to it the estimate of Σ_{t∈[KeepStart,KeepEnd)} w_t E[h_t |
// y_window] (and the initial term when w.KeepsInitial()), h_t the
// kernel's pairwise statistic: the contract of ssm.ExactScorer, with
// importance-sampling error.
func (l *Laplace) Score(grad []float64, k ssm.Kernel, dims ssm.Dims, seq ssm.Sequence, win ssm.Window) (float64, error) {
	lg, ok1 := k.(ssm.LinearGaussian)
	ec, ok2 := k.(ssm.EmissionCurvature)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("%w: the kernel (%T) needs ssm.LinearGaussian and ssm.EmissionCurvature", ErrLaplace, k)
	}
	m := l.Paths
	if m == 0 {
		m = DefaultLaplacePaths
	}
	if m < 2 || m%2 != 0 {
		return 0, fmt.Errorf("%w: Paths = %d must be even and positive", ErrLaplace, m)
	}
	if err := win.Validate(seq.Len()); err != nil {
		return 0, err
	}
	if grad != nil && len(grad) != dims.Param {
		return 0, fmt.Errorf("%w: len(grad) = %d, the model has %d parameters", ErrLaplace, len(grad), dims.Param)
	}
	if l.Lag < 0 {
		return 0, fmt.Errorf("%w: Lag = %d must not be negative (0 chooses it)", ErrLaplace, l.Lag)
	}
	d, n := dims.State, win.End-win.Start
	w := &l.ws
	w.init(d, dims.Param, m, n+1)
	lg.LinearGaussian(w.F, w.c, w.Q, w.m0, w.P0)
	if !chol(w.lq, w.Q, d) || !chol(w.lp0, w.P0, d) {
		return 0, fmt.Errorf("%w: the transition's Q or the initial P0 is not positive definite", ErrLaplace)
	}
	se, ok := k.(ssm.SeparableEmission)
	sep := ok && se.SeparableEmission()
	l.ESS, l.Steps, l.Resamples, l.Blocks = math.Inf(1), 0, 0, 0
	lag := l.Lag
	switch {
	case l.Whole:
		lag = 0
	case lag == 0:
		lag = lagOf(w.F, d, w.a1, w.a2)
	}
	return l.blocks(grad, k, ec, seq, win, sep, lag)
}

// blocks scores win whole (lag 0, or a window too short for blocks) or in
// blocks after lag rows, adding the score to grad once every block is
// done, and records the number of blocks in l.
func (l *Laplace) blocks(grad []float64, k ssm.Kernel, ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, sep bool, lag int) (float64, error) {
	w := &l.ws
	n := win.End - win.Start
	block := laplaceBlockLags * lag
	var gb []float64 // the blocks' scores, added to grad once all are done
	if grad != nil {
		gb = w.gb
		clear(gb)
	}
	if lag == 0 || n <= 2*(block+lag) {
		ll, err := l.window(gb, k, ec, seq, win, sep)
		if err != nil {
			return 0, err
		}
		l.Blocks = 1
		addTo(grad, gb)
		return ll, nil
	}
	// Blocks [c, e) of about block rows, each after the lag rows before it:
	// log p(y_{c:e} | y_{<c}) ≈ log p̂(y_{s:e}) − log p̂(y_{s:c}), s = c − lag.
	ll, nb := 0.0, 0
	for c := win.Start; c < win.End; {
		e := c + block
		if win.End-e < block/2 {
			e = win.End
		}
		s := max(win.Start, c-lag)
		v, err := l.window(gb, k, ec, seq, subWindow(win, s, e), sep)
		if err != nil {
			return 0, err
		}
		ll += v
		if c > win.Start {
			scaleBy(gb, -1)
			v, err := l.window(gb, k, ec, seq, subWindow(win, s, c), sep)
			if err != nil {
				return 0, err
			}
			scaleBy(gb, -1)
			ll -= v
		}
		nb++
		c = e
	}
	l.Blocks = nb
	addTo(grad, gb)
	return ll, nil
}

// laplaceLagTol is the size of ρ(F)^L below which the state at a block's
// start has forgotten where it was L rows before (the blocks' lag),
// laplaceMinLag the shortest lag, and laplaceBlockLags the length K of a
// block in lags.
const (
	laplaceLagTol    = 1e-3
	laplaceMinLag    = 16
	laplaceBlockLags = 4
)

// LaplaceLag returns the lag Laplace chooses for the blocks of a kernel
// with state dimension d: the least power of two L ≥ 16 with ρ^L ≤ 10⁻³,
// ρ = ‖F⁸‖^(1/8) a bound on the spectral radius of its transition matrix
// F; 0 (whole windows) when ρ ≥ 1 or the kernel is not an
// ssm.LinearGaussian. The lag changes with θ where ρ crosses a threshold,
// and the estimate with it, by about its own Monte Carlo error: a caller
// that needs an estimate smooth in θ fixes Laplace.Lag, e.g. to this
// value at a point near the posterior.
func LaplaceLag(k ssm.Kernel, d int) int {
	lg, ok := k.(ssm.LinearGaussian)
	if !ok || d <= 0 {
		return 0
	}
	d2 := d * d
	F := make([]float64, d2)
	lg.LinearGaussian(F, make([]float64, d), make([]float64, d2), make([]float64, d), make([]float64, d2))
	return lagOf(F, d, make([]float64, d2), make([]float64, d2))
}

// lagOf is LaplaceLag for F (d×d), with scratch a and b of d² each.
func lagOf(F []float64, d int, a, b []float64) int {
	copy(a, F[:d*d])
	for range 3 { // F⁸
		matMul(b, a, a, d)
		copy(a, b[:d*d])
	}
	nrm := 0.0
	for _, v := range a[:d*d] {
		nrm += v * v
	}
	rho := math.Pow(math.Sqrt(nrm), 1.0/8)
	if !(rho < 1) {
		return 0
	}
	need := math.Log(laplaceLagTol) / math.Log(rho)
	if need > 1<<24 {
		return 0
	}
	lag := laplaceMinLag
	for float64(lag) < need {
		lag *= 2
	}
	return lag
}

// subWindow returns the part [s, e) of win with its kept span and weights.
func subWindow(win ssm.Window, s, e int) ssm.Window {
	ks, ke := min(max(win.KeepStart, s), e), max(min(win.KeepEnd, e), s)
	if ks >= ke {
		return ssm.Window{Start: s, End: e, KeepStart: s, KeepEnd: s}
	}
	sub := ssm.Window{Start: s, End: e, KeepStart: ks, KeepEnd: ke}
	if win.Weights != nil {
		sub.Weights = win.Weights[ks-win.KeepStart : ke-win.KeepStart]
	}
	return sub
}

func addTo(dst, v []float64) {
	for j := range dst {
		dst[j] += v[j]
	}
}

func scaleBy(v []float64, a float64) {
	for j := range v {
		v[j] *= a
	}
}

// window scores one window (steps 1–3 of the comment above), adds its
// score to grad (when not nil) once it is finite, and records its ESS,
// Newton steps and resamplings in l.
func (l *Laplace) window(grad []float64, k ssm.Kernel, ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, sep bool) (float64, error) {
	w := &l.ws
	n := win.End - win.Start
	steps, err := l.mode(ec, seq, win, n)
	l.Steps = max(l.Steps, steps)
	if err != nil {
		return 0, err
	}
	lnG, err := w.expand(ec, seq, win, n)
	if err != nil {
		return 0, err
	}
	key := uint64(win.Start)<<32 | uint64(win.End)
	for range laplaceRefits {
		if lnG, err = w.refitGH(k, seq, win, n, lnG, sep); err != nil {
			return 0, err
		}
	}
	if err := w.backward(n); err != nil {
		return 0, err
	}
	var gs []float64 // the window's score, added to grad once it is finite
	if grad != nil {
		gs = w.gs
		clear(gs)
	}
	lme, ess, res := w.sweep(gs, k, seq, win, n, rand.New(rand.NewPCG(l.Seed, key)), !l.Plain)
	l.ESS, l.Resamples = math.Min(l.ESS, ess), l.Resamples+res
	ll := lnG + lme
	if math.IsNaN(ll) || math.IsInf(ll, 0) {
		return 0, fmt.Errorf("%w: log-likelihood %v", ErrNonFinite, ll)
	}
	if grad != nil {
		for j, v := range gs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%w: score component %d is %v", ErrNonFinite, j, v)
			}
		}
		addTo(grad, gs)
	}
	return ll, nil
}

// mode runs the Newton steps from the prior mean path to x̂ (w.xhat).
func (l *Laplace) mode(ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, n int) (int, error) {
	w := &l.ws
	d := w.d
	copy(w.xhat[:d], w.m0)
	for s := 1; s <= n; s++ {
		matVec(w.xhat[s*d:(s+1)*d], w.F, w.xhat[(s-1)*d:s*d], d)
		for i := 0; i < d; i++ {
			w.xhat[s*d+i] += w.c[i]
		}
	}
	obj := w.objective(ec, seq, win, n, w.xhat)
	last := false
	for step := 1; step <= laplaceMaxSteps; step++ {
		if _, err := w.expand(ec, seq, win, n); err != nil {
			return step, err
		}
		w.smoothMeans(n)
		alpha, moved := 1.0, 0.0
		var next float64
		for range 40 {
			moved = 0
			for i, v := range w.xhat[:(n+1)*d] {
				w.xnew[i] = v + alpha*(w.xs[i]-v)
				moved = math.Max(moved, math.Abs(w.xnew[i]-v))
			}
			next = w.objective(ec, seq, win, n, w.xnew)
			if next >= obj-1e-12*math.Abs(obj) {
				break
			}
			alpha /= 2
		}
		if math.IsNaN(next) {
			return step, fmt.Errorf("%w: the mode's log density is NaN", ErrLaplace)
		}
		w.xhat, w.xnew = w.xnew, w.xhat
		obj = next
		if last {
			return step, nil
		}
		last = moved < laplaceTol
	}
	return laplaceMaxSteps, fmt.Errorf("%w: Newton's method found no mode of p(x | y) in %d steps", ErrLaplace, laplaceMaxSteps)
}

// objective returns log p(x_{0:n}) + Σ_s log p(y_s | x_s) up to a
// constant, with the emission's value from EmissionCurvature.
func (w *laplaceWork) objective(ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, n int, x []float64) float64 {
	d := w.d
	e := w.v1
	for i := 0; i < d; i++ {
		e[i] = x[i] - w.m0[i]
	}
	lowerSolve(w.lp0, e, d)
	obj := -0.5 * dot(e, e)
	for s := 1; s <= n; s++ {
		xs, prev := x[s*d:(s+1)*d], x[(s-1)*d:s*d]
		matVec(e, w.F, prev, d)
		for i := 0; i < d; i++ {
			e[i] = xs[i] - e[i] - w.c[i]
		}
		lowerSolve(w.lq, e, d)
		obj -= 0.5 * dot(e, e)
		obj += ec.LogEmissionCurvature(w.v2, w.a1, seq.At(win.Start+s-1), xs)
	}
	return obj
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// expand expands every emission at w.xhat (Λ_s, h_s, c_s) and runs the
// information-form Kalman filter of the Gaussian model; it returns
// log ĝ(y).
func (w *laplaceWork) expand(ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, n int) (float64, error) {
	d := w.d
	d2 := d * d
	for s := 1; s <= n; s++ {
		xh := w.xhat[s*d : (s+1)*d]
		g, lam, hv := w.g[s*d:(s+1)*d], w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
		ls := ec.LogEmissionCurvature(g, lam, seq.At(win.Start+s-1), xh)
		for i := range lam[:d2] {
			lam[i] = -lam[i]
		}
		symmetrize(lam, d)
		matVec(hv, lam, xh, d)
		for i := 0; i < d; i++ {
			hv[i] += g[i]
		}
		w.cs[s] = ls - dot(g, xh) - 0.5*quadForm(lam, xh, d)
	}
	return w.filter(n)
}

// filter runs the information-form Kalman filter of the Gaussian model
// p(x) Π_s exp(q_s(x_s)), q_s(x) = c_s + h_sᵀx − ½ xᵀΛ_s x, and returns
// log ĝ(y), the log of its normaliser.
func (w *laplaceWork) filter(n int) (float64, error) {
	d := w.d
	d2 := d * d
	copy(w.mf[:d], w.m0)
	copy(w.pf[:d2], w.P0)
	lnG := 0.0
	for s := 1; s <= n; s++ {
		lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
		// Predict.
		mp, pp := w.mp[s*d:(s+1)*d], w.pp[s*d2:(s+1)*d2]
		matVec(mp, w.F, w.mf[(s-1)*d:s*d], d)
		for i := 0; i < d; i++ {
			mp[i] += w.c[i]
		}
		matMul(w.a1, w.F, w.pf[(s-1)*d2:s*d2], d)
		matMulT(pp, w.a1, w.F, d)
		for i := range pp {
			pp[i] += w.Q[i]
		}
		symmetrize(pp, d)
		// Update in information form: A = P⁻⁻¹ + Λ, b = P⁻⁻¹ m⁻ + h.
		if !chol(w.a2, pp, d) {
			return 0, fmt.Errorf("%w: predicted covariance at step %d is not positive definite", ErrLaplace, s)
		}
		logDetP := logDetChol(w.a2, d)
		ppinv := w.ppinv[s*d2 : (s+1)*d2]
		cholInverse(ppinv, w.a2, d, w.v2)
		matVec(w.v3, ppinv, mp, d) // P⁻⁻¹ m⁻
		mpq := dot(mp, w.v3)
		a := w.a1
		for i := range a[:d2] {
			a[i] = ppinv[i] + lam[i]
		}
		if !chol(w.a3, a, d) {
			return 0, fmt.Errorf("%w: the emission's negative Hessian makes no positive definite posterior at step %d (the emission is not log-concave there)", ErrLaplace, s)
		}
		mf := w.mf[s*d : (s+1)*d]
		for i := 0; i < d; i++ {
			mf[i] = w.v3[i] + hv[i]
		}
		b := w.v1
		copy(b, mf)
		cholSolve(w.a3, mf, d)
		cholInverse(w.pf[s*d2:(s+1)*d2], w.a3, d, w.v2)
		lnG += w.cs[s] - 0.5*mpq + 0.5*dot(b, mf) - 0.5*logDetP - 0.5*logDetChol(w.a3, d)
	}
	return lnG, nil
}

// smoothMeans sets w.xs to the smoothed means of the Gaussian model
// (Rauch–Tung–Striebel).
func (w *laplaceWork) smoothMeans(n int) {
	d := w.d
	d2 := d * d
	copy(w.xs[n*d:(n+1)*d], w.mf[n*d:(n+1)*d])
	for s := n - 1; s >= 0; s-- {
		// J = P_s Fᵀ P⁻_{s+1}⁻¹.
		matMulT(w.a1, w.pf[s*d2:(s+1)*d2], w.F, d)
		matMul(w.a2, w.a1, w.ppinv[(s+1)*d2:(s+2)*d2], d)
		for i := 0; i < d; i++ {
			w.v1[i] = w.xs[(s+1)*d+i] - w.mp[(s+1)*d+i]
		}
		matVec(w.v2, w.a2, w.v1, d)
		for i := 0; i < d; i++ {
			w.xs[s*d+i] = w.mf[s*d+i] + w.v2[i]
		}
	}
}

// backward computes, for the simulation smoother, J_s and the lower
// factor of the conditional covariance P_s − J_s P⁻_{s+1} J_sᵀ of x_s
// given x_{s+1} (s = n: the filtering covariance).
func (w *laplaceWork) backward(n int) error {
	d := w.d
	d2 := d * d
	if !chol(w.lc[n*d2:(n+1)*d2], w.pf[n*d2:(n+1)*d2], d) {
		return fmt.Errorf("%w: the filtering covariance at the window's end is not positive definite", ErrLaplace)
	}
	for s := n - 1; s >= 0; s-- {
		j := w.jmat[s*d2 : (s+1)*d2]
		pf := w.pf[s*d2 : (s+1)*d2]
		matMulT(w.a1, pf, w.F, d)
		matMul(j, w.a1, w.ppinv[(s+1)*d2:(s+2)*d2], d)
		// C = P_s − J F P_s (J P⁻ Jᵀ = P_s Fᵀ P⁻⁻¹ F P_s = J F P_s).
		matMul(w.a2, w.F, pf, d)
		matMul(w.a3, j, w.a2, d)
		for i := range w.a3[:d2] {
			w.a3[i] = pf[i] - w.a3[i]
		}
		symmetrize(w.a3, d)
		if !chol(w.lc[s*d2:(s+1)*d2], w.a3, d) {
			// Q tiny relative to P: the state is a function of the next;
			// a jitter of 1e-12 of its scale keeps the draw defined.
			tr := 0.0
			for i := 0; i < d; i++ {
				tr += math.Abs(pf[i*d+i])
			}
			for i := 0; i < d; i++ {
				w.a3[i*d+i] += 1e-12 * (tr + 1e-300)
			}
			if !chol(w.lc[s*d2:(s+1)*d2], w.a3, d) {
				return fmt.Errorf("%w: the smoothing covariance at step %d is not positive definite", ErrLaplace, s)
			}
		}
	}
	return nil
}

// sweep draws the M paths from the Gaussian model backwards in time (the
// simulation smoother: x_n from its filtering law, then x_s given x_{s+1})
// in antithetic pairs, weighting each state by ι_s(x_s) = log p(y_s | x_s)
// − q_s(x_s) as it is drawn. Since the importance weight of a path is the
// product of these factors and the paths are Markov backwards in time, this
// is a sequential Monte Carlo sampler in reverse time whose target at step
// s is the exact smoothing law of x_{s:n} given y_{s:n} times the Gaussian
// model's of the rest: when the weights' ESS falls below laplaceResample·M
// the paths are resampled (systematic, one uniform), so that the error
// grows with the number of steps rather than exponentially in it (the
// sequential importance sampling of Scharth and Kohn 2016). Without a
// resampling the sweep is plain importance sampling. It returns log of the
// estimate of E_g[w(x)] (unbiased for it), the smallest ESS met and the
// number of resamplings; with grad non-nil it adds the weighted paths'
// pairwise statistics, accumulated along each path as it is drawn.
func (w *laplaceWork) sweep(grad []float64, k ssm.Kernel, seq ssm.Sequence, win ssm.Window, n int, rng *rand.Rand, resample bool) (lme, ess float64, resamples int) {
	d, m, p := w.d, w.m, w.p
	d2 := d * d
	cur, next := w.cur, w.next
	clear(w.lw)
	clear(w.h)
	ess = float64(m)
	for s := n; s >= 0; s-- {
		// Draw x_s (cur) given x_{s+1} (next) for every path.
		for q := 0; q < m; q += 2 {
			for i := range w.z {
				w.z[i] = rng.NormFloat64()
			}
			lowerVec(w.v1, w.lc[s*d2:(s+1)*d2], w.z, d)
			for sign, r := 1.0, q; r < q+2; sign, r = -1, r+1 {
				x := cur[r*d : (r+1)*d]
				if s == n {
					copy(x, w.mf[n*d:(n+1)*d])
				} else {
					nx := next[r*d : (r+1)*d]
					for i := 0; i < d; i++ {
						w.v2[i] = nx[i] - w.mp[(s+1)*d+i]
					}
					matVec(x, w.jmat[s*d2:(s+1)*d2], w.v2, d)
					for i := 0; i < d; i++ {
						x[i] += w.mf[s*d+i]
					}
				}
				for i := 0; i < d; i++ {
					x[i] += sign * w.v1[i]
				}
			}
		}
		if grad != nil && s < n {
			// The statistic of row s+1 pairs x_{s+1} with x_s.
			if t := win.Start + s; t >= win.KeepStart && t < win.KeepEnd {
				k.AddScore(w.h, win.Weight(t), seq.At(t), next[:m*d], cur[:m*d])
			}
		}
		if s == 0 {
			if grad != nil && win.KeepsInitial() {
				k.AddScore(w.h, win.Weight(0), nil, cur[:m*d], nil)
			}
			break
		}
		clear(w.tmp)
		k.AddLogEmission(w.tmp, seq.At(win.Start+s-1), cur[:m*d])
		lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
		for q := 0; q < m; q++ {
			x := cur[q*d : (q+1)*d]
			w.lw[q] += w.tmp[q] - (w.cs[s] + dot(hv, x) - 0.5*quadForm(lam, x, d))
		}
		if resample && s > 1 {
			lm, e := w.normalise()
			ess = math.Min(ess, e)
			if e < laplaceResample*float64(m) {
				lme += lm
				w.resample(cur, rng)
				resamples++
			}
		}
		cur, next = next, cur
	}
	// cur holds x_0 here.
	lm, e := w.normalise()
	ess = math.Min(ess, e)
	lme += lm
	if grad != nil {
		for q := 0; q < m; q++ {
			wq := w.tmp[q] / float64(m)
			for j := 0; j < p; j++ {
				grad[j] += wq * w.h[q*p+j]
			}
		}
	}
	return lme, ess, resamples
}

// normalise sets w.tmp to the paths' weights e^{lw} scaled to mean 1 and
// returns log of the mean of e^{lw} and the weights' ESS.
func (w *laplaceWork) normalise() (lm, ess float64) {
	top := math.Inf(-1)
	for _, v := range w.lw {
		top = math.Max(top, v)
	}
	s1, s2 := 0.0, 0.0
	for q, v := range w.lw {
		e := math.Exp(v - top)
		w.tmp[q] = e
		s1 += e
		s2 += e * e
	}
	mean := s1 / float64(w.m)
	for q := range w.tmp {
		w.tmp[q] /= mean
	}
	return top + math.Log(mean), s1 * s1 / s2
}

// resample replaces the paths' states x (M×d) and statistics by those of
// ancestors drawn by systematic resampling on the weights in w.tmp, and
// resets their log weights.
func (w *laplaceWork) resample(x []float64, rng *rand.Rand) {
	d, m, p := w.d, w.m, w.p
	systematic(w.anc, w.tmp, float64(m), rng.Float64())
	copy(w.xa[:m*d], x[:m*d])
	copy(w.ha, w.h)
	for q, a := range w.anc {
		copy(x[q*d:(q+1)*d], w.xa[a*d:(a+1)*d])
		copy(w.h[q*p:(q+1)*p], w.ha[a*p:(a+1)*p])
	}
	clear(w.lw)
}

// quadFeatures writes 1, x_i and x_i x_j (i ≤ j, row by row) into f.
func quadFeatures(f, x []float64) {
	f[0] = 1
	d := len(x)
	copy(f[1:1+d], x)
	c := 1 + d
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			f[c] = x[i] * x[j]
			c++
		}
	}
}

// allMissing reports whether every component of y is NaN.
func allMissing(y []float64) bool {
	for _, v := range y {
		if !math.IsNaN(v) {
			return false
		}
	}
	return true
}

// Gauss–Hermite rules for N(0, 1): nodes and weights, 5 points per axis
// for d ≤ 3 and 3 for larger states (3^d nodes).
var (
	gh5Nodes   = []float64{-2.856970013872806, -1.355626179974266, 0, 1.355626179974266, 2.856970013872806}
	gh5Weights = []float64{0.011257411327720691, 0.2220759220056126, 0.5333333333333333, 0.2220759220056126, 0.011257411327720691}
	gh3Nodes   = []float64{-math.Sqrt(3), 0, math.Sqrt(3)}
	gh3Weights = []float64{1.0 / 6, 2.0 / 3, 1.0 / 6}
)

// smoothCovs sets w.xs and w.vs to the Gaussian model's smoothed means
// and covariances (Rauch–Tung–Striebel).
func (w *laplaceWork) smoothCovs(n int) {
	d := w.d
	d2 := d * d
	copy(w.xs[n*d:(n+1)*d], w.mf[n*d:(n+1)*d])
	copy(w.vs[n*d2:(n+1)*d2], w.pf[n*d2:(n+1)*d2])
	for s := n - 1; s >= 0; s-- {
		pf := w.pf[s*d2 : (s+1)*d2]
		matMulT(w.a1, pf, w.F, d)
		matMul(w.a2, w.a1, w.ppinv[(s+1)*d2:(s+2)*d2], d) // J
		for i := 0; i < d; i++ {
			w.v1[i] = w.xs[(s+1)*d+i] - w.mp[(s+1)*d+i]
		}
		matVec(w.v2, w.a2, w.v1, d)
		for i := 0; i < d; i++ {
			w.xs[s*d+i] = w.mf[s*d+i] + w.v2[i]
		}
		// V_s = P_s + J (V_{s+1} − P⁻_{s+1}) Jᵀ.
		for i := range w.a3[:d2] {
			w.a3[i] = w.vs[(s+1)*d2+i] - w.pp[(s+1)*d2+i]
		}
		matMul(w.a1, w.a2, w.a3, d)
		matMulT(w.a3, w.a1, w.a2, d)
		vs := w.vs[s*d2 : (s+1)*d2]
		for i := range vs {
			vs[i] = pf[i] + w.a3[i]
		}
		symmetrize(vs, d)
	}
}

// refitGH replaces each q_s by the weighted least-squares fit of the
// emission log p(y_s | x) over Gauss–Hermite nodes of the Gaussian
// model's smoothed marginal N(μ_s, V_s) (features 1, z_i and z_i z_j in
// the standardised z = L_s⁻¹(x − μ_s), V_s = L_s L_sᵀ): the numerically
// accelerated importance sampling of Koopman, Lucas and Scharth (2015),
// which makes ℓ_s − q_s small where the smoothed law puts its mass rather
// than at the mode only. In z the nodes, their weights and the normal
// equations' matrix are the same at every step (ghRule), so a step costs
// one AddLogEmission over the nodes and one solve. It returns log ĝ(y)
// of the refitted model, or keeps the current one where a fit fails or
// makes no positive definite model. Deterministic: no random numbers.
//
// For a separable emission (sep: ssm.SeparableEmission) the fit is done
// one component at a time (refitSeparable): under a Gaussian law the
// least-squares projection of a function of x_i onto quadratics in x is a
// quadratic in x_i alone (the Hermite expansion of the function up to
// second order), so the separate fits on the marginals N(μ_si, V_s,ii) are
// the same fit, with d one-dimensional rules instead of a d-dimensional
// one.
func (w *laplaceWork) refitGH(k ssm.Kernel, seq ssm.Sequence, win ssm.Window, n int, lnG float64, sep bool) (float64, error) {
	d := w.d
	d2 := d * d
	w.smoothCovs(n)
	copy(w.cs0, w.cs)
	copy(w.hv0, w.hvec)
	copy(w.lam0, w.lam)
	if !sep && !w.ghRule() {
		return lnG, nil
	}
	total, nf := len(w.ghW), len(w.feat)
	for s := 1; s <= n; s++ {
		y := seq.At(win.Start + s - 1)
		if allMissing(y) {
			continue
		}
		if sep {
			w.refitSeparable(k, y, s)
			continue
		}
		l := w.a1
		if !chol(l, w.vs[s*d2:(s+1)*d2], d) {
			continue
		}
		mu := w.xs[s*d : (s+1)*d]
		for c := 0; c < total; c++ {
			x := w.ghX[c*d : (c+1)*d]
			lowerVec(x, l, w.ghZ[c*d:(c+1)*d], d)
			for i := range x {
				x[i] += mu[i]
			}
		}
		clear(w.ghL)
		k.AddLogEmission(w.ghL, y, w.ghX)
		clear(w.xty)
		for c, v := range w.ghL {
			wv := w.ghW[c] * v
			for a, f := range w.ghF[c*nf : (c+1)*nf] {
				w.xty[a] += wv * f
			}
		}
		cholSolve(w.ghG, w.xty, nf)
		if fmath.FirstNonFinite(w.xty) < 0 {
			w.setQz(s, w.xty, l, mu)
		}
	}
	next, err := w.filter(n)
	if err != nil || math.IsNaN(next) || math.IsInf(next, 0) {
		copy(w.cs, w.cs0)
		copy(w.hvec, w.hv0)
		copy(w.lam, w.lam0)
		return w.filter(n)
	}
	return next, nil
}

// refitSeparable sets q_s to the sum over components i of the
// least-squares quadratic fit of ℓ(x) along x_i (the other components at
// the smoothed mean μ_s) over the five-point Gauss–Hermite rule of the
// marginal N(μ_si, V_s,ii), minus (d − 1) ℓ(μ_s) (each fit's constant
// holds the other components' terms at μ_s). With the rule's moments
// (E z² = 1, E z⁴ = 3) the normal equations of the fit b_0 + b_1 z +
// b_2 z² in z = (x_i − μ_si)/s_i have the solution b_1 = E[ℓz], b_2 =
// (E[ℓz²] − E[ℓ])/2, b_0 = E[ℓ] − b_2. It keeps the current q_s where a
// variance is not positive or a coefficient not finite.
func (w *laplaceWork) refitSeparable(k ssm.Kernel, y []float64, s int) {
	d := w.d
	d2 := d * d
	mu, v := w.xs[s*d:(s+1)*d], w.vs[s*d2:(s+1)*d2]
	np := 4*d + 1 // the mean, then four off-centre nodes per component
	pts, vals := w.sepX[:np*d], w.sepL[:np]
	for q := range np {
		copy(pts[q*d:(q+1)*d], mu)
	}
	for i := range d {
		sd := math.Sqrt(v[i*d+i])
		if !(sd > 0) || math.IsInf(sd, 0) {
			return
		}
		for q, j := range sepNodes {
			pts[(1+4*i+q)*d+i] += sd * gh5Nodes[j]
		}
	}
	clear(vals)
	k.AddLogEmission(vals, y, pts)
	l0 := vals[0]
	c := -float64(d-1) * l0
	for i := range d {
		el, elz, elz2 := gh5Weights[2]*l0, 0.0, 0.0
		for q, j := range sepNodes {
			z, l := gh5Nodes[j], gh5Weights[j]*vals[1+4*i+q]
			el += l
			elz += l * z
			elz2 += l * z * z
		}
		b1, b2 := elz, (elz2-el)/2
		b0 := el - b2
		sd, m := math.Sqrt(v[i*d+i]), mu[i]
		w.v1[i] = -2 * b2 / (sd * sd)    // Λ_ii
		w.v2[i] = b1/sd - 2*b2*m/(sd*sd) // h_i
		c += b0 - b1*m/sd + b2*m*m/(sd*sd)
	}
	if math.IsNaN(c) || math.IsInf(c, 0) || fmath.FirstNonFinite(w.v1) >= 0 || fmath.FirstNonFinite(w.v2) >= 0 {
		return
	}
	lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
	clear(lam)
	for i := range d {
		lam[i*d+i] = w.v1[i]
		hv[i] = w.v2[i]
	}
	w.cs[s] = c
}

// sepNodes are the indices of gh5Nodes other than the centre.
var sepNodes = [4]int{0, 1, 3, 4}

// ghRule fills, once for the state's dimension, the product
// Gauss–Hermite rule in z (nodes w.ghZ, weights w.ghW), the nodes'
// features w.ghF and the lower Cholesky factor w.ghG of the normal
// equations' matrix Σ_c w_c f(z_c) f(z_c)ᵀ; false if that is singular.
func (w *laplaceWork) ghRule() bool {
	d := w.d
	if w.ghD == d {
		return true
	}
	nodes, weights := gh5Nodes, gh5Weights
	if d > 3 {
		nodes, weights = gh3Nodes, gh3Weights
	}
	K := len(nodes)
	total := 1
	for range d {
		total *= K
	}
	nf := len(w.feat)
	w.ghZ, w.ghX, w.ghW, w.ghL = make([]float64, total*d), make([]float64, total*d), make([]float64, total), make([]float64, total)
	w.ghF, w.ghG = make([]float64, total*nf), make([]float64, nf*nf)
	g := make([]float64, nf*nf)
	for c := 0; c < total; c++ {
		wt, r := 1.0, c
		for i := 0; i < d; i++ {
			j := r % K
			r /= K
			w.ghZ[c*d+i] = nodes[j]
			wt *= weights[j]
		}
		w.ghW[c] = wt
		f := w.ghF[c*nf : (c+1)*nf]
		quadFeatures(f, w.ghZ[c*d:(c+1)*d])
		for a := range nf {
			for b := range nf {
				g[a*nf+b] += wt * f[a] * f[b]
			}
		}
	}
	if !chol(w.ghG, g, nf) {
		return false
	}
	w.ghD = d
	return true
}

// setQz sets q_s from the coefficients β of the fit in z = L⁻¹(x − μ):
// q = β_0 + bᵀz + ½ zᵀCz (b_i = β_i, C_ii = 2β_ii, C_ij = β_ij), which in
// x, with A = L⁻ᵀ C L⁻¹, is c + hᵀx − ½ xᵀΛx with Λ = −A,
// h = L⁻ᵀb − Aμ and c = β_0 − bᵀL⁻¹μ + ½ μᵀAμ.
func (w *laplaceWork) setQz(s int, beta, l, mu []float64) {
	d := w.d
	d2 := d * d
	m := w.a2 // L⁻¹, column by column
	for j := 0; j < d; j++ {
		clear(w.v1)
		w.v1[j] = 1
		lowerSolve(l, w.v1, d)
		for i := 0; i < d; i++ {
			m[i*d+j] = w.v1[i]
		}
	}
	cm := w.a3 // C
	c := 1 + d
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if i == j {
				cm[i*d+i] = 2 * beta[c]
			} else {
				cm[i*d+j], cm[j*d+i] = beta[c], beta[c]
			}
			c++
		}
	}
	lam, hv := w.lam[s*d2:(s+1)*d2], w.hvec[s*d:(s+1)*d]
	matMul(lam, cm, m, d)    // C L⁻¹ (scratch)
	for i := 0; i < d; i++ { // cm ← L⁻ᵀ (C L⁻¹) = A
		for j := 0; j < d; j++ {
			v := 0.0
			for k := 0; k < d; k++ {
				v += m[k*d+i] * lam[k*d+j]
			}
			cm[i*d+j] = v
		}
	}
	symmetrize(cm, d)
	b := beta[1 : 1+d]
	matVec(w.v2, cm, mu, d) // Aμ
	for i := 0; i < d; i++ {
		v := 0.0
		for k := 0; k < d; k++ {
			v += m[k*d+i] * b[k]
		}
		hv[i] = v - w.v2[i]
	}
	matVec(w.v3, m, mu, d) // L⁻¹μ
	w.cs[s] = beta[0] - dot(b, w.v3) + 0.5*dot(mu, w.v2)
	for i := range lam[:d2] {
		lam[i] = -cm[i]
	}
}
