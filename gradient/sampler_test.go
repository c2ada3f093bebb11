package gradient_test

// Whole-sampler tests: the gradient estimators driven by sgmcmc, checked
// against posteriors computed independently in the test.

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// logPost is the exact log posterior of u: Kalman log-likelihood plus the
// log prior on u (Jacobian included).
func logPost(m models.LGSSM, u []float64, y ssm.Sequence) float64 {
	ll, err := m.ExactScore(nil, u, y, ssm.Full(y.Len()))
	if err != nil {
		return math.Inf(-1)
	}
	return ll + m.LogPrior(nil, u)
}

// laplace returns the posterior mode of u (Newton on the exact score, with
// a finite-difference Hessian) and the Laplace covariance −H⁻¹.
func laplace(t testing.TB, m models.LGSSM, u0 []float64, y ssm.Sequence) ([]float64, *mat.SymDense) {
	t.Helper()
	p := len(u0)
	u := append([]float64(nil), u0...)
	grad := func(dst, v []float64) {
		clear(dst)
		if _, err := m.ExactScore(dst, v, y, ssm.Full(y.Len())); err != nil {
			t.Fatal(err)
		}
		pg := make([]float64, p)
		m.LogPrior(pg, v)
		for i := range dst {
			dst[i] += pg[i]
		}
	}
	H := mat.NewSymDense(p, nil)
	g := make([]float64, p)
	gp, gm := make([]float64, p), make([]float64, p)
	for it := 0; it < 20; it++ {
		grad(g, u)
		const h = 1e-5
		for i := 0; i < p; i++ {
			v := append([]float64(nil), u...)
			v[i] += h
			grad(gp, v)
			v[i] -= 2 * h
			grad(gm, v)
			for j := 0; j <= i; j++ {
				H.SetSym(i, j, (gp[j]-gm[j])/(2*h))
			}
		}
		var step mat.VecDense
		if err := step.SolveVec(H, mat.NewVecDense(p, g)); err != nil {
			t.Fatal(err)
		}
		for i := range u {
			u[i] -= step.AtVec(i)
		}
		if mat.Norm(&step, 2) < 1e-10 {
			break
		}
	}
	var cov mat.SymDense
	var chol mat.Cholesky
	neg := mat.NewSymDense(p, nil)
	neg.ScaleSym(-1, H)
	if !chol.Factorize(neg) {
		t.Fatal("Hessian at the mode is not negative definite")
	}
	if err := chol.InverseTo(&cov); err != nil {
		t.Fatal(err)
	}
	return u, &cov
}

// summary returns the mean of each natural parameter over chains and its
// Monte Carlo standard error (posterior sd / √ESS, ksd.MCSE), and the sd.
func summary(m ssm.Model, tr *sgmcmc.Trace) (mean, se, sd []float64) {
	p := m.Dims().Param
	mean, se, sd = make([]float64, p), make([]float64, p), make([]float64, p)
	theta := make([]float64, p)
	for j := 0; j < p; j++ {
		var chains [][]float64
		for _, c := range tr.Chains {
			col := make([]float64, c.Len())
			for k := range col {
				m.Constrain(theta, c.U[k*p:(k+1)*p])
				col[k] = theta[j]
			}
			chains = append(chains, col)
		}
		n, s, s2 := 0.0, 0.0, 0.0
		for _, c := range chains {
			for _, v := range c {
				n++
				s += v
				s2 += v * v
			}
		}
		mean[j] = s / n
		sd[j] = math.Sqrt(s2/n - mean[j]*mean[j])
		se[j] = ksd.MCSE(chains)
	}
	return mean, se, sd
}

