package pf_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func lgssmd2(t *testing.T, T int) (models.LGSSMd, []float64, ssm.Sequence) {
	t.Helper()
	m := models.LGSSMd{D: 2}
	u, err := m.Params([]float64{0.8, 0.1, -0.2, 0.6}, []float64{0.5, 0.4}, []float64{0.3, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	y.Y[2*17] = math.NaN() // one missing component
	return m, u, y
}

// TestLaplaceKalman: for a linear Gaussian emission (LGSSMd, d = 2) the
// Laplace approximation is p(x | y) itself, so every importance weight is
// 1 and the log-likelihood equals the Kalman filter's to rounding, for
// the whole series and for a buffered window; the score, an average over
// the paths, is unbiased: its mean over 40 seeds is within 4 standard
// errors of the Kalman smoother's, per coordinate.
func TestLaplaceKalman(t *testing.T) {
	m, u, y := lgssmd2(t, 300)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []ssm.Window{ssm.Full(300), {Start: 100, End: 200, KeepStart: 120, KeepEnd: 180}} {
		want := make([]float64, len(u))
		llK, err := m.ExactScore(want, u, y, w)
		if err != nil {
			t.Fatal(err)
		}
		const seeds = 40
		mean, m2 := make([]float64, len(u)), make([]float64, len(u))
		for s := range uint64(seeds) {
			l := pf.Laplace{Seed: s}
			g := make([]float64, len(u))
			ll, err := l.Score(g, k, m.Dims(), y, w)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(ll-llK) > 1e-6 || l.ESS < pf.DefaultLaplacePaths-1e-9 {
				t.Fatalf("window %+v, seed %d: log-likelihood %.10f (ESS %.2f), Kalman %.10f", w, s, ll, l.ESS, llK)
			}
			for j, v := range g {
				mean[j] += v / seeds
				m2[j] += v * v / seeds
			}
		}
		for j := range mean {
			se := math.Sqrt(math.Max(m2[j]-mean[j]*mean[j], 0) / (seeds - 1))
			if math.Abs(mean[j]-want[j]) > 4*se+1e-9 {
				t.Errorf("window %+v: score %d: %.4f ± %.4f, Kalman %.4f", w, j, mean[j], se, want[j])
			}
		}
	}
}

// TestLaplaceParticles: on the multivariate SV model (D = 2, T = 200,
// simulated) the Laplace estimate of p(y | u) agrees with the bootstrap
// particle filter's: both unbiased for p(y | u), their means on the
// likelihood scale over independent runs (20 Laplace seeds, 20 filters of
// N = 5,000) within 4 standard errors of their difference (delta method
// on the log scale).
func TestLaplaceParticles(t *testing.T) {
	if testing.Short() {
		t.Skip("20 particle filters of 5,000 particles: long test")
	}
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(200, u, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 20
	lap, part := make([]float64, runs), make([]float64, runs)
	f, err := pf.New(pf.Settings{N: 5000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		l := pf.Laplace{Seed: uint64(i)}
		if lap[i], err = l.Score(nil, k, m.Dims(), y, ssm.Full(200)); err != nil {
			t.Fatal(err)
		}
		res, err := f.Run(context.Background(), k, m.Dims(), y, ssm.Full(200), nil, nil, rand.New(rand.NewPCG(7, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		part[i] = res.LogLik
	}
	lmL, seL := logMeanExpSE(lap)
	lmP, seP := logMeanExpSE(part)
	t.Logf("log p(y | u): Laplace %.4f ± %.4f, particles %.4f ± %.4f", lmL, seL, lmP, seP)
	if d, se := lmL-lmP, math.Hypot(seL, seP); math.Abs(d) > 4*se {
		t.Errorf("Laplace %.4f and particles %.4f differ by %.4f, more than 4 standard errors (%.4f)", lmL, lmP, d, 4*se)
	}
}

// logMeanExpSE returns log of the mean of e^l and its delta-method
// standard error.
func logMeanExpSE(l []float64) (float64, float64) {
	top := math.Inf(-1)
	for _, v := range l {
		top = math.Max(top, v)
	}
	n := float64(len(l))
	s1, s2 := 0.0, 0.0
	for _, v := range l {
		e := math.Exp(v - top)
		s1 += e
		s2 += e * e
	}
	mean := s1 / n
	sd := math.Sqrt(math.Max(s2/n-mean*mean, 0) * n / (n - 1))
	return top + math.Log(mean), sd / (math.Sqrt(n) * mean)
}

// TestLaplaceSmooth: with Plain and its random numbers fixed by the seed,
// the estimate is a smooth function of u: the same value at the same u,
// and a second difference over δ = 10⁻³ in each coordinate of order δ²
// (resampled paths would make jumps of order 1).
func TestLaplaceSmooth(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(500, u, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	at := func(v []float64) float64 {
		k, err := m.Bind(v)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Seed: 9, Plain: true}
		ll, err := l.Score(nil, k, m.Dims(), y, ssm.Full(500))
		if err != nil {
			t.Fatal(err)
		}
		return ll
	}
	l0 := at(u)
	if again := at(u); again != l0 {
		t.Fatalf("same seed and u: %v then %v", l0, again)
	}
	const delta = 1e-3
	for j := range u {
		up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
		up[j] += delta
		dn[j] -= delta
		d2 := at(up) - 2*l0 + at(dn)
		t.Logf("coordinate %d: second difference %.3g", j, d2)
		if math.Abs(d2) > 0.01 {
			t.Errorf("coordinate %d: second difference %.3g over δ = %g: not smooth", j, d2, delta)
		}
	}
}

// TestLaplaceBlocksSmooth: with a fixed Lag the blocked estimate (Plain)
// is smooth in θ. MSV{D: 2} on 1,000 rows with φ₂ = 0.3: as φ₁ goes from
// 0.58 to 0.67 the lag LaplaceLag chooses goes from 16 to 32 (ρ(F)^16 =
// 10⁻³ at ρ = 0.649); with Lag fixed at 16 every second difference of the
// log-likelihood over the 61 steps of 0.0015 in φ₁ must stay below 0.01,
// and so must those of the estimate with the lag chosen per call on
// either side of the change (it jumps there by about the estimate's
// spread, 0.37 on this series).
func TestLaplaceBlocksSmooth(t *testing.T) {
	if testing.Short() {
		t.Skip("second differences of blocked estimates: long test")
	}
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.62, 0.3}, []float64{0.7, 0.7}, []float64{0.9}, []float64{0.8, 0.9})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(1000, u, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	at := func(phi1 float64, lag int) (float64, int) {
		u, err := m.Params([]float64{phi1, 0.3}, []float64{0.7, 0.7}, []float64{0.9}, []float64{0.8, 0.9})
		if err != nil {
			t.Fatal(err)
		}
		k, err := m.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Seed: 3, Plain: true, Lag: lag}
		ll, err := l.Score(nil, k, m.Dims(), y, ssm.Full(y.Len()))
		if err != nil {
			t.Fatal(err)
		}
		if l.Blocks < 2 {
			t.Fatalf("φ₁ = %v: %d blocks", phi1, l.Blocks)
		}
		return ll, pf.LaplaceLag(k, 2)
	}
	const n, step = 61, 0.0015
	fixed, auto := make([]float64, n), make([]float64, n)
	lags := make([]int, n)
	for i := range n {
		fixed[i], lags[i] = at(0.58+step*float64(i), 16)
		auto[i], _ = at(0.58+step*float64(i), 0)
	}
	if lags[0] != 16 || lags[n-1] != 32 {
		t.Fatalf("LaplaceLag %d at φ₁ = 0.58 and %d at 0.67, want 16 and 32", lags[0], lags[n-1])
	}
	worstFixed, worstAuto, jump := 0.0, 0.0, 0.0
	for i := 1; i+1 < n; i++ {
		worstFixed = math.Max(worstFixed, math.Abs(fixed[i+1]-2*fixed[i]+fixed[i-1]))
		if lags[i-1] == lags[i+1] {
			worstAuto = math.Max(worstAuto, math.Abs(auto[i+1]-2*auto[i]+auto[i-1]))
		} else {
			jump = math.Max(jump, math.Abs(auto[i+1]-2*auto[i]+auto[i-1]))
		}
	}
	t.Logf("largest second difference over φ₁ in [0.58, 0.67]: %.3g with Lag 16, %.3g with the lag per call away from its change, %.3g across it", worstFixed, worstAuto, jump)
	if worstFixed > 0.01 || worstAuto > 0.01 {
		t.Errorf("largest second differences %.3g (Lag 16) and %.3g (per call, away from the change): not smooth", worstFixed, worstAuto)
	}
}

// TestLaplaceErrors: a kernel without the capabilities, an odd number of
// paths, a gradient of the wrong length and a bad window are errors.
func TestLaplaceErrors(t *testing.T) {
	m, u, y := lgssmd2(t, 50)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	svm := models.SVM{}
	ks, err := svm.Bind([]float64{2, -1, 0})
	if err != nil {
		t.Fatal(err)
	}
	ys := ssm.Sequence{Obs: 1, Y: make([]float64, 50)}
	var l pf.Laplace
	if _, err := l.Score(nil, ks, svm.Dims(), ys, ssm.Full(50)); !errors.Is(err, pf.ErrLaplace) {
		t.Errorf("SVM kernel: %v, want ErrLaplace", err)
	}
	if _, err := (&pf.Laplace{Paths: 3}).Score(nil, k, m.Dims(), y, ssm.Full(50)); !errors.Is(err, pf.ErrLaplace) {
		t.Errorf("3 paths: %v, want ErrLaplace", err)
	}
	if _, err := l.Score(make([]float64, 2), k, m.Dims(), y, ssm.Full(50)); !errors.Is(err, pf.ErrLaplace) {
		t.Errorf("short gradient: %v, want ErrLaplace", err)
	}
	if _, err := l.Score(nil, k, m.Dims(), y, ssm.Window{Start: 10, End: 60, KeepStart: 10, KeepEnd: 60}); err == nil {
		t.Error("window past the end: want an error")
	}
}

// TestLaplaceResampling checks the backward sweep's resampling and the
// blocks where the Gaussian model is far from p(x | y): MSV{D: 2} with
// little persistence and a large volatility of volatility (the region of
// the DAX/CAC 40 posterior), 2,000 rows, 64 paths. Each of the sweep
// scored whole, plain importance sampling in blocks and the sweep in
// blocks must agree with the particle filters within 4 standard errors,
// and the spread over seeds of each must be below 0.7 of plain
// importance sampling's scored whole (measured: 0.38, 0.39 and 0.37; with
// 16 seeds the log of the ratio of two sds has a standard error of about
// 0.26, so 0.7 is 2.4 of them away).
func TestLaplaceResampling(t *testing.T) {
	if testing.Short() {
		t.Skip("particle filters of 2,000 rows: long test")
	}
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.6, 0.5}, []float64{0.75, 0.75}, []float64{0.99}, []float64{0.8, 0.9})
	if err != nil {
		t.Fatal(err)
	}
	const T = 2000
	_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 16
	type variant struct {
		name                    string
		plain, whole            bool
		ll                      []float64
		resamples, blocks, runs int
	}
	vs := []*variant{
		{name: "plain importance sampling, whole", plain: true, whole: true},
		{name: "the sweep, whole", whole: true},
		{name: "plain importance sampling in blocks", plain: true},
		{name: "the sweep in blocks"},
	}
	part := make([]float64, runs)
	f, err := pf.New(pf.Settings{N: 2000})
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		for _, v := range vs {
			l := pf.Laplace{Paths: 64, Seed: uint64(i), Plain: v.plain, Whole: v.whole}
			ll, err := l.Score(nil, k, m.Dims(), y, ssm.Full(T))
			if err != nil {
				t.Fatal(err)
			}
			v.ll = append(v.ll, ll)
			v.resamples += l.Resamples
			v.blocks = l.Blocks
		}
		res, err := f.Run(context.Background(), k, m.Dims(), y, ssm.Full(T), nil, nil, rand.New(rand.NewPCG(9, uint64(i))))
		if err != nil {
			t.Fatal(err)
		}
		part[i] = res.LogLik
	}
	lmP, seP := logMeanExpSE(part)
	t.Logf("log p(y | u): particles %.3f ± %.3f", lmP, seP)
	base := sd(vs[0].ll)
	for j, v := range vs {
		lm, se := logMeanExpSE(v.ll)
		t.Logf("%s: %.3f ± %.3f, sd %.3f (%.2f of the first), mean %.3f, %.1f resamplings per run, %d blocks",
			v.name, lm, se, sd(v.ll), sd(v.ll)/base, mean(v.ll), float64(v.resamples)/runs, v.blocks)
		if v.plain && v.resamples != 0 || !v.plain && v.resamples == 0 {
			t.Errorf("%s: %d resamplings", v.name, v.resamples)
		}
		if v.whole && v.blocks != 1 || !v.whole && v.blocks < 2 {
			t.Errorf("%s: %d blocks", v.name, v.blocks)
		}
		if j == 0 {
			continue
		}
		if d, se := lm-lmP, math.Hypot(se, seP); math.Abs(d) > 4*se {
			t.Errorf("%s: %.4f and particles %.4f differ by %.4f, more than 4 standard errors (%.4f)", v.name, lm, lmP, d, 4*se)
		}
		if sd(v.ll) > 0.7*base {
			t.Errorf("%s: sd over seeds %.3f is not below 0.7 of plain importance sampling's scored whole (%.3f)", v.name, sd(v.ll), base)
		}
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func sd(v []float64) float64 {
	mu, s := mean(v), 0.0
	for _, x := range v {
		s += (x - mu) * (x - mu)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// TestMSVDaxCacRidge pins down where the likelihood of MSV{D: 2} on the
// DAX and CAC 40 returns lies, with bootstrap particle filters (no
// Laplace approximation): at the chains' region (φ 0.62, 0.50; σ 0.73,
// 0.72; ρ 0.998; τ 0.82, 0.92) log p(y | θ) is more than 20 higher than
// at the scalar SVM's posterior means on each column with ρ = 0.9 (φ 0.94,
// 0.84; σ 0.27, 0.31; τ 0.87, 1.00). The filters' own error is a few
// units (Laplace with 1,024 paths: −5164.9 and −5193.9, 29 apart), so
// the pair's posterior near ρ → 1 with little persistence is the model's
// on these data, not an artefact of a sampler.
func TestMSVDaxCacRidge(t *testing.T) {
	if testing.Short() {
		t.Skip("particle filters of 20,000 particles: long test")
	}
	y, err := ssm.ReadCSVFile("../testdata/dax_cac_returns.csv")
	if err != nil {
		t.Fatal(err)
	}
	m := models.MSV{D: 2}
	ridge, err := m.Params([]float64{0.62, 0.5}, []float64{0.73, 0.72}, []float64{0.998}, []float64{0.82, 0.92})
	if err != nil {
		t.Fatal(err)
	}
	margins, err := m.Params([]float64{0.94, 0.84}, []float64{0.27, 0.31}, []float64{0.9}, []float64{0.87, 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := pf.New(pf.Settings{N: 20000})
	if err != nil {
		t.Fatal(err)
	}
	ll := func(u []float64, seed uint64) float64 {
		k, err := m.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Run(context.Background(), k, m.Dims(), y, ssm.Full(y.Len()), nil, nil, rand.New(rand.NewPCG(seed, 11)))
		if err != nil {
			t.Fatal(err)
		}
		return res.LogLik
	}
	for seed := range uint64(2) {
		a, b := ll(ridge, seed), ll(margins, seed)
		t.Logf("seed %d: log p(y | θ) %.2f at the ridge, %.2f at the margins' means", seed, a, b)
		if a-b < 20 {
			t.Errorf("seed %d: the ridge's log-likelihood %.2f is not 20 above the margins' %.2f", seed, a, b)
		}
	}
}

// jointKernel hides a kernel's ssm.SeparableEmission, so that pf.Laplace
// refits its emission with the d-dimensional Gauss–Hermite rule.
type jointKernel struct{ ssm.Kernel }

func (k jointKernel) LinearGaussian(F, c, Q, m0, P0 []float64) {
	k.Kernel.(ssm.LinearGaussian).LinearGaussian(F, c, Q, m0, P0)
}

func (k jointKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	return k.Kernel.(ssm.EmissionCurvature).LogEmissionCurvature(g, H, y, x)
}

// TestLaplaceSeparable checks the componentwise refit of a separable
// emission against the d-dimensional one. Under a Gaussian law the
// least-squares quadratic of a function of x_i is a quadratic in x_i
// alone, so both refits target the same q_s and differ only by their
// quadrature errors: on MSV{D: 2} and {D: 3} (500 simulated rows, the
// 5^d-node product rule) the log-likelihoods must agree within 10⁻³ and
// every score component within 10⁻³ of the score's scale.
func TestLaplaceSeparable(t *testing.T) {
	for _, d := range []int{2, 3} {
		m := models.MSV{D: d}
		phi, sig, tau := make([]float64, d), make([]float64, d), make([]float64, d)
		for i := range d {
			phi[i], sig[i], tau[i] = 0.9-0.05*float64(i), 0.3+0.1*float64(i), 1-0.1*float64(i)
		}
		rho := make([]float64, d*(d-1)/2)
		for i := range rho {
			rho[i] = 0.4
		}
		u, err := m.Params(phi, sig, rho, tau)
		if err != nil {
			t.Fatal(err)
		}
		const T = 500
		_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(8, uint64(d))))
		if err != nil {
			t.Fatal(err)
		}
		k, err := m.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := k.(ssm.SeparableEmission); !ok || !se.SeparableEmission() {
			t.Fatalf("D = %d: MSV's kernel does not report a separable emission", d)
		}
		gs, gj := make([]float64, len(u)), make([]float64, len(u))
		ls := pf.Laplace{Seed: 1}
		lls, err := ls.Score(gs, k, m.Dims(), y, ssm.Full(T))
		if err != nil {
			t.Fatal(err)
		}
		lj := pf.Laplace{Seed: 1}
		llj, err := lj.Score(gj, jointKernel{k}, m.Dims(), y, ssm.Full(T))
		if err != nil {
			t.Fatal(err)
		}
		scale := 0.0
		for _, v := range gj {
			scale = math.Max(scale, math.Abs(v))
		}
		worst := 0.0
		for i := range gs {
			worst = math.Max(worst, math.Abs(gs[i]-gj[i])/scale)
		}
		t.Logf("D = %d: log-likelihood %.6f (componentwise) and %.6f (joint); score: largest difference %.2g of its scale %.3g", d, lls, llj, worst, scale)
		if math.Abs(lls-llj) > 1e-3 || worst > 1e-3 {
			t.Errorf("D = %d: the componentwise and joint refits differ: log-likelihood %.6f and %.6f, score by %.2g of its scale", d, lls, llj, worst)
		}
	}
}

// TestLaplaceRounding: far from any posterior (MSV{D: 2} on 300 rows
// simulated at φ (0.95, 0.9), σ (0.3, 0.3), ρ 0.5, τ (1, 0.8); scored
// at φ (0.9996, −0.9989), σ (0.71, 164), ρ 0.999998, τ (1262, 18.9), a
// point that Langevin chains reached) the Gauss–Hermite refits on
// marginals thousands wide made log ĝ = 3.2·10¹⁷⁵ and the mean weight's
// log −3.2·10¹⁷⁵, and Score returned their sum, 7·10¹⁵⁹: rounding alone,
// which a chain accepted and then kept. Such a refit is now refused, and
// an estimate whose terms are beyond laplaceMaxLog (10¹³, where
// float64's rounding reaches 0.002 nats) is an error that names them. At
// the true parameters the estimate stays within 1 nat of a bootstrap
// filter's of 20,000 particles (−861.06 against −861.06 to −861.16 over
// three seeds).
func TestLaplaceRounding(t *testing.T) {
	m := models.MSV{D: 2}
	truth, err := m.Params([]float64{0.95, 0.9}, []float64{0.3, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(300, truth, rand.New(rand.NewPCG(5, 0)))
	if err != nil {
		t.Fatal(err)
	}
	far := []float64{4.239873131657033, -3.748145327810167, -0.34665482991241575, 5.099286982576351, 7.017356391596017, 7.140830552774621, 2.937362682127037}
	score := func(u []float64) (float64, error) {
		k, err := m.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Paths: 128, Seed: 11, Plain: true, Whole: true}
		return l.Score(nil, k, m.Dims(), y, ssm.Full(y.Len()))
	}
	v, err := score(far)
	t.Logf("far point: %g, %v", v, err)
	if err == nil {
		t.Errorf("far point: log-likelihood %g without an error", v)
	} else if !errors.Is(err, pf.ErrNonFinite) {
		t.Errorf("far point: error %v, want pf.ErrNonFinite", err)
	}
	v, err = score(truth)
	if err != nil {
		t.Fatal(err)
	}
	// The independent answer: a bootstrap filter of 20,000 particles
	// (sd about 0.07 here, over seeds).
	f, err := pf.New(pf.Settings{N: 20000})
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Bind(truth)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Run(context.Background(), k, m.Dims(), y, ssm.Full(y.Len()), nil, nil, rand.New(rand.NewPCG(1, 11)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("truth: Laplace %.3f, bootstrap filter %.3f", v, res.LogLik)
	if !(math.Abs(v-res.LogLik) < 1) {
		t.Errorf("truth: Laplace %.3f, bootstrap filter %.3f: want within 1 nat", v, res.LogLik)
	}
}

// TestLaplaceStart: LastMode returns the mode x̂_{0:n} of the window just
// scored, and Newton's steps started from it (Start) end at the same mode,
// so the same estimate to rounding (MSV{D: 2}, 300 simulated rows, the
// resampling sweep): 2 steps (one below the tolerance and the last)
// instead of the prior mean's. Started from the mode at other parameters
// (φ, σ and ρ moved) the steps end at that parameters' own mode, and a
// Start of the wrong length is ignored.
func TestLaplaceStart(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Params([]float64{0.9, 0.95}, []float64{0.3, 0.25}, []float64{0.3}, []float64{1.1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(300, u, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	w := ssm.Full(y.Len())
	score := func(u, start []float64) (float64, pf.Laplace) {
		t.Helper()
		k, err := m.Bind(u)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Paths: 64, Seed: 7, Whole: true, Start: start}
		ll, err := l.Score(nil, k, m.Dims(), y, w)
		if err != nil {
			t.Fatal(err)
		}
		return ll, l
	}
	var none pf.Laplace
	if none.LastMode() != nil {
		t.Errorf("LastMode before any call: %v, want nil", none.LastMode())
	}
	_, lU := score(u, nil)
	mode := lU.LastMode()
	if len(mode) != (y.Len()+1)*2 {
		t.Fatalf("LastMode has %d values, want %d", len(mode), (y.Len()+1)*2)
	}
	for _, c := range []struct {
		name  string
		at    []float64
		start []float64
	}{
		{"its own mode", u, mode},
		{"another mode", v, nil},
		{"the wrong length", u, mode[:len(mode)-2]},
	} {
		want, lw := score(c.at, nil)
		if c.name == "another mode" {
			c.start = mode
		}
		got, lg := score(c.at, c.start)
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s: log-likelihood %.12f, from the prior mean %.12f", c.name, got, want)
		}
		gm, wm := lg.LastMode(), lw.LastMode()
		for i := range wm {
			if math.Abs(gm[i]-wm[i]) > 1e-6 {
				t.Fatalf("%s: mode[%d] = %.9f, from the prior mean %.9f", c.name, i, gm[i], wm[i])
			}
		}
		t.Logf("%s: %d Newton steps, from the prior mean %d", c.name, lg.Steps, lw.Steps)
		switch c.name {
		case "its own mode":
			if lg.Steps != 2 || lw.Steps <= 2 {
				t.Errorf("%s: %d steps, from the prior mean %d: want 2 and more", c.name, lg.Steps, lw.Steps)
			}
		case "another mode":
			if lg.Steps >= lw.Steps {
				t.Errorf("%s: %d steps, not fewer than the prior mean's %d", c.name, lg.Steps, lw.Steps)
			}
		case "the wrong length":
			if lg.Steps != lw.Steps {
				t.Errorf("%s: %d steps, want the prior mean's %d", c.name, lg.Steps, lw.Steps)
			}
		}
	}
}

// TestLaplaceStartSteps: with StartSteps = 2, the resampling sweep started
// from the mode at other parameters stops its Newton steps after two, and
// its estimate of p(y | u) stays unbiased: over 40 seeds on 2,000
// simulated rows of MSV{D: 2}, at parameters 0.05 and 0.15 from the start's
// in each coordinate of u (φ, σ, ρ and τ), and at the posterior of the DAX
// and CAC 40 pair (φ ≈ 0.5, ρ ≈ 0.99, where the Gaussian model is poor),
// the mean of the paired differences of the log-likelihoods (the same
// seed, so the same random numbers) against the steps to convergence is
// within 4 of its standard errors of 0, and the spread over seeds within
// 10% of theirs. (Both are unbiased for p(y | u): only the Gaussian model
// they draw from differs.)
func TestLaplaceStartSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	m := models.MSV{D: 2}
	sim, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	ridge, err := m.Params([]float64{0.49, 0.39}, []float64{0.87, 0.79}, []float64{0.993}, []float64{0.79, 0.91})
	if err != nil {
		t.Fatal(err)
	}
	const seeds = 40
	for _, at := range []struct {
		name string
		u    []float64
	}{{"simulated", sim}, {"DAX/CAC 40 posterior", ridge}} {
		_, y, err := m.Simulate(2000, at.u, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		w := ssm.Full(y.Len())
		k, err := m.Bind(at.u)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Paths: 128, Whole: true}
		if _, err := l.Score(nil, k, m.Dims(), y, w); err != nil {
			t.Fatal(err)
		}
		start := l.LastMode()
		for _, shift := range []float64{0.05, 0.15} {
			v := append([]float64(nil), at.u...)
			for i := range v {
				v[i] += shift * float64(i%3-1)
			}
			kv, err := m.Bind(v)
			if err != nil {
				t.Fatal(err)
			}
			var d, d2, s1, s2, c1, c2 float64
			steps, full := 0, 0
			for seed := range uint64(seeds) {
				var ll [2]float64
				for j, cap := range []int{0, 2} {
					l := pf.Laplace{Paths: 128, Whole: true, Seed: seed + 1, Start: start, StartSteps: cap}
					if ll[j], err = l.Score(nil, kv, m.Dims(), y, w); err != nil {
						t.Fatal(err)
					}
					if cap == 0 {
						full = max(full, l.Steps)
					} else {
						steps = max(steps, l.Steps)
					}
				}
				diff := ll[1] - ll[0]
				d, d2 = d+diff, d2+diff*diff
				s1, s2 = s1+ll[0], s2+ll[0]*ll[0]
				c1, c2 = c1+ll[1], c2+ll[1]*ll[1]
			}
			mean := d / seeds
			se := math.Sqrt(math.Max(d2/seeds-mean*mean, 0) / (seeds - 1))
			sdFull := math.Sqrt(s2/seeds - s1*s1/seeds/seeds)
			sdCap := math.Sqrt(c2/seeds - c1*c1/seeds/seeds)
			t.Logf("%s, shift %.2f: %d steps against %d; mean difference %.2e ± %.2e; sd over seeds %.4f against %.4f",
				at.name, shift, steps, full, mean, se, sdCap, sdFull)
			if steps != 2 || full <= 2 {
				t.Errorf("%s, shift %.2f: %d steps with StartSteps 2, %d without: want 2 and more", at.name, shift, steps, full)
			}
			if math.Abs(mean) > 4*se+1e-9 {
				t.Errorf("%s, shift %.2f: mean paired difference %.3g, %.1f standard errors from 0", at.name, shift, mean, math.Abs(mean)/se)
			}
			if r := sdCap / sdFull; r > 1.1 {
				t.Errorf("%s, shift %.2f: sd over seeds %.4f, %.2f times that with the steps to convergence", at.name, shift, sdCap, r)
			}
		}
	}
}
