package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// ar1RandomParams draws natural parameters in the valid range, with φ
// covering both signs and near-unit persistence.
func ar1RandomParams(rng *rand.Rand) (phi, sigma, tau float64) {
	return 1.96*rng.Float64() - 0.98, 0.1 + 2*rng.Float64(), 0.1 + 2*rng.Float64()
}

// ar1Params is models.LGSSM.Params without the error (the test's values
// are valid).
func ar1Params(tb testing.TB, phi, sigma, tau float64) []float64 {
	tb.Helper()
	u, err := models.LGSSM{}.Params(phi, sigma, tau)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}

// ar1CheckModel runs the ssmtest checks at several random parameters; the
// score check uses T = 50 and covers missing observations.
func ar1CheckModel(t *testing.T, m ssm.Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	worst := 0.0
	for trial := 0; trial < 8; trial++ {
		phi, sigma, tau := ar1RandomParams(rng)
		u := ar1Params(t, phi, sigma, tau)
		e, err := ssmtest.CheckScore(m, u, 50, rng)
		if err != nil {
			t.Fatalf("θ = (%.3f, %.3f, %.3f): %v", phi, sigma, tau, err)
		}
		if e > ssmtest.ScoreTol {
			t.Errorf("θ = (%.3f, %.3f, %.3f): score rel. error %.3g > %g", phi, sigma, tau, e, ssmtest.ScoreTol)
		}
		worst = math.Max(worst, e)
		if err := ssmtest.CheckTransform(m, u); err != nil {
			t.Error(err)
		}
		if err := ssmtest.CheckPrior(m, u); err != nil {
			t.Error(err)
		}
	}
	t.Logf("largest score rel. error over 8 parameter draws: %.3g", worst)
}

func TestLGSSMScore(t *testing.T) { ar1CheckModel(t, models.LGSSM{}, 1) }

