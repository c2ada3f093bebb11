package ssmtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Default tolerances on the relative errors measured by the checks. A
// correct model with smooth densities usually reaches 1e-9 or better; the
// margin absorbs the rounding error of the finite differences when the
// log-likelihood is large.
const (
	ScoreTol     = 1e-6
	TransformTol = 1e-6
	PriorTol     = 1e-6
)

// ErrMismatch is wrapped by the errors of CheckTransform and CheckPrior when
// an analytic quantity disagrees with its numerical answer.
var ErrMismatch = errors.New("ssmtest: analytic and numerical answers differ")

// Comparison holds an analytic gradient next to its finite-difference value.
type Comparison struct {
	Names    []string  // coordinate names, may be nil
	Analytic []float64 // what the model computed
	FD       []float64 // Richardson-extrapolated central differences
}

// RelErr returns the largest per-coordinate relative error
// |Analytic_i − FD_i| / max(|FD_i|, 1) and its coordinate. A NaN anywhere
// gives +Inf.
func (c Comparison) RelErr() (maxErr float64, coord int) {
	coord = -1
	for i := range c.FD {
		e := math.Abs(c.Analytic[i]-c.FD[i]) / math.Max(math.Abs(c.FD[i]), 1)
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		if coord < 0 || e > maxErr {
			maxErr, coord = e, i
		}
	}
	return maxErr, coord
}

// String formats the comparison one coordinate per line.
func (c Comparison) String() string {
	var b strings.Builder
	for i := range c.FD {
		name := fmt.Sprintf("u[%d]", i)
		if i < len(c.Names) {
			name = fmt.Sprintf("u[%d] (%s)", i, c.Names[i])
		}
		e := math.Abs(c.Analytic[i]-c.FD[i]) / math.Max(math.Abs(c.FD[i]), 1)
		fmt.Fprintf(&b, "%s: analytic %.12g, finite difference %.12g, rel. error %.3g\n", name, c.Analytic[i], c.FD[i], e)
	}
	return b.String()
}

// fdStep is the first central-difference step (scaled by max(1, |u_i|));
// three halvings are combined by Richardson extrapolation, which cancels
// the h² and h⁴ error terms, so the step can be large enough to keep
// rounding error near 1e-12 relative.
const fdStep = 1e-2

// gradFD returns the Richardson-extrapolated central difference of f at u
// in coordinate i. u is restored on return.
func gradFD(f func([]float64) (float64, error), u []float64, i int) (float64, error) {
	h := fdStep * math.Max(1, math.Abs(u[i]))
	ui := u[i]
	defer func() { u[i] = ui }()
	var d [3]float64
	for k := range d {
		u[i] = ui + h
		fp, err := f(u)
		if err != nil {
			return math.NaN(), err
		}
		u[i] = ui - h
		fm, err := f(u)
		if err != nil {
			return math.NaN(), err
		}
		if math.IsNaN(fp) || math.IsInf(fp, 0) || math.IsNaN(fm) || math.IsInf(fm, 0) {
			return math.NaN(), fmt.Errorf("ssmtest: function not finite near u[%d] = %v (step %v): %v, %v", i, ui, h, fp, fm)
		}
		d[k] = (fp - fm) / (2 * h)
		h /= 2
	}
	r0 := (4*d[1] - d[0]) / 3
	r1 := (4*d[2] - d[1]) / 3
	return (16*r1 - r0) / 15, nil
}

