package gradient_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The expectation of g^PF(S, B, N) over random subsequences, computed by
// enumerating every subsequence (S = 16, T = 256) with two independent
// particle filters per subsequence (their difference gives the Monte Carlo
// SE), against the exact full-data score: without a buffer the estimator is
// biased (the paper's Figure 2), and agrees with the exact no-buffer
// expectation from the Kalman smoother; with B = 8 it is not
// distinguishable from the full score at N = 10⁴.
func TestBiasOverSubsequences(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	m, u, y := lgssmSetup(t, 256)
	want := fdScore(t, m, u, y)
	for _, B := range []int{0, 8} {
		q := gradient.Subsequencer{S: 16, B: B}
		e := newEst(t, m, y, gradient.Settings{Subsequencer: q, PF: pf.Settings{N: 10000}})
		rng := rand.New(rand.NewPCG(9, uint64(B)))
		ex := newEst(t, m, y, gradient.Settings{Subsequencer: q, Exact: true})
		mean, v, exact := make([]float64, 3), make([]float64, 3), make([]float64, 3)
		a, b, k := make([]float64, 3), make([]float64, 3), make([]float64, 3)
		q.Enumerate(y.Len(), func(w ssm.Window, p float64) {
			if _, err := ex.Fixed(ctx, k, u, 0, w, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Fixed(ctx, a, u, 0, w, rng); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Fixed(ctx, b, u, 0, w, rng); err != nil {
				t.Fatal(err)
			}
			for j := range a {
				exact[j] += p * k[j]
				mean[j] += p * (a[j] + b[j]) / 2
				// Var of the pair mean is Var/2, estimated by (a−b)²/4.
				v[j] += p * p * (a[j] - b[j]) * (a[j] - b[j]) / 4
			}
		})
		maxZ := 0.0
		for j := range mean {
			se := math.Sqrt(v[j])
			z := (mean[j] - want[j]) / se
			maxZ = math.Max(maxZ, math.Abs(z))
			t.Logf("B=%d coordinate %d: E[g^PF] = %.4f ± %.4f, exact E[ĝ(S,B)] = %.4f, full score %.4f, z = %.1f", B, j, mean[j], se, exact[j], want[j], z)
			if B == 8 && math.Abs(z) > 4 {
				t.Errorf("B=8 coordinate %d: bias %.4f is %.1f SE from 0", j, mean[j]-want[j], z)
			}
			// The particle estimate of the expectation matches the exact
			// (N = ∞) one for the same B.
			if zk := (mean[j] - exact[j]) / se; math.Abs(zk) > 4 {
				t.Errorf("B=%d coordinate %d: E[g^PF] = %.4f vs Kalman E[ĝ(S,B)] = %.4f (z = %.1f)", B, j, mean[j], exact[j], zk)
			}
		}
		if B == 0 && maxZ < 6 {
			t.Errorf("B=0: largest bias is only %.1f SE from 0; the no-buffer estimator should be clearly biased", maxZ)
		}
	}
}

// modelCase is a nonlinear model with the paper's parameters and a fixed
// subsequence window (S = 40, B = 10).
type modelCase struct {
	name string
	m    ssm.Model
	u    []float64
	y    ssm.Sequence
	w    ssm.Window
}

func nonlinearCases(t testing.TB) []modelCase {
	t.Helper()
	rng := rand.New(rand.NewPCG(61, 1))
	sv := models.SVM{}
	us, _ := sv.Params(0.9, 0.5, 0.5)
	_, ys, err := sv.Simulate(200, us, rng)
	if err != nil {
		t.Fatal(err)
	}
	ga := models.GARCH{}
	ug, err := ga.FromABG(0.1, 0.8, 0.05, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	_, yg, err := ga.Simulate(200, ug, rng)
	if err != nil {
		t.Fatal(err)
	}
	w := ssm.Window{Start: 70, End: 130, KeepStart: 80, KeepEnd: 120}
	return []modelCase{{"svm", sv, us, ys, w}, {"garch", ga, ug, yg, w}}
}

func replicate(t testing.TB, c modelCase, s pf.Settings, reps int, seed uint64) [][]float64 {
	t.Helper()
	e := newEst(t, c.m, c.y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: s})
	rng := rand.New(rand.NewPCG(seed, uint64(s.N)))
	var out [][]float64
	for r := 0; r < reps; r++ {
		g := make([]float64, len(c.u))
		if _, err := e.Fixed(ctx, g, c.u, 0, c.w, rng); err != nil {
			t.Fatal(err)
		}
		out = append(out, g)
	}
	return out
}

// SVM: the ancestral (Algorithm 1), forward-only O(N²) and PaRIS
// accumulators estimate the same smoothed statistic: their means agree
// within 4 combined Monte Carlo SEs. GARCH's transition is degenerate
// (σ_t² is a deterministic function of the past), so backward smoothers
// are refused with pf.ErrNoTransitionDensity.
func TestSmoothersAgreeNonlinear(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	for _, c := range nonlinearCases(t) {
		anc := replicate(t, c, pf.Settings{N: 2000}, 20, 1)
		ma, sa := meanSE(anc)
		for _, alt := range []pf.Settings{{N: 300, Smoother: pf.ForwardOnly}, {N: 1000, Smoother: pf.PaRIS}} {
			if c.name == "garch" {
				e := newEst(t, c.m, c.y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: alt})
				g := make([]float64, len(c.u))
				if _, err := e.Fixed(ctx, g, c.u, 0, c.w, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, pf.ErrNoTransitionDensity) {
					t.Errorf("garch %v: err = %v, want pf.ErrNoTransitionDensity", alt.Smoother, err)
				}
				continue
			}
			mb, sb := meanSE(replicate(t, c, alt, 20, 2))
			for j := range ma {
				if z := (ma[j] - mb[j]) / math.Hypot(sa[j], sb[j]); math.Abs(z) > 4 {
					t.Errorf("%s %v coordinate %d: %.4f ± %.4f vs ancestral %.4f ± %.4f (z = %.1f)", c.name, alt.Smoother, j, mb[j], sb[j], ma[j], sa[j], z)
				}
			}
			t.Logf("%s %v: %.3f ± %.3f; ancestral %.3f ± %.3f", c.name, alt.Smoother, mb, sb, ma, sa)
		}
	}
}

// Errors against an N = 10⁶ reference shrink like N^(−1/2): the root mean
// squared error ratio between N and 10N is √10 within a factor 2.
func TestParticleErrorRate(t *testing.T) {
	if testing.Short() {
		t.Skip("long statistical test")
	}
	for _, c := range nonlinearCases(t) {
		ref := replicate(t, c, pf.Settings{N: 1000000}, 1, 3)[0]
		var rmse []float64
		ns := []int{100, 1000, 10000}
		for _, n := range ns {
			reps := replicate(t, c, pf.Settings{N: n}, 16, 4)
			s := 0.0
			for _, g := range reps {
				for j := range g {
					s += (g[j] - ref[j]) * (g[j] - ref[j])
				}
			}
			rmse = append(rmse, math.Sqrt(s/float64(len(reps))))
		}
		msg := fmt.Sprintf("%s: RMSE at N = %v: %.4g", c.name, ns, rmse)
		t.Log(msg)
		for i := 1; i < len(rmse); i++ {
			r := rmse[i-1] / rmse[i]
			if r < math.Sqrt(10)/2 || r > 2*math.Sqrt(10) {
				t.Errorf("%s: error ratio %.2f between N = %d and %d, want √10 = 3.16 within a factor 2", msg, r, ns[i-1], ns[i])
			}
		}
	}
}
