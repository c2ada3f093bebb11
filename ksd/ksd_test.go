package ksd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// imqK is the base kernel written independently of the package.
func imqK(k IMQ, x, y []float64) float64 {
	r2 := 0.0
	for i := range x {
		r2 += (x[i] - y[i]) * (x[i] - y[i])
	}
	return math.Pow(k.C*k.C+r2, k.Beta)
}

// testK0 is the Stein kernel from its definition
// s(x)s(y)k + s(x)∂k/∂y_d + s(y)∂k/∂x_d + ∂²k/∂x_d∂y_d, with the derivatives of
// (C²+r²)^β written out by the chain rule (checked against finite differences
// in TestTestK0FD).
func testK0(k IMQ, d int, x, y, sx, sy []float64) float64 {
	r2 := 0.0
	for i := range x {
		r2 += (x[i] - y[i]) * (x[i] - y[i])
	}
	u := k.C*k.C + r2
	b := k.Beta
	diff := x[d] - y[d]
	kk := math.Pow(u, b)
	dkdx := b * math.Pow(u, b-1) * 2 * diff
	dkdy := -dkdx
	// ∂/∂y_d of 2β u^(β−1) δ: δ' = −1, u' = −2δ.
	dkdxdy := 2*b*(b-1)*math.Pow(u, b-2)*(-2*diff)*diff - 2*b*math.Pow(u, b-1)
	return sx[d]*sy[d]*kk + sx[d]*dkdy + sy[d]*dkdx + dkdxdy
}

// fdK0 is the Stein kernel with all kernel derivatives by central finite differences.
func fdK0(k IMQ, d int, x, y, sx, sy []float64) float64 {
	const h = 1e-4
	shift := func(v []float64, e float64) []float64 {
		w := append([]float64(nil), v...)
		w[d] += e
		return w
	}
	kk := imqK(k, x, y)
	dkdx := (imqK(k, shift(x, h), y) - imqK(k, shift(x, -h), y)) / (2 * h)
	dkdy := (imqK(k, x, shift(y, h)) - imqK(k, x, shift(y, -h))) / (2 * h)
	dkdxdy := (imqK(k, shift(x, h), shift(y, h)) - imqK(k, shift(x, h), shift(y, -h)) -
		imqK(k, shift(x, -h), shift(y, h)) + imqK(k, shift(x, -h), shift(y, -h))) / (4 * h * h)
	return sx[d]*sy[d]*kk + sx[d]*dkdy + sy[d]*dkdx + dkdxdy
}

var testKernels = []IMQ{DefaultIMQ(), {C: 2, Beta: -0.3}, {C: 0.5, Beta: -0.9}}

func randRows(rng *rand.Rand, n, dim int, scale float64) []float64 {
	v := make([]float64, n*dim)
	for i := range v {
		v[i] = scale * rng.NormFloat64()
	}
	return v
}

func TestTestK0FD(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	worst := 0.0
	for _, k := range testKernels {
		for range 20 {
			x, y := randRows(rng, 1, 3, 1), randRows(rng, 1, 3, 1)
			sx, sy := randRows(rng, 1, 3, 2), randRows(rng, 1, 3, 2)
			for d := range 3 {
				for _, yy := range [][]float64{y, x} { // off-diagonal and diagonal
					a, b := testK0(k, d, x, yy, sx, sy), fdK0(k, d, x, yy, sx, sy)
					e := math.Abs(a-b) / math.Max(1, math.Abs(b))
					worst = math.Max(worst, e)
				}
			}
		}
	}
	// Central differences with h = 1e-4: round-off ~ eps/h² ~ 1e-8, truncation
	// O(h² ∂⁴k), up to ~1e-6 for C = 0.5 where u^(β−2) reaches 0.25^(−2.9) ≈ 56.
	if worst > 1e-5 {
		t.Errorf("closed-form Stein kernel vs finite differences: max rel error %g", worst)
	}
	t.Logf("max rel error vs FD: %.2g", worst)
}

