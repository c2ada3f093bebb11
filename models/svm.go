package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// SVM is the stochastic volatility model
//
//	x_0 ~ N(0, σ²/(1−φ²)),  x_t = φ x_{t−1} + σ ε_t,  y_t ~ N(0, τ² exp(x_t)),
//
// where x_t is the log-volatility relative to τ². Parameters, names and u =
// (atanh φ, log σ, log τ) are those of LGSSM, and so is the default prior.
// By default filters use the bootstrap proposal, as the paper does (the
// kernel has no ssm.Proposer). With Guided the kernel also implements
// ssm.Proposer with a Gaussian (Laplace) approximation of the locally
// optimal proposal (see the package documentation). The kernel implements
// ssm.TransitionBounder with max log p(x_t|x_{t−1}) = −½ log(2πσ²).
type SVM struct {
	// Prior is the prior on u. Nil means DefaultSVMPrior().
	Prior ssm.Prior
	// Guided gives the kernel a guided proposal, which keeps particles
	// where p(y_t|x_t) is large on extreme days: less particle bias and
	// variance in the τ score on heavy-tailed returns, at 1.5–2 times the
	// cost per particle (BenchmarkGradient/svm/S=40/B=10/N=1000/guided).
	Guided bool
}

// DefaultSVMPrior returns the default SVM prior, the same as
// DefaultLGSSMPrior: (φ+1)/2 ~ Beta(5, 1.5), σ² ~ InvGamma(2, 0.5),
// τ² ~ InvGamma(2, 0.5). The result is a fresh copy the caller may modify.
func DefaultSVMPrior() Independent { return ar1Spec.Clone().Independent() }

// Dims implements ssm.Model.
func (SVM) Dims() ssm.Dims { return ssm.Dims{State: 1, Obs: 1, Param: ar1Params} }

// ParamNames implements ssm.Model: "phi", "sigma", "tau".
func (SVM) ParamNames() []string { return ar1Spec.ParamNames() }

// LogPrior implements ssm.Prior.
func (m SVM) LogPrior(grad, u []float64) float64 { return orPrior(m.Prior, ar1Spec, grad, u) }

// Constrain implements ssm.Model.
func (SVM) Constrain(theta, u []float64) float64 {
	ar1CheckParams("SVM.Constrain", theta, u)
	return ar1Spec.Constrain(theta, u)
}

// Unconstrain implements ssm.Model.
func (SVM) Unconstrain(u, theta []float64) error {
	ar1CheckParams("SVM.Unconstrain", u, theta)
	return ar1Spec.Unconstrain(u, theta)
}

// Params returns u = (atanh φ, log σ, log τ), or a *ssm.ParamError when
// |φ| ≥ 1, σ ≤ 0, τ ≤ 0, or any of them is NaN or +Inf.
func (SVM) Params(phi, sigma, tau float64) ([]float64, error) {
	return ar1Params3(phi, sigma, tau)
}

// Bind implements ssm.Model. The kernel also implements
// ssm.TransitionBounder.
func (m SVM) Bind(u []float64) (ssm.Kernel, error) {
	if m.Guided {
		k := new(svmGuided)
		if err := k.Rebind(u); err != nil {
			return nil, err
		}
		return k, nil
	}
	k := new(svmKernel)
	if err := k.Rebind(u); err != nil {
		return nil, err
	}
	return k, nil
}

// Rebind implements ssm.Rebinder.
func (k *svmKernel) Rebind(u []float64) error {
	ar, err := newScalarAR1("SVM", u)
	if err != nil {
		return err
	}
	*k = svmKernel{
		scalarAR1: ar,
		invT2:     1 / ar.t2,
		logNormT:  -0.5*math.Log(2*math.Pi) - math.Log(ar.tau),
		logHalfT2: -math.Ln2 - 2*math.Log(ar.tau),
	}
	return nil
}

// Simulate draws x_0..x_T (length T+1) and y_1..y_T at u.
func (m SVM) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	return ar1Simulate(m, "SVM", T, u, rng)
}

