package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// The tests run from the package directory; the bundled data is two levels up.
var daxPath = filepath.Join("..", "..", "testdata", "dax_returns.csv")

type paramJSON struct {
	Name                          string
	Mean, SD, Q05, Q50, Q95, Rhat *float64
	BulkESS                       *float64 `json:"bulk_ess"`
	TailESS                       *float64 `json:"tail_ess"`
	MCSE                          *float64
}

type outputJSON struct {
	Model  string   `json:"model"`
	Data   string   `json:"data"`
	Series []string `json:"series"` // msv
	// Forecast is -forecast's member (decoded where a test asks for it).
	Forecast json.RawMessage `json:"forecast"`
	Gradient string          `json:"gradient"`
	Method   string          `json:"method"`
	Filter   string          `json:"filter"`
	Params   []paramJSON     `json:"params"`
	KSD      *float64        `json:"ksd"`
	Step     float64         `json:"step"`
	Noise    []float64       `json:"noise_ratio"`
	Accept   float64         `json:"accept"`
	AccInd   float64         `json:"accept_independent"`
	Iters    int             `json:"iters"`
	Adapt    int             `json:"adapt_iters"`
	Seconds  float64         `json:"seconds"`
	Chains   int             `json:"chains"`
	Kept     int             `json:"kept"`
	Warnings []string        `json:"warnings"`
	// Discretisation is the correction towards a finer scorer (GARCH).
	Discretisation *struct {
		Mode         []float64 `json:"mode"`
		Chol         []float64 `json:"chol"`
		Tilt         []float64 `json:"tilt"`
		Curve        []float64 `json:"curve"`
		Cross        []float64 `json:"cross"`
		Cubic        []float64 `json:"cubic"`
		TargetChol   []float64 `json:"target_chol"`
		Level        int       `json:"level"`
		Shift        []float64 `json:"shift"`
		Coarse       bool      `json:"coarse"`
		Residual     []float64 `json:"residual"`
		ResidualSE   []float64 `json:"residual_se"`
		ResidualSD   []float64 `json:"residual_sd"`
		ResidualSDSE []float64 `json:"residual_sd_se"`
		Draws        int       `json:"draws"`
	} `json:"discretisation"`
}

