package main

import (
	"bytes"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// row is one parsed line of curves.csv.
type row struct {
	figure              int
	model, curve        string
	S, B                int
	N                   string
	x, estimate, truth  float64
	bias, hw, secPerGrd float64
	reps                int
	cond                float64 // per-subsequence RMS bias (N = ∞ rows only)
}

func readCurves(t *testing.T, dir string) []row {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "curves.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("curves.csv does not parse: %v", err)
	}
	if len(recs) < 2 || !slices.Equal(recs[0], curvesHeader) {
		t.Fatalf("curves.csv header %v, want %v", recs[0], curvesHeader)
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("curves.csv: %q is not a finite number", s)
		}
		return v
	}
	var rows []row
	for _, r := range recs[1:] {
		rw := row{
			figure: int(num(r[0])), model: r[1], curve: r[3],
			S: int(num(r[5])), B: int(num(r[6])), N: r[7],
			x: num(r[8]), estimate: num(r[9]), truth: num(r[10]),
			bias: num(r[12]), hw: num(r[13]), reps: int(num(r[14])), secPerGrd: num(r[16]),
		}
		if rw.N != "inf" {
			num(rw.N)
		}
		rw.cond = math.NaN()
		if r[17] != "" {
			rw.cond = num(r[17])
		} else if rw.model == "lgssm" && rw.N == "inf" {
			t.Errorf("row %v: no per-subsequence RMS bias for an exact row", r)
		}
		if math.Abs(rw.bias-(rw.estimate-rw.truth)) > 1e-6*(1+math.Abs(rw.estimate)) {
			t.Errorf("row %v: bias %g is not estimate − truth = %g", r, rw.bias, rw.estimate-rw.truth)
		}
		if rw.hw < 0 || rw.secPerGrd <= 0 {
			t.Errorf("row %v: negative half-width or non-positive time", r)
		}
		rows = append(rows, rw)
	}
	return rows
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not a PNG: %v", path, err)
	}
	if cfg.Width < 300 || cfg.Height < 200 {
		t.Errorf("%s is %dx%d pixels, too small for a figure", path, cfg.Width, cfg.Height)
	}
}

func readSeq(t *testing.T, path string) ssm.Sequence {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seq := ssm.Sequence{Obs: 1}
	for _, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			t.Fatal(err)
		}
		seq.Y = append(seq.Y, v)
	}
	return seq
}

