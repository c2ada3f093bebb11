package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The tests run from the package directory; the bundled data is two levels up.
var daxPath = filepath.Join("..", "..", "testdata", "dax_returns.csv")

type paramJSON struct {
	Mean, SD, Q05, Q50, Q95, ESS, Rhat *float64
}

type outputJSON struct {
	Model   string               `json:"model"`
	Params  map[string]paramJSON `json:"params"`
	KSD     *float64             `json:"ksd"`
	Iters   int                  `json:"iters"`
	Seconds float64              `json:"seconds"`
	Chains  int                  `json:"chains"`
	Kept    int                  `json:"kept"`
}

// runJSON runs the program with -json and the given flags, and decodes its
// single JSON object, failing on anything else on stdout.
func runJSON(t *testing.T, args ...string) (outputJSON, string) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"-json", "-out", out}, args...)
	var stdout, stderr bytes.Buffer
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	text := stdout.String()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	var o outputJSON
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("decoding the JSON output: %v\n%s", err, text)
	}
	if rest := strings.TrimSpace(text[int(dec.InputOffset()):]); rest != "" {
		t.Errorf("stdout holds more than one JSON object: %q", rest)
	}
	return o, out
}

// checkOutput checks the JSON fields and the files a run writes.
func checkOutput(t *testing.T, o outputJSON, dir, model string, names []string, chains, iters, kept int) {
	t.Helper()
	if o.Model != model {
		t.Errorf("model = %q, want %q", o.Model, model)
	}
	if len(o.Params) != len(names) {
		t.Errorf("params has %d keys, want %v", len(o.Params), names)
	}
	for _, name := range names {
		p, ok := o.Params[name]
		if !ok {
			t.Errorf("params lacks %q", name)
			continue
		}
		for key, v := range map[string]*float64{"mean": p.Mean, "sd": p.SD, "q05": p.Q05, "q50": p.Q50, "q95": p.Q95, "ess": p.ESS, "rhat": p.Rhat} {
			if v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
				t.Errorf("%s.%s is missing or not finite", name, key)
			}
		}
		if t.Failed() {
			continue
		}
		if !(*p.Q05 <= *p.Q50 && *p.Q50 <= *p.Q95) || *p.Mean < *p.Q05 || *p.Mean > *p.Q95 {
			t.Errorf("%s: quantiles %v, %v, %v and mean %v out of order", name, *p.Q05, *p.Q50, *p.Q95, *p.Mean)
		}
		if *p.SD <= 0 || *p.ESS <= 0 || *p.Rhat < 0.9 {
			t.Errorf("%s: sd %v, ESS %v, R-hat %v not sane", name, *p.SD, *p.ESS, *p.Rhat)
		}
	}
	if o.KSD == nil || !(*o.KSD > 0) || math.IsInf(*o.KSD, 0) {
		t.Errorf("ksd = %v, want a positive finite number", o.KSD)
	}
	if o.Iters != iters || o.Chains != chains || o.Kept != kept {
		t.Errorf("iters, chains, kept = %d, %d, %d, want %d, %d, %d", o.Iters, o.Chains, o.Kept, iters, chains, kept)
	}
	if !(o.Seconds > 0) {
		t.Errorf("seconds = %v", o.Seconds)
	}

	// trace.csv: header chain,iter,time,<names>, one row per kept draw,
	// natural parameters inside their domains.
	f, err := os.Open(filepath.Join(dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("trace.csv: %v", err)
	}
	if want := "chain,iter,time," + strings.Join(names, ","); strings.Join(rows[0], ",") != want {
		t.Errorf("trace.csv header %q, want %q", strings.Join(rows[0], ","), want)
	}
	if len(rows)-1 != kept {
		t.Errorf("trace.csv has %d rows, want %d", len(rows)-1, kept)
	}
	for _, row := range rows[1:] {
		for j, cell := range row[3:] {
			v, err := strconv.ParseFloat(cell, 64)
			if err != nil || math.IsNaN(v) || (names[j] != "mu" && names[j] != "phi" && v <= 0) {
				t.Fatalf("trace.csv: %s = %q", names[j], cell)
			}
		}
	}
	for _, name := range []string{"trace.png", "density.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width < 100 || cfg.Height < 100 {
			t.Errorf("%s: not a sensible PNG (%v, %dx%d)", name, err, cfg.Width, cfg.Height)
		}
	}
}

