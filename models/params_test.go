package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mathext"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// The old* functions are verbatim copies of the transforms, marginals and
// product prior the models used before models.Params (commit 53e604e), kept
// here frozen so that TestParamsMatchOldFormulas can hold the refactored
// models to the old values bit for bit.

type oldTransform struct{ Lo, Hi, Rate float64 }

// powerTransform is GARCH's μ map since it left logit(μ/2):
// v = Lo + (Hi−Lo)(1 + e^(−P·u))^(−1/P), written out here from its
// definition, not frozen.
type powerTransform struct{ Lo, Hi, P float64 }

func (tr powerTransform) forward(u float64) (v, dv, logJ, dlogJ float64) {
	w := tr.Hi - tr.Lo
	s, oneMinus := 1/(1+math.Exp(-tr.P*u)), 1/(1+math.Exp(tr.P*u))
	z := math.Pow(s, 1/tr.P)
	dv = w * z * oneMinus
	return tr.Lo + w*z, dv, math.Log(dv), oneMinus - tr.P*s
}

func (tr powerTransform) inverse(v float64) (float64, bool) {
	if !(v > tr.Lo && v < tr.Hi) {
		return math.NaN(), false
	}
	s := math.Pow((v-tr.Lo)/(tr.Hi-tr.Lo), tr.P)
	return math.Log(s/(1-s)) / tr.P, true
}

// anyTransform is an oldTransform or a powerTransform.
type anyTransform interface {
	forward(u float64) (v, dv, logJ, dlogJ float64)
	inverse(v float64) (float64, bool)
}

func (tr oldTransform) forward(u float64) (v, dv, logJ, dlogJ float64) {
	if math.IsInf(tr.Hi, 1) {
		e := math.Exp(u)
		return tr.Lo + e, e, u, 1
	}
	w := tr.Hi - tr.Lo
	r := tr.Rate
	u *= r
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
	au := math.Abs(u)
	logJ = math.Log(w*r) - au - 2*math.Log1p(math.Exp(-au))
	return v, dv, logJ, r * (oneMinus - s)
}

func (tr oldTransform) inverse(v float64) (float64, bool) {
	if !(v > tr.Lo && v < tr.Hi) {
		return math.NaN(), false
	}
	if math.IsInf(tr.Hi, 1) {
		return math.Log(v - tr.Lo), true
	}
	z := (v - tr.Lo) / (tr.Hi - tr.Lo)
	return (math.Log(z) - math.Log1p(-z)) / tr.Rate, true
}

func oldBeta(a, b, lo, hi, tlo, thi, v float64) (float64, float64) {
	w := hi - lo
	z := (v - lo) / w
	if !(z > 0 && z < 1) {
		return math.Inf(-1), 0
	}
	lbeta, _ := math.Lgamma(a)
	lb2, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	lp := (a-1)*math.Log(z) + (b-1)*math.Log1p(-z) - (lbeta + lb2 - lab) - math.Log(w)
	if tlo != 0 || thi != 0 {
		if v <= tlo || v >= thi {
			return math.Inf(-1), 0
		}
		zl, zh := (tlo-lo)/w, (thi-lo)/w
		lp -= math.Log(mathext.RegIncBeta(a, b, math.Min(zh, 1)) - mathext.RegIncBeta(a, b, math.Max(zl, 0)))
	}
	return lp, ((a-1)/z - (b-1)/(1-z)) / w
}

func oldInvGammaSq(a, b, v float64) (float64, float64) {
	if !(v > 0) {
		return math.Inf(-1), 0
	}
	lg, _ := math.Lgamma(a)
	v2 := v * v
	lp := a*math.Log(b) - lg - (a+1)*math.Log(v2) - b/v2 + math.Log(2*v)
	return lp, -2*(a+1)/v + 2*b/(v2*v) + 1/v
}

func oldUniform(lo, hi, v float64) (float64, float64) {
	if !(v > lo && v < hi) {
		return math.Inf(-1), 0
	}
	return -math.Log(hi - lo), 0
}

type oldSpec struct {
	names []string
	trs   []anyTransform
	dens  []func(float64) (float64, float64)
}

