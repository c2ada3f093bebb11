package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

var dax = filepath.Join("..", "..", "testdata", "dax_returns.csv")

// TestTiny runs both models on the bundled data at a tiny size and checks
// the tables, the JSON (KSD finite, predictive log-likelihood finite and,
// independently, within a plausible range for returns whose test variance
// is about 2: a Gaussian with that variance scores −½ log(2π·2) − ½ ≈ −1.77
// per observation) and the trace plots.
func TestTiny(t *testing.T) {
	out := t.TempDir()
	args := []string{"-data", dax, "-segments", "10", "-time", "0", "-iters", "8", "-N", "64", "-ksdN", "64", "-predN", "64",
		"-S", "20", "-B", "5", "-chains", "2", "-eps", "0.1", "-ksddraws", "5", "-preddraws", "2", "-out", out}
	text := compare.RunOK(t, run, args)
	for _, s := range []string{"training 8 segments", "Weekly", "No Buffer", "Paper, Table 9", "Paper, Table 10", "Held-out"} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q", s)
		}
	}
	for name := range experiments() {
		o := compare.ReadJSON[output](t, filepath.Join(out, "results_"+name+".json"))
		if len(o.KSD.Methods) != 4 || len(o.Predictive) != 4 {
			t.Fatalf("%s: %d methods, %d predictive rows", name, len(o.KSD.Methods), len(o.Predictive))
		}
		for _, m := range o.KSD.Methods {
			for _, c := range m.Grid[m.Best].Chains {
				tot := float64(c.LogKSD[len(c.LogKSD)-1])
				if c.Error != "" || math.IsNaN(tot) || math.IsInf(tot, 0) {
					t.Errorf("%s %s: error %q, log10 KSD %v", name, m.Name, c.Error, tot)
				}
			}
		}
		for _, r := range o.Predictive {
			ll, lm := float64(r.MeanLogLik), float64(r.LogMeanLik)
			if r.Draws == 0 || !(ll > -5 && ll < -1) || lm < ll-1e-12 {
				t.Errorf("%s %s: %d draws, E log p = %v, log E p = %v", name, r.Method, r.Draws, ll, lm)
			}
		}
		for _, p := range o.KSD.Names {
			compare.CheckPNG(t, filepath.Join(out, "trace_"+name+"_"+p+".png"), 0)
		}
	}
}

func TestSplit(t *testing.T) {
	y := ssm.Sequence{Obs: 1, Y: make([]float64, 103)}
	for i := range y.Y {
		y.Y[i] = float64(i)
	}
	train, test, err := split(y, 10, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if len(train.Sequences) != 8 || len(test.Sequences) != 2 {
		t.Fatalf("%d train and %d test segments", len(train.Sequences), len(test.Sequences))
	}
	next := 0.0
	for _, s := range append(train.Sequences, test.Sequences...) {
		if n := s.Len(); n != 10 && n != 11 {
			t.Errorf("segment of length %d", n)
		}
		for _, v := range s.Y {
			if v != next {
				t.Fatalf("segments are not consecutive: got %v, want %v", v, next)
			}
			next++
		}
	}
	if _, _, err := split(y, 10, 0.99); err == nil {
		t.Error("empty test set accepted")
	}
}

func TestBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("1\n2\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	compare.CheckRejects(t, run, [][]string{
		{"-data", filepath.Join(t.TempDir(), "missing.csv")},
		{"-data", bad},
		{"-data", dax, "-segments", "100"}, // segments of 18 < S + 2B
		{"-data", dax, "-models", "lgssm"},
		{"-data", dax, "-train", "1"},
		{"-data", dax, "-proposal", "apf"},
	})
}

// TestGuidedSVM runs the SVM with -proposal guided (the Laplace proposal
// that examples/fit uses on these data).
func TestGuidedSVM(t *testing.T) {
	args := []string{"-data", dax, "-models", "svm", "-proposal", "guided", "-segments", "10", "-time", "0", "-iters", "8",
		"-N", "64", "-ksdN", "64", "-predN", "64", "-S", "20", "-B", "5", "-chains", "2", "-eps", "0.1", "-ksddraws", "5",
		"-preddraws", "2", "-out", t.TempDir()}
	text := compare.RunOK(t, run, args)
	if !strings.Contains(text, "Held-out") {
		t.Errorf("output lacks the held-out table:\n%s", text)
	}
}