// runJSON runs the program with -json and the given flags, and decodes its
// single JSON object, failing on anything else on stdout.
func runJSON(t *testing.T, args ...string) (outputJSON, string) {
	t.Helper()
	out := t.TempDir()
	args = append([]string{"-json", "-out", out}, args...)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
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
		t.Fatalf("params has %d rows, want %v", len(o.Params), names)
	}
	for i, name := range names {
		p := o.Params[i]
		if p.Name != name {
			t.Errorf("params[%d] is %q, want %q", i, p.Name, name)
		}
		for key, v := range map[string]*float64{"mean": p.Mean, "sd": p.SD, "q05": p.Q05, "q50": p.Q50, "q95": p.Q95,
			"bulk_ess": p.BulkESS, "tail_ess": p.TailESS, "rhat": p.Rhat, "mcse": p.MCSE} {
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
		if *p.SD <= 0 || *p.BulkESS <= 0 || *p.Rhat < 0.9 {
			t.Errorf("%s: sd %v, ESS %v, R-hat %v not sane", name, *p.SD, *p.BulkESS, *p.Rhat)
		}
		// ESS below 400 or R-hat above 1.01 must come with a warning.
		if (*p.BulkESS < 400 || *p.Rhat > 1.01) && !hasWarning(o.Warnings, name+":") {
			t.Errorf("%s: ESS %.0f, R-hat %.3f but no warning in %q", name, *p.BulkESS, *p.Rhat, o.Warnings)
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
			signed := names[j] == "mu" || strings.HasPrefix(names[j], "phi") || strings.HasPrefix(names[j], "rho")
			if err != nil || math.IsNaN(v) || (!signed && v <= 0) {
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

func hasWarning(ws []string, prefix string) bool {
	for _, w := range ws {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// short is a fast configuration: few particles and iterations.
var short = []string{"-N", "100", "-warmup", "60", "-adapt", "60", "-iters", "150", "-chains", "2", "-ksd", "8", "-q"}

func TestSVMOnDAX(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	for _, prop := range []string{"guided", "bootstrap"} {
		t.Run(prop, func(t *testing.T) {
			o, dir := runJSON(t, append([]string{"-data", daxPath, "-proposal", prop}, short...)...)
			checkOutput(t, o, dir, "svm", models.SVM{}.ParamNames(), 2, 150, 300)
			// Far from the grid reference (φ 0.942, σ 0.268, τ 0.869;
			// gridref/ref_svm_dax.json) only if something is broken: a
			// short run is still within 5 reference sds.
			ref := []struct{ mean, sd float64 }{{0.9417, 0.0142}, {0.2682, 0.0298}, {0.8693, 0.0519}}
			for i, r := range ref {
				if z := (*o.Params[i].Mean - r.mean) / r.sd; math.Abs(z) > 5 {
					t.Errorf("%s mean %.4f is %.1f reference sds from %.4f", o.Params[i].Name, *o.Params[i].Mean, z, r.mean)
				}
			}
		})
	}
}

// TestGARCHOnDAX runs what the GARCH default uses on DAX (the model's
// exact scorer, full-data Metropolis-adjusted scores; forced with
// -gradient full, which also skips the noise probes) on the first 120 DAX
// days: a pass over the data per iteration, so the whole series would
// take minutes.
func TestGARCHOnDAX(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	b, err := os.ReadFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	path := filepath.Join(t.TempDir(), "dax120.csv")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:120], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	o, dir := runJSON(t, append([]string{"-model", "garch", "-data", path, "-gradient", "full"}, short...)...)
	if o.Gradient != "full" || o.Noise != nil || !(o.Accept > 0) || !(o.AccInd > 0) {
		t.Errorf("gradient %q, noise ratio %v, acceptance rates %v and %v: want full-data scores, no noise ratio, positive acceptance rates",
			o.Gradient, o.Noise, o.Accept, o.AccInd)
	}
	checkOutput(t, o, dir, "garch", models.GARCH{}.ParamNames(), 2, 150, 300)
	// The discretisation correction is reported: on 120 days the coarser
	// 32 nodes suffice (a shift below 0.5 sd towards their finer scorer)
	// and the deeper 24 nodes' correction fits (level 2), and the check
	// after sampling finds the chains within 0.2 sd of the finer scorer.
	if d := o.Discretisation; d == nil || len(d.Mode) != 4 || len(d.Chol) != 16 || len(d.Tilt) != 4 || len(d.Curve) != 4 || len(d.Cross) != 16 || len(d.Cubic) != 4 || len(d.TargetChol) != 16 || d.Level != 2 ||
		len(d.Shift) != 4 || len(d.Residual) != 4 || len(d.ResidualSE) != 4 || d.Draws != 12 && d.Draws != 24 {
		t.Errorf("discretisation %+v: want the correction's mode, L, tilt, curvature (diagonal and full), cubes, the target's factor, level 2, shift in u and residual (4 parameters) from 12 or 24 draws", d)
	} else {
		t.Logf("discretisation: coarse %v, shift %.3f, residual %.3f ± %.3f (%d draws)", d.Coarse, d.Shift, d.Residual, d.ResidualSE, d.Draws)
		for i := range 4 {
			if !d.Coarse || !(math.Abs(d.Shift[i]) < 0.5) || !(math.Abs(d.Residual[i]) < 0.2) {
				t.Errorf("discretisation: coarse %v, shift %v sd, residual %v sd on 120 days: want the coarse model, shifts below 0.5, residuals below 0.2", d.Coarse, d.Shift, d.Residual)
				break
			}
		}
	}
}

func TestLGSSMKalman(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	data := filepath.Join("..", "..", "testdata", "lgssm_sim.csv")
	o, dir := runJSON(t, "-model", "lgssm", "-kalman", "-data", data, "-warmup", "100", "-adapt", "100", "-iters", "300",
		"-chains", "2", "-ksd", "10", "-q")
	checkOutput(t, o, dir, "lgssm", models.LGSSM{}.ParamNames(), 2, 300, 600)
}

func TestMultiSequence(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	// Four weekly sequences of an LGSSM in long format: a panel with a
	// date, an id and a second value column, fitted by -id with -col.
	m := models.LGSSM{}
	u, _ := m.Params(0.8, 0.5, 0.5)
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("date,week,y,volume\n")
	for w := 0; w < 4; w++ {
		_, y, err := m.Simulate(120, u, rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range y.Y {
			fmt.Fprintf(&b, "2024-%02d-01,w%d,%g,n/a\n", w+1, w, v)
		}
	}
	path := filepath.Join(t.TempDir(), "weeks.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	o, dir := runJSON(t, append([]string{"-model", "lgssm", "-data", path, "-id", "week", "-col", "y"}, short...)...)
	checkOutput(t, o, dir, "lgssm", m.ParamNames(), 2, 150, 300)
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	malformed := filepath.Join(dir, "bad.csv")
	os.WriteFile(malformed, []byte("1.5\n0.3\nabc\n2\n"), 0o644)
	short := filepath.Join(dir, "short.csv")
	os.WriteFile(short, []byte(strings.Repeat("0.1\n", 50)), 0o644)
	allNA := filepath.Join(dir, "na.csv")
	os.WriteFile(allNA, []byte("y\nNA\n\nNaN\n"), 0o644)
	panel := filepath.Join(dir, "panel.csv")
	os.WriteFile(panel, []byte("date,ticker,close\nd0,AAA,10\nd0,BBB,20\nd1,AAA,11\nd1,BBB,NA\nd1,CCC,5\n"), 0o644)
	panel2 := filepath.Join(dir, "panel2.csv")
	os.WriteFile(panel2, []byte("date,ticker,close\nd0,AAA,10\nd0,BBB,20\nd1,AAA,11\nd1,BBB,NA\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string // substring of the error
	}{
		{"missing file", []string{"-data", filepath.Join(dir, "nope.csv")}, "no such file"},
		{"malformed CSV", []string{"-data", malformed}, "line 3"},
		{"unknown model", []string{"-model", "arma"}, `unknown model "arma"`},
		{"unknown gradient", []string{"-gradient", "hmc"}, `unknown gradient "hmc"`},
		{"unknown proposal", []string{"-proposal", "apf"}, `unknown proposal "apf"`},
		{"all missing", []string{"-data", allNA}, "no observed values"},
		// The settings' values are checked before the data are read, and
		// named by their flags (sgmcmc.FitSettings.CheckFlags).
		{"step too large", []string{"-data", daxPath, "-step", "1"}, "-step = 1: want a value in (0, 1), or 0 to choose it"},
		{"negative thin", []string{"-data", daxPath, "-thin", "-1"}, "-thin = -1 is negative"},
		{"kalman needs lgssm", []string{"-kalman"}, "-kalman needs -model lgssm"},
		{"nodes needs garch", []string{"-nodes", "128"}, "-nodes needs -model garch"},
		{"too few nodes", []string{"-model", "garch", "-data", daxPath, "-nodes", "8"}, "-nodes = 8: want 0 (64 nodes) or 16 to 1024"},
		{"negative iterations", []string{"-data", daxPath, "-iters", "-1"}, "-iters = -1 is negative"},
		{"unknown filter", []string{"-filter", "smc"}, `unknown filter "smc"`},
		{"missing id column", []string{"-data", short, "-id", "week"}, "week"},
		{"one price in a panel", []string{"-data", panel, "-id", "ticker", "-col", "close", "-returns"}, `sequence 2 (id "CCC"): -returns: ssm: invalid data: log returns need at least 2 rows`},
		{"no return in a panel", []string{"-data", panel2, "-id", "ticker", "-col", "close", "-returns"}, `sequence 1 (id "BBB") has no observed values`},
		{"bad flag", []string{"-iters", "many"}, "invalid value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"-out", t.TempDir(), "-q"}, c.args...), &stdout, &stderr)
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

func TestDataWarnings(t *testing.T) {
	seq := func(v ...float64) ssm.Dataset { return ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: v}}} }
	for _, c := range []struct {
		model string
		data  ssm.Dataset
		want  string // substring of the warning, "" for none
	}{
		{"svm", seq(1, -1, 0.5, -0.5), ""},
		{"svm", seq(0.01, -0.01, 0.005), "default priors"},
		{"lgssm", seq(100, -100, 50), "default priors"},
		{"garch", seq(2, -2, 1.5, -1.5), "GARCH prior"},
		{"svm", seq(0, 0, 0, math.NaN(), 0), "constant"},
	} {
		got := strings.Join(dataWarnings(c.model, c.data), " ")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("%s %v: warnings %q, want %q", c.model, c.data.Sequences[0].Y, got, c.want)
		}
	}
}

func TestTooManyParticles(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-data", daxPath, "-N", "1000000000", "-q", "-out", t.TempDir()}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "GB per filter") {
		t.Errorf("-N 1e9: error %v, want one naming the memory needed", err)
	}
}

// Real return series have days with no change: DAX series with exact
// zeros fit without error, with finite output and a warning about them.
func TestZerosHeavyData(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	seq, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	// Every 10th value zero (the default grid path; 50% zeros sends its
	// chains towards sigma ≈ 8, phi ≈ 0 and takes two minutes) and every
	// other value zero (the bootstrap particle filter): a finite summary
	// with honest warnings, and the data warning about the zeros.
	for _, c := range []struct {
		every int
		args  []string
		want  string
	}{
		{10, []string{"-proposal", "guided"}, "60 of 600 observed values (10.0%) are exactly 0"},
		{2, []string{"-proposal", "bootstrap", "-filter", "particles"}, "300 of 600 observed values (50.0%) are exactly 0"},
	} {
		var b strings.Builder
		for i, v := range seq.Y[:600] {
			if i%c.every == 0 {
				v = 0
			}
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64) + "\n")
		}
		path := filepath.Join(t.TempDir(), "zeros.csv")
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		o, dir := runJSON(t, append(append([]string{"-data", path}, c.args...), short...)...)
		checkOutput(t, o, dir, "svm", models.SVM{}.ParamNames(), 2, 150, 300)
		if !hasWarning(o.Warnings, c.want) {
			t.Errorf("%v: warnings %q lack %q", c.args, o.Warnings, c.want)
		}
	}
}

// -col picks a column of a date,return file by name or index; .bin files
// are memory-mapped; bad choices are one-line errors.
func TestDataInput(t *testing.T) {
	dir := t.TempDir()
	seq, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("date,return\n")
	for i, v := range seq.Y {
		fmt.Fprintf(&b, "d%d,%s\n", i, strconv.FormatFloat(v, 'g', -1, 64))
	}
	csvPath := filepath.Join(dir, "dated.csv")
	os.WriteFile(csvPath, []byte(b.String()), 0o644)
	binPath := filepath.Join(dir, "dax.bin")
	f, _ := os.Create(binPath)
	if err := ssm.WriteBinary(f, seq); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"-data", csvPath, "-col", "return"}, {"-data", csvPath, "-col", "2"}, {"-data", binPath}} {
		c, err := parseFlags(append(args, "-q"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		data, err := loadData(c)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got := data.Sequences[0]
		if got.Len() != seq.Len() || got.Y[0] != seq.Y[0] || got.Y[seq.Len()-1] != seq.Y[seq.Len()-1] {
			t.Errorf("%v: read %d values (first %v), want %d (first %v)", args, got.Len(), got.Y[0], seq.Len(), seq.Y[0])
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-data", csvPath, "-col", "price"}, `no column named "price"`},
		{[]string{"-data", csvPath, "-col", "3"}, "has 2 columns"},
		{[]string{"-data", csvPath, "-col", "1"}, "column 1"},
		{[]string{"-data", csvPath}, "line"},
	} {
		err := run(context.Background(), append(c.args, "-q", "-out", dir), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", c.args, err, c.want)
		}
	}
}

// TestFitHelper is the subprocess of TestKillAtRandomMoments: the command
// itself, with the arguments in FIT_HELPER_ARGS.
func TestFitHelper(t *testing.T) {
	args := os.Getenv("FIT_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	if err := run(context.Background(), strings.Fields(args), io.Discard, io.Discard); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// traceRows returns trace.csv's rows without the time column, sorted
// (chains interleave in no fixed order).
func traceRows(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		c := strings.Split(line, ",")
		rows = append(rows, strings.Join(append(c[:2:2], c[3:]...), ","))
	}
	slices.Sort(rows)
	return rows
}

// The command with -checkpoint, killed with SIGKILL at random moments
// (during the preparation, the adaptation or the sampling) and rerun each
// time, ends with the same trace as an uninterrupted run: no row lost,
// duplicated or torn.
func TestKillAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	data := filepath.Join("..", "..", "testdata", "lgssm_sim.csv")
	common := "-model lgssm -filter grid -data " + data + " -N 100 -warmup 60 -adapt 100 -iters 6000 -chains 2 -ksd 0 -q -json"
	ref := t.TempDir()
	if _, err := runJSONArgs(strings.Fields(common + " -out " + ref + " -checkpoint " + filepath.Join(ref, "ck"))); err != nil {
		t.Fatal(err)
	}
	want := traceRows(t, ref)
	dir := t.TempDir()
	args := common + " -out " + dir + " -checkpoint " + filepath.Join(dir, "ck")
	rng := rand.New(rand.NewPCG(5, 6))
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt > 40 {
			t.Fatal("no run finished after 40 attempts")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestFitHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FIT_HELPER_ARGS="+args)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("attempt %d: %v: %s", attempt, err, stderr.String())
			}
			got := traceRows(t, dir)
			if len(got) != len(want) {
				t.Fatalf("after %d kills: %d rows, uninterrupted %d", kills, len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("after %d kills: row %d is %q, uninterrupted %q", kills, i, got[i], want[i])
				}
			}
			t.Logf("identical trace of %d rows after %d kills", len(got)-1, kills)
			if kills < 3 {
				t.Errorf("only %d kills landed before the run finished", kills)
			}
			return
		// Growing random delays: early kills land in the preparation,
		// later ones in the sampling, and a run eventually finishes. From
		// the 20th attempt they grow by 30% each, so that a loaded
		// machine (the other packages' tests run alongside: 30 linear
		// attempts did not suffice once) still finishes.
		case <-time.After(time.Duration(float64(100*(attempt+1)+rng.IntN(150*(attempt+1)))*math.Pow(1.3, float64(max(0, attempt-19)))) * time.Millisecond):
			cmd.Process.Kill() // SIGKILL
			<-done
			kills++
		}
	}
}

// runJSONArgs runs the command in-process.
func runJSONArgs(args []string) (string, error) {
	var stdout bytes.Buffer
	err := run(context.Background(), args, &stdout, io.Discard)
	return stdout.String(), err
}

// dataWarnings returns what the data say against the default priors of
// the named model: the warnings sgmcmc.Fit reports through the models'
// ssm.DataChecker, and the message of the error it stops at.
func dataWarnings(model string, data ssm.Dataset) []string {
	warn, err := modelNamed[model].(ssm.DataChecker).CheckData(data)
	if err != nil {
		warn = append(warn, err.Error())
	}
	return warn
}

// TestReturnsFlag: a price download (Yahoo Finance's layout: Date, Open,
// Close, with a "null" row) fitted with -col Close -returns gives the
// percent log returns the prices were built from, a missing price making
// the two returns that use it missing; the prices themselves draw the
// levels warning, and -returns on returns is an error naming the row.
func TestReturnsFlag(t *testing.T) {
	dax, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	const gap = 100 // the price after the 100th return is missing
	var b strings.Builder
	b.WriteString("Date,Open,Close\n")
	p := 1000.0
	fmt.Fprintf(&b, "d0,null,%.17g\n", p)
	for i, r := range dax.Y {
		p *= math.Exp(r / 100)
		if i+1 == gap {
			fmt.Fprintf(&b, "d%d,null,null\n", i+1)
			continue
		}
		fmt.Fprintf(&b, "d%d,1,%.17g\n", i+1, p)
	}
	path := filepath.Join(t.TempDir(), "prices.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	load := func(args ...string) (ssm.Dataset, error) {
		c, err := parseFlags(append([]string{"-data", path, "-col", "Close", "-q"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return loadData(c)
	}
	d, err := load("-returns")
	if err != nil {
		t.Fatal(err)
	}
	got := d.Sequences[0]
	if got.Len() != dax.Len() {
		t.Fatalf("%d returns, want %d", got.Len(), dax.Len())
	}
	worst := 0.0
	for i, r := range dax.Y {
		if missing := i == gap-1 || i == gap; missing != math.IsNaN(got.Y[i]) {
			t.Errorf("return %d = %v: missing %v", i, got.Y[i], missing)
		} else if !missing {
			worst = math.Max(worst, math.Abs(got.Y[i]-r))
		}
	}
	if worst > 1e-9 {
		t.Errorf("returns differ from the DAX returns by up to %g", worst)
	}
	prices, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(dataWarnings("svm", prices), " "); !strings.Contains(w, "look like prices") {
		t.Errorf("prices fitted as returns: warnings %q, want the levels warning", w)
	}
	c, err := parseFlags([]string{"-data", daxPath, "-returns", "-q"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadData(c); err == nil || !strings.Contains(err.Error(), "-returns") || !strings.Contains(err.Error(), "observation 0, component 0 is -0.99") {
		t.Errorf("-returns on returns: error %v, want one naming the first negative value", err)
	}
}

// TestScaleFlag: the DAX returns as fractions stop the fit at once with
// the error naming -scale 100 (they used to fit for minutes to a
// posterior that reflected the default prior); -scale 100 gives back the
// percent returns; a bad factor is an error naming -scale.
func TestScaleFlag(t *testing.T) {
	dax, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range dax.Y {
		fmt.Fprintf(&b, "%.17g\n", r/100)
	}
	path := filepath.Join(t.TempDir(), "fractions.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"-data", path, "-out", t.TempDir(), "-v"}, &stdout, &stderr)
	if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "examples/fit -scale 100") {
		t.Errorf("fractions: error %v, want ssm.ErrData naming -scale 100", err)
	}
	if strings.Contains(stderr.String(), "warm-up") || stdout.Len() > 0 {
		t.Errorf("the fit did work before it stopped: %q", stderr.String())
	}
	c, data := mustLoad(t, "-data", path, "-scale", "100")
	for i, v := range data.Sequences[0].Y {
		if math.Abs(v-dax.Y[i]) > 1e-12 {
			t.Fatalf("-scale 100: return %d = %v, want %v", i, v, dax.Y[i])
		}
	}
	if w := dataWarnings("svm", data); len(w) != 0 {
		t.Errorf("-scale 100: warnings %q", w)
	}
	c.scale = 0
	if _, err := loadData(c); err == nil || !strings.Contains(err.Error(), "-scale") {
		t.Errorf("-scale 0: error %v, want one naming -scale", err)
	}
}

// -demean fits each sequence's deviations from its own mean, after
// -scale: the simulated LGSSM series shifted by 5 and scaled by 10 comes
// back as 10 times its own deviations from its mean.
func TestDemeanFlag(t *testing.T) {
	sim, err := ssm.ReadCSVFile(filepath.Join("..", "..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("id,y\n")
	for i, v := range sim.Y {
		fmt.Fprintf(&b, "s%d,%.17g\n", i%2, 0.5+v/10) // two sequences, interleaved
	}
	path := filepath.Join(t.TempDir(), "level.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, data := mustLoad(t, "-model", "lgssm", "-data", path, "-id", "id", "-scale", "10", "-demean")
	for s, seq := range data.Sequences {
		m := 0.0 // the sequence's own mean, of the original values
		for i := s; i < len(sim.Y); i += 2 {
			m += sim.Y[i]
		}
		m /= float64(len(seq.Y))
		for k, v := range seq.Y {
			if want := sim.Y[2*k+s] - m; math.Abs(v-want) > 1e-9 {
				t.Fatalf("sequence %d, row %d: %v, want %v", s, k, v, want)
			}
		}
	}
}

// A download listed newest first (Investing.com: a byte order mark, quoted
// cells, month/day/year dates) is fitted oldest first: -col Price
// -returns gives the returns the same prices give in time order, with a
// note; an oldest-first file gets no note.
func TestNewestFirst(t *testing.T) {
	dax, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	y := dax.Y[:300]
	prices := []float64{100}
	for _, r := range y {
		prices = append(prices, prices[len(prices)-1]*math.Exp(r/100))
	}
	day := time.Date(2023, 1, 2, 0, 0, 0, 0, time.UTC)
	row := func(i int) string {
		return fmt.Sprintf("\"%s\",\"%.10f\",\"0.00%%\"\n", day.AddDate(0, 0, i).Format("01/02/2006"), prices[i])
	}
	var newest, oldest strings.Builder
	newest.WriteString("\uFEFF\"Date\",\"Price\",\"Change %\"\n")
	oldest.WriteString("\uFEFF\"Date\",\"Price\",\"Change %\"\n")
	for i := range prices {
		newest.WriteString(row(len(prices) - 1 - i))
		oldest.WriteString(row(i))
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, text string
		note       bool
	}{{"newest.csv", newest.String(), true}, {"oldest.csv", oldest.String(), false}} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, data := mustLoad(t, "-model", "garch", "-data", path, "-col", "Price", "-returns")
		got := data.Sequences[0].Y
		if len(got) != len(y) {
			t.Fatalf("%s: %d returns, want %d", c.name, len(got), len(y))
		}
		for i := range y {
			if math.Abs(got[i]-y[i]) > 1e-6 {
				t.Fatalf("%s: return %d = %v, want %v", c.name, i, got[i], y[i])
			}
		}
		if note := strings.Join(cfg.notes, " "); c.note != strings.Contains(note, "the Date column of "+path+" runs newest first") {
			t.Errorf("%s: notes %q", c.name, cfg.notes)
		}
	}
	// A panel of two tickers, newest first: each sequence in time order.
	var panel strings.Builder
	panel.WriteString("Date,Ticker,Price\n")
	for i := len(prices) - 1; i >= 0; i-- {
		for k, name := range []string{"A", "B"} {
			fmt.Fprintf(&panel, "%s,%s,%.10f\n", day.AddDate(0, 0, i).Format("2006-01-02"), name, prices[i]*float64(k+1))
		}
	}
	path := filepath.Join(dir, "panel.csv")
	if err := os.WriteFile(path, []byte(panel.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, data := mustLoad(t, "-model", "garch", "-data", path, "-id", "Ticker", "-col", "Price", "-returns")
	for k, seq := range data.Sequences {
		for i := range y {
			if math.Abs(seq.Y[i]-y[i]) > 1e-6 {
				t.Fatalf("panel sequence %d: return %d = %v, want %v", k, i, seq.Y[i], y[i])
			}
		}
	}
	if len(cfg.notes) != 1 {
		t.Errorf("panel: notes %q, want one", cfg.notes)
	}
}

// mustLoad parses the flags (with -q) and loads their data.
func mustLoad(t *testing.T, args ...string) (*config, ssm.Dataset) {
	t.Helper()
	c, err := parseFlags(append(args, "-q"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := loadData(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, data
}

// Every flag and output path is checked before any work: the data file
// named here does not exist, and each error is the flag's, with exit code
// 2 for a bad value and 1 for a path that cannot be made.
func TestFlagsCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	missing := filepath.Join(dir, "missing.csv")
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-forecast", "-1"}, "-forecast = -1 is negative", exitUsage},
		{[]string{"-holdout", "-3"}, "-holdout = -3 is negative", exitUsage},
		{[]string{"-state-draws", "0"}, "-state-draws = 0", exitUsage},
		{[]string{"-iters", "-5"}, "-iters = -5 is negative", exitUsage},
		{[]string{"-step", "1.5"}, "-step = 1.5", exitUsage},
		{[]string{"-col", "0"}, `-col "0": column index 0: columns count from 1`, exitUsage},
		{[]string{"-scale", "0"}, "-scale = 0", exitUsage},
		{[]string{"-out", filepath.Join(file, "sub")}, "-out: cannot create the directory", exitError},
		{[]string{"-checkpoint", filepath.Join(file, "ck")}, "-checkpoint: " + file + " is a file, not a directory", exitError},
		{[]string{"-states", dir}, "-states " + dir + " is a directory", exitError},
		{[]string{"-states", filepath.Join(file, "s.csv")}, "-states: " + file + " is a file", exitError},
	} {
		args := append([]string{"-data", missing, "-out", filepath.Join(dir, "out"), "-q"}, c.args...)
		if !slices.Contains(c.args, "-out") {
			args = append(args, "-out", filepath.Join(dir, "out"))
		}
		var stderr bytes.Buffer
		err := run(context.Background(), args, io.Discard, &stderr)
		code := exitCode(err, nil, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "missing.csv") || code != c.code {
			t.Errorf("%v: error %v, exit %d; want %q before reading the data, exit %d", c.args, err, code, c.want, c.code)
		}
	}
	// Directories that do not exist yet are made.
	out, ck := filepath.Join(dir, "a", "b"), filepath.Join(dir, "c", "d", "ck")
	err := run(context.Background(), []string{"-data", missing, "-out", out, "-checkpoint", ck, "-q"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("fresh directories: error %v, want the data's", err)
	}
	for _, d := range []string{out, filepath.Dir(ck)} {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			t.Errorf("%s was not created: %v", d, err)
		}
	}
}

// Exit codes: 0 success and -h, 1 error, 2 bad flags, 130 and 143 after
// SIGINT and SIGTERM; -h lists them.
func TestExitCodes(t *testing.T) {
	interrupted := fmt.Errorf("%w while preparing (no draws yet)", errInterrupted)
	for _, c := range []struct {
		err  error
		sig  os.Signal
		code int
	}{
		{nil, nil, 0}, {flag.ErrHelp, nil, 0}, {errors.New("boom"), nil, 1}, {badFlag("-x"), nil, 2},
		{interrupted, os.Interrupt, 130}, {interrupted, syscall.SIGTERM, 143},
	} {
		if got := exitCode(c.err, c.sig, io.Discard); got != c.code {
			t.Errorf("%v after %v: exit %d, want %d", c.err, c.sig, got, c.code)
		}
	}
	var help bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, io.Discard, &help); !errors.Is(err, flag.ErrHelp) ||
		!strings.Contains(help.String(), "Exit codes: 0 success; 1 error; 2 bad flags") || !strings.Contains(help.String(), "143 by SIGTERM") {
		t.Errorf("-h: %v, usage lacks the exit codes:\n%s", err, help.String())
	}
	var stderr bytes.Buffer
	if code := command([]string{"-bogus"}, io.Discard, &stderr); code != exitUsage || strings.Count(stderr.String(), "-bogus") != 1 {
		t.Errorf("-bogus: exit %d, stderr %q; want 2 and the error once", code, stderr.String())
	}
}

// A value beyond 10⁶ robust sds from the median is an error naming its
// row and -allow-outliers, which lets it through; fewer than 50 observed
// values draw the warning that the posterior is close to the prior.
func TestDataChecks(t *testing.T) {
	dax, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i, v := range dax.Y {
		if i == 776 {
			v = -9.99e9 // a sentinel
		}
		fmt.Fprintf(&b, "%.17g\n", v)
	}
	path := filepath.Join(t.TempDir(), "sentinel.csv")
	os.WriteFile(path, []byte(b.String()), 0o644)
	c, err := parseFlags([]string{"-data", path, "-q"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadData(c); err == nil || !strings.Contains(err.Error(), "row 777") || !strings.Contains(err.Error(), "-allow-outliers") ||
		!strings.Contains(err.Error(), "robust sds") {
		t.Errorf("sentinel: error %v, want one naming row 777 and -allow-outliers", err)
	}
	if _, data := mustLoad(t, "-data", path, "-allow-outliers"); data.Sequences[0].Y[776] != -9.99e9 {
		t.Error("-allow-outliers: the value was not kept")
	}
	// The DAX returns themselves (the largest about 15 robust sds out), a
	// series mostly of zeros, and prices pass.
	zeros := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: append(make([]float64, 900), dax.Y[:100]...)}}}
	if err := errors.Join(checkOutliers("dax", ssm.Dataset{Sequences: []ssm.Sequence{dax}}), checkOutliers("zeros", zeros)); err != nil {
		t.Errorf("ordinary data refused: %v", err)
	}
	if w := smallDataWarning(ssm.Dataset{Sequences: []ssm.Sequence{dax}}); w != "" {
		t.Errorf("T = %d: warning %q", dax.Len(), w)
	}
	// 40 observations: the warning on stderr and among the posterior's.
	var short strings.Builder
	for _, v := range dax.Y[:40] {
		fmt.Fprintf(&short, "%.17g\n", v)
	}
	spath := filepath.Join(t.TempDir(), "short.csv")
	os.WriteFile(spath, []byte(short.String()), 0o644)
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"-data", spath, "-model", "lgssm", "-out", t.TempDir(), "-q", "-json", "-chains", "2",
		"-iters", "200", "-warmup", "50", "-ksd", "0"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("40 observations: %v\n%s", err, stderr.String())
	}
	want := "only 40 observed values (fewer than 50): the posterior stays close to the prior"
	var o outputJSON
	if err := json.Unmarshal(stdout.Bytes(), &o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "fit: warning: "+want) || !hasWarning(o.Warnings, want) {
		t.Errorf("40 observations: stderr %q, warnings %q; want %q in both", stderr.String(), o.Warnings, want)
	}
}

// Real files: quoted prices with thousands separators are read, with one
// note; a UTF-16 file is decoded; a date column's error names -col, not
// an API type.
func TestRealFiles(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("\"Date\",\"Price\",\"Vol.\"\n")
	p := 10000.0
	for i := range 300 {
		fmt.Fprintf(&b, "\"2024-%02d-%02d\",\"%s\",\"1,234\"\n", 1+i/12, 1+i%28, grouped(p))
		p *= 1 + 0.01*math.Sin(float64(i))
	}
	path := filepath.Join(dir, "prices.csv")
	os.WriteFile(path, []byte(b.String()), 0o644)
	var stderr bytes.Buffer
	c, err := parseFlags([]string{"-data", path, "-col", "Price", "-returns", "-q"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data, err := loadData(c)
	if err != nil {
		t.Fatal(err)
	}
	if data.Sequences[0].Len() != 299 || math.IsNaN(data.Sequences[0].Y[1]) {
		t.Errorf("read %d returns", data.Sequences[0].Len())
	}
	for _, n := range c.notes {
		fmt.Fprintln(&stderr, n)
	}
	if n := strings.Count(stderr.String(), "thousands separators"); n != 1 || !strings.Contains(stderr.String(), `read "10,000.00" (line 2, column 2) as 10000`) {
		t.Errorf("notes %q, want one naming the first grouped cell", c.notes)
	}
	// UTF-16 little-endian, as Excel's "Unicode text" writes.
	u16 := []byte{0xFF, 0xFE}
	for _, r := range "y\n1.5\n-0.25\n" + strings.Repeat("0.5\n-0.5\n", 30) {
		u16 = append(u16, byte(r), 0)
	}
	upath := filepath.Join(dir, "u16.csv")
	os.WriteFile(upath, u16, 0o644)
	c, data = mustLoad(t, "-data", upath)
	if y := data.Sequences[0].Y; len(y) != 62 || y[0] != 1.5 || y[1] != -0.25 || !strings.Contains(strings.Join(c.notes, " "), "UTF-16 little-endian") {
		t.Errorf("UTF-16: %d values, notes %q", len(y), c.notes)
	}
	// The date column: the command's error names -col.
	err = run(context.Background(), []string{"-data", path, "-q", "-out", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-col") || strings.Contains(err.Error(), "CSVColumn") {
		t.Errorf("date column: error %v, want one naming -col and no API type", err)
	}
}

// grouped writes v with two decimals and thousands separators
// (10000 as "10,000.00").
func grouped(v float64) string {
	intPart, frac, _ := strings.Cut(strconv.FormatFloat(v, 'f', 2, 64), ".")
	var g []string
	for len(intPart) > 3 {
		g = append([]string{intPart[len(intPart)-3:]}, g...)
		intPart = intPart[:len(intPart)-3]
	}
	return strings.Join(append([]string{intPart}, g...), ",") + "." + frac
}

// TestCommandHelper is the subprocess of TestInterrupts: the command with
// its signal handling and exit code, with the arguments in
// FIT_COMMAND_ARGS.
func TestCommandHelper(t *testing.T) {
	args := os.Getenv("FIT_COMMAND_ARGS")
	if args == "" {
		t.Skip("helper process only")
	}
	os.Exit(command(strings.Fields(args), os.Stdout, os.Stderr))
}

// startCommand starts the command in a subprocess and returns a function
// that waits until its stderr holds want (failing after a minute), and
// one that waits for its end and returns its exit code, stdout and stderr.
func startCommand(t *testing.T, args string) (cmd *exec.Cmd, await func(want string), wait func() (int, string, string)) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestCommandHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FIT_COMMAND_ARGS="+args)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stderr strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := pipe.Read(buf)
			mu.Lock()
			stderr.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	await = func(want string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			ok := strings.Contains(stderr.String(), want)
			mu.Unlock()
			if ok {
				return
			}
		}
		cmd.Process.Kill()
		t.Fatalf("no %q on stderr within a minute", want)
	}
	wait = func() (int, string, string) {
		<-done
		cmd.Wait()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	return cmd, await, wait
}

// An interrupt before the first draw ends the command within seconds
// with one line and exit code 130 (SIGINT); with -checkpoint a finished
// preparation is kept and the next run resumes from it. An interrupt
// during the sampling prints the summary of the draws so far and exits
// with 143 (SIGTERM).
func TestInterrupts(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	// -v: the technical log names the phases the test waits for.
	lg := "-v -model lgssm -filter grid -data " + filepath.Join("..", "..", "testdata", "lgssm_sim.csv") + " -chains 2 -ksd 0"

	// SIGINT during the warm-up of the DAX fit.
	cmd, await, wait := startCommand(t, "-v -data "+daxPath+" -out "+t.TempDir())
	await("warm-up")
	t0 := time.Now()
	cmd.Process.Signal(os.Interrupt)
	code, stdout, stderr := wait()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if code != exitSIGINT || lines[len(lines)-1] != "fit: interrupted while preparing (no draws yet)" ||
		strings.Contains(stderr, "context canceled") || stdout != "" || time.Since(t0) > 10*time.Second {
		t.Errorf("SIGINT in the warm-up: exit %d after %v, stdout %q, stderr:\n%s", code, time.Since(t0), stdout, stderr)
	}

	// SIGINT after the preparation, with -checkpoint: the next run resumes.
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	args := lg + " -iters 400000 -out " + dir + " -checkpoint " + ck
	cmd, await, wait = startCommand(t, args)
	await("adaptation")
	cmd.Process.Signal(os.Interrupt)
	code, _, stderr = wait()
	lines = strings.Split(strings.TrimSpace(stderr), "\n")
	if code != exitSIGINT || !strings.HasPrefix(lines[len(lines)-1], "fit: interrupted") {
		t.Errorf("SIGINT after the preparation: exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(lines[len(lines)-1], "no draws yet") && !strings.Contains(lines[len(lines)-1], "the same command resumes from "+ck) {
		t.Errorf("SIGINT after the preparation: %q does not say what the next run resumes from", lines[len(lines)-1])
	}
	cmd, await, wait = startCommand(t, args)
	await("resuming: preparation read from " + ck + ".prep")
	await("sampling:")
	time.Sleep(500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	code, stdout, stderr = wait()
	if code != exitSIGTERM || !strings.Contains(stdout, "posterior of the natural parameters") ||
		!strings.Contains(stderr, "fit: interrupted during the sampling: the summary covers the") {
		t.Errorf("SIGTERM in the sampling: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, lockName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the interrupted run left its lock: %v", err)
	}
}

// A damaged checkpoint file is refused by the command with one line
// naming the file and the cure in its own terms (-checkpoint).
func TestCheckpointDamageCommand(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "ck")
	args := []string{"-model", "lgssm", "-filter", "grid", "-data", filepath.Join("..", "..", "testdata", "lgssm_sim.csv"), "-chains", "2",
		"-ksd", "0", "-iters", "200", "-warmup", "50", "-adapt", "100", "-q", "-out", dir, "-checkpoint", ck}
	if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ck + ".draws")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	os.WriteFile(ck+".draws", b, 0o644)
	err = run(context.Background(), args, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), ck+".draws is damaged") || !strings.Contains(err.Error(), "or use another -checkpoint path") ||
		strings.Contains(err.Error(), "\n") {
		t.Errorf("damaged ck.draws: error %v, want one line naming it and -checkpoint", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(m) > 0 {
		t.Errorf("temporary files left in -out: %v", m)
	}
}

var daxCACPath = filepath.Join("..", "..", "testdata", "dax_cac_returns.csv")

// TestMSVData: -model msv reads every column of a CSV with a header as
// one component of y_t, named by the header, and -cols picks and orders
// columns by name or 1-based index (-col: one series); empty cells and NA
// are NaN in their component only.
func TestMSVData(t *testing.T) {
	dax, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	c, data := mustLoad(t, "-model", "msv", "-data", daxCACPath)
	seq := data.Sequences[0]
	if !slices.Equal(c.series, []string{"dax", "cac"}) || seq.Obs != 2 || seq.Len() != 1859 {
		t.Fatalf("series %q, %d components × %d rows: want dax, cac, 2 × 1859", c.series, seq.Obs, seq.Len())
	}
	// testdata/README.md: the dax column equals dax_returns.csv; the first
	// cac value is -1.3095810145144688.
	for i := range 1859 {
		if seq.At(i)[0] != dax.Y[i] {
			t.Fatalf("row %d: dax %v, dax_returns.csv %v", i, seq.At(i)[0], dax.Y[i])
		}
	}
	if seq.At(0)[1] != -1.3095810145144688 {
		t.Errorf("first cac value %v, want -1.3095810145144688", seq.At(0)[1])
	}
	for _, pick := range []struct {
		flag, cols string
		want       []string
	}{{"-cols", "cac,dax", []string{"cac", "dax"}}, {"-cols", "2,1", []string{"cac", "dax"}}, {"-cols", " cac , 1 ", []string{"cac", "dax"}}, {"-col", "cac", []string{"cac"}}, {"-cols", "2", []string{"cac"}}} {
		c, d := mustLoad(t, "-model", "msv", "-data", daxCACPath, pick.flag, pick.cols)
		s := d.Sequences[0]
		if !slices.Equal(c.series, pick.want) || s.Obs != len(pick.want) || s.Len() != 1859 {
			t.Fatalf("%s %s: series %q, %d components × %d rows", pick.flag, pick.cols, c.series, s.Obs, s.Len())
		}
		for i := range 1859 {
			if s.At(i)[0] != seq.At(i)[1] || len(pick.want) == 2 && s.At(i)[1] != seq.At(i)[0] {
				t.Fatalf("%s %s: row %d is %v, want cac %v (then dax %v)", pick.flag, pick.cols, i, s.At(i), seq.At(i)[1], seq.At(i)[0])
			}
		}
	}

	// A date column picked around, gaps in one component at a time, and
	// three series.
	dir := t.TempDir()
	path := filepath.Join(dir, "gaps.csv")
	os.WriteFile(path, []byte("date,a,b,c\n2024-01-02,0.5,,1\n2024-01-03,NA,-1.25,2\n2024-01-04,0.25,0.75,\n2024-01-05,,,3\n"), 0o644)
	c, d := mustLoad(t, "-model", "msv", "-data", path, "-cols", "a,b,c", "-allow-outliers")
	nan := math.NaN()
	want := []float64{0.5, nan, 1, nan, -1.25, 2, 0.25, 0.75, nan, nan, nan, 3}
	if got := d.Sequences[0]; !slices.Equal(c.series, []string{"a", "b", "c"}) || got.Obs != 3 || !slices.EqualFunc(got.Y, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
		t.Errorf("-cols a,b,c: series %q, Obs %d, values %v; want a, b, c, 3, %v", c.series, got.Obs, got.Y, want)
	}
	// Without a header the series are y1, y2.
	plain := filepath.Join(dir, "plain.csv")
	os.WriteFile(plain, []byte("0.5,1\n-0.5,2\n0.25,-1\n"), 0o644)
	if c, d := mustLoad(t, "-model", "msv", "-data", plain, "-allow-outliers"); !slices.Equal(c.series, []string{"y1", "y2"}) || d.Sequences[0].Obs != 2 || d.Sequences[0].Len() != 3 {
		t.Errorf("no header: series %q, %d × %d", c.series, d.Sequences[0].Obs, d.Sequences[0].Len())
	}
}

// TestMSVBadInput: a bad -cols, a column that does not exist, a date
// column read as a series, a series with no values and the flags that
// do not go with msv are one-line errors naming the flag, before any
// sampling, never a panic; bad flags exit with 2.
func TestMSVBadInput(t *testing.T) {
	dir := t.TempDir()
	dated := filepath.Join(dir, "dated.csv")
	os.WriteFile(dated, []byte("date,a,b\n2024-01-02,0.5,\n2024-01-03,0.25,NA\n2024-01-04,-0.5,\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-data", daxCACPath, "-cols", "dax,ftse"}, `-cols dax,ftse: ../../testdata/dax_cac_returns.csv: ssm: csv line 1: no column named "ftse" in the header "dax,cac"`, exitError},
		{[]string{"-data", daxCACPath, "-cols", "1,3"}, "-cols 1,3: ../../testdata/dax_cac_returns.csv: ssm: csv line 1: no column 3: the first row has 2 columns", exitError},
		{[]string{"-data", daxCACPath, "-cols", "dax,1"}, `-cols dax,1: "dax" and "1" are the same column`, exitError},
		{[]string{"-data", daxCACPath, "-cols", "dax,,cac"}, `-cols "dax,,cac": entry 2: empty column name`, exitUsage},
		{[]string{"-data", daxCACPath, "-cols", "0"}, `-cols "0": entry 1: column index 0: columns count from 1`, exitUsage},
		{[]string{"-data", daxCACPath, "-col", "dax", "-cols", "cac"}, "-col and -cols: give one", exitUsage},
		{[]string{"-data", daxCACPath, "-model", "svm", "-cols", "dax"}, "-cols needs -model msv", exitUsage},
		{[]string{"-data", "y.bin"}, "-model msv reads its series from the columns of a CSV file, not from the binary y.bin", exitUsage},
		{[]string{"-data", dated}, "csv line 2, column 1: non-numeric cell \"2024-01-02\" (a date or label column? pick the series' columns with -cols NAME,NAME or -cols N,N)", exitError},
		{[]string{"-data", dated, "-cols", "a,b"}, "the series b of sequence 0 has no observed values", exitError},
	} {
		args := append([]string{"-model", "msv", "-q", "-out", t.TempDir()}, c.args...)
		var stdout, stderr bytes.Buffer
		code := command(args, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != c.code || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") > 0 || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line containing %q", c.args, code, msg, c.code, c.want)
		}
	}
	// Two columns are not a univariate model's data.
	err := run(context.Background(), []string{"-data", daxCACPath, "-q", "-out", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the svm model is univariate (pick a column with -col, or fit several with -model msv") {
		t.Errorf("svm on two columns: error %v", err)
	}
}

// TestMSVFit fits models.MSV{D: 2} end to end on 300 rows simulated at φ
// (0.95, 0.9), σ (0.3, 0.3), ρ 0.5, τ (1, 0.8) (seed 5): the JSON names
// the parameters and the series, trace.csv holds the draws, -states writes
// both series' smoothed log-volatility and -forecast the log-volatility
// and return of each. The fit is short (100 particles, 1000 kept draws
// per chain, about 8 s).
func TestMSVFit(t *testing.T) {
	if testing.Short() {
		t.Skip("an MSV fit: long test")
	}
	m := models.MSV{D: 2}
	truth := []float64{0.95, 0.9, 0.3, 0.3, 0.5, 1, 0.8}
	u, err := m.Params(truth[:2], truth[2:4], truth[4:5], truth[5:])
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(300, u, rand.New(rand.NewPCG(5, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("date,us,eu\n")
	for i := range y.Len() {
		fmt.Fprintf(&b, "d%d,%g,%g\n", i, y.At(i)[0], y.At(i)[1])
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "msv.csv")
	os.WriteFile(path, []byte(b.String()), 0o644)
	states := filepath.Join(dir, "states.csv")
	start := time.Now()
	o, out := runJSON(t, "-model", "msv", "-data", path, "-cols", "us,eu", "-states", states, "-forecast", "2", "-state-draws", "10",
		"-N", "100", "-warmup", "100", "-adapt", "200", "-iters", "1000", "-chains", "2", "-ksd", "8", "-q")
	t.Logf("fit in %.1f s: gradient %s, step %.3g", time.Since(start).Seconds(), o.Gradient, o.Step)
	names := []string{"phi1", "phi2", "sigma1", "sigma2", "rho", "tau1", "tau2"}
	if !slices.Equal(m.ParamNames(), names) || !slices.Equal(o.Series, []string{"us", "eu"}) {
		t.Errorf("ParamNames %q, series %q", m.ParamNames(), o.Series)
	}
	checkOutput(t, o, out, "msv", names, 2, 1000, 2000)
	var fc struct {
		Horizon int
		Series  []struct {
			Name       string
			State, Obs []struct{ H int }
		}
	}
	if err := json.Unmarshal(o.Forecast, &fc); err != nil || fc.Horizon != 2 || len(fc.Series) != 2 || fc.Series[1].Name != "eu" || len(fc.Series[1].State) != 2 || len(fc.Series[1].Obs) != 2 {
		t.Errorf("forecast %s (%v): want horizon 2 and the rows of us and eu", o.Forecast, err)
	}
	// The parameters are reported, not checked against the truth: at
	// this size the particle path has not converged (with seed 1, R-hat
	// 1.03-1.43 and σ_2's 90% interval 0.51-0.68 against 0.3; see
	// docs/particles.md), and checkOutput has checked that every R-hat
	// above 1.01 comes with its warning.
	for i, p := range o.Params {
		if p.Mean != nil && p.Q05 != nil && p.Q95 != nil && p.Rhat != nil {
			t.Logf("%s: truth %v, mean %.3f, q05 %.3f, q95 %.3f, R-hat %.3f", p.Name, truth[i], *p.Mean, *p.Q05, *p.Q95, *p.Rhat)
		}
	}
	f, err := os.Open(states)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "t,us_mean,us_sd,us_q05,us_q50,us_q95,eu_mean,eu_sd,eu_q05,eu_q50,eu_q95" || len(rows) != 302 {
		t.Fatalf("states CSV: header %q and %d rows, want t, the five columns of us and eu and T + 1 = 301 rows", got, len(rows)-1)
	}
	for i, r := range rows[1:] {
		for k := 0; k < 2; k++ {
			v := make([]float64, 5)
			for j := range v {
				v[j], err = strconv.ParseFloat(r[1+5*k+j], 64)
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
			}
			if r[0] != strconv.Itoa(i) || !(v[1] > 0) || !(v[2] <= v[3] && v[3] <= v[4]) {
				t.Fatalf("states row %d, series %d: %v", i, k+1, r)
			}
		}
	}
	for _, png := range []string{"states1.png", "states2.png"} {
		if _, err := os.Stat(filepath.Join(out, png)); err != nil {
			t.Error(err)
		}
	}
}

// TestMSVForecastJSON: the "forecast" member of -model msv names each
// series with its log-volatility (state) and return (obs) rows, and has
// no state and obs of its own.
func TestMSVForecastJSON(t *testing.T) {
	band := func(v float64) sgmcmc.Band {
		return sgmcmc.Band{Mean: []float64{v, v}, SD: []float64{1, 1}, Q05: []float64{v - 1, v - 1}, Q50: []float64{v, v}, Q95: []float64{v + 1, v + 1}}
	}
	o := &stateOpts{fc: &sgmcmc.ForecastSummary{Origin: 10, Horizon: 2, States: []sgmcmc.Band{band(1), band(2)}, Obs: []sgmcmc.Band{band(3), band(4)}, Draws: 5, Paths: 10}}
	b, err := json.Marshal(o.forecastJSON([]string{"dax", "cac"}))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		State, Obs []fcRow
		Series     []struct {
			Name       string
			State, Obs []struct{ H int }
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.State != nil || got.Obs != nil || len(got.Series) != 2 || got.Series[1].Name != "cac" || len(got.Series[1].Obs) != 2 || got.Series[1].Obs[1].H != 2 {
		t.Errorf("forecast JSON %s", b)
	}
	if !strings.Contains(string(b), `"name":"cac","state":[{"h":1,"mean":2,`) || !strings.Contains(string(b), `"obs":[{"h":1,"mean":4,`) {
		t.Errorf("forecast JSON %s: want cac's state mean 2 and obs mean 4", b)
	}
	var text bytes.Buffer
	if err := o.writeText(&text, []string{"dax", "cac"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x1 (log-volatility of dax) forecast after t = 10", "y2 (cac) forecast after t = 10"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text forecast lacks %q:\n%s", want, text.String())
		}
	}
}
