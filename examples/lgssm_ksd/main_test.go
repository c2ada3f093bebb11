package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
)

// TestKalman runs the three Kalman (N = ∞) methods with a fixed iteration
// count and checks the tables, the JSON, the plots and, independently of the
// code, that every method's posterior mean is near the data-generating
// parameters (within 5 posterior sd: T = 1000 data put the truth within a
// few sd of the posterior mean).
func TestKalman(t *testing.T) {
	out := t.TempDir()
	args := []string{"-T", "1000", "-time", "0", "-iters", "4000", "-filters", "kf", "-chains", "2",
		"-eps", "0.1,0.01", "-ksddraws", "60", "-out", out}
	text := compare.RunOK(t, run, args)
	for _, row := range []string{"Full N=inf", "No Buffer N=inf", "Buffer N=inf", "Paper, Table 4", "ours log10 KSD"} {
		if !strings.Contains(text, row) {
			t.Errorf("output lacks %q:\n%s", row, text)
		}
	}
	s := compare.ReadJSON[compare.Summary](t, filepath.Join(out, "results_T1000.json"))
	if len(s.Methods) != 3 || len(s.Names) != 3 {
		t.Fatalf("got %d methods, %d names", len(s.Methods), len(s.Names))
	}
	for _, m := range s.Methods {
		if len(m.Grid) != 2 {
			t.Fatalf("%s: %d grid points, want 2", m.Name, len(m.Grid))
		}
		g := m.Grid[m.Best]
		if g.Failed != 0 {
			t.Errorf("%s: %d failed chains", m.Name, g.Failed)
		}
		for _, c := range g.Chains {
			if c.Iterations != 4000 {
				t.Errorf("%s: %d iterations, want 4000", m.Name, c.Iterations)
			}
			for d, v := range c.LogKSD {
				// KSD is positive (finite log) and, for T = 1000, below
				// 10^4: a score of order √T times a few.
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v > 4 {
					t.Errorf("%s: log10 KSD[%d] = %v", m.Name, d, v)
				}
			}
			for p, truth := range truth {
				mean, sd := float64(c.Mean[p]), float64(c.SD[p])
				if !(sd > 0) || math.Abs(mean-truth) > 5*sd+0.02 {
					t.Errorf("%s: %s posterior mean %.3f (sd %.3f), truth %g", m.Name, s.Names[p], mean, sd, truth)
				}
			}
		}
	}
	for _, name := range []string{"phi", "sigma", "tau"} {
		compare.CheckPNG(t, filepath.Join(out, "mse_T1000_"+name+".png"), 100)
	}
}

// TestParticle runs the particle filter methods at a tiny size.
func TestParticle(t *testing.T) {
	out := t.TempDir()
	args := []string{"-T", "120", "-time", "0", "-iters", "15", "-filters", "pf", "-N", "50", "-S", "20", "-B", "5",
		"-chains", "2", "-eps", "0.1", "-ksddraws", "8", "-out", out}
	text := compare.RunOK(t, run, args)
	s := compare.ReadJSON[compare.Summary](t, filepath.Join(out, "results_T120.json"))
	want := []string{"Full N=50", "No Buffer N=50", "Buffer N=50"}
	for i, m := range s.Methods {
		if m.Name != want[i] {
			t.Errorf("method %d is %q, want %q", i, m.Name, want[i])
		}
		if !strings.Contains(text, m.Name) {
			t.Errorf("table lacks %q", m.Name)
		}
		tot := m.Grid[m.Best].LogKSD[3][0]
		if math.IsNaN(float64(tot)) || math.IsInf(float64(tot), 0) {
			t.Errorf("%s: total log10 KSD %v", m.Name, tot)
		}
	}
}

func TestBadInput(t *testing.T) {
	compare.CheckRejects(t, run, [][]string{
		{"-T", "50"}, // S + 2B = 60 > T
		{"-methods", "full,bogus"},
		{"-eps", "0.1,-1"},
		{"-filters", "ukf"},
		{"-time", "0"},
		{"-burnin", "1"},
		{"extra"},
	})
}
