package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// lgdRandomU returns a random u of the d-dimensional LGSSM with spectral
// radius rho.
func lgdRandomU(t testing.TB, rng *rand.Rand, d int, rho float64) []float64 {
	t.Helper()
	sigma, tau := make([]float64, d), make([]float64, d)
	for i := range sigma {
		sigma[i] = 0.3 + rng.Float64()
		tau[i] = 0.3 + rng.Float64()
	}
	u, err := models.LGSSMd{D: d}.Params(kfStable(rng, d, rho), sigma, tau)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// lgdData simulates T observations and sets a fraction pMiss of the
// components missing.
func lgdData(t testing.TB, rng *rand.Rand, m models.LGSSMd, u []float64, T int, pMiss float64) ([]float64, ssm.Sequence) {
	t.Helper()
	x, y, err := m.Simulate(T, u, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i := range y.Y {
		if rng.Float64() < pMiss {
			y.Y[i] = math.NaN()
		}
	}
	return x, y
}

func TestLGSSMdNames(t *testing.T) {
	got := fmt.Sprint(models.LGSSMd{D: 2}.ParamNames())
	if want := "[A11 A12 A21 A22 sigma1 sigma2 tau1 tau2]"; got != want {
		t.Errorf("ParamNames = %s, want %s", got, want)
	}
	if d := (models.LGSSMd{D: 3}).Dims(); d != (ssm.Dims{State: 3, Obs: 3, Param: 15}) {
		t.Errorf("Dims = %+v", d)
	}
}

// TestLGSSMdKernel runs the ssmtest checks: the pairwise score (including
// the initial-state term through dP/du) against finite differences of the
// complete-data log-likelihood, transform round trip and log-Jacobian,
// prior gradient.
func TestLGSSMdKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	worst := 0.0
	for _, d := range []int{1, 2, 3} {
		m := models.LGSSMd{D: d}
		for rep := 0; rep < 3; rep++ {
			u := lgdRandomU(t, rng, d, 0.3+0.65*rng.Float64())
			e, err := ssmtest.CheckScore(m, u, 30, rng)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, e)
			if e > ssmtest.ScoreTol {
				t.Errorf("d=%d u=%v: score vs FD relative error %.3g", d, u, e)
			}
			if err := ssmtest.CheckTransform(m, u); err != nil {
				t.Error(err)
			}
			if err := ssmtest.CheckPrior(m, u); err != nil {
				t.Error(err)
			}
		}
	}
	t.Logf("LGSSMd kernel: max relative error of the path score vs FD: %.3g", worst)
}

func TestLGSSMdExactScoreFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	worst := 0.0
	for _, d := range []int{2, 3} {
		m := models.LGSSMd{D: d}
		u := lgdRandomU(t, rng, d, 0.9)
		_, y := lgdData(t, rng, m, u, 200, 0.2)
		for _, span := range [][2]int{{0, 200}, {50, 150}} {
			worst = math.Max(worst, kfCheckFD(t, m, u, y, span[0], span[1], 1e-3))
		}
	}
	t.Logf("LGSSMd, T = 200: max relative error of the exact score vs FD: %.3g", worst)
}

func TestLGSSMdExactBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	worst := 0.0
	for _, d := range []int{2, 3} {
		m := models.LGSSMd{D: d}
		u := lgdRandomU(t, rng, d, 0.85)
		_, y := lgdData(t, rng, m, u, 30, 0.2)
		worst = math.Max(worst, kfCheckBrute(t, m, u, y, rng))
	}
	t.Logf("LGSSMd: max relative error of the windowed statistic vs dense brute force: %.3g", worst)
}

func TestLGSSMdExactSumOverTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	m := models.LGSSMd{D: 3}
	u := lgdRandomU(t, rng, 3, 0.8)
	_, y := lgdData(t, rng, m, u, 40, 0.1)
	e := kfCheckSumOverTimes(t, m, u, y)
	t.Logf("LGSSMd: sum over t of single-time statistics vs exact score: %.3g", e)
}

