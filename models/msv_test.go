package models_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// msvRandomU returns a random u of MSV{D: d}: φ_i in (−0.6, 0.97), σ_i in
// (0.2, 0.8), CPCs atanh z ~ N(0, 0.7²), τ_i in (0.5, 1.5).
func msvRandomU(rng *rand.Rand, d int) []float64 {
	nc := d * (d - 1) / 2
	u := make([]float64, 3*d+nc)
	for i := 0; i < d; i++ {
		u[i] = math.Atanh(-0.6 + 1.57*rng.Float64())
		u[d+i] = math.Log(0.2 + 0.6*rng.Float64())
		u[2*d+nc+i] = math.Log(0.5 + rng.Float64())
	}
	for c := 0; c < nc; c++ {
		u[2*d+c] = 0.7 * rng.NormFloat64()
	}
	return u
}

// msvNatural returns φ, σ, R (D×D) and τ at u, read from Constrain.
func msvNatural(m models.MSV, u []float64) (phi, sigma, r, tau []float64) {
	d := m.D
	theta := make([]float64, len(u))
	m.Constrain(theta, u)
	nc := d * (d - 1) / 2
	r = make([]float64, d*d)
	c := 2 * d
	for i := 0; i < d; i++ {
		r[i*d+i] = 1
		for j := i + 1; j < d; j++ {
			r[i*d+j], r[j*d+i] = theta[c], theta[c]
			c++
		}
	}
	return theta[:d], theta[d : 2*d], r, theta[2*d+nc:]
}

// msvSigma returns Σ = diag(σ) R diag(σ).
func msvSigma(sigma, r []float64) []float64 {
	d := len(sigma)
	s := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s[i*d+j] = sigma[i] * sigma[j] * r[i*d+j]
		}
	}
	return s
}

// msvLyapunov solves P = A P Aᵀ + Σ for A = diag(φ) as a general
// matrix, through the d²×d² system (I − A⊗A) vec P = vec Σ: it does not
// use the element-wise closed form.
func msvLyapunov(t testing.TB, phi, sigma []float64) []float64 {
	t.Helper()
	d := len(phi)
	d2 := d * d
	a := make([]float64, d2)
	for i := range phi {
		a[i*d+i] = phi[i]
	}
	op := mat.NewDense(d2, d2, nil)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			for p := 0; p < d; p++ {
				for q := 0; q < d; q++ {
					v := -a[i*d+p] * a[j*d+q] // (A P Aᵀ)_ij = Σ_pq A_ip P_pq A_jq
					if i == p && j == q {
						v++
					}
					op.Set(i*d+j, p*d+q, v)
				}
			}
		}
	}
	var x mat.VecDense
	if err := x.SolveVec(op, mat.NewVecDense(d2, append([]float64(nil), sigma...))); err != nil {
		t.Fatal(err)
	}
	return x.RawVector().Data
}

func TestMSVNames(t *testing.T) {
	for _, c := range []struct {
		d    int
		want string
	}{
		{1, "[phi1 sigma1 tau1]"},
		{2, "[phi1 phi2 sigma1 sigma2 rho tau1 tau2]"},
		{3, "[phi1 phi2 phi3 sigma1 sigma2 sigma3 rho12 rho13 rho23 tau1 tau2 tau3]"},
	} {
		m := models.MSV{D: c.d}
		if got := fmt.Sprint(m.ParamNames()); got != c.want {
			t.Errorf("D = %d: ParamNames = %s, want %s", c.d, got, c.want)
		}
		if got, want := m.Dims(), (ssm.Dims{State: c.d, Obs: c.d, Param: 3*c.d + c.d*(c.d-1)/2}); got != want {
			t.Errorf("D = %d: Dims = %+v, want %+v", c.d, got, want)
		}
	}
	names := models.MSV{D: 11}.ParamNames()
	if got := names[2*11+9]; got != "rho1,11" {
		t.Errorf("D = 11: correlation name %q, want rho1,11", got)
	}
}

