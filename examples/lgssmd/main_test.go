package main

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
)

// blockFile is the JSON the command writes per dimension.
type blockFile struct {
	Groups  []group         `json:"groups"`
	Summary compare.Summary `json:"summary"`
	Block   []struct {
		Method string           `json:"method"`
		LogKSD [][2]compare.Num `json:"log10_ksd"`
	} `json:"block_log10_ksd"`
}

// TestKalman runs the two Kalman (N = ∞) methods at d = 3 (15 parameters)
// with a fixed iteration count and checks, independently of the code, that
// every chain's posterior mean of A's diagonal, σ and τ is within 4
// posterior sd (+ 0.01) of the data-generating (0.9, 0.7, 1): T = 1000
// observations put the truth within a few posterior sd of the posterior
// mean, the start (0.5, 1, 0.5) is 6 or more sd away, and 20000
// iterations at eps = 0.005 (h = 5e-6) leave a Monte Carlo error of about
// one sd along the slow σ-τ ridge (chains' means of σ spread over 0.72-0.77,
// posterior sd 0.05). It also checks that the groups' KSD add up to the
// total the step size was chosen by, the block KSD's bounds, the JSON and
// the plots. About 4 s; skipped under -short (the race detector makes it
// ten times slower).
func TestKalman(t *testing.T) {
	if testing.Short() {
		t.Skip("4 s of sampling")
	}
	out := t.TempDir()
	args := []string{"-d", "3", "-time", "0", "-iters", "20000", "-filters", "kf", "-chains", "3",
		"-eps", "0.005", "-ksddraws", "40", "-out", out}
	text := compare.RunOK(t, run, args)
	for _, s := range []string{"No Buffer N=inf", "Buffer N=inf", "Within-group joint KSD", "Paper: no table for d = 3"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	f := compare.ReadJSON[blockFile](t, filepath.Join(out, "results_d3.json"))
	s := f.Summary
	if len(s.Methods) != 2 || strings.Join(s.Names, ",") != "phi,sigma,tau" || len(f.Groups) != 3 || len(f.Groups[0].Coords) != 9 {
		t.Fatalf("%d methods, names %q, groups %+v", len(s.Methods), s.Names, f.Groups)
	}
	want := truth[:]
	for mi, m := range s.Methods {
		g := m.Grid[m.Best]
		if g.Failed != 0 {
			t.Errorf("%s: %d failed chains", m.Name, g.Failed)
		}
		for _, c := range g.Chains {
			if c.Iterations != 20000 || len(c.LogKSD) != 4 {
				t.Fatalf("%s: %d iterations, %d KSD columns", m.Name, c.Iterations, len(c.LogKSD))
			}
			sum := 0.0
			for _, v := range c.LogKSD[:3] {
				sum += math.Pow(10, float64(v))
			}
			if tot := math.Pow(10, float64(c.LogKSD[3])); math.Abs(sum-tot) > 1e-9*tot {
				t.Errorf("%s: groups' KSD sum to %g, total %g", m.Name, sum, tot)
			}
			for p, tr := range want {
				mean, sd := float64(c.Mean[p]), float64(c.SD[p])
				if !(sd > 0) || math.Abs(mean-tr) > 4*sd+0.01 {
					t.Errorf("%s: %s posterior mean %.3f (sd %.3f), truth %g", m.Name, s.Names[p], mean, sd, tr)
				}
			}
		}
		// The within-group joint KSD lies between the sum over the
		// group's n coordinates divided by √n and the sum itself.
		b := f.Block[mi]
		if b.Method != m.Name || len(b.LogKSD) != 4 {
			t.Fatalf("block row %d: %+v", mi, b)
		}
		for k, gr := range f.Groups {
			sumLog, blockLog := float64(g.LogKSD[k][0]), float64(b.LogKSD[k][0])
			if blockLog > sumLog+1e-12 || blockLog < sumLog-0.5*math.Log10(float64(len(gr.Coords)))-1e-12 {
				t.Errorf("%s %s: block log10 KSD %.3f, sum %.3f", m.Name, gr.Name, blockLog, sumLog)
			}
		}
	}
	for _, name := range []string{"phi", "sigma", "tau"} {
		compare.CheckPNG(t, filepath.Join(out, "mse_d3_"+name+".png"), 100)
	}
}

// TestParticle runs the particle filter methods at d = 5 at a tiny size
// and checks the rows against the paper's table.
func TestParticle(t *testing.T) {
	out := t.TempDir()
	args := []string{"-d", "5", "-T", "200", "-time", "0", "-iters", "10", "-filters", "pf", "-N", "1000",
		"-chains", "2", "-eps", "0.001", "-ksddraws", "5", "-out", out}
	text := compare.RunOK(t, run, args)
	for _, s := range []string{"Paper, appendix table (LGSSM in higher dimensions, d = 5)", "Total log10 KSD, ours (d = 5) vs the paper"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	f := compare.ReadJSON[blockFile](t, filepath.Join(out, "results_d5.json"))
	want := []string{"No Buffer N=1000", "Buffer N=1000"}
	if len(f.Summary.Methods) != len(want) {
		t.Fatalf("%d methods", len(f.Summary.Methods))
	}
	for i, m := range f.Summary.Methods {
		if m.Name != want[i] {
			t.Errorf("method %d is %q, want %q", i, m.Name, want[i])
		}
		// The paper's row of the same name appears in the versus table.
		if !strings.Contains(text, m.Name+"  ") {
			t.Errorf("table lacks %q", m.Name)
		}
		for _, v := range m.Grid[m.Best].LogKSD {
			if math.IsNaN(float64(v[0])) || math.IsInf(float64(v[0]), 0) {
				t.Errorf("%s: log10 KSD %v", m.Name, m.Grid[m.Best].LogKSD)
			}
		}
	}
}

// TestReduce checks the grouping on a hand-made result at d = 2: groups
// phi = A's 4 entries, sigma and tau 2 each, KSD_j = 1..8.
func TestReduce(t *testing.T) {
	g := newGrouping(2)
	perCoord := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	logs := make([]float64, 9)
	for j, v := range perCoord {
		logs[j] = math.Log10(v)
	}
	logs[8] = math.Log10(36)
	mean := []float64{0.8, 0.1, -0.1, 0.7, 0.6, 0.8, 1.1, 0.9}
	ok := compare.Chain{Iterations: 10, LogKSD: logs, Mean: mean, SD: []float64{0.1, 1, 1, 0.3, 0.2, 0.4, 0.5, 0.7}}
	bad := compare.Chain{Iterations: 3, Err: errors.New("diverged"), Mean: mean, SD: mean}
	mse := [][]float64{{1}, {2}, {3}, {6}, {1}, {3}, {2}, {2}}
	res := &compare.Result{Obs: 100, Names: make([]string, 8), Methods: []compare.MethodResult{{
		Name: "m", Grid: []compare.GridPoint{{Eps: 0.1, Chains: []compare.Chain{ok, bad}, Failed: 1, Times: []float64{1}, MSE: mse}},
	}}}
	red, err := g.reduce(res)
	if err != nil || g.full != res {
		t.Fatalf("reduce: %v", err)
	}
	p := red.Methods[0].Grid[0]
	c := p.Chains[0]
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	for k, want := range []float64{10, 11, 15, 36} {
		near("KSD of group "+string(rune('0'+k)), math.Pow(10, c.LogKSD[k]), want)
		near("mean log10 KSD", p.LogKSD[k].Mean, c.LogKSD[k])
		if !math.IsNaN(p.LogKSD[k].SD) {
			t.Errorf("sd over one chain %v, want NaN", p.LogKSD[k].SD)
		}
	}
	near("phi mean (A's diagonal)", c.Mean[0], 0.75)
	near("phi sd", c.SD[0], 0.2)
	near("tau mean", c.Mean[2], 1.0)
	near("phi MSE (all of A)", p.MSE[0][0], 3)
	near("sigma MSE", p.MSE[1][0], 2)
	if p.Failed != 1 || p.Chains[1].Err == nil || p.Chains[1].LogKSD != nil || len(red.Names) != 3 {
		t.Errorf("failed chain: %+v, names %q", p.Chains[1], red.Names)
	}
	ex, err := g.after(context.Background(), red)
	if err != nil {
		t.Fatal(err)
	}
	b := ex.(*blockKSD).Block[0]
	for k, want := range []float64{math.Sqrt(30), math.Sqrt(61), math.Sqrt(113)} {
		near("block KSD", math.Pow(10, float64(b.LogKSD[k][0])), want)
	}
	near("block total", math.Pow(10, float64(b.LogKSD[3][0])), math.Sqrt(30)+math.Sqrt(61)+math.Sqrt(113))
}

func TestBadInput(t *testing.T) {
	compare.CheckRejects(t, run, [][]string{
		{"-T", "50"}, // S + 2B = 60 > T
		{"-d", "0"},
		{"-d", "5,x"},
		{"-methods", "full"},
		{"-filters", "ukf"},
		{"-N", "0"},
		{"-ksddraws", "1"},
		{"extra"},
	})
}
