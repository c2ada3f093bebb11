package main

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// garchSim simulates T observations from models.GARCH at the natural
// parameters th.
func garchSim(t *testing.T, th [4]float64, T int, seed uint64) ([]float64, []float64) {
	t.Helper()
	m := models.GARCH{}
	u, err := m.Params(th[0], th[1], th[2], th[3])
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := m.Simulate(T, u, rand.New(rand.NewPCG(seed, 0x6a2c)))
	if err != nil {
		t.Fatal(err)
	}
	return seq.Y, u
}

// garchTestPoints are (μ, φ, λ, τ): near the DAX posterior mode, and the
// paper's simulation point α = 0.1, β = 0.8, γ = 0.05, τ = 0.3 (small
// noise, so a narrower filter for σ²).
var garchTestPoints = [][4]float64{{0.46, 0.936, 0.53, 0.72}, {0.1 / 0.15, 0.85, 0.8 / 0.85, 0.3}}

// TestGARCHGridQuadrature compares the grid log-likelihood of two
// observations with brute-force two-dimensional quadrature of
//
//	p(y_1, y_2) = ∫∫ N(x_0; 0, μ) N(x_1; 0, σ_1²) N(y_1; x_1, τ²)
//	              N(y_2; 0, σ_2² + τ²) dx_1 dx_0,
//
// σ_1² = α + βx_0² + γμ, σ_2² = α + βx_1² + γσ_1² (Simpson's rule over
// ±12 sds in x_0 and x_1). The grid value at G = 400 must be within the
// grid's own error estimate |ℓ(400) − ℓ(200)| (for a second-order error
// the error of ℓ(400) is about a third of it) plus 10⁻⁷.
func TestGARCHGridQuadrature(t *testing.T) {
	for _, th := range garchTestPoints {
		mu, phi, lam, tau := th[0], th[1], th[2], th[3]
		alpha, beta, gamma := mu*(1-phi), phi*lam, phi*(1-lam)
		t2 := tau * tau
		norm := func(x, v float64) float64 { return math.Exp(-0.5*x*x/v) / math.Sqrt(2*math.Pi*v) }
		simpson := func(a, b float64, n int, f func(float64) float64) float64 {
			h := (b - a) / float64(n)
			s := f(a) + f(b)
			for i := 1; i < n; i++ {
				s += float64(2+2*(i%2)) * f(a+float64(i)*h)
			}
			return s * h / 3
		}
		for _, y := range [][]float64{{0.3, -1.1}, {2.5, 0.2}} {
			sd0 := math.Sqrt(mu)
			p := simpson(-12*sd0, 12*sd0, 2000, func(x0 float64) float64 {
				s1 := alpha + beta*x0*x0 + gamma*mu
				// x_1 | σ_1², y_1 is N(f y_1, f τ²): integrate over ±12 sds.
				f := s1 / (s1 + t2)
				m, sd := f*y[0], math.Sqrt(f*t2)
				inner := simpson(m-12*sd, m+12*sd, 2000, func(x1 float64) float64 {
					s2 := alpha + beta*x1*x1 + gamma*s1
					return norm(x1-m, sd*sd) * norm(y[1], s2+t2)
				})
				return norm(x0, mu) * norm(y[0], s1+t2) * inner
			})
			want := math.Log(p)
			l200 := garchGridLogLik(y, mu, phi, lam, tau, 200)
			l400 := garchGridLogLik(y, mu, phi, lam, tau, 400)
			t.Logf("θ %v, y %v: quadrature %.8f, grid G=200 %.8f, G=400 %.8f", th, y, want, l200, l400)
			if math.Abs(l400-want) > math.Abs(l400-l200)+1e-7 {
				t.Errorf("θ %v, y %v: grid %.8f (G = 200: %.8f), quadrature %.8f", th, y, l400, l200, want)
			}
		}
	}
}