// TestLGSSMdExactMatchesScalar: with D = 1 the d-dimensional model is the
// scalar LGSSM reparameterised (u_A = φ instead of atanh φ).
func TestLGSSMdExactMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	phi, sigma, tau := 0.8, 0.6, 1.1
	us, y := lgxData(t, rng, phi, sigma, tau, 100, 0.1)
	ud, err := models.LGSSMd{D: 1}.Params([]float64{phi}, []float64{sigma}, []float64{tau})
	if err != nil {
		t.Fatal(err)
	}
	w := ssm.Window{Start: 0, End: 80, KeepStart: 0, KeepEnd: 60}
	gs, gd := make([]float64, 3), make([]float64, 3)
	ls, err1 := models.LGSSM{}.ExactScore(gs, us, y, w)
	ld, err2 := models.LGSSMd{D: 1}.ExactScore(gd, ud, y, w)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	want := []float64{gs[0] / (1 - phi*phi), gs[1], gs[2]} // dφ/du_1 = 1 − φ²
	if kfRelErr(ld, ls) > 1e-12 {
		t.Errorf("log-lik %v (d-dim) vs %v (scalar)", ld, ls)
	}
	for i := range want {
		if kfRelErr(gd[i], want[i]) > 1e-10 {
			t.Errorf("coordinate %d: d-dim %.15g, scalar %.15g", i, gd[i], want[i])
		}
	}
}

func TestLGSSMdLyapunov(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	worst := 0.0
	for _, d := range []int{1, 2, 3, 5} {
		for _, rho := range []float64{0.2, 0.9, 0.995} {
			m := models.LGSSMd{D: d}
			u := lgdRandomU(t, rng, d, rho)
			p, err := m.StationaryCov(u)
			if err != nil {
				t.Fatal(err)
			}
			d2 := d * d
			A := mat.NewDense(d, d, u[:d2])
			P := mat.NewDense(d, d, p)
			var r mat.Dense
			r.Product(A, P, A.T())
			scale := mat.Norm(P, math.Inf(1))
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					q := 0.0
					if i == j {
						q = math.Exp(2 * u[d2+i])
					}
					e := math.Abs(p[i*d+j]-r.At(i, j)-q) / scale
					worst = math.Max(worst, e)
					if e > 1e-12 {
						t.Errorf("d=%d rho=%v: (P − A P Aᵀ − Q)_%d%d = %.3g relative", d, rho, i, j, e)
					}
					if p[i*d+j] != p[j*d+i] {
						t.Errorf("d=%d: P not symmetric", d)
					}
				}
			}
		}
	}
	t.Logf("Lyapunov residual |P − A P Aᵀ − Q| / ‖P‖: max %.3g", worst)
}

func TestLGSSMdUnstable(t *testing.T) {
	m := models.LGSSMd{D: 2}
	A := []float64{0.5, 2, 0, 1.01} // eigenvalues 0.5 and 1.01
	sig, tau := []float64{1, 1}, []float64{1, 1}
	var pe *ssm.ParamError
	if _, err := m.Params(A, sig, tau); !errors.As(err, &pe) || pe.Name != "A" || !errors.Is(err, ssm.ErrInvalidParam) {
		t.Fatalf("Params with spectral radius 1.01: got %v, want a *ssm.ParamError naming A", err)
	} else if math.Abs(pe.Value-1.01) > 1e-12 {
		t.Errorf("ParamError value %v, want the spectral radius 1.01", pe.Value)
	}
	u := append(append(append([]float64(nil), A...), 0, 0), 0, 0)
	y := ssm.Sequence{Obs: 2, Y: make([]float64, 20)}
	if _, err := m.Bind(u); !errors.As(err, &pe) || pe.Name != "A" {
		t.Errorf("Bind: got %v", err)
	}
	if _, err := m.ExactScore(make([]float64, 8), u, y, ssm.Full(10)); !errors.As(err, &pe) || pe.Name != "A" {
		t.Errorf("ExactScore: got %v", err)
	}
	if _, err := m.Smooth(u, y); !errors.As(err, &pe) || pe.Name != "A" {
		t.Errorf("Smooth: got %v", err)
	}
	// Radius exactly 1 (a rotation) is rejected too.
	rot := []float64{0, -1, 1, 0}
	if _, err := m.Params(rot, sig, tau); !errors.As(err, &pe) || pe.Name != "A" {
		t.Errorf("rotation: got %v", err)
	}
	if lp := m.LogPrior(nil, u); !math.IsInf(lp, -1) {
		t.Errorf("LogPrior outside the stable region = %v, want -Inf", lp)
	}
	if _, err := m.Params([]float64{0.5, 0, 0, 0.5}, []float64{1, -1}, tau); !errors.As(err, &pe) || pe.Name != "sigma2" {
		t.Errorf("sigma2 < 0: got %v", err)
	}
	if _, err := m.Params([]float64{0.5, 0, 0, 0.5}, sig, []float64{math.NaN(), 1}); !errors.As(err, &pe) || pe.Name != "tau1" {
		t.Errorf("tau1 NaN: got %v", err)
	}
	u[5] = math.NaN()
	if _, err := m.Bind(u); !errors.As(err, &pe) || pe.Name != "sigma2" {
		t.Errorf("NaN in u: got %v", err)
	}
}

