package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// TestClippedStepsCounted: a 1-D standard normal posterior with gradient
// noise λ = 4 and the user step h = 0.5, where the injected variance
// 2h − h² − h²λ = −0.25 < 0 must be clipped (the draws' variance is then
// ×1.33). Fit's SGLD chains must count it, so that the fit warns
// (clippedSteps); at h = 0.25 (h(1 + λ) = 1.25 ≤ 2) nothing is clipped.
func TestClippedStepsCounted(t *testing.T) {
	for _, c := range []struct {
		h    float64
		want bool
	}{{0.5, true}, {0.25, false}} {
		f := &fit{s: FitSettings{Chains: 1}, dim: 1, prep: Preparation{Gradient: PlainGradient, Chol: []float64{1}}}
		var setupErr error
		_, newMethod, _, _ := f.chainFactories([]float64{4}, &setupErr)
		m := newMethod(0)
		m.Init(1)
		u, g := []float64{0.3}, []float64{-0.3}
		m.Step(u, g, c.h, rand.New(rand.NewPCG(1, 2)))
		if got := f.clippedSteps() > 0; got != c.want {
			t.Errorf("h = %v, λ = 4: clipped steps %d, want clipping %v", c.h, f.clippedSteps(), c.want)
		}
	}
}

// TestGridEdgeCounted: the fit warns once the proposals refused at a
// grid's edge (counted by the chains' kernels, mh.TestRefusedCounted)
// exceed 0.1% of the proposals, the chains' and importance sampling's
// together.
func TestGridEdgeCounted(t *testing.T) {
	for _, c := range []struct {
		is, chains [2]int
		warn       bool
	}{
		{[2]int{0, 400}, [2]int{1, 4000}, false}, // 1 in 4,400
		{[2]int{3, 400}, [2]int{3, 4000}, true},  // 6 in 4,400
		{[2]int{5, 400}, [2]int{0, 0}, true},     // importance sampling alone
	} {
		f := &fit{isEdge: c.is}
		f.gridEdges = func() (int, int) { return c.chains[0], c.chains[1] }
		if got := f.gridEdgeWarning() != ""; got != c.warn {
			t.Errorf("importance sampling %v, chains %v: warning %q, want one: %v", c.is, c.chains, f.gridEdgeWarning(), c.warn)
		}
	}
}

// TestResidualCheck: the discretisation check's weighted shifts of the
// means and sds equal the self-normalised importance-sampling estimates
// computed directly, and the Posterior warns on a mean moved by more than
// 0.1 sd or an sd by more than 10%, only beyond the 95% band of the
// check's own standard error.
func TestResidualCheck(t *testing.T) {
	const K = 24
	x := make([][]float64, K)
	logw := make([]float64, K)
	used := make([]int, K)
	for i := range x {
		v := -2 + 4*float64(i)/float64(K-1)
		x[i] = []float64{v, v * v}
		logw[i] = 0.3*v + 0.1*v*v
		used[i] = i
	}
	dc := &discretisation{}
	residualShift(dc, used, logw, x)
	for j := range 2 {
		sw, mw, mp := 0.0, 0.0, 0.0
		for i := range x {
			w := math.Exp(logw[i])
			sw += w
			mw += w * x[i][j]
			mp += x[i][j] / K
		}
		mw /= sw
		vw, vp := 0.0, 0.0
		for i := range x {
			vw += math.Exp(logw[i]) * (x[i][j] - mw) * (x[i][j] - mw) / sw
			vp += (x[i][j] - mp) * (x[i][j] - mp) / K
		}
		if math.Abs(dc.Residual[j]-(mw-mp)) > 1e-12 || math.Abs(dc.ResidualSD[j]-math.Sqrt(vw/vp)) > 1e-12 {
			t.Errorf("coordinate %d: residual %.6f, sd ratio %.6f; want %.6f and %.6f", j, dc.Residual[j], dc.ResidualSD[j], mw-mp, math.Sqrt(vw/vp))
		}
		if !(dc.ResidualSE[j] > 0) || !(dc.ResidualSDSE[j] > 0) {
			t.Errorf("coordinate %d: standard errors %v and %v, want > 0", j, dc.ResidualSE[j], dc.ResidualSDSE[j])
		}
	}
	names := []string{"mu"}
	for _, c := range []struct {
		r, se, sd, sdse float64
		warn            bool
	}{
		{0.15, 0.05, 1, 0.02, true},   // beyond 0.1 sd and beyond its band
		{0.15, 0.1, 1, 0.02, false},   // within its band
		{0.08, 0.01, 1, 0.02, false},  // within 0.1 sd
		{0, 0.02, 1.2, 0.05, true},    // an sd 20% wider
		{0, 0.02, 0.85, 0.1, false},   // 15% narrower, within its band
		{-0.12, 0.04, 1, 0.02, true},  // either sign
		{0.19, 0.05, 1, 0.02, true},   // what the 0.2 sd rule let pass
		{0.05, 0.05, 0.8, 0.05, true}, // an sd the means-only check ignored
	} {
		dc := &discretisation{DiscretisationReport: DiscretisationReport{Residual: []float64{c.r}, ResidualSE: []float64{c.se}, ResidualSD: []float64{c.sd}, ResidualSDSE: []float64{c.sdse}}}
		if got := residualWarning(dc, names, "refine the scorer") != ""; got != c.warn {
			t.Errorf("residual %v ± %v, sd ratio %v ± %v: warning %v, want %v", c.r, c.se, c.sd, c.sdse, got, c.warn)
		}
	}
}

