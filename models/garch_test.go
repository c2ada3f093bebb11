package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// garchU returns u for natural (μ, φ, λ, τ), failing the test on error.
func garchU(t testing.TB, mu, phi, lambda, tau float64) []float64 {
	t.Helper()
	u, err := models.GARCH{}.Params(mu, phi, lambda, tau)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// garchCases are parameter points for the derivative checks: the paper's
// data-generating values, γ far from 0 (φ = 0.95, λ = 0.2 gives γ = 0.76),
// and random draws.
func garchCases(t testing.TB, rng *rand.Rand) [][]float64 {
	t.Helper()
	paper, err := models.GARCH{}.FromABG(0.1, 0.8, 0.05, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	cases := [][]float64{
		paper,
		garchU(t, 0.5, 0.95, 0.2, 0.3),
		garchU(t, 1.5, 0.9, 0.05, 1.2),
	}
	for range 4 {
		cases = append(cases, garchU(t,
			0.1+1.8*rng.Float64(),
			0.05+0.9*rng.Float64(),
			0.05+0.9*rng.Float64(),
			0.1+rng.Float64()))
	}
	return cases
}

func TestGARCHScoreFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := models.GARCH{}
	const T = 50
	worst := 0.0
	for _, u := range garchCases(t, rng) {
		// Full data and every third observation missing (CheckScore).
		e, err := ssmtest.CheckScore(m, u, T, rng)
		if err != nil {
			t.Fatalf("u = %v: %v", u, err)
		}
		if e > ssmtest.ScoreTol {
			t.Errorf("u = %v: score relative error %.3g > %g", u, e, ssmtest.ScoreTol)
		}
		worst = math.Max(worst, e)

		// A run of missing observations, including the last one.
		k, _ := m.Bind(u)
		x, y := ssm.Simulate(k, m.Dims(), T, rng)
		for i := 30; i < T; i++ {
			y.Y[i] = math.NaN()
		}
		c, err := ssmtest.ScorePath(m, u, x, y)
		if err != nil {
			t.Fatalf("u = %v: %v", u, err)
		}
		if e, _ := c.RelErr(); e > ssmtest.ScoreTol {
			t.Errorf("u = %v, missing block: relative error %.3g\n%s", u, e, c)
		} else {
			worst = math.Max(worst, e)
		}
	}
	t.Logf("largest score relative error (vs Richardson central differences): %.3g", worst)
}

// TestGARCHTangentFD checks the stored tangent ∂σ_T²/∂u against central
// differences of σ_T² re-derived along a fixed x path.
func TestGARCHTangentFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	m := models.GARCH{}
	const T, S = 40, 6
	u := garchU(t, 0.5, 0.95, 0.2, 0.3)
	k, _ := m.Bind(u)
	x, _ := ssm.Simulate(k, m.Dims(), T, rng)
	s2At := func(v []float64) float64 {
		kv, err := m.Bind(v)
		if err != nil {
			t.Fatal(err)
		}
		p := append([]float64(nil), x...)
		c := kv.(ssm.StateCompleter)
		c.Complete(p[:S], nil)
		for i := 1; i <= T; i++ {
			c.Complete(p[i*S:(i+1)*S], p[(i-1)*S:i*S])
		}
		return p[T*S+1]
	}
	if got, want := s2At(u), x[T*S+1]; math.Abs(got-want) > 1e-12*want {
		t.Fatalf("Complete does not reproduce the simulated σ_T²: %v vs %v", got, want)
	}
	for i := range 4 {
		const h = 1e-4
		v := append([]float64(nil), u...)
		v[i] = u[i] + h
		fp := s2At(v)
		v[i] = u[i] - h
		fm := s2At(v)
		fd := (fp - fm) / (2 * h)
		got := x[T*S+2+i]
		// Central-difference truncation error is O(h²) ≈ 1e-8 relative.
		if math.Abs(got-fd) > 1e-6*math.Max(math.Abs(fd), 1e-3) {
			t.Errorf("∂σ_T²/∂u_%d: stored %.10g, finite difference %.10g", i+1, got, fd)
		}
	}
}

