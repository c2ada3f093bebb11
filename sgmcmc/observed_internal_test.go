package sgmcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestObservedNewtonGARCH checks the preparation's mode for the model's
// exact scorer on a long-memory GARCH series (φ = 0.997, T = 3000, so a
// buffer of 40 steps forgets 0.997⁴⁰ ≈ 11% of the state): the gradient
// of the exact full-data log posterior of the model prepared (here the
// coarser 32 nodes), computed directly from its ExactScore over the
// whole sequence and the prior, must be
// < 0.1 posterior sd long in the preparation's metric (|Lᵀg|). It is
// 0.009; the buffered tilings' Newton before 2bc7b7a stopped at 0.326.
func TestObservedNewtonGARCH(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	m := models.GARCH{}
	truth, err := m.Params(1, 0.997, 0.1, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := m.Simulate(3000, truth, rand.New(rand.NewPCG(3, 1)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	f, err := newFit(m, data, FitSettings{Seed: 1, Gradient: FullGradient})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !f.prep.Exact {
		t.Fatal("the preparation did not choose the model's exact scorer")
	}
	// The model prepared: GARCH's coarser discretisation when its
	// correction is small (ssm.Coarsener), else the model as given.
	ex := f.model.(ssm.ExactScorer)
	u := f.prep.Mode
	g := make([]float64, len(u))
	if _, err := ex.ExactScore(g, u, seq, ssm.Full(seq.Len())); err != nil {
		t.Fatal(err)
	}
	prior := make([]float64, len(u))
	f.model.LogPrior(prior, u)
	for i := range g {
		g[i] += prior[i]
	}
	z := lTrans(f.prep.Chol, g)
	norm := math.Sqrt(dot(z, z))
	t.Logf("model %+v: mode u = %.4f, exact gradient %.4g, Newton step %.3f posterior sds", f.model, u, g, norm)
	if norm > 0.1 {
		t.Errorf("the exact log posterior's Newton step at the preparation's mode is %.3f posterior sds, want < 0.1", norm)
	}
}

// TestFallbackWarning checks that leaving the grid filter for particle
// filters is reported: toParticles records the failure's first line, the
// preparation that follows keeps it (Preparation.Fallback, saved with a
// checkpoint), and the Posterior's warnings carry it.
func TestFallbackWarning(t *testing.T) {
	if testing.Short() {
		t.Skip("a fit: long test")
	}
	m := models.SVM{}
	u, err := m.Params(0.95, 0.25, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := m.Simulate(200, u, rand.New(rand.NewPCG(4, 1)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	f, err := newFit(m, data, FitSettings{Seed: 1, Gradient: PlainGradient, NoiseProbes: 4, WarmUp: 50, Chains: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.chooseFilter(u); err != nil || f.gset.Grid.Nodes == 0 {
		t.Fatalf("no grid filter at u (err %v)", err)
	}
	f.warm = u
	ctx := context.Background()
	if !f.toParticles(ctx, errors.New("boom\nsecond line"), "preparation") {
		t.Fatal("toParticles declined an AutoFilter grid failure")
	}
	want := "the grid filter failed during the preparation (boom): particle filters with N = "
	if !strings.HasPrefix(f.fallback, want) {
		t.Fatalf("fallback %q, want prefix %q", f.fallback, want)
	}
	if err := f.prepareAt(ctx, u); err != nil {
		t.Fatal(err)
	}
	if f.prep.Fallback != f.fallback || f.prep.Grid.Nodes != 0 {
		t.Errorf("after the preparation: Fallback %q, grid %d nodes; want %q on particles", f.prep.Fallback, f.prep.Grid.Nodes, f.fallback)
	}
	f.s.Iterations, f.s.KSDDraws = 20, -1
	post, err := f.sample(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(post.Warnings, f.fallback) {
		t.Errorf("warnings %q lack the fallback %q", post.Warnings, f.fallback)
	}
}