// svmKernel is SVM bound at one u.
type svmKernel struct {
	scalarAR1
	invT2     float64 // 1/τ²
	logNormT  float64 // −½ log(2πτ²)
	logHalfT2 float64 // log(1/(2τ²))
}

// logA returns log a = log(y²/(2τ²)) computed in logs, so that it is
// finite for every finite y ≠ 0 (y² itself overflows from |y| ≈ 1.3e154
// and underflows below 1e-162), and −Inf for y = 0.
//
// The emission term a·e^(−x) is then always formed as e^(log a − x):
// never 0·Inf = NaN (y = 0 with x < −709, as after a run of zero
// returns), and finite whenever the product is representable, however
// large or small y and x are separately.
func (k *svmKernel) logA(y float64) float64 {
	if y == 0 {
		return math.Inf(-1)
	}
	return 2*math.Log(math.Abs(y)) + k.logHalfT2
}

// expShifted returns e^(la − x) (fmath.Exp written out so that ExpCore
// inlines into the callers' loops).
func expShifted(la, x float64) float64 {
	v := la - x
	if v >= -708 && v <= 709 {
		return fmath.ExpCore(v)
	}
	return math.Exp(v)
}

// aeMax caps a·e^(−x) inside the guided proposal's Newton steps: beyond
// it the step is 1 to working precision, and the cap keeps the arithmetic
// finite (Inf/Inf = NaN) for states so far below the data's level that
// the product overflows. The weights use the uncapped value.
const aeMax = 1e300

// svmFarBelow reports that a·e^(−x̄) = ev is so large against the prior
// precision is2 that Newton from x̄ would crawl (each step moves x by
// about 1 while a·e^(−x) dominates): after a long run of zero returns
// the particles sit far below the level of the next non-zero return.
// Ordinary data never get here (it takes a return of over 100 sds).
func svmFarBelow(ev, is2 float64) bool { return ev > 1e3*(1+is2) }

// svmStart is the starting point of the guided Newton steps when
// svmFarBelow: the mode solves a·e^(−x) = ½ + (x − x̄)/σ², i.e. the fixed
// point of x ↦ log a − log(½ + (x − x̄)/σ²), a contraction with factor
// 1/(σ²/2 + x − x̄) ≪ 1 there; four iterations from log a leave the
// Newton steps a small correction.
func svmStart(la, xbar, is2 float64) float64 {
	x := max(la, xbar)
	for range 4 {
		x = max(la-math.Log(0.5+(x-xbar)*is2), xbar)
	}
	return x
}

var (
	_ ssm.Model             = SVM{}
	_ ssm.TransitionBounder = (*svmKernel)(nil)
)

// SampleEmission implements ssm.Kernel: y = τ exp(x/2) η.
func (k *svmKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	ar1CheckObs("SVM.SampleEmission", y)
	ar1CheckRow("SVM.SampleEmission", x)
	y[0] = k.tau * math.Exp(0.5*x[0]) * rng.NormFloat64()
}

// AddLogEmission implements ssm.Kernel:
// log p(y|x) = −½ log(2πτ²) − x/2 − y² e^(−x)/(2τ²).
func (k *svmKernel) AddLogEmission(logw, y, x []float64) {
	ar1CheckObs("SVM.AddLogEmission", y)
	if len(logw) != len(x) {
		panic(fmt.Sprintf("models: SVM.AddLogEmission: len(logw) = %d, len(x) = %d", len(logw), len(x)))
	}
	yv := y[0]
	if math.IsNaN(yv) {
		return
	}
	c := k.logNormT
	x = x[:len(logw)]
	if yv == 0 {
		// y = 0: the term a·e^(−x) is exactly 0 for every finite x.
		for i := range logw {
			logw[i] += c - 0.5*x[i]
		}
		return
	}
	// a·e^(−x) = e^(log a − x) (see logA), with the exponential written
	// out so that ExpCore inlines into this loop (as in AddScore): a call
	// per particle to fmath.Exp, too big to inline, costs about 4% of the
	// whole SVM gradient.
	la := k.logA(yv)
	for i, xv := range x {
		v := la - xv
		e := 0.0
		if v >= -708 && v <= 709 {
			e = fmath.ExpCore(v)
		} else {
			e = math.Exp(v)
		}
		logw[i] += c - 0.5*xv - e
	}
}