// paperScore is the gradient formula of the paper's appendix (and the
// authors' code): the chain rule through σ_t² stops at α, β, γ, dropping
// γ ∂σ_{t−1}²/∂u. It is computed here from the natural parameters, in the
// u coordinates of this package (u_1 = u_μ instead of log μ).
func paperScore(u, x []float64, y ssm.Sequence) []float64 {
	const S = 6
	theta := make([]float64, 4)
	models.GARCH{}.Constrain(theta, u)
	mu, phi, lam, tau := theta[0], theta[1], theta[2], theta[3]
	alpha, beta, gamma := mu*(1-phi), phi*lam, phi*(1-lam)
	dmu, dphi, dlam := mu*(1-math.Pow(mu/2, 4)), phi*(1-phi), lam*(1-lam)
	g := make([]float64, 4)
	// Initial term: ∇ log N(x_0 | 0, μ) (exact: σ_0² = μ has no history).
	x0 := x[0]
	g[0] += (x0*x0 - mu) / (2 * mu * mu) * dmu
	s2p := mu
	for t := 1; t <= y.Len(); t++ {
		xp, xt := x[(t-1)*S], x[t*S]
		s2 := alpha + beta*xp*xp + gamma*s2p
		c := (xt*xt - s2) / (2 * s2 * s2)
		g[0] += c * (1 - phi) * dmu
		g[1] += c * (lam*xp*xp + (1-lam)*s2p - mu) * dphi
		g[2] += c * (phi*xp*xp - phi*s2p) * dlam
		if yt := y.Y[t-1]; !math.IsNaN(yt) {
			e := yt - xt
			g[3] += (e*e - tau*tau) / (tau * tau)
		}
		s2p = s2
	}
	return g
}

// TestGARCHPaperGradientBiased documents why the kernel carries the tangent:
// with γ = 0.76 the paper's partial-derivative formula is far from finite
// differences of the complete-data log-likelihood, while AddScore matches.
func TestGARCHPaperGradientBiased(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := models.GARCH{}
	u := garchU(t, 0.5, 0.95, 0.2, 0.3)
	k, _ := m.Bind(u)
	x, y := ssm.Simulate(k, m.Dims(), 50, rng)
	c, err := ssmtest.ScorePath(m, u, x, y)
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := c.RelErr()
	paper := ssmtest.Comparison{Names: c.Names, Analytic: paperScore(u, x, y), FD: c.FD}
	pe, coord := paper.RelErr()
	t.Logf("relative error: AddScore %.3g, paper formula %.3g (in %s)", ours, pe, c.Names[coord])
	if ours > ssmtest.ScoreTol {
		t.Errorf("AddScore relative error %.3g\n%s", ours, c)
	}
	if pe < 0.1 {
		t.Errorf("paper formula unexpectedly close to the total derivative (%.3g)\n%s", pe, paper)
	}
	// The τ coordinate does not involve σ², so the two agree there.
	if d := math.Abs(paper.Analytic[3] - c.Analytic[3]); d > 1e-9*math.Max(1, math.Abs(c.Analytic[3])) {
		t.Errorf("τ score differs from the paper formula by %v", d)
	}
}

func TestGARCHTransformAndPrior(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := garchCases(t, rng)
	cases = append(cases, []float64{-6, 8, -5, 3}, []float64{6, -4, 9, -3})
	for _, u := range cases {
		if err := ssmtest.CheckTransform(models.GARCH{}, u); err != nil {
			t.Error(err)
		}
		if err := ssmtest.CheckPrior(models.GARCH{}, u); err != nil {
			t.Error(err)
		}
	}
	// A user prior replaces the default.
	custom := models.Independent{
		Transforms: []models.Transform{{Lo: 0, Hi: 2, Power: 4}, models.Unit, models.Unit, models.Positive},
		Marginals:  []models.Marginal{models.Uniform{Lo: 0, Hi: 2}, models.Uniform{Lo: 0, Hi: 1}, models.Uniform{Lo: 0, Hi: 1}, models.Normal{Mu: 1, Sigma: 1}},
	}
	u := cases[0]
	if got, want := (models.GARCH{Prior: custom}).LogPrior(nil, u), custom.LogPrior(nil, u); got != want {
		t.Errorf("custom prior ignored: %v vs %v", got, want)
	}
	if err := ssmtest.CheckPrior(models.GARCH{Prior: custom}, u); err != nil {
		t.Error(err)
	}
}