// TestMSVModelChecks runs the ssmtest checks (pairwise score against finite
// differences of the complete-data log-likelihood, with and without
// missing components; transform round trip and log-Jacobian; prior
// gradient) for D = 1..4 at random parameters.
func TestMSVModelChecks(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	worst := 0.0
	for _, d := range []int{1, 2, 3, 4} {
		m := models.MSV{D: d}
		for rep := 0; rep < 3; rep++ {
			u := msvRandomU(rng, d)
			e, err := ssmtest.CheckScore(m, u, 30, rng)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, e)
			if e > ssmtest.ScoreTol {
				t.Errorf("D = %d, u = %v: score vs FD relative error %.3g", d, u, e)
			}
			if err := ssmtest.CheckTransform(m, u); err != nil {
				t.Errorf("D = %d: %v", d, err)
			}
			if err := ssmtest.CheckPrior(m, u); err != nil {
				t.Errorf("D = %d: %v", d, err)
			}
		}
	}
	t.Logf("MSV: max relative error of the path score vs FD: %.3g", worst)
}

// TestMSVSimulators checks the samplers against the log densities
// (ssmtest.Simulator: score, information and Stein moments within 5 Monte
// Carlo standard errors, 4000 draws).
func TestMSVSimulators(t *testing.T) {
	for _, d := range []int{2, 3} {
		u := msvRandomU(rand.New(rand.NewPCG(uint64(d), 43)), d)
		t.Run(fmt.Sprintf("D=%d", d), func(t *testing.T) {
			ssmtest.Simulator(t, models.MSV{D: d}, u, 4000, rand.New(rand.NewPCG(uint64(d), 44)))
		})
	}
}

// TestMSVOneIsSVM: MSV{D: 1} is the SVM with the same u: densities,
// scores and prior agree.
func TestMSVOneIsSVM(t *testing.T) {
	u, err := models.SVM{}.Params(0.93, 0.4, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	km, err := models.MSV{D: 1}.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := models.SVM{}.Bind(u)
	xs := []float64{-2, -0.3, 0.4, 1.7}
	prev := []float64{0.1, -1, 0.5, 2}
	close := func(what string, a, b float64) {
		t.Helper()
		if math.Abs(a-b) > 1e-12*math.Max(1, math.Abs(b)) {
			t.Errorf("%s: MSV %v, SVM %v", what, a, b)
		}
	}
	for _, x := range xs {
		close("LogInitial", km.LogInitial([]float64{x}), ks.LogInitial([]float64{x}))
	}
	d1, d2 := make([]float64, 4), make([]float64, 4)
	km.LogTransitions(d1, xs[1:2], prev)
	ks.LogTransitions(d2, xs[1:2], prev)
	for i := range d1 {
		close("LogTransitions", d1[i], d2[i])
	}
	for _, y := range []float64{-1.3, 0, 0.02, math.NaN()} {
		l1, l2 := make([]float64, 4), make([]float64, 4)
		km.AddLogEmission(l1, []float64{y}, xs)
		ks.AddLogEmission(l2, []float64{y}, xs)
		h1, h2 := make([]float64, 12), make([]float64, 12)
		km.AddScore(h1, 0.7, []float64{y}, xs, prev)
		ks.AddScore(h2, 0.7, []float64{y}, xs, prev)
		km.AddScore(h1, 1.3, nil, xs, nil)
		ks.AddScore(h2, 1.3, nil, xs, nil)
		for i := range l1 {
			close(fmt.Sprintf("AddLogEmission y = %v", y), l1[i], l2[i])
		}
		for i := range h1 {
			close(fmt.Sprintf("AddScore y = %v [%d]", y, i), h1[i], h2[i])
		}
	}
	g1, g2 := make([]float64, 3), make([]float64, 3)
	close("LogPrior", models.MSV{D: 1}.LogPrior(g1, u), models.SVM{}.LogPrior(g2, u))
	for i := range g1 {
		close("LogPrior gradient", g1[i], g2[i])
	}
}

// TestMSVStationaryCov checks P against an independent solve of the
// Lyapunov equation, and against the covariance of simulated states with
// tolerances from the Monte Carlo error: 2·10⁵ independent draws of x_0
// (Var(x_i x_j) = P_ii P_jj + P_ij²), and a path of 2·10⁵ steps, whose
// products x_{t,i} x_{t,j} have autocovariance (φ_iφ_j)^|k| (P_ii P_jj +
// P_ij²) at lag k, so the long-run variance of their mean is
// (P_ii P_jj + P_ij²)(1 + φ_iφ_j)/(1 − φ_iφ_j)/T.
func TestMSVStationaryCov(t *testing.T) {
	const n, T, zMax = 200000, 200000, 5
	rng := rand.New(rand.NewPCG(45, 46))
	for _, d := range []int{2, 3} {
		m := models.MSV{D: d}
		u := msvRandomU(rng, d)
		if d == 2 { // a persistent, strongly correlated pair
			var err error
			if u, err = m.Params([]float64{0.97, 0.9}, []float64{0.2, 0.3}, []float64{0.8}, []float64{1, 1.2}); err != nil {
				t.Fatal(err)
			}
		}
		phi, sigma, r, _ := msvNatural(m, u)
		want := msvLyapunov(t, phi, msvSigma(sigma, r))
		p, err := m.StationaryCov(u)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p {
			if math.Abs(p[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Errorf("D = %d: P[%d] = %.15g, Lyapunov solve %.15g", d, i, p[i], want[i])
			}
		}
		k, _ := m.Bind(u)
		x0 := make([]float64, n*d)
		k.SampleInitial(x0, rng)
		x, _, err := m.Simulate(T, u, rng)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				v := p[i*d+i]*p[j*d+j] + p[i*d+j]*p[i*d+j]
				rho := phi[i] * phi[j]
				for _, c := range []struct {
					what string
					x    []float64
					rows int
					se   float64
				}{
					{"independent x_0", x0, n, math.Sqrt(v / n)},
					{"path x_1..x_T", x[d:], T, math.Sqrt(v * (1 + rho) / (1 - rho) / T)},
				} {
					s := 0.0
					for r := 0; r < c.rows; r++ {
						s += c.x[r*d+i] * c.x[r*d+j]
					}
					z := (s/float64(c.rows) - p[i*d+j]) / c.se
					worst = math.Max(worst, math.Abs(z))
					if math.Abs(z) > zMax {
						t.Errorf("D = %d, %s: cov[%d][%d] = %.5g, P = %.5g (z = %.1f)", d, c.what, i, j, s/float64(c.rows), p[i*d+j], z)
					}
				}
			}
		}
		t.Logf("D = %d: largest |z| of the simulated covariances against P: %.2f", d, worst)
	}
}

