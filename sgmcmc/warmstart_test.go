package sgmcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// runMethod applies m for n steps on the 2-D Gaussian g from u0 with the
// schedule s and generator seed, returning every iterate.
func runMethod(t *testing.T, m Method, g *gauss, u0 []float64, s Schedule, n int, seed uint64) [][]float64 {
	t.Helper()
	u := slices.Clone(u0)
	grad := make([]float64, len(u))
	rng := rand.New(rand.NewPCG(seed, 1))
	m.Init(len(u))
	var out [][]float64
	for k := range n {
		if _, err := g.Grad(context.Background(), grad, u, rng); err != nil {
			t.Fatal(err)
		}
		m.Step(u, grad, s.At(k), rng)
		out = append(out, slices.Clone(u))
	}
	return out
}

// TestWarmStart checks that WarmStart is exactly Adam for Steps iterations
// and then exactly the sampler continuing from there, that the warm-up
// reaches the mode from far away, and that a checkpoint taken in either
// phase continues bit for bit.
func TestWarmStart(t *testing.T) {
	g := &gauss{Mu: []float64{3, -2}, P: []float64{2, 0.5, 0.5, 1}, Noise: 0.3}
	u0 := []float64{-40, 25}
	const warm, n = 300, 500
	sched := Phased{Steps: warm, First: Constant(0.5), Then: Polynomial{A: 0.05, B: 1, C: 0.55}}
	ws := func() *WarmStart { return &WarmStart{Steps: warm, Optimizer: &Adam{}, Sampler: &PSGLD{}} }
	got := runMethod(t, ws(), g, u0, sched, n, 7)

	// The first warm iterates are Adam's, with the First schedule.
	adam := runMethod(t, &Adam{}, g, u0, Constant(0.5), warm, 7)
	for k := range warm {
		if !slices.Equal(got[k], adam[k]) {
			t.Fatalf("iteration %d: WarmStart %v, Adam alone %v", k, got[k], adam[k])
		}
	}
	if d := math.Hypot(got[warm-1][0]-3, got[warm-1][1]+2); d > 0.5 {
		t.Errorf("after %d Adam steps from %v: %v, %.3g from the mode", warm, u0, got[warm-1], d)
	}
	// The rest is PSGLD from there, with Then restarted at 0: replay it
	// with the same generator state.
	u := slices.Clone(u0)
	grad := make([]float64, 2)
	rng := rand.New(rand.NewPCG(7, 1))
	a, p := &Adam{}, &PSGLD{}
	a.Init(2)
	p.Init(2)
	for k := range n {
		g.Grad(context.Background(), grad, u, rng)
		if k < warm {
			a.Step(u, grad, 0.5, rng)
		} else {
			p.Step(u, grad, sched.Then.At(k-warm), rng)
		}
		if !slices.Equal(u, got[k]) {
			t.Fatalf("iteration %d: WarmStart %v, replay %v", k, got[k], u)
		}
	}

	// Checkpoints during the warm-up and during sampling.
	for _, cut := range []int{warm / 2, warm + 50} {
		m := ws()
		u := slices.Clone(u0)
		rng := rand.New(rand.NewPCG(7, 1))
		m.Init(2)
		for k := range cut {
			g.Grad(context.Background(), grad, u, rng)
			m.Step(u, grad, sched.At(k), rng)
		}
		state, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		r := ws()
		r.Init(2)
		if err := r.UnmarshalBinary(state); err != nil {
			t.Fatal(err)
		}
		for k := cut; k < n; k++ {
			g.Grad(context.Background(), grad, u, rng)
			r.Step(u, grad, sched.At(k), rng)
			if !slices.Equal(u, got[k]) {
				t.Fatalf("resumed at %d: iteration %d differs: %v vs %v", cut, k, u, got[k])
			}
		}
		for _, bad := range [][]byte{state[:len(state)-1], state[:5], append(slices.Clone(state), 0)} {
			if err := ws().UnmarshalBinary(bad); !errors.Is(err, ErrCheckpoint) {
				t.Errorf("corrupt state of %d bytes: error %v, want ErrCheckpoint", len(bad), err)
			}
		}
	}
}

// TestWarmStartInRun runs WarmStart through Run and checks the sampling
// phase's mean and variance on a 1-D N(0, 1) target from a far start:
// the same stationary law as SGLD alone (variance 2h/(1−(1−h)²) with the
// exact gradient), within 4 batch-means standard errors.
func TestWarmStartInRun(t *testing.T) {
	const h, warm, iters = 0.1, 200, 60000
	rec := &seriesRecorder{}
	_, err := Run(context.Background(), func(int) Estimator { return std1() },
		func(int) Method { return &WarmStart{Steps: warm, Optimizer: &Adam{}, Sampler: &SGLD{}} },
		func(_ int, u []float64) error { u[0] = 50; return nil }, 1,
		Settings{Iterations: warm + iters, BurnIn: warm + 100, Chains: 2, Seed: 3, Recorder: rec,
			Schedule: Phased{Steps: warm, First: Constant(0.5), Then: Constant(h)}})
	if err != nil {
		t.Fatal(err)
	}
	series := rec.component(0)
	mean, se := batchStat(t, series, 50)
	within(t, "mean", mean, 0, 4*se)
	sq := make([][]float64, len(series))
	for c, s := range series {
		for _, v := range s {
			sq[c] = append(sq[c], v*v)
		}
	}
	m2, se2 := batchStat(t, sq, 50)
	within(t, "variance", m2, 2*h/(1-(1-h)*(1-h)), 4*se2)
}

func TestPhased(t *testing.T) {
	p := Phased{Steps: 3, First: Constant(1), Then: Polynomial{A: 1, B: 1, C: 1}}
	for k, want := range []float64{1, 1, 1, 1, 0.5, 1.0 / 3} {
		if got := p.At(k); got != want {
			t.Errorf("At(%d) = %v, want %v", k, got, want)
		}
	}
}