// TestGARCHPriorNormalised integrates each coordinate of the default prior,
// pushed forward to u, over R by Gauss–Legendre quadrature. This checks the
// truncated-Beta normalising constants and the Jacobians, and that the
// model's default is the product of these coordinates.
func TestGARCHPriorNormalised(t *testing.T) {
	p := models.DefaultGARCHPrior()
	names := models.GARCH{}.ParamNames()
	u0 := []float64{0.3, 1.2, 2.5, -1}
	sum := 0.0
	for i := range p.Transforms {
		pi := models.Independent{Transforms: p.Transforms[i : i+1], Marginals: p.Marginals[i : i+1]}
		f := func(v float64) float64 { return math.Exp(pi.LogPrior(nil, []float64{v})) }
		// Tails decay at least like e^{−|u|}: e^{−60} is negligible.
		got := quad.Fixed(f, -60, 60, 4000, nil, 0)
		if math.Abs(got-1) > 1e-8 {
			t.Errorf("%s: pushed-forward prior integrates to %.12g", names[i], got)
		}
		sum += pi.LogPrior(nil, u0[i:i+1])
	}
	if got := (models.GARCH{}).LogPrior(nil, u0); math.Abs(got-sum) > 1e-12*math.Abs(sum) {
		t.Errorf("default LogPrior %v, sum of coordinates %v", got, sum)
	}
	// The truncated Beta in natural space: ∫_0^1 p(φ) dφ = 1.
	for _, m := range p.Marginals[1:3] {
		f := func(v float64) float64 { lp, _ := m.LogDensity(v); return math.Exp(lp) }
		if got := quad.Fixed(f, 0, 1, 2000, nil, 0); math.Abs(got-1) > 1e-6 {
			t.Errorf("%+v: integrates to %.10g on (0, 1)", m, got)
		}
	}
}

// batchMeans returns the mean of v and its batch-means standard error.
func batchMeans(v []float64, batches int) (mean, se float64) {
	n := len(v) / batches
	bm := make([]float64, batches)
	for b := range bm {
		s := 0.0
		for _, x := range v[b*n : (b+1)*n] {
			s += x
		}
		bm[b] = s / float64(n)
		mean += bm[b]
	}
	mean /= float64(batches)
	ss := 0.0
	for _, m := range bm {
		ss += (m - mean) * (m - mean)
	}
	return mean, math.Sqrt(ss / float64(batches-1) / float64(batches))
}

