package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestObservedNewtonGARCH checks the preparation's mode for the model's
// exact scorer on a long-memory GARCH series (φ = 0.997, T = 3000, so a
// buffer of 40 steps forgets 0.997⁴⁰ ≈ 11% of the state): the gradient
// of the exact full-data log posterior, computed here directly from
// models.GARCH.ExactScore over the whole sequence and the prior, must be
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
	u := f.prep.Mode
	g := make([]float64, len(u))
	if _, err := m.ExactScore(g, u, seq, ssm.Full(seq.Len())); err != nil {
		t.Fatal(err)
	}
	prior := make([]float64, len(u))
	m.LogPrior(prior, u)
	for i := range g {
		g[i] += prior[i]
	}
	z := lTrans(f.prep.Chol, g)
	norm := math.Sqrt(dot(z, z))
	t.Logf("mode u = %.4f, exact gradient %.4g, Newton step %.3f posterior sds", u, g, norm)
	if norm > 0.1 {
		t.Errorf("the exact log posterior's Newton step at the preparation's mode is %.3f posterior sds, want < 0.1", norm)
	}
}
