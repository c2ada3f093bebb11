package models_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// lgxData simulates T observations of the scalar LGSSM at (φ, σ, τ) and
// sets a fraction pMiss of them missing.
func lgxData(t testing.TB, rng *rand.Rand, phi, sigma, tau float64, T int, pMiss float64) ([]float64, ssm.Sequence) {
	t.Helper()
	u, err := models.LGSSM{}.Params(phi, sigma, tau)
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := models.LGSSM{}.Simulate(T, u, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i := range y.Y {
		if rng.Float64() < pMiss {
			y.Y[i] = math.NaN()
		}
	}
	return u, y
}

func TestLGSSMExactKalmanForm(t *testing.T) {
	u, _ := models.LGSSM{}.Params(0.9, 0.7, 1.2)
	k, err := models.LGSSM{}.Kalman(u)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.9, 0.49, 1.44, 0.49 / (1 - 0.81)}
	for i, got := range []float64{k.A[0], k.Q[0], k.R[0], k.P0[0]} {
		if math.Abs(got-want[i]) > 1e-14 {
			t.Errorf("Kalman form entry %d: %v, want %v", i, got, want[i])
		}
	}
}

func TestLGSSMExactScoreFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := [][3]float64{{0.9, 0.7, 1}, {-0.5, 1.3, 0.4}, {0.98, 0.3, 2}}
	worst := 0.0
	for _, c := range cases {
		for _, pMiss := range []float64{0, 0.3} {
			u, y := lgxData(t, rng, c[0], c[1], c[2], 1000, pMiss)
			for _, span := range [][2]int{{0, 1000}, {300, 700}} {
				e := kfCheckFD(t, models.LGSSM{}, u, y, span[0], span[1], 1e-3)
				worst = math.Max(worst, e)
			}
		}
	}
	t.Logf("scalar LGSSM, T = 1000: max relative error of the exact score vs FD: %.3g", worst)
}

func TestLGSSMExactBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	worst := 0.0
	for _, c := range [][3]float64{{0.9, 0.7, 1}, {-0.6, 0.5, 1.5}} {
		u, y := lgxData(t, rng, c[0], c[1], c[2], 40, 0.2)
		worst = math.Max(worst, kfCheckBrute(t, models.LGSSM{}, u, y, rng))
	}
	t.Logf("scalar LGSSM: max relative error of the windowed statistic vs dense brute force: %.3g", worst)
}

func TestLGSSMExactSumOverTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	u, y := lgxData(t, rng, 0.9, 0.7, 1, 50, 0.1)
	e := kfCheckSumOverTimes(t, models.LGSSM{}, u, y)
	t.Logf("scalar LGSSM: sum over t of single-time statistics vs exact score: %.3g", e)
}

func TestLGSSMExactErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	u, y := lgxData(t, rng, 0.9, 0.7, 1, 20, 0)
	m := models.LGSSM{}
	var pe *ssm.ParamError
	if _, err := m.ExactScore(nil, []float64{math.NaN(), 0, 0}, y, ssm.Full(20)); !errors.As(err, &pe) || pe.Name != "phi" {
		t.Errorf("NaN u: got %v, want a *ssm.ParamError naming phi", err)
	}
	if _, err := m.ExactScore(nil, []float64{0, 1000, 0}, y, ssm.Full(20)); !errors.As(err, &pe) {
		t.Errorf("overflowing sigma: got %v, want a *ssm.ParamError", err)
	}
	if _, err := m.ExactScore(nil, u, y, ssm.Window{Start: 5, End: 25, KeepStart: 5, KeepEnd: 25}); !errors.Is(err, ssm.ErrWindow) {
		t.Errorf("window past the end: got %v, want ErrWindow", err)
	}
	if _, err := m.ExactScore(nil, u, y, ssm.Window{Start: 0, End: 20, KeepStart: 0, KeepEnd: 5, Weights: []float64{1}}); !errors.Is(err, ssm.ErrWindow) {
		t.Errorf("wrong number of weights: got %v, want ErrWindow", err)
	}
	miss := ssm.Sequence{Obs: 1, Y: append([]float64(nil), y.Y...)}
	for i := 5; i < 10; i++ {
		miss.Y[i] = math.NaN()
	}
	g := make([]float64, 3)
	ll, err := m.ExactScore(g, u, miss, ssm.Window{Start: 5, End: 10, KeepStart: 5, KeepEnd: 10})
	if err != nil || ll != 0 {
		t.Errorf("all-missing window: log-lik %v, err %v; want 0, nil", ll, err)
	}
	// Without data the smoothed states have the stationary law, where the
	// expected transition score is 0 (a score has mean zero).
	for i, v := range g {
		if math.Abs(v) > 1e-12 {
			t.Errorf("all-missing window: gradient[%d] = %v, want 0", i, v)
		}
	}
}

func ExampleLGSSM_ExactScore() {
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1) // the paper's synthetic-data parameters
	y := ssm.Sequence{Obs: 1, Y: []float64{0.3, -0.2, 1.1, math.NaN(), 0.8, 1.9, 1.2, 0.4, -0.7, -1.0, -0.3, 0.5}}
	// Full-data log-likelihood and score d/du log p(y_1:12).
	grad := make([]float64, 3)
	ll, err := m.ExactScore(grad, u, y, ssm.Full(y.Len()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("log p(y) = %.4f, score = [%.4f %.4f %.4f]\n", ll, grad[0], grad[1], grad[2])
	// Buffered window: filter rows [2, 10) from the stationary law at row 2,
	// keep the statistic on rows [4, 8) (S = 4 with a buffer of 2 each side).
	g := make([]float64, 3)
	ll, _ = m.ExactScore(g, u, y, ssm.Window{Start: 2, End: 10, KeepStart: 4, KeepEnd: 8})
	fmt.Printf("log p(y_3:10) = %.4f, statistic = [%.4f %.4f %.4f]\n", ll, g[0], g[1], g[2])
	// Smoothed mean of the state observed at row 3 (missing).
	sm, _ := m.Smooth(u, y)
	fmt.Printf("E[x | y] at the missing row: %.4f\n", sm.MeanAt(4)[0])
	// Output:
	// log p(y) = -15.9703, score = [-1.3497 -2.5987 -4.5277]
	// log p(y_3:10) = -10.5616, statistic = [-0.3475 -0.7107 -1.7348]
	// E[x | y] at the missing row: 0.7789
}

func BenchmarkLGSSMExactScore(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1)
	_, y, _ := m.Simulate(1000, u, rng)
	grad := make([]float64, 3)
	for _, bc := range []struct {
		name string
		w    ssm.Window
	}{
		{"window=60", ssm.Window{Start: 100, End: 160, KeepStart: 110, KeepEnd: 150}},
		{"T=1000", ssm.Full(1000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.ExactScore(grad, u, y, bc.w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
