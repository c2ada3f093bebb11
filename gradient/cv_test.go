package gradient_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Tile with exact (Kalman) window scores sums ĝ(S, B) over a partition of
// the sequence: with B = 10 it equals the full-data score (central
// differences of the exact log-likelihood) to the buffer error, measured
// at 0.005 here: 1e-4 of the score's posterior scale √(Fisher) ≈ 30.
func TestTileMatchesFullScore(t *testing.T) {
	m, u, y := lgssmSetup(t, 1000)
	e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, Exact: true})
	want := fdScore(t, m, u, y)
	for _, offset := range []int{0, 17} {
		got := make([]float64, 3)
		windows := 0
		if _, err := e.Tile(context.Background(), got, u, offset, nil, func(int, ssm.Window, []float64) { windows++ }); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if d := math.Abs(got[j] - want[j]); d > 0.01 {
				t.Errorf("offset %d, coordinate %d: tiled %.6f, full score %.6f (error %.2g)", offset, j, got[j], want[j], d)
			}
		}
		if wantW := (1000 - offset%40 + 39) / 40; offset%40 != 0 && windows != wantW+1 || offset%40 == 0 && windows != 25 {
			t.Errorf("offset %d: %d windows", offset, windows)
		}
	}
}

// The control-variate estimator has the plain estimator's mean over
// subsequences (up to the anchor's buffer error, far below the Monte Carlo
// error here) and, near the anchor, a small fraction of its variance.
// Exact window scores make the comparison free of particle noise.
func TestControlVariate(t *testing.T) {
	m, uStar, y := lgssmSetup(t, 2000)
	set := gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, Exact: true}
	anchor := make([]float64, 3)
	if _, err := newEst(t, m, y, set).Tile(context.Background(), anchor, uStar, 0, nil, nil); err != nil {
		t.Fatal(err)
	}
	cv, err := gradient.NewControlVariate(newEst(t, m, y, set), uStar, anchor)
	if err != nil {
		t.Fatal(err)
	}
	plain := newEst(t, m, y, set)
	// About one posterior sd away from the anchor in each coordinate.
	u := []float64{uStar[0] + 0.08, uStar[1] - 0.05, uStar[2] + 0.03}
	const K = 4000
	rng := rand.New(rand.NewPCG(3, 5))
	var gc, gp [][]float64
	for range K {
		a, b := make([]float64, 3), make([]float64, 3)
		if _, err := cv.Grad(context.Background(), a, u, rng); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Grad(context.Background(), b, u, rng); err != nil {
			t.Fatal(err)
		}
		gc, gp = append(gc, a), append(gp, b)
	}
	mc, sc := meanSE(gc)
	mp, sp := meanSE(gp)
	for j := range 3 {
		se := math.Hypot(sc[j], sp[j])
		z := (mc[j] - mp[j]) / se
		ratio := (sc[j] * sc[j]) / (sp[j] * sp[j])
		t.Logf("coordinate %d: CV mean %.2f ± %.2f, plain %.2f ± %.2f (z = %.2f); variance ratio %.4f", j, mc[j], sc[j], mp[j], sp[j], z, ratio)
		if math.Abs(z) > 4 {
			t.Errorf("coordinate %d: CV mean %.3f, plain %.3f: z = %.2f", j, mc[j], mp[j], z)
		}
		if ratio > 0.1 {
			t.Errorf("coordinate %d: CV variance is %.3f of the plain estimator's, want < 0.1", j, ratio)
		}
	}
}

// With a particle filter the two evaluations of a control-variate step
// use the same window and the same random numbers: at u = u* the
// difference is exactly zero.
func TestControlVariateCommonRandomNumbers(t *testing.T) {
	m, u, y := lgssmSetup(t, 500)
	set := gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: pf.Settings{N: 200}}
	cv, err := gradient.NewControlVariate(newEst(t, m, y, set), u, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	d := make([]float64, 3)
	if err := cv.Difference(context.Background(), d, u, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	for j, v := range d {
		if v != 0 {
			t.Errorf("coordinate %d: g_S(u*) − g_S(u*) = %v, want 0", j, v)
		}
	}
	if _, err := gradient.NewControlVariate(newEst(t, m, y, set), u, []float64{1, math.NaN(), 3}); err == nil {
		t.Error("NewControlVariate accepted a NaN anchor gradient")
	}
}

// TilePart over parts = 3 sums, part by part, to Tile (exactly, for the
// deterministic Kalman estimator), each block once; a bad part is an error.
func TestTilePartSumsToTile(t *testing.T) {
	m, u, y := lgssmSetup(t, 1000)
	e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, Exact: true})
	ctx := context.Background()
	want := make([]float64, 3)
	llWant, err := e.Tile(ctx, want, u, 17, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, ll, windows := make([]float64, 3), 0.0, 0
	for part := range 3 {
		g := make([]float64, 3)
		l, err := e.TilePart(ctx, g, u, 17, part, 3, nil, func(int, ssm.Window, []float64) { windows++ })
		if err != nil {
			t.Fatal(err)
		}
		ll += l
		for i := range g {
			sum[i] += g[i]
		}
	}
	for i := range want {
		if math.Abs(sum[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			t.Errorf("coordinate %d: parts sum to %.12g, Tile %.12g", i, sum[i], want[i])
		}
	}
	if math.Abs(ll-llWant) > 1e-9*math.Abs(llWant) || windows != 26 {
		t.Errorf("log-lik %.9g vs %.9g, %d windows (want 26)", ll, llWant, windows)
	}
	if _, err := e.TilePart(ctx, sum, u, 0, 3, 3, nil, nil); err == nil {
		t.Error("part 3 of 3: no error")
	}
}