// A handmade path with a closed-form score: φ = 0.5, σ = τ = 1, so u =
// (atanh 0.5, 0, 0), v0 = 4/3; x = (1, 2), y = (2.5).
func TestLGSSMScoreClosedForm(t *testing.T) {
	m := models.LGSSM{}
	k, err := m.Bind(ar1Params(t, 0.5, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	h := make([]float64, 3)
	k.AddScore(h, 1, []float64{math.NaN()}, []float64{1}, nil)
	k.AddScore(h, 1, []float64{2.5}, []float64{2}, []float64{1})
	// Initial: d = x²/(2 v0) − ½ = 3/8 − 1/2 = −1/8; ∂/∂u_φ = 2φd = −1/8,
	// ∂/∂u_σ = 2d = −1/4. Transition: r = 2 − 0.5 = 1.5,
	// ∂/∂u_φ = r·x_prev·(1−φ²)/σ² = 1.125, ∂/∂u_σ = r² − 1 = 1.25.
	// Emission: e = 0.5, ∂/∂u_τ = e² − 1 = −0.75.
	want := []float64{-0.125 + 1.125, -0.25 + 1.25, -0.75}
	for i := range want {
		if math.Abs(h[i]-want[i]) > 1e-14 {
			t.Errorf("h[%d] = %v, want %v", i, h[i], want[i])
		}
	}
}

// ar1SinglePrior is coordinate i of p as a 1-D Independent.
func ar1SinglePrior(p models.Independent, i int) models.Independent {
	return models.Independent{Transforms: p.Transforms[i : i+1], Marginals: p.Marginals[i : i+1]}
}

// ar1Integrate integrates f over [a, b] by composite 40-point Gauss-Legendre
// on n pieces.
func ar1Integrate(f func(float64) float64, a, b float64, n int) float64 {
	s, w := 0.0, (b-a)/float64(n)
	for i := 0; i < n; i++ {
		s += quad.Fixed(f, a+float64(i)*w, a+float64(i+1)*w, 40, nil, 0)
	}
	return s
}

func TestAR1PriorIntegratesToOne(t *testing.T) {
	priors := map[string]models.Independent{"LGSSM": models.DefaultLGSSMPrior(), "SVM": models.DefaultSVMPrior()}
	for _, m := range []ssm.Model{models.LGSSM{}, models.SVM{}} {
		prior := priors[strings.TrimPrefix(fmt.Sprintf("%T", m), "models.")]
		for i := 0; i < 3; i++ {
			p := ar1SinglePrior(prior, i)
			f := func(u float64) float64 { return math.Exp(p.LogPrior(nil, []float64{u})) }
			// The densities in u decay at least exponentially; beyond ±40
			// their mass is below 1e-15.
			z := ar1Integrate(f, -40, 40, 400)
			if math.Abs(z-1) > 1e-9 {
				t.Errorf("%T u[%d]: pushed-forward prior integrates to %.12f", m, i, z)
			}
			t.Logf("%T u[%d]: |∫ − 1| = %.2g", m, i, math.Abs(z-1))
		}
		// The model's prior is the product of the three marginals.
		u := []float64{0.7, -0.4, 0.3}
		sum := 0.0
		for i := range u {
			sum += ar1SinglePrior(prior, i).LogPrior(nil, u[i:i+1])
		}
		if got := m.LogPrior(nil, u); math.Abs(got-sum) > 1e-12 {
			t.Errorf("%T LogPrior = %v, product of marginals %v", m, got, sum)
		}
	}
}

// ar1Stats holds the stationary checks of a long simulated series.
type ar1Stat struct {
	name string
	est  func(x []float64) float64
	want float64
}

// ar1BatchCheck compares each statistic on the whole series with its
// expected value, within 4 standard errors estimated by batch means (100
// batches; batches far longer than the correlation time).
func ar1BatchCheck(t *testing.T, series []float64, stats []ar1Stat) {
	t.Helper()
	const B = 100
	n := len(series) / B
	for _, s := range stats {
		full := s.est(series)
		var m, m2 float64
		for b := 0; b < B; b++ {
			v := s.est(series[b*n : (b+1)*n])
			m += v
			m2 += v * v
		}
		m /= B
		se := math.Sqrt((m2/B - m*m) / (B - 1))
		if d := math.Abs(full - s.want); d > 4*se {
			t.Errorf("%s = %.5f, want %.5f (|diff| = %.2g > 4·SE = %.2g)", s.name, full, s.want, d, 4*se)
		} else {
			t.Logf("%s = %.5f, want %.5f (%.1f SE)", s.name, full, s.want, d/se)
		}
	}
}

func ar1Mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func ar1Var(x []float64) float64 {
	m, s := ar1Mean(x), 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x))
}

func ar1Lag1(x []float64) float64 {
	m, num, den := ar1Mean(x), 0.0, 0.0
	for i, v := range x {
		den += (v - m) * (v - m)
		if i > 0 {
			num += (v - m) * (x[i-1] - m)
		}
	}
	return num / den
}

// ar1CheckLatent checks the AR(1) path x against its stationary law.
func ar1CheckLatent(t *testing.T, x []float64, phi, sigma float64) {
	t.Helper()
	v := sigma * sigma / (1 - phi*phi)
	T := float64(len(x))
	// Exact-in-the-limit SE of the mean of a stationary AR(1).
	se := math.Sqrt(v / T * (1 + phi) / (1 - phi))
	if m := ar1Mean(x); math.Abs(m) > 4*se {
		t.Errorf("mean of x = %.5f, want 0 within 4·SE = %.3g", m, 4*se)
	}
	ar1BatchCheck(t, x, []ar1Stat{
		{"var(x)", ar1Var, v},
		{"lag-1 autocorrelation of x", ar1Lag1, phi},
	})
}