// TestMSVDensities compares the log densities with gonum's, and checks
// missing components one by one.
func TestMSVDensities(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	const d = 3
	m := models.MSV{D: d}
	u := msvRandomU(rng, d)
	phi, sigma, r, tau := msvNatural(m, u)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	sig := msvSigma(sigma, r)
	p0, ok := distmv.NewNormal(make([]float64, d), mat.NewSymDense(d, msvLyapunov(t, phi, sig)), nil)
	if !ok {
		t.Fatal("P not positive definite")
	}
	const n = 5
	x, prev := make([]float64, n*d), make([]float64, n*d)
	for i := range x {
		x[i], prev[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		if got, want := k.LogInitial(row), p0.LogProb(row); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("LogInitial = %v, want %v", got, want)
		}
	}
	dst := make([]float64, n)
	k.LogTransitions(dst, x[:d], prev)
	maxT := k.(ssm.TransitionBounder).MaxLogTransition()
	for r := 0; r < n; r++ {
		mu := make([]float64, d)
		for i := range mu {
			mu[i] = phi[i] * prev[r*d+i]
		}
		nt, _ := distmv.NewNormal(mu, mat.NewSymDense(d, append([]float64(nil), sig...)), nil)
		if want := nt.LogProb(x[:d]); math.Abs(dst[r]-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("LogTransitions[%d] = %v, want %v", r, dst[r], want)
		}
		if dst[r] > maxT {
			t.Errorf("log transition %v exceeds MaxLogTransition %v", dst[r], maxT)
		}
		if math.Abs(maxT-nt.LogProb(mu)) > 1e-12*math.Max(1, math.Abs(maxT)) {
			t.Errorf("MaxLogTransition %v, density at the mode %v", maxT, nt.LogProb(mu))
		}
	}
	// Emission, component by component; a NaN component adds nothing to the
	// log density or to its τ score, and leaves the other components' terms.
	nan := math.NaN()
	for _, y := range [][]float64{{0.7, -1.2, 0}, {nan, -1.2, 0.3}, {0.7, nan, nan}, {nan, nan, nan}} {
		logw := []float64{1, 2, 3, 4, 5}
		k.AddLogEmission(logw, y, x)
		hAll := make([]float64, n*m.Dims().Param)
		hLat := make([]float64, n*m.Dims().Param)
		k.AddScore(hAll, 0.5, y, x, prev)
		k.AddScore(hLat, 0.5, []float64{nan, nan, nan}, x, prev)
		np := m.Dims().Param
		for r := 0; r < n; r++ {
			want := float64(r + 1)
			for i, yi := range y {
				xi := x[r*d+i]
				tc := np - d + i // the τ_i column
				ds := hAll[r*np+tc] - hLat[r*np+tc]
				if math.IsNaN(yi) {
					if ds != 0 {
						t.Errorf("y = %v: missing component %d changes the τ score by %v", y, i, ds)
					}
					continue
				}
				want += (distuv.Normal{Sigma: tau[i] * math.Exp(xi/2)}).LogProb(yi)
				wantS := 0.5 * (yi*yi*math.Exp(-xi)/(tau[i]*tau[i]) - 1)
				if math.Abs(ds-wantS) > 1e-12*math.Max(1, math.Abs(wantS)) {
					t.Errorf("y = %v: τ_%d score %v, want %v", y, i+1, ds, wantS)
				}
			}
			if math.Abs(logw[r]-want) > 1e-12*math.Max(1, math.Abs(want)) {
				t.Errorf("y = %v: AddLogEmission[%d] = %v, want %v", y, r, logw[r], want)
			}
			for c := 0; c < np-d; c++ {
				if hAll[r*np+c] != hLat[r*np+c] {
					t.Errorf("y = %v: the emission changes the score of %s", y, m.ParamNames()[c])
				}
			}
		}
	}
	// y = 0 with a state far below zero stays finite (the SVM's care).
	logw := []float64{0}
	k.AddLogEmission(logw, []float64{0, 0, 1e-3}, []float64{-800, -800, -800})
	h := make([]float64, m.Dims().Param)
	k.AddScore(h, 1, []float64{0, 0, 1e-3}, []float64{-800, -800, -800}, []float64{0, 0, 0})
	for _, v := range append(h, logw...) {
		if math.IsNaN(v) {
			t.Fatalf("y ≈ 0, x = −800: log-weight %v, score %v", logw, h)
		}
	}
}

