package sgmcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/states"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// stPosterior builds a Posterior from draws in u (one chain), as Fit would.
func stPosterior(m ssm.Model, data ssm.Dataset, draws [][]float64) *Posterior {
	p := m.Dims().Param
	post := &Posterior{Names: m.ParamNames(), Dim: p, model: m, data: data}
	var u, nat []float64
	th := make([]float64, p)
	for _, d := range draws {
		m.Constrain(th, d)
		u, nat = append(u, d...), append(nat, th...)
	}
	post.U, post.Natural = [][]float64{u}, [][]float64{nat}
	return post
}

// stExactDraws returns D draws from the exact LGSSM posterior by a long
// random-walk Metropolis chain on the Kalman likelihood (models.Kalman,
// independent of the code under test), thinned.
func stExactDraws(t testing.TB, m models.LGSSM, seq ssm.Sequence, u0 []float64, D int, seed uint64) [][]float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 99))
	logpost := func(u []float64) float64 {
		k, err := m.Kalman(u)
		if err != nil {
			return math.Inf(-1)
		}
		ll, err := k.LogLik(seq, 0, seq.Len())
		if err != nil {
			return math.Inf(-1)
		}
		return ll + m.LogPrior(nil, u)
	}
	u := append([]float64(nil), u0...)
	lp := logpost(u)
	const burn, thin = 2000, 40
	var out [][]float64
	prop := make([]float64, len(u))
	for it := 0; len(out) < D; it++ {
		for i := range u {
			prop[i] = u[i] + 0.08*rng.NormFloat64()
		}
		if lq := logpost(prop); math.Log(rng.Float64()) < lq-lp {
			copy(u, prop)
			lp = lq
		}
		if it >= burn && it%thin == 0 {
			out = append(out, append([]float64(nil), u...))
		}
	}
	return out
}

// stMixture is the independent reference of a posterior-integrated
// Gaussian marginal: mean, sd and quantiles (by bisection) of the equal
// mixture of N(m_d, v_d).
func stMixture(m, v []float64) (mean, sd, q05, q50, q95 float64) {
	D := float64(len(m))
	s2 := 0.0
	for d := range m {
		mean += m[d] / D
		s2 += (v[d] + m[d]*m[d]) / D
	}
	sd = math.Sqrt(s2 - mean*mean)
	q := func(p float64) float64 {
		lo, hi := mean-20*sd, mean+20*sd
		for range 200 {
			mid := 0.5 * (lo + hi)
			f := 0.0
			for d := range m {
				f += 0.5 * math.Erfc(-(mid-m[d])/math.Sqrt(2*v[d])) / D
			}
			if f < p {
				lo = mid
			} else {
				hi = mid
			}
		}
		return 0.5 * (lo + hi)
	}
	return mean, sd, q(0.05), q(0.5), q(0.95)
}

// stBandRef holds the reference per time of a band.
type stBandRef struct{ mean, sd, q05, q50, q95 []float64 }

func (r stBandRef) fields() [][]float64 { return [][]float64{r.mean, r.sd, r.q05, r.q50, r.q95} }

func bandFields(b Band) [][]float64 { return [][]float64{b.Mean, b.SD, b.Q05, b.Q50, b.Q95} }

var stFieldNames = []string{"mean", "sd", "q05", "q50", "q95"}

// stCheckReps compares replicated bands with a reference, field by field:
// per time, the replicates' mean minus the reference over its standard
// error; max |z| < 5 and, over 20 entries or more, mean z² < 3 (errors of
// neighbouring times are strongly correlated, so the mean z² varies far
// more than for independent z).
func stCheckReps(t *testing.T, name string, reps []Band, ref stBandRef) {
	t.Helper()
	R := len(reps)
	for f, want := range ref.fields() {
		zmax, z2 := 0.0, 0.0
		worst := 0
		for i, wv := range want {
			s, ss := 0.0, 0.0
			for _, b := range reps {
				v := bandFields(b)[f][i]
				s += v
				ss += v * v
			}
			m := s / float64(R)
			se := math.Sqrt((ss - float64(R)*m*m) / float64(R-1) / float64(R))
			z := (m - wv) / se
			z2 += z * z / float64(len(want))
			if math.Abs(z) > zmax {
				zmax, worst = math.Abs(z), i
			}
		}
		if zmax > 5 || (len(want) >= 20 && z2 > 3) || math.IsNaN(zmax) {
			t.Errorf("%s %s: max |z| = %.2f (entry %d), mean z² = %.2f", name, stFieldNames[f], zmax, worst, z2)
		} else {
			t.Logf("%s %s: max |z| = %.2f, mean z² = %.2f over %d entries", name, stFieldNames[f], zmax, z2, len(want))
		}
	}
}

