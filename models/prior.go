package models

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mathext"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Transform maps an unconstrained u ∈ R onto the support (Lo, Hi) of one
// natural parameter v:
//
//	v = Lo + (Hi−Lo)·logistic(Rate·u)  for a finite interval (Rate 0 means 1),
//	v = Lo + e^u                       when Hi = +Inf (Lo finite),
//	v = Hi − e^(−u)                    when Lo = −Inf (Hi finite),
//	v = u                              when Lo = −Inf and Hi = +Inf ([Real]).
//
// Symmetric, with Rate 2, is v = −1 + 2·logistic(2u) = tanh(u), so
// u = atanh(φ) as in the paper.
//
// On a finite interval, Power P > 1 (0 means 1) bends the map towards a
// logarithm from Lo:
//
//	v = Lo + (Hi−Lo)·logistic(P·Rate·u)^(1/P),
//
// so that log(v − Lo) = log(Hi−Lo) − softplus(−P·Rate·u)/P has slope
// Rate·(1 − ((v−Lo)/(Hi−Lo))^P) in u: within a few per cent of Rate up to
// the middle of the interval for P = 4, where the logistic's slope falls
// from Rate to Rate/2. A parameter that enters the model through its
// logarithm, and whose prior is bounded above only to be proper (GARCH's
// μ), then has a posterior ridge that stays straight in u.
type Transform struct {
	Lo, Hi float64
	Rate   float64
	Power  float64
}

// Common transforms.
var (
	Real      = Transform{Lo: math.Inf(-1), Hi: math.Inf(1), Rate: 1} // u = v
	Positive  = Transform{Lo: 0, Hi: math.Inf(1), Rate: 1}            // u = log v
	Symmetric = Transform{Lo: -1, Hi: 1, Rate: 2}                     // u = atanh v
	Unit      = Transform{Lo: 0, Hi: 1, Rate: 1}                      // u = logit v
)

// Interval returns the transform onto (a, b), u = logit((v−a)/(b−a)); a
// may be −Inf or b +Inf (see [Transform]).
func Interval(a, b float64) Transform { return Transform{Lo: a, Hi: b, Rate: 1} }

// Forward returns v(u), dv/du, log|dv/du| and d log|dv/du| / du.
func (tr Transform) Forward(u float64) (v, dv, logJ, dlogJ float64) {
	if math.IsInf(tr.Hi, 1) {
		if math.IsInf(tr.Lo, -1) {
			return u, 1, 0, 0
		}
		e := math.Exp(u)
		return tr.Lo + e, e, u, 1
	}
	if math.IsInf(tr.Lo, -1) {
		e := math.Exp(-u)
		return tr.Hi - e, e, -u, -1
	}
	w := tr.Hi - tr.Lo
	r := tr.rate()
	if pw := tr.power(); pw != 1 {
		return tr.forwardPower(u, w, r, pw)
	}
	u *= r
	// logistic with both tails computed stably
	var s, oneMinus float64
	if u >= 0 {
		e := math.Exp(-u)
		s, oneMinus = 1/(1+e), e/(1+e)
	} else {
		e := math.Exp(u)
		s, oneMinus = e/(1+e), 1/(1+e)
	}
	v = tr.Lo + w*s
	dv = w * r * s * oneMinus
	// log s + log(1-s) = -|u| - 2 log(1+exp(-|u|)) stays finite for large |u|
	au := math.Abs(u)
	logJ = math.Log(w*r) - au - 2*math.Log1p(math.Exp(-au))
	return v, dv, logJ, r * (oneMinus - s)
}

// forwardPower is Forward on a finite interval of width w with Power
// pw ≠ 1: s = logistic(pw·r·u), z = s^(1/pw), dz/du = z·r·(1−s).
func (tr Transform) forwardPower(u, w, r, pw float64) (v, dv, logJ, dlogJ float64) {
	q := pw * r * u
	// s, 1 − s and their logarithms, stable in both tails
	var s, oneMinus, logS, log1mS float64
	if q >= 0 {
		e := math.Exp(-q)
		s, oneMinus = 1/(1+e), e/(1+e)
		logS = -math.Log1p(e)
		log1mS = -q + logS
	} else {
		e := math.Exp(q)
		s, oneMinus = e/(1+e), 1/(1+e)
		log1mS = -math.Log1p(e)
		logS = q + log1mS
	}
	logZ := logS / pw
	z := math.Exp(logZ)
	v = tr.Lo + w*z
	dv = w * r * z * oneMinus
	return v, dv, math.Log(w*r) + logZ + log1mS, r * (oneMinus - pw*s)
}

func (tr Transform) rate() float64 {
	if tr.Rate == 0 {
		return 1
	}
	return tr.Rate
}

func (tr Transform) power() float64 {
	if tr.Power == 0 {
		return 1
	}
	return tr.Power
}

