package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

type stateRowJSON struct {
	H                       int
	Mean, SD, Q05, Q50, Q95 *float64
}

type forecastOutJSON struct {
	Forecast *struct {
		Horizon, Origin, Draws, Paths int
		Volatility, State, Obs        []stateRowJSON
	}
	Holdout *struct {
		Rows      int
		LogScore  *float64 `json:"log_score"`
		SE        *float64 `json:"log_score_se"`
		ESS       *float64
		Pointwise *float64
		LogLik    *float64 `json:"loglik_at_mean"`
		Draws     int
	}
}

// runStates runs the command with the given flags plus -states and -json
// into a temporary directory, and returns the decoded forecast, the CSV
// rows and the directory.
func runStates(t *testing.T, args ...string) (forecastOutJSON, [][]string, string) {
	t.Helper()
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "states.csv")
	args = append([]string{"-json", "-q", "-ksd", "0", "-out", dir, "-states", csvPath}, args...)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run %v: %v\n%s", args, err, stderr.String())
	}
	var o forecastOutJSON
	if err := json.NewDecoder(strings.NewReader(stdout.String())).Decode(&o); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := os.Open(filepath.Join(dir, "states.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if _, err := png.Decode(pf); err != nil {
		t.Errorf("states.png: %v", err)
	}
	return o, rows, dir
}

// checkStatesCSV checks the header, t = 0..T and ordered quantiles.
func checkStatesCSV(t *testing.T, rows [][]string, T int) {
	t.Helper()
	if got := strings.Join(rows[0], ","); got != "t,mean,sd,q05,q50,q95" {
		t.Fatalf("header %q", got)
	}
	if len(rows) != T+2 {
		t.Fatalf("%d rows, want T+1 = %d after the header", len(rows)-1, T+1)
	}
	for i, r := range rows[1:] {
		v := make([]float64, 6)
		for j, cell := range r {
			x, err := strconv.ParseFloat(cell, 64)
			if err != nil {
				t.Fatalf("row %d: %v", i, err)
			}
			v[j] = x
		}
		if int(v[0]) != i || !(v[2] > 0) || !(v[3] <= v[4] && v[4] <= v[5]) {
			t.Fatalf("row %d: %v", i, r)
		}
	}
}

// TestStatesFlagsLGSSM: with -holdout 200 the fit sees T = 1800 rows;
// -states writes t = 0..T with ordered quantiles and states.png, -forecast
// H carries H rows of x and y (no volatility for the LGSSM) from the end of
// the fitted rows, and the held-out score is in the JSON (all on the exact
// Kalman/RTS path).
func TestStatesFlagsLGSSM(t *testing.T) {
	data := filepath.Join("..", "..", "testdata", "lgssm_sim.csv")
	o, rows, _ := runStates(t, "-model", "lgssm", "-data", data, "-kalman", "-iters", "300", "-forecast", "3", "-state-draws", "50", "-holdout", "200")
	checkStatesCSV(t, rows, 1800)
	fc := o.Forecast
	if fc == nil || fc.Horizon != 3 || fc.Origin != 1800 || len(fc.State) != 3 || len(fc.Obs) != 3 || fc.Volatility != nil || fc.Draws != 50 {
		t.Fatalf("forecast %+v", fc)
	}
	h := o.Holdout
	// About −1.8 nats per row for this series (y sd ≈ 1.9 around the
	// one-step prediction).
	if h == nil || h.Rows != 200 || h.Draws != 50 || !(*h.LogScore < -200 && *h.LogScore > -600) || !(*h.SE >= 0) || !(*h.LogLik < 0) {
		t.Fatalf("holdout %+v", h)
	}
	// The predictive sd grows with the horizon and y adds τ² to x.
	if !(*fc.State[2].SD > *fc.State[0].SD && *fc.Obs[0].SD > *fc.State[0].SD) {
		t.Errorf("forecast sds: x %v, %v; y %v", *fc.State[0].SD, *fc.State[2].SD, *fc.Obs[0].SD)
	}
}

// TestStatesFlagsSVM: a short SVM fit on the DAX returns with -states and
// -forecast: T + 1 rows of the log-volatility and a positive volatility
// forecast in the JSON.
func TestStatesFlagsSVM(t *testing.T) {
	if testing.Short() {
		t.Skip("a short SVM fit and 20-draw FFBSi")
	}
	o, rows, _ := runStates(t, "-data", daxPath, "-N", "100", "-iters", "200", "-warmup", "50", "-adapt", "100", "-chains", "2",
		"-forecast", "2", "-state-draws", "20")
	checkStatesCSV(t, rows, 1859)
	fc := o.Forecast
	if fc == nil || len(fc.Volatility) != 2 || !(*fc.Volatility[0].Q05 > 0) {
		t.Fatalf("forecast %+v", fc)
	}
}