// TestMSVIndependentPair: with ρ = 0 the bivariate model is two SVMs; the
// transition score of ρ is then s_1 s_2, s_i = e_i/σ_i (the derivative of
// the bivariate normal density in ρ at 0).
func TestMSVIndependentPair(t *testing.T) {
	m := models.MSV{D: 2}
	th := [][3]float64{{0.95, 0.3, 0.9}, {0.8, 0.5, 1.4}}
	u, err := m.Params([]float64{th[0][0], th[1][0]}, []float64{th[0][1], th[1][1]}, []float64{0}, []float64{th[0][2], th[1][2]})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := m.Bind(u)
	var ks [2]ssm.Kernel
	for i := range ks {
		us, _ := models.SVM{}.Params(th[i][0], th[i][1], th[i][2])
		ks[i], _ = models.SVM{}.Bind(us)
	}
	x, prev, y := []float64{0.3, -0.8}, []float64{-0.2, 0.6}, []float64{1.1, -0.4}
	h := make([]float64, 7)
	k.AddScore(h, 1, y, x, prev)
	lw := []float64{0}
	k.AddLogEmission(lw, y, x)
	lt := []float64{0}
	k.LogTransitions(lt, x, prev)
	wantW, wantT, wantI := 0.0, 0.0, 0.0
	cols := [2][3]int{{0, 2, 5}, {1, 3, 6}}
	for i, ki := range ks {
		hs := make([]float64, 3)
		ki.AddScore(hs, 1, y[i:i+1], x[i:i+1], prev[i:i+1])
		for j, c := range cols[i] {
			if math.Abs(h[c]-hs[j]) > 1e-12*math.Max(1, math.Abs(hs[j])) {
				t.Errorf("series %d: score of %s = %v, SVM %v", i+1, m.ParamNames()[c], h[c], hs[j])
			}
		}
		l := []float64{0}
		ki.AddLogEmission(l, y[i:i+1], x[i:i+1])
		wantW += l[0]
		ki.LogTransitions(l, x[i:i+1], prev[i:i+1])
		wantT += l[0]
		wantI += ki.LogInitial(x[i : i+1])
	}
	s1, s2 := (x[0]-th[0][0]*prev[0])/th[0][1], (x[1]-th[1][0]*prev[1])/th[1][1]
	if math.Abs(h[4]-s1*s2) > 1e-12 {
		t.Errorf("score of rho at 0: %v, want s1·s2 = %v", h[4], s1*s2)
	}
	if math.Abs(lw[0]-wantW) > 1e-12 || math.Abs(lt[0]-wantT) > 1e-12 || math.Abs(k.LogInitial(x)-wantI) > 1e-12 {
		t.Errorf("log densities %v %v %v, sums of the SVMs' %v %v %v", lw[0], lt[0], k.LogInitial(x), wantW, wantT, wantI)
	}
}

