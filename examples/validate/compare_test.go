package main

import (
	"math"
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
	rows, err := compareRef(fit, ref)
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

	if _, err := compareRef(fit, []refParam{{Name: "phi", SD: 1}, {Name: "sigma", SD: 1}}); err == nil {
		t.Error("mismatched names accepted")
	}
	if _, err := compareRef(fit, ref[:1]); err == nil {
		t.Error("mismatched lengths accepted")
	}
	if _, err := compareRef(fit, []refParam{{Name: "phi"}, {Name: "tau", SD: 1}}); err == nil {
		t.Error("zero reference sd accepted")
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
	quick, err := selectCases("", false)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := selectCases("", true)
	if len(quick) >= len(all) {
		t.Errorf("%d quick cases of %d", len(quick), len(all))
	}
	for _, c := range quick {
		if c.Long {
			t.Errorf("slow case %s without -long", c.Name)
		}
	}
	if s, err := selectCases("garch-dax,svm-dax", false); err != nil || len(s) != 2 || s[0].Name != "svm-dax" {
		t.Errorf("-only: %v, %v", s, err)
	}
	if _, err := selectCases("nope", false); err == nil {
		t.Error("unknown case accepted")
	}
}