// lgdBatchMeans returns the mean of v and its batch-means standard error.
func lgdBatchMeans(v []float64, batches int) (mean, se float64) {
	n := len(v) / batches
	var s, s2 float64
	for b := 0; b < batches; b++ {
		bm := 0.0
		for _, x := range v[b*n : (b+1)*n] {
			bm += x
		}
		bm /= float64(n)
		s += bm
		s2 += bm * bm
	}
	mean = s / float64(batches)
	return mean, math.Sqrt((s2/float64(batches) - mean*mean) / float64(batches-1))
}

// TestLGSSMdSimulate compares long-run moments of a simulation with the
// stationary covariance P (checked against the Lyapunov equation above),
// the lag-one covariance A P and Cov(y) = P + diag τ², within 4 batch-means
// standard errors.
func TestLGSSMdSimulate(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const d, T = 2, 400000
	m := models.LGSSMd{D: d}
	u, err := m.Params([]float64{0.7, 0.3, -0.2, 0.5}, []float64{0.8, 0.5}, []float64{0.6, 1.2})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.StationaryCov(u)
	x, y, err := m.Simulate(T, u, rng)
	if err != nil {
		t.Fatal(err)
	}
	A := u[:4]
	v := make([]float64, T)
	check := func(name string, f func(t int) float64, want float64) {
		for s := 1; s <= T; s++ {
			v[s-1] = f(s)
		}
		got, se := lgdBatchMeans(v, 100)
		if math.Abs(got-want) > 4*se {
			t.Errorf("%s = %.5f, want %.5f (4 SE = %.3g)", name, got, want, 4*se)
		} else {
			t.Logf("%s = %.5f, want %.5f (%.1f SE)", name, got, want, math.Abs(got-want)/se)
		}
	}
	for i := 0; i < d; i++ {
		check(fmt.Sprintf("E[x%d]", i+1), func(s int) float64 { return x[s*d+i] }, 0)
		for j := 0; j <= i; j++ {
			check(fmt.Sprintf("E[x%d x%d]", i+1, j+1), func(s int) float64 { return x[s*d+i] * x[s*d+j] }, p[i*d+j])
			r := 0.0
			if i == j {
				r = math.Exp(2 * u[4+d+i])
			}
			check(fmt.Sprintf("E[y%d y%d]", i+1, j+1), func(s int) float64 { return y.Y[(s-1)*d+i] * y.Y[(s-1)*d+j] }, p[i*d+j]+r)
		}
		for j := 0; j < d; j++ {
			ap := A[i*d]*p[j] + A[i*d+1]*p[d+j] // (A P)_ij
			check(fmt.Sprintf("E[x%d_t x%d_t-1]", i+1, j+1), func(s int) float64 { return x[s*d+i] * x[(s-1)*d+j] }, ap)
		}
	}
}