var (
	oldAR1 = oldSpec{
		names: []string{"phi", "sigma", "tau"},
		trs:   []anyTransform{oldTransform{-1, 1, 2}, oldTransform{0, math.Inf(1), 1}, oldTransform{0, math.Inf(1), 1}},
		dens: []func(float64) (float64, float64){
			func(v float64) (float64, float64) { return oldBeta(5, 1.5, -1, 1, 0, 0, v) },
			func(v float64) (float64, float64) { return oldInvGammaSq(2, 0.5, v) },
			func(v float64) (float64, float64) { return oldInvGammaSq(2, 0.5, v) },
		},
	}
	oldGARCH = oldSpec{
		names: []string{"mu", "phi", "lambda", "tau"},
		trs:   []anyTransform{powerTransform{0, 2, 4}, oldTransform{0, 1, 1}, oldTransform{0, 1, 1}, oldTransform{0, math.Inf(1), 1}},
		dens: []func(float64) (float64, float64){
			func(v float64) (float64, float64) { return oldUniform(0, 2, v) },
			func(v float64) (float64, float64) { return oldBeta(10, 1.5, -1, 1, 0, 1, v) },
			func(v float64) (float64, float64) { return oldBeta(20, 1.5, -1, 1, 0, 1, v) },
			func(v float64) (float64, float64) { return oldInvGammaSq(2, 0.5, v) },
		},
	}
)

func (s oldSpec) logPrior(grad, u []float64) float64 {
	total := 0.0
	for i, tr := range s.trs {
		v, dv, logJ, dlogJ := tr.forward(u[i])
		lp, dlp := s.dens[i](v)
		total += lp + logJ
		grad[i] = dlp*dv + dlogJ
	}
	return total
}

func (s oldSpec) constrain(theta, u []float64) float64 {
	logJ := 0.0
	for i, tr := range s.trs {
		v, _, lj, _ := tr.forward(u[i])
		theta[i] = v
		logJ += lj
	}
	return logJ
}

func (s oldSpec) unconstrain(u, theta []float64) error {
	for i, tr := range s.trs {
		v, ok := tr.inverse(theta[i])
		if !ok {
			lo, hi := bounds(tr)
			return &ssm.ParamError{Name: s.names[i], Value: theta[i], Reason: fmt.Sprintf("must lie in (%v, %v)", lo, hi)}
		}
		u[i] = v
	}
	return nil
}

func bounds(tr anyTransform) (float64, float64) {
	switch tr := tr.(type) {
	case oldTransform:
		return tr.Lo, tr.Hi
	case powerTransform:
		return tr.Lo, tr.Hi
	}
	panic("unknown transform")
}

