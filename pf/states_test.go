package pf_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// stRuns runs R independent States.Run calls and returns, per replicate
// and reported state, the mean and the second moment of the first state
// component over the M draws of each wanted output (smoothed, filtered),
// and the log-likelihoods.
func stRuns(t *testing.T, s pf.StateSettings, k ssm.Kernel, d ssm.Dims, seq ssm.Sequence, w ssm.Window, R int, seed uint64) (sm, sm2, fm, fm2 [][]float64, ll []float64) {
	t.Helper()
	st, err := pf.NewStates(s)
	if err != nil {
		t.Fatal(err)
	}
	M := st.Settings().Paths
	n := w.KeepEnd - w.KeepStart + 1
	out := pf.StateOutput{Smoothed: make([]float64, n*M*d.State), Filtered: make([]float64, n*M*d.State)}
	moments := func(b []float64) ([]float64, []float64) {
		m1, m2 := make([]float64, n), make([]float64, n)
		for i := range n {
			for m := range M {
				v := b[(i*M+m)*d.State]
				m1[i] += v / float64(M)
				m2[i] += v * v / float64(M)
			}
		}
		return m1, m2
	}
	for r := range R {
		l, err := st.Run(context.Background(), k, d, seq, w, out, rand.New(rand.NewPCG(seed, uint64(r))))
		if err != nil {
			t.Fatal(err)
		}
		a, b := moments(out.Smoothed)
		c, e := moments(out.Filtered)
		sm, sm2, fm, fm2 = append(sm, a), append(sm2, b), append(fm, c), append(fm2, e)
		ll = append(ll, l)
	}
	return sm, sm2, fm, fm2, ll
}

// stCheck compares replicated per-state estimates with exact values: the
// largest |z| (replicate mean minus exact, over its standard error from
// the replicates' spread) must stay below 5 and the mean of z² below 3
// (its expectation is about 1 + 2/(R−3) for a t distribution, but the
// errors of neighbouring states are strongly correlated, so the mean over
// states varies much more than over independent z). It returns the
// largest |z|.
func stCheck(t *testing.T, name string, reps [][]float64, want []float64) float64 {
	t.Helper()
	R := len(reps)
	zmax, z2 := 0.0, 0.0
	worst := 0
	for i, wv := range want {
		col := make([]float64, R)
		for r := range R {
			col[r] = reps[r][i]
		}
		m, se := meanSE(col)
		z := (m - wv) / se
		if se == 0 {
			z = 0
			if m != wv {
				z = math.Inf(1)
			}
		}
		z2 += z * z / float64(len(want))
		if math.Abs(z) > zmax {
			zmax, worst = math.Abs(z), i
		}
	}
	if zmax > 5 || z2 > 3 {
		t.Errorf("%s: max |z| = %.2f (state index %d), mean z² = %.2f", name, zmax, worst, z2)
	}
	t.Logf("%s: max |z| = %.2f, mean z² = %.2f over %d states", name, zmax, z2, len(want))
	return zmax
}