func runChains(t testing.TB, est func(c int) sgmcmc.Estimator, u0 []float64, s sgmcmc.Settings) *sgmcmc.Trace {
	t.Helper()
	tr := &sgmcmc.Trace{}
	s.Recorder = tr
	_, err := sgmcmc.Run(ctx, est, func(int) sgmcmc.Method { return &sgmcmc.SGLD{} },
		func(_ int, u []float64) error { copy(u, u0); return nil }, len(u0), s)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// SGLD with the exact Kalman gradient (N = ∞, full data) recovers the
// posterior of a simulated LGSSM (T = 1000): means and sds of (φ, σ, τ)
// against random-walk Metropolis on the exact Kalman likelihood.
func TestSGLDExactKalmanPosterior(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	m := models.LGSSM{}
	u0, _ := m.Params(0.9, 0.7, 1)
	_, y, _ := m.Simulate(1000, u0, rand.New(rand.NewPCG(21, 1)))
	mode, cov := laplace(t, m, u0, y)

	// Reference: random-walk Metropolis with the Laplace covariance scaled
	// by 2.38²/p, started at the mode.
	var L mat.Cholesky
	L.Factorize(cov)
	var Lt mat.TriDense
	L.LTo(&Lt)
	rng := rand.New(rand.NewPCG(22, 2))
	const rwmIters = 60000
	cur := append([]float64(nil), mode...)
	lpCur := logPost(m, cur, y)
	ref := make([][]float64, 3)
	prop := make([]float64, 3)
	z := mat.NewVecDense(3, nil)
	scale := 2.38 / math.Sqrt(3)
	theta := make([]float64, 3)
	for it := 0; it < rwmIters; it++ {
		for i := 0; i < 3; i++ {
			z.SetVec(i, rng.NormFloat64())
		}
		var d mat.VecDense
		d.MulVec(&Lt, z)
		for i := range prop {
			prop[i] = cur[i] + scale*d.AtVec(i)
		}
		lp := logPost(m, prop, y)
		if math.Log(rng.Float64()) < lp-lpCur {
			copy(cur, prop)
			lpCur = lp
		}
		m.Constrain(theta, cur)
		for j := range ref {
			ref[j] = append(ref[j], theta[j])
		}
	}

	// SGLD: exact full-data gradient, constant step h, 2 chains from the mode.
	const h = 4e-5
	tr := runChains(t, func(int) sgmcmc.Estimator {
		e, err := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, gradient.Settings{Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, Exact: true})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}, mode, sgmcmc.Settings{Iterations: 40000, BurnIn: 1000, Schedule: sgmcmc.Constant(h), Chains: 2, Seed: 23})
	mean, se, sd := summary(m, tr)
	for j, name := range m.ParamNames() {
		n := float64(len(ref[j]))
		rm, rs := 0.0, 0.0
		for _, v := range ref[j] {
			rm += v / n
		}
		for _, v := range ref[j] {
			rs += (v - rm) * (v - rm) / n
		}
		rs = math.Sqrt(rs)
		rse := ksd.MCSE([][]float64{ref[j]})
		// Tolerance: 4 combined Monte Carlo SEs plus the O(h) bias of
		// SGLD, at most h/(2λ_min) relative in variance ≈ 5% of an sd here.
		tol := 4*math.Hypot(se[j], rse) + 0.05*rs
		t.Logf("%s: SGLD mean %.4f ± %.4f sd %.4f | RWM mean %.4f ± %.4f sd %.4f", name, mean[j], se[j], sd[j], rm, rse, rs)
		if math.Abs(mean[j]-rm) > tol {
			t.Errorf("%s: SGLD mean %.4f vs RWM %.4f (tolerance %.4f)", name, mean[j], rm, tol)
		}
		// The sd of an SGLD chain is estimated to about 1/√(2 ESS)
		// relative; allow 4 of those plus 5% discretisation bias.
		ess := math.Pow(sd[j]/se[j], 2)
		if rel := math.Abs(sd[j]/rs - 1); rel > 4/math.Sqrt(2*ess)+0.05 {
			t.Errorf("%s: SGLD sd %.4f vs RWM %.4f (rel %.3f, ESS %.0f)", name, sd[j], rs, rel, ess)
		}
	}
}