// TestGARCHSimulateMoments compares long-run averages of a simulation with
// stationary moments of GARCH(1,1). With β = 0.1, γ = 0.6 the eighth moment
// is finite (E[(βz²+γ)^4] ≈ 0.33 < 1), so the batch-means errors are valid.
func TestGARCHSimulateMoments(t *testing.T) {
	const alpha, beta, gamma, tau = 0.3, 0.1, 0.6, 0.5
	const T, burn, batches = 400000, 1000, 100
	u, err := models.GARCH{}.FromABG(alpha, beta, gamma, tau)
	if err != nil {
		t.Fatal(err)
	}
	x, y, err := models.GARCH{}.Simulate(T, u, rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		t.Fatal(err)
	}
	// Stationary moments. m2 = E x² = E σ²; E σ⁴ from squaring the
	// recursion with E x⁴ = 3 E σ⁴; E[x_t² x_{t−1}²] = E[σ_t² x_{t−1}²].
	m2 := alpha / (1 - beta - gamma)
	s4 := (alpha*alpha + 2*alpha*(beta+gamma)*m2) / (1 - 3*beta*beta - 2*beta*gamma - gamma*gamma)
	lag := alpha*m2 + (3*beta+gamma)*s4
	n := T - burn
	xs, x2, x4, xx, ys, y2 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		t := burn + 1 + i
		xt, xp := x[t*6], x[(t-1)*6]
		xs[i], x2[i], x4[i], xx[i] = xt, xt*xt, xt*xt*xt*xt, xt*xt*xp*xp
		ys[i], y2[i] = y.Y[t-1], y.Y[t-1]*y.Y[t-1]
	}
	for _, c := range []struct {
		name string
		v    []float64
		want float64
	}{
		{"E[x]", xs, 0},
		{"E[x²] = α/(1−β−γ)", x2, m2},
		{"E[x⁴] = 3E[σ⁴]", x4, 3 * s4},
		{"E[x_t² x_{t−1}²]", xx, lag},
		{"E[y]", ys, 0},
		{"E[y²] = α/(1−β−γ) + τ²", y2, m2 + tau*tau},
	} {
		mean, se := batchMeans(c.v, batches)
		z := (mean - c.want) / se
		t.Logf("%s: %.5f (want %.5f, SE %.5f, z = %.2f)", c.name, mean, c.want, se, z)
		if math.Abs(z) > 4 {
			t.Errorf("%s = %.5f, want %.5f ± 4×%.5f", c.name, mean, c.want, se)
		}
	}
	// x_0 ~ N(0, μ) keeps E x_t² = μ for every t, so also no burn-in bias
	// for the second moment from t = 1.
	if x0, _, err := (models.GARCH{}).Simulate(0, u, rand.New(rand.NewPCG(1, 1))); err != nil || len(x0) != 6 {
		t.Errorf("Simulate(0): %d values, %v", len(x0), err)
	}
}

// quadMoments integrates exp(lq), x exp(lq) and x² exp(lq) on [lo, hi].
func quadMoments(lq func(float64) float64, lo, hi float64) (z, m, v float64) {
	const n = 400
	z = quad.Fixed(func(x float64) float64 { return math.Exp(lq(x)) }, lo, hi, n, nil, 0)
	m = quad.Fixed(func(x float64) float64 { return x * math.Exp(lq(x)) }, lo, hi, n, nil, 0) / z
	v = quad.Fixed(func(x float64) float64 { return (x - m) * (x - m) * math.Exp(lq(x)) }, lo, hi, n, nil, 0) / z
	return z, m, v
}

