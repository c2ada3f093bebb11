package gradient_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

var ctx = context.Background()

// lgssmSetup simulates the reference LGSSM: T = 256, φ = 0.9,
// σ = 0.7, τ = 1.
func lgssmSetup(t testing.TB, T int) (models.LGSSM, []float64, ssm.Sequence) {
	t.Helper()
	m := models.LGSSM{}
	u, err := m.Params(0.9, 0.7, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(7, 11)))
	if err != nil {
		t.Fatal(err)
	}
	return m, u, y
}

// fdScore is the full-data score by central differences of the exact
// Kalman log-likelihood (an answer independent of the smoother).
func fdScore(t testing.TB, m models.LGSSM, u []float64, y ssm.Sequence) []float64 {
	t.Helper()
	g := make([]float64, len(u))
	up := append([]float64(nil), u...)
	const h = 1e-5
	for i := range u {
		up[i] = u[i] + h
		lp, err := m.ExactScore(nil, up, y, ssm.Full(y.Len()))
		if err != nil {
			t.Fatal(err)
		}
		up[i] = u[i] - h
		lm, _ := m.ExactScore(nil, up, y, ssm.Full(y.Len()))
		up[i] = u[i]
		g[i] = (lp - lm) / (2 * h)
	}
	return g
}

func relErr(a, b []float64) float64 {
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(a[i]-b[i])/math.Max(1, math.Abs(b[i])))
	}
	return worst
}

func newEst(t testing.TB, m ssm.Model, y ssm.Sequence, s gradient.Settings) *gradient.Estimator {
	t.Helper()
	e, err := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// With B ≥ T the buffered window is the whole sequence, so ĝ(S, B) is the
// sum over t ∈ S of w_t times the terms E[h_t | y_1:T] of the full score.
func TestKalmanFullBufferEqualsScoreTerms(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	T := y.Len()
	// The terms of the full score, one smoothing pass each.
	terms := make([][]float64, T)
	for i := range terms {
		terms[i] = make([]float64, 3)
		w := ssm.Full(T)
		w.KeepStart, w.KeepEnd = i, i+1
		if _, err := m.ExactScore(terms[i], u, y, w); err != nil {
			t.Fatal(err)
		}
	}
	// The initial-state term belongs to t = 0 (KeepsInitial).
	init := make([]float64, 3)
	w0 := ssm.Full(T)
	w0.KeepEnd = 1
	if _, err := m.ExactScore(init, u, y, w0); err != nil {
		t.Fatal(err)
	}
	copy(terms[0], init)
	for _, sampling := range []gradient.Sampling{gradient.Uniform, gradient.Strict} {
		e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 16, B: T, Sampling: sampling}, Exact: true})
		rng := rand.New(rand.NewPCG(1, 1))
		g := make([]float64, 3)
		for rep := 0; rep < 20; rep++ {
			if _, err := e.Likelihood(ctx, g, u, rng); err != nil {
				t.Fatal(err)
			}
			w := e.Last().Windows[0]
			want := make([]float64, 3)
			for i := w.KeepStart; i < w.KeepEnd; i++ {
				for j := range want {
					want[j] += w.Weight(i) * terms[i][j]
				}
			}
			if err := relErr(g, want); err > 1e-10 {
				t.Fatalf("%v window %+v: g = %v, Σ w_t terms = %v (rel err %.2g)", sampling, w, g, want, err)
			}
		}
	}
}

// Averaging the exact estimator over every subsequence with the sampler's
// probabilities gives the full score exactly when B ≥ T (unbiasedness).
func TestKalmanUnbiasedOverSubsequences(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	want := fdScore(t, m, u, y)
	for _, q := range []gradient.Subsequencer{
		{S: 16, B: 256, Sampling: gradient.Uniform},
		{S: 40, B: 256, Sampling: gradient.Strict},
		{Sampling: gradient.Full},
	} {
		e := newEst(t, m, y, gradient.Settings{Subsequencer: q, Exact: true})
		mean := make([]float64, 3)
		g := make([]float64, 3)
		rng := rand.New(rand.NewPCG(2, 2))
		q.Enumerate(y.Len(), func(w ssm.Window, p float64) {
			if _, err := e.Fixed(ctx, g, u, 0, w, rng); err != nil {
				t.Fatal(err)
			}
			for j := range g {
				mean[j] += p * g[j]
			}
		})
		if err := relErr(mean, want); err > 1e-6 {
			t.Errorf("%+v: E[ĝ] = %v, full score (FD) = %v, rel err %.2g", q, mean, want, err)
		}
		t.Logf("%+v: E[ĝ] = %.6f, score = %.6f", q, mean, want)
	}
}

