package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// testPoints are natural parameters covering strong and weak persistence,
// positive and negative correlation, small and large intensities.
var testPoints = [][nParams]float64{
	{0.95, 0.9, 0.2, 0.3, 0.6, 1, 0.5},
	{-0.4, 0.5, 1.1, 0.4, -0.8, -1, 2.5},
	{0.3, 0.99, 0.05, 0.15, 0.1, 3, -0.5},
}

// TestModel checks the summed AddScore along simulated paths, with and
// without missing counts, against finite differences of the complete-data
// log-likelihood (ssmtest.CheckScore), the transform and the prior
// gradient, the samplers against the log densities (checkSamplers), and
// the Laplace capabilities against the
// kernel's own densities and finite differences (ssmtest.CheckLaplace).
func TestModel(t *testing.T) {
	m := NewCounts()
	for i, th := range testPoints {
		u, err := m.FromNatural(th[:]...)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := ssmtest.CheckScore(m, u, 50, rand.New(rand.NewPCG(uint64(i), 1)))
		if err != nil {
			t.Fatal(err)
		}
		if rel > ssmtest.ScoreTol {
			t.Errorf("theta %v: score relative error %.2g > %.0g", th, rel, ssmtest.ScoreTol)
		}
		if err := ssmtest.CheckTransform(m, u); err != nil {
			t.Errorf("theta %v: %v", th, err)
		}
		if err := ssmtest.CheckPrior(m, u); err != nil {
			t.Errorf("theta %v: %v", th, err)
		}
		checkSamplers(t, m, u, th)
		if err := ssmtest.CheckLaplace(m, u, rand.New(rand.NewPCG(uint64(i), 3))); err != nil {
			t.Errorf("theta %v: %v", th, err)
		}
	}
}

// checkSamplers checks the samplers against the log densities: the
// score, information and Stein moments of 4000 draws each
// (ssmtest.SamplerMoments) within ssmtest.SamplerZ Monte Carlo standard
// errors of zero. Stein's identity in y needs a density in y, so it is
// left out for the emission, whose counts are discrete; the emission's
// score and information moments in u stay (they hold for any law).
func checkSamplers(t *testing.T, m Counts, u []float64, th [nParams]float64) {
	t.Helper()
	ms, err := ssmtest.SamplerMoments(m, u, 4000, rand.New(rand.NewPCG(uint64(th[0]*1000+10), 2)))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, mo := range ms {
		if strings.HasPrefix(mo.Name, "emission: Stein") {
			continue
		}
		checked++
		if !(math.Abs(mo.Z()) <= ssmtest.SamplerZ) {
			t.Errorf("theta %v: %v", th, mo)
		}
	}
	if checked < 30 {
		t.Errorf("theta %v: only %d sampler moments checked", th, checked)
	}
}

// TestPoissonEmission checks that the emission is the Poisson law: its
// probabilities over y = 0..K sum to 1 (up to the tail beyond K), and
// SampleEmission's counts have the mean e^{c+x} within 4 standard errors.
func TestPoissonEmission(t *testing.T) {
	m := NewCounts()
	u, _ := m.FromNatural(testPoints[0][:]...)
	k, err := m.Bind(u)
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{0.4, -0.3}
	sum := 0.0
	for y0 := range 60 {
		for y1 := range 60 {
			lw := []float64{0}
			k.AddLogEmission(lw, []float64{float64(y0), float64(y1)}, x)
			sum += math.Exp(lw[0])
		}
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("emission probabilities sum to %.15g, want 1", sum)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 100000
	y := make([]float64, 2)
	var mean [2]float64
	for range n {
		k.SampleEmission(y, x, rng)
		mean[0] += y[0] / n
		mean[1] += y[1] / n
	}
	for i, c := range []float64{testPoints[0][iC1], testPoints[0][iC2]} {
		lambda := math.Exp(c + x[i])
		if se := math.Sqrt(lambda / n); math.Abs(mean[i]-lambda) > 4*se {
			t.Errorf("count %d: mean %.4f, want %.4f (4 se = %.4f)", i+1, mean[i], lambda, 4*se)
		}
	}
}

// TestBadParams: parameters outside the support give a *ssm.ParamError
// naming them, and bad flags an error naming the flag.
func TestBadParams(t *testing.T) {
	m := NewCounts()
	for _, c := range []struct {
		th   [nParams]float64
		name string
	}{
		{[nParams]float64{1.2, 0.5, 0.2, 0.3, 0.5, 0, 0}, "phi1"},
		{[nParams]float64{0.5, 0.5, -0.2, 0.3, 0.5, 0, 0}, "sigma1"},
		{[nParams]float64{0.5, 0.5, 0.2, 0.3, 1, 0, 0}, "rho"},
	} {
		_, err := m.FromNatural(c.th[:]...)
		var pe *ssm.ParamError
		if !errors.As(err, &pe) || pe.Name != c.name {
			t.Errorf("theta %v: error %v, want a *ssm.ParamError naming %s", c.th, err, c.name)
		}
	}
	var out bytes.Buffer
	for _, args := range [][]string{{"-params", "0.9,0.9"}, {"-params", "0.9,0.9,0.2,0.3,0.5,1,x"}, {"-T", "1"}} {
		err := run(context.Background(), append(args, "-q"), &out, &out)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: error %v, want one naming %s", args, err, args[0])
		}
	}
}

