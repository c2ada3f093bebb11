package models_test

import (
	"errors"
	"gonum.org/v1/gonum/stat/distmv"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Independent answers for the Kalman code: the dense joint Gaussian of
// (x_0..x_n, y_1..y_n), built from the model by covariance recursions and
// conditioned with gonum/mat; finite differences of the log-likelihood.

// kfDense is the joint law of the states x_0..x_n of a Kalman model (mean
// mx, covariance cxx, both over (n+1)·D coordinates, state-major).
type kfDense struct {
	d, n int
	mx   []float64
	cxx  *mat.SymDense
}

func kfNewDense(k models.Kalman, n int) kfDense {
	d := k.D
	N := (n + 1) * d
	A := mat.NewDense(d, d, k.A)
	mx := make([]float64, N)
	if k.M0 != nil {
		copy(mx, k.M0)
	}
	for s := 1; s <= n; s++ {
		mv := mat.NewVecDense(d, mx[s*d:(s+1)*d])
		mv.MulVec(A, mat.NewVecDense(d, mx[(s-1)*d:s*d]))
	}
	// Blocks C[s][t] = Cov(x_s, x_t): V_t on the diagonal, A C[s−1][t] below.
	blocks := make([][]*mat.Dense, n+1)
	for s := range blocks {
		blocks[s] = make([]*mat.Dense, n+1)
	}
	V := mat.NewDense(d, d, append([]float64(nil), k.P0...))
	for t := 0; t <= n; t++ {
		if t > 0 {
			var nv mat.Dense
			nv.Product(A, V, A.T())
			for i := 0; i < d; i++ {
				nv.Set(i, i, nv.At(i, i)+k.Q[i])
			}
			V = &nv
		}
		blocks[t][t] = mat.DenseCopyOf(V)
		for s := t + 1; s <= n; s++ {
			var c mat.Dense
			c.Mul(A, blocks[s-1][t])
			blocks[s][t] = &c
		}
	}
	cxx := mat.NewSymDense(N, nil)
	for s := 0; s <= n; s++ {
		for t := 0; t <= s; t++ {
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					if s == t && j > i {
						continue
					}
					cxx.SetSym(s*d+i, t*d+j, blocks[s][t].At(i, j))
				}
			}
		}
	}
	return kfDense{d: d, n: n, mx: mx, cxx: cxx}
}

// kfObs lists the observed components of rows [start, end): their state
// coordinate in the dense vector, value and noise variance.
func kfObs(k models.Kalman, seq ssm.Sequence, start, end int) (idx []int, y, r []float64) {
	d := k.D
	for row := start; row < end; row++ {
		for i, v := range seq.At(row) {
			if math.IsNaN(v) {
				continue
			}
			idx = append(idx, (row-start+1)*d+i)
			y = append(y, v)
			r = append(r, k.R[i])
		}
	}
	return idx, y, r
}

// kfDenseLogLik is log p(y[start:end]) from the dense Gaussian of the
// observed components only (missing components are dropped).
func kfDenseLogLik(t testing.TB, k models.Kalman, seq ssm.Sequence, start, end int) float64 {
	t.Helper()
	dn := kfNewDense(k, end-start)
	idx, y, r := kfObs(k, seq, start, end)
	if len(idx) == 0 {
		return 0
	}
	mu := make([]float64, len(idx))
	cov := mat.NewSymDense(len(idx), nil)
	for a, ia := range idx {
		mu[a] = dn.mx[ia]
		for b := 0; b <= a; b++ {
			v := dn.cxx.At(ia, idx[b])
			if a == b {
				v += r[a]
			}
			cov.SetSym(a, b, v)
		}
	}
	// log N(y | mu, cov) with gonum's dense multivariate normal.
	n, ok := distmv.NewNormal(mu, cov, nil)
	if !ok {
		t.Fatal("dense covariance of y not positive definite")
	}
	return n.LogProb(y)
}