func TestGARCHProposal(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const S, N = 6, 20000
	alpha, beta, gamma, tau := 0.1, 0.8, 0.05, 0.3
	u, _ := models.GARCH{}.FromABG(alpha, beta, gamma, tau)
	k, _ := models.GARCH{}.Bind(u)
	pr := k.(ssm.Proposer)
	for _, c := range []struct{ xp, s2p, y float64 }{
		{0.3, 0.5, 0.2}, {-1.5, 0.2, -2.5}, {0.01, 2, 0.9}, {2, 1, math.NaN()},
	} {
		prev := []float64{c.xp, c.s2p, 0.1, -0.2, 0.3, 0}
		y := []float64{c.y}
		s2 := alpha + beta*c.xp*c.xp + gamma*c.s2p // independent of the kernel
		sd := math.Sqrt(s2)
		lo, hi := -12*sd-math.Abs(c.y), 12*sd+math.Abs(c.y)
		trans := distuv.Normal{Mu: 0, Sigma: sd}
		emis := func(x float64) float64 { return distuv.Normal{Mu: x, Sigma: tau}.LogProb(c.y) }

		// Predictive weight p(y | prev) = ∫ p(y|x) p(x|prev) dx.
		x1 := make([]float64, S)
		logw := []float64{0.7}
		pr.Propose(x1, logw, prev, y, rng)
		inc := logw[0] - 0.7
		if math.IsNaN(c.y) {
			if inc != 0 {
				t.Errorf("missing y: weight increment %v, want 0", inc)
			}
		} else {
			pred := quad.Fixed(func(x float64) float64 { return math.Exp(emis(x) + trans.LogProb(x)) }, lo, hi, 400, nil, 0)
			if math.Abs(inc-math.Log(pred)) > 1e-9 {
				t.Errorf("%+v: weight %v, log ∫p(y|x)p(x|prev)dx = %v", c, inc, math.Log(pred))
			}
			// The weight is p(y|x)p(x|prev)/q(x) at the drawn x.
			var lt, le [1]float64
			k.LogTransitions(lt[:], x1, prev)
			k.AddLogEmission(le[:], y, x1)
			if d := lt[0] + le[0] - pr.LogProposal(x1, prev, y) - inc; math.Abs(d) > 1e-10 {
				t.Errorf("%+v: weight differs from p(y|x)p(x|prev)/q(x|prev,y) by %v in log", c, d)
			}
		}
		// The rest of the row is σ_t² and tangent from prev.
		want := append([]float64(nil), x1...)
		k.(ssm.StateCompleter).Complete(want, prev)
		for i := 1; i < S; i++ {
			if x1[i] != want[i] {
				t.Errorf("%+v: proposed row %v, Complete gives %v", c, x1, want)
				break
			}
		}
		if math.Abs(x1[1]-s2) > 1e-14 {
			t.Errorf("σ_t² = %v, want %v", x1[1], s2)
		}

		// q integrates to 1; its moments match N draws within 4 SE.
		lq := func(x float64) float64 {
			r := []float64{x, 0, 0, 0, 0, 0}
			return pr.LogProposal(r, prev, y)
		}
		z, qm, qv := quadMoments(lq, lo, hi)
		if math.Abs(z-1) > 1e-9 {
			t.Errorf("%+v: ∫q = %.12g", c, z)
		}
		if math.IsNaN(c.y) {
			if math.Abs(qm) > 1e-9 || math.Abs(qv-s2) > 1e-9*s2 {
				t.Errorf("missing y: proposal mean %v var %v, want transition 0, %v", qm, qv, s2)
			}
		}
		xs := make([]float64, N*S)
		ps := make([]float64, N*S)
		for i := range N {
			copy(ps[i*S:(i+1)*S], prev)
		}
		pr.Propose(xs, make([]float64, N), ps, y, rng)
		mean, m2 := 0.0, 0.0
		for i := range N {
			mean += xs[i*S]
		}
		mean /= N
		for i := range N {
			d := xs[i*S] - mean
			m2 += d * d
		}
		v := m2 / (N - 1)
		if se := math.Sqrt(qv / N); math.Abs(mean-qm) > 4*se {
			t.Errorf("%+v: draw mean %v, proposal mean %v ± 4×%v", c, mean, qm, se)
		}
		// Normal draws: Var(sample variance) = 2σ⁴/(N−1).
		if se := qv * math.Sqrt(2.0/(N-1)); math.Abs(v-qv) > 4*se {
			t.Errorf("%+v: draw variance %v, proposal variance %v ± 4×%v", c, v, qv, se)
		}
	}
}