// TestMSVPriorLKJ checks the default prior on R: for D = 2, ρ ~
// Uniform(−1, 1); for D = 3, 4 the density on R is 1/vol with vol the
// volume of the correlation matrices (π²/2 and 32π²/27), i.e. LogPrior
// minus Constrain's log-Jacobian is the natural-scale log density; and by
// simulation from the prior's CPC laws, every R_ij has mean 0 and second
// moment 1/(D+1) (the LKJ(1) marginal (R_ij+1)/2 ~ Beta(D/2, D/2)).
func TestMSVPriorLKJ(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	vol := map[int]float64{2: 2, 3: math.Pi * math.Pi / 2, 4: 32 * math.Pi * math.Pi / 27}
	for _, d := range []int{2, 3, 4} {
		m := models.MSV{D: d}
		nc := d * (d - 1) / 2
		for rep := 0; rep < 5; rep++ {
			u := msvRandomU(rng, d)
			theta := make([]float64, len(u))
			logJ := m.Constrain(theta, u)
			want := -math.Log(vol[d])
			for i := 0; i < d; i++ {
				lp, _ := models.Beta{A: 5, B: 1.5, Lo: -1, Hi: 1}.LogDensity(theta[i])
				ls, _ := models.InvGammaSq{A: 2, B: 0.5}.LogDensity(theta[d+i])
				lt, _ := models.InvGammaSq{A: 2, B: 0.5}.LogDensity(theta[2*d+nc+i])
				want += lp + ls + lt
			}
			if got := m.LogPrior(nil, u) - logJ; math.Abs(got-want) > 1e-10*math.Max(1, math.Abs(want)) {
				t.Errorf("D = %d: log prior density on θ = %.12g, want %.12g", d, got, want)
			}
		}
		// Monte Carlo moments of R_ij under the prior.
		const n = 20000
		prior := models.DefaultMSVPrior(d)
		u := make([]float64, 3*d+nc)
		theta := make([]float64, len(u))
		s1, s2 := make([]float64, nc), make([]float64, nc)
		for it := 0; it < n; it++ {
			for c := 0; c < nc; c++ {
				b := prior.Marginals[2*d+c].(models.Beta)
				z := 2*(distuv.Beta{Alpha: b.A, Beta: b.B, Src: rng}).Rand() - 1
				u[2*d+c] = math.Atanh(z)
			}
			m.Constrain(theta, u)
			for c := 0; c < nc; c++ {
				v := theta[2*d+c]
				s1[c] += v
				s2[c] += v * v
			}
		}
		// Beta(D/2, D/2) on (−1, 1): E R² = 1/(D+1), E R⁴ = 3/((D+1)(D+3)).
		m2 := 1 / float64(d+1)
		m4 := 3 / float64((d+1)*(d+3))
		for c := 0; c < nc; c++ {
			z1 := s1[c] / n / math.Sqrt(m2/n)
			z2 := (s2[c]/n - m2) / math.Sqrt((m4-m2*m2)/n)
			if math.Abs(z1) > 5 || math.Abs(z2) > 5 {
				t.Errorf("D = %d, %s: mean %.4f (z = %.1f), mean square %.4f, want %.4f (z = %.1f)",
					d, m.ParamNames()[2*d+c], s1[c]/n, z1, s2[c]/n, m2, z2)
			}
		}
	}
}

