package main

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// TestDrawsProposal: -proposal's t₅ sits at the mean and covariance in u
// of the draws' natural parameters (columns found by name, others
// ignored), computed here by hand for 40 draws of the SVM; bad files
// get errors naming the problem.
func TestDrawsProposal(t *testing.T) {
	m := models.SVM{}
	dir := t.TempDir()
	// Columns in another order than the model's, with a fit's extras.
	rows := [][3]float64{{0.9, 0.2, 0.8}, {0.95, 0.3, 0.7}, {0.8, 0.25, 0.9}}
	var b strings.Builder
	b.WriteString("chain,iter,tau,time,sigma,phi\n")
	var us [][]float64
	for k := range 40 {
		r := rows[k%3]
		// Vary the draws so that their covariance is positive definite.
		th := []float64{r[0] - 0.01*float64(k%5), r[1] + 0.003*float64(k%7), r[2] + 0.002*float64(k%11)}
		b.WriteString(strings.Join([]string{"0", "1", ftoa(th[2]), "0.5", ftoa(th[1]), ftoa(th[0])}, ",") + "\n")
		u := make([]float64, 3)
		if err := m.Unconstrain(u, th); err != nil {
			t.Fatal(err)
		}
		us = append(us, u)
	}
	path := filepath.Join(dir, "draws.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	mean, cov, err := drawsProposal(m, path)
	if err != nil {
		t.Fatal(err)
	}
	n := float64(len(us))
	for i := range 3 {
		want := 0.0
		for _, u := range us {
			want += u[i] / n
		}
		if math.Abs(mean[i]-want) > 1e-12 {
			t.Errorf("mean[%d] = %v, want %v", i, mean[i], want)
		}
		for j := range 3 {
			c := 0.0
			for _, u := range us {
				c += (u[i] - mean[i]) * (u[j] - mean[j])
			}
			if got := cov.At(i, j); math.Abs(got-c/(n-1)) > 1e-12 {
				t.Errorf("cov[%d][%d] = %v, want %v", i, j, got, c/(n-1))
			}
		}
	}
	for _, c := range []struct{ name, body, want string }{
		{"nophi.csv", "sigma,tau\n0.2,0.8\n", `no column "phi"`},
		{"few.csv", "phi,sigma,tau\n0.9,0.2,0.8\n", "want at least 30"},
		{"bad.csv", "phi,sigma,tau\n0.9,x,0.8\n", "line 2: sigma"},
		{"outside.csv", "phi,sigma,tau\n1.5,0.2,0.8\n", "line 2"},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := drawsProposal(m, p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, _, err := drawsProposal(m, filepath.Join(dir, "missing.csv")); err == nil || !strings.Contains(err.Error(), "-proposal") {
		t.Errorf("missing file: error %v", err)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