// kfCondition returns the mean and covariance of x_0..x_n given the
// observations of rows [start, end) by dense Gaussian conditioning.
func kfCondition(t testing.TB, k models.Kalman, seq ssm.Sequence, start, end int) ([]float64, *mat.SymDense) {
	t.Helper()
	dn := kfNewDense(k, end-start)
	N := len(dn.mx)
	idx, y, r := kfObs(k, seq, start, end)
	mean := append([]float64(nil), dn.mx...)
	cov := mat.NewSymDense(N, nil)
	cov.CopySym(dn.cxx)
	if len(idx) == 0 {
		return mean, cov
	}
	m := len(idx)
	syy := mat.NewSymDense(m, nil)
	sxy := mat.NewDense(N, m, nil)
	res := mat.NewVecDense(m, nil)
	for a, ia := range idx {
		res.SetVec(a, y[a]-dn.mx[ia])
		for b := 0; b <= a; b++ {
			v := dn.cxx.At(ia, idx[b])
			if a == b {
				v += r[a]
			}
			syy.SetSym(a, b, v)
		}
		for i := 0; i < N; i++ {
			sxy.Set(i, a, dn.cxx.At(i, ia))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(syy) {
		t.Fatal("dense covariance of y not positive definite")
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, res); err != nil {
		t.Fatal(err)
	}
	var dm mat.VecDense
	dm.MulVec(sxy, &sol)
	for i := range mean {
		mean[i] += dm.AtVec(i)
	}
	var k2 mat.Dense // Syy⁻¹ Syx
	if err := ch.SolveTo(&k2, sxy.T()); err != nil {
		t.Fatal(err)
	}
	var red mat.Dense
	red.Mul(sxy, &k2)
	for i := 0; i < N; i++ {
		for j := 0; j <= i; j++ {
			cov.SetSym(i, j, dn.cxx.At(i, j)-0.5*(red.At(i, j)+red.At(j, i)))
		}
	}
	return mean, cov
}

// kfStable returns a random d×d matrix with spectral radius rho.
func kfStable(rng *rand.Rand, d int, rho float64) []float64 {
	a := make([]float64, d*d)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	r := kfRadius(a, d)
	for i := range a {
		a[i] *= rho / r
	}
	return a
}

func kfRadius(a []float64, d int) float64 {
	var eig mat.Eigen
	if !eig.Factorize(mat.NewDense(d, d, append([]float64(nil), a...)), mat.EigenNone) {
		panic("eigen failed")
	}
	r := 0.0
	for _, l := range eig.Values(nil) {
		r = math.Max(r, cmplx.Abs(l))
	}
	return r
}

// kfRandomKalman draws a random model with a non-stationary start
// (M0 ≠ 0, P0 a random SPD matrix) so the generic code is exercised fully.
func kfRandomKalman(rng *rand.Rand, d int) models.Kalman {
	k := models.Kalman{D: d, A: kfStable(rng, d, 0.5+0.45*rng.Float64()),
		Q: make([]float64, d), R: make([]float64, d), M0: make([]float64, d), P0: make([]float64, d*d)}
	b := make([]float64, d*d)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	for i := 0; i < d; i++ {
		k.Q[i] = 0.2 + 1.3*rng.Float64()
		k.R[i] = 0.2 + 1.3*rng.Float64()
		k.M0[i] = rng.NormFloat64()
		for j := 0; j < d; j++ {
			s := 0.0
			for c := 0; c < d; c++ {
				s += b[i*d+c] * b[j*d+c]
			}
			if i == j {
				s += 0.5
			}
			k.P0[i*d+j] = s
		}
	}
	return k
}

// kfSimulate draws T observations from k; a fraction pMiss of components
// is set missing, and row T/3 entirely.
func kfSimulate(rng *rand.Rand, k models.Kalman, T int, pMiss float64) ssm.Sequence {
	d := k.D
	x := make([]float64, d)
	nx := make([]float64, d)
	for i := range x {
		x[i] = rng.NormFloat64() // start need not match P0: only the data matter
	}
	y := ssm.Sequence{Obs: d, Y: make([]float64, T*d)}
	for t := 0; t < T; t++ {
		for i := 0; i < d; i++ {
			s := 0.0
			for j := 0; j < d; j++ {
				s += k.A[i*d+j] * x[j]
			}
			nx[i] = s + math.Sqrt(k.Q[i])*rng.NormFloat64()
		}
		x, nx = nx, x
		for i := 0; i < d; i++ {
			v := x[i] + math.Sqrt(k.R[i])*rng.NormFloat64()
			if rng.Float64() < pMiss || t == T/3 {
				v = math.NaN()
			}
			y.Y[t*d+i] = v
		}
	}
	return y
}

func kfRelErr(got, want float64) float64 {
	return math.Abs(got-want) / math.Max(math.Abs(want), 1)
}

// kfFD is the Richardson-extrapolated central difference of f at u in
// coordinate i (steps h, h/2, h/4; error O(h⁶)).
func kfFD(t testing.TB, f func([]float64) (float64, error), u []float64, i int, h float64) float64 {
	t.Helper()
	v := append([]float64(nil), u...)
	var d [3]float64
	for s := range d {
		v[i] = u[i] + h
		fp, err := f(v)
		if err != nil {
			t.Fatal(err)
		}
		v[i] = u[i] - h
		fm, err := f(v)
		if err != nil {
			t.Fatal(err)
		}
		d[s] = (fp - fm) / (2 * h)
		h /= 2
	}
	r0, r1 := (4*d[1]-d[0])/3, (4*d[2]-d[1])/3
	return (16*r1 - r0) / 15
}

func TestKalmanLogLikDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for _, d := range []int{1, 3} {
		for rep := 0; rep < 3; rep++ {
			k := kfRandomKalman(rng, d)
			T := 40
			for _, pMiss := range []float64{0, 0.3} {
				seq := kfSimulate(rng, k, T, pMiss)
				for _, span := range [][2]int{{0, T}, {7, 31}, {T / 3, T/3 + 1}, {T - 1, T}} {
					want := kfDenseLogLik(t, k, seq, span[0], span[1])
					got, err := k.LogLik(seq, span[0], span[1])
					if err != nil {
						t.Fatal(err)
					}
					sm, err := k.Smooth(seq, span[0], span[1])
					if err != nil {
						t.Fatal(err)
					}
					w := ssm.Window{Start: span[0], End: span[1], KeepStart: span[0], KeepEnd: span[1]}
					got3, err := k.ExpectedScore(models.NewKalmanGrad(d), seq, w)
					if err != nil {
						t.Fatal(err)
					}
					for _, g := range []float64{got, sm.LogLik, got3} {
						e := math.Abs(g - want)
						worst = math.Max(worst, e)
						if e > 1e-9*math.Max(1, math.Abs(want)) {
							t.Errorf("d=%d miss=%v span %v: Kalman log-lik %.15g, dense %.15g", d, pMiss, span, g, want)
						}
					}
				}
			}
		}
	}
	t.Logf("max abs error of the Kalman log-likelihood vs the dense Gaussian: %.3g", worst)
}

func TestKalmanSmoothDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	worst := 0.0
	for _, d := range []int{1, 3} {
		k := kfRandomKalman(rng, d)
		T := 30
		seq := kfSimulate(rng, k, T, 0.25)
		for _, span := range [][2]int{{0, T}, {5, 20}} {
			sm, err := k.Smooth(seq, span[0], span[1])
			if err != nil {
				t.Fatal(err)
			}
			mean, cov := kfCondition(t, k, seq, span[0], span[1])
			n := span[1] - span[0]
			if sm.Len() != n || sm.Start != span[0] {
				t.Fatalf("Smoothed has Len %d Start %d, want %d %d", sm.Len(), sm.Start, n, span[0])
			}
			check := func(what string, got, want float64) {
				e := math.Abs(got - want)
				worst = math.Max(worst, e)
				if e > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("d=%d span %v %s: RTS %.15g, dense %.15g", d, span, what, got, want)
				}
			}
			for kk := 0; kk <= n; kk++ {
				for i := 0; i < d; i++ {
					check("mean", sm.MeanAt(kk)[i], mean[kk*d+i])
					for j := 0; j < d; j++ {
						check("cov", sm.CovAt(kk)[i*d+j], cov.At(kk*d+i, kk*d+j))
						if kk > 0 {
							check("lag", sm.LagAt(kk)[i*d+j], cov.At(kk*d+i, (kk-1)*d+j))
						}
					}
				}
			}
		}
	}
	t.Logf("max abs error of the RTS moments vs dense conditioning: %.3g", worst)
}