// TestMSVInvalid: invalid D and parameters give *ssm.ParamError naming
// them, never a panic.
func TestMSVInvalid(t *testing.T) {
	isParam := func(what string, err error, name string) {
		t.Helper()
		var pe *ssm.ParamError
		switch {
		case err == nil:
			t.Errorf("%s: no error", what)
		case !errors.Is(err, ssm.ErrInvalidParam) || !errors.As(err, &pe):
			t.Errorf("%s: %v is not a *ssm.ParamError", what, err)
		case pe.Name != name:
			t.Errorf("%s: error names %q, want %q (%v)", what, pe.Name, name, err)
		}
	}
	for _, d := range []int{0, -1, -3} {
		m := models.MSV{D: d}
		_, err := m.Bind(nil)
		isParam(fmt.Sprintf("D = %d: Bind", d), err, "D")
		_, err = m.Params(nil, nil, nil, nil)
		isParam(fmt.Sprintf("D = %d: Params", d), err, "D")
		isParam(fmt.Sprintf("D = %d: Unconstrain", d), m.Unconstrain(nil, nil), "D")
		_, _, err = m.Simulate(10, nil, rand.New(rand.NewPCG(1, 1)))
		isParam(fmt.Sprintf("D = %d: Simulate", d), err, "D")
		_, err = m.StationaryCov(nil)
		isParam(fmt.Sprintf("D = %d: StationaryCov", d), err, "D")
		isParam(fmt.Sprintf("D = %d: Start", d), m.Start(nil, ssm.Dataset{}), "D")
		if m.Dims() != (ssm.Dims{}) || m.ParamNames() != nil || !math.IsInf(m.LogPrior(nil, nil), -1) || !math.IsNaN(m.Constrain(nil, nil)) {
			t.Errorf("D = %d: Dims %+v, ParamNames %v, LogPrior %v, Constrain %v", d, m.Dims(), m.ParamNames(), m.LogPrior(nil, nil), m.Constrain(nil, nil))
		}
	}
	m2, m3 := models.MSV{D: 2}, models.MSV{D: 3}
	for _, c := range []struct {
		m                    models.MSV
		phi, sigma, rho, tau []float64
		name                 string
	}{
		{m2, []float64{1, 0.5}, []float64{1, 1}, []float64{0}, []float64{1, 1}, "phi1"},
		{m2, []float64{0.5, -1.2}, []float64{1, 1}, []float64{0}, []float64{1, 1}, "phi2"},
		{m2, []float64{0.5, 0.5}, []float64{0, 1}, []float64{0}, []float64{1, 1}, "sigma1"},
		{m2, []float64{0.5, 0.5}, []float64{1, -2}, []float64{0}, []float64{1, 1}, "sigma2"},
		{m2, []float64{0.5, 0.5}, []float64{1, 1}, []float64{1}, []float64{1, 1}, "rho"},
		{m2, []float64{0.5, 0.5}, []float64{1, 1}, []float64{-1.5}, []float64{1, 1}, "rho"},
		{m2, []float64{0.5, 0.5}, []float64{1, 1}, []float64{math.NaN()}, []float64{1, 1}, "rho"},
		{m2, []float64{0.5, 0.5}, []float64{1, 1}, []float64{0}, []float64{1, 0}, "tau2"},
		{m2, []float64{0.5, 0.5}, []float64{math.Inf(1), 1}, []float64{0}, []float64{1, 1}, "sigma1"},
		// Each |R_ij| < 1 but R is not positive definite.
		{m3, []float64{0.5, 0.5, 0.5}, []float64{1, 1, 1}, []float64{0.9, 0.9, -0.9}, []float64{1, 1, 1}, "rho23"},
	} {
		_, err := c.m.Params(c.phi, c.sigma, c.rho, c.tau)
		isParam(fmt.Sprintf("Params(%v, %v, %v, %v)", c.phi, c.sigma, c.rho, c.tau), err, c.name)
	}
	// Bind at u whose parameters saturate onto the boundary or overflow.
	for _, c := range []struct {
		k    int
		v    float64
		name string
	}{{0, 40, "phi1"}, {1, math.NaN(), "phi2"}, {2, 800, "sigma1"}, {3, -800, "sigma2"}, {4, 40, "rho"}, {4, math.Inf(-1), "rho"}, {6, 800, "tau2"}} {
		u, _ := m2.Params([]float64{0.5, 0.5}, []float64{1, 1}, []float64{0.3}, []float64{1, 1})
		u[c.k] = c.v
		_, err := m2.Bind(u)
		isParam(fmt.Sprintf("Bind with u[%d] = %v", c.k, c.v), err, c.name)
	}
	// A Rebind that fails leaves the kernel as it was.
	u, _ := m2.Params([]float64{0.5, 0.5}, []float64{1, 1}, []float64{0.3}, []float64{1, 1})
	k, _ := m2.Bind(u)
	before := k.LogInitial([]float64{0.2, -0.1})
	bad := append([]float64(nil), u...)
	bad[4] = 50
	isParam("Rebind", k.(ssm.Rebinder).Rebind(bad), "rho")
	if after := k.LogInitial([]float64{0.2, -0.1}); after != before {
		t.Errorf("failed Rebind changed LogInitial from %v to %v", before, after)
	}
}