// |ĝ(S,B) − ĝ(S,T)| decays geometrically in B at a rate no worse than
// L = |φ| τ²/(σ² + τ²), the contraction of the Kalman filter.
func TestBufferErrorDecaysGeometrically(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	const phi, sigma, tau = 0.9, 0.7, 1.0
	L := phi * tau * tau / (sigma*sigma + tau*tau)
	e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 16, B: 0}, Exact: true})
	rng := rand.New(rand.NewPCG(3, 3))
	keep := func(B int) ssm.Window {
		return ssm.Window{Start: max(0, 120-B), End: min(256, 136+B), KeepStart: 120, KeepEnd: 136}
	}
	ref := make([]float64, 3)
	if _, err := e.Fixed(ctx, ref, u, 0, keep(256), rng); err != nil {
		t.Fatal(err)
	}
	g := make([]float64, 3)
	var bs, logErr []float64
	for B := 0; B <= 20; B++ {
		if _, err := e.Fixed(ctx, g, u, 0, keep(B), rng); err != nil {
			t.Fatal(err)
		}
		d := 0.0
		for j := range g {
			d += (g[j] - ref[j]) * (g[j] - ref[j])
		}
		d = math.Sqrt(d)
		if d < 1e-11 { // floating-point floor
			break
		}
		bs = append(bs, float64(B))
		logErr = append(logErr, math.Log(d))
	}
	if len(bs) < 8 {
		t.Fatalf("error reached the floating floor after %d buffers", len(bs))
	}
	// Least-squares slope of log error against B, skipping B < 2 (the
	// transient before the geometric regime).
	slope := lsSlope(bs[2:], logErr[2:])
	rate := math.Exp(slope)
	t.Logf("fitted rate %.4f, bound L = %.4f (errors from %.3g to %.3g)", rate, L, math.Exp(logErr[0]), math.Exp(logErr[len(logErr)-1]))
	if rate > L+0.02 {
		t.Errorf("buffer error decays at rate %.4f, above the bound L = %.4f", rate, L)
	}
	if rate > 0.99 {
		t.Errorf("no geometric decay: rate %.4f", rate)
	}
}

func lsSlope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	return sxy / sxx
}

// meanSE returns the replication mean and its standard error per coordinate.
func meanSE(reps [][]float64) (mean, se []float64) {
	n := float64(len(reps))
	p := len(reps[0])
	mean, se = make([]float64, p), make([]float64, p)
	for _, r := range reps {
		for j, v := range r {
			mean[j] += v / n
		}
	}
	for _, r := range reps {
		for j, v := range r {
			se[j] += (v - mean[j]) * (v - mean[j]) / (n - 1)
		}
	}
	for j := range se {
		se[j] = math.Sqrt(se[j] / n)
	}
	return mean, se
}

