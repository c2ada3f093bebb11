package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

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
// and return of each. The fit runs on Laplace importance sampling on 2
// chains at fit seed 2 (18 s on a 2-core machine).
func TestMSVFit(t *testing.T) {
	longtest.Skip(t, "an MSV fit")
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
		"-N", "100", "-warmup", "100", "-adapt", "200", "-chains", "2", "-ksd", "8", "-q", "-seed", "2")
	t.Logf("fit in %.1f s: gradient %s, step %.3g", time.Since(start).Seconds(), o.Gradient, o.Step)
	names := []string{"phi1", "phi2", "sigma1", "sigma2", "rho", "tau1", "tau2"}
	if !slices.Equal(m.ParamNames(), names) || !slices.Equal(o.Series, []string{"us", "eu"}) {
		t.Errorf("ParamNames %q, series %q", m.ParamNames(), o.Series)
	}
	// The fit plans its own length (ESS ≥ 400, R-hat ≤ 1.01).
	checkOutput(t, o, out, "msv", names, 2, o.Iters, 2*o.Iters)
	if len(o.Warnings) > 0 {
		t.Errorf("warnings: %q", o.Warnings)
	}
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
	// The fit runs on Laplace importance sampling: the chains converge
	// (R-hat ≤ 1.01, at the length the fit planned) and every mean is within 4 posterior sds of the
	// truth (a wide band: one short series; σ₂'s posterior sits high on
	// these 300 rows, at about 0.58 against 0.3, with particles as well).
	for i, p := range o.Params {
		if p.Mean == nil || p.SD == nil || p.Rhat == nil {
			t.Fatalf("%s: missing mean, sd or R-hat", p.Name)
		}
		t.Logf("%s: truth %v, mean %.3f, sd %.3f, R-hat %.3f", p.Name, truth[i], *p.Mean, *p.SD, *p.Rhat)
		if *p.Rhat > 1.01 || math.Abs(*p.Mean-truth[i]) > 4**p.SD {
			t.Errorf("%s: mean %.3f ± %.3f (truth %v), R-hat %.3f", p.Name, *p.Mean, *p.SD, truth[i], *p.Rhat)
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