// expChunk is the stack buffer length for batched exponentials.
const expChunk = 256

// shiftedExp returns e^(la − x) for the (at most expChunk) values xs, in
// buf.
func shiftedExp(buf *[expChunk]float64, la float64, xs []float64) []float64 {
	e := buf[:len(xs)]
	for i, xv := range xs {
		e[i] = la - xv
	}
	fmath.ExpTo(e, e)
	return e
}

// AddScore implements ssm.Kernel. The emission adds
// ∂/∂u_3 log p(y|x) = y² e^(−x)/τ² − 1 = 2e^(log a − x) − 1 (see logA):
// −1 for y = 0 whatever x, finite whenever y² e^(−x)/τ² is representable,
// and +Inf (never NaN) only where log p(y|x) itself is −Inf.
func (k *svmKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	k.addLatentScore(h, w, x, prev)
	if prev == nil {
		return
	}
	ar1CheckObs("SVM.AddScore", y)
	yv := y[0]
	if math.IsNaN(yv) {
		return
	}
	if yv == 0 {
		for i := range x {
			h[3*i+2] -= w
		}
		return
	}
	la := k.logA(yv) + math.Ln2 // log(y²/τ²)
	h = h[:3*len(x)]
	for i, xv := range x { // e = e^(la − xv) written out: see AddLogEmission
		v := la - xv
		e := 0.0
		if v >= -708 && v <= 709 {
			e = fmath.ExpCore(v)
		} else {
			e = math.Exp(v)
		}
		h[3*i+2] += w * (e - 1)
	}
}

// svmGuided is the SVM kernel with a guided proposal: a Gaussian centred
// near the mode of p(y|x) p(x|x_{t−1}) with its curvature there. With
// a = y²/(2τ²) and x̄ = φ x_{t−1} the log target is
//
//	f(x) = −x/2 − a e^(−x) − (x − x̄)²/(2σ²)  (strictly concave),
//
// and three Newton steps from x̄ give x₃; the proposal is
// q(x | x_{t−1}, y) = N(x₃, 1/P(x₂)) with P(x) = 1/σ² + a e^(−x) = −f”(x)
// (the curvature at x₂, which the last Newton step computed anyway, saves
// an exponential; x₃ − x₂ is a small fraction of the proposal sd).
// On an ordinary day x₃ is the mode to many digits; on an extreme day
// (a return of many sds) it is still close, where a single expansion at x̄
// would leave the particles in the wrong place. The incremental weight is
// the exact log p(y|x) + log p(x|x_{t−1}) − log q(x|x_{t−1}, y), so the
// filter stays consistent whatever the quality of the approximation; a
// missing y gives the transition and weight 0. a·e^(−x) is formed as
// e^(log a − x) (see svmKernel.logA), so y = 0 (a = 0) gives the exact
// proposal N(x̄ − σ²/2, σ²) and finite weights for every finite state, and
// the Newton steps cap a·e^(−x) at aeMax so that a state far below the
// data's level gives a −Inf weight, never NaN.
type svmGuided struct{ svmKernel }

var _ ssm.Proposer = (*svmGuided)(nil)

// guided returns the proposal mean and precision for x̄ and la = log a
// (see logA).
func (k *svmGuided) guided(xbar, la float64) (mean, prec float64) {
	is2 := 1 / k.s2
	x, prec := xbar, 0.0
	for it := 0; it < 3; it++ {
		ev := expShifted(la, x)
		if it == 0 && svmFarBelow(ev, is2) {
			x = svmStart(la, xbar, is2)
			ev = expShifted(la, x)
		}
		ae := min(ev, aeMax)
		prec = is2 + ae
		x += (ae - 0.5 - (x-xbar)*is2) / prec
	}
	return x, prec
}