// ScorePath compares the sum of the pairwise scores of m at u along the path
// x (a (T+1)×State block, row 0 is x_0) and the data y (length T, NaN =
// missing) with finite differences of the complete-data log-likelihood. If
// the kernel is an ssm.StateCompleter the deterministic part of a copy of x
// is re-derived under every kernel used, including the one at u. It also
// checks that AddScore scales with its weight w. Errors report a model that
// cannot be bound or a log-likelihood that is not finite.
func ScorePath(m ssm.Model, u, x []float64, y ssm.Sequence) (Comparison, error) {
	d := m.Dims()
	if len(u) != d.Param {
		panic(fmt.Sprintf("ssmtest: %d parameters for a model with %d", len(u), d.Param))
	}
	T := y.Len()
	if len(x) != (T+1)*d.State || y.Obs != d.Obs {
		panic(fmt.Sprintf("ssmtest: path of %d values and data of %d×%d do not fit dims %+v", len(x), T, y.Obs, d))
	}
	u = append([]float64(nil), u...)
	path := make([]float64, len(x))
	k, err := m.Bind(u)
	if err != nil {
		return Comparison{}, fmt.Errorf("ssmtest: Bind at u = %v: %w", u, err)
	}
	copy(path, x)
	complete(k, path, d.State, T)

	// Analytic: the sum of pairwise statistics, with weight 1 and again with
	// weight 2.5 to catch a weight that is ignored or applied twice.
	const w = 2.5
	g := make([]float64, d.Param)
	gw := make([]float64, d.Param)
	nanY := make([]float64, d.Obs)
	for i := range nanY {
		nanY[i] = math.NaN() // ignored by contract when prev is nil
	}
	k.AddScore(g, 1, nanY, path[:d.State], nil)
	k.AddScore(gw, w, nanY, path[:d.State], nil)
	for t := 1; t <= T; t++ {
		cur, prev := path[t*d.State:(t+1)*d.State], path[(t-1)*d.State:t*d.State]
		k.AddScore(g, 1, y.At(t-1), cur, prev)
		k.AddScore(gw, w, y.At(t-1), cur, prev)
	}
	for i := range g {
		if math.Abs(gw[i]-w*g[i]) > 1e-10*math.Max(math.Abs(w*g[i]), 1) {
			return Comparison{}, fmt.Errorf("%w: AddScore with weight %v gives %v in u[%d], weight 1 gives %v", ErrMismatch, w, gw[i], i, g[i])
		}
	}

	buf := make([]float64, len(x))
	f := func(v []float64) (float64, error) {
		kv, err := m.Bind(v)
		if err != nil {
			return math.NaN(), fmt.Errorf("ssmtest: Bind at u = %v: %w", v, err)
		}
		copy(buf, x)
		complete(kv, buf, d.State, T)
		return completeLogLik(kv, buf, y, d.State), nil
	}
	if l, _ := f(u); math.IsNaN(l) || math.IsInf(l, 0) {
		return Comparison{}, fmt.Errorf("ssmtest: complete-data log-likelihood at u = %v is %v", u, l)
	}
	fd := make([]float64, d.Param)
	for i := range fd {
		if fd[i], err = gradFD(f, u, i); err != nil {
			return Comparison{}, err
		}
	}
	return Comparison{Names: m.ParamNames(), Analytic: g, FD: fd}, nil
}

// complete re-derives the deterministic part of path under k, if any.
func complete(k ssm.Kernel, path []float64, s, T int) {
	c, ok := k.(ssm.StateCompleter)
	if !ok {
		return
	}
	c.Complete(path[:s], nil)
	for t := 1; t <= T; t++ {
		c.Complete(path[t*s:(t+1)*s], path[(t-1)*s:t*s])
	}
}

// completeLogLik evaluates log ν_0(x_0) + Σ_t [log p(x_t|x_{t-1}) + log p(y_t|x_t)].
func completeLogLik(k ssm.Kernel, path []float64, y ssm.Sequence, s int) float64 {
	l := k.LogInitial(path[:s])
	var buf [1]float64
	for t := 1; t <= y.Len(); t++ {
		cur, prev := path[t*s:(t+1)*s], path[(t-1)*s:t*s]
		k.LogTransitions(buf[:], cur, prev)
		l += buf[0]
		buf[0] = 0
		k.AddLogEmission(buf[:], y.At(t-1), cur)
		l += buf[0]
	}
	return l
}

// CompleteLogLik returns the complete-data log-likelihood
// log ν_0(x_0) + Σ_t [log p(x_t|x_{t-1}) + log p(y_t|x_t)] of the path x
// ((T+1)×State) and data y (length T) under k, as the score check
// evaluates it (the path is used as given, not completed).
func CompleteLogLik(k ssm.Kernel, d ssm.Dims, x []float64, y ssm.Sequence) float64 {
	if len(x) != (y.Len()+1)*d.State {
		panic(fmt.Sprintf("ssmtest: path of %d values for %d observations and state dimension %d", len(x), y.Len(), d.State))
	}
	return completeLogLik(k, x, y, d.State)
}