func stLGSSM(t *testing.T, phi, sigma, tau float64, T int, seed uint64) (models.LGSSM, []float64, ssm.Kernel, ssm.Sequence) {
	t.Helper()
	var m models.LGSSM
	u, err := m.Params(phi, sigma, tau)
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := m.Simulate(T, u, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return m, u, k, seq
}

// TestStatesLGSSM: FFBSi (guided and bootstrap forward filters) against the
// Kalman filter and RTS smoother: per state, the means and second moments
// of the smoothed and filtered draws over 30 replicates are within MC error
// of the exact moments, and the likelihood estimate p̂/p has mean 1.
func TestStatesLGSSM(t *testing.T) {
	m, u, k, seq := stLGSSM(t, 0.9, 0.7, 1, 120, 7)
	seq.Y[30] = math.NaN()
	w := ssm.Window{Start: 0, End: 120, KeepStart: 0, KeepEnd: 120}
	n := w.KeepEnd - w.KeepStart + 1
	ex := ssm.StateMoments{FilterMean: make([]float64, n), FilterVar: make([]float64, n),
		SmoothMean: make([]float64, n), SmoothVar: make([]float64, n)}
	exLL, err := m.SmoothStates(u, seq, w, ex)
	if err != nil {
		t.Fatal(err)
	}
	second := func(mean, vr []float64) []float64 {
		out := make([]float64, len(mean))
		for i := range mean {
			out[i] = vr[i] + mean[i]*mean[i]
		}
		return out
	}
	for _, prop := range []pf.Proposal{pf.Guided, pf.Bootstrap} {
		t.Run(prop.String(), func(t *testing.T) {
			sm, sm2, fm, fm2, ll := stRuns(t, pf.StateSettings{N: 400, Paths: 50, Proposal: prop}, k, m.Dims(), seq, w, 30, 11)
			stCheck(t, "smoothed mean", sm, ex.SmoothMean)
			stCheck(t, "smoothed E[x²]", sm2, second(ex.SmoothMean, ex.SmoothVar))
			stCheck(t, "filtered mean", fm, ex.FilterMean)
			stCheck(t, "filtered E[x²]", fm2, second(ex.FilterMean, ex.FilterVar))
			ratio := make([]float64, len(ll))
			for r, v := range ll {
				ratio[r] = math.Exp(v - exLL)
			}
			if rm, se := meanSE(ratio); math.Abs(rm-1) > 4*se {
				t.Errorf("mean p̂/p = %.4f, SE %.3g", rm, se)
			}
		})
	}
}

// TestStatesWindow: a window inside a long sequence (buffers before and
// after the reported states, the state before Start from ν_0) against the
// Kalman smoother of the same window.
func TestStatesWindow(t *testing.T) {
	m, u, k, seq := stLGSSM(t, 0.8, 0.5, 0.6, 300, 9)
	w := ssm.Window{Start: 100, End: 180, KeepStart: 120, KeepEnd: 160}
	n := w.KeepEnd - w.KeepStart + 1
	ex := ssm.StateMoments{SmoothMean: make([]float64, n), SmoothVar: make([]float64, n), FilterMean: make([]float64, n), FilterVar: make([]float64, n)}
	if _, err := m.SmoothStates(u, seq, w, ex); err != nil {
		t.Fatal(err)
	}
	sm, _, fm, _, _ := stRuns(t, pf.StateSettings{N: 300, Paths: 40}, k, m.Dims(), seq, w, 30, 12)
	stCheck(t, "smoothed mean", sm, ex.SmoothMean)
	stCheck(t, "filtered mean", fm, ex.FilterMean)
}

// TestStatesFixedLag: the fixed-lag smoother targets p(x_t | y_Start..
// y_min(t+L, End)−1), whose exact moments are those of the last-but-L
// state of a Kalman smoother over the truncated window.
func TestStatesFixedLag(t *testing.T) {
	m, u, k, seq := stLGSSM(t, 0.9, 0.7, 1, 80, 5)
	const L = 6
	w := ssm.Full(80)
	n := 81
	mean, second := make([]float64, n), make([]float64, n)
	kal, err := m.Kalman(u)
	if err != nil {
		t.Fatal(err)
	}
	for st := range n {
		end := min(st+L, 80)
		if end == 0 {
			end = 1 // state 0 with L ≥ 1 always sees a row
		}
		sm, err := kal.Smooth(seq, 0, end)
		if err != nil {
			t.Fatal(err)
		}
		mean[st] = sm.MeanAt(st)[0]
		second[st] = sm.CovAt(st)[0] + mean[st]*mean[st]
	}
	sm, sm2, _, _, _ := stRuns(t, pf.StateSettings{N: 1000, Paths: 40, Method: pf.FixedLag, Lag: L}, k, m.Dims(), seq, w, 30, 13)
	stCheck(t, "fixed-lag mean", sm, mean)
	stCheck(t, "fixed-lag E[x²]", sm2, second)
}

// svmGrid is an independent grid (HMM) forward–backward smoother of the
// SVM: G points over ±8 stationary sds, transition and initial laws by
// normal densities times the cell width (normalised), emission
// N(y; 0, τ²eˣ) at the points. It returns the filtered and smoothed means
// and second moments of x_0..x_T.
func svmGrid(y []float64, phi, sigma, tau float64, G int) (fm, fm2, sm, sm2 []float64) {
	sd0 := sigma / math.Sqrt(1-phi*phi)
	lo, hi := -8*sd0, 8*sd0
	dx := (hi - lo) / float64(G-1)
	x := make([]float64, G)
	for i := range x {
		x[i] = lo + dx*float64(i)
	}
	K := make([]float64, G*G) // K[j*G+i] = P(x_i | x_j)
	for j := range G {
		s := 0.0
		for i := range G {
			z := (x[i] - phi*x[j]) / sigma
			K[j*G+i] = math.Exp(-0.5 * z * z)
			s += K[j*G+i]
		}
		for i := range G {
			K[j*G+i] /= s
		}
	}
	T := len(y)
	alpha := make([]float64, (T+1)*G)
	s := 0.0
	for i := range G {
		z := x[i] / sd0
		alpha[i] = math.Exp(-0.5 * z * z)
		s += alpha[i]
	}
	for i := range G {
		alpha[i] /= s
	}
	for t := 1; t <= T; t++ {
		a, p := alpha[t*G:(t+1)*G], alpha[(t-1)*G:t*G]
		for j, pj := range p {
			if pj < 1e-300 {
				continue
			}
			row := K[j*G : (j+1)*G]
			for i, kv := range row {
				a[i] += pj * kv
			}
		}
		s := 0.0
		for i := range a {
			if yt := y[t-1]; !math.IsNaN(yt) {
				v := tau * tau * math.Exp(x[i])
				a[i] *= math.Exp(-0.5*yt*yt/v) / math.Sqrt(v)
			}
			s += a[i]
		}
		for i := range a {
			a[i] /= s
		}
	}
	moments := func(p []float64) (float64, float64) {
		m1, m2 := 0.0, 0.0
		for i, v := range p {
			m1 += v * x[i]
			m2 += v * x[i] * x[i]
		}
		return m1, m2
	}
	fm, fm2, sm, sm2 = make([]float64, T+1), make([]float64, T+1), make([]float64, T+1), make([]float64, T+1)
	// Backward: smoothed γ_t(j) = α_t(j) Σ_i K(j,i) γ_{t+1}(i) / pred_{t+1}(i).
	gamma := make([]float64, G)
	copy(gamma, alpha[T*G:])
	pred := make([]float64, G)
	for t := T; t >= 0; t-- {
		fm[t], fm2[t] = moments(alpha[t*G : (t+1)*G])
		if t < T {
			a := alpha[t*G : (t+1)*G]
			clear(pred)
			for j, aj := range a {
				row := K[j*G : (j+1)*G]
				for i, kv := range row {
					pred[i] += aj * kv
				}
			}
			ratio := make([]float64, G)
			for i := range ratio {
				if pred[i] > 0 {
					ratio[i] = gamma[i] / pred[i]
				}
			}
			ng := make([]float64, G)
			s := 0.0
			for j, aj := range a {
				v := 0.0
				row := K[j*G : (j+1)*G]
				for i, kv := range row {
					v += kv * ratio[i]
				}
				ng[j] = aj * v
				s += ng[j]
			}
			for j := range ng {
				ng[j] /= s
			}
			gamma = ng
		}
		sm[t], sm2[t] = moments(gamma)
	}
	return fm, fm2, sm, sm2
}

// TestStatesSVMGrid: FFBSi on the SVM (bootstrap and guided forward
// filters) against the grid smoother, per state within MC error.
func TestStatesSVMGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("grid reference and 2×30 replicates")
	}
	const phi, sigma, tau, T = 0.95, 0.3, 0.8, 100
	for _, guided := range []bool{false, true} {
		m := models.SVM{Guided: guided}
		u, _ := m.Params(phi, sigma, tau)
		k, _ := m.Bind(u)
		_, seq, _ := m.Simulate(T, u, rand.New(rand.NewPCG(21, 2)))
		seq.Y[50] = math.NaN()
		fm, fm2, sm, sm2 := svmGrid(seq.Y, phi, sigma, tau, 1200)
		name := "bootstrap"
		if guided {
			name = "guided"
		}
		t.Run(name, func(t *testing.T) {
			rsm, rsm2, rfm, rfm2, _ := stRuns(t, pf.StateSettings{N: 500, Paths: 50}, k, m.Dims(), seq, ssm.Full(T), 30, 17)
			stCheck(t, "smoothed mean", rsm, sm)
			stCheck(t, "smoothed E[x²]", rsm2, sm2)
			stCheck(t, "filtered mean", rfm, fm)
			stCheck(t, "filtered E[x²]", rfm2, fm2)
		})
	}
}

