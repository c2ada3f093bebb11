package sgmcmc_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestFitLGSSMCalibration fits the simulated LGSSM series of testdata (T =
// 2000) with exact (Kalman) buffered gradients and the defaults, and
// compares the posterior with the independent reference of
// examples/fit/gridref (importance sampling on the exact Kalman
// likelihood, 20 000 draws): every mean within 0.25 reference sds and every
// sd within a factor [0.8, 1.25], with R-hat and ESS that raise no warning.
func TestFitLGSSMCalibration(t *testing.T) {
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "examples", "fit", "gridref", "ref_lgssm_sim.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Params []struct {
			Name     string
			Mean, SD float64
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	post, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{seq}},
		sgmcmc.FitSettings{Exact: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range post.Summary() {
		want := ref.Params[i]
		z := (r.Mean - want.Mean) / want.SD
		ratio := r.SD / want.SD
		t.Logf("%s: mean %.4f (ref %.4f, %.2f ref sds), sd %.4f (ref %.4f, ratio %.2f), bulk ESS %.0f, R-hat %.3f",
			r.Name, r.Mean, want.Mean, z, r.SD, want.SD, ratio, r.BulkESS, r.Rhat)
		if r.Name != want.Name || math.Abs(z) > 0.25 || ratio < 0.8 || ratio > 1.25 {
			t.Errorf("%s: mean %.4f vs %.4f (%.2f sds), sd ratio %.2f", r.Name, r.Mean, want.Mean, z, ratio)
		}
	}
	if len(post.Warnings) > 0 {
		t.Errorf("warnings: %q", post.Warnings)
	}
}
