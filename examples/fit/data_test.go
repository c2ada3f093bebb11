package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

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

// Real return series have days with no change: DAX series with exact
// zeros fit without error, with finite output and a warning about them.
func TestZerosHeavyData(t *testing.T) {
	longtest.Skip(t, "a whole fit")
	seq, err := ssm.ReadCSVFile(daxPath)
	if err != nil {
		t.Fatal(err)
	}
	// Every 10th value zero (the default grid path): a finite summary with
	// honest warnings, and the data warning about the zeros. Every 7th
	// (14%) and every other value zero (the bootstrap particle filter):
	// the fit stops at once, naming the zeros and the cure (every 7th used
	// to sample for minutes as the chains left the local mode, 50% sent
	// them towards sigma ≈ 8, phi ≈ 0).
	for _, c := range []struct {
		every int
		args  []string
		want  string
		stop  bool
	}{
		{10, []string{"-proposal", "guided"}, "60 of 600 observed values (10.0%) are exactly 0", false},
		{7, nil, "86 of 600 observed values (14.3%) are exactly 0", true},
		{2, []string{"-proposal", "bootstrap", "-filter", "particles"}, "300 of 600 observed values (50.0%) are exactly 0", true},
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
		args := append(append([]string{"-data", path}, c.args...), short...)
		if c.stop {
			// The data check stops the fit before any work.
			_, err := runJSONArgs(append([]string{"-json", "-out", t.TempDir()}, args...))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "code the zeros as missing") ||
				!strings.Contains(err.Error(), "the fit stops here") {
				t.Errorf("every %d-th value 0: error %v, want the data check's, naming the zeros and the cure", c.every, err)
			}
			continue
		}
		o, dir := runJSON(t, args...)
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
	if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "ssm.Scaled(y, 100)") || !strings.Contains(err.Error(), "with this command: -scale 100") {
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