// TestMSVRebind: Rebind gives the kernel Bind gives, and allocates nothing
// after the first call; the bulk methods allocate nothing.
func TestMSVRebind(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	const d, n = 3, 50
	m := models.MSV{D: d}
	u1, u2 := msvRandomU(rng, d), msvRandomU(rng, d)
	k, _ := m.Bind(u1)
	k2, _ := m.Bind(u2)
	rb := k.(ssm.Rebinder)
	if err := rb.Rebind(u2); err != nil {
		t.Fatal(err)
	}
	x, prev := make([]float64, n*d), make([]float64, n*d)
	k2.SampleInitial(prev, rng)
	k2.SampleTransition(x, prev, rng)
	y := []float64{0.4, math.NaN(), -1}
	np := m.Dims().Param
	h1, h2 := make([]float64, n*np), make([]float64, n*np)
	k.AddScore(h1, 1, y, x, prev)
	k2.AddScore(h2, 1, y, x, prev)
	k.AddScore(h1, 1, y, x, nil)
	k2.AddScore(h2, 1, y, x, nil)
	for i := range h1 {
		if h1[i] != h2[i] {
			t.Fatalf("score after Rebind differs from Bind's at %d: %v, %v", i, h1[i], h2[i])
		}
	}
	if a, b := k.LogInitial(x[:d]), k2.LogInitial(x[:d]); a != b {
		t.Errorf("LogInitial after Rebind %v, Bind %v", a, b)
	}
	if raceEnabled {
		return
	}
	logw, dst := make([]float64, n), make([]float64, n)
	us := [][]float64{u1, u2}
	g := make([]float64, np)
	i := 0
	for name, f := range map[string]func(){
		"Rebind":           func() { i++; _ = rb.Rebind(us[i%2]) },
		"SampleInitial":    func() { k.SampleInitial(x, rng) },
		"SampleTransition": func() { k.SampleTransition(x, prev, rng) },
		"LogTransitions":   func() { k.LogTransitions(dst, x[:d], prev) },
		"AddLogEmission":   func() { k.AddLogEmission(logw, y, x) },
		"AddScore":         func() { k.AddScore(h1, 1, y, x, prev) },
		"AddScore initial": func() { k.AddScore(h1, 1, y, x, nil) },
		"LogPrior":         func() { m.LogPrior(g, u1) },
	} {
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}

// TestMSVDAXCAC fits nothing but runs the bivariate model on the bundled
// DAX and CAC 40 returns: the file's shape, Start's scales (the columns'
// sds), and a bootstrap particle filter with the score over the first 300
// days, which must give a finite log-likelihood and score.
func TestMSVDAXCAC(t *testing.T) {
	seq, err := ssm.ReadCSVFile("../testdata/dax_cac_returns.csv")
	if err != nil {
		t.Fatal(err)
	}
	if seq.Obs != 2 || seq.Len() != 1859 {
		t.Fatalf("dax_cac_returns.csv: %d×%d, want 1859×2", seq.Len(), seq.Obs)
	}
	m := models.MSV{D: 2}
	u := make([]float64, 7)
	if err := m.Start(u, ssm.Dataset{Sequences: []ssm.Sequence{seq}}); err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, 7)
	m.Constrain(theta, u)
	for i, want := range []float64{1.030084, 1.103088} {
		if got := theta[5+i]; math.Abs(got-want) > 1e-6 {
			t.Errorf("Start: tau%d = %.7f, want the column's sd %.6f", i+1, got, want)
		}
	}
	// The shocks of the two volatilities are likely correlated: start the
	// filter at ρ = 0.5.
	u[4] = math.Atanh(0.5)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pf.New(pf.Settings{N: 1000})
	if err != nil {
		t.Fatal(err)
	}
	score := make([]float64, 7)
	w := ssm.Window{Start: 0, End: 300, KeepStart: 0, KeepEnd: 300}
	res, err := f.Run(context.Background(), k, m.Dims(), seq, w, pf.Score(k, m.Dims()), score, rand.New(rand.NewPCG(53, 54)))
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(res.LogLik) || math.IsInf(res.LogLik, 0) {
		t.Errorf("log-likelihood %v", res.LogLik)
	}
	for i, v := range score {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("score of %s: %v", m.ParamNames()[i], v)
		}
	}
	t.Logf("DAX/CAC 40, 300 days, N = 1000: log-likelihood %.2f, score %.2f", res.LogLik, score)
}

