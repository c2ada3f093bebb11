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
// Filters use the bootstrap proposal (the kernel has no ssm.Proposer); it
// implements ssm.TransitionBounder with max log p(x_t|x_{t−1}) =
// −½ log(2πσ²).
type SVM struct {
	// Prior is the prior on u. Nil means DefaultSVMPrior().
	Prior ssm.Prior
}

// DefaultSVMPrior returns the default SVM prior, the same as
// DefaultLGSSMPrior: (φ+1)/2 ~ Beta(5, 1.5), σ² ~ InvGamma(2, 0.5),
// τ² ~ InvGamma(2, 0.5). The result is a fresh copy the caller may modify.
func DefaultSVMPrior() Independent { return ar1DefaultPrior() }

// Dims implements ssm.Model.
func (SVM) Dims() ssm.Dims { return ssm.Dims{State: 1, Obs: 1, Param: ar1Params} }

// ParamNames implements ssm.Model: "phi", "sigma", "tau".
func (SVM) ParamNames() []string { return append([]string(nil), ar1Names...) }

// LogPrior implements ssm.Prior.
func (m SVM) LogPrior(grad, u []float64) float64 {
	if m.Prior == nil {
		return ar1Prior.LogPrior(grad, u)
	}
	return m.Prior.LogPrior(grad, u)
}

// Constrain implements ssm.Model.
func (SVM) Constrain(theta, u []float64) float64 {
	ar1CheckParams("SVM.Constrain", theta, u)
	return constrain(ar1Transforms, theta, u)
}

// Unconstrain implements ssm.Model.
func (SVM) Unconstrain(u, theta []float64) error {
	ar1CheckParams("SVM.Unconstrain", u, theta)
	return unconstrain(ar1Transforms, ar1Names, u, theta)
}

// Params returns u = (atanh φ, log σ, log τ), or a *ssm.ParamError when
// |φ| ≥ 1, σ ≤ 0, τ ≤ 0, or any of them is NaN or +Inf.
func (SVM) Params(phi, sigma, tau float64) ([]float64, error) {
	return ar1Params3(phi, sigma, tau)
}

// Bind implements ssm.Model. The kernel also implements
// ssm.TransitionBounder.
func (SVM) Bind(u []float64) (ssm.Kernel, error) {
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
	invT2    float64 // 1/τ²
	logNormT float64 // −½ log(2πτ²)
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
	c, q := k.logNormT, 0.5*yv*yv*k.invT2
	x = x[:len(logw)]
	if q == 0 {
		// y = 0: skip the exp, whose overflow would make 0·Inf = NaN.
		for i := range logw {
			logw[i] += c - 0.5*x[i]
		}
		return
	}
	// exp(−x) in chunks through a stack buffer: fmath.ExpTo's loop is
	// faster than a call to math.Exp per particle.
	var buf [expChunk]float64
	for lo := 0; lo < len(x); lo += expChunk {
		xs := x[lo:min(lo+expChunk, len(x))]
		e := negExp(&buf, xs)
		lw := logw[lo : lo+len(xs)]
		for i, xv := range xs {
			lw[i] += c - 0.5*xv - q*e[i]
		}
	}
}

// expChunk is the stack buffer length for batched exponentials.
const expChunk = 256

// negExp returns e^(−x) for the (at most expChunk) values xs, in buf.
func negExp(buf *[expChunk]float64, xs []float64) []float64 {
	e := buf[:len(xs)]
	for i, xv := range xs {
		e[i] = -xv
	}
	fmath.ExpTo(e, e)
	return e
}

// AddScore implements ssm.Kernel. The emission adds
// ∂/∂u_3 log p(y|x) = y² e^(−x)/τ² − 1.
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
	q := yv * yv * k.invT2
	if q == 0 {
		for i := range x {
			h[3*i+2] -= w
		}
		return
	}
	var buf [expChunk]float64
	for lo := 0; lo < len(x); lo += expChunk {
		xs := x[lo:min(lo+expChunk, len(x))]
		e := negExp(&buf, xs)
		hs := h[3*lo:]
		for i := range xs {
			hs[3*i+2] += w * (q*e[i] - 1)
		}
	}
}
