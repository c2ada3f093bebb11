package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// robustCase is a model at parameters u with state rows to probe: the
// ordinary ones (where every value must be finite for every finite y)
// and extreme ones (where y = 0 must still give finite values, and any
// y at least no NaN: a density below float64's range is −Inf).
type robustCase struct {
	name     string
	m        ssm.Model
	u        []float64
	ordinary [][]float64
	extreme  [][]float64
}

func robustCases(t *testing.T) []robustCase {
	t.Helper()
	lu, _ := models.LGSSM{}.Params(0.95, 0.3, 1)
	su, _ := models.SVM{}.Params(0.95, 0.3, 1)
	stu, _ := models.SVM{}.Params(0.9, 0.5, 1e-3) // small τ: large a = y²/(2τ²)
	gm := models.GARCH{}
	gu, _ := gm.Params(1, 0.9, 0.8, 0.3)
	gk, _ := gm.Bind(gu)
	garchRow := func(x, s2 float64) []float64 {
		r := make([]float64, 6)
		gk.(ssm.StateCompleter).Complete(r, nil)
		r[0], r[1] = x, s2
		return r
	}
	md := models.LGSSMd{D: 2}
	du, err := md.Params([]float64{0.5, 0.1, 0, 0.7}, []float64{0.5, 0.8}, []float64{1, 0.6})
	if err != nil {
		t.Fatal(err)
	}
	scalar := func(xs ...float64) [][]float64 {
		var out [][]float64
		for _, x := range xs {
			out = append(out, []float64{x})
		}
		return out
	}
	svmOrd := scalar(-30, -5, 0, 3, 30)
	svmExt := scalar(-1e4, -800, -746, -745, -709, 709, 746, 800, 1e4)
	return []robustCase{
		{"lgssm", models.LGSSM{}, lu, scalar(-5, 0, 5), scalar(-1e100, 1e100)},
		{"svm/bootstrap", models.SVM{}, su, svmOrd, svmExt},
		{"svm/guided", models.SVM{Guided: true}, su, svmOrd, svmExt},
		{"svm/guided/small-tau", models.SVM{Guided: true}, stu, svmOrd, svmExt},
		{"garch", gm, gu,
			[][]float64{garchRow(0, 1), garchRow(2, 0.5), garchRow(-1, 3)},
			[][]float64{garchRow(0, 1e-300), garchRow(1e100, 1e-300), garchRow(1e100, 1e200), garchRow(1e150, 1e300), garchRow(0, math.MaxFloat64)}},
		{"lgssmd", md, du, [][]float64{{0, 0}, {3, -2}}, [][]float64{{1e100, -1e100}}},
	}
}

// TestKernelsFiniteForAnyY probes every kernel method (emission, score,
// transition and initial densities, proposal and its density, for the
// guided and locally optimal proposals) at y = 0, tiny, ordinary and
// huge (±1e100, whose log-density is a finite −5e199 for ordinary
// states), on ordinary and extreme states: nothing is ever NaN; for
// ordinary states, and for y = 0 on any state, everything is finite.
func TestKernelsFiniteForAnyY(t *testing.T) {
	ys := []float64{0, math.Copysign(0, -1), 1e-300, 1e-160, 1e-3, 1, -2.5, 1e10, 1e100, -1e100}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range robustCases(t) {
		k, err := c.m.Bind(c.u)
		if err != nil {
			t.Fatal(err)
		}
		d := c.m.Dims()
		prop, _ := k.(ssm.Proposer)
		for _, yv := range ys {
			y := make([]float64, d.Obs)
			for i := range y {
				y[i] = yv
			}
			for _, ext := range []bool{false, true} {
				rows := c.ordinary
				if ext {
					rows = c.extreme
				}
				// Finite required unless the state is extreme and y ≠ 0
				// (then a true density below −1.8e308 is −Inf).
				needFinite := !ext || yv == 0
				check := func(what string, v float64, must bool) {
					t.Helper()
					if math.IsNaN(v) {
						t.Errorf("%s y=%g %s: NaN", c.name, yv, what)
					} else if must && math.IsInf(v, 0) {
						t.Errorf("%s y=%g %s: %v", c.name, yv, what, v)
					}
				}
				for ri, row := range rows {
					name := fmt.Sprintf("state %d %v", ri, row[:min(2, len(row))])
					must := needFinite
					lw := []float64{0}
					k.AddLogEmission(lw, y, row)
					check(name+" emission", lw[0], must)
					h := make([]float64, d.Param)
					k.AddScore(h, 1, y, row, row)
					for j, v := range h {
						check(fmt.Sprintf("%s score %d", name, j), v, must)
					}
					if prop == nil {
						continue
					}
					x := make([]float64, d.State)
					for rep := 0; rep < 20; rep++ {
						lw[0] = 0
						prop.Propose(x, lw, row, y, rng)
						for j, v := range x {
							check(fmt.Sprintf("%s proposal state %d", name, j), v, must)
						}
						check(name+" proposal weight", lw[0], must)
						check(name+" proposal density", prop.LogProposal(x, row, y), must)
					}
				}
			}
		}
	}
}

