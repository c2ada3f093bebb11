package models

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// gxDAX returns the first n DAX returns.
func gxDAX(t testing.TB, n int) ssm.Sequence {
	t.Helper()
	seq, err := ssm.ReadCSVFile("../testdata/dax_returns.csv")
	if err != nil {
		t.Fatal(err)
	}
	if n < seq.Len() {
		seq.Y = seq.Y[:n]
	}
	return seq
}

// gxU returns u at the natural parameters.
func gxU(t testing.TB, mu, phi, lam, tau float64) []float64 {
	t.Helper()
	u, err := GARCH{}.Params(mu, phi, lam, tau)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// gxDAXMode is the DAX posterior mode (μ, φ, λ, τ).
var gxDAXMode = [4]float64{0.90, 0.989, 0.26, 0.64}

// gxU0 is a point near the posterior mode of u on all 1859 DAX returns,
// and gxU0SD the posterior sds of u there.
var (
	gxU0   = [4]float64{-0.228, 4.48, -1.02, -0.449}
	gxU0SD = [4]float64{0.98, 0.48, 0.21, 0.045}
)

// gxSim simulates T observations at u.
func gxSim(t testing.TB, u []float64, T int, seed uint64) ssm.Sequence {
	t.Helper()
	_, y, err := GARCH{}.Simulate(T, u, rand.New(rand.NewPCG(seed, 7)))
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// TestGARCHExactFD checks the forward-mode gradient on the full window
// against central differences of the returned log-likelihood (the nodes
// do not depend on u, so nothing is frozen).
func TestGARCHExactFD(t *testing.T) {
	skipShort(t)
	dax := gxDAX(t, 300)
	cases := []struct {
		name string
		u    []float64
		seq  ssm.Sequence
	}{
		{"DAX mode", gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3]), dax},
		{"DAX other", gxU(t, 0.46, 0.936, 0.53, 0.72), dax},
		{"all DAX, u0", gxU0[:], gxDAX(t, 1<<30)},
	}
	paper, err := GARCH{}.FromABG(0.1, 0.8, 0.05, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	sim := gxSim(t, paper, 200, 1)
	for i := 50; i < 60; i++ {
		sim.Y[i] = math.NaN()
	}
	cases = append(cases, struct {
		name string
		u    []float64
		seq  ssm.Sequence
	}{"paper, gaps", paper, sim})
	for _, c := range cases {
		w := ssm.Full(c.seq.Len())
		grad := make([]float64, 4)
		ll, err := garchExactScore(grad, c.u, c.seq, w, garchExactG)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			const h = 1e-5
			up := append([]float64(nil), c.u...)
			dn := append([]float64(nil), c.u...)
			up[i] += h
			dn[i] -= h
			lp, err1 := garchExactScore(nil, up, c.seq, w, garchExactG)
			lm, err2 := garchExactScore(nil, dn, c.seq, w, garchExactG)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			fd := (lp - lm) / (2 * h)
			rel := math.Abs(fd-grad[i]) / math.Max(1, math.Abs(fd))
			t.Logf("%s: ll %.6f, grad[%d] = %.8g, FD %.8g, rel %.2g", c.name, ll, i, grad[i], fd, rel)
			if rel > 1e-6 {
				t.Errorf("%s: grad[%d] = %.10g, FD %.10g (rel %.3g)", c.name, i, grad[i], fd, rel)
			}
		}
	}
}