// TestGARCHGridPF compares the grid log-likelihood (Richardson from G = 100
// and 200) of 200 simulated observations with the mean of independent
// fully adapted particle filter estimates (garchLogLik, N = 4000, itself
// checked against the library's pf.Filter by TestGARCHLogLikPF). The
// estimates are unbiased for p(y), not for log p(y): their mean is below
// log p(y) by about var/2, which is added back (a second-order correction,
// with var the sample variance of the estimates; it is below the standard
// error here). They must agree within 4 standard errors plus the grid's
// error estimate |ℓ(200) − ℓ(100)|/3.
func TestGARCHGridPF(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	for k, th := range garchTestPoints {
		y, u := garchSim(t, th, 200, uint64(20+k))
		l100 := garchGridLogLikU(y, u, 100)
		l200 := garchGridLogLikU(y, u, 200)
		grid := (4*l200 - l100) / 3
		const reps, n = 60, 4000
		var s, ss float64
		for r := range reps {
			v := garchLogLik(y, u, n, rand.New(rand.NewPCG(77, uint64(r))))
			s += v
			ss += v * v
		}
		mean := s / reps
		vr := (ss/reps - mean*mean) * reps / (reps - 1)
		se := math.Sqrt(vr / reps)
		pf := mean + vr/2
		tol := 4*se + math.Abs(l200-l100)/3
		t.Logf("θ %v: grid %.4f (G=100 %.4f, G=200 %.4f), particle filter %.4f ± %.4f (sd %.3f, N = %d, %d runs), z %.2f",
			th, grid, l100, l200, pf, se, math.Sqrt(vr), n, reps, (grid-pf)/se)
		if math.Abs(grid-pf) > tol {
			t.Errorf("θ %v: grid %.4f, particle filter %.4f ± %.4f (tolerance %.4f)", th, grid, pf, se, tol)
		}
	}
}

// TestGARCHGridConvergence checks that the grid log-likelihood of 500
// simulated observations converges in G at second order: the changes
// ℓ(2G) − ℓ(G) for G = 50, 100, 200 keep their sign and shrink by a
// factor of at least 3 per doubling (4 for an exact second-order error),
// and the Richardson extrapolations from (100, 200) and (200, 400) agree
// to within a tenth of the last change.
func TestGARCHGridConvergence(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	for k, th := range garchTestPoints {
		y, u := garchSim(t, th, 500, uint64(40+k))
		var l [4]float64
		for i, g := range []int{50, 100, 200, 400} {
			l[i] = garchGridLogLikU(y, u, g)
		}
		d := [3]float64{l[1] - l[0], l[2] - l[1], l[3] - l[2]}
		r1, r2 := (4*l[2]-l[1])/3, (4*l[3]-l[2])/3
		t.Logf("θ %v: G = 50, 100, 200, 400: %.5f %.5f %.5f %.5f; changes %.5f %.5f %.5f; Richardson %.5f %.5f", th, l[0], l[1], l[2], l[3], d[0], d[1], d[2], r1, r2)
		for i := 1; i < 3; i++ {
			if d[i]*d[i-1] <= 0 || math.Abs(d[i]) > math.Abs(d[i-1])/3 {
				t.Errorf("θ %v: changes %v are not second order", th, d)
			}
		}
		if math.Abs(r2-r1) > math.Abs(d[2])/10 {
			t.Errorf("θ %v: Richardson (100, 200) %.5f and (200, 400) %.5f differ by more than %.5f", th, r1, r2, math.Abs(d[2])/10)
		}
	}
}

// TestGARCHGridTails checks the two truncations of the grid filter on the
// DAX returns, whose extreme days make the far tails of the σ² filter
// matter (cutting at 10⁻¹⁰ instead of 10⁻¹⁴ moves the log-likelihood by
// about 0.1): with both made a million times smaller the log-likelihood
// at G = 100 must move by less than 10⁻³, a tenth of the Richardson
// residual the reference tolerates, at the posterior mode and at a corner
// of the posterior (the 5% or 95% quantile of each parameter). (Far outside
// the posterior, at the paper's point with τ = 0.3, it moves by 0.004.)
func TestGARCHGridTails(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "..", "..", "testdata", "dax_returns.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range [][4]float64{{0.896, 0.989, 0.261, 0.637}, {1.72, 0.979, 0.356, 0.580}} {
		def := garchGridLogLik(seq.Y, th[0], th[1], th[2], th[3], 100)
		tight := garchGrid{G: 100, SrcTiny: gridTiny * 1e-6, RowTail: 1e-23}.logLik(seq.Y, th[0], th[1], th[2], th[3])
		t.Logf("θ %v: %.6f, tighter truncation %.6f", th, def, tight)
		if math.Abs(def-tight) > 1e-3 {
			t.Errorf("θ %v: log-likelihood %.6f, with tighter truncation %.6f", th, def, tight)
		}
	}
}