// CheckScore simulates a path and data of length T from m at u and returns
// the largest relative error of the summed pairwise score against finite
// differences of the complete-data log-likelihood (see ScorePath). It checks
// the same path twice: with the full data, and with every third observation
// component set missing (NaN), and returns the larger error. Compare the
// result with ScoreTol. The error is non-nil when the model cannot be bound
// or evaluated, never because of the size of maxRelErr.
func CheckScore(m ssm.Model, u []float64, T int, rng *rand.Rand) (maxRelErr float64, err error) {
	k, err := m.Bind(u)
	if err != nil {
		return math.Inf(1), fmt.Errorf("ssmtest: Bind at u = %v: %w", u, err)
	}
	d := m.Dims()
	x, y := ssm.Simulate(k, d, T, rng)
	c, err := ScorePath(m, u, x, y)
	if err != nil {
		return math.Inf(1), err
	}
	e1, _ := c.RelErr()
	ym := ssm.Sequence{Obs: y.Obs, Y: append([]float64(nil), y.Y...)}
	for i := 0; i < len(ym.Y); i += 3 {
		ym.Y[i] = math.NaN()
	}
	c, err = ScorePath(m, u, x, ym)
	if err != nil {
		return math.Inf(1), err
	}
	e2, _ := c.RelErr()
	return math.Max(e1, e2), nil
}

// TransformErr returns the round-trip error max_i |Unconstrain(Constrain(u))_i
// − u_i| / max(|u_i|, 1), and the error of the log|det ∂θ/∂u| that Constrain
// returns against the log-determinant of a finite-difference Jacobian,
// |got − fd| / max(|fd|, 1).
func TransformErr(m ssm.Model, u []float64) (roundTrip, logDet float64, err error) {
	p := m.Dims().Param
	if len(u) != p {
		panic(fmt.Sprintf("ssmtest: %d parameters for a model with %d", len(u), p))
	}
	if n := len(m.ParamNames()); n != p {
		return math.Inf(1), math.Inf(1), fmt.Errorf("%w: %d parameter names for %d parameters", ErrMismatch, n, p)
	}
	u = append([]float64(nil), u...)
	theta := make([]float64, p)
	logJ := m.Constrain(theta, u)
	back := make([]float64, p)
	if err := m.Unconstrain(back, theta); err != nil {
		return math.Inf(1), math.Inf(1), fmt.Errorf("ssmtest: Unconstrain(Constrain(%v) = %v): %w", u, theta, err)
	}
	for i := range u {
		roundTrip = math.Max(roundTrip, math.Abs(back[i]-u[i])/math.Max(math.Abs(u[i]), 1))
	}
	jac := mat.NewDense(p, p, nil)
	tv := make([]float64, p)
	for j := 0; j < p; j++ {
		for i := 0; i < p; i++ {
			f := func(v []float64) (float64, error) {
				m.Constrain(tv, v)
				return tv[i], nil
			}
			dij, err := gradFD(f, u, j)
			if err != nil {
				return roundTrip, math.Inf(1), err
			}
			jac.Set(i, j, dij)
		}
	}
	fd, _ := mat.LogDet(jac)
	logDet = math.Abs(logJ-fd) / math.Max(math.Abs(fd), 1)
	if math.IsNaN(logDet) {
		logDet = math.Inf(1)
	}
	return roundTrip, logDet, nil
}

// CheckTransform checks that Unconstrain inverts Constrain at u and that
// the log-Jacobian Constrain returns matches a finite-difference Jacobian,
// both within TransformTol. A mismatch wraps ErrMismatch.
func CheckTransform(m ssm.Model, u []float64) error {
	rt, ld, err := TransformErr(m, u)
	if err != nil {
		return err
	}
	if rt > TransformTol {
		return fmt.Errorf("%w: Unconstrain(Constrain(u)) differs from u = %v by %.3g (relative)", ErrMismatch, u, rt)
	}
	if ld > TransformTol {
		return fmt.Errorf("%w: log|det dθ/du| at u = %v off by %.3g (relative)", ErrMismatch, u, ld)
	}
	return nil
}