// TestLGSSMdDensities checks LogInitial, LogTransitions, AddLogEmission
// and MaxLogTransition against direct Gaussian formulas (gonum/mat).
func TestLGSSMdDensities(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	const d = 3
	m := models.LGSSMd{D: d}
	u := lgdRandomU(t, rng, d, 0.8)
	kern, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.StationaryCov(u)
	var ch mat.Cholesky
	ch.Factorize(mat.NewSymDense(d, p))
	x := []float64{0.3, -1.2, 0.7}
	var sol mat.VecDense
	xv := mat.NewVecDense(d, x)
	_ = ch.SolveVecTo(&sol, xv)
	want := -0.5*(d*math.Log(2*math.Pi)+ch.LogDet()) - 0.5*mat.Dot(xv, &sol)
	if got := kern.LogInitial(x); kfRelErr(got, want) > 1e-12 {
		t.Errorf("LogInitial = %.15g, want %.15g", got, want)
	}
	logN := func(v, mean, variance float64) float64 {
		return -0.5*math.Log(2*math.Pi*variance) - 0.5*(v-mean)*(v-mean)/variance
	}
	prev := []float64{1, 0.5, -0.4, -2, 0.1, 0.3}
	dst := make([]float64, 2)
	kern.LogTransitions(dst, x, prev)
	for r := 0; r < 2; r++ {
		want := 0.0
		for i := 0; i < d; i++ {
			mu := 0.0
			for j := 0; j < d; j++ {
				mu += u[i*d+j] * prev[r*d+j]
			}
			want += logN(x[i], mu, math.Exp(2*u[d*d+i]))
		}
		if kfRelErr(dst[r], want) > 1e-12 {
			t.Errorf("LogTransitions[%d] = %.15g, want %.15g", r, dst[r], want)
		}
	}
	maxT := 0.0
	for i := 0; i < d; i++ {
		maxT += logN(0, 0, math.Exp(2*u[d*d+i]))
	}
	if got := kern.(ssm.TransitionBounder).MaxLogTransition(); kfRelErr(got, maxT) > 1e-12 {
		t.Errorf("MaxLogTransition = %v, want %v", got, maxT)
	}
	y := []float64{0.2, math.NaN(), -1}
	logw := []float64{1, 2}
	kern.AddLogEmission(logw, y, prev)
	for r := 0; r < 2; r++ {
		want := float64(r + 1)
		for _, i := range []int{0, 2} {
			want += logN(y[i], prev[r*d+i], math.Exp(2*u[d*d+d+i]))
		}
		if kfRelErr(logw[r], want) > 1e-12 {
			t.Errorf("AddLogEmission[%d] = %.15g, want %.15g", r, logw[r], want)
		}
	}
}

// TestLGSSMdProposal checks the locally optimal proposal: its weight
// increment is the predictive density N(y | A prev, Q + R) (missing
// components excluded), it equals log p(y|x) + log p(x|prev) − log q(x)
// for the drawn x (so q is the exact conditional), and the draws have the
// mean and variance LogProposal describes (4 SE).
func TestLGSSMdProposal(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	const d, n = 3, 20000
	m := models.LGSSMd{D: d}
	u := lgdRandomU(t, rng, d, 0.8)
	kern, _ := m.Bind(u)
	prop := kern.(ssm.Proposer)
	pr := []float64{0.4, -1, 0.8}
	y := []float64{1.5, math.NaN(), -0.3}
	prev := make([]float64, n*d)
	for r := 0; r < n; r++ {
		copy(prev[r*d:], pr)
	}
	x := make([]float64, n*d)
	logw := make([]float64, n)
	prop.Propose(x, logw, prev, y, rng)
	pred := 0.0
	mu := make([]float64, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			mu[i] += u[i*d+j] * pr[j]
		}
		if !math.IsNaN(y[i]) {
			v := math.Exp(2*u[d*d+i]) + math.Exp(2*u[d*d+d+i])
			pred += -0.5*math.Log(2*math.Pi*v) - 0.5*(y[i]-mu[i])*(y[i]-mu[i])/v
		}
	}
	lt, em := make([]float64, 1), make([]float64, 1)
	for r := 0; r < 50; r++ {
		if kfRelErr(logw[r], pred) > 1e-12 {
			t.Fatalf("weight increment %.15g, predictive density %.15g", logw[r], pred)
		}
		xr := x[r*d : (r+1)*d]
		kern.LogTransitions(lt, xr, pr)
		em[0] = 0
		kern.AddLogEmission(em, y, xr)
		if got := em[0] + lt[0] - prop.LogProposal(xr, pr, y); kfRelErr(got, pred) > 1e-10 {
			t.Fatalf("log p(y|x) + log p(x|prev) − log q = %.15g, want %.15g", got, pred)
		}
	}
	// Conditional moments per component: posterior N((σ²y+τ²μ)/(σ²+τ²), σ²τ²/(σ²+τ²)), or the transition when y is missing.
	for i := 0; i < d; i++ {
		q, rr := math.Exp(2*u[d*d+i]), math.Exp(2*u[d*d+d+i])
		wantM, wantV := mu[i], q
		if !math.IsNaN(y[i]) {
			wantM, wantV = (q*y[i]+rr*mu[i])/(q+rr), q*rr/(q+rr)
		}
		var s, s2 float64
		for r := 0; r < n; r++ {
			v := x[r*d+i] - wantM
			s += v
			s2 += v * v
		}
		mean, vr := s/n, s2/n
		if math.Abs(mean) > 4*math.Sqrt(wantV/n) {
			t.Errorf("component %d: proposal mean off by %.3g (SE %.3g)", i, mean, math.Sqrt(wantV/n))
		}
		if math.Abs(vr-wantV) > 4*wantV*math.Sqrt(2.0/n) {
			t.Errorf("component %d: proposal variance %.4f, want %.4f", i, vr, wantV)
		}
	}
}