// BenchmarkMSVKernel times the bulk methods on N = 1000 particles for D = 2
// and 3, and one bootstrap step per particle (transition, weight, score);
// ns/particle is the per-particle step cost.
func BenchmarkMSVKernel(b *testing.B) {
	const n = 1000
	for _, d := range []int{2, 3} {
		m := models.MSV{D: d}
		u := msvRandomU(rand.New(rand.NewPCG(55, uint64(d))), d)
		k, err := m.Bind(u)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		np := m.Dims().Param
		x, prev := make([]float64, n*d), make([]float64, n*d)
		logw, dst, h := make([]float64, n), make([]float64, n), make([]float64, n*np)
		k.SampleInitial(prev, rng)
		k.SampleTransition(x, prev, rng)
		y := make([]float64, d)
		for i := range y {
			y[i] = 0.3 * float64(i+1)
		}
		for _, c := range []struct {
			name string
			f    func()
		}{
			{"SampleTransition", func() { k.SampleTransition(x, prev, rng) }},
			{"AddLogEmission", func() { k.AddLogEmission(logw, y, x) }},
			{"AddScore", func() { k.AddScore(h, 1, y, x, prev) }},
			{"LogTransitions", func() { k.LogTransitions(dst, x[:d], prev) }},
			{"Step", func() {
				k.SampleTransition(x, prev, rng)
				k.AddLogEmission(logw, y, x)
				k.AddScore(h, 1, y, x, prev)
			}},
		} {
			b.Run(fmt.Sprintf("D=%d/%s", d, c.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					c.f()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/particle")
			})
		}
	}
}

// TestLaplaceCapabilities checks MSV's and LGSSMd's ssm.LinearGaussian
// and ssm.EmissionCurvature against their own densities and finite
// differences (ssmtest.CheckLaplace) at random parameters.
func TestLaplaceCapabilities(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, d := range []int{1, 2, 3, 4} {
		m := models.MSV{D: d}
		for range 3 {
			if err := ssmtest.CheckLaplace(m, msvRandomU(rng, d), rng); err != nil {
				t.Errorf("MSV{D: %d}: %v", d, err)
			}
		}
	}
	lg := models.LGSSMd{D: 2}
	u, err := lg.Params([]float64{0.8, 0.1, -0.2, 0.6}, []float64{0.5, 0.4}, []float64{0.3, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if err := ssmtest.CheckLaplace(lg, u, rng); err != nil {
		t.Errorf("LGSSMd{D: 2}: %v", err)
	}
	if err := ssmtest.CheckLaplace(models.SVM{}, []float64{2, -1, 0}, rng); err == nil {
		t.Error("SVM (no Laplace capabilities): want an error")
	}
}