type stLGSSMCase struct {
	m     models.LGSSM
	seq   ssm.Sequence
	draws [][]float64
	post  *Posterior
}

func newSTLGSSM(t testing.TB, T, D int) stLGSSMCase {
	t.Helper()
	var c stLGSSMCase
	u, _ := c.m.Params(0.9, 0.7, 1)
	_, seq, err := c.m.Simulate(T, u, rand.New(rand.NewPCG(42, 7)))
	if err != nil {
		t.Fatal(err)
	}
	c.seq = seq
	c.draws = stExactDraws(t, c.m, seq, u, D, 5)
	c.post = stPosterior(c.m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, c.draws)
	return c
}

// rtsReference integrates the Kalman/RTS smoothed (or filtered) marginals
// of every draw: the exact posterior-integrated law of x_t.
func (c stLGSSMCase) rtsReference(t testing.TB, filtered bool) stBandRef {
	t.Helper()
	T := c.seq.Len()
	D := len(c.draws)
	ms, vs := make([][]float64, T+1), make([][]float64, T+1)
	for d, u := range c.draws {
		k, err := c.m.Kalman(u)
		if err != nil {
			t.Fatal(err)
		}
		sm, err := k.Smooth(c.seq, 0, T)
		if err != nil {
			t.Fatal(err)
		}
		for st := 0; st <= T; st++ {
			if d == 0 {
				ms[st], vs[st] = make([]float64, D), make([]float64, D)
			}
			ms[st][d], vs[st][d] = sm.MeanAt(st)[0], sm.CovAt(st)[0]
			if filtered && st > 0 && st < T {
				f, err := k.Smooth(c.seq, 0, st)
				if err != nil {
					t.Fatal(err)
				}
				ms[st][d], vs[st][d] = f.MeanAt(st)[0], f.CovAt(st)[0]
			}
			if filtered && st == 0 {
				ms[st][d], vs[st][d] = 0, k.P0[0]
			}
		}
	}
	r := stBandRef{make([]float64, T+1), make([]float64, T+1), make([]float64, T+1), make([]float64, T+1), make([]float64, T+1)}
	for st := 0; st <= T; st++ {
		r.mean[st], r.sd[st], r.q05[st], r.q50[st], r.q95[st] = stMixture(ms[st], vs[st])
	}
	return r
}