func TestLGSSMSimulate(t *testing.T) {
	// T = 2·10⁵ takes about 20 ms, so it also runs under -short.
	const phi, sigma, tau, T = 0.9, 0.4, 0.6, 200000
	x, y, err := models.LGSSM{}.Simulate(T, ar1Params(t, phi, sigma, tau), rand.New(rand.NewPCG(11, 12)))
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != T+1 || y.Len() != T || y.Obs != 1 {
		t.Fatalf("Simulate returned %d states and %d×%d observations", len(x), y.Len(), y.Obs)
	}
	ar1CheckLatent(t, x, phi, sigma)
	v := sigma * sigma / (1 - phi*phi)
	ar1BatchCheck(t, y.Y, []ar1Stat{
		{"mean(y)", ar1Mean, 0},
		{"var(y)", ar1Var, v + tau*tau},
		// Cov(y_t, y_{t-1}) = φv, so corr = φv/(v+τ²).
		{"lag-1 autocorrelation of y", ar1Lag1, phi * v / (v + tau*tau)},
	})
	// y − x is the emission noise: independent N(0, τ²).
	e := make([]float64, T)
	for i := range e {
		e[i] = y.Y[i] - x[i+1]
	}
	ar1BatchCheck(t, e, []ar1Stat{{"var(y−x)", ar1Var, tau * tau}, {"lag-1 corr(y−x)", ar1Lag1, 0}})
}

// The densities agree with gonum's distuv, an independent implementation.
func TestLGSSMDensities(t *testing.T) {
	const phi, sigma, tau = -0.6, 0.7, 1.3
	k, err := models.LGSSM{}.Bind(ar1Params(t, phi, sigma, tau))
	if err != nil {
		t.Fatal(err)
	}
	v0 := sigma * sigma / (1 - phi*phi)
	prev := []float64{-2, -0.3, 0, 0.8, 3}
	x := 0.45
	if got, want := k.LogInitial([]float64{x}), (distuv.Normal{Mu: 0, Sigma: math.Sqrt(v0)}).LogProb(x); math.Abs(got-want) > 1e-13 {
		t.Errorf("LogInitial = %v, want %v", got, want)
	}
	dst := make([]float64, len(prev))
	k.LogTransitions(dst, []float64{x}, prev)
	maxT := k.(ssm.TransitionBounder).MaxLogTransition()
	for j, p := range prev {
		want := (distuv.Normal{Mu: phi * p, Sigma: sigma}).LogProb(x)
		if math.Abs(dst[j]-want) > 1e-13 {
			t.Errorf("LogTransitions[%d] = %v, want %v", j, dst[j], want)
		}
		if dst[j] > maxT {
			t.Errorf("log transition %v exceeds MaxLogTransition %v", dst[j], maxT)
		}
	}
	if want := (distuv.Normal{Mu: 0, Sigma: sigma}).LogProb(0); math.Abs(maxT-want) > 1e-13 {
		t.Errorf("MaxLogTransition = %v, want %v", maxT, want)
	}
	logw := []float64{1, 2, 3, 4, 5}
	y := 0.2
	k.AddLogEmission(logw, []float64{y}, prev)
	for i, p := range prev {
		want := float64(i+1) + (distuv.Normal{Mu: p, Sigma: tau}).LogProb(y)
		if math.Abs(logw[i]-want) > 1e-13 {
			t.Errorf("AddLogEmission[%d] = %v, want %v", i, logw[i], want)
		}
	}
	k.AddLogEmission(logw[:1], []float64{math.NaN()}, prev[:1])
	if want := 1 + (distuv.Normal{Mu: prev[0], Sigma: tau}).LogProb(y); logw[0] != want {
		t.Errorf("missing y changed the log-weight: %v, want %v", logw[0], want)
	}
	// A missing y adds nothing to the score either.
	h := make([]float64, 3)
	k.AddScore(h, 1, []float64{math.NaN()}, []float64{x}, []float64{0.1})
	if h[2] != 0 {
		t.Errorf("missing y gave a τ score %v", h[2])
	}
}