// TestKalmanExpectedScoreFD checks the generic natural-parameter gradient
// (A, Q, R, M0, P0) against finite differences of the log-likelihood, with
// a non-stationary start and missing data (Fisher's identity).
func TestKalmanExpectedScoreFD(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	worst := 0.0
	for _, d := range []int{1, 3} {
		k := kfRandomKalman(rng, d)
		T := 60
		seq := kfSimulate(rng, k, T, 0.2)
		g := models.NewKalmanGrad(d)
		if _, err := k.ExpectedScore(g, seq, ssm.Full(T)); err != nil {
			t.Fatal(err)
		}
		// Flatten (A, Q, R, M0, P0 upper triangle) into one vector θ;
		// block b indexes (A, Q, R, M0, P0).
		type ref struct{ b, i, j int } // j ≥ 0: symmetric partner (P0)
		var refs []ref
		var analytic []float64
		for i := range k.A {
			refs, analytic = append(refs, ref{0, i, -1}), append(analytic, g.A[i])
		}
		for i := 0; i < d; i++ {
			refs, analytic = append(refs, ref{1, i, -1}), append(analytic, g.Q[i])
			refs, analytic = append(refs, ref{2, i, -1}), append(analytic, g.R[i])
			refs, analytic = append(refs, ref{3, i, -1}), append(analytic, g.M0[i])
		}
		for i := 0; i < d; i++ {
			for j := i; j < d; j++ {
				// Moving P0_ij and P0_ji together: derivative tr(G (E_ij + E_ji)).
				a := g.P0[i*d+j]
				if i != j {
					a += g.P0[j*d+i]
				}
				refs, analytic = append(refs, ref{4, i*d + j, j*d + i}), append(analytic, a)
			}
		}
		blocksOf := func(k models.Kalman) [][]float64 { return [][]float64{k.A, k.Q, k.R, k.M0, k.P0} }
		theta := make([]float64, len(refs))
		for c, r := range refs {
			theta[c] = blocksOf(k)[r.b][r.i]
		}
		f := func(v []float64) (float64, error) {
			kk := models.Kalman{D: d, A: append([]float64(nil), k.A...), Q: append([]float64(nil), k.Q...),
				R: append([]float64(nil), k.R...), M0: append([]float64(nil), k.M0...), P0: append([]float64(nil), k.P0...)}
			bl := blocksOf(kk)
			for c, r := range refs {
				bl[r.b][r.i] = v[c]
				if r.j >= 0 {
					bl[r.b][r.j] = v[c]
				}
			}
			return kk.LogLik(seq, 0, T)
		}
		for c := range theta {
			fd := kfFD(t, f, theta, c, 1e-3)
			e := kfRelErr(analytic[c], fd)
			worst = math.Max(worst, e)
			if e > 1e-6 {
				t.Errorf("d=%d natural coordinate %d: analytic %.12g, finite difference %.12g", d, c, analytic[c], fd)
			}
		}
	}
	t.Logf("max relative error of the natural-parameter Kalman score vs FD: %.3g", worst)
}

func TestKalmanErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	k := kfRandomKalman(rng, 2)
	seq := kfSimulate(rng, k, 10, 0)
	var pe *ssm.ParamError
	bad := k
	bad.Q = []float64{1, -1}
	if _, err := bad.LogLik(seq, 0, 10); !errors.As(err, &pe) || pe.Name != "Q" {
		t.Errorf("Q ≤ 0: got %v, want a *ssm.ParamError naming Q", err)
	}
	bad = k
	bad.P0 = []float64{1, 2, 2, 1}
	if _, err := bad.Smooth(seq, 0, 10); !errors.As(err, &pe) || pe.Name != "P0" {
		t.Errorf("P0 indefinite: got %v, want a *ssm.ParamError naming P0", err)
	}
	bad = k
	bad.A = []float64{0.5, math.NaN(), 0, 0.5}
	if _, err := bad.LogLik(seq, 0, 10); !errors.As(err, &pe) || pe.Name != "A" {
		t.Errorf("NaN in A: got %v, want a *ssm.ParamError naming A", err)
	}
	if _, err := k.LogLik(seq, 3, 11); !errors.Is(err, ssm.ErrWindow) {
		t.Errorf("window past the end: got %v, want ErrWindow", err)
	}
	if _, err := k.ExpectedScore(nil, seq, ssm.Window{Start: 2, End: 8, KeepStart: 1, KeepEnd: 5}); !errors.Is(err, ssm.ErrWindow) {
		t.Errorf("kept span outside the window: got %v, want ErrWindow", err)
	}
	inf := ssm.Sequence{Obs: 2, Y: append([]float64(nil), seq.Y...)}
	inf.Y[7] = math.Inf(1)
	if _, err := k.LogLik(inf, 0, 10); !errors.Is(err, ssm.ErrData) {
		t.Errorf("Inf observation: got %v, want ErrData", err)
	}
	if _, err := k.LogLik(ssm.Sequence{Obs: 3, Y: make([]float64, 9)}, 0, 3); !errors.Is(err, ssm.ErrData) {
		t.Errorf("wrong observation dimension: got %v, want ErrData", err)
	}
	// A window of only missing data: log-likelihood 0 and a finite statistic.
	miss := ssm.Sequence{Obs: 2, Y: append([]float64(nil), seq.Y...)}
	for i := 4; i < 12; i++ {
		miss.Y[i] = math.NaN()
	}
	g := models.NewKalmanGrad(2)
	ll, err := k.ExpectedScore(g, miss, ssm.Window{Start: 2, End: 6, KeepStart: 2, KeepEnd: 6})
	if err != nil || ll != 0 {
		t.Errorf("all-missing window: log-lik %v, err %v; want 0, nil", ll, err)
	}
	for _, s := range [][]float64{g.A, g.Q, g.R, g.M0, g.P0} {
		for _, v := range s {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("all-missing window: gradient %v not finite", g)
			}
		}
	}
}