// TestGARCHDensities checks the kernel's log densities against gonum's
// normal law and the recursion written out here.
func TestGARCHDensities(t *testing.T) {
	const S = 6
	alpha, beta, gamma, tau := 0.2, 0.3, 0.5, 0.7
	u, _ := models.GARCH{}.FromABG(alpha, beta, gamma, tau)
	k, _ := models.GARCH{}.Bind(u)
	mu := alpha / (1 - beta - gamma)
	if d, ok := k.(ssm.Degenerate); !ok || !d.DegenerateTransition() {
		t.Error("GARCH kernel must report a degenerate transition")
	}
	x := []float64{0.4, 9, 9, 9, 9, 9}
	if got, want := k.LogInitial(x), (distuv.Normal{Sigma: math.Sqrt(mu)}).LogProb(0.4); math.Abs(got-want) > 1e-12 {
		t.Errorf("LogInitial %v, want %v", got, want)
	}
	prev := []float64{1, 0.5, 0, 0, 0, 0, -2, 3, 0, 0, 0, 0}
	dst := make([]float64, 2)
	k.LogTransitions(dst, x, prev)
	for j := range 2 {
		s2 := alpha + beta*prev[j*S]*prev[j*S] + gamma*prev[j*S+1]
		if want := (distuv.Normal{Sigma: math.Sqrt(s2)}).LogProb(0.4); math.Abs(dst[j]-want) > 1e-12 {
			t.Errorf("LogTransitions[%d] = %v, want %v", j, dst[j], want)
		}
	}
	xs := []float64{0.4, 1, 0, 0, 0, 0, -1, 1, 0, 0, 0, 0}
	logw := []float64{1, 2}
	k.AddLogEmission(logw, []float64{0.1}, xs)
	for i, xi := range []float64{0.4, -1} {
		want := float64(i+1) + (distuv.Normal{Mu: xi, Sigma: tau}).LogProb(0.1)
		if math.Abs(logw[i]-want) > 1e-12 {
			t.Errorf("AddLogEmission[%d] = %v, want %v", i, logw[i], want)
		}
	}
	k.AddLogEmission(logw, []float64{math.NaN()}, xs)
	h := make([]float64, 8)
	k.AddScore(h, 1, []float64{math.NaN()}, xs, prev)
	if h[3] != 0 || h[7] != 0 {
		t.Errorf("missing y changed the τ score: %v", h)
	}
	before := append([]float64(nil), logw...)
	k.AddLogEmission(logw, []float64{math.NaN()}, xs)
	if logw[0] != before[0] || logw[1] != before[1] {
		t.Errorf("missing y changed log weights")
	}
}

func TestGARCHParamErrors(t *testing.T) {
	m := models.GARCH{}
	nan, inf := math.NaN(), math.Inf(1)
	check := func(what, name string, err error) {
		t.Helper()
		var pe *ssm.ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%s: error %v, want *ssm.ParamError", what, err)
			return
		}
		if pe.Name != name {
			t.Errorf("%s: names %q, want %q (%v)", what, pe.Name, name, err)
		}
		if !errors.Is(err, ssm.ErrInvalidParam) {
			t.Errorf("%s: does not wrap ssm.ErrInvalidParam", what)
		}
	}
	for _, c := range []struct {
		mu, phi, lambda, tau float64
		name                 string
	}{
		{0, 0.5, 0.5, 1, "mu"}, {2, 0.5, 0.5, 1, "mu"}, {-1, 0.5, 0.5, 1, "mu"}, {nan, 0.5, 0.5, 1, "mu"},
		{1, 0, 0.5, 1, "phi"}, {1, 1, 0.5, 1, "phi"}, {1, -0.5, 0.5, 1, "phi"}, {1, nan, 0.5, 1, "phi"},
		{1, 0.5, 0, 1, "lambda"}, {1, 0.5, 1, 1, "lambda"}, {1, 0.5, nan, 1, "lambda"},
		{1, 0.5, 0.5, 0, "tau"}, {1, 0.5, 0.5, -1, "tau"}, {1, 0.5, 0.5, inf, "tau"}, {1, 0.5, 0.5, nan, "tau"},
	} {
		u, err := m.Params(c.mu, c.phi, c.lambda, c.tau)
		check(fmt.Sprintf("Params(%v, %v, %v, %v)", c.mu, c.phi, c.lambda, c.tau), c.name, err)
		if u != nil {
			t.Errorf("Params returned u = %v with an error", u)
		}
		u = make([]float64, 4)
		check("Unconstrain", c.name, m.Unconstrain(u, []float64{c.mu, c.phi, c.lambda, c.tau}))
	}
	for _, c := range []struct {
		a, b, g, tau float64
		name         string
	}{
		{0, 0.5, 0.3, 1, "alpha"}, {nan, 0.5, 0.3, 1, "alpha"}, {0.1, 0, 0.3, 1, "beta"}, {0.1, 0.5, -0.1, 1, "gamma"},
		{0.1, 0.5, 0.5, 1, "gamma"}, {0.1, 0.7, 0.5, 1, "gamma"}, {0.5, 0.5, 0.3, 1, "alpha"}, {0.1, 0.5, 0.3, nan, "tau"},
	} {
		_, err := m.FromABG(c.a, c.b, c.g, c.tau)
		check(fmt.Sprintf("FromABG(%v, %v, %v, %v)", c.a, c.b, c.g, c.tau), c.name, err)
	}
	for _, c := range []struct {
		u    []float64
		name string
	}{
		{[]float64{nan, 0, 0, 0}, "mu"}, {[]float64{0, nan, 0, 0}, "phi"}, {[]float64{0, 0, nan, 0}, "lambda"},
		{[]float64{0, 0, 0, nan}, "tau"}, {[]float64{800, 0, 0, 0}, "mu"}, {[]float64{0, 40, 0, 0}, "phi"},
		{[]float64{0, 0, -800, 0}, "lambda"}, {[]float64{0, 0, 0, -800}, "tau"}, {[]float64{0, 0, 0, 800}, "tau"},
		{[]float64{0, 0, 0, -400}, "tau"}, {[]float64{0, 0, 0, 400}, "tau"},
	} {
		k, err := m.Bind(c.u)
		check(fmt.Sprintf("Bind(%v)", c.u), c.name, err)
		if k != nil {
			t.Errorf("Bind(%v) returned a kernel with an error", c.u)
		}
		_, _, err = m.Simulate(10, c.u, rand.New(rand.NewPCG(1, 1)))
		check(fmt.Sprintf("Simulate(%v)", c.u), c.name, err)
	}
	if _, _, err := m.Simulate(-1, []float64{0, 0, 0, 0}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("Simulate(-1) gave no error")
	}
}