// Buffered PF-SGLD (S = 40, B = 10, N = 1000) on an LGSSM with T = 10⁴
// recovers the exact posterior means (Laplace approximation from the exact
// Kalman score; the O(1/T) mode-mean gap is inside the tolerance).
func TestBufferedPFSGLD(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	m := models.LGSSM{}
	u0, _ := m.Params(0.9, 0.7, 1)
	_, y, _ := m.Simulate(10000, u0, rand.New(rand.NewPCG(31, 1)))
	mode, cov := laplace(t, m, u0, y)
	modeNat, sdNat := naturalLaplace(m, mode, cov)
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	tr := runChains(t, func(int) sgmcmc.Estimator {
		e, err := gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: pf.Settings{N: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}, mode, sgmcmc.Settings{Iterations: 2500, BurnIn: 250, Schedule: sgmcmc.Constant(2e-6), Chains: 2, Seed: 33})
	mean, se, _ := summary(m, tr)
	for j, name := range m.ParamNames() {
		// 4 Monte Carlo SEs plus a quarter posterior sd for the mode-mean
		// gap and the O(h) SGLD bias.
		tol := 4*se[j] + 0.25*sdNat[j]
		t.Logf("B=10 %s: mean %.4f ± %.4f, Laplace mode %.4f (sd %.4f)", name, mean[j], se[j], modeNat[j], sdNat[j])
		if math.Abs(mean[j]-modeNat[j]) > tol {
			t.Errorf("B=10 %s: mean %.4f vs exact %.4f (tolerance %.4f)", name, mean[j], modeNat[j], tol)
		}
	}
}

// naturalLaplace maps the Laplace mode and sds to natural parameters (delta
// method; the transforms are coordinate-wise).
func naturalLaplace(m ssm.Model, mode []float64, cov *mat.SymDense) (nat, sd []float64) {
	p := len(mode)
	nat, sd = make([]float64, p), make([]float64, p)
	m.Constrain(nat, mode)
	tp := make([]float64, p)
	const h = 1e-6
	for j := 0; j < p; j++ {
		v := append([]float64(nil), mode...)
		v[j] += h
		m.Constrain(tp, v)
		sd[j] = math.Sqrt(cov.At(j, j)) * math.Abs(tp[j]-nat[j]) / h
	}
	return nat, sd
}

// Without a buffer the stationary point of SGLD moves: the no-buffer
// gradient ĝ(S, 0) is biased, so its chain centres on mode + Σ·E[ĝ(S,0) −
// ĝ(S,T)] (Laplace). The shift in φ is a few percent of a posterior sd, far
// below what PF noise lets a test resolve, so this test uses the exact
// Kalman estimators (N = ∞, the PF's limit) with common random numbers: the
// B = 0 and B = 10 chains share their seed and the difference of their φ
// means must have the predicted sign and exceed 4 Monte Carlo SEs, while B
// = 10 matches the exact posterior.
func TestNoBufferBiasesPhi(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	m := models.LGSSM{}
	// A noisy, persistent series: the buffer matters more (L = 0.94).
	u0, _ := m.Params(0.95, 0.2, 2)
	_, y, _ := m.Simulate(10000, u0, rand.New(rand.NewPCG(51, 1)))
	mode, cov := laplace(t, m, u0, y)
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	bias := make([]float64, 3)
	{
		e, _ := gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40}, Exact: true})
		g := make([]float64, 3)
		q := gradient.Subsequencer{S: 40}
		q.Enumerate(y.Len(), func(w ssm.Window, p float64) {
			if _, err := e.Fixed(ctx, g, mode, 0, w, nil); err != nil {
				t.Fatal(err)
			}
			for j := range g {
				bias[j] += p * g[j]
			}
		})
		full := make([]float64, 3)
		if _, err := m.ExactScore(full, mode, y, ssm.Full(y.Len())); err != nil {
			t.Fatal(err)
		}
		for j := range bias {
			bias[j] -= full[j]
		}
	}
	var shift mat.VecDense
	shift.MulVec(cov, mat.NewVecDense(3, bias))
	predicted := shift.AtVec(0) // in u_φ = atanh φ, same sign as in φ

	const iters, h = 800000, 2e-6
	run := func(B int) []float64 {
		tr := runChains(t, func(int) sgmcmc.Estimator {
			e, err := gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: B}, Exact: true})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}, mode, sgmcmc.Settings{Iterations: iters, BurnIn: 5000, Thin: 10, Schedule: sgmcmc.Constant(h), Chains: 1, Seed: 52})
		c := tr.Chains[0]
		phi := make([]float64, c.Len())
		for k := range phi {
			phi[k] = c.U[k*3] // u_φ
		}
		return phi
	}
	b0, b10 := run(0), run(10)
	diff := make([]float64, len(b0))
	mean0, mean10, md := 0.0, 0.0, 0.0
	for k := range diff {
		diff[k] = b0[k] - b10[k]
		md += diff[k] / float64(len(diff))
		mean0 += b0[k] / float64(len(diff))
		mean10 += b10[k] / float64(len(diff))
	}
	se := ksd.MCSE([][]float64{diff})
	se10 := ksd.MCSE([][]float64{b10})
	sdU := math.Sqrt(cov.At(0, 0))
	t.Logf("u_φ: B=0 mean %.5f, B=10 mean %.5f ± %.5f, mode %.5f (sd %.4f); B=0 − B=10 = %.5f ± %.5f, predicted %.5f",
		mean0, mean10, se10, mode[0], sdU, md, se, predicted)
	if math.Signbit(md) != math.Signbit(predicted) || math.Abs(md) < 4*se {
		t.Errorf("no-buffer shift of u_φ = %.5f ± %.5f, want beyond 4 SE with the sign of the predicted %.5f", md, se, predicted)
	}
	if math.Abs(mean10-mode[0]) > 4*se10+0.1*sdU {
		t.Errorf("B=10 chain mean of u_φ %.5f vs exact mode %.5f (SE %.5f)", mean10, mode[0], se10)
	}
}

// The same seed gives identical traces with GOMAXPROCS 1 and 2, with
// several chains and parallel subsequence draws.
func TestSamplerReproducibleAcrossGOMAXPROCS(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	run := func(procs int) *sgmcmc.Trace {
		old := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(old)
		return runChains(t, func(int) sgmcmc.Estimator {
			e, err := gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 20, B: 5}, PF: pf.Settings{N: 100}, Draws: 3, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}, u, sgmcmc.Settings{Iterations: 50, Schedule: sgmcmc.Constant(1e-4), Chains: 3, Seed: 41})
	}
	a, b := run(1), run(2)
	for c := range a.Chains {
		for k, v := range a.Chains[c].U {
			if b.Chains[c].U[k] != v {
				t.Fatalf("chain %d value %d differs: %v vs %v", c, k, v, b.Chains[c].U[k])
			}
		}
	}
}