// same reports a == b bit for bit, NaN equal to NaN.
func same(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestParamsMatchOldFormulas draws u at random (standard normal, scaled by
// up to 30 so that transforms saturate) and natural θ at random (inside
// and outside the supports) and requires LogPrior with its gradient,
// Constrain with its log-Jacobian, Unconstrain and its errors, and the
// Default*Prior values of LGSSM, SVM and GARCH to equal the frozen old
// formulas bit for bit; GARCH, whose μ map changed since (powerTransform),
// to 10⁻⁹ relative where u_μ is within ±8 (from about 9 on μ rounds to
// its bound 2, and the two ways of writing the map round differently).
func TestParamsMatchOldFormulas(t *testing.T) {
	cases := []struct {
		name string
		m    ssm.Model
		def  ssm.Prior
		old  oldSpec
		tol  float64
	}{
		{"LGSSM", models.LGSSM{}, models.DefaultLGSSMPrior(), oldAR1, 0},
		{"SVM", models.SVM{}, models.DefaultSVMPrior(), oldAR1, 0},
		{"GARCH", models.GARCH{}, models.DefaultGARCHPrior(), oldGARCH, 1e-9},
	}
	rng := rand.New(rand.NewPCG(13, 1))
	for _, c := range cases {
		p := c.m.Dims().Param
		if got := fmt.Sprint(c.m.ParamNames()); got != fmt.Sprint(c.old.names) {
			t.Errorf("%s: names %s, want %v", c.name, got, c.old.names)
		}
		u, g, g2, gold := make([]float64, p), make([]float64, p), make([]float64, p), make([]float64, p)
		th, thOld, back, backOld := make([]float64, p), make([]float64, p), make([]float64, p), make([]float64, p)
		mismatches := 0
		for it := 0; it < 20000; it++ {
			scale := []float64{1, 3, 30}[it%3]
			for i := range u {
				u[i] = scale * rng.NormFloat64()
			}
			if c.tol > 0 && math.Abs(u[0]) > 8 {
				continue
			}
			same := func(a, b float64) bool {
				return same(a, b) || math.Abs(a-b) <= c.tol*math.Abs(b)
			}
			want := c.old.logPrior(gold, u)
			got := c.m.LogPrior(g, u)
			got2 := c.def.LogPrior(g2, u)
			lj, ljOld := c.m.Constrain(th, u), c.old.constrain(thOld, u)
			ok := same(got, want) && same(got2, want) && same(lj, ljOld)
			for i := range u {
				ok = ok && same(g[i], gold[i]) && same(g2[i], gold[i]) && same(th[i], thOld[i])
			}
			// Natural values: the constrained point, and perturbed ones
			// that may leave the support.
			for i := range th {
				if it%2 == 1 {
					th[i] += rng.NormFloat64()
				}
			}
			copy(thOld, th)
			err, errOld := c.m.Unconstrain(back, th), c.old.unconstrain(backOld, thOld)
			if (err == nil) != (errOld == nil) || (err != nil && err.Error() != errOld.Error()) {
				ok = false
			}
			if err == nil {
				for i := range back {
					ok = ok && same(back[i], backOld[i])
				}
			}
			if !ok {
				mismatches++
				if mismatches <= 3 {
					t.Errorf("%s at u = %v: log prior %v/%v (old %v), grad %v/%v (old %v), theta %v (old %v), logJ %v (old %v), unconstrain %v/%v (old %v/%v)",
						c.name, u, got, got2, want, g, g2, gold, th, thOld, lj, ljOld, back, err, backOld, errOld)
				}
			}
		}
		if mismatches > 0 {
			t.Errorf("%s: %d of 20000 random points differ from the old formulas", c.name, mismatches)
		}
	}
}

// TestParamsTransforms checks Real, Interval and the one-sided intervals:
// round trip, log-Jacobian and prior gradient (ssmtest), support, and
// errors naming the parameter.
func TestParamsTransforms(t *testing.T) {
	p := models.Params{
		Names:      []string{"a", "b", "c", "d", "e", "f"},
		Transforms: []models.Transform{models.Real, models.Interval(-3, 5), models.Interval(math.Inf(-1), 2), models.Interval(1, math.Inf(1)), models.Symmetric, {Lo: 0, Hi: 2, Power: 4}},
		Prior:      []models.Marginal{models.Normal{Mu: 1, Sigma: 2}, models.Uniform{Lo: -3, Hi: 5}, models.Flat{}, models.InvGammaSq{A: 3, B: 1}, models.Beta{A: 2, B: 3, Lo: -1, Hi: 1}, models.Uniform{Lo: 0, Hi: 2}},
	}
	m := paramsOnly{p}
	rng := rand.New(rand.NewPCG(5, 6))
	theta := make([]float64, p.Len())
	for it := 0; it < 20; it++ {
		u := make([]float64, p.Len())
		for i := range u {
			u[i] = 2 * rng.NormFloat64()
		}
		if err := ssmtest.CheckTransform(m, u); err != nil {
			t.Error(err)
		}
		if err := ssmtest.CheckPrior(p, u); err != nil {
			t.Error(err)
		}
		if err := p.Natural(theta, nil, u); err != nil {
			t.Fatal(err)
		}
		if theta[0] != u[0] || !(theta[1] > -3 && theta[1] < 5) || !(theta[2] < 2) || !(theta[3] > 1) || !(theta[5] > 0 && theta[5] < 2) {
			t.Errorf("theta(%v) = %v outside the supports", u, theta)
		}
	}
	// A nil Prior is the flat prior on θ: LogPrior is the log-Jacobian.
	flat := models.Params{Names: p.Names, Transforms: p.Transforms}
	u := []float64{0.3, -0.2, 1.1, -0.7, 0.4, -0.5}
	if got, want := flat.LogPrior(nil, u), flat.Constrain(theta, u); math.Abs(got-want) > 1e-14 {
		t.Errorf("flat log prior %v, log-Jacobian %v", got, want)
	}
	if err := ssmtest.CheckPrior(flat, u); err != nil {
		t.Error(err)
	}
	for i, bad := range [][]float64{{math.NaN(), 0, 0, 2, 0, 1}, {0, 5, 0, 2, 0, 1}, {0, 0, 2, 2, 0, 1}, {0, 0, 0, 1, 0, 1}, {0, 0, 0, 2, -1, 1}, {0, 0, 0, 2, 0, 2}} {
		_, err := p.FromNatural(bad...)
		var pe *ssm.ParamError
		if !errors.As(err, &pe) || pe.Name != p.Names[i] {
			t.Errorf("FromNatural(%v): error %v, want a *ssm.ParamError naming %s", bad, err, p.Names[i])
		}
	}
	if _, err := p.FromNatural(1, 2); err == nil {
		t.Error("FromNatural accepted 2 values for 5 parameters")
	}
	var pe *ssm.ParamError
	if err := p.Natural(theta, nil, []float64{0, 0, 0, 800, 0, 0}); !errors.As(err, &pe) || pe.Name != "d" {
		t.Errorf("Natural with an overflowing u: %v, want an error naming d", err)
	}
}

// TestTransformPower: Power 1 is the logistic map; Power 4 keeps the
// slope of log(v − Lo) in u at Rate·(1 − z⁴), z = (v − Lo)/(Hi − Lo),
// against central differences (0.9375 at the middle, where the logistic's
// is 0.5), with its round trip, in both tails.
func TestTransformPower(t *testing.T) {
	logistic, one := models.Interval(0, 2), models.Transform{Lo: 0, Hi: 2, Rate: 1, Power: 1}
	bent := models.Transform{Lo: 0, Hi: 2, Power: 4}
	for _, u := range []float64{-30, -3, -0.5, 0, 0.7, 4, 30} {
		v1, d1, l1, dl1 := logistic.Forward(u)
		v2, d2, l2, dl2 := one.Forward(u)
		if v1 != v2 || d1 != d2 || l1 != l2 || dl1 != dl2 {
			t.Errorf("Power 1 at u = %v: (%v %v %v %v), logistic (%v %v %v %v)", u, v2, d2, l2, dl2, v1, d1, l1, dl1)
		}
		v, dv, logJ, _ := bent.Forward(u)
		if !(v >= 0 && v <= 2) || math.Abs(logJ-math.Log(dv)) > 1e-12*max(1, math.Abs(logJ)) {
			t.Errorf("Power 4 at u = %v: v %v, dv %v, log-Jacobian %v", u, v, dv, logJ)
		}
		if w, ok := bent.Inverse(v); math.Abs(u) < 20 && (!ok || math.Abs(w-u) > 1e-9*max(1, math.Abs(u))) {
			t.Errorf("Power 4: Inverse(Forward(%v)) = %v, %v", u, w, ok)
		}
	}
	for _, z := range []float64{0.05, 0.3, 0.5, 0.7} {
		u, _ := bent.Inverse(2 * z)
		const h = 1e-6
		vp, _, _, _ := bent.Forward(u + h)
		vm, _, _, _ := bent.Forward(u - h)
		slope := (math.Log(vp) - math.Log(vm)) / (2 * h)
		if want := 1 - math.Pow(z, 4); math.Abs(slope-want) > 1e-7 {
			t.Errorf("Power 4 at z = %v: slope of log v %v, want %v", z, slope, want)
		}
	}
	ul, _ := logistic.Inverse(1)
	ub, _ := bent.Inverse(1)
	_, dl, _, _ := logistic.Forward(ul)
	_, db, _, _ := bent.Forward(ub)
	if sl, sb := dl/1, db/1; math.Abs(sl-0.5) > 1e-12 || math.Abs(sb-0.9375) > 1e-12 {
		t.Errorf("slope of log v at the middle: logistic %v (want 0.5), Power 4 %v (want 0.9375)", sl, sb)
	}
}

// paramsOnly is a Params dressed as an ssm.Model for CheckTransform.
type paramsOnly struct{ models.Params }

func (m paramsOnly) Dims() ssm.Dims                   { return ssm.Dims{State: 1, Obs: 1, Param: m.Len()} }
func (paramsOnly) Bind([]float64) (ssm.Kernel, error) { return nil, errors.New("no kernel") }