// PriorGradient compares the gradient LogPrior stores at u with finite
// differences of LogPrior. It also checks that the value returned with and
// without a gradient agree.
func PriorGradient(p ssm.Prior, u []float64) (Comparison, error) {
	u = append([]float64(nil), u...)
	g := make([]float64, len(u))
	for i := range g {
		g[i] = math.NaN() // LogPrior must overwrite
	}
	l := p.LogPrior(g, u)
	l0 := p.LogPrior(nil, u)
	if math.IsNaN(l) || math.IsInf(l, 0) {
		return Comparison{}, fmt.Errorf("ssmtest: log prior at u = %v is %v", u, l)
	}
	if l != l0 {
		return Comparison{}, fmt.Errorf("%w: LogPrior at u = %v is %v with a gradient, %v without", ErrMismatch, u, l, l0)
	}
	f := func(v []float64) (float64, error) { return p.LogPrior(nil, v), nil }
	fd := make([]float64, len(u))
	for i := range fd {
		var err error
		if fd[i], err = gradFD(f, u, i); err != nil {
			return Comparison{}, err
		}
	}
	c := Comparison{Analytic: g, FD: fd}
	if m, ok := p.(ssm.Model); ok {
		c.Names = m.ParamNames()
	}
	return c, nil
}

// CheckPrior checks the log-prior gradient at u against finite differences
// within PriorTol. A mismatch wraps ErrMismatch.
func CheckPrior(p ssm.Prior, u []float64) error {
	c, err := PriorGradient(p, u)
	if err != nil {
		return err
	}
	if e, _ := c.RelErr(); e > PriorTol {
		return fmt.Errorf("%w: log-prior gradient at u = %v, largest relative error %.3g:\n%s", ErrMismatch, u, e, c)
	}
	return nil
}

// Model runs CheckScore (path length T), CheckTransform and CheckPrior on m
// at u with the default tolerances and reports failures through tb.
func Model(tb testing.TB, m ssm.Model, u []float64, T int, rng *rand.Rand) {
	tb.Helper()
	e, err := CheckScore(m, u, T, rng)
	switch {
	case err != nil:
		tb.Errorf("score at u = %v: %v", u, err)
	case e > ScoreTol:
		tb.Errorf("score at u = %v: largest relative error %.3g > %g", u, e, ScoreTol)
	}
	if err := CheckTransform(m, u); err != nil {
		tb.Error(err)
	}
	if err := CheckPrior(m, u); err != nil {
		tb.Error(err)
	}
}

// CheckLaplace checks the capabilities that Laplace importance sampling
// (pf.Laplace) needs of the kernel at u, at three random states drawn
// from the model: that ssm.LinearGaussian's F, c, Q, m0 and P0 give the
// kernel's own LogTransitions and LogInitial (to 1e-9 relative), and that
// ssm.EmissionCurvature's value is AddLogEmission's, and its gradient and
// Hessian their finite differences (to 1e-5 relative), for an emission
// drawn by SampleEmission with its first component missing and without.
// For a kernel whose ssm.SeparableEmission reports true it also checks
// that every mixed difference ℓ(x + a e_i + b e_j) − ℓ(x + a e_i) −
// ℓ(x + b e_j) + ℓ(x) of AddLogEmission is 0 (to 1e-9 of the values).
func CheckLaplace(m ssm.Model, u []float64, rng *rand.Rand) error {
	k, err := m.Bind(u)
	if err != nil {
		return err
	}
	lg, ok1 := k.(ssm.LinearGaussian)
	ec, ok2 := k.(ssm.EmissionCurvature)
	if !ok1 || !ok2 {
		return fmt.Errorf("ssmtest: the kernel (%T) does not implement ssm.LinearGaussian and ssm.EmissionCurvature", k)
	}
	d := m.Dims()
	n := d.State
	F, c, Q, m0, P0 := make([]float64, n*n), make([]float64, n), make([]float64, n*n), make([]float64, n), make([]float64, n*n)
	lg.LinearGaussian(F, c, Q, m0, P0)
	gauss := func(x, mean, cov []float64) (float64, error) {
		cm := mat.NewSymDense(n, append([]float64(nil), cov...))
		var ch mat.Cholesky
		if !ch.Factorize(cm) {
			return 0, fmt.Errorf("%w: covariance %v is not positive definite", ErrMismatch, cov)
		}
		dev := mat.NewVecDense(n, nil)
		for i := range n {
			dev.SetVec(i, x[i]-mean[i])
		}
		sol := mat.NewVecDense(n, nil)
		if err := ch.SolveVecTo(sol, dev); err != nil {
			return 0, err
		}
		return -0.5*float64(n)*math.Log(2*math.Pi) - 0.5*ch.LogDet() - 0.5*mat.Dot(dev, sol), nil
	}
	near := func(what string, got, want, tol float64) error {
		if !(math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))) {
			return fmt.Errorf("%w: %s: %.12g, want %.12g", ErrMismatch, what, got, want)
		}
		return nil
	}
	prev, x, y := make([]float64, n), make([]float64, n), make([]float64, d.Obs)
	k.SampleInitial(prev, rng)
	for trial := range 3 {
		k.SampleTransition(x, prev, rng)
		// The transition and the initial law.
		mean := make([]float64, n)
		for i := range n {
			mean[i] = c[i]
			for j := range n {
				mean[i] += F[i*n+j] * prev[j]
			}
		}
		want, err := gauss(x, mean, Q)
		if err != nil {
			return err
		}
		got := []float64{0}
		k.LogTransitions(got, x, prev)
		if err := near(fmt.Sprintf("log transition density at state %d", trial), got[0], want, 1e-9); err != nil {
			return err
		}
		if want, err = gauss(x, m0, P0); err != nil {
			return err
		}
		if err := near(fmt.Sprintf("log initial density at state %d", trial), k.LogInitial(x), want, 1e-9); err != nil {
			return err
		}
		// The emission, with and without a missing component.
		k.SampleEmission(y, x, rng)
		for _, miss := range []bool{false, true} {
			yy := append([]float64(nil), y...)
			if miss {
				yy[0] = math.NaN()
			}
			if err := checkCurvature(k, ec, n, yy, x, near); err != nil {
				return err
			}
			if err := checkSeparable(k, n, yy, x); err != nil {
				return err
			}
		}
		prev, x = x, prev
	}
	return nil
}