func BenchmarkGARCHExact(b *testing.B) {
	dax := gxDAX(b, 120)
	u := gxU(b, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3])
	w := ssm.Window{Start: 0, End: 120, KeepStart: 40, KeepEnd: 80}
	seq := ssm.Sequence{Obs: 1, Y: dax.Y}
	w.Start = 0
	grad := make([]float64, 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (GARCH{}).ExactScore(grad, u, seq, w); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGARCHExactFull is one full-data pass over all 1859 DAX returns
// near the posterior mode, with the gradient (a full-data score) and
// without it (the log-likelihood alone, what an independence proposal of
// sgmcmc's FullGradient chains needs), at the default 64 nodes and at
// the coarser levels sgmcmc.Fit samples where it can (Coarsen: 32, 24).
func BenchmarkGARCHExactFull(b *testing.B) {
	seq := gxDAX(b, 5000)
	T := seq.Len()
	w := ssm.Window{Start: 0, End: T, KeepStart: 0, KeepEnd: T}
	for _, c := range []struct {
		name  string
		grad  []float64
		nodes int
	}{{"score", make([]float64, 4), 0}, {"loglik", nil, 0}, {"loglik-32", nil, 32}, {"loglik-24", nil, 24}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (GARCH{Nodes: c.nodes}).ExactScore(c.grad, gxU0[:], seq, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGARCHExactConvergence measures the discretisation error on the DAX
// returns: G against 2G, for the log-likelihood and for the gradient, the
// latter in units of the posterior scale (the gradient error times the
// posterior sd of u_i, the shift it causes in posterior sds): on the first
// 300 returns at the posterior mode (sd from −∂²ℓ/∂u_i² on these 300
// returns: 1.16, 0.59, 0.103, 0.067) and on all 1859 at gxU0.
func TestGARCHExactConvergence(t *testing.T) {
	skipShort(t)
	for _, c := range []struct {
		name string
		seq  ssm.Sequence
		u    []float64
		sd   []float64
	}{
		{"300 returns, mode", gxDAX(t, 300), gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3]), []float64{1.16, 0.59, 0.103, 0.067}},
		{"1859 returns, u0", gxDAX(t, 1<<30), gxU0[:], gxU0SD[:]},
	} {
		var ll [2]float64
		var grad [2][]float64
		for k, g := range []int{garchExactG, 2 * garchExactG} {
			grad[k] = make([]float64, 4)
			var err error
			if ll[k], err = garchExactScore(grad[k], c.u, c.seq, ssm.Full(c.seq.Len()), g); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: G = %d: log-likelihood %.5f, gradient %.5f", c.name, g, ll[k], grad[k])
		}
		if d := ll[1] - ll[0]; math.Abs(d) > 0.5 {
			t.Errorf("%s: log-likelihood: G = %d and %d differ by %.3g", c.name, garchExactG, 2*garchExactG, d)
		}
		for i := range 4 {
			d := grad[1][i] - grad[0][i]
			t.Logf("%s: gradient[%d]: G vs 2G %.4f, times posterior sd %.4f", c.name, i, d, d*c.sd[i])
			if math.Abs(d*c.sd[i]) > 0.05 {
				t.Errorf("%s: gradient[%d]: G = %d and %d differ by %.3g = %.3g posterior sds", c.name, i, garchExactG, 2*garchExactG, d, d*c.sd[i])
			}
		}
	}
}

// TestGARCHExactSmooth checks that the gradient is smooth in u, as the
// second-order control variate needs: on all DAX returns at gxU0, the
// central-difference Jacobians of the gradient with steps 10⁻⁴ and 0.05
// posterior sds agree to 1% of each row's largest entry, the Jacobian is
// symmetric to 1%, and it changes by less than 10% over 0.1 sd of u_3
// (λ, where a histogram filter's Jacobian jumped between −952 and +1501).
func TestGARCHExactSmooth(t *testing.T) {
	if testing.Short() {
		t.Skip("full DAX Jacobians")
	}
	seq := gxDAX(t, 1<<30)
	w := ssm.Full(seq.Len())
	jac := func(u []float64, f float64) [4][4]float64 {
		var J [4][4]float64
		for k := range 4 {
			h := f * gxU0SD[k]
			up := append([]float64(nil), u...)
			dn := append([]float64(nil), u...)
			up[k] += h
			dn[k] -= h
			gp, gm := make([]float64, 4), make([]float64, 4)
			if _, err := garchExactScore(gp, up, seq, w, garchExactG); err != nil {
				t.Fatal(err)
			}
			if _, err := garchExactScore(gm, dn, seq, w, garchExactG); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				J[i][k] = (gp[i] - gm[i]) / (2 * h)
			}
		}
		return J
	}
	rowMax := func(J [4][4]float64, i int) float64 {
		m := 0.0
		for k := range 4 {
			m = math.Max(m, math.Abs(J[i][k]))
		}
		return m
	}
	u0 := gxU0[:]
	u1 := append([]float64(nil), u0...)
	u1[2] += 0.1 * gxU0SD[2]
	fine, coarse, moved := jac(u0, 1e-4), jac(u0, 0.05), jac(u1, 0.05)
	var worstStep, worstSym, worstMove float64
	for i := range 4 {
		t.Logf("J[%d]: step 1e-4 sd %9.3f, 0.05 sd %9.3f, at u0 + 0.1 sd in u_3 %9.3f", i, fine[i], coarse[i], moved[i])
		m := rowMax(fine, i)
		for k := range 4 {
			worstStep = math.Max(worstStep, math.Abs(fine[i][k]-coarse[i][k])/m)
			worstMove = math.Max(worstMove, math.Abs(moved[i][k]-coarse[i][k])/m)
			worstSym = math.Max(worstSym, math.Abs(fine[i][k]-fine[k][i])/math.Max(m, rowMax(fine, k)))
		}
	}
	t.Logf("relative to each row's largest entry: steps 1e-4 vs 0.05 sd %.2g, asymmetry %.2g, u0 vs u0 + 0.1 sd %.2g", worstStep, worstSym, worstMove)
	if worstStep > 0.01 {
		t.Errorf("Jacobians with steps 1e-4 and 0.05 sd differ by %.3g of a row's largest entry", worstStep)
	}
	if worstSym > 0.01 {
		t.Errorf("Jacobian asymmetric by %.3g", worstSym)
	}
	if worstMove > 0.1 {
		t.Errorf("Jacobian changes by %.3g over 0.1 sd of u_3", worstMove)
	}
}

// gxPF runs reps independent guided particle filters with n particles over
// window w at u and returns the mean and standard error over the
// replicates of the log-likelihood and of the Fisher-identity score
// (the model's own Kernel.AddScore along ancestral paths).
func gxPF(t testing.TB, u []float64, seq ssm.Sequence, w ssm.Window, n, reps int) (ll, llSE float64, score, scoreSE []float64) {
	t.Helper()
	m := GARCH{}
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pf.New(pf.Settings{N: n})
	if err != nil {
		t.Fatal(err)
	}
	lls := make([]float64, reps)
	sc := make([][]float64, reps)
	for r := range reps {
		sc[r] = make([]float64, garchParams)
		res, err := f.Run(context.Background(), k, m.Dims(), seq, w, pf.Score(k, m.Dims()), sc[r], rand.New(rand.NewPCG(uint64(r), 99)))
		if err != nil {
			t.Fatal(err)
		}
		lls[r] = res.LogLik
	}
	meanSE := func(v func(r int) float64) (float64, float64) {
		mean, ss := 0.0, 0.0
		for r := range reps {
			mean += v(r)
		}
		mean /= float64(reps)
		for r := range reps {
			d := v(r) - mean
			ss += d * d
		}
		return mean, math.Sqrt(ss / float64(reps-1) / float64(reps))
	}
	ll, llSE = meanSE(func(r int) float64 { return lls[r] })
	score, scoreSE = make([]float64, garchParams), make([]float64, garchParams)
	for i := range garchParams {
		score[i], scoreSE[i] = meanSE(func(r int) float64 { return sc[r][i] })
	}
	return ll, llSE, score, scoreSE
}

// TestGARCHExactLogLikPF compares the grid log-likelihood of a window
// that starts inside a simulated series (so the state before it is drawn
// from ν_0, as in the particle filters) with a large-N particle filter,
// and checks its convergence in G.
func TestGARCHExactLogLikPF(t *testing.T) {
	skipShort(t)
	for _, c := range [][4]float64{{0.5, 0.95, 0.3, 0.5}, gxDAXMode} {
		u := gxU(t, c[0], c[1], c[2], c[3])
		seq := gxSim(t, u, 80, 3)
		seq.Y[40] = math.NaN()
		w := ssm.Window{Start: 20, End: 80, KeepStart: 20, KeepEnd: 80}
		ll, err := GARCH{}.ExactScore(nil, u, seq, w)
		if err != nil {
			t.Fatal(err)
		}
		ll2, err := garchExactScore(nil, u, seq, w, 2*garchExactG)
		if err != nil {
			t.Fatal(err)
		}
		// The window is the sequence y[20:80] started from ν_0.
		sub := ssm.Sequence{Obs: 1, Y: seq.Y[20:80]}
		llSub, err := GARCH{}.ExactScore(nil, u, sub, ssm.Full(60))
		if err != nil {
			t.Fatal(err)
		}
		if llSub != ll {
			t.Errorf("%v: window [20,80) log-likelihood %v, the same data as a sequence %v", c, ll, llSub)
		}
		pll, se, _, _ := gxPF(t, u, seq, w, 20000, 8)
		t.Logf("%v: grid G=%d %.5f, G=%d %.5f (diff %.2g); particles %.5f ± %.5f (z %.2f at G=%d, %.2f at G=%d)",
			c, garchExactG, ll, 2*garchExactG, ll2, ll2-ll, pll, se, (ll-pll)/se, garchExactG, (ll2-pll)/se, 2*garchExactG)
		if math.Abs(ll2-ll) > 0.01 {
			t.Errorf("%v: G = %d and %d differ by %.3g", c, garchExactG, 2*garchExactG, ll2-ll)
		}
		// The particle check is on the finer grid (G = 64 is within
		// 0.0002 nats of it here).
		if math.Abs(ll2-pll) > 4*se {
			t.Errorf("%v: grid (G = %d) %.5f vs particles %.5f ± %.5f", c, 2*garchExactG, ll2, pll, se)
		}
	}
}

// TestGARCHExactWindows checks the seeding: the statistic is linear in the
// weights, splitting Keep splits the statistic, and buffer steps add 0.
func TestGARCHExactWindows(t *testing.T) {
	// Both filters' forward-mode scores are linear in the seeds to
	// rounding.
	for _, c := range []struct {
		m   GARCH
		tol float64
	}{{GARCH{Nodes: 64}, 1e-9}, {GARCH{}, 1e-9}} {
		t.Run(fmt.Sprintf("nodes=%d", c.m.Nodes), func(t *testing.T) { garchWindows(t, c.m, c.tol) })
	}
}

func garchWindows(t *testing.T, m GARCH, tol float64) {
	u := gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3])
	seq := gxDAX(t, 300)
	score := func(w ssm.Window) ([]float64, float64) {
		g := []float64{1, 2, 3, 4} // added to, not overwritten
		ll, err := m.ExactScore(g, u, seq, w)
		if err != nil {
			t.Fatal(err)
		}
		for i := range g {
			g[i] -= float64(i + 1)
		}
		return g, ll
	}
	close := func(what string, got, want []float64) {
		t.Helper()
		for i := range got {
			if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
				t.Errorf("%s: [%d] = %.12g, want %.12g", what, i, got[i], want[i])
			}
		}
	}
	const s, e = 100, 220
	whole, ll := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180})
	a, llA := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 160})
	b, _ := score(ssm.Window{Start: s, End: e, KeepStart: 160, KeepEnd: 180})
	if llA != ll {
		t.Errorf("log-likelihood depends on Keep: %v vs %v", llA, ll)
	}
	sum := make([]float64, 4)
	for i := range sum {
		sum[i] = a[i] + b[i]
	}
	close("halves", sum, whole)
	two := make([]float64, 40)
	mixed := make([]float64, 40)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range two {
		two[i] = 2
		mixed[i] = rng.NormFloat64()
	}
	double, _ := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180, Weights: two})
	close("weight 2", double, []float64{2 * whole[0], 2 * whole[1], 2 * whole[2], 2 * whole[3]})
	// Arbitrary weights, split between the two halves.
	got, _ := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180, Weights: mixed})
	want := make([]float64, 4)
	half := make([]float64, 40)
	copy(half[:20], mixed[:20])
	g1, _ := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180, Weights: half})
	clear(half)
	copy(half[20:], mixed[20:])
	g2, _ := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180, Weights: half})
	for i := range want {
		want[i] = g1[i] + g2[i]
	}
	close("weights split", got, want)
	// Empty Keep, and zero weights: nothing added.
	none, llNone := score(ssm.Window{Start: s, End: e, KeepStart: 150, KeepEnd: 150})
	close("empty keep", none, make([]float64, 4))
	if llNone != ll {
		t.Errorf("log-likelihood with empty Keep %v, want %v", llNone, ll)
	}
	zero, _ := score(ssm.Window{Start: s, End: e, KeepStart: 140, KeepEnd: 180, Weights: make([]float64, 40)})
	close("zero weights", zero, make([]float64, 4))
	// The initial term belongs to time 0 only when the window starts at 0.
	i0, _ := score(ssm.Window{Start: 0, End: 50, KeepStart: 0, KeepEnd: 1})
	i1, _ := score(ssm.Window{Start: 1, End: 50, KeepStart: 1, KeepEnd: 2})
	if i0[0] == i1[0] {
		t.Errorf("initial term missing: %v vs %v", i0, i1)
	}
}

