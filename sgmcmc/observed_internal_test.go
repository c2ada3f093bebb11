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
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
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
	z := linalg.LTrans(f.prep.Chol, g)
	norm := math.Sqrt(linalg.Dot(z, z))
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

// TestForwardDiff: the Jacobian of the full-data score from forward
// differences at jacobianPoints (p + 1 passes) against a fourth-order
// reference, Richardson-extrapolated central differences with steps
// 10⁻² and 5·10⁻³, both of the LGSSM's exact Kalman score over 2000
// simulated observations. The error is about η/2 = 5·10⁻⁵ of J with
// η = jacobianEta = 10⁻⁴, within the 10⁻³ of J the test allows; the error
// grows with η (truncation), so η = 10⁻² (error about 5·10⁻³ of J) fails
// it; a much smaller η would trade that truncation error for the
// rounding error of the difference of two nearly equal scores.
func TestForwardDiff(t *testing.T) {
	m := models.LGSSM{}
	u0 := []float64{math.Atanh(0.9), math.Log(0.7), math.Log(1)}
	_, seq, err := m.Simulate(2000, u0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	const p = 3
	score := func(u []float64) []float64 {
		g := make([]float64, p)
		if _, err := m.ExactScore(g, u, seq, ssm.Full(seq.Len())); err != nil {
			t.Fatal(err)
		}
		return g
	}
	var cols [][]float64
	for _, v := range jacobianPoints(u0) {
		cols = append(cols, score(v))
	}
	got := forwardDiff(cols, p)
	central := func(h float64) []float64 {
		j := make([]float64, p*p)
		for k := range p {
			up, um := slices.Clone(u0), slices.Clone(u0)
			up[k] += h
			um[k] -= h
			gp, gm := score(up), score(um)
			for i := range p {
				j[i*p+k] = (gp[i] - gm[i]) / (2 * h)
			}
		}
		return j
	}
	c1, c2 := central(1e-2), central(5e-3)
	worst, top := 0.0, 0.0
	for i := range got {
		ref := (4*c2[i] - c1[i]) / 3
		worst = math.Max(worst, math.Abs(got[i]-ref))
		top = math.Max(top, math.Abs(ref))
	}
	t.Logf("forward differences with step %g: largest error %.3g of the largest entry %.4g (relative %.2g)", jacobianEta, worst, top, worst/top)
	if !(worst < 1e-3*top) {
		t.Errorf("forward-difference Jacobian off by %.3g of %.4g", worst, top)
	}
}
