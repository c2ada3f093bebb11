package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
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
	var stdout, stderr bytes.Buffer
	args := []string{"-T", "150", "-time", "0", "-iters", "12", "-N", "64", "-ksdN", "64", "-S", "20", "-B", "5",
		"-chains", "2", "-eps", "0.1,0.01", "-ksddraws", "6", "-out", out}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	text := stdout.String()
	for _, s := range []string{"Paper, Table 7", "Paper, Table 8", "No Buffer", "Buffer", "Full"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for name, ex := range experiments() {
		b, err := os.ReadFile(filepath.Join(out, "results_"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var s compare.Summary
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
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
			path := filepath.Join(out, "mse_"+name+"_"+p+".png")
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(f); err != nil {
				t.Errorf("%s: %v", path, err)
			}
			f.Close()
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
	for _, args := range [][]string{
		{"-T", "50"}, // S + 2B = 60 > T
		{"-models", "svm,lgssm"},
		{"-eps", "x"},
		{"-chains", "0"},
		{"-ksddraws", "1"},
		{"-proposal", "apf"},
	} {
		var stdout, stderr bytes.Buffer
		args = append(args, "-out", t.TempDir())
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
