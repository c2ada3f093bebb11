package main

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// writeTrace writes a trace.csv with sgmcmc.CSVRecorder, as examples/fit
// does: chains[c] holds n draws of len(names) parameters, row-major, and
// the rows of the chains interleave.
func writeTrace(t *testing.T, path string, names []string, chains [][]float64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := len(names)
	rec := sgmcmc.NewCSVRecorder(f, names)
	if err := rec.Init(sgmcmc.Info{Chains: len(chains), Dim: d, Thin: 1}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(chains[0])/d; i++ {
		for c, x := range chains {
			dr := sgmcmc.Draw{Chain: c, Iter: i, U: x[i*d : (i+1)*d], Elapsed: time.Duration(i) * time.Millisecond}
			if err := rec.Record(&dr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rec.Done(nil); err != nil {
		t.Fatal(err)
	}
}

// normal returns m chains of n independent N(shift[c], 1) draws of d
// parameters.
func normal(rng *rand.Rand, m, n, d int, shift ...float64) [][]float64 {
	chains := make([][]float64, m)
	for c := range chains {
		chains[c] = make([]float64, n*d)
		for i := range chains[c] {
			chains[c][i] = rng.NormFloat64()
			if c < len(shift) {
				chains[c][i] += shift[c]
			}
		}
	}
	return chains
}

type result struct {
	Files []struct {
		Path   string
		Chains []int
		Draws  []int
	}
	Chains, Kept int
	MinDraws     int `json:"min_draws"`
	Params       []struct {
		Name                    string
		Mean, SD, Q05, Q50, Q95 float64
		BulkESS                 float64 `json:"bulk_ess"`
		TailESS                 float64 `json:"tail_ess"`
		Rhat, MCSE              float64
	}
	Warnings []string
}

// merge runs the command with -json and decodes its output.
func merge(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut strings.Builder
	if err := run(append([]string{"-json"}, args...), &out, &errOut); err != nil {
		t.Fatalf("merge %q: %v", args, err)
	}
	var r result
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	return r
}

// mergeErr runs the command and returns its error.
func mergeErr(args ...string) error {
	var out, errOut strings.Builder
	return run(args, &out, &errOut)
}

var names = []string{"phi", "sigma"}

// TestMergeIID: two files of two chains each of independent N(0, 1) draws
// are four chains; R-hat within 1.01 and every mean within 4 standard
// errors of 0; no warnings, in JSON and in the text report.
func TestMergeIID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	writeTrace(t, a, names, normal(rng, 2, 1000, 2))
	writeTrace(t, b, names, normal(rng, 2, 1000, 2))
	r := merge(t, a, b)
	if r.Chains != 4 || r.Kept != 4000 || r.MinDraws != 1000 || len(r.Files) != 2 {
		t.Errorf("%d chains, %d draws, %d per chain, %d files; want 4, 4000, 1000, 2", r.Chains, r.Kept, r.MinDraws, len(r.Files))
	}
	for _, p := range r.Params {
		t.Logf("%s: mean %.4f, sd %.3f, bulk ESS %.0f, tail ESS %.0f, R-hat %.4f", p.Name, p.Mean, p.SD, p.BulkESS, p.TailESS, p.Rhat)
		if p.Rhat > 1.01 || p.Rhat < 0.99 {
			t.Errorf("%s: R-hat %.4f, want within 1.01", p.Name, p.Rhat)
		}
		if se := 1 / math.Sqrt(4000); math.Abs(p.Mean) > 4*se {
			t.Errorf("%s: mean %.4f, more than 4 standard errors (%.4f) from 0", p.Name, p.Mean, se)
		}
		if math.Abs(p.SD-1) > 0.05 || p.BulkESS < 3000 || p.TailESS < 3000 {
			t.Errorf("%s: sd %.3f, bulk ESS %.0f, tail ESS %.0f for 4000 independent N(0, 1) draws", p.Name, p.SD, p.BulkESS, p.TailESS)
		}
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %q", r.Warnings)
	}
	var out strings.Builder
	if err := run([]string{a, b}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 chains from 2 files, 4000 draws", "bulk ESS", "tail ESS", "R-hat", "MCSE"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "warning") {
		t.Errorf("text report warns:\n%s", out.String())
	}
}

// TestMergeShifted: a file whose chains sit 3 sd away from the other
// file's gives R-hat > 1.1 and Fit's warning; so does one file whose two
// chains disagree.
func TestMergeShifted(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv"), filepath.Join(dir, "c.csv")
	writeTrace(t, a, names, normal(rng, 2, 500, 2))
	writeTrace(t, b, names, normal(rng, 2, 500, 2, 3, 3))
	writeTrace(t, c, names, normal(rng, 2, 500, 2, 0, 3))
	for _, files := range [][]string{{a, b}, {c}} {
		r := merge(t, files...)
		all := strings.Join(r.Warnings, "\n")
		for _, p := range r.Params {
			t.Logf("%q: %s: R-hat %.3f", files, p.Name, p.Rhat)
			if p.Rhat <= 1.1 {
				t.Errorf("%q: %s: R-hat %.3f, want > 1.1", files, p.Name, p.Rhat)
			}
			if !strings.Contains(all, p.Name+": R-hat") {
				t.Errorf("%q: no R-hat warning for %s in %q", files, p.Name, r.Warnings)
			}
		}
	}
	var out strings.Builder
	if err := run([]string{a, b}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warning: phi: R-hat") {
		t.Errorf("text report without the R-hat warning:\n%s", out.String())
	}
}

// TestMergeColumns: files with other parameter columns, or not a trace
// file at all, are errors that name the file.
func TestMergeColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "other.csv")
	writeTrace(t, a, names, normal(rng, 2, 20, 2))
	writeTrace(t, b, []string{"phi", "tau"}, normal(rng, 2, 20, 2))
	err := mergeErr(a, b)
	if err == nil || !strings.Contains(err.Error(), b) || !strings.Contains(err.Error(), "phi,tau") {
		t.Errorf("mismatched columns: error %v, want one naming %s and its columns", err, b)
	}
	three := filepath.Join(dir, "three.csv")
	writeTrace(t, three, []string{"phi", "sigma", "tau"}, normal(rng, 2, 20, 3))
	if err := mergeErr(a, three); err == nil || !strings.Contains(err.Error(), three) {
		t.Errorf("three columns against two: error %v, want one naming %s", err, three)
	}
	for name, text := range map[string]string{
		"data.csv":   "y\n0.1\n0.2\n",
		"empty.csv":  "",
		"header.csv": "chain,iter,time,phi,sigma\n",
		"dup.csv":    "chain,iter,time,phi,phi\n0,0,0,1,2\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := mergeErr(a, p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
	if err := mergeErr(a, filepath.Join(dir, "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: error %v", err)
	}
	if err := mergeErr(); err == nil {
		t.Error("no files: no error")
	}
}

// TestMergeBadNumber: a cell that is not a number, a non-finite draw, a
// short row and rows out of order are errors naming the file and line.
func TestMergeBadNumber(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	writeTrace(t, good, names, normal(rng, 2, 20, 2))
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, c := range []struct {
		edit func(cells []string) []string
		want string
	}{
		{func(c []string) []string { c[4] = "0.3x"; return c }, `sigma "0.3x" is not a finite number`},
		{func(c []string) []string { c[3] = "NaN"; return c }, `phi "NaN" is not a finite number`},
		{func(c []string) []string { c[0] = "one"; return c }, "not a chain index"},
		{func(c []string) []string { c[1] = "-1"; return c }, "not an iteration"},
		{func(c []string) []string { c[2] = ""; return c }, "not a time"},
		{func(c []string) []string { return c[:4] }, "4 cells, want 5"},
		{func(c []string) []string { c[1] = "0"; return c }, "out of order"},
	} {
		const line = 7 // 1-based: header, then rows
		cells := strings.Split(lines[line-1], ",")
		edited := append(append([]string{}, lines[:line-1]...), strings.Join(c.edit(cells), ","))
		edited = append(edited, lines[line:]...)
		p := filepath.Join(dir, "bad"+string(rune('a'+i))+".csv")
		if err := os.WriteFile(p, []byte(strings.Join(edited, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		err := mergeErr(good, p)
		if err == nil || !strings.Contains(err.Error(), p+":7:") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("edit %d: error %v, want one at %s:7 saying %q", i, err, p, c.want)
		}
	}
}

// TestMergeSameSeed: two files with the same draws (two jobs run with the
// same seed) or one file given twice are refused.
func TestMergeSameSeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	chains := normal(rng, 2, 50, 2)
	writeTrace(t, a, names, chains)
	writeTrace(t, b, names, chains)
	if err := mergeErr(a, b); err == nil || !strings.Contains(err.Error(), "identical draws") {
		t.Errorf("same draws in two files: error %v", err)
	}
	if err := mergeErr(a, filepath.Join(dir, ".", "a.csv")); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("a file given twice: error %v", err)
	}
}

// TestMergeWarmupDrop: -warmup-drop removes draws from the start of every
// chain; a chain it empties is noted and left out.
func TestMergeWarmupDrop(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.csv"), filepath.Join(dir, "b.csv")
	writeTrace(t, a, names, normal(rng, 2, 100, 2))
	writeTrace(t, b, names, normal(rng, 1, 30, 2))
	r := merge(t, "-warmup-drop", "40", a, b)
	if r.Chains != 2 || r.Kept != 120 || r.MinDraws != 60 || r.Files[1].Draws[0] != 0 {
		t.Errorf("-warmup-drop 40: %d chains, %d draws, %d per chain, files %+v; want 2, 120, 60", r.Chains, r.Kept, r.MinDraws, r.Files)
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "all 30 draws dropped") {
		t.Errorf("warnings %q, want the emptied chain first", r.Warnings)
	}
	if err := mergeErr("-warmup-drop", "100", a); err == nil {
		t.Error("-warmup-drop of every draw: no error")
	}
	if err := mergeErr("-warmup-drop", "-1", a); err == nil {
		t.Error("-warmup-drop -1: no error")
	}
}

// TestMergeFit: the trace.csv of a short fit (exact LGSSM gradients, the
// recorder examples/fit uses) merges to the fit's own summary, every
// number exactly.
func TestMergeFit(t *testing.T) {
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	m := models.LGSSM{}
	path := filepath.Join(t.TempDir(), "trace.csv")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	rec := sgmcmc.NewCSVRecorder(f, m.ParamNames())
	rec.Transform = func(dst, u []float64) { m.Constrain(dst, u) }
	post, err := sgmcmc.Fit(context.Background(), m, ssm.Dataset{Sequences: []ssm.Sequence{seq}},
		sgmcmc.FitSettings{Exact: true, Seed: 2, Chains: 3, Iterations: 400, AdaptWindow: 100, KSDDraws: -1, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	r := merge(t, path)
	if r.Chains != 3 || r.Kept != post.Draws() {
		t.Errorf("%d chains, %d draws; the fit kept %d in 3", r.Chains, r.Kept, post.Draws())
	}
	for j, want := range post.Summary() {
		p := r.Params[j]
		got := sgmcmc.ParamSummary{Name: p.Name, Mean: p.Mean, SD: p.SD, Q05: p.Q05, Q50: p.Q50, Q95: p.Q95,
			BulkESS: p.BulkESS, TailESS: p.TailESS, Rhat: p.Rhat, MCSE: p.MCSE}
		if got != want {
			t.Errorf("merged %+v\nfit    %+v", got, want)
		}
	}
}
