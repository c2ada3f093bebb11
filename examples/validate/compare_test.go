package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestCompareRef(t *testing.T) {
	fit := []fitParam{
		{Name: "phi", Mean: 0.95, SD: 0.012, Rhat: 1.004, BulkESS: 700, TailESS: 650},
		{Name: "tau", Mean: 0.80, SD: 0.05, Rhat: 1.008, BulkESS: 500, TailESS: 420},
	}
	ref := []refParam{{Name: "phi", Mean: 0.94, SD: 0.01}, {Name: "tau", Mean: 0.81, SD: 0.04}}
	rows, err := compareRef(fit, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	// (0.95 − 0.94)/0.01 = 1, 0.012/0.01 = 1.2; (0.80 − 0.81)/0.04 = −0.25, 0.05/0.04 = 1.25.
	if !near(rows[0].Z, 1) || !near(rows[0].SDRatio, 1.2) || !near(rows[1].Z, -0.25) || !near(rows[1].SDRatio, 1.25) {
		t.Errorf("rows %+v", rows)
	}
	s := summarise(rows)
	if !near(s.MaxAbsZ, 1) || !near(s.MinSDRatio, 1.2) || !near(s.MaxSDRatio, 1.25) || s.MaxRhat != 1.008 || s.MinESS != 420 || s.Truth {
		t.Errorf("summary %+v", s)
	}
	p := s.problems(nil)
	if len(p) != 1 || !strings.Contains(p[0], "1.00 reference sds") {
		t.Errorf("problems %q, want only the mean 1.00 sds away", p)
	}
	if p := s.problems([]string{"R-hat 1.02"}); len(p) != 2 || p[1] != "1 warnings" {
		t.Errorf("problems with a warning: %q", p)
	}

	if _, err := compareRef(fit, []refParam{{Name: "phi", SD: 1}, {Name: "sigma", SD: 1}}, nil); err == nil {
		t.Error("mismatched names accepted")
	}
	if _, err := compareRef(fit, ref[:1], nil); err == nil {
		t.Error("mismatched lengths accepted")
	}
	if _, err := compareRef(fit, []refParam{{Name: "phi"}, {Name: "tau", SD: 1}}, nil); err == nil {
		t.Error("zero reference sd accepted")
	}

	// MSV{D: 1}'s names against the SVM's reference.
	msv := []fitParam{{Name: "phi1", Mean: 0.95, SD: 0.012}, {Name: "tau1", Mean: 0.80, SD: 0.05}}
	if _, err := compareRef(msv, ref, nil); err == nil {
		t.Error("other names accepted without refNames")
	}
	rows, err = compareRef(msv, ref, []string{"phi", "tau"})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Name != "phi1" || !near(rows[0].Z, 1) || !near(rows[1].SDRatio, 1.25) {
		t.Errorf("renamed rows %+v", rows)
	}
	if _, err := compareRef(msv, ref, []string{"phi", "sigma"}); err == nil {
		t.Error("wrong refNames accepted")
	}
	if _, err := compareRef(msv, ref, []string{"phi"}); err == nil {
		t.Error("short refNames accepted")
	}
}

func TestCompareTruth(t *testing.T) {
	fit := []fitParam{
		{Name: "phi", Mean: 0.971, SD: 0.0005, Q05: 0.9702, Q95: 0.9718, Rhat: 1.002, BulkESS: 800, TailESS: 900},
		{Name: "sigma", Mean: 0.199, SD: 0.001, Q05: 0.1974, Q95: 0.2006, Rhat: 1.011, BulkESS: 390, TailESS: 600},
	}
	rows, err := compareTruth(fit, []float64{0.97, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	// phi: (0.971 − 0.97)/0.0005 = 2, interval [0.9702, 0.9718] misses 0.97;
	// sigma: (0.199 − 0.2)/0.001 = −1, [0.1974, 0.2006] covers 0.2.
	if math.Abs(rows[0].Z-2) > 1e-9 || rows[0].Covers || math.Abs(rows[1].Z+1) > 1e-9 || !rows[1].Covers {
		t.Errorf("rows %+v", rows)
	}
	s := summarise(rows)
	if !s.Truth || s.Covered != 1 || s.N != 2 || s.MinSDRatio != 0 || s.MaxRhat != 1.011 || s.MinESS != 390 {
		t.Errorf("summary %+v", s)
	}
	p := s.problems(nil)
	want := []string{"1 of 2 90% intervals cover the truth", "R-hat 1.011 > 1.01", "ESS 390 < 400"}
	if strings.Join(p, "|") != strings.Join(want, "|") {
		t.Errorf("problems %q, want %q", p, want)
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{{11400 * time.Millisecond, "11.4 s"}, {59940 * time.Millisecond, "59.9 s"}, {412600 * time.Millisecond, "6 min 53 s"}} {
		if got := wall(c.d); got != c.want {
			t.Errorf("wall(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := ratioRange(0.951, 1.049); got != "0.95–1.05" {
		t.Errorf("ratioRange = %q", got)
	}
	if got := ratioRange(1.001, 0.998); got != "1.00" {
		t.Errorf("ratioRange of equal roundings = %q", got)
	}
	for n, want := range map[int]string{201: "201", 1859: "1,859", 1000000: "1,000,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	c := testCase{Args: []string{"-data", "TMP/dax201.csv", "-col", "Adj Close"}}
	if got := command(c); got != "go run ./examples/fit -data /tmp/dax201.csv -col 'Adj Close'" {
		t.Errorf("command = %q", got)
	}
}

func TestSelectCases(t *testing.T) {
	quick, err := selectCases(cases, "", false)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := selectCases(cases, "", true)
	if len(quick) >= len(all) {
		t.Errorf("%d quick cases of %d", len(quick), len(all))
	}
	for _, c := range quick {
		if c.Long {
			t.Errorf("slow case %s without -long", c.Name)
		}
	}
	if s, err := selectCases(cases, "garch-dax,svm-dax", false); err != nil || len(s) != 2 || s[0].Name != "svm-dax" {
		t.Errorf("-only: %v, %v", s, err)
	}
	if _, err := selectCases(cases, "nope", false); err == nil {
		t.Error("unknown case accepted")
	}
}

func TestScaling(t *testing.T) {
	cs := scalingCases(10 * time.Minute)
	if len(cs) != len(scalingModels)*len(scalingLengths) {
		t.Fatalf("%d scaling cases", len(cs))
	}
	c := cs[len(scalingLengths)-1]
	if c.Name != "svm-1M" || c.T != 1000000 || command(c) != "go run ./examples/fit -model svm -data /tmp/svm-1M.bin -time 10m0s" {
		t.Errorf("case %s (T = %d): %s", c.Name, c.T, command(c))
	}
	if c.SetupCmd != "go run ./examples/simulate -model svm -T 1000000 -params 0.97,0.2,1 -out /tmp/svm-1M.bin" {
		t.Errorf("setup %s", c.SetupCmd)
	}
	// Cost per effective draw: 10 s / 400 at T = 1000 and 40 s / 400 at
	// T = 16000 is a slope of log 4 / log 16 = 0.5; a failed fit is left out.
	rs := []result{
		{Case: "svm-1k", T: 1000, Wall: 10, Summary: summary{MinESS: 400, N: 3, Covered: 3, Truth: true}},
		{Case: "svm-16k", T: 16000, Wall: 40, Summary: summary{MinESS: 400, N: 3, Covered: 3, Truth: true}},
		{Case: "svm-1M", T: 1000000, Wall: 900, Error: "stopped"},
	}
	g, ok := growth(rs, "svm")
	if !ok || !strings.Contains(g, "slope 0.50") {
		t.Errorf("growth %q, %v", g, ok)
	}
	if _, ok := growth(rs, "garch"); ok {
		t.Error("growth of a model with no fits")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "scaling.md")
	if err := scalingPlot(filepath.Join(dir, "figures", "scaling.png"), rs); err != nil {
		t.Fatal(err)
	}
	if err := writeScalingPage(page, rs, 10*time.Minute, time.Minute); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| SVM | 16,000 | 40.0 s |", "| 400 | 0.1 | 0.000 | 3 of 3 | 0 |", "| SVM | 1,000,000 | 15 min 0 s |", "slope 0.50"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q:\n%s", want, b)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "figures", "scaling.png")); err != nil {
		t.Error(err)
	}
}

// TestLoadNote: the page says other work shared the cores only when the
// load average was above the number of cores.
func TestLoadNote(t *testing.T) {
	for _, c := range []struct {
		load, want string
	}{
		{"1.23", "load average 1.23 when the run began (at most 2: no other work waited for the cores then)"},
		{"2.00", "load average 2.00 when the run began (at most 2: no other work waited for the cores then)"},
		{"3.44", "load average 3.44 when the run began: above 2, other work shared the cores and stretched the times"},
		{"x", "load average x when the run began"},
	} {
		if got := loadNote(c.load, 2); got != c.want {
			t.Errorf("loadNote(%q, 2) = %q, want %q", c.load, got, c.want)
		}
	}
}