// bruteForce returns the V and U statistics by the plain double loop.
func bruteForce(k IMQ, x, s []float64, dim int) (v, u []float64) {
	n := len(x) / dim
	v, u = make([]float64, dim), make([]float64, dim)
	for d := range dim {
		diag, off := 0.0, 0.0
		for i := range n {
			for j := range n {
				kij := testK0(k, d, x[i*dim:(i+1)*dim], x[j*dim:(j+1)*dim], s[i*dim:(i+1)*dim], s[j*dim:(j+1)*dim])
				if i == j {
					diag += kij
				} else {
					off += kij
				}
			}
		}
		v[d] = (diag + off) / float64(n*n)
		u[d] = off / float64(n*(n-1))
	}
	return v, u
}

func TestComputeBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	const n, dim = 37, 3
	worst := 0.0
	for _, k := range testKernels {
		x := randRows(rng, n, dim, 1.5)
		s := randRows(rng, n, dim, 1)
		wantV, wantU := bruteForce(k, x, s, dim)
		for _, stat := range []Statistic{V, U} {
			r, err := Compute(x, s, dim, &Settings{Kernel: k, Statistic: stat, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			want := wantV
			if stat == U {
				want = wantU
			}
			sum := 0.0
			for d := range dim {
				e := math.Abs(r.Squared[d]-want[d]) / math.Max(1e-3, math.Abs(want[d]))
				worst = math.Max(worst, e)
				sum += math.Sqrt(want[d])
			}
			if stat == V && math.Abs(r.KSD-sum) > 1e-10*sum {
				t.Errorf("%v: KSD = %v, want Σ_d √ = %v", k, r.KSD, sum)
			}
		}
	}
	if worst > 1e-12 {
		t.Errorf("Compute vs brute-force double loop: max rel error %g", worst)
	}
	t.Logf("max rel error vs brute force: %.2g", worst)
}

// gaussPop holds population moments of the Stein kernel for target N(0,1)
// (score −x) and x, y iid N(m,1), from a 2-D trapezoid rule on a fine grid
// (spectrally accurate for smooth integrands with Gaussian tails).
type gaussPop struct {
	ksd2   float64 // E k0(x,y)
	diag   float64 // E k0(x,x)
	zeta1  float64 // Var_x E_y k0(x,y)
	zeta2  float64 // Var k0(x,y)
	varDia float64 // Var k0(x,x)
}

func population(k IMQ, m float64) gaussPop {
	const h, half = 0.02, 9.0
	n := int(2*half/h) + 1
	grid := make([]float64, n)
	w := make([]float64, n)
	for i := range grid {
		grid[i] = m - half + float64(i)*h
		z := grid[i] - m
		w[i] = h * math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	}
	var p gaussPop
	var ek2, eh2, ed2 float64
	for i, x := range grid {
		h1 := 0.0
		for j, y := range grid {
			v := testK0(k, 0, []float64{x}, []float64{y}, []float64{-x}, []float64{-y})
			h1 += w[j] * v
			ek2 += w[i] * w[j] * v * v
		}
		p.ksd2 += w[i] * h1
		eh2 += w[i] * h1 * h1
		dv := testK0(k, 0, []float64{x}, []float64{x}, []float64{-x}, []float64{-x})
		p.diag += w[i] * dv
		ed2 += w[i] * dv * dv
	}
	p.zeta1 = eh2 - p.ksd2*p.ksd2
	p.zeta2 = ek2 - p.ksd2*p.ksd2
	p.varDia = ed2 - p.diag*p.diag
	return p
}

func TestPopulationQuadrature(t *testing.T) {
	// Cross-check of the 2-D grid: with δ = x−y ~ N(0,2) and σ = x+y ~ N(2m,2)
	// independent, xy = (σ²−δ²)/4 and E k0 reduces to a 1-D integral over δ.
	k := DefaultIMQ()
	const m = 0.5
	p := population(k, m)
	b := k.Beta
	oneD := 0.0
	const h = 1e-3
	for z := -15.0; z <= 15; z += h {
		u := 1 + z*z
		wz := h * math.Exp(-z*z/4) / math.Sqrt(4*math.Pi)
		// s(x) = −x, s(y) = −y: s_x s_y = xy, δ(s_x − s_y) = −δ².
		oneD += wz * (math.Pow(u, b)*(2+4*m*m-z*z)/4 - 2*b*math.Pow(u, b-1)*(1-z*z) - 4*b*(b-1)*math.Pow(u, b-2)*z*z)
	}
	if math.Abs(p.ksd2-oneD) > 1e-9 {
		t.Errorf("2-D quadrature %v vs 1-D reduction %v", p.ksd2, oneD)
	}
	// E k0(x,x) = C^(2β)(1+m²) − 2β C^(2β−2) in closed form.
	if want := math.Pow(k.C, 2*b)*(1+m*m) - 2*b*math.Pow(k.C, 2*b-2); math.Abs(p.diag-want) > 1e-10 {
		t.Errorf("E k0(x,x): quadrature %v, closed form %v", p.diag, want)
	}
	t.Logf("population KSD² = %.10f (1-D: %.10f), E k0(x,x) = %.6f, ζ1 = %.6g, ζ2 = %.6g", p.ksd2, oneD, p.diag, p.zeta1, p.zeta2)
}

func TestVStatisticPopulation(t *testing.T) {
	k := DefaultIMQ()
	const m = 0.5
	n := 10000
	if testing.Short() {
		n = 2000
	}
	p := population(k, m)
	rng := rand.New(rand.NewPCG(3, 1))
	x := make([]float64, n)
	s := make([]float64, n)
	for i := range x {
		x[i] = m + rng.NormFloat64()
		s[i] = -x[i]
	}
	r, err := Compute(x, s, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	fn := float64(n)
	// V = D̄/K + (1 − 1/K) U with D̄ the mean diagonal term: E V = KSD² + (E k0(x,x) − KSD²)/K.
	bias := (p.diag - p.ksd2) / fn
	want := p.ksd2 + bias
	// Var U = (4(K−2)ζ1 + 2ζ2)/(K(K−1)) (Hoeffding); the diagonal adds Var k0(x,x)/K³.
	varU := (4*(fn-2)*p.zeta1 + 2*p.zeta2) / (fn * (fn - 1))
	se := math.Sqrt(varU*(1-1/fn)*(1-1/fn) + p.varDia/(fn*fn*fn))
	z := (r.Squared[0] - want) / se
	t.Logf("K=%d: V = %.6f, population KSD² = %.6f, V bias %.2g, SE %.2g, z = %.2f", n, r.Squared[0], p.ksd2, bias, se, z)
	if math.Abs(z) > 4 {
		t.Errorf("V-statistic %v vs population %v + bias %v: z = %.2f > 4", r.Squared[0], p.ksd2, bias, z)
	}
	// The U-statistic on the same draws is unbiased.
	ru, err := Compute(x, s, 1, &Settings{Statistic: U})
	if err != nil {
		t.Fatal(err)
	}
	if zu := (ru.Squared[0] - p.ksd2) / math.Sqrt(varU); math.Abs(zu) > 4 {
		t.Errorf("U-statistic %v vs population %v: z = %.2f", ru.Squared[0], p.ksd2, zu)
	}
}

func TestIIDShrinks(t *testing.T) {
	if testing.Short() {
		t.Skip("O(K²) sums over several seeds")
	}
	// Samples from the target N(0,1): population KSD is 0 and E V = E k0(x,x)/K exactly.
	k := DefaultIMQ()
	eDiag := math.Pow(k.C, 2*k.Beta) - 2*k.Beta*math.Pow(k.C, 2*k.Beta-2) // m = 0
	ks := []int{250, 1000, 4000}
	// log KSD has an O(1) spread per seed at every K (the degenerate U part of V
	// does not average out), so the slope needs many seeds.
	const seeds = 40
	logK := make([]float64, len(ks))
	for i, n := range ks {
		logK[i] = math.Log(float64(n))
	}
	slopes := make([]float64, seeds)
	scaled := make([][]float64, len(ks)) // K·V per seed
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(4, uint64(seed)))
		logKSD := make([]float64, len(ks))
		for i, n := range ks {
			x := make([]float64, n)
			s := make([]float64, n)
			for j := range x {
				x[j] = rng.NormFloat64()
				s[j] = -x[j]
			}
			r, err := Compute(x, s, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			logKSD[i] = math.Log(r.KSD)
			scaled[i] = append(scaled[i], float64(n)*r.Squared[0])
		}
		slopes[seed] = lsSlope(logK, logKSD)
	}
	mean, se := meanSE(slopes)
	// 4 SE of the seed average, plus 0.03 for the finite-K curvature of E√(KV).
	tol := 4*se + 0.03
	t.Logf("log-log slope of KSD over K = %v: %.3f ± %.3f (SE), tolerance %.3f", ks, mean, se, tol)
	if math.Abs(mean+0.5) > tol {
		t.Errorf("slope %.3f, want -0.5 within %.3f", mean, tol)
	}
	for i, n := range ks {
		mu, se := meanSE(scaled[i])
		t.Logf("K=%d: mean K·V = %.4f ± %.4f, E k0(x,x) = %.4f", n, mu, se, eDiag)
		if math.Abs(mu-eDiag) > 4*se {
			t.Errorf("K=%d: mean K·V = %v, want E k0(x,x) = %v within 4 SE (%v)", n, mu, eDiag, 4*se)
		}
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

func meanSE(v []float64) (mean, se float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1) / float64(len(v)))
}

func TestWorkersBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, n := range []int{1, 2, 63, 64, 65, 777} {
		const dim = 3
		x := randRows(rng, n, dim, 1)
		s := randRows(rng, n, dim, 1)
		for _, stat := range []Statistic{V, U} {
			if stat == U && n < 2 {
				continue
			}
			ref, err := Compute(x, s, dim, &Settings{Statistic: stat, Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []int{0, 2, 3, 8, 100} {
				r, err := Compute(x, s, dim, &Settings{Statistic: stat, Workers: w})
				if err != nil {
					t.Fatal(err)
				}
				for d := range dim {
					if r.Squared[d] != ref.Squared[d] {
						t.Errorf("K=%d %v Workers=%d: Squared[%d] = %v, Workers=1 gives %v", n, stat, w, d, r.Squared[d], ref.Squared[d])
					}
				}
			}
		}
	}
}

func TestLinearUnbiased(t *testing.T) {
	k := DefaultIMQ()
	const m = 0.5
	pairs := 100000
	if testing.Short() {
		pairs = 20000
	}
	p := population(k, m)
	rng := rand.New(rand.NewPCG(6, 1))
	n := 2*pairs + 1 // the odd last draw is ignored
	x := make([]float64, n)
	s := make([]float64, n)
	for i := range x {
		x[i] = m + rng.NormFloat64()
		s[i] = -x[i]
	}
	r, err := ComputeLinear(x, s, 1, IMQ{})
	if err != nil {
		t.Fatal(err)
	}
	// The mean of P iid terms k0(x, y), each of variance ζ2.
	se := math.Sqrt(p.zeta2 / float64(pairs))
	z := (r.Squared[0] - p.ksd2) / se
	t.Logf("linear: %.6f vs population %.6f, SE %.2g (reported %.2g), z = %.2f", r.Squared[0], p.ksd2, se, r.StdErr[0], z)
	if math.Abs(z) > 4 {
		t.Errorf("linear estimate %v vs population %v: z = %.2f", r.Squared[0], p.ksd2, z)
	}
	// The reported standard error estimates the same SE from the sample.
	if rel := math.Abs(r.StdErr[0]/se - 1); rel > 0.1 {
		t.Errorf("reported StdErr %v vs population SE %v (rel error %.2g)", r.StdErr[0], se, rel)
	}
	if r.Statistic != Linear || r.N != n {
		t.Errorf("Statistic %v, N %d", r.Statistic, r.N)
	}
}

func TestLinearBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	const n, dim = 9, 2
	k := IMQ{C: 1.5, Beta: -0.7}
	x, s := randRows(rng, n, dim, 1), randRows(rng, n, dim, 1)
	r, err := ComputeLinear(x, s, dim, k)
	if err != nil {
		t.Fatal(err)
	}
	for d := range dim {
		want := 0.0
		for p := range n / 2 {
			a, b := 2*p*dim, (2*p+1)*dim
			want += testK0(k, d, x[a:a+dim], x[b:b+dim], s[a:a+dim], s[b:b+dim])
		}
		want /= float64(n / 2)
		if math.Abs(r.Squared[d]-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("d=%d: linear %v, want %v", d, r.Squared[d], want)
		}
	}
}

func TestNegativeU(t *testing.T) {
	// Draws from the target: U is negative for about half of the coordinates.
	rng := rand.New(rand.NewPCG(8, 1))
	const n, dim = 50, 8
	x := randRows(rng, n, dim, 1)
	s := make([]float64, len(x))
	for i := range x {
		s[i] = -x[i]
	}
	r, err := Compute(x, s, dim, &Settings{Statistic: U})
	if err != nil {
		t.Fatal(err)
	}
	neg := 0
	for d, v := range r.Squared {
		if v < 0 {
			neg++
			if !math.IsNaN(r.PerDim[d]) {
				t.Errorf("Squared[%d] = %v < 0 but PerDim = %v, want NaN", d, v, r.PerDim[d])
			}
		} else if r.PerDim[d] != math.Sqrt(v) {
			t.Errorf("PerDim[%d] = %v, want √%v", d, r.PerDim[d], v)
		}
	}
	if neg == 0 {
		t.Fatalf("no negative U among %d coordinates; pick another seed", dim)
	}
	if !math.IsNaN(r.KSD) {
		t.Errorf("KSD = %v with a negative coordinate, want NaN", r.KSD)
	}
}

func TestGroupJointDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	const n, dim = 40, 4
	x, s := randRows(rng, n, dim, 1), randRows(rng, n, dim, 1)
	r, err := Compute(x, s, dim, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, want := r.Group(1, 3), r.PerDim[1]+r.PerDim[3]; g != want {
		t.Errorf("Group(1,3) = %v, want %v", g, want)
	}
	if g := r.Group(0, 1, 2, 3); math.Abs(g-r.KSD) > 1e-14*r.KSD {
		t.Errorf("Group(all) = %v, KSD = %v", g, r.KSD)
	}
	sum := 0.0
	for _, v := range r.Squared {
		sum += v
	}
	if math.Abs(r.Joint()-math.Sqrt(sum)) > 1e-14 {
		t.Errorf("Joint = %v, want %v", r.Joint(), math.Sqrt(sum))
	}
	// The joint KSD² is the double sum of the full Stein kernel Σ_d k0^d.
	wantV, _ := bruteForce(DefaultIMQ(), x, s, dim)
	js := 0.0
	for _, v := range wantV {
		js += v
	}
	if math.Abs(r.Joint()-math.Sqrt(js)) > 1e-12 {
		t.Errorf("Joint = %v, brute force %v", r.Joint(), math.Sqrt(js))
	}

	// ComputeDense agrees, also for a non-contiguous view.
	big := mat.NewDense(n, dim+2, nil)
	bigS := mat.NewDense(n, dim+2, nil)
	for i := range n {
		for j := range dim {
			big.Set(i, j+1, x[i*dim+j])
			bigS.Set(i, j+1, s[i*dim+j])
		}
	}
	rd, err := ComputeDense(big.Slice(0, n, 1, dim+1), bigS.Slice(0, n, 1, dim+1), nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := ComputeDense(mat.NewDense(n, dim, x), mat.NewDense(n, dim, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	for d := range dim {
		if rd.Squared[d] != r.Squared[d] || rc.Squared[d] != r.Squared[d] {
			t.Errorf("dense d=%d: %v, %v, want %v", d, rd.Squared[d], rc.Squared[d], r.Squared[d])
		}
	}
}

func TestErrors(t *testing.T) {
	x := []float64{0, 1, 2, 3, 4, 5}
	s := []float64{0, -1, -2, -3, -4, -5}
	cases := []struct {
		name    string
		run     func() error
		target  error
		mention string
	}{
		{"len mismatch", func() error { _, err := Compute(x, s[:4], 2, nil); return err }, ErrShape, "len(score) = 4"},
		{"not multiple", func() error { _, err := Compute(x, s, 4, nil); return err }, ErrShape, "multiple"},
		{"dim 0", func() error { _, err := Compute(x, s, 0, nil); return err }, ErrShape, "dim"},
		{"empty", func() error { _, err := Compute(nil, nil, 2, nil); return err }, ErrTooFew, "no samples"},
		{"U one row", func() error { _, err := Compute(x[:2], s[:2], 2, &Settings{Statistic: U}); return err }, ErrTooFew, "K >= 2"},
		{"linear one row", func() error { _, err := ComputeLinear(x[:2], s[:2], 2, IMQ{}); return err }, ErrTooFew, "K >= 2"},
		{"positive beta", func() error { _, err := Compute(x, s, 2, &Settings{Kernel: IMQ{C: 1, Beta: 0.5}}); return err }, ErrKernel, "use -0.5"},
		{"beta -1", func() error { _, err := NewIMQ(1, -1); return err }, ErrKernel, "Beta"},
		{"c 0", func() error { _, err := NewIMQ(0, -0.5); return err }, ErrKernel, "C = 0"},
		{"c inf", func() error { return IMQ{C: math.Inf(1), Beta: -0.5}.Validate() }, ErrKernel, "C = +Inf"},
		{"dense dims", func() error {
			_, err := ComputeDense(mat.NewDense(3, 2, x), mat.NewDense(2, 3, s), nil)
			return err
		}, ErrShape, "3×2"},
	}
	for _, c := range cases {
		err := c.run()
		if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: got %v, want %v mentioning %q", c.name, err, c.target, c.mention)
		}
	}

	// Non-finite entries are named by input, row and column.
	bad := append([]float64(nil), s...)
	bad[3] = math.NaN()
	_, err := Compute(x, bad, 2, nil)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNonFinite) || nf.Input != "score" || nf.Row != 1 || nf.Col != 1 {
		t.Errorf("NaN score[1,1]: got %v", err)
	}
	badX := append([]float64(nil), x...)
	badX[4] = math.Inf(-1)
	_, err = ComputeLinear(badX, s, 2, IMQ{})
	if !errors.As(err, &nf) || nf.Input != "x" || nf.Row != 2 || nf.Col != 0 || !strings.Contains(err.Error(), "x[2, 0] = -Inf") {
		t.Errorf("-Inf x[2,0]: got %v", err)
	}
	if k, err := NewIMQ(2, -0.25); err != nil || k != (IMQ{C: 2, Beta: -0.25}) {
		t.Errorf("NewIMQ(2, -0.25) = %v, %v", k, err)
	}
}

func TestK1VStatistic(t *testing.T) {
	// One draw: V is the diagonal term k0(x,x) = C^(2β) s² − 2β C^(2β−2).
	k := IMQ{C: 2, Beta: -0.3}
	r, err := Compute([]float64{0.3}, []float64{1.7}, 1, &Settings{Kernel: k})
	if err != nil {
		t.Fatal(err)
	}
	want := math.Pow(2, -0.6)*1.7*1.7 + 0.6*math.Pow(2, -2.6)
	if math.Abs(r.Squared[0]-want) > 1e-14 {
		t.Errorf("K=1: %v, want %v", r.Squared[0], want)
	}
}

func BenchmarkKSD(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		const dim = 4
		b.Run(fmt.Sprintf("K=%d/d=%d", n, dim), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			x := randRows(rng, n, dim, 1)
			s := make([]float64, len(x))
			for i := range x {
				s[i] = -x[i]
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compute(x, s, dim, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkKSDGeneralBeta(b *testing.B) {
	const n, dim = 1000, 4
	rng := rand.New(rand.NewPCG(1, 2))
	x := randRows(rng, n, dim, 1)
	s := make([]float64, len(x))
	for i := range x {
		s[i] = -x[i]
	}
	set := &Settings{Kernel: IMQ{C: 1, Beta: -0.3}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compute(x, s, dim, set); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLinear(b *testing.B) {
	const n, dim = 100000, 4
	rng := rand.New(rand.NewPCG(1, 2))
	x := randRows(rng, n, dim, 1)
	s := make([]float64, len(x))
	for i := range x {
		s[i] = -x[i]
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ComputeLinear(x, s, dim, IMQ{}); err != nil {
			b.Fatal(err)
		}
	}
}