// TestStatesGARCH: Auto picks the fixed-lag smoother for GARCH's degenerate
// transition; FFBSi is refused with ErrNoTransitionDensity.
func TestStatesGARCH(t *testing.T) {
	var m models.GARCH
	u, _ := m.FromABG(0.1, 0.8, 0.05, 0.3)
	k, _ := m.Bind(u)
	d := m.Dims()
	_, seq, _ := m.Simulate(50, u, rand.New(rand.NewPCG(1, 1)))
	n := 51
	st, _ := pf.NewStates(pf.StateSettings{N: 100, Paths: 5})
	out := pf.StateOutput{Smoothed: make([]float64, n*5*d.State)}
	if _, err := st.Run(context.Background(), k, d, seq, ssm.Full(50), out, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(out.Smoothed); i += d.State {
		if !(out.Smoothed[i+1] > 0) {
			t.Fatalf("row %d: σ² = %v", i/d.State, out.Smoothed[i+1])
		}
	}
	st, _ = pf.NewStates(pf.StateSettings{N: 100, Paths: 5, Method: pf.FFBSi})
	if _, err := st.Run(context.Background(), k, d, seq, ssm.Full(50), out, rand.New(rand.NewPCG(1, 2))); !errors.Is(err, pf.ErrNoTransitionDensity) {
		t.Fatalf("FFBSi on GARCH: %v", err)
	}
}

// TestStatesErrors: settings and inputs that are refused.
func TestStatesErrors(t *testing.T) {
	for _, s := range []pf.StateSettings{{N: -1}, {Paths: -1}, {Lag: -1}, {Method: 9}, {Proposal: 7}, {Resampling: 9}, {ESSThreshold: 2}} {
		if _, err := pf.NewStates(s); !errors.Is(err, pf.ErrSettings) {
			t.Errorf("%+v: %v", s, err)
		}
	}
	m, _, k, seq := stLGSSM(t, 0.9, 0.7, 1, 20, 1)
	st, _ := pf.NewStates(pf.StateSettings{N: 10, Paths: 2})
	if _, err := st.Run(context.Background(), k, m.Dims(), seq, ssm.Window{Start: 5, End: 30}, pf.StateOutput{}, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ssm.ErrWindow) {
		t.Errorf("window beyond the sequence: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Run(ctx, k, m.Dims(), seq, ssm.Full(20), pf.StateOutput{}, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestStatesAllocs: a second Run with the same sizes allocates nothing.
func TestStatesAllocs(t *testing.T) {
	m := models.SVM{}
	u, _ := m.Params(0.95, 0.3, 0.8)
	k, _ := m.Bind(u)
	_, seq, _ := m.Simulate(200, u, rand.New(rand.NewPCG(1, 1)))
	for _, method := range []pf.StateMethod{pf.FFBSi, pf.FixedLag} {
		st, _ := pf.NewStates(pf.StateSettings{N: 100, Paths: 5, Method: method})
		out := pf.StateOutput{Smoothed: make([]float64, 201*5), Filtered: make([]float64, 201*5), LogPred: make([]float64, 200)}
		rng := rand.New(rand.NewPCG(1, 1))
		ctx := context.Background()
		run := func() {
			if _, err := st.Run(ctx, k, m.Dims(), seq, ssm.Full(200), out, rng); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(5, run); a != 0 {
			t.Errorf("%v: %v allocations per Run", method, a)
		}
	}
}

// BenchmarkStates: one FFBSi run of the SVM over T = 2000 (N = 256,
// M = 10 paths), the per-draw unit of the posterior-integrated states.
func BenchmarkStates(b *testing.B) {
	m := models.SVM{}
	u, _ := m.Params(0.95, 0.3, 0.8)
	k, _ := m.Bind(u)
	_, seq, _ := m.Simulate(2000, u, rand.New(rand.NewPCG(1, 1)))
	for _, method := range []pf.StateMethod{pf.FFBSi, pf.FixedLag} {
		b.Run(method.String(), func(b *testing.B) {
			st, _ := pf.NewStates(pf.StateSettings{Method: method})
			M := st.Settings().Paths
			out := pf.StateOutput{Smoothed: make([]float64, 2001*M), Filtered: make([]float64, 2001*M)}
			rng := rand.New(rand.NewPCG(1, 1))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := st.Run(context.Background(), k, m.Dims(), seq, ssm.Full(2000), out, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStatesGARCHImportance: the fixed-lag smoother on GARCH, with a lag
// longer than the series (full ancestral lines), against self-normalised
// importance sampling of whole paths (2·10⁵ paths drawn by the model's
// locally optimal proposal, weighted by the product of its incremental
// weights p(y_t | x_{t−1}), no resampling): per state, the means of x_t,
// x_t² and σ_t² agree within 5 combined standard errors (30 smoother
// replicates; the delta-method error of the ratio estimate).
func TestStatesGARCHImportance(t *testing.T) {
	var m models.GARCH
	u, _ := m.FromABG(0.2, 0.3, 0.5, 0.2)
	k, _ := m.Bind(u)
	d := m.Dims()
	const T = 10
	_, seq, _ := m.Simulate(T, u, rand.New(rand.NewPCG(31, 1)))
	S := d.State
	// Importance sampling reference.
	const n = 200000
	rng := rand.New(rand.NewPCG(32, 1))
	x := make([]float64, (T+1)*n*S) // generation g of all paths at g*n*S
	logw := make([]float64, n)
	k.SampleInitial(x[:n*S], rng)
	prop := k.(ssm.Proposer)
	for g := 1; g <= T; g++ {
		prop.Propose(x[g*n*S:(g+1)*n*S], logw, x[(g-1)*n*S:g*n*S], seq.At(g-1), rng)
	}
	mx := math.Inf(-1)
	for _, v := range logw {
		mx = math.Max(mx, v)
	}
	w := make([]float64, n)
	sw := 0.0
	for i, v := range logw {
		w[i] = math.Exp(v - mx)
		sw += w[i]
	}
	ref := func(f func(row []float64) float64) (mean, se []float64) {
		mean, se = make([]float64, T+1), make([]float64, T+1)
		for g := 0; g <= T; g++ {
			s := 0.0
			for i := range n {
				s += w[i] * f(x[(g*n+i)*S:(g*n+i+1)*S])
			}
			mean[g] = s / sw
			v := 0.0
			for i := range n {
				r := f(x[(g*n+i)*S:(g*n+i+1)*S]) - mean[g]
				v += w[i] * w[i] * r * r
			}
			se[g] = math.Sqrt(v) / sw
		}
		return mean, se
	}
	fns := []func(row []float64) float64{
		func(r []float64) float64 { return r[0] },
		func(r []float64) float64 { return r[0] * r[0] },
		func(r []float64) float64 { return r[1] },
	}
	names := []string{"x", "x²", "σ²"}
	// Smoother replicates.
	st, err := pf.NewStates(pf.StateSettings{N: 2000, Paths: 100, Method: pf.FixedLag, Lag: 2 * T})
	if err != nil {
		t.Fatal(err)
	}
	M := 100
	out := pf.StateOutput{Smoothed: make([]float64, (T+1)*M*S)}
	const R = 30
	reps := make([][][]float64, len(fns)) // [fn][rep][state]
	for r := range R {
		if _, err := st.Run(context.Background(), k, d, seq, ssm.Full(T), out, rand.New(rand.NewPCG(33, uint64(r)))); err != nil {
			t.Fatal(err)
		}
		for f, fn := range fns {
			v := make([]float64, T+1)
			for g := 0; g <= T; g++ {
				for mm := range M {
					v[g] += fn(out.Smoothed[(g*M+mm)*S:(g*M+mm+1)*S]) / float64(M)
				}
			}
			reps[f] = append(reps[f], v)
		}
	}
	for f, fn := range fns {
		mean, se := ref(fn)
		zmax := 0.0
		for g := 0; g <= T; g++ {
			col := make([]float64, R)
			for r := range R {
				col[r] = reps[f][r][g]
			}
			pm, pse := meanSE(col)
			z := (pm - mean[g]) / math.Hypot(pse, se[g])
			if e := math.Hypot(pse, se[g]); e <= 1e-12*math.Abs(mean[g]) { // σ_0² = μ in every path
				z = (pm - mean[g]) / (1e-12 * math.Abs(mean[g]))
			}
			zmax = math.Max(zmax, math.Abs(z))
			if math.Abs(z) > 5 {
				t.Errorf("%s at state %d: smoother %.4f ± %.4f, importance sampling %.4f ± %.4f", names[f], g, pm, pse, mean[g], se[g])
			}
		}
		t.Logf("%s: max |z| = %.2f over %d states (IS ESS %.0f)", names[f], zmax, T+1, sw*sw/func() float64 {
			s := 0.0
			for _, v := range w {
				s += v * v
			}
			return s
		}())
	}
}