// g^PF(S, B, N) for a fixed subsequence agrees with the Kalman ĝ(S, B)
// within 4 Monte Carlo standard errors, for both proposals.
func TestPFMatchesKalmanFixedWindow(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	w := ssm.Window{Start: 110, End: 166, KeepStart: 120, KeepEnd: 156}
	want := make([]float64, 3)
	ex := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 36, B: 10}, Exact: true})
	if _, err := ex.Fixed(ctx, want, u, 0, w, rand.New(rand.NewPCG(0, 0))); err != nil {
		t.Fatal(err)
	}
	n, reps := 10000, 16
	if testing.Short() {
		n, reps = 2000, 12
	}
	for _, prop := range []pf.Proposal{pf.Bootstrap, pf.Guided} {
		e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 36, B: 10}, PF: pf.Settings{N: n, Proposal: prop}})
		rng := rand.New(rand.NewPCG(4, uint64(prop)))
		var rs [][]float64
		for r := 0; r < reps; r++ {
			g := make([]float64, 3)
			if _, err := e.Fixed(ctx, g, u, 0, w, rng); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, g)
		}
		mean, se := meanSE(rs)
		for j := range mean {
			if z := (mean[j] - want[j]) / se[j]; math.Abs(z) > 4 {
				t.Errorf("%v coordinate %d: PF %.4f ± %.4f vs Kalman %.4f (z = %.2f)", prop, j, mean[j], se[j], want[j], z)
			}
		}
		t.Logf("%v: PF %.4f ± %.4f, Kalman %.4f", prop, mean, se, want)
	}
}

// Same seed, same draws: the result does not depend on the worker count.
func TestWorkersBitIdentical(t *testing.T) {
	m, u, y := lgssmSetup(t, 256)
	var out [][]float64
	for _, workers := range []int{1, 2, 3} {
		e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 20, B: 5}, PF: pf.Settings{N: 200}, Draws: 5, Workers: workers})
		g := make([]float64, 3)
		rng := rand.New(rand.NewPCG(5, 5))
		for i := 0; i < 3; i++ {
			if _, err := e.Grad(ctx, g, u, rng); err != nil {
				t.Fatal(err)
			}
		}
		out = append(out, g)
	}
	for i := 1; i < len(out); i++ {
		for j := range out[0] {
			if out[i][j] != out[0][j] {
				t.Fatalf("workers change the result: %v vs %v", out[i], out[0])
			}
		}
	}
}

// Several sequences: picking sequence j with probability p_j and dividing
// by p_j keeps the estimator unbiased for the sum of per-sequence scores.
func TestDatasetUnbiased(t *testing.T) {
	m := models.LGSSM{}
	u, _ := m.Params(0.8, 0.6, 0.9)
	rng := rand.New(rand.NewPCG(8, 8))
	var data ssm.Dataset
	want := make([]float64, 3)
	for _, T := range []int{30, 50, 80, 3} { // 3 < S below: one whole window
		_, y, _ := m.Simulate(T, u, rng)
		data.Sequences = append(data.Sequences, y)
		if _, err := m.ExactScore(want, u, y, ssm.Full(T)); err != nil {
			t.Fatal(err)
		}
	}
	// AllSequences with Full sampling is exactly the data set's score.
	{
		e, err := gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, Exact: true, Choice: gradient.AllSequences})
		if err != nil {
			t.Fatal(err)
		}
		g := make([]float64, 3)
		if _, err := e.Likelihood(ctx, g, u, rng); err != nil {
			t.Fatal(err)
		}
		if err := relErr(g, want); err > 1e-12 {
			t.Errorf("AllSequences: %v, want %v", g, want)
		}
	}
	// Full sampling, and subsequences of S = 10 with buffers that span every
	// sequence (so each window's terms are the full sequence's), where the
	// sequence of 3 is one whole window.
	for _, c := range []struct {
		choice gradient.Choice
		q      gradient.Subsequencer
	}{
		{gradient.ByLength, gradient.Subsequencer{Sampling: gradient.Full}},
		{gradient.UniformSequence, gradient.Subsequencer{Sampling: gradient.Full}},
		{gradient.ByLength, gradient.Subsequencer{S: 10, B: 100}},
	} {
		choice := c.choice
		e, err := gradient.New(m, data, gradient.Settings{Subsequencer: c.q, Exact: true, Choice: choice, Draws: 2})
		if err != nil {
			t.Fatal(err)
		}
		// Average over many draws: the only randomness is the sequence
		// choice, so the SE follows from the replications.
		var rs [][]float64
		for r := 0; r < 4000; r++ {
			g := make([]float64, 3)
			if _, err := e.Likelihood(ctx, g, u, rng); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, g)
		}
		mean, se := meanSE(rs)
		for j := range mean {
			if z := (mean[j] - want[j]) / se[j]; math.Abs(z) > 4 {
				t.Errorf("%v %+v coordinate %d: mean %.4f ± %.4f, want %.4f", choice, c.q, j, mean[j], se[j], want[j])
			}
		}
	}
}

