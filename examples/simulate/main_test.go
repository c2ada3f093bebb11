package main

import (
	"io"
	"math"
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