// Inverse returns u(v), or ok = false when v is outside (Lo, Hi) or NaN.
func (tr Transform) Inverse(v float64) (u float64, ok bool) {
	if !(v > tr.Lo && v < tr.Hi) {
		return math.NaN(), false
	}
	switch {
	case math.IsInf(tr.Hi, 1) && math.IsInf(tr.Lo, -1):
		return v, true
	case math.IsInf(tr.Hi, 1):
		return math.Log(v - tr.Lo), true
	case math.IsInf(tr.Lo, -1):
		return -math.Log(tr.Hi - v), true
	}
	z := (v - tr.Lo) / (tr.Hi - tr.Lo)
	if pw := tr.power(); pw != 1 {
		// s = z^P, u = logit(s)/(P·Rate).
		logS := pw * math.Log(z)
		return (logS - math.Log1p(-math.Exp(logS))) / (pw * tr.rate()), true
	}
	return (math.Log(z) - math.Log1p(-z)) / tr.rate(), true
}

// Marginal is a prior density on one natural parameter.
type Marginal interface {
	// LogDensity returns log p(v) and d log p(v)/dv.
	LogDensity(v float64) (lp, dlp float64)
}

// Beta is the law of v when (v − Lo)/(Hi − Lo) ~ Beta(A, B), optionally
// truncated to (TruncLo, TruncHi) (both zero: no truncation). The default
// priors use Lo = −1, Hi = 1, i.e. (φ+1)/2 ~ Beta(A, B).
type Beta struct {
	A, B, Lo, Hi     float64
	TruncLo, TruncHi float64
}

// LogDensity implements Marginal.
func (b Beta) LogDensity(v float64) (float64, float64) {
	w := b.Hi - b.Lo
	z := (v - b.Lo) / w
	if !(z > 0 && z < 1) {
		return math.Inf(-1), 0
	}
	lbeta, _ := math.Lgamma(b.A)
	lb2, _ := math.Lgamma(b.B)
	lab, _ := math.Lgamma(b.A + b.B)
	lp := (b.A-1)*math.Log(z) + (b.B-1)*math.Log1p(-z) - (lbeta + lb2 - lab) - math.Log(w)
	if b.TruncLo != 0 || b.TruncHi != 0 {
		if v <= b.TruncLo || v >= b.TruncHi {
			return math.Inf(-1), 0
		}
		zl, zh := (b.TruncLo-b.Lo)/w, (b.TruncHi-b.Lo)/w
		lp -= math.Log(mathext.RegIncBeta(b.A, b.B, math.Min(zh, 1)) - mathext.RegIncBeta(b.A, b.B, math.Max(zl, 0)))
	}
	return lp, ((b.A-1)/z - (b.B-1)/(1-z)) / w
}

// InvGammaSq is the law of v > 0 when v² ~ InvGamma(A, B), with density
// proportional to (v²)^(−A−1) exp(−B/v²) in v², times the Jacobian 2v.
type InvGammaSq struct{ A, B float64 }

// LogDensity implements Marginal.
func (g InvGammaSq) LogDensity(v float64) (float64, float64) {
	if !(v > 0) {
		return math.Inf(-1), 0
	}
	lg, _ := math.Lgamma(g.A)
	v2 := v * v
	lp := g.A*math.Log(g.B) - lg - (g.A+1)*math.Log(v2) - g.B/v2 + math.Log(2*v)
	return lp, -2*(g.A+1)/v + 2*g.B/(v2*v) + 1/v
}

// Uniform is the uniform law on (Lo, Hi).
type Uniform struct{ Lo, Hi float64 }

// LogDensity implements Marginal.
func (un Uniform) LogDensity(v float64) (float64, float64) {
	if !(v > un.Lo && v < un.Hi) {
		return math.Inf(-1), 0
	}
	return -math.Log(un.Hi - un.Lo), 0
}

// Normal is the N(Mu, Sigma²) law.
type Normal struct{ Mu, Sigma float64 }

// LogDensity implements Marginal.
func (n Normal) LogDensity(v float64) (float64, float64) {
	z := (v - n.Mu) / n.Sigma
	return -0.5*z*z - math.Log(n.Sigma) - 0.5*math.Log(2*math.Pi), -z / n.Sigma
}

// Flat is the improper prior with constant density 1, for a parameter whose
// likelihood alone is informative enough.
type Flat struct{}

// LogDensity implements Marginal.
func (Flat) LogDensity(float64) (float64, float64) { return 0, 0 }

// Independent is a product prior over natural parameters, pushed forward to
// u through per-coordinate transforms: log π(u) = Σ_i [log p_i(v_i(u_i)) +
// log|dv_i/du_i|]. It implements ssm.Prior.
type Independent struct {
	Transforms []Transform
	Marginals  []Marginal
}

// LogPrior implements ssm.Prior.
func (p Independent) LogPrior(grad, u []float64) float64 {
	if len(u) != len(p.Transforms) || len(p.Marginals) != len(p.Transforms) {
		panic(fmt.Sprintf("models: prior has %d transforms and %d marginals for %d parameters", len(p.Transforms), len(p.Marginals), len(u)))
	}
	total := 0.0
	for i, tr := range p.Transforms {
		v, dv, logJ, dlogJ := tr.Forward(u[i])
		lp, dlp := p.Marginals[i].LogDensity(v)
		total += lp + logJ
		if grad != nil {
			grad[i] = dlp*dv + dlogJ
		}
	}
	return total
}

var _ ssm.Prior = Independent{}

// The scalar kernels re-target in place so estimators allocate nothing per
// iteration.
var (
	_ ssm.Rebinder = (*lgssmKernel)(nil)
	_ ssm.Rebinder = (*svmKernel)(nil)
	_ ssm.Rebinder = (*garchKernel)(nil)
)
