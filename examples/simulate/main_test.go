package main

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestWritesReadableSeries: the CSV and binary outputs read back as the
// same series of the asked length, with the SVM's variance near its
// stationary value τ²exp(σ²/(2(1−φ²))) (within 15% at T = 20 000);
// bad flags are errors naming them.
func TestWritesReadableSeries(t *testing.T) {
	dir := t.TempDir()
	csvPath, binPath := filepath.Join(dir, "y.csv"), filepath.Join(dir, "y.bin")
	for _, out := range []string{csvPath, binPath} {
		if err := run([]string{"-T", "20000", "-params", "0.97,0.2,1", "-out", out}, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	a, err := ssm.ReadCSVFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ssm.OpenBinary(binPath, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Len() != 20000 || b.Seq().Len() != 20000 {
		t.Fatalf("lengths %d and %d, want 20000", a.Len(), b.Seq().Len())
	}
	v := 0.0
	for i := range a.Y {
		if math.Abs(a.Y[i]-b.Seq().Y[i]) > 1e-12*(1+math.Abs(a.Y[i])) {
			t.Fatalf("row %d: CSV %v, binary %v", i, a.Y[i], b.Seq().Y[i])
		}
		v += a.Y[i] * a.Y[i]
	}
	v /= 20000
	want := math.Exp(0.04 / (2 * (1 - 0.97*0.97)))
	if math.Abs(v/want-1) > 0.15 {
		t.Errorf("variance %.3f, stationary %.3f", v, want)
	}
	for _, c := range []struct{ args, want string }{
		{"-model x -out " + csvPath, "unknown model"},
		{"-T 0 -out " + csvPath, "-T = 0"},
		{"-params 1,2 -out " + csvPath, "needs 3"},
		{"-T 10", "-out is required"},
	} {
		if err := run(strings.Fields(c.args), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.args, err, c.want)
		}
	}
}

// TestMSVSeries: -model msv writes a CSV with the header y1,y2 that reads
// back as T rows of two components, whose log-squares have the moments of
// the model: E log y_i² = log τ_i² + E log χ²_1 (= log τ_i² − 1.2704) and
// corr(log y_1², log y_2²) = P_12/√((P_11 + π²/2)(P_22 + π²/2)), P the
// stationary covariance of x (P_ij = ρ_ij σ_i σ_j/(1 − φ_i φ_j)); with φ
// (0.95, 0.9), σ (0.5, 0.4), ρ 0.8, τ (1, 2) the correlation is 0.168.
// Seed 1, T = 20 000: the means within 0.2 (sd ≈ 0.05), the correlation
// within 0.05 (sd ≈ 0.012). Bad -D, -params and a .bin output are errors
// naming the flag.
func TestMSVSeries(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "msv.csv")
	if err := run([]string{"-model", "msv", "-D", "2", "-T", "20000", "-params", "0.95,0.9,0.5,0.4,0.8,1,2", "-out", path}, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(b), "\n"); first != "y1,y2" {
		t.Fatalf("first line %q, want the header y1,y2", first)
	}
	s, err := ssm.ReadCSVFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Obs != 2 || s.Len() != 20000 {
		t.Fatalf("read back %d components × %d rows, want 2 × 20000", s.Obs, s.Len())
	}
	var l [2][]float64
	for i := range s.Len() {
		for j, v := range s.At(i) {
			l[j] = append(l[j], math.Log(v*v))
		}
	}
	mean := func(a []float64) float64 {
		m := 0.0
		for _, v := range a {
			m += v
		}
		return m / float64(len(a))
	}
	for j, tau := range []float64{1, 2} {
		if m, want := mean(l[j]), math.Log(tau*tau)-1.2704; math.Abs(m-want) > 0.2 {
			t.Errorf("series %d: mean log y² %.3f, want %.3f", j+1, m, want)
		}
	}
	m0, m1 := mean(l[0]), mean(l[1])
	var c, v0, v1 float64
	for i := range l[0] {
		a, b := l[0][i]-m0, l[1][i]-m1
		c, v0, v1 = c+a*b, v0+a*a, v1+b*b
	}
	p11, p22, p12 := 0.25/(1-0.95*0.95), 0.16/(1-0.9*0.9), 0.8*0.5*0.4/(1-0.95*0.9)
	want := p12 / math.Sqrt((p11+math.Pi*math.Pi/2)*(p22+math.Pi*math.Pi/2))
	got := c / math.Sqrt(v0*v1)
	t.Logf("mean log y²: %.3f, %.3f; corr(log y1², log y2²) %.3f (model %.3f)", m0, m1, got, want)
	if math.Abs(got-want) > 0.05 {
		t.Errorf("corr(log y1², log y2²) = %.3f, want %.3f", got, want)
	}
	// The default parameters of D = 3: 3 + 3 + 3 + 3 values.
	if err := run([]string{"-model", "msv", "-D", "3", "-T", "50", "-out", path}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if s, err := ssm.ReadCSVFile(path); err != nil || s.Obs != 3 || s.Len() != 50 {
		t.Errorf("D = 3: %d components × %d rows (%v), want 3 × 50", s.Obs, s.Len(), err)
	}
	for _, c := range []struct{ args, want string }{
		{"-model msv -D 0 -out " + path, "-D = 0"},
		{"-model svm -D 2 -out " + path, "-D needs -model msv"},
		{"-model msv -params 0.9,0.9 -out " + path, "needs 7 (phi1,phi2,sigma1,sigma2,rho,tau1,tau2)"},
		{"-model msv -params 0.9,0.9,0.2,0.2,1.5,1,1 -out " + path, "-params: ssm: invalid parameter rho = 1.5"},
		{"-model msv -out " + filepath.Join(dir, "y.bin"), "msv writes a CSV"},
	} {
		if err := run(strings.Fields(c.args), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.args, err, c.want)
		}
	}
}
