package report

import (
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

func close(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestSummarizeExact uses the draws 1..100 split over two chains (and a
// constant second parameter), whose moments and type-7 quantiles are known
// in closed form: mean 50.5, variance 100·101/12, q_p = 1 + 99p.
func TestSummarizeExact(t *testing.T) {
	var c0, c1 []float64
	for i := 1; i <= 50; i++ {
		c0 = append(c0, float64(i), 7)
		c1 = append(c1, float64(i+50), 7)
	}
	tab, err := Summarize([]string{"a", "b"}, [][]float64{c0, c1})
	if err != nil {
		t.Fatal(err)
	}
	a := tab[0]
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"mean", a.Mean, 50.5}, {"sd", a.SD, math.Sqrt(100 * 101 / 12.0)},
		{"q05", a.Q05, 1 + 99*0.05}, {"q50", a.Q50, 50.5}, {"q95", a.Q95, 1 + 99*0.95},
		{"ESS", a.ESS, ksd.ESS([][]float64{Columns([][]float64{c0}, 2, 0)[0], Columns([][]float64{c1}, 2, 0)[0]})},
	} {
		if !close(c.got, c.want, 1e-12) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// The chains do not overlap at all: R-hat must be far above 1.
	if a.Rhat < 2 {
		t.Errorf("R-hat of disjoint chains = %v", a.Rhat)
	}
	b := tab[1]
	if b.Mean != 7 || b.SD != 0 || b.Q05 != 7 || b.ESS != 0 || !math.IsNaN(b.Rhat) {
		t.Errorf("constant parameter: %+v", b)
	}
	if !math.IsNaN(tab.MaxRhat()) || tab.MinESS() != 0 {
		t.Errorf("MaxRhat %v, MinESS %v", tab.MaxRhat(), tab.MinESS())
	}
}

// TestSummarizeIID checks, on independent normal draws, that the mean is
// within 4 standard errors of the truth, R-hat is near 1 and ESS near the
// number of draws, and that unequal chain lengths are handled.
func TestSummarizeIID(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := make([][]float64, 4)
	n := 0
	for c := range chains {
		k := 1000 + 100*c
		for range k {
			chains[c] = append(chains[c], 2+3*rng.NormFloat64())
		}
		n += k
	}
	tab, err := Summarize([]string{"x"}, chains)
	if err != nil {
		t.Fatal(err)
	}
	p := tab[0]
	if se := 3 / math.Sqrt(float64(n)); math.Abs(p.Mean-2) > 4*se {
		t.Errorf("mean %v, want 2 ± %v", p.Mean, 4*se)
	}
	// sd of the sample sd ≈ σ/√(2n).
	if se := 3 / math.Sqrt(2*float64(n)); math.Abs(p.SD-3) > 4*se {
		t.Errorf("sd %v, want 3 ± %v", p.SD, 4*se)
	}
	// Diagnostics use the first 1000 draws of each chain.
	if p.Rhat > 1.01 || p.ESS < 2500 || p.ESS > 6000 {
		t.Errorf("R-hat %v, ESS %v for 4000 iid draws", p.Rhat, p.ESS)
	}
	if q := 2 + 3*1.6448536269514722; math.Abs(p.Q95-q) > 0.25 {
		t.Errorf("q95 %v, want about %v", p.Q95, q)
	}
}

func TestSummarizeErrors(t *testing.T) {
	if _, err := Summarize(nil, [][]float64{{1}}); err == nil {
		t.Error("no names accepted")
	}
	if _, err := Summarize([]string{"a", "b"}, [][]float64{{1, 2, 3}}); err == nil {
		t.Error("ragged block accepted")
	}
	if _, err := Summarize([]string{"a"}, [][]float64{{}, nil}); err == nil {
		t.Error("no draws accepted")
	}
}

func TestTableJSONAndText(t *testing.T) {
	tab := Table{
		{Name: "phi", Mean: 0.9, SD: 0.01, Q05: 0.88, Q50: 0.9, Q95: 0.92, ESS: 120, Rhat: 1.01},
		{Name: "tau", Mean: 1, SD: 0.1, Q05: 0.8, Q50: 1, Q95: 1.2, ESS: 0, Rhat: math.NaN()},
	}
	b, err := json.Marshal(map[string]any{"params": tab})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"params":{"phi":{"mean":0.9,"sd":0.01,"q05":0.88,"q50":0.9,"q95":0.92,"ess":120,"rhat":1.01},` +
		`"tau":{"mean":1,"sd":0.1,"q05":0.8,"q50":1,"q95":1.2,"ess":0,"rhat":null}}}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	text := tab.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "R-hat") || !strings.Contains(lines[1], "phi") || !strings.Contains(lines[2], "NaN") {
		t.Errorf("text table:\n%s", text)
	}
}