// TestGARCHExactTiledPF tiles the buffered window statistic over a
// simulated series (blocks of 40 kept steps, buffers of up to 40 each
// side) and compares it with the full-sequence statistic, and both with a
// large-N particle estimate of the score from the model's own AddScore:
// the σ²-chain score has the same total as the x-path score.
func TestGARCHExactTiledPF(t *testing.T) {
	skipShort(t)
	u := gxU(t, 0.5, 0.95, 0.3, 0.5)
	const T, B = 120, 40
	seq := gxSim(t, u, T, 11)
	m := GARCH{}
	full := make([]float64, 4)
	if _, err := m.ExactScore(full, u, seq, ssm.Full(T)); err != nil {
		t.Fatal(err)
	}
	tiled := make([]float64, 4)
	for k0 := 0; k0 < T; k0 += B {
		w := ssm.Window{Start: max(0, k0-B), End: min(T, k0+2*B), KeepStart: k0, KeepEnd: k0 + B}
		if _, err := m.ExactScore(tiled, u, seq, w); err != nil {
			t.Fatal(err)
		}
	}
	// The particle check is on a finer grid (4G), the reference for the
	// discretisation.
	fine := make([]float64, 4)
	if _, err := garchExactScore(fine, u, seq, ssm.Full(T), 4*garchExactG); err != nil {
		t.Fatal(err)
	}
	// Many replicates of moderate N: the ancestral score's sampling
	// distribution is heavy tailed, and with few replicates the SE is
	// unreliable (N = 20000 with 10 replicates gave |z| up to 3.5 for
	// seeds where N = 5000 and N = 80000 gave |z| < 1.7).
	_, _, ps, pse := gxPF(t, u, seq, ssm.Full(T), 5000, 32)
	for i := range full {
		t.Logf("u[%d]: full %.5f, tiled %.5f (diff %.2g), G=%d %.5f; particles %.5f ± %.5f (z %.2f at G=%d, %.2f at G=%d)",
			i, full[i], tiled[i], tiled[i]-full[i], 4*garchExactG, fine[i], ps[i], pse[i], (full[i]-ps[i])/pse[i], garchExactG, (fine[i]-ps[i])/pse[i], 4*garchExactG)
		if math.Abs(tiled[i]-full[i]) > 0.01*(1+math.Abs(full[i])) {
			t.Errorf("u[%d]: tiled %.5f, full %.5f", i, tiled[i], full[i])
		}
		if math.Abs(fine[i]-full[i]) > 0.1*(1+math.Abs(fine[i])) {
			t.Errorf("u[%d]: G = %d %.5f, G = %d %.5f", i, garchExactG, full[i], 4*garchExactG, fine[i])
		}
		if math.Abs(fine[i]-ps[i]) > 4*pse[i] {
			t.Errorf("u[%d]: grid %.5f, particles %.5f ± %.5f", i, fine[i], ps[i], pse[i])
		}
	}
}