// TestLGSSMKalman runs the LGSSM part at T = 256 with few particles and checks
// the N = ∞ curve: with B = T every buffered window is the whole sequence, so
// the expectation over subsequences is exactly the full-data gradient (bias
// 0 up to rounding), while B = 0 is biased. The ground truth is checked
// against central differences of the Kalman log-likelihood of the written
// data, independently of the smoother and the chain rule to ∂/∂φ.
func TestLGSSMKalman(t *testing.T) {
	dir := t.TempDir()
	const T = 256
	var stdout, stderr bytes.Buffer
	args := []string{"-models", "lgssm", "-figs", "2", "-T", strconv.Itoa(T), "-reps", "2",
		"-N", "20", "-B", "0,8," + strconv.Itoa(T), "-stride", "8", "-out", dir}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	rows := readCurves(t, dir)
	if len(rows) != 6 { // 2 curves (N = 20, ∞) × 3 buffer sizes
		t.Fatalf("%d rows, want 6", len(rows))
	}
	bias, cond := map[int]float64{}, map[int]float64{}
	for _, r := range rows {
		if r.N == "inf" {
			cond[r.B] = r.cond
			if r.reps != 0 || r.hw != 0 {
				t.Errorf("Kalman row %+v should be exact (reps 0, half-width 0)", r)
			}
			bias[r.B] = r.bias
		}
	}
	g := rows[0].truth
	if math.Abs(bias[T]) > 1e-9*(1+math.Abs(g)) {
		t.Errorf("Kalman bias at B = T is %g, want 0 (g = %g)", bias[T], g)
	}
	if math.Abs(bias[0]) < 0.05 {
		t.Errorf("Kalman bias at B = 0 is %g, want clearly nonzero", bias[0])
	}
	if math.Abs(bias[8]) >= math.Abs(bias[0]) {
		t.Errorf("Kalman bias at B = 8 (%g) is not below B = 0 (%g)", bias[8], bias[0])
	}
	t.Logf("g = %.4f, Kalman bias B=0: %.4g, B=8: %.4g, B=T: %.3g", g, bias[0], bias[8], bias[T])
	// The per-subsequence RMS bias is 0 at B = T by definition, bounds the
	// averaged bias (|mean| ≤ RMS), and decays with B (Theorem 4.1's
	// buffering error, geometric in B for |φ| < 1).
	if cond[T] > 1e-9*(1+math.Abs(g)) {
		t.Errorf("per-subsequence RMS bias at B = T is %g, want 0", cond[T])
	}
	for _, B := range []int{0, 8} {
		if math.Abs(bias[B]) > cond[B]*(1+1e-9) {
			t.Errorf("B = %d: |averaged bias| %g exceeds the per-subsequence RMS %g", B, bias[B], cond[B])
		}
	}
	if !(cond[8] < cond[0]/5) {
		t.Errorf("per-subsequence RMS bias B = 0: %g, B = 8: %g; want a clear decay", cond[0], cond[8])
	}
	t.Logf("per-subsequence RMS bias B=0: %.4g, B=8: %.4g", cond[0], cond[8])

	// Ground truth against finite differences of log p(y | φ, σ = 0.7, τ = 1).
	seq := readSeq(t, filepath.Join(dir, "data_lgssm.csv"))
	if seq.Len() != T {
		t.Fatalf("data has %d observations, want %d", seq.Len(), T)
	}
	m := models.LGSSM{}
	ll := func(phi float64) float64 {
		u, err := m.Params(phi, 0.7, 1)
		if err != nil {
			t.Fatal(err)
		}
		k, err := m.Kalman(u)
		if err != nil {
			t.Fatal(err)
		}
		v, err := k.LogLik(seq, 0, T)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	const h = 1e-5
	fd := (ll(0.9+h) - ll(0.9-h)) / (2 * h)
	if math.Abs(fd-g) > 1e-5*(1+math.Abs(g)) {
		t.Errorf("ground truth %g, finite difference of the Kalman log-likelihood %g", g, fd)
	}
	checkPNG(t, filepath.Join(dir, "fig2_vary_B.png"))
}

// TestAllFigures runs every figure for every model at tiny sizes and checks
// the outputs: the CSV rows, the PNG files, the ground truth file, and that
// the particle estimates sit near the Kalman ones for the LGSSM.
func TestAllFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs particle filters for three models (a few seconds)")
	}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-T", "48", "-reps", "3", "-N", "200", "-N4", "50,200", "-B", "0,4", "-S", "2,16",
		"-truthN", "2000", "-truthruns", "2", "-out", dir}
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	rows := readCurves(t, dir)
	// Per model: Figure 2 has |N| (+1 Kalman for the LGSSM) curves × |B|,
	// Figure 3 two curves per N × |S|, Figure 4 four curves × |N4|.
	want := (2*2 + 2*2*2 + 4*2) + 2*(1*2+2*2+4*2)
	if len(rows) != want {
		t.Errorf("%d rows, want %d", len(rows), want)
	}
	models := map[string]bool{}
	for _, r := range rows {
		models[r.model] = true
		if r.N != "inf" && r.reps != 3 {
			t.Errorf("row %+v: %d replications, want 3", r, r.reps)
		}
	}
	if len(models) != 3 {
		t.Errorf("models in the CSV: %v", models)
	}
	// LGSSM: each particle estimate of Figures 2 and 3 is within twice its
	// 95% half-width (with 2 degrees of freedom, about 8.6 standard errors)
	// plus an allowance for the particle bias (III) of the exact Kalman
	// value of the same estimator: a loose check that still catches a wrong
	// weight, window or chain rule.
	kal := map[[2]int]float64{}
	for _, r := range rows {
		if r.model == "lgssm" && r.N == "inf" {
			kal[[2]int{r.S, r.B}] = r.estimate
		}
	}
	for _, r := range rows {
		if r.model == "lgssm" && r.N == "200" && (r.figure == 2 || r.figure == 3) {
			k, ok := kal[[2]int{r.S, r.B}]
			if !ok {
				t.Fatalf("no Kalman point for S = %d, B = %d", r.S, r.B)
			}
			if d := math.Abs(r.estimate - k); d > 2*r.hw+0.05*math.Abs(k)+0.5 {
				t.Errorf("LGSSM S=%d B=%d N=200: PF %g, Kalman %g (half-width %g)", r.S, r.B, r.estimate, k, r.hw)
			}
		}
	}
	for _, name := range []string{"fig2_vary_B.png", "fig3_vary_S.png", "fig4_vary_N.png"} {
		checkPNG(t, filepath.Join(dir, name))
	}
	f, err := os.Open(filepath.Join(dir, "truth.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) != 4 {
		t.Fatalf("truth.csv: %v, %d records", err, len(recs))
	}
	for _, r := range recs[1:] {
		se, err := strconv.ParseFloat(r[3], 64)
		if err != nil || se < 0 || (r[0] != "lgssm" && !(se > 0)) {
			t.Errorf("truth.csv row %v: bad standard error", r)
		}
	}
}