func ExampleLGSSMd() {
	m := models.LGSSMd{D: 2}
	u, err := m.Params([]float64{0.7, 0.3, -0.2, 0.5}, []float64{0.8, 0.5}, []float64{0.6, 1.2})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := m.StationaryCov(u)
	fmt.Printf("stationary covariance: [[%.4f %.4f] [%.4f %.4f]]\n", p[0], p[1], p[2], p[3])
	y := ssm.Sequence{Obs: 2, Y: []float64{0.5, -0.1, 1.2, math.NaN(), 0.9, 0.4, -0.3, 0.2}}
	grad := make([]float64, m.Dims().Param)
	ll, _ := m.ExactScore(grad, u, y, ssm.Full(y.Len()))
	fmt.Printf("log p(y) = %.4f\n", ll)
	for i, name := range m.ParamNames() {
		fmt.Printf("%s %.4f\n", name, grad[i])
	}
	_, err = m.Params([]float64{1.2, 0, 0, 0.5}, []float64{1, 1}, []float64{1, 1})
	fmt.Println(err)
	// Output:
	// stationary covariance: [[1.2113 -0.1465] [-0.1465 0.4370]]
	// log p(y) = -8.7283
	// A11 -1.1499
	// A12 -0.1841
	// A21 0.7632
	// A22 -0.5239
	// sigma1 -1.5279
	// sigma2 -0.5758
	// tau1 -0.8332
	// tau2 -2.1207
	// ssm: invalid parameter A = 1.2: its spectral radius (the value shown) must be < 1
}

func BenchmarkLGSSMdExactScore(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := models.LGSSMd{D: 3}
	u := lgdRandomU(b, rng, 3, 0.9)
	_, y, _ := m.Simulate(1000, u, rng)
	grad := make([]float64, m.Dims().Param)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.ExactScore(grad, u, y, ssm.Window{Start: 0, End: 60, KeepStart: 0, KeepEnd: 50}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLGSSMdExactScoreConcurrent calls ExactScore from several goroutines
// at once, for models of different dimensions (its workspaces are pooled),
// and checks every result against a serial call, bit for bit; it also
// checks that a call allocates nothing once the pool is warm.
func TestLGSSMdExactScoreConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	type job struct {
		m    models.LGSSMd
		u    []float64
		y    ssm.Sequence
		want []float64
	}
	var jobs []job
	for _, d := range []int{1, 2, 3, 2} {
		m := models.LGSSMd{D: d}
		u := lgdRandomU(t, rng, d, 0.8)
		_, y, err := m.Simulate(120, u, rng)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, m.Dims().Param)
		if _, err := m.ExactScore(want, u, y, ssm.Window{Start: 10, End: 90, KeepStart: 20, KeepEnd: 80}); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{m, u, y, want})
	}
	errs := make(chan error, 4*len(jobs))
	for r := 0; r < 4; r++ {
		for _, j := range jobs {
			go func() {
				for range 20 {
					got := make([]float64, len(j.want))
					if _, err := j.m.ExactScore(got, j.u, j.y, ssm.Window{Start: 10, End: 90, KeepStart: 20, KeepEnd: 80}); err != nil {
						errs <- err
						return
					}
					for i := range got {
						if got[i] != j.want[i] {
							errs <- fmt.Errorf("D = %d: component %d is %v concurrently, %v serially", j.m.D, i, got[i], j.want[i])
							return
						}
					}
				}
				errs <- nil
			}()
		}
	}
	for range 4 * len(jobs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if raceEnabled {
		return
	}
	j := jobs[2]
	grad := make([]float64, len(j.want))
	w := ssm.Window{Start: 10, End: 90, KeepStart: 20, KeepEnd: 80}
	if a := testing.AllocsPerRun(20, func() { j.m.ExactScore(grad, j.u, j.y, w) }); a != 0 {
		t.Errorf("ExactScore allocates %v objects per call, want 0", a)
	}
}