// TestGARCHExactErrors checks the error returns and the panics on
// programmer errors.
func TestGARCHExactErrors(t *testing.T) {
	m := GARCH{}
	u := gxU(t, 0.5, 0.95, 0.3, 0.5)
	seq := gxSim(t, u, 20, 1)
	grad := make([]float64, 4)
	for _, w := range []ssm.Window{
		{Start: 0, End: 21, KeepStart: 0, KeepEnd: 20},
		{Start: 5, End: 5},
		{Start: 5, End: 10, KeepStart: 4, KeepEnd: 8},
		{Start: 0, End: 10, KeepStart: 0, KeepEnd: 5, Weights: []float64{1}},
		{Start: 0, End: 10, KeepStart: 0, KeepEnd: 1, Weights: []float64{math.NaN()}},
	} {
		if _, err := m.ExactScore(grad, u, seq, w); !errors.Is(err, ssm.ErrWindow) {
			t.Errorf("window %+v: err = %v, want ErrWindow", w, err)
		}
	}
	if _, err := m.ExactScore(grad, u, ssm.Sequence{Obs: 2, Y: seq.Y}, ssm.Full(10)); !errors.Is(err, ssm.ErrData) {
		t.Errorf("2-dimensional observations: err = %v, want ErrData", err)
	}
	for _, bad := range [][]float64{
		{math.NaN(), 0, 0, 0},
		{0, 60, 0, 0},   // φ = 1 in float64
		{0, 0, 0, 800},  // τ² overflows
		{0, 0, -800, 0}, // λ = 0
	} {
		var pe *ssm.ParamError
		if _, err := m.ExactScore(grad, bad, seq, ssm.Full(20)); !errors.As(err, &pe) {
			t.Errorf("u = %v: err = %v, want *ssm.ParamError", bad, err)
		}
	}
	if grad[0] != 0 || grad[1] != 0 || grad[2] != 0 || grad[3] != 0 {
		t.Errorf("errors changed grad: %v", grad)
	}
	for _, c := range []struct {
		name    string
		grad, u []float64
	}{
		{"short u", grad, u[:3]},
		{"short grad", grad[:3], u},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			m.ExactScore(c.grad, c.u, seq, ssm.Full(20))
		}()
	}
}