// ExampleGARCH converts the paper's data-generating parameters and evaluates
// the exact score of the initial state.
func ExampleGARCH() {
	m := models.GARCH{}
	u, err := m.FromABG(0.1, 0.8, 0.05, 0.3)
	if err != nil {
		fmt.Println(err)
		return
	}
	theta := make([]float64, 4)
	m.Constrain(theta, u)
	for i, name := range m.ParamNames() {
		fmt.Printf("%s = %.4f\n", name, theta[i])
	}
	k, _ := m.Bind(u)
	_, degenerate := k.(ssm.Degenerate)
	_, proposer := k.(ssm.Proposer)
	fmt.Println("degenerate:", degenerate, "locally optimal proposal:", proposer)

	// x_0 = 1 with σ_0² = μ: the initial score is (x_0² − μ)/(2μ²) ∂μ/∂u_1.
	x0 := []float64{1, 0, 0, 0, 0, 0}
	k.(ssm.StateCompleter).Complete(x0, nil)
	h := make([]float64, 4)
	k.AddScore(h, 1, nil, x0, nil)
	fmt.Printf("initial score: %.4f\n", h)
	// Output:
	// mu = 0.6667
	// phi = 0.8500
	// lambda = 0.9412
	// tau = 0.3000
	// degenerate: true locally optimal proposal: true
	// initial score: [0.2469 0.0000 0.0000 0.0000]
}

func BenchmarkGARCHKernel(b *testing.B) {
	const N, S = 1000, 6
	rng := rand.New(rand.NewPCG(1, 2))
	u, _ := models.GARCH{}.FromABG(0.1, 0.8, 0.05, 0.3)
	k, _ := models.GARCH{}.Bind(u)
	pr := k.(ssm.Proposer)
	prev := make([]float64, N*S)
	x := make([]float64, N*S)
	k.SampleInitial(prev, rng)
	k.SampleTransition(x, prev, rng)
	logw := make([]float64, N)
	h := make([]float64, N*4)
	y := []float64{0.3}
	dst := make([]float64, N)
	b.Run("SampleTransition", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.SampleTransition(x, prev, rng)
		}
	})
	b.Run("Propose", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			pr.Propose(x, logw, prev, y, rng)
		}
	})
	b.Run("AddLogEmission", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.AddLogEmission(logw, y, x)
		}
	})
	b.Run("AddScore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.AddScore(h, 0.5, y, x, prev)
		}
	})
	b.Run("LogTransitions", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.LogTransitions(dst, x[:S], prev)
		}
	})
}