func TestEstimatorErrors(t *testing.T) {
	m, u, y := lgssmSetup(t, 100)
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	for name, c := range map[string]struct {
		s    gradient.Settings
		want error
	}{
		"B<0":      {gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10, B: -1}}, gradient.ErrSubsequence},
		"N<0":      {gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10}, PF: pf.Settings{N: -1}}, pf.ErrSettings},
		"noExact":  {gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10}, Exact: true}, gradient.ErrNoExact},
		"draws<0":  {gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10}, Draws: -1}, gradient.ErrSettings},
		"unknownQ": {gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10, Sampling: 7}}, gradient.ErrSubsequence},
	} {
		var model ssm.Model = m
		if name == "noExact" {
			model = models.SVM{}
		}
		if _, err := gradient.New(model, data, c.s); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	// A window of only missing data
	miss := ssm.Sequence{Obs: 1, Y: append([]float64(nil), y.Y...)}
	for i := 40; i < 60; i++ {
		miss.Y[i] = math.NaN()
	}
	e := newEst(t, m, miss, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10}, PF: pf.Settings{N: 100}})
	g := make([]float64, 3)
	// is valid: log-likelihood 0, transition terms only (TestGaps).
	ll, err := e.Fixed(ctx, g, u, 0, ssm.Window{Start: 40, End: 60, KeepStart: 45, KeepEnd: 55}, rand.New(rand.NewPCG(1, 1)))
	if err != nil || ll != 0 {
		t.Errorf("all-missing window: log-likelihood %v, err = %v; want 0, nil", ll, err)
	}
	// Weight collapse: an SVM with tiny τ and an outlier.
	sv := models.SVM{}
	us, err := sv.Params(0.9, 0.5, 1e-150) // τ² = 1e-300: y²/τ² overflows
	if err != nil {
		t.Fatal(err)
	}
	out := ssm.Sequence{Obs: 1, Y: make([]float64, 50)}
	out.Y[25] = 1e6
	e = newEst(t, sv, out, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 10, B: 2}, PF: pf.Settings{N: 100}})
	_, err = e.Fixed(ctx, g, us, 0, ssm.Window{Start: 20, End: 30, KeepStart: 22, KeepEnd: 28}, rand.New(rand.NewPCG(1, 1)))
	var de *pf.DegeneracyError
	if !errors.As(err, &de) || de.T != 25 {
		t.Errorf("outlier: err = %v, want *pf.DegeneracyError at row 25", err)
	}
	// Invalid parameters surface as *ssm.ParamError.
	if _, err := e.Grad(ctx, g, []float64{math.NaN(), 0, 0}, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ssm.ErrInvalidParam) {
		t.Errorf("NaN parameter: err = %v, want ssm.ErrInvalidParam", err)
	}
}

// An exact scorer's pass takes no context, so the estimator checks it
// before each window: a cancelled context stops Likelihood and Tile with
// an error that wraps it (a time budget then ends a long series' Newton
// steps after one pass, not after p + 1), and a live one changes nothing.
func TestExactCancelled(t *testing.T) {
	m, u, y := lgssmSetup(t, 400)
	e := newEst(t, m, y, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, Exact: true})
	ctx, cancel := context.WithCancel(context.Background())
	g := make([]float64, 3)
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := e.Likelihood(ctx, g, u, rng); err != nil {
		t.Fatalf("live context: %v", err)
	}
	cancel()
	if ll, err := e.Likelihood(ctx, g, u, rng); !errors.Is(err, context.Canceled) || !math.IsNaN(ll) {
		t.Errorf("cancelled context: Likelihood returned %v, %v; want NaN and an error wrapping context.Canceled", ll, err)
	}
	if _, err := e.Tile(ctx, g, u, 0, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: Tile returned %v; want an error wrapping context.Canceled", err)
	}
}
