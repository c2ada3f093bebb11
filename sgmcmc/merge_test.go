package sgmcmc_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestSummarizeDrawsMatchesFit summarises a short fit's natural draws with
// SummarizeDraws: the same table, bit for bit, and the same convergence
// warnings as the fit's own.
func TestSummarizeDrawsMatchesFit(t *testing.T) {
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	post, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{seq}},
		sgmcmc.FitSettings{Exact: true, Seed: 5, Chains: 2, Iterations: 300, AdaptWindow: 100, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sgmcmc.SummarizeDraws(post.Names, post.Natural)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Params, post.Summary()) {
		t.Errorf("SummarizeDraws:\n%+v\nFit:\n%+v", s.Params, post.Summary())
	}
	if len(s.Warnings) == 0 { // 600 draws of a short chain: ESS < 400
		t.Error("no warning on 300 draws per chain")
	}
	for _, w := range s.Warnings {
		if !slices.Contains(post.Warnings, w) {
			t.Errorf("warning %q is not among Fit's %q", w, post.Warnings)
		}
	}
	if s.Chains != 2 || s.Draws != post.Draws() || s.MinDraws != post.Draws()/2 {
		t.Errorf("chains %d, draws %d, min %d; Fit kept %d draws in 2 chains", s.Chains, s.Draws, s.MinDraws, post.Draws())
	}
	var a, b strings.Builder
	if err := s.WriteText(&a); err != nil {
		t.Fatal(err)
	}
	post.WriteText(&b)
	if a.String() != b.String() {
		t.Errorf("WriteText:\n%s\nPosterior.WriteText:\n%s", a.String(), b.String())
	}
}

// TestSummarizeDrawsEdges: unequal and empty chains, non-finite draws and
// the errors.
func TestSummarizeDrawsEdges(t *testing.T) {
	names := []string{"a", "b"}
	chain := func(n int, shift float64) []float64 {
		x := make([]float64, 2*n)
		for i := range x {
			x[i] = shift + math.Sin(float64(i)*1.7)
		}
		return x
	}
	s, err := sgmcmc.SummarizeDraws(names, [][]float64{chain(50, 0), nil, chain(30, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Chains != 2 || s.Draws != 80 || s.MinDraws != 30 {
		t.Errorf("chains %d, draws %d, min %d; want 2, 80, 30", s.Chains, s.Draws, s.MinDraws)
	}
	bad := chain(20, 0)
	bad[5] = math.NaN()
	s, err = sgmcmc.SummarizeDraws(names, [][]float64{chain(20, 0), bad})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Params[1].Rhat; !math.IsNaN(r) {
		t.Errorf("R-hat %v with a NaN draw, want NaN", r)
	}
	if !strings.Contains(strings.Join(s.Warnings, "\n"), "b: R-hat cannot be computed") {
		t.Errorf("warnings %q: none on b's NaN R-hat", s.Warnings)
	}
	s, err = sgmcmc.SummarizeDraws(names, [][]float64{chain(3, 0), chain(3, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Warnings[0], "too few for ESS and R-hat") {
		t.Errorf("3 draws per chain: warnings %q", s.Warnings)
	}
	// One draw in all: no sd either (it printed NaN unannounced).
	s, err = sgmcmc.SummarizeDraws(names, [][]float64{chain(1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(s.Params[0].SD) || !strings.Contains(s.Warnings[0], "1 draws per chain are too few for an sd, ESS and R-hat") {
		t.Errorf("one draw: sd %v, warnings %q", s.Params[0].SD, s.Warnings)
	}
	// Constant chains: an R-hat that cannot be computed says so (it said
	// "R-hat NaN > 1.01: the chains disagree").
	flat := make([]float64, 2*10)
	s, err = sgmcmc.SummarizeDraws(names, [][]float64{flat, flat})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Warnings, "\n"); !strings.Contains(w, "a: R-hat cannot be computed (constant chains") || strings.Contains(w, "disagree") {
		t.Errorf("constant chains: warnings %q", s.Warnings)
	}
	for _, c := range []struct {
		names  []string
		chains [][]float64
		want   string
	}{
		{nil, [][]float64{{1}}, "no parameter names"},
		{names, [][]float64{chain(4, 0), {1, 2, 3}}, "chain 1 holds 3 values"},
		{names, [][]float64{nil, {}}, "no draws"},
	} {
		if _, err := sgmcmc.SummarizeDraws(c.names, c.chains); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SummarizeDraws(%q, %d chains): error %v, want one saying %q", c.names, len(c.chains), err, c.want)
		}
	}
}