func TestSVMOnDAX(t *testing.T) {
	for _, prop := range []string{"guided", "bootstrap"} {
		t.Run(prop, func(t *testing.T) {
			o, dir := runJSON(t, "-data", daxPath, "-N", "100", "-warmup", "50", "-iters", "300", "-burnin", "100",
				"-thin", "2", "-chains", "2", "-ksd", "10", "-q", "-proposal", prop)
			checkOutput(t, o, dir, "svm", []string{"phi", "sigma", "tau"}, 2, 350, 2*100)
			// Even this short run must put φ in the persistent range of daily
			// returns and τ near the returns' scale (sd 1.03): loose sanity bounds.
			if m := *o.Params["phi"].Mean; m < 0.5 || m >= 1 {
				t.Errorf("phi mean %v, want a persistent volatility", m)
			}
			if m := *o.Params["tau"].Mean; m < 0.3 || m > 3 {
				t.Errorf("tau mean %v, want the scale of the returns", m)
			}
		})
	}
}

// TestProposalReported checks that the text report names the proposal.
func TestProposalReported(t *testing.T) {
	for _, prop := range []string{"guided", "bootstrap"} {
		var stdout, stderr bytes.Buffer
		args := []string{"-data", daxPath, "-N", "50", "-warmup", "0", "-iters", "20", "-burnin", "10", "-chains", "1",
			"-ksd", "0", "-q", "-out", t.TempDir(), "-proposal", prop}
		if err := run(args, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if want := "N = 50 particles (" + prop + " proposal)"; !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestGARCHOnDAX(t *testing.T) {
	o, dir := runJSON(t, "-model", "garch", "-data", daxPath, "-N", "100", "-warmup", "50", "-iters", "200",
		"-burnin", "100", "-chains", "2", "-ksd", "10", "-q")
	checkOutput(t, o, dir, "garch", []string{"mu", "phi", "lambda", "tau"}, 2, 250, 2*100)
}

// writeLGSSM simulates T observations from the LGSSM and writes them as a
// one-column CSV with a header.
func writeLGSSM(t *testing.T, T int, phi, sigma, tau float64, seed uint64) string {
	t.Helper()
	m := models.LGSSM{}
	u, err := m.Params(phi, sigma, tau)
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "lgssm.csv")
	var b bytes.Buffer
	if err := ssm.WriteCSV(&b, y); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("y\n"), b.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLGSSMKalmanRuns(t *testing.T) {
	data := writeLGSSM(t, 300, 0.9, 0.7, 1, 1)
	for _, method := range []string{"psgld", "sgld", "sghmc"} {
		t.Run(method, func(t *testing.T) {
			o, dir := runJSON(t, "-model", "lgssm", "-kalman", "-method", method, "-data", data, "-warmup", "50",
				"-iters", "300", "-burnin", "100", "-chains", "3", "-ksd", "20", "-q")
			checkOutput(t, o, dir, "lgssm", []string{"phi", "sigma", "tau"}, 3, 350, 3*200)
		})
	}
}

// TestMultiSequence reads several sequences from a long-format CSV with an
// id column, with -full gradients.
func TestMultiSequence(t *testing.T) {
	m := models.LGSSM{}
	u, _ := m.Params(0.8, 0.5, 0.5)
	rng := rand.New(rand.NewPCG(2, 0))
	var b strings.Builder
	b.WriteString("week,y\n")
	for j := range 3 {
		_, y, _ := m.Simulate(80, u, rng)
		for _, v := range y.Y {
			b.WriteString("w" + strconv.Itoa(j) + "," + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
		}
	}
	path := filepath.Join(t.TempDir(), "weeks.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	o, dir := runJSON(t, "-model", "lgssm", "-data", path, "-id", "week", "-full", "-N", "50", "-warmup", "20",
		"-iters", "100", "-burnin", "50", "-chains", "2", "-ksd", "5", "-q")
	checkOutput(t, o, dir, "lgssm", []string{"phi", "sigma", "tau"}, 2, 120, 2*50)
}

// TestLGSSMAccuracy fits simulated LGSSM data (T = 2000) with exact Kalman
// subsequence gradients and checks that the posterior means are near the
// data-generating values. By the Bernstein–von Mises theorem the posterior
// mean is within a few posterior sds of the truth; the sd reported by the
// run is used as that scale (SGLD's gradient noise inflates it, which can
// only loosen the test, so the sd is also required to be small: with
// T = 2000 the Fisher information bounds the posterior sd of each
// parameter well below 0.1).
func TestLGSSMAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds of sampling")
	}
	truth := map[string]float64{"phi": 0.9, "sigma": 0.7, "tau": 1}
	data := writeLGSSM(t, 2000, truth["phi"], truth["sigma"], truth["tau"], 7)
	o, _ := runJSON(t, "-model", "lgssm", "-kalman", "-method", "sgld", "-data", data, "-eps", "0.1", "-warmup", "300",
		"-iters", "6000", "-burnin", "1000", "-chains", "4", "-ksd", "50", "-q")
	for name, want := range truth {
		p := o.Params[name]
		if *p.SD > 0.1 {
			t.Errorf("%s: posterior sd %.3g, want < 0.1 for T = 2000", name, *p.SD)
		}
		if d := math.Abs(*p.Mean - want); d > 4**p.SD {
			t.Errorf("%s: posterior mean %.4f is %.2g from the truth %v, more than 4 sd (%.3g)", name, *p.Mean, d, want, *p.SD)
		}
		if *p.Rhat > 1.05 {
			t.Errorf("%s: R-hat %.3f > 1.05", name, *p.Rhat)
		}
		t.Logf("%s: mean %.4f sd %.4f (truth %v), ESS %.0f, R-hat %.3f", name, *p.Mean, *p.SD, want, *p.ESS, *p.Rhat)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "bad.csv")
	os.WriteFile(malformed, []byte("1.5\n0.3\nabc\n2\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	os.WriteFile(short, []byte(strings.Repeat("0.1\n", 50)), 0o644)
	allNA := filepath.Join(dir, "na.csv")
	os.WriteFile(allNA, []byte("y\nNA\n\nNaN\n"), 0o644)
	tiny := filepath.Join(dir, "tiny.csv")
	os.WriteFile(tiny, []byte("y\n1\n-2\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string // substring of the error
	}{
		{"missing file", []string{"-data", filepath.Join(dir, "nope.csv")}, "no such file"},
		{"malformed CSV", []string{"-data", malformed}, "line 3"},
		{"unknown model", []string{"-model", "arma"}, `unknown model "arma"`},
		{"unknown method", []string{"-method", "hmc"}, `unknown method "hmc"`},
		{"unknown proposal", []string{"-proposal", "apf"}, `unknown proposal "apf"`},
		{"all missing", []string{"-data", allNA}, "no observed values"},
		{"diverging chains", []string{"-data", tiny, "-full", "-iters", "300", "-burnin", "5", "-warmup", "0", "-chains", "2", "-N", "50", "-eps", "1e4"}, "try a smaller -eps"},
		{"S + 2B > T", []string{"-data", short}, "S + 2B = 40 + 2·10 = 60 exceeds the length 50"},
		{"kalman needs lgssm", []string{"-kalman"}, "-kalman needs -model lgssm"},
		{"burn-in too long", []string{"-iters", "10", "-burnin", "10"}, "leaves no draws"},
		{"missing id column", []string{"-data", short, "-id", "week"}, "week"},
		{"bad flag", []string{"-iters", "many"}, "invalid value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(append([]string{"-out", t.TempDir(), "-q"}, c.args...), &stdout, &stderr)
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, c.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
		})
	}
}

func TestScaleWarning(t *testing.T) {
	for _, c := range []struct {
		model string
		v     float64
		warn  bool
	}{{"svm", 1.06, false}, {"svm", 0.01, false}, {"svm", 100, false}, {"svm", 1e-4, true}, {"lgssm", 1e4, true},
		{"svm", 0.0099, true}, {"garch", 1.06, false}, {"garch", 3, true}, {"svm", 3, false}} {
		if got := scaleWarning(c.model, c.v) != ""; got != c.warn {
			t.Errorf("%s, variance %v: warning %v, want %v", c.model, c.v, got, c.warn)
		}
	}
	// The bundled DAX returns (percent) get no warning; the same in
	// decimals do, on stderr, and the run still succeeds.
	dir := t.TempDir()
	seq, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, v := range seq.Y[:200] {
		b.WriteString(strconv.FormatFloat(v/100, 'g', -1, 64) + "\n")
	}
	dec := filepath.Join(dir, "dec.csv")
	if err := os.WriteFile(dec, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data string
		warn bool
	}{{daxPath, false}, {dec, true}} {
		var stdout, stderr bytes.Buffer
		args := []string{"-data", c.data, "-N", "50", "-warmup", "0", "-iters", "20", "-burnin", "10", "-chains", "1",
			"-ksd", "0", "-q", "-out", dir}
		if err := run(args, &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", c.data, err)
		}
		if got := strings.Contains(stderr.String(), "default priors"); got != c.warn {
			t.Errorf("%s: warning printed %v, want %v (stderr %q)", c.data, got, c.warn, stderr.String())
		}
	}
}
