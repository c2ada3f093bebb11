package models

import (
	"math"
	"math/rand/v2"
	"testing"

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
// against central differences of the same discretised log-likelihood
// (grid edges frozen at u, as the tangents assume).
func TestGARCHExactFD(t *testing.T) {
	dax := gxDAX(t, 300)
	cases := []struct {
		name string
		u    []float64
		seq  ssm.Sequence
	}{
		{"DAX mode", gxU(t, gxDAXMode[0], gxDAXMode[1], gxDAXMode[2], gxDAXMode[3]), dax},
		{"DAX other", gxU(t, 0.46, 0.936, 0.53, 0.72), dax},
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
		ll, err := garchExactScore(grad, c.u, nil, c.seq, w, garchExactG)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			const h = 1e-5
			up := append([]float64(nil), c.u...)
			dn := append([]float64(nil), c.u...)
			up[i] += h
			dn[i] -= h
			lp, err1 := garchExactScore(nil, up, c.u, c.seq, w, garchExactG)
			lm, err2 := garchExactScore(nil, dn, c.u, c.seq, w, garchExactG)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			fd := (lp - lm) / (2 * h)
			rel := math.Abs(fd-grad[i]) / math.Max(1, math.Abs(fd))
			t.Logf("%s: ll %.6f, grad[%d] = %.8g, FD %.8g, rel %.2g", c.name, ll, i, grad[i], fd, rel)
			if rel > 1e-5 {
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
