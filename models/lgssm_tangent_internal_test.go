package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// smootherScore is the statistic of ExactScore computed the other way: the
// Kalman filter and RTS smoother over the window, the weighted expected
// complete-data score in the natural parameters (kalmanWork.expectedScore),
// mapped to u by the chain rule.
func smootherScore(u []float64, seq ssm.Sequence, w ssm.Window) (float64, []float64, error) {
	ar, err := newScalarAR1("LGSSM", u)
	if err != nil {
		return 0, nil, err
	}
	p0 := ar.s2 / ar.dPhi
	par := [4]float64{ar.phi, ar.s2, ar.t2, p0}
	k := Kalman{D: 1, A: par[0:1], Q: par[1:2], R: par[2:3], P0: par[3:4]}
	ws := newKalmanWork(1, w.End-w.Start, true)
	var gb [5]float64
	g := KalmanGrad{A: gb[0:1], Q: gb[1:2], R: gb[2:3], M0: gb[3:4], P0: gb[4:5]}
	ll, err := ws.expectedScore(&k, &g, seq, w)
	if err != nil {
		return 0, nil, err
	}
	return ll, []float64{
		g.A[0]*ar.dPhi + g.P0[0]*2*ar.phi*p0,
		g.Q[0]*2*ar.s2 + g.P0[0]*2*p0,
		g.R[0] * 2 * ar.t2,
	}, nil
}

// TestTangentScoreVsSmoother: the forward-sensitivity score
// (lgssmTangentScore) equals the RTS smoother's weighted statistic — two
// different algorithms for Σ_t w_t E[∇ log f_t | y_window] — to 1e-9
// relative, on windows with buffers on both sides, at the sequence start
// (initial term) and end, random weights, 10% missing observations, and
// parameters from φ = −0.5 to 0.995.
func TestTangentScoreVsSmoother(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	T := 400
	y := make([]float64, T)
	x := 0.0
	for i := range y {
		x = 0.95*x + 0.5*rng.NormFloat64()
		y[i] = x + rng.NormFloat64()
		if rng.Float64() < 0.1 {
			y[i] = math.NaN()
		}
	}
	seq := ssm.Sequence{Obs: 1, Y: y}
	weights := func(n int) []float64 {
		ws := make([]float64, n)
		for i := range ws {
			ws[i] = 0.5 + rng.Float64()
		}
		return ws
	}
	windows := []ssm.Window{
		ssm.Full(T),
		{Start: 0, End: 120, KeepStart: 0, KeepEnd: 80, Weights: weights(80)},
		{Start: 100, End: 220, KeepStart: 140, KeepEnd: 180, Weights: weights(40)},
		{Start: 300, End: 400, KeepStart: 340, KeepEnd: 400},
		{Start: 10, End: 60, KeepStart: 10, KeepEnd: 60},
	}
	for _, th := range [][3]float64{{0.9, 0.7, 1}, {0.995, 0.1, 1.2}, {-0.5, 2, 0.3}, {0.3, 1, 0.05}} {
		u, err := LGSSM{}.Params(th[0], th[1], th[2])
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range windows {
			got := make([]float64, 3)
			llT, err := LGSSM{}.ExactScore(got, u, seq, w)
			if err != nil {
				t.Fatal(err)
			}
			llS, want, err := smootherScore(u, seq, w)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(llT-llS) > 1e-9*math.Abs(llS) {
				t.Errorf("θ %v window %+v: log-likelihood %.12g, smoother's filter %.12g", th, w, llT, llS)
			}
			for j := range got {
				if math.Abs(got[j]-want[j]) > 1e-9*(1+math.Abs(want[j])) {
					t.Errorf("θ %v window [%d,%d) keep [%d,%d): score[%d] %.12g (tangent), %.12g (smoother)", th, w.Start, w.End, w.KeepStart, w.KeepEnd, j, got[j], want[j])
				}
			}
		}
	}
}

// BenchmarkLGSSMExactScoreFull: one full-data score of 10⁵ observations (the
// forward sensitivities, no per-step storage).
func BenchmarkLGSSMExactScoreFull(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	y := make([]float64, 100000)
	x := 0.0
	for i := range y {
		x = 0.9*x + 0.7*rng.NormFloat64()
		y[i] = x + rng.NormFloat64()
	}
	seq := ssm.Sequence{Obs: 1, Y: y}
	u, _ := LGSSM{}.Params(0.9, 0.7, 1)
	g := make([]float64, 3)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (LGSSM{}).ExactScore(g, u, seq, ssm.Full(len(y))); err != nil {
			b.Fatal(err)
		}
	}
}