func TestThin(t *testing.T) {
	x := make([]float64, 20) // 10 rows of 2
	for i := range x {
		x[i] = float64(i / 2)
	}
	if got, want := Thin(x, 2, 3), []float64{2, 2, 5, 5, 9, 9}; !slices.Equal(got, want) {
		t.Errorf("Thin = %v, want %v", got, want)
	}
	got := Thin(x, 2, 20)
	if !slices.Equal(got, x) {
		t.Errorf("Thin with m > n = %v", got)
	}
	got[0] = -1
	if x[0] == -1 {
		t.Error("Thin aliases its input")
	}
}

// TestScores checks exact scores of a standard normal (score −u), that the
// result does not depend on the number of workers for a random estimator,
// and that an estimator error is reported with its row.
func TestScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 3*11)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	exact := func() (sgmcmc.Estimator, error) {
		return sgmcmc.EstimatorFunc(func(_ context.Context, g, u []float64, _ *rand.Rand) (float64, error) {
			for i := range u {
				g[i] = -u[i]
			}
			return 0, nil
		}), nil
	}
	s, err := Scores(context.Background(), x, 3, exact, 2, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if s[i] != -x[i] {
			t.Fatalf("score %d = %v, want %v", i, s[i], -x[i])
		}
	}
	noisy := func() (sgmcmc.Estimator, error) {
		return sgmcmc.EstimatorFunc(func(_ context.Context, g, u []float64, r *rand.Rand) (float64, error) {
			for i := range u {
				g[i] = -u[i] + r.NormFloat64()
			}
			return 0, nil
		}), nil
	}
	s1, _ := Scores(context.Background(), x, 3, noisy, 1, 9, 100)
	s4, _ := Scores(context.Background(), x, 3, noisy, 4, 9, 100)
	if !slices.Equal(s1, s4) {
		t.Error("scores depend on the number of workers")
	}
	// The exact scores give a smaller KSD than the noisy ones would
	// suggest only in expectation; here just check ksd accepts them.
	if _, err := ksd.Compute(x, s, 3, nil); err != nil {
		t.Error(err)
	}
	bad := errors.New("boom")
	failing := func() (sgmcmc.Estimator, error) {
		return sgmcmc.EstimatorFunc(func(_ context.Context, g, u []float64, _ *rand.Rand) (float64, error) {
			if u[0] == x[3*7] {
				return 0, bad
			}
			return 0, nil
		}), nil
	}
	if _, err := Scores(context.Background(), x, 3, failing, 3, 1, 0); !errors.Is(err, bad) || !strings.Contains(err.Error(), "draw 7") {
		t.Errorf("error %v, want boom at draw 7", err)
	}
}

// TestKDE checks that the density estimate of normal draws integrates to
// about 1 (trapezoid rule) and peaks near the mean.
func TestKDE(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float64, 2000)
	for i := range x {
		x[i] = 1 + 0.5*rng.NormFloat64()
	}
	xy := kde(x, slices.Min(x), slices.Max(x), 400, Support{Lo: math.Inf(-1), Hi: math.Inf(1)}, true)
	area, peak := 0.0, xy[0]
	for i := 1; i < len(xy); i++ {
		area += 0.5 * (xy[i].Y + xy[i-1].Y) * (xy[i].X - xy[i-1].X)
		if xy[i].Y > peak.Y {
			peak = xy[i]
		}
	}
	if math.Abs(area-1) > 0.01 {
		t.Errorf("KDE integrates to %v", area)
	}
	if math.Abs(peak.X-1) > 0.15 {
		t.Errorf("KDE peaks at %v, want near 1", peak.X)
	}
}

func TestPlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	chains := make([][]float64, 3)
	iters := make([][]int, 3)
	for c := range chains {
		for k := range 5000 {
			chains[c] = append(chains[c], rng.NormFloat64(), math.Exp(rng.NormFloat64()))
			iters[c] = append(iters[c], 100+k)
		}
	}
	dir := t.TempDir()
	names := []string{"a", "b"}
	if err := TracePNG(filepath.Join(dir, "sub", "trace.png"), names, chains, iters); err != nil {
		t.Fatal(err)
	}
	if err := DensityPNG(filepath.Join(dir, "density.png"), names, chains); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sub/trace.png", "density.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
			t.Errorf("%s is %v", name, b)
		}
	}
	if err := TracePNG(filepath.Join(dir, "x.png"), names, [][]float64{{1, 2, 3}}, nil); err == nil {
		t.Error("ragged block accepted")
	}
	if err := DensityPNG(filepath.Join(dir, "x.png"), names, [][]float64{{math.NaN(), 1}}); err == nil {
		t.Error("NaN draws accepted")
	}
}