// Propose implements ssm.Proposer.
func (k *svmGuided) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	ar1CheckObs("SVM.Propose", y)
	if len(prev) != len(x) || len(logw) != len(x) {
		panic(fmt.Sprintf("models: SVM.Propose: len(x) = %d, len(prev) = %d, len(logw) = %d", len(x), len(prev), len(logw)))
	}
	yv := y[0]
	if math.IsNaN(yv) {
		k.SampleTransition(x, prev, rng)
		return
	}
	la := k.logA(yv) // a = y²/(2τ²) = e^la; a·e^(−x) is always e^(la − x)
	phi, hs2, is2 := k.phi, k.halfInvS2, 1/k.s2
	// −log q(x) = ½log(2π) − ½log P + z²/2 at x = mean + z/√P.
	c := k.logNormT + k.logNormS + 0.5*math.Log(2*math.Pi)
	// The same arithmetic as guided, a chunk of particles at a time, so
	// the four exponentials per particle go through fmath.ExpTo: this is
	// the filter's hot loop, and the batched passes pipeline across
	// particles (a per-particle loop measured about 1.6 times slower).
	var xb, xm, e [expChunk]float64
	for lo := 0; lo < len(prev); lo += expChunk {
		ps := prev[lo:min(lo+expChunk, len(prev))]
		xbs, xs, es := xb[:len(ps)], xm[:len(ps)], e[:len(ps)]
		for i, p := range ps {
			xbs[i] = phi * p
			xs[i] = xbs[i]
		}
		for it := 0; it < 3; it++ {
			shiftedExp(&e, la, xs)
			for i, ev := range es {
				if it == 0 && svmFarBelow(ev, is2) { // rare: see svmStart
					xs[i] = svmStart(la, xbs[i], is2)
					ev = expShifted(la, xs[i])
					es[i] = ev
				}
				ae := min(ev, aeMax)
				xs[i] += (ae - 0.5 - (xs[i]-xbs[i])*is2) / (is2 + ae)
			}
		}
		xo := x[lo : lo+len(ps)]
		for i, ev := range es {
			prec := is2 + min(ev, aeMax) // the curvature at x₂, as in guided
			sd := 1 / math.Sqrt(prec)
			z := rng.NormFloat64()
			xv := xs[i] + sd*z
			xo[i] = xv
			// es keeps the weight's terms known before e^(−x) is. The
			// inlined table log is a fifth of this loop's cost less than
			// math.Log; it needs a normal, finite argument.
			lp := 0.0
			if prec >= 0x1p-1022 && prec <= math.MaxFloat64 {
				lp = fmath.LogCore(prec)
			} else {
				lp = math.Log(prec)
			}
			r := xv - xbs[i]
			es[i] = c - 0.5*lp + 0.5*z*z - 0.5*xv - hs2*r*r
		}
		shiftedExp(&xm, la, xo)
		lw := logw[lo : lo+len(ps)]
		for i, ev := range xm[:len(ps)] {
			lw[i] += es[i] - ev
		}
	}
}

// LogProposal implements ssm.Proposer.
func (k *svmGuided) LogProposal(x, prev, y []float64) float64 {
	ar1CheckRow("LogProposal", x)
	ar1CheckRow("LogProposal", prev)
	ar1CheckObs("SVM.LogProposal", y)
	xbar := k.phi * prev[0]
	if math.IsNaN(y[0]) {
		r := x[0] - xbar
		return k.logNormS - k.halfInvS2*r*r
	}
	mean, prec := k.guided(xbar, k.logA(y[0]))
	r := x[0] - mean
	return -0.5*math.Log(2*math.Pi) + 0.5*math.Log(prec) - 0.5*prec*r*r
}
