package pf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestLaplaceD2: the unrolled steps for a 2-dimensional state (filter2,
// smoothMeans2, draw2, weigh2) give exactly the numbers of the d×d loops
// (filterD, smoothMeansD, drawD, weighD), bit for bit, on the workspace
// of a score of 300 simulated MSV{D: 2} rows.
func TestLaplaceD2(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := m.Simulate(300, u, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	l := Laplace{Paths: 16, Plain: true, Whole: true}
	if _, err := l.Score(make([]float64, len(u)), k, m.Dims(), seq, ssm.Full(seq.Len())); err != nil {
		t.Fatal(err)
	}
	w := &l.ws
	n := seq.Len()
	same := func(what string, a, b []float64) {
		t.Helper()
		if len(a) != len(b) {
			t.Fatalf("%s: lengths %d and %d", what, len(a), len(b))
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("%s[%d]: unrolled %v, loops %v", what, i, a[i], b[i])
			}
		}
	}
	size := 2 * (n + 1)
	lnD, errD := w.filterD(n)
	mf, pf, mp, pp, ppinv := slices.Clone(w.mf[:size]), slices.Clone(w.pf[:2*size]), slices.Clone(w.mp[:size]), slices.Clone(w.pp[:2*size]), slices.Clone(w.ppinv[:2*size])
	ln2, err2 := w.filter2(n)
	if errD != nil || err2 != nil {
		t.Fatalf("filters: %v, %v", errD, err2)
	}
	same("log ĝ", []float64{ln2}, []float64{lnD})
	same("filtered means", w.mf[:size], mf)
	same("filtered covariances", w.pf[2*2:2*size], pf[2*2:])
	same("predicted means", w.mp[2:size], mp[2:])
	same("predicted covariances", w.pp[4:2*size], pp[4:])
	same("predicted precisions", w.ppinv[4:2*size], ppinv[4:])
	w.smoothMeansD(n)
	xs := slices.Clone(w.xs[:size])
	w.smoothMeans2(n)
	same("smoothed means", w.xs[:size], xs)
	if err := w.backward(n); err != nil {
		t.Fatal(err)
	}
	// Two rows of draws (x_n, then x_{n−1} given it) and their weights.
	draws := func(draw func(cur, next []float64, s, n int, rng *rand.Rand), weigh func(cur, lam, hv []float64, c float64)) (x1, x0, lw []float64) {
		rng := rand.New(rand.NewPCG(3, 4))
		x1, x0 = make([]float64, 2*w.m), make([]float64, 2*w.m)
		draw(x1, make([]float64, 2*w.m), n, n, rng)
		draw(x0, x1, n-1, n, rng)
		for q := range w.m {
			w.tmp[q] = float64(q) / 7
			w.lw[q] = -float64(q) / 3
		}
		weigh(x0, w.lam[(n-1)*4:n*4], w.hvec[(n-1)*2:n*2], w.cs[n-1])
		return x1, x0, slices.Clone(w.lw[:w.m])
	}
	a1, a0, alw := draws(w.drawD, w.weighD)
	b1, b0, blw := draws(w.draw2, w.weigh2)
	same("draws of x_n", b1, a1)
	same("draws of x_{n−1}", b0, a0)
	same("log weights", blw, alw)
}
