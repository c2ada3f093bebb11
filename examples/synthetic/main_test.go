package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
)

// TestTiny runs both models at a tiny size and checks the tables, the JSON
// (KSD finite and positive, posterior means inside the parameter domains)
// and the MSE plots.
func TestTiny(t *testing.T) {
	out := t.TempDir()
	args := []string{"-T", "150", "-time", "0", "-iters", "12", "-N", "64", "-ksdN", "64", "-S", "20", "-B", "5",
		"-chains", "2", "-eps", "0.1,0.01", "-ksddraws", "6", "-out", out}
	text := compare.RunOK(t, run, args)
	for _, s := range []string{"Paper, Table 7", "Paper, Table 8", "No Buffer", "Buffer", "Full"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for name, ex := range experiments() {
		s := compare.ReadJSON[compare.Summary](t, filepath.Join(out, "results_"+name+".json"))
		if len(s.Methods) != 3 || len(s.Names) != len(ex.truth) {
			t.Fatalf("%s: %d methods, %d names", name, len(s.Methods), len(s.Names))
		}
		for _, m := range s.Methods {
			g := m.Grid[m.Best]
			for _, c := range g.Chains {
				if c.Error != "" {
					t.Errorf("%s %s: %s", name, m.Name, c.Error)
					continue
				}
				for d, v := range c.LogKSD {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						t.Errorf("%s %s: log10 KSD[%d] = %v", name, m.Name, d, v)
					}
				}
				// Every natural parameter here lies in (0, 2).
				for p, v := range c.Mean {
					if !(v > 0 && v < 2) {
						t.Errorf("%s %s: mean of %s = %v", name, m.Name, s.Names[p], v)
					}
				}
			}
		}
		for _, p := range s.Names {
			compare.CheckPNG(t, filepath.Join(out, "mse_"+name+"_"+p+".png"), 0)
		}
	}
}

// TestTruth checks the data-generating parameters against the paper's
// section 5.2 GARCH coefficients (α, β, γ) = (0.1, 0.8, 0.05).
func TestTruth(t *testing.T) {
	g := experiments()["garch"].truth
	mu, phi, lambda := g[0], g[1], g[2]
	alpha, beta, gamma := mu*(1-phi), phi*lambda, phi*(1-lambda)
	for _, c := range [][2]float64{{alpha, 0.1}, {beta, 0.8}, {gamma, 0.05}} {
		if math.Abs(c[0]-c[1]) > 1e-12 {
			t.Errorf("got %v, want %v", c[0], c[1])
		}
	}
}

func TestBadInput(t *testing.T) {
	compare.CheckRejects(t, run, [][]string{
		{"-T", "50"}, // S + 2B = 60 > T
		{"-models", "svm,lgssm"},
		{"-eps", "x"},
		{"-chains", "0"},
		{"-ksddraws", "1"},
		{"-proposal", "apf"},
	})
}