// TestSVMZeroExact: for y = 0 the guided SVM proposal is exactly
// N(φx' − σ²/2, σ²) and its weight log p(0|x') = −½log(2πτ²) − φx'/2 +
// σ²/8 (closed form), for ordinary and extreme previous states.
func TestSVMZeroExact(t *testing.T) {
	m := models.SVM{Guided: true}
	u, _ := m.Params(0.95, 0.3, 0.8)
	k, _ := m.Bind(u)
	prop := k.(ssm.Proposer)
	phi, s2, tau := 0.95, 0.09, 0.8
	rng := rand.New(rand.NewPCG(9, 9))
	for _, p := range []float64{-1e4, -900, -800, -745, -20, 0, 5, 800} {
		x, lw := []float64{0}, []float64{0}
		prop.Propose(x, lw, []float64{p}, []float64{0}, rng)
		want := -0.5*math.Log(2*math.Pi*tau*tau) - phi*p/2 + s2/8
		if math.Abs(lw[0]-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("prev %v: weight %.15g, closed form %.15g", p, lw[0], want)
		}
		mean := phi*p - s2/2
		wantQ := -0.5*math.Log(2*math.Pi*s2) - (x[0]-mean)*(x[0]-mean)/(2*s2)
		if got := prop.LogProposal(x, []float64{p}, []float64{0}); math.Abs(got-wantQ) > 1e-9*math.Max(1, math.Abs(wantQ)) {
			t.Errorf("prev %v: log q %.15g, closed form %.15g", p, got, wantQ)
		}
	}
}

// TestSVMGuidedFarBelow: particles thousands below the level of a
// non-zero return (after a long run of zeros with a large σ) get a guided
// proposal near the mode and a finite weight, equal to log p(y|x) +
// log p(x|x') − log q(x|x', y) from the kernel's own densities.
func TestSVMGuidedFarBelow(t *testing.T) {
	m := models.SVM{Guided: true}
	u, _ := m.Params(0.99, 8, 1)
	k, _ := m.Bind(u)
	prop := k.(ssm.Proposer)
	rng := rand.New(rand.NewPCG(2, 2))
	for _, p := range []float64{-3000, -800, -100} {
		for _, yv := range []float64{0.01, 1, 1e100} {
			prev, y := []float64{p}, []float64{yv}
			x, lw := []float64{0}, []float64{0}
			prop.Propose(x, lw, prev, y, rng)
			want := []float64{0}
			k.AddLogEmission(want, y, x)
			tr := []float64{0}
			k.LogTransitions(tr, x, prev)
			want[0] += tr[0] - prop.LogProposal(x, prev, y)
			if math.IsNaN(lw[0]) || math.IsInf(lw[0], 0) || math.Abs(lw[0]-want[0]) > 1e-9*math.Max(1, math.Abs(want[0])) {
				t.Errorf("prev %v, y %v: x = %v, weight %.12g, densities give %.12g", p, yv, x[0], lw[0], want[0])
			}
		}
	}
}