// checkSeparable checks a kernel's ssm.SeparableEmission claim at x by
// mixed differences of AddLogEmission over steps of 0.5 and −0.7.
func checkSeparable(k ssm.Kernel, n int, y, x []float64) error {
	se, ok := k.(ssm.SeparableEmission)
	if !ok || !se.SeparableEmission() {
		return nil
	}
	emit := func(di, a float64, i int, dj, b float64, j int) float64 {
		xp := append([]float64(nil), x...)
		xp[i] += di * a
		xp[j] += dj * b
		v := []float64{0}
		k.AddLogEmission(v, y, xp)
		return v[0]
	}
	const a, b = 0.5, -0.7
	for i := range n {
		for j := i + 1; j < n; j++ {
			f11, f10, f01, f00 := emit(1, a, i, 1, b, j), emit(1, a, i, 0, b, j), emit(0, a, i, 1, b, j), emit(0, a, i, 0, b, j)
			scale := math.Max(1, math.Max(math.Abs(f11), math.Abs(f00)))
			if mixed := f11 - f10 - f01 + f00; !(math.Abs(mixed) <= 1e-9*scale) {
				return fmt.Errorf("%w: the kernel reports a separable emission, but the mixed difference of log p(y | x) in state components %d and %d is %.3g (y = %v, x = %v)", ErrMismatch, i, j, mixed, y, x)
			}
		}
	}
	return nil
}

// checkCurvature compares EmissionCurvature at x with AddLogEmission and
// its central differences.
func checkCurvature(k ssm.Kernel, ec ssm.EmissionCurvature, n int, y, x []float64, near func(string, float64, float64, float64) error) error {
	g, H := make([]float64, n), make([]float64, n*n)
	l := ec.LogEmissionCurvature(g, H, y, x)
	emit := func(x []float64) float64 {
		v := []float64{0}
		k.AddLogEmission(v, y, x)
		return v[0]
	}
	if err := near("log emission density", l, emit(x), 1e-12); err != nil {
		return err
	}
	const h = 1e-4
	xp := append([]float64(nil), x...)
	g2, H2 := make([]float64, n), make([]float64, n*n)
	for i := range n {
		xp[i] = x[i] + h
		fp := emit(xp)
		ec.LogEmissionCurvature(g2, H2, y, xp)
		hp := append([]float64(nil), g2...)
		xp[i] = x[i] - h
		fm := emit(xp)
		ec.LogEmissionCurvature(g2, H2, y, xp)
		xp[i] = x[i]
		if err := near(fmt.Sprintf("emission gradient %d (y = %v)", i, y), g[i], (fp-fm)/(2*h), 1e-5); err != nil {
			return err
		}
		for j := range n {
			if err := near(fmt.Sprintf("emission Hessian %d,%d (y = %v)", i, j, y), H[j*n+i], (hp[j]-g2[j])/(2*h), 1e-5); err != nil {
				return err
			}
		}
	}
	return nil
}