// TestStatesExactLGSSM: the exact path (ssm.StateSmoother) equals the
// RTS moments integrated over exact posterior draws, computed
// independently, to rounding.
func TestStatesExactLGSSM(t *testing.T) {
	c := newSTLGSSM(t, 80, 40)
	ref := c.rtsReference(t, false)
	fref := c.rtsReference(t, true)
	got, err := c.post.States(context.Background(), StateSettings{Filtered: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || got.Len() != 81 || got.Draws != 40 || got.SmoothedVol != nil {
		t.Fatalf("exact %v, len %d, draws %d, vol %v", got.Exact, got.Len(), got.Draws, got.SmoothedVol)
	}
	for name, pair := range map[string]struct {
		b Band
		r stBandRef
	}{"smoothed": {got.Smoothed[0], ref}, "filtered": {got.Filtered[0], fref}} {
		for f, want := range pair.r.fields() {
			for i, w := range want {
				if g := bandFields(pair.b)[f][i]; math.Abs(g-w) > 1e-7*(1+math.Abs(w)) {
					t.Fatalf("%s %s at state %d: %v, reference %v", name, stFieldNames[f], i, g, w)
				}
			}
		}
	}
}

// TestStatesParticleLGSSM: the particle path (FFBSi at every draw)
// against the RTS reference integrated over the same exact posterior
// draws: mean, sd and quantiles per state within MC error (12 replicates
// with independent seeds), smoothed and filtered.
func TestStatesParticleLGSSM(t *testing.T) {
	if testing.Short() {
		t.Skip("12 replicates of 40 draws")
	}
	c := newSTLGSSM(t, 80, 40)
	ref := c.rtsReference(t, false)
	fref := c.rtsReference(t, true)
	var sm, fi []Band
	for r := range 12 {
		got, err := c.post.States(context.Background(), StateSettings{Particles: true, Filtered: true, Seed: uint64(r),
			PF: pf.StateSettings{N: 300, Paths: 20}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Exact || got.Method != pf.FFBSi {
			t.Fatalf("exact %v, method %v", got.Exact, got.Method)
		}
		sm, fi = append(sm, got.Smoothed[0]), append(fi, got.Filtered[0])
	}
	stCheckReps(t, "smoothed", sm, ref)
	stCheckReps(t, "filtered", fi, fref)
}

// TestStatesBlocks: blocks with buffers give the whole-sequence answer up to
// the buffer error (exact path: φ^B with B = 60 is 2e-3 of the state
// scale), and streaming through Emit gives the same blocks as
// accumulating them.
func TestStatesBlocks(t *testing.T) {
	c := newSTLGSSM(t, 200, 20)
	full, err := c.post.States(context.Background(), StateSettings{})
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := c.post.States(context.Background(), StateSettings{Block: 37, Buffer: 60})
	if err != nil {
		t.Fatal(err)
	}
	for i := range full.Smoothed[0].Mean {
		if d := math.Abs(full.Smoothed[0].Mean[i] - blocked.Smoothed[0].Mean[i]); d > 5e-3 {
			t.Fatalf("state %d: blocked mean %v, whole %v", i, blocked.Smoothed[0].Mean[i], full.Smoothed[0].Mean[i])
		}
		if d := math.Abs(full.Smoothed[0].SD[i] - blocked.Smoothed[0].SD[i]); d > 5e-3 {
			t.Fatalf("state %d: blocked sd %v, whole %v", i, blocked.Smoothed[0].SD[i], full.Smoothed[0].SD[i])
		}
	}
	set := StateSettings{Particles: true, Block: 50, Buffer: 20, Start: 30, End: 170, Seed: 3, Draws: 10}
	acc, err := c.post.States(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	var streamed Band
	next := 30
	set.Emit = func(b *StateSummary) error {
		if b.First != next {
			t.Errorf("block starts at %d, want %d", b.First, next)
		}
		next += b.Len()
		o := b.Smoothed[0]
		streamed = Band{Mean: append(streamed.Mean, o.Mean...), Q95: append(streamed.Q95, o.Q95...)}
		return nil
	}
	meta, err := c.post.States(context.Background(), set)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Len() != 0 || next != 171 || acc.Len() != 141 {
		t.Fatalf("streamed result holds %d states, blocks ended at %d, accumulated %d", meta.Len(), next, acc.Len())
	}
	for i := range acc.Smoothed[0].Mean {
		if acc.Smoothed[0].Mean[i] != streamed.Mean[i] || acc.Smoothed[0].Q95[i] != streamed.Q95[i] {
			t.Fatalf("state %d: streamed %v, accumulated %v", 30+i, streamed.Mean[i], acc.Smoothed[0].Mean[i])
		}
	}
}

// TestPredictiveScoreLGSSM: the held-out score against the Kalman
// predictive likelihood log p(y_held | y) = log(1/D)Σ_d exp(ℓ_d(y, y_held)
// − ℓ_d(y)), computed from models.Kalman.LogLik: exact path to rounding,
// particle path within MC error of 10 replicates.
func TestPredictiveScoreLGSSM(t *testing.T) {
	c := newSTLGSSM(t, 150, 40)
	var m models.LGSSM
	u, _ := m.Params(0.9, 0.7, 1)
	k, _ := m.Bind(u)
	held := ssm.Sequence{Obs: 1, Y: make([]float64, 40)}
	// Continue the simulated path: filter to its end, then simulate on
	// (any continuation is a valid test sequence).
	rng := rand.New(rand.NewPCG(8, 8))
	x := []float64{c.seq.Y[149]}
	for i := range held.Y {
		nx := []float64{0}
		k.SampleTransition(nx, x, rng)
		k.SampleEmission(held.Y[i:i+1], nx, rng)
		x = nx
	}
	held.Y[5] = math.NaN()
	cat := ssm.Sequence{Obs: 1, Y: append(append([]float64(nil), c.seq.Y...), held.Y...)}
	byDraw := make([]float64, len(c.draws))
	perRow := make([][]float64, 40)
	for d, u := range c.draws {
		kal, _ := m.Kalman(u)
		l1, _ := kal.LogLik(cat, 0, 190)
		l0, _ := kal.LogLik(cat, 0, 150)
		byDraw[d] = l1 - l0
		prev := l0
		for t := range 40 {
			lt, _ := kal.LogLik(cat, 0, 151+t)
			perRow[t] = append(perRow[t], lt-prev)
			prev = lt
		}
	}
	want, _, _ := states.LogMeanExp(byDraw)
	wantPW := 0.0
	for _, r := range perRow {
		v, _, _ := states.LogMeanExp(r)
		wantPW += v
	}
	got, err := c.post.PredictiveScore(context.Background(), held, StateSettings{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || math.Abs(got.LogScore-want) > 1e-8 || math.Abs(got.Pointwise-wantPW) > 1e-8 {
		t.Fatalf("exact score %v (pointwise %v), Kalman %v (%v)", got.LogScore, got.Pointwise, want, wantPW)
	}
	t.Logf("held-out log score %.4f (SE over draws %.3f, ESS %.1f of %d), pointwise %.4f", got.LogScore, got.SE, got.ESS, got.Draws, got.Pointwise)
	if testing.Short() {
		return
	}
	var ls, pw []float64
	for r := range 10 {
		g, err := c.post.PredictiveScore(context.Background(), held, StateSettings{Particles: true, Seed: uint64(r), PF: pf.StateSettings{N: 1000}})
		if err != nil {
			t.Fatal(err)
		}
		ls, pw = append(ls, g.LogScore), append(pw, g.Pointwise)
	}
	for name, pair := range map[string]struct {
		x []float64
		w float64
	}{"joint": {ls, want}, "pointwise": {pw, wantPW}} {
		m, se := stMeanSE(pair.x)
		if math.Abs(m-pair.w) > 4*se {
			t.Errorf("%s particle score %.4f ± %.4f, Kalman %.4f", name, m, se, pair.w)
		}
		t.Logf("%s particle score %.4f ± %.4f, Kalman %.4f", name, m, se, pair.w)
	}
}

func stMeanSE(x []float64) (float64, float64) {
	n := float64(len(x))
	m, ss := 0.0, 0.0
	for _, v := range x {
		m += v / n
	}
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / (n - 1) / n)
}

// TestForecastLGSSM: h-step forecasts of x and y against the exact
// Gaussian forecast mixture over the draws: from the Kalman filtered
// N(m_T, P_T), x_T+h ~ N(φ^h m_T, φ^{2h} P_T + σ²(1 − φ^{2h})/(1 − φ²)) and
// y_T+h adds τ². Exact-start and particle-filter paths, 10 replicates.
func TestForecastLGSSM(t *testing.T) {
	if testing.Short() {
		t.Skip("2×10 replicated forecasts")
	}
	c := newSTLGSSM(t, 100, 40)
	const H = 5
	xref := stBandRef{make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H)}
	yref := stBandRef{make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H)}
	for h := 1; h <= H; h++ {
		var mx, vx, vy []float64
		for _, u := range c.draws {
			kal, _ := c.m.Kalman(u)
			sm, _ := kal.Smooth(c.seq, 0, 100)
			a, q, r := kal.A[0], kal.Q[0], kal.R[0]
			ah := math.Pow(a, float64(h))
			m := ah * sm.MeanAt(100)[0]
			v := ah*ah*sm.CovAt(100)[0] + q*(1-ah*ah)/(1-a*a)
			mx, vx, vy = append(mx, m), append(vx, v), append(vy, v+r)
		}
		i := h - 1
		xref.mean[i], xref.sd[i], xref.q05[i], xref.q50[i], xref.q95[i] = stMixture(mx, vx)
		yref.mean[i], yref.sd[i], yref.q05[i], yref.q50[i], yref.q95[i] = stMixture(mx, vy)
	}
	for _, particles := range []bool{false, true} {
		var xs, ys []Band
		for r := range 10 {
			f, err := c.post.Forecast(context.Background(), H, StateSettings{Particles: particles, Seed: uint64(r), PF: pf.StateSettings{Paths: 50}})
			if err != nil {
				t.Fatal(err)
			}
			if f.Exact == particles || f.Horizon != H || f.Origin != 100 || f.Volatility != nil {
				t.Fatalf("forecast %+v", f)
			}
			xs, ys = append(xs, f.States[0]), append(ys, f.Obs[0])
		}
		name := map[bool]string{false: "exact start", true: "particles"}[particles]
		stCheckReps(t, name+" x", xs, xref)
		stCheckReps(t, name+" y", ys, yref)
	}
}

// svmGridMoments is an independent grid (HMM) forward–backward smoother of
// the SVM (G points over ±8 stationary sds, normal transition densities
// times the cell width, normalised): per state the smoothed E[x], E[x²],
// E[v] and E[v²] for the volatility v = τe^{x/2}.
func svmGridMoments(y []float64, phi, sigma, tau float64, G int) (mx, mx2, mv, mv2 []float64) {
	sd0 := sigma / math.Sqrt(1-phi*phi)
	lo := -8 * sd0
	dx := 16 * sd0 / float64(G-1)
	x := make([]float64, G)
	for i := range x {
		x[i] = lo + dx*float64(i)
	}
	K := make([]float64, G*G)
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
	norm := func(a []float64) {
		s := 0.0
		for _, v := range a {
			s += v
		}
		for i := range a {
			a[i] /= s
		}
	}
	for i := range G {
		alpha[i] = math.Exp(-0.5 * x[i] * x[i] / (sd0 * sd0))
	}
	norm(alpha[:G])
	for t := 1; t <= T; t++ {
		a, p := alpha[t*G:(t+1)*G], alpha[(t-1)*G:t*G]
		for j, pj := range p {
			for i, kv := range K[j*G : (j+1)*G] {
				a[i] += pj * kv
			}
		}
		if yt := y[t-1]; !math.IsNaN(yt) {
			for i := range a {
				v := tau * tau * math.Exp(x[i])
				a[i] *= math.Exp(-0.5*yt*yt/v) / math.Sqrt(v)
			}
		}
		norm(a)
	}
	mx, mx2, mv, mv2 = make([]float64, T+1), make([]float64, T+1), make([]float64, T+1), make([]float64, T+1)
	gamma := append([]float64(nil), alpha[T*G:]...)
	pred, ratio, ng := make([]float64, G), make([]float64, G), make([]float64, G)
	for t := T; t >= 0; t-- {
		if t < T {
			a := alpha[t*G : (t+1)*G]
			clear(pred)
			for j, aj := range a {
				for i, kv := range K[j*G : (j+1)*G] {
					pred[i] += aj * kv
				}
			}
			for i := range ratio {
				ratio[i] = 0
				if pred[i] > 0 {
					ratio[i] = gamma[i] / pred[i]
				}
			}
			for j, aj := range a {
				v := 0.0
				for i, kv := range K[j*G : (j+1)*G] {
					v += kv * ratio[i]
				}
				ng[j] = aj * v
			}
			norm(ng)
			copy(gamma, ng)
		}
		for i, g := range gamma {
			v := tau * math.Exp(0.5*x[i])
			mx[t] += g * x[i]
			mx2[t] += g * x[i] * x[i]
			mv[t] += g * v
			mv2[t] += g * v * v
		}
	}
	return mx, mx2, mv, mv2
}

// TestStatesSVMGrid: posterior-integrated smoothed log-volatility and
// volatility of the SVM over 20 draws against the grid smoother
// integrated over the same draws: means and sds within MC error of 10
// replicates.
func TestStatesSVMGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("grid smoother at 20 draws and 10 replicates")
	}
	m := models.SVM{}
	u0, _ := m.Params(0.95, 0.3, 0.8)
	_, seq, _ := m.Simulate(100, u0, rand.New(rand.NewPCG(4, 4)))
	rng := rand.New(rand.NewPCG(5, 5))
	var draws [][]float64
	for range 20 {
		u := make([]float64, 3)
		for i := range u {
			u[i] = u0[i] + []float64{0.2, 0.15, 0.08}[i]*rng.NormFloat64()
		}
		draws = append(draws, u)
	}
	n := 101
	ex, exv := stBandRef{mean: make([]float64, n), sd: make([]float64, n)}, stBandRef{mean: make([]float64, n), sd: make([]float64, n)}
	s2, s2v := make([]float64, n), make([]float64, n)
	th := make([]float64, 3)
	for _, u := range draws {
		m.Constrain(th, u)
		mx, mx2, mv, mv2 := svmGridMoments(seq.Y, th[0], th[1], th[2], 600)
		for i := range n {
			ex.mean[i] += mx[i] / 20
			s2[i] += mx2[i] / 20
			exv.mean[i] += mv[i] / 20
			s2v[i] += mv2[i] / 20
		}
	}
	for i := range n {
		ex.sd[i] = math.Sqrt(s2[i] - ex.mean[i]*ex.mean[i])
		exv.sd[i] = math.Sqrt(s2v[i] - exv.mean[i]*exv.mean[i])
	}
	post := stPosterior(m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, draws)
	var xs, vs []Band
	for r := range 10 {
		got, err := post.States(context.Background(), StateSettings{Seed: uint64(r), PF: pf.StateSettings{Paths: 20}})
		if err != nil {
			t.Fatal(err)
		}
		if got.SmoothedVol == nil {
			t.Fatal("no volatility band for the SVM")
		}
		xs, vs = append(xs, got.Smoothed[0]), append(vs, *got.SmoothedVol)
	}
	only := func(b []Band) []Band {
		out := make([]Band, len(b))
		for i, x := range b {
			out[i] = Band{Mean: x.Mean, SD: x.SD}
		}
		return out
	}
	stCheckReps(t, "log-volatility", only(xs), stBandRef{mean: ex.mean, sd: ex.sd})
	stCheckReps(t, "volatility", only(vs), stBandRef{mean: exv.mean, sd: exv.sd})
}

// TestStatesGARCH: the fixed-lag path for GARCH gives positive volatility
// bands, and long forecasts have the stationary E[σ²] = μ.
func TestStatesGARCH(t *testing.T) {
	var m models.GARCH
	// β + γ = 0.8 and (β+γ)² + 2β² < 1: σ_t² has a finite variance.
	u, _ := m.FromABG(0.1, 0.3, 0.5, 0.3)
	_, seq, _ := m.Simulate(150, u, rand.New(rand.NewPCG(2, 2)))
	draws := [][]float64{u, u, u, u}
	post := stPosterior(m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, draws)
	got, err := post.States(context.Background(), StateSettings{Filtered: true})
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != pf.FixedLag || len(got.Components) != 1 || got.SmoothedVol == nil || got.FilteredVol == nil {
		t.Fatalf("method %v, components %v, vol %v", got.Method, got.Components, got.SmoothedVol)
	}
	for i, v := range got.SmoothedVol.Q05 {
		if !(v > 0) || !(got.SmoothedVol.Q95[i] >= v) {
			t.Fatalf("state %d: volatility band %v..%v", i, v, got.SmoothedVol.Q95[i])
		}
	}
	f, err := post.Forecast(context.Background(), 200, StateSettings{PF: pf.StateSettings{Paths: 250}})
	if err != nil {
		t.Fatal(err)
	}
	// After 200 steps (0.8^200 ≈ 4e-20) the law is the stationary one:
	// E[σ²] = μ = α/(1−β−γ) = 0.5 (sd of σ² about 0.1 here, so the mean
	// of 1000 draws has an SE near 0.005; tolerance 0.03).
	v := f.Volatility
	if e := v.Mean[199]*v.Mean[199] + v.SD[199]*v.SD[199]; math.Abs(e-0.5) > 0.03 {
		t.Errorf("E[σ²] 200 steps ahead %v, μ = 0.5", e)
	}
	if v.Mean[0] < 0 || v.Q05[0] > v.Q95[0] {
		t.Errorf("one-step volatility band %v..%v", v.Q05[0], v.Q95[0])
	}
	if _, err := post.PredictiveScore(context.Background(), ssm.Sequence{Obs: 1, Y: []float64{0.1, -0.5}}, StateSettings{}); err != nil {
		t.Fatal(err)
	}
}

// TestLogLikLGSSM: the particle log-likelihood at the posterior mean is
// within 4 of its standard errors of the exact Kalman value.
func TestLogLikLGSSM(t *testing.T) {
	c := newSTLGSSM(t, 150, 20)
	u, err := c.post.MeanU()
	if err != nil {
		t.Fatal(err)
	}
	exact, se0, err := c.post.LogLik(context.Background(), u, StateSettings{})
	if err != nil || se0 != 0 {
		t.Fatal(err, se0)
	}
	kal, _ := c.m.Kalman(u)
	if ref, _ := kal.LogLik(c.seq, 0, 150); math.Abs(ref-exact) > 1e-9 {
		t.Fatalf("exact %v, Kalman %v", exact, ref)
	}
	ll, se, err := c.post.LogLik(context.Background(), u, StateSettings{Particles: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ll-exact) > 4*se+1e-3 {
		t.Errorf("particle log-likelihood %v ± %v, exact %v", ll, se, exact)
	}
	t.Logf("log-likelihood at the posterior mean: particle %.3f ± %.3f, exact %.3f", ll, se, exact)
}

// TestStatesErrors: what the state methods refuse.
func TestStatesErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := new(Posterior).States(ctx, StateSettings{}); !errors.Is(err, ErrNoModel) {
		t.Errorf("no model: %v", err)
	}
	c := newSTLGSSM(t, 30, 5)
	for _, s := range []StateSettings{{Sequence: 1}, {Draws: -1}, {Start: 20, End: 10}, {End: 31}, {Components: []int{1}}, {PF: pf.StateSettings{N: -1}}} {
		if _, err := c.post.States(ctx, s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if _, err := c.post.Forecast(ctx, 0, StateSettings{}); !errors.Is(err, ErrSettings) {
		t.Errorf("horizon 0: %v", err)
	}
	if _, err := c.post.PredictiveScore(ctx, ssm.Sequence{Obs: 2, Y: []float64{1, 2}}, StateSettings{}); !errors.Is(err, ssm.ErrData) {
		t.Errorf("held-out data of the wrong dimension: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.post.States(cctx, StateSettings{Particles: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// BenchmarkPosteriorStates: smoothed states and volatility of the SVM for
// T = 2000 integrated over 200 posterior draws with the default settings
// (FFBSi, N = 256, M = 10), on all cores.
func BenchmarkPosteriorStates(b *testing.B) {
	m := models.SVM{}
	u0, _ := m.Params(0.95, 0.3, 0.8)
	_, seq, _ := m.Simulate(2000, u0, rand.New(rand.NewPCG(4, 4)))
	rng := rand.New(rand.NewPCG(5, 5))
	var draws [][]float64
	for range 200 {
		u := make([]float64, 3)
		for i := range u {
			u[i] = u0[i] + 0.05*rng.NormFloat64()
		}
		draws = append(draws, u)
	}
	post := stPosterior(m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, draws)
	for _, filtered := range []bool{false, true} {
		name := map[bool]string{false: "smoothed", true: "smoothed+filtered"}[filtered]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := post.States(context.Background(), StateSettings{Filtered: filtered}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