// TestStayCheckLastSegment: the stay check reads every segment, the one
// that ends the sampling too (a fixed Iterations here; a cap, a budget or
// a checkpoint alike). A full-data chain standing 40 of 300 iterations at
// one point marks the sampling stuck, so that collect warns; the same
// segment without the stay does not.
func TestStayCheckLastSegment(t *testing.T) {
	for _, stay := range []int{40, 1} {
		f := &fit{s: FitSettings{Chains: 2, Iterations: 300}, dim: 1, prep: Preparation{Gradient: FullGradient}}
		tr := &Trace{Chains: make([]TraceChain, 2)}
		for c := range tr.Chains {
			for i := range 300 {
				v := float64(i)
				if c == 1 && i >= 100 && i < 100+stay {
					v = 100 // chain 1 stands still
				}
				tr.Chains[c].U = append(tr.Chains[c].U, v)
			}
		}
		s := &sampling{iters: 300, lastSeg: 2}
		if !f.checkSegment(s, 0, tr) {
			t.Fatal("a fixed Iterations must end the sampling after one segment")
		}
		if s.stuck != (stay == 40) || s.stay != stay || s.stayChain != 1 && stay == 40 {
			t.Errorf("stay %d in the last segment: stuck %v, longest stay %d in chain %d", stay, s.stuck, s.stay, s.stayChain)
		}
	}
}

// TestSpreadCheckUnequalChains: chains cut by a time budget differ in
// length; the spread check reads the same number of draws from each
// (it used to panic in ksd.BulkESS with "chains have unequal lengths",
// which ended a fit of exact zeros under -time 4m after four minutes).
func TestSpreadCheckUnequalChains(t *testing.T) {
	f, err := newFit(models.LGSSM{}, lgssmSimInternal(t), FitSettings{Exact: true, Gradient: FullGradient, Seed: 1, KSDDraws: -1, WarmUp: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := f.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	us := make([][]float64, 4)
	for c, n := range []int{300, 250, 0, 280} {
		for range n {
			for j := range f.dim {
				us[c] = append(us[c], f.prep.Mode[j]+0.05*rng.NormFloat64())
			}
		}
	}
	r, err := f.spreadCheck(ctx, us, 400, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ratio) != f.dim || math.IsNaN(r.ratio[0]) {
		t.Errorf("spread check on unequal chains: %+v", r)
	}
}
