package sgmcmc

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestStagedNoise: with AutoGradient and a deterministic filter the
// gradient noise is measured at noiseFirstProbes points first (and the
// control variate's tail), and the other NoiseProbes − 16 points are
// skipped only when the full-data score is then over noiseMargin times
// cheaper. The choice must be the one that all 96 points give; where the
// measurement stops early its noise must be exactly the first 16 points'
// (the same probes, not new ones), and where it goes on exactly that of
// one 96-point measurement. The LGSSM on 1000 simulated steps with its
// exact (Kalman) scorer is a clear case for the full-data score; the SVM
// on DAX with the grid filter is not (planned costs within a factor 2),
// so it measures every point, as before the staging.
func TestStagedNoise(t *testing.T) {
	if testing.Short() {
		t.Skip("two preparations")
	}
	dax := daxInternal(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		early bool
	}{
		{"garch (32 nodes) on DAX, exact scorer", models.GARCH{Nodes: 32}, dax, true},
		{"svm on DAX, grid filter", models.SVM{}, dax, false},
	} {
		f, err := newFit(c.model, c.data, FitSettings{Seed: 1, KSDDraws: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if !f.deterministic() || f.s.NoiseProbes != 96 {
			t.Fatalf("%s: deterministic %v, %d probes: not the staged case", c.name, f.deterministic(), f.s.NoiseProbes)
		}
		staged := f.prep
		staged.NoisePlain = slices.Clone(staged.NoisePlain)
		staged.NoiseCV = slices.Clone(staged.NoiseCV)

		points := f.noisePoints()
		first, err := f.probeNoise(ctx, points[:noiseFirstProbes], 1<<42)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.noiseAt(ctx, points, 1<<42); err != nil {
			t.Fatal(err)
		}
		if err := f.tailNoise(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.chooseGradient(); err != nil {
			t.Fatal(err)
		}
		all := f.prep
		lp, lc := f.lambdas()
		t.Logf("%s: staged choice %v, all 96 points %v; planned cost full %.3g s, plain %.3g s, control variate %.3g s",
			c.name, staged.Gradient, all.Gradient, f.planCost(FullGradient, lp, lc), f.planCost(PlainGradient, lp, lc), f.planCost(ControlVariateGradient, lp, lc))
		if staged.Gradient != all.Gradient {
			t.Errorf("%s: staged measurement chose %v, all points %v", c.name, staged.Gradient, all.Gradient)
		}
		want := all.NoisePlain
		if c.early {
			want = f.clippedNoise(first.plain, 1)
		}
		if !slices.Equal(staged.NoisePlain, want) {
			t.Errorf("%s (stops early: %v): staged plain noise %.4g, want %.4g", c.name, c.early, staged.NoisePlain, want)
		}
		if c.early && slices.Equal(staged.NoisePlain, all.NoisePlain) {
			t.Errorf("%s: the staged measurement did not stop early", c.name)
		}
	}
}

// TestCapExtension: an extension adds at most twice the iterations per
// chain so far, and a cut one allows one more segment (never past
// maxSegments).
func TestCapExtension(t *testing.T) {
	for _, c := range []struct{ iters, done, last, wantIters, wantLast int }{
		{1088, 150, 3, 300, 4},   // GARCH on DAX, seed 3: cut
		{316, 150, 3, 300, 4},    // just above twice
		{300, 150, 3, 300, 3},    // at the cap
		{202, 150, 3, 202, 3},    // below
		{5000, 100, 11, 200, 11}, // the last segment stays the last
	} {
		it, last := capExtension(c.iters, c.done, c.last)
		if it > extendMax*c.done {
			t.Errorf("capExtension(%d, %d, %d) = %d: more than extendMax times the %d done", c.iters, c.done, c.last, it, c.done)
		}
		if it != c.wantIters || last != c.wantLast {
			t.Errorf("capExtension(%d, %d, %d) = %d, %d; want %d, %d", c.iters, c.done, c.last, it, last, c.wantIters, c.wantLast)
		}
	}
}

// TestTargetLaplace: the first importance proposal's centre and scale are
// the Laplace approximation of N(u*, L Lᵀ) times the correction's
// exp(Σ a_k z_k + ½ b_k z_k²), z = L⁻¹(u − u*): in z each axis has
// precision 1 − b_k and mode a_k/(1 − b_k), so the mode is
// u* + L (a/(1 − b)) and the covariance L diag(1/(1 − b)) Lᵀ. The
// correction is built by newDiscretisation from a quadratic r sampled at
// u* ± L e_k and u*, as the fit measures it.
func TestTargetLaplace(t *testing.T) {
	p := 3
	mode := []float64{0.5, -1, 2}
	l := []float64{0.3, 0, 0, 0.1, 0.2, 0, -0.05, 0.02, 0.4}
	a, b := []float64{0.4, -0.2, 0.1}, []float64{-0.3, 0.2, 0}
	var pts [][]float64
	var fine, base []float64
	r := func(z []float64) float64 {
		v := 0.0
		for k := range z {
			v += a[k]*z[k] + 0.5*b[k]*z[k]*z[k]
		}
		return v
	}
	for k := range p {
		for _, s := range []float64{1, -1} {
			z := make([]float64, p)
			z[k] = s
			pts = append(pts, linalg.LMul(mode, l, z))
			fine, base = append(fine, 7+r(z)), append(base, 7)
		}
	}
	pts = append(pts, mode)
	fine, base = append(fine, 7), append(base, 7)
	dc, err := newDiscretisation(pts, fine, base, mode, l)
	if err != nil {
		t.Fatal(err)
	}
	f := &fit{dim: p, prep: Preparation{Mode: mode, Chol: l, dc: dc}}
	m, c := f.targetLaplace()
	zm := make([]float64, p)
	for k := range zm {
		zm[k] = a[k] / (1 - b[k])
	}
	wantMode := linalg.LMul(mode, l, zm)
	for i := range p {
		if math.Abs(m[i]-wantMode[i]) > 1e-12 {
			t.Errorf("mode[%d] = %.15g, want %.15g", i, m[i], wantMode[i])
		}
		for j := range p {
			var got, want float64
			for k := range p {
				got += c[i*p+k] * c[j*p+k]
				want += l[i*p+k] * l[j*p+k] / (1 - b[k])
			}
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("cov[%d][%d] = %.15g, want %.15g", i, j, got, want)
			}
		}
	}
	if !slices.Equal(f.prep.Mode, []float64{0.5, -1, 2}) {
		t.Errorf("targetLaplace changed the preparation's mode: %v", f.prep.Mode)
	}
}

// TestPlanCounted: the plan (chooseGradient) must not depend on how long
// the noise probes happened to take, or the same seed gives different
// draws on different runs: the quick start's LGSSM fit measured its
// control variate at 0.01 ms on three runs and 0.06 ms on a fourth, which
// switched that run from control-variate SGLD to full-data chains. So the
// control variate's cost is counted (cvFilters window filters per
// gradient), and only ratios of costs may enter the choice: scaling the
// one timed cost, CostPlain, by 1/100 or 100 must leave it unchanged.
func TestPlanCounted(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
	}{
		{"lgssm, simulated, Kalman windows", models.LGSSM{}, lgssmSimInternal(t)},
		{"svm on DAX, grid filter", models.SVM{}, daxInternal(t)},
	} {
		if testing.Short() && c.name != "lgssm, simulated, Kalman windows" {
			continue
		}
		f, err := newFit(c.model, c.data, FitSettings{Seed: 1, KSDDraws: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.prepare(ctx); err != nil {
			t.Fatal(err)
		}
		pr := &f.prep
		if math.Abs(pr.CostCV/(f.cvFilters()*pr.CostPlain)-1) > 1e-12 || !(pr.CostPlain > 0) {
			t.Errorf("%s: control variate %.4g s per gradient, plain %.4g s: want %v times (to rounding)", c.name, pr.CostCV, pr.CostPlain, f.cvFilters())
		}
		chosen, plain := pr.Gradient, pr.CostPlain
		for _, k := range []float64{0.01, 100} {
			pr.CostPlain, pr.CostCV = k*plain, k*f.cvFilters()*plain
			if err := f.chooseGradient(); err != nil {
				t.Fatal(err)
			}
			if pr.Gradient != chosen {
				t.Errorf("%s: with the plain gradient's cost × %v the plan is %v, not %v", c.name, k, pr.Gradient, chosen)
			}
		}
		t.Logf("%s: %v gradients, control variate %v filters", c.name, chosen, f.cvFilters())
	}
}

// TestFixedIterationsChoice: a fixed Iterations does not change which
// estimator the fit chooses: the estimators are compared at the same
// effective draws. Compared at equal iterations, control-variate SGLD
// looked cheaper for the LGSSM on the S&P 500 returns, whose chains at
// Iterations 2,000 then had R-hat 2.65 and sds 0.25–0.55 of the Kalman
// posterior's.
func TestFixedIterationsChoice(t *testing.T) {
	if testing.Short() {
		t.Skip("a preparation on 17,055 observations")
	}
	f, err := newFit(models.LGSSM{}, testdataSet(t, "sp500_returns.csv"), FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	planned := f.prep.Gradient
	for _, n := range []int{800, 2000, 10000} {
		f.s.Iterations = n
		if err := f.chooseGradient(); err != nil {
			t.Fatal(err)
		}
		if f.prep.Gradient != planned {
			t.Errorf("Iterations %d: %v, the planned run's choice is %v", n, f.prep.Gradient, planned)
		}
	}
}

// TestFullOnly: where the chains run on full-data scores without a choice
// to make, the preparation probes no gradient noise but still counts the
// full-data score's cost, which sets how far cheap chains run on
// (cheapMore), how far they are extended and how often they are
// checkpointed. With Gradient FullGradient the LGSSM's counted cost must
// be the one AutoGradient's probes count (it was 0: every scorer looked
// free, and Laplace importance sampling of the S&P 500 returns, 148 ms a
// score, ran on towards 10,000 iterations per chain). On Laplace
// importance sampling (MSV{D: 1}, the first 300 DAX returns) AutoGradient
// must take full-data chains without probing.
func TestFullOnly(t *testing.T) {
	if raceEnabled {
		// Four preparations, three of them on Laplace importance
		// sampling: 5 s without the race detector, 49 s with it.
		t.Skip("decisions of four whole preparations: run without -race")
	}
	ctx := context.Background()
	lgssm := testdataSet(t, "lgssm_sim.csv")
	cost := map[Gradient]float64{}
	for _, g := range []Gradient{AutoGradient, FullGradient} {
		f, err := newFit(models.LGSSM{}, lgssm, FitSettings{Seed: 1, KSDDraws: -1, Gradient: g})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if f.fullOnly() != (g == FullGradient) {
			t.Errorf("LGSSM, Gradient %v: fullOnly %v", g, f.fullOnly())
		}
		cost[g] = f.prep.CostFull
	}
	if !(cost[FullGradient] > 0) || math.Abs(cost[FullGradient]-cost[AutoGradient]) > 1e-12*cost[AutoGradient] {
		t.Errorf("LGSSM: counted cost of a full-data score %g with Gradient full, %g with the probes of auto; want the same, > 0", cost[FullGradient], cost[AutoGradient])
	}

	dax := daxInternal(t)
	short := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: dax.Sequences[0].Y[:300]}}}
	f, err := newFit(models.MSV{D: 1}, short, FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if !f.onLaplace() || !f.fullOnly() {
		t.Fatalf("MSV{D: 1}: on Laplace %v, fullOnly %v", f.onLaplace(), f.fullOnly())
	}
	if f.prep.Gradient != FullGradient || !(f.prep.CostFull > 0) {
		t.Errorf("MSV{D: 1}: gradient %v, counted cost of a full-data score %g; want full, > 0", f.prep.Gradient, f.prep.CostFull)
	}
	for i, v := range f.prep.NoisePlain {
		if v != 0 || f.prep.NoiseCV[i] != 0 {
			t.Fatalf("MSV{D: 1}: noise probed (plain %v, control variate %v)", f.prep.NoisePlain, f.prep.NoiseCV)
		}
	}
	if w := f.laplaceGradientWarning(); w != "" {
		t.Errorf("MSV{D: 1} with the default gradient warns %q", w)
	}
	// A subsequence gradient the user chooses still runs, with a warning.
	f, err = newFit(models.MSV{D: 1}, short, FitSettings{Seed: 1, KSDDraws: -1, Gradient: ControlVariateGradient})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if f.prep.Gradient != ControlVariateGradient || !strings.Contains(f.laplaceGradientWarning(), "not its derivatives") {
		t.Errorf("MSV{D: 1} with Gradient control-variate: gradient %v, warning %q", f.prep.Gradient, f.laplaceGradientWarning())
	}
}