// TestFitAgainstNUTS fits a short simulated series (T = 300, the data of
// go run ./examples/custom_vector -T 300) with the defaults and compares
// the posterior with Stan's NUTS on the same model, prior and data
// (ref_counts300.json, from nuts/run_counts.R: no code of the library):
// the fit must take Laplace importance sampling (not particles), put every
// mean within 0.25 reference sds, every sd within ×[0.8, 1.25], with R-hat
// ≤ 1.01 and no warnings.
func TestFitAgainstNUTS(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit")
	}
	raw, err := os.ReadFile("ref_counts300.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		T      int
		Params []struct {
			Name     string
			Mean, SD float64
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	m := NewCounts()
	truth := testPoints[0]
	u, _ := m.FromNatural(truth[:]...)
	k, _ := m.Bind(u)
	_, y := ssm.Simulate(k, m.Dims(), ref.T, rand.New(rand.NewPCG(1, 1<<32)))
	post, err := sgmcmc.Fit(context.Background(), m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, sgmcmc.FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(post.Preparation.Path, "Laplace importance sampling") {
		t.Errorf("path %q: want Laplace importance sampling", post.Preparation.Path)
	}
	for j, p := range post.Summary() {
		r := ref.Params[j]
		if r.Name != p.Name {
			t.Fatalf("parameter %d: %s, reference %s", j, p.Name, r.Name)
		}
		z, ratio := (p.Mean-r.Mean)/r.SD, p.SD/r.SD
		t.Logf("%s: fit %.4f ± %.4f, NUTS %.4f ± %.4f (z %.2f, sd ratio %.2f, R-hat %.3f, ESS %.0f)", p.Name, p.Mean, p.SD, r.Mean, r.SD, z, ratio, p.Rhat, p.BulkESS)
		if math.Abs(z) > 0.25 || ratio < 0.8 || ratio > 1.25 || p.Rhat > 1.01 {
			t.Errorf("%s: mean %.2f reference sds off, sd ratio %.2f, R-hat %.3f", p.Name, z, ratio, p.Rhat)
		}
	}
	if len(post.Warnings) > 0 {
		t.Errorf("warnings: %q", post.Warnings)
	}
	t.Logf("%.1f s", post.Total.Seconds())
}

// TestWrite: -write writes the simulated counts (header y1,y2, one row per
// time step, non-negative integers) and fits nothing.
func TestWrite(t *testing.T) {
	path := t.TempDir() + "/counts.csv"
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-T", "25", "-write", path, "-q"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 26 || lines[0] != "y1,y2" {
		t.Fatalf("%d lines, header %q: want 26 and y1,y2", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		var a, b int
		if n, err := fmt.Sscanf(l, "%d,%d", &a, &b); n != 2 || err != nil || a < 0 || b < 0 {
			t.Errorf("row %q: want two non-negative counts", l)
		}
	}
	if out.Len() != 0 {
		t.Errorf("printed %q: want nothing (no fit)", out.String())
	}
}