func TestGARCHExactTail(t *testing.T) {
	worst := 0.0
	for a := -12.0; a <= 9; a += 0.001 {
		q, g := garchTail(a)
		wq, wg := 0.5*math.Erfc(a/math.Sqrt2), math.Exp(-0.5*a*a)/math.Sqrt(2*math.Pi)
		e := math.Max(math.Abs(q-wq)/wq, math.Abs(g-wg)/wg)
		worst = math.Max(worst, e)
	}
	t.Logf("garchTail: worst relative error %.3g against math.Erfc and math.Exp", worst)
	if worst > 1e-13 {
		t.Errorf("garchTail: relative error %.3g", worst)
	}
	// Far below zero (a row whose threshold lies many sds below the
	// mean): Φc → 1 and Φ, φ → 0, never fmath.ExpCore's garbage outside
	// its range (a = −40 gave NaN draws' KSD and lost the residual check).
	for _, a := range []float64{-30, -37.4, -37.6, -38.6, -40, -100, -1e10, math.Inf(-1)} {
		up, low, g := garchTail2(a)
		wlow, wg := 0.5*math.Erfc(-a/math.Sqrt2), math.Exp(-0.5*a*a)/math.Sqrt(2*math.Pi)
		if up != 1 || !(math.Abs(low-wlow) <= 1e-12*wlow+1e-300) || !(math.Abs(g-wg) <= 1e-12*wg+1e-300) {
			t.Errorf("garchTail2(%g) = %g, %g, %g: want 1, %g, %g", a, up, low, g, wlow, wg)
		}
	}
}