func TestLGSSMLocallyOptimalProposal(t *testing.T) {
	const phi, sigma, tau = 0.8, 0.6, 0.4
	k, err := models.LGSSM{}.Bind(ar1Params(t, phi, sigma, tau))
	if err != nil {
		t.Fatal(err)
	}
	prop, ok := k.(ssm.Proposer)
	if !ok {
		t.Fatal("LGSSM kernel is not an ssm.Proposer")
	}
	s2, t2 := sigma*sigma, tau*tau
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ prev, y float64 }{{0, 0}, {1.5, -0.7}, {-2, 3}, {0.3, math.NaN()}} {
		prev, y := []float64{c.prev}, []float64{c.y}
		// log p(y|prev) by quadrature of p(y|x) p(x|prev), densities from distuv.
		joint := func(x float64) float64 {
			return (distuv.Normal{Mu: x, Sigma: tau}).Prob(c.y) * (distuv.Normal{Mu: phi * c.prev, Sigma: sigma}).Prob(x)
		}
		mq, sq := (t2*phi*c.prev+s2*c.y)/(s2+t2), math.Sqrt(s2*t2/(s2+t2))
		if math.IsNaN(c.y) {
			mq, sq = phi*c.prev, sigma
		}
		lo, hi := mq-15*sq, mq+15*sq
		wantW := 0.0 // missing y: the weight increment is 0
		if !math.IsNaN(c.y) {
			wantW = math.Log(ar1Integrate(joint, lo, hi, 20))
		}
		// ∫ q(x|prev, y) dx = 1.
		qf := func(x float64) float64 { return math.Exp(prop.LogProposal([]float64{x}, prev, y)) }
		if z := ar1Integrate(qf, lo, hi, 20); math.Abs(z-1) > 1e-12 {
			t.Errorf("prev %v, y %v: LogProposal integrates to %.15f", c.prev, c.y, z)
		}

		const n = 100000
		xs := make([]float64, n)
		logw := make([]float64, n)
		prevs := make([]float64, n)
		for i := range prevs {
			prevs[i] = c.prev
		}
		prop.Propose(xs, logw, prevs, y, rng)
		if math.Abs(logw[0]-wantW) > 1e-10 {
			t.Errorf("prev %v, y %v: weight %.12f, quadrature log p(y|prev) %.12f", c.prev, c.y, logw[0], wantW)
		}
		// The fused weight is log p(y|x) + log p(x|prev) − log q(x|prev, y)
		// at each drawn x (here the first few).
		for i := 0; i < 5; i++ {
			xi := xs[i : i+1]
			lt := make([]float64, 1)
			k.LogTransitions(lt, xi, prev)
			le := []float64{0}
			k.AddLogEmission(le, y, xi)
			if d := le[0] + lt[0] - prop.LogProposal(xi, prev, y) - logw[i]; math.Abs(d) > 1e-10 {
				t.Errorf("prev %v, y %v: weight differs from p·p/q at draw %d by %.3g", c.prev, c.y, i, d)
			}
		}
		// The draws have the proposal's mean and variance (4 SE).
		mean, vr := ar1Mean(xs), ar1Var(xs)
		if se := sq / math.Sqrt(n); math.Abs(mean-mq) > 4*se {
			t.Errorf("prev %v, y %v: proposal mean %.5f, want %.5f ± %.2g", c.prev, c.y, mean, mq, 4*se)
		}
		if se := sq * sq * math.Sqrt(2.0/n); math.Abs(vr-sq*sq) > 4*se {
			t.Errorf("prev %v, y %v: proposal variance %.5f, want %.5f ± %.2g", c.prev, c.y, vr, sq*sq, 4*se)
		}
	}
}