// TestReproducible checks that the numbers depend on the seed only, not on
// the number of workers.
func TestReproducible(t *testing.T) {
	out := func(workers string) []row {
		dir := t.TempDir()
		var stdout, stderr bytes.Buffer
		args := []string{"-models", "svm", "-figs", "2", "-T", "40", "-reps", "2", "-N", "30", "-B", "0,2",
			"-truthN", "200", "-truthruns", "2", "-workers", workers, "-out", dir}
		if err := run(args, &stdout, &stderr); err != nil {
			t.Fatalf("run: %v\n%s", err, stderr.String())
		}
		return readCurves(t, dir)
	}
	a, b := out("1"), out("3")
	for i := range a {
		if a[i].estimate != b[i].estimate || a[i].truth != b[i].truth || a[i].hw != b[i].hw {
			t.Errorf("row %d differs between 1 and 3 workers: %+v vs %+v", i, a[i], b[i])
		}
	}
}

// TestGARCHBeta checks the chain rule ∂u/∂β against central differences of
// models.GARCH.FromABG.
func TestGARCHBeta(t *testing.T) {
	m := models.GARCH{}
	const alpha, beta, gamma, tau, h = 0.1, 0.8, 0.05, 0.3, 1e-6
	u, err := m.FromABG(alpha, beta, gamma, tau)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, 4)
	m.Constrain(theta, u)
	du := garchDUDBeta(theta)
	up, _ := m.FromABG(alpha, beta+h, gamma, tau)
	um, _ := m.FromABG(alpha, beta-h, gamma, tau)
	for i := range u {
		fd := (up[i] - um[i]) / (2 * h)
		if math.Abs(fd-du[i]) > 1e-6*(1+math.Abs(fd)) {
			t.Errorf("∂u_%d/∂β = %g, finite difference %g", i+1, du[i], fd)
		}
	}
}

// TestBadInput checks that bad flags give one clear error.
func TestBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-models", "hmm"},
		{"-T", "32", "-S", "4,64"},
		{"-reps", "1"},
		{"-N", "10,x"},
		{"-figs", "5"},
		{"-stride", "0"},
		{"-nosuchflag"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		args = append(args, "-out", t.TempDir())
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%v) succeeded, want an error", args)
		}
	}
}