// TestGARCHNodes: GARCH.Nodes sets ExactScore's node filter (and four
// times its nodes for RefinedLogLik, unless Refine is set), Points the
// quadrature filter's rule (0: 10, refined to 14); a count outside the
// ranges is an error naming the field, not a panic; Coarsen offers the
// 7-point rule refined to 14 only for the defaults.
func TestGARCHNodes(t *testing.T) {
	skipShort(t)
	seq := gxDAX(t, 300)
	u := gxU(t, 1, 0.98, 0.3, 0.6)
	w := ssm.Full(seq.Len())
	for _, n := range []int{32, 128} {
		m := GARCH{Nodes: n}
		got, err := m.ExactScore(nil, u, seq, w)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := garchExactScore(nil, u, seq, w, n)
		fine, err := m.RefinedLogLik(u, seq, w)
		if err != nil {
			t.Fatal(err)
		}
		ref2, _ := garchExactScore(nil, u, seq, w, 4*n)
		if got != ref || fine != ref2 {
			t.Errorf("Nodes %d: ExactScore %v (G = %d: %v), RefinedLogLik %v (G = %d: %v)", n, got, n, ref, fine, 4*n, ref2)
		}
	}
	for _, c := range []struct {
		m    GARCH
		k, r int
	}{{GARCH{}, 10, 14}, {GARCH{Points: 6}, 6, 10}, {GARCH{Points: 6, Refine: 12}, 6, 12}} {
		got, err := c.m.ExactScore(nil, u, seq, w)
		ref, _ := garchQuadScore(nil, u, seq, w, c.k, garchQuadJ(c.k))
		fine, err2 := c.m.RefinedLogLik(u, seq, w)
		ref2, _ := garchQuadScore(nil, u, seq, w, c.r, garchQuadJ(c.r))
		if err != nil || err2 != nil || got != ref || fine != ref2 {
			t.Errorf("%+v: ExactScore %v (%v), want %v; RefinedLogLik %v (%v), want %v", c.m, got, err, ref, fine, err2, ref2)
		}
	}
	// Refine sets RefinedLogLik's count.
	fine, err := GARCH{Nodes: 32, Refine: 96}.RefinedLogLik(u, seq, w)
	if ref, _ := garchExactScore(nil, u, seq, w, 96); err != nil || fine != ref {
		t.Errorf("Refine 96: RefinedLogLik %v (%v), want %v", fine, err, ref)
	}
	// The defaults coarsen to 7 points refined to 14, which coarsen no
	// further; the prior goes down.
	pr := DefaultGARCHPrior()
	c, ok := (GARCH{Prior: &pr}).Coarsen()
	if want := (GARCH{Prior: &pr, Points: 7, Refine: 14}); !ok || c != want {
		t.Errorf("GARCH{}.Coarsen() = %+v, %v; want %+v", c, ok, want)
	}
	if c2, ok := c.(ssm.Coarsener).Coarsen(); ok {
		t.Errorf("7 points' Coarsen() = %+v: want none", c2)
	}
	for _, m := range []GARCH{{Nodes: 64}, {Refine: 20}, {Points: 10}} {
		if c, ok := m.Coarsen(); ok {
			t.Errorf("%+v.Coarsen() = %+v: want none when the user set the filter", m, c)
		}
	}
	if _, err := (GARCH{Points: 5, Nodes: 64}).ExactScore(nil, u, seq, w); err == nil || !strings.Contains(err.Error(), "GARCH.Points") {
		t.Errorf("Points and Nodes: error %v, want one naming GARCH.Points", err)
	}
	for _, k := range []int{2, 40} {
		if _, err := (GARCH{Points: k}).ExactScore(nil, u, seq, w); err == nil || !strings.Contains(err.Error(), "GARCH.Points") {
			t.Errorf("Points %d: error %v, want one naming GARCH.Points", k, err)
		}
	}
	for _, r := range []int{2, 40} {
		if _, err := (GARCH{Refine: r}).RefinedLogLik(u, seq, w); err == nil || !strings.Contains(err.Error(), "GARCH.Refine") {
			t.Errorf("Refine %d (quadrature): error %v, want one naming GARCH.Refine", r, err)
		}
	}
	for _, r := range []int{8, 5000} {
		if _, err := (GARCH{Nodes: 64, Refine: r}).RefinedLogLik(u, seq, w); err == nil || !strings.Contains(err.Error(), "GARCH.Refine") {
			t.Errorf("Refine %d: error %v, want one naming GARCH.Refine", r, err)
		}
	}
	for _, n := range []int{8, -1, 2000} {
		if _, err := (GARCH{Nodes: n}).ExactScore(nil, u, seq, w); err == nil || !strings.Contains(err.Error(), "GARCH.Nodes") {
			t.Errorf("Nodes %d: error %v, want one naming GARCH.Nodes", n, err)
		}
		if _, err := (GARCH{Nodes: n}).Bind(u); err == nil || !strings.Contains(err.Error(), "GARCH.Nodes") {
			t.Errorf("Nodes %d: Bind error %v, want one naming GARCH.Nodes", n, err)
		}
	}
}

// skipShort skips a test of many full-series filter passes in -short mode,
// the race-detector run of .ci/run (each took 16–26 s there, deterministic
// arithmetic with nothing shared between goroutines); the full run checks
// them.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("full-series GARCH filter passes: checked by go test ./models")
	}
}
