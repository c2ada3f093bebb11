package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// testPoints are parameter values (φ, σ, τ) covering weak and strong
// persistence and small and large noise.
var testPoints = [][3]float64{{0.95, 0.3, 0.5}, {-0.5, 1.2, 2}, {0.2, 0.05, 0.1}}

// TestScore compares the summed AddScore along simulated paths, with and
// without missing observations, against finite differences of the
// complete-data log-likelihood (ssmtest.CheckScore), checks the transform
// and the prior gradient, and checks the samplers against the log
// densities (ssmtest.CheckSampler: score, information and Stein moments of
// 4000 draws of each within 5 Monte Carlo standard errors of zero).
func TestScore(t *testing.T) {
	for _, nu := range []float64{5, 2.5} {
		m := NewStudentT(nu)
		for i, th := range testPoints {
			u, err := m.FromNatural(th[0], th[1], th[2])
			if err != nil {
				t.Fatal(err)
			}
			rel, err := ssmtest.CheckScore(m, u, 50, rand.New(rand.NewPCG(uint64(i), 1)))
			if err != nil {
				t.Fatal(err)
			}
			if rel > ssmtest.ScoreTol {
				t.Errorf("nu %v, theta %v: score relative error %.2g > %.0g", nu, th, rel, ssmtest.ScoreTol)
			}
			if err := ssmtest.CheckTransform(m, u); err != nil {
				t.Errorf("theta %v: %v", th, err)
			}
			if err := ssmtest.CheckPrior(m, u); err != nil {
				t.Errorf("theta %v: %v", th, err)
			}
			if err := ssmtest.CheckSampler(m, u, 4000, rand.New(rand.NewPCG(uint64(i), 2))); err != nil {
				t.Errorf("nu %v, theta %v: %v", nu, th, err)
			}
		}
	}
}

// TestEmissionDensity checks that the emission density integrates to one
// and that SampleEmission draws from it: the fraction of draws with
// |y − x| < τ must match the integral of the density over that interval
// within 4 binomial standard errors.
func TestEmissionDensity(t *testing.T) {
	m := NewStudentT(5)
	u, _ := m.FromNatural(0.5, 1, 0.7)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{0.3}
	density := func(y float64) float64 {
		lw := []float64{0}
		k.AddLogEmission(lw, []float64{y}, x)
		return math.Exp(lw[0])
	}
	// Simpson's rule on [x−L, x+L]; the t_5 tail beyond 400τ holds less
	// than 1e-11 of the mass.
	simpson := func(a, b float64, n int) float64 {
		h := (b - a) / float64(n)
		s := density(a) + density(b)
		for i := 1; i < n; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			s += w * density(a+float64(i)*h)
		}
		return s * h / 3
	}
	if total := simpson(x[0]-400*0.7, x[0]+400*0.7, 400000); math.Abs(total-1) > 1e-8 {
		t.Errorf("emission density integrates to %v", total)
	}
	p := simpson(x[0]-0.7, x[0]+0.7, 2000)
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 100000
	hits := 0
	y := []float64{0}
	for range n {
		k.SampleEmission(y, x, rng)
		if math.Abs(y[0]-x[0]) < 0.7 {
			hits++
		}
	}
	se := math.Sqrt(p * (1 - p) / n)
	if got := float64(hits) / n; math.Abs(got-p) > 4*se {
		t.Errorf("Pr(|y−x| < τ): sampled %.4f, density %.4f (4 se = %.4f)", got, p, 4*se)
	}
}

// TestBadParams checks that invalid natural parameters are refused with a
// *ssm.ParamError naming them.
func TestBadParams(t *testing.T) {
	m := NewStudentT(5)
	for _, c := range []struct {
		th   [3]float64
		name string
	}{{[3]float64{1, 1, 1}, "phi"}, {[3]float64{0.5, 0, 1}, "sigma"}, {[3]float64{0.5, 1, math.NaN()}, "tau"}} {
		_, err := m.FromNatural(c.th[0], c.th[1], c.th[2])
		if err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%v: error %v, want one naming %s", c.th, err, c.name)
		}
	}
	if _, err := NewStudentT(-1).Bind([]float64{0, 0, 0}); err == nil {
		t.Error("Bind accepted nu = -1")
	}
}

// TestRun fits a short simulated series and checks the printed table and
// the files written.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit (125 s under the race detector): long test")
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-T", "500", "-N", "100", "-iters", "200", "-adapt", "60", "-chains", "2", "-q"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for _, want := range []string{"phi", "sigma", "tau", "R-hat", "true values inside"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

// buggy wraps the model with a planted sampler bug: the densities and
// score are right (ssmtest.CheckScore passes) but SampleEmission is not.
type buggy struct {
	StudentT
	normal bool // Gaussian noise instead of t_ν; otherwise 3·y
}

type buggyKernel struct {
	*kernel
	normal bool
}

func (m buggy) Bind(u []float64) (ssm.Kernel, error) {
	k, err := m.StudentT.Bind(u)
	if err != nil {
		return nil, err
	}
	return buggyKernel{k.(*kernel), m.normal}, nil
}

func (k buggyKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	if k.normal {
		y[0] = x[0] + k.tau*rng.NormFloat64()
		return
	}
	k.kernel.SampleEmission(y, x, rng)
	y[0] *= 3
}

// TestSamplerBugsCaught: ssmtest.CheckSampler fails models whose
// SampleEmission returns 3·y or draws Gaussian instead of t_5 noise,
// which the score, transform and prior checks pass.
func TestSamplerBugsCaught(t *testing.T) {
	u, _ := NewStudentT(5).FromNatural(0.95, 0.3, 0.5)
	for _, normal := range []bool{false, true} {
		m := buggy{NewStudentT(5), normal}
		if rel, err := ssmtest.CheckScore(m, u, 50, rand.New(rand.NewPCG(1, 1))); err != nil || rel > ssmtest.ScoreTol {
			t.Errorf("normal = %v: score check %v, %v", normal, rel, err)
		}
		err := ssmtest.CheckSampler(m, u, 4000, rand.New(rand.NewPCG(2, 2)))
		if !errors.Is(err, ssmtest.ErrSampler) {
			t.Errorf("normal = %v: CheckSampler gives %v, want ssmtest.ErrSampler", normal, err)
		} else {
			t.Logf("normal = %v caught: %v", normal, err)
		}
	}
}