func TestAR1InvalidParams(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	type params interface {
		ssm.Model
		Params(phi, sigma, tau float64) ([]float64, error)
		Simulate(T int, u []float64, rng *rand.Rand) ([]float64, ssm.Sequence, error)
	}
	for _, m := range []params{models.LGSSM{}, models.SVM{}} {
		for _, c := range []struct {
			theta [3]float64
			name  string
		}{
			{[3]float64{1, 1, 1}, "phi"},
			{[3]float64{-1, 1, 1}, "phi"},
			{[3]float64{1.5, 1, 1}, "phi"},
			{[3]float64{nan, 1, 1}, "phi"},
			{[3]float64{0.5, 0, 1}, "sigma"},
			{[3]float64{0.5, -1, 1}, "sigma"},
			{[3]float64{0.5, nan, 1}, "sigma"},
			{[3]float64{0.5, inf, 1}, "sigma"},
			{[3]float64{0.5, 1, 0}, "tau"},
			{[3]float64{0.5, 1, -2}, "tau"},
			{[3]float64{0.5, 1, nan}, "tau"},
		} {
			_, err := m.Params(c.theta[0], c.theta[1], c.theta[2])
			ar1CheckParamErr(t, fmt.Sprintf("%T.Params%v", m, c.theta), err, c.name)
			err = m.Unconstrain(make([]float64, 3), c.theta[:])
			ar1CheckParamErr(t, fmt.Sprintf("%T.Unconstrain%v", m, c.theta), err, c.name)
		}
		for _, c := range []struct {
			u    [3]float64
			name string
		}{
			{[3]float64{nan, 0, 0}, "phi"},
			{[3]float64{0, nan, 0}, "sigma"},
			{[3]float64{0, 0, nan}, "tau"},
			{[3]float64{40, 0, 0}, "phi"}, // tanh(40) rounds to 1
			{[3]float64{-inf, 0, 0}, "phi"},
			{[3]float64{0, -800, 0}, "sigma"}, // exp underflows to 0
			{[3]float64{0, 800, 0}, "sigma"},  // exp overflows
			{[3]float64{0, 400, 0}, "sigma"},  // σ² overflows
			{[3]float64{0, 0, -inf}, "tau"},
			{[3]float64{0, 0, 400}, "tau"},
		} {
			_, err := m.Bind(c.u[:])
			ar1CheckParamErr(t, fmt.Sprintf("%T.Bind%v", m, c.u), err, c.name)
			_, _, err = m.Simulate(10, c.u[:], rand.New(rand.NewPCG(1, 1)))
			ar1CheckParamErr(t, fmt.Sprintf("%T.Simulate%v", m, c.u), err, c.name)
		}
		// Near the boundary but valid: binds, and densities are finite.
		u := []float64{18, -20, 20}
		k, err := m.Bind(u)
		if err != nil {
			t.Errorf("%T.Bind(%v): %v", m, u, err)
			continue
		}
		if l := k.LogInitial([]float64{0}); math.IsNaN(l) || math.IsInf(l, 0) {
			t.Errorf("%T at u = %v: LogInitial(0) = %v", m, u, l)
		}
	}
}

func ar1CheckParamErr(t *testing.T, what string, err error, name string) {
	t.Helper()
	var pe *ssm.ParamError
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
	case !errors.Is(err, ssm.ErrInvalidParam) || !errors.As(err, &pe):
		t.Errorf("%s: error %v is not a *ssm.ParamError", what, err)
	case pe.Name != name:
		t.Errorf("%s: error names %q, want %q (%v)", what, pe.Name, name, err)
	}
}

func BenchmarkLGSSMKernel(b *testing.B) {
	const n = 1000
	k, err := models.LGSSM{}.Bind([]float64{1.2, -0.5, -0.3})
	if err != nil {
		b.Fatal(err)
	}
	prop := k.(ssm.Proposer)
	rng := rand.New(rand.NewPCG(1, 2))
	x, prev, logw := make([]float64, n), make([]float64, n), make([]float64, n)
	h := make([]float64, 3*n)
	k.SampleInitial(prev, rng)
	y := []float64{0.3}
	b.Run("Propose", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			prop.Propose(x, logw, prev, y, rng)
		}
	})
	b.Run("AddScore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k.AddScore(h, 1, y, x, prev)
		}
	})
}