// kfExactModel is a model with exact Kalman inference (LGSSM, LGSSMd).
type kfExactModel interface {
	ssm.Model
	ssm.ExactScorer
	Kalman(u []float64) (models.Kalman, error)
}

// kfBruteStatistic computes the windowed statistic of w independently of
// the RTS code: the conditional law of the states given the window's data
// by dense conditioning, and E[h_t] of the (quadratic) pairwise score from
// the kernel's AddScore at the 2n sigma points μ ± √n L e_i of the law of
// (x_{t−1}, x_t), which integrate polynomials of degree ≤ 3 exactly.
func kfBruteStatistic(t testing.TB, m kfExactModel, u []float64, seq ssm.Sequence, w ssm.Window) []float64 {
	t.Helper()
	k, err := m.Kalman(u)
	if err != nil {
		t.Fatal(err)
	}
	kern, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	d, p := k.D, m.Dims().Param
	mean, cov := kfCondition(t, k, seq, w.Start, w.End)
	out := make([]float64, p)
	h := make([]float64, p)
	// expect adds wt·E[AddScore] over z = states [from, from+len) (flattened).
	expect := func(wt float64, from, nz int, y []float64, pair bool) {
		sub := mat.NewSymDense(nz, nil)
		for i := 0; i < nz; i++ {
			for j := 0; j <= i; j++ {
				sub.SetSym(i, j, cov.At(from+i, from+j))
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(sub) {
			t.Fatal("conditional covariance not positive definite")
		}
		var L mat.TriDense
		ch.LTo(&L)
		z := make([]float64, nz)
		s := math.Sqrt(float64(nz))
		for c := 0; c < nz; c++ {
			for _, sign := range []float64{1, -1} {
				for i := range z {
					z[i] = mean[from+i] + sign*s*L.At(i, c)
				}
				clear(h)
				if pair {
					kern.AddScore(h, 1, y, z[d:], z[:d])
				} else {
					kern.AddScore(h, 1, nil, z, nil)
				}
				for i := range out {
					out[i] += wt * h[i] / float64(2*nz)
				}
			}
		}
	}
	for tt := w.KeepStart; tt < w.KeepEnd; tt++ {
		kk := tt - w.Start + 1
		expect(w.Weight(tt), (kk-1)*d, 2*d, seq.At(tt), true)
	}
	if w.KeepsInitial() {
		expect(w.Weight(0), 0, d, nil, false)
	}
	return out
}

// kfCheckBrute compares ExactScore on windows with kept sub-ranges and
// random weights with kfBruteStatistic (relative tolerance 1e-9); returns
// the largest relative error.
func kfCheckBrute(t *testing.T, m kfExactModel, u []float64, seq ssm.Sequence, rng *rand.Rand) float64 {
	t.Helper()
	T := seq.Len()
	worst := 0.0
	for _, w := range []ssm.Window{
		{Start: 0, End: T, KeepStart: 0, KeepEnd: T},
		{Start: 0, End: 20, KeepStart: 0, KeepEnd: 8},
		{Start: 5, End: 30, KeepStart: 10, KeepEnd: 20},
		{Start: 3, End: 25, KeepStart: 3, KeepEnd: 25},
		{Start: 10, End: 20, KeepStart: 15, KeepEnd: 15},
	} {
		for _, weighted := range []bool{false, true} {
			if weighted {
				w.Weights = make([]float64, w.KeepEnd-w.KeepStart)
				for i := range w.Weights {
					w.Weights[i] = 0.2 + 3*rng.Float64()
				}
			}
			want := kfBruteStatistic(t, m, u, seq, w)
			got := make([]float64, len(u))
			for i := range got {
				got[i] = 0.5 // ExactScore adds
			}
			ll, err := m.ExactScore(got, u, seq, w)
			if err != nil {
				t.Fatal(err)
			}
			k, _ := m.Kalman(u)
			if wantLL := kfDenseLogLik(t, k, seq, w.Start, w.End); kfRelErr(ll, wantLL) > 1e-10 {
				t.Errorf("window %+v: log-lik %.15g, dense %.15g", w, ll, wantLL)
			}
			for i := range got {
				e := kfRelErr(got[i]-0.5, want[i])
				worst = math.Max(worst, e)
				if e > 1e-9 {
					t.Errorf("window %+v, %s: exact %.15g, brute force %.15g", w, m.ParamNames()[i], got[i]-0.5, want[i])
				}
			}
		}
	}
	return worst
}

// kfCheckFD compares ExactScore with central differences of the window
// log-likelihood. For a window starting at a > 0 the derivative is the
// statistic kept over the whole window plus E[∇ log ν_0(x_a) | y], which
// the statistic excludes; the test adds it by differentiating
// u ↦ E_M[log N(x | 0, P0(u))] = −½ log det P0(u) − ½ tr(P0(u)⁻¹ M) with
// M = E[x xᵀ | y] fixed (from dense conditioning), numerically.
func kfCheckFD(t *testing.T, m kfExactModel, u []float64, seq ssm.Sequence, start, end int, h float64) float64 {
	t.Helper()
	w := ssm.Window{Start: start, End: end, KeepStart: start, KeepEnd: end}
	grad := make([]float64, len(u))
	if _, err := m.ExactScore(grad, u, seq, w); err != nil {
		t.Fatal(err)
	}
	if start > 0 {
		k, _ := m.Kalman(u)
		d := k.D
		mean, cov := kfCondition(t, k, seq, start, end)
		M := mat.NewSymDense(d, nil)
		for i := 0; i < d; i++ {
			for j := 0; j <= i; j++ {
				M.SetSym(i, j, cov.At(i, j)+mean[i]*mean[j])
			}
		}
		initial := func(v []float64) (float64, error) {
			kv, err := m.Kalman(v)
			if err != nil {
				return 0, err
			}
			var ch mat.Cholesky
			if !ch.Factorize(mat.NewSymDense(d, kv.P0)) {
				t.Fatal("P0 not positive definite")
			}
			var inv mat.SymDense
			if err := ch.InverseTo(&inv); err != nil {
				t.Fatal(err)
			}
			tr := 0.0
			for i := 0; i < d; i++ {
				for j := 0; j < d; j++ {
					tr += inv.At(i, j) * M.At(j, i)
				}
			}
			return -0.5*ch.LogDet() - 0.5*tr, nil
		}
		for i := range grad {
			grad[i] += kfFD(t, initial, u, i, h)
		}
	}
	f := func(v []float64) (float64, error) { return m.ExactScore(nil, v, seq, w) }
	worst := 0.0
	for i := range grad {
		fd := kfFD(t, f, u, i, h)
		e := kfRelErr(grad[i], fd)
		worst = math.Max(worst, e)
		if e > 1e-6 {
			t.Errorf("window [%d,%d) %s: exact score %.12g, finite difference %.12g", start, end, m.ParamNames()[i], grad[i], fd)
		}
	}
	return worst
}

// kfCheckSumOverTimes checks the identity the gradient package relies on:
// the statistics of the single kept times t (plus the initial term at
// t = 0) of the full window add up to the exact score.
func kfCheckSumOverTimes(t *testing.T, m kfExactModel, u []float64, seq ssm.Sequence) float64 {
	t.Helper()
	T := seq.Len()
	full := make([]float64, len(u))
	if _, err := m.ExactScore(full, u, seq, ssm.Full(T)); err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, len(u))
	for tt := 0; tt < T; tt++ {
		if _, err := m.ExactScore(sum, u, seq, ssm.Window{Start: 0, End: T, KeepStart: tt, KeepEnd: tt + 1}); err != nil {
			t.Fatal(err)
		}
	}
	worst := 0.0
	for i := range sum {
		e := kfRelErr(sum[i], full[i])
		worst = math.Max(worst, e)
		if e > 1e-10 {
			t.Errorf("%s: sum over single times %.15g, full statistic %.15g", m.ParamNames()[i], sum[i], full[i])
		}
	}
	return worst
}
