package sgmcmc

import (
	"math"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/amis"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// TestFirstSegment: the first segment runs 1.25·TargetESS
// autocorrelation times per chain (4 chains, TargetESS 400), at least
// 500 iterations for SGLD (sgldMinIters) and 200 for full-data chains
// (fullMinIters), at most 50,000; full-data chains with an
// importance-sampled proposal run isPilot = 150 first, to refit it, and
// may take one more segment.
func TestFirstSegment(t *testing.T) {
	for _, c := range []struct {
		name        string
		g           Gradient
		iat         float64
		proposal    bool
		iters, last int
	}{
		{"SGLD, τ 2", PlainGradient, 2, false, 500, 2},
		{"SGLD, τ 20", ControlVariateGradient, 20, false, 2500, 2},
		{"SGLD, τ 10⁴", PlainGradient, 1e4, false, 50000, 2},
		{"full, τ 1", FullGradient, 1, false, 200, 2},
		{"full, τ 4", FullGradient, 4, false, 500, 2},
		{"full, τ 4, importance-sampled proposal", FullGradient, 4, true, 150, 3},
		{"full, τ 1, importance-sampled proposal", FullGradient, 1, true, 150, 3},
	} {
		f := &fit{s: FitSettings{Chains: 4, TargetESS: 400}}
		f.prep.Gradient, f.prep.IAT = c.g, c.iat
		if c.proposal {
			f.prep.proposal = []proposalComponent{{Weight: 1}}
		}
		iters, last := f.firstSegment()
		if iters != c.iters || last != c.last {
			t.Errorf("%s: %d iterations per chain, last segment %d; want %d, %d", c.name, iters, last, c.iters, c.last)
		}
	}
	if isPilot >= fullMinIters {
		t.Errorf("isPilot %d is not below fullMinIters %d: the pilot segment would not be shorter", isPilot, fullMinIters)
	}
}

// TestCVTailStable: AutoGradient keeps the control variate only while
// hλ on the 0.99 contour is at most maxTailNoise = 20, at the values its
// comment measured: GARCH on DAX (λ 491 at step 0.25: hλ 123, its chains
// ran off) is refused, the SVM on DAX (λ 25: hλ 6.4) kept.
func TestCVTailStable(t *testing.T) {
	if tailStable(0.25, 491) {
		t.Error("GARCH on DAX (hλ 123) kept")
	}
	if !tailStable(0.256, 25) {
		t.Error("the SVM on DAX (hλ 6.4) refused")
	}
	if !tailStable(0.25, 80) || tailStable(0.25, 81) {
		t.Errorf("the bound is not hλ = %d", maxTailNoise)
	}
}

// TestCostWeights: the counted cost of a window's filtering reproduces
// the measurements the weights were calibrated on (within 5%): a
// particle filter of 1,000 particles over 60 rows 1.24 ms
// (particleStepNS), the SVM's 80-node grid over DAX's 1,859 returns
// 10.8 ms (gridNodeNS), the LGSSM's Kalman score over the S&P 500's
// 17,055 returns 1.01 ms (kalmanStepNS, d = 1); the forward-only smoother
// with sorted resampling (the control-variate chains' filter with
// CVParticles) over the same 60 rows, from BenchmarkFilter's ratios to the
// 1,000-particle filter on one machine (2.1, 8.0 and 33 times its, the means of two runs;
// 1.24 ms; pairStepNS), within 10%.
func TestCostWeights(t *testing.T) {
	for _, c := range []struct {
		name   string
		f      *fit
		set    gradient.Settings
		obs    float64
		ms     float64
		weight float64
	}{
		{"particles", &fit{model: models.SVM{}}, gradient.Settings{PF: pf.Settings{N: 1000}}, 60, 1.24, particleStepNS},
		{"grid", &fit{model: models.SVM{}}, gradient.Settings{Grid: pf.Grid{Nodes: 80}}, 1859, 10.8, gridNodeNS},
		{"kalman", &fit{model: models.LGSSM{}}, gradient.Settings{Exact: true}, 17055, 1.01, kalmanStepNS},
		{"forward-only N=50", &fit{model: models.SVM{}}, gradient.Settings{PF: fwdOnly(50)}, 60, 2.1 * 1.24, pairStepNS},
		{"forward-only N=100", &fit{model: models.SVM{}}, gradient.Settings{PF: fwdOnly(100)}, 60, 8.0 * 1.24, pairStepNS},
		{"forward-only N=200", &fit{model: models.SVM{}}, gradient.Settings{PF: fwdOnly(200)}, 60, 33 * 1.24, pairStepNS},
	} {
		got := 1e-6 * c.obs * c.f.obsWork(c.set)
		tol := 0.05
		if c.set.PF.Smoother == pf.ForwardOnly {
			tol = 0.1
		}
		if math.Abs(got/c.ms-1) > tol {
			t.Errorf("%s (weight %v ns): %.3g ms counted, %.3g ms measured", c.name, c.weight, got, c.ms)
		}
	}
}

// TestUseIS: after importance sampling the full-data chains start with
// Langevin steps of isLangevinStep (unless the user set StepSize) and
// take independence proposals isIndependence of the time, or surrogate
// transitions 1 − surrogate.WalkShare of the time; the first segment is
// planned from the proposal's holding time.
func TestUseIS(t *testing.T) {
	q := tmix.New([]float64{1}, [][]float64{{0, 0}}, [][]float64{{1, 0, 0, 1}})
	for _, c := range []struct {
		name      string
		step      float64
		sur       *surrogate.Surrogate
		wantStep  float64
		wantShare float64
	}{
		{"independence", 0, nil, isLangevinStep, isIndependence},
		{"user's step (applied by step, not here)", 0.3, nil, 0, isIndependence},
		{"surrogate", 0, &surrogate.Surrogate{Hold: 1.2}, isLangevinStep, 1 - surrogate.WalkShare},
	} {
		f := &fit{dim: 2, log: t.Logf, s: FitSettings{Chains: 4, StepSize: c.step}}
		f.useIS(&amis.Result{Proposal: q, Chol: []float64{1, 0, 0, 1}, Hold: 1.4, Evals: 256, Sur: c.sur})
		pr := &f.prep
		if pr.StepSize != c.wantStep || pr.Independence != c.wantShare {
			t.Errorf("%s: step %g, independence share %g; want %g, %g", c.name, pr.StepSize, pr.Independence, c.wantStep, c.wantShare)
		}
		if want := amis.IndependenceIAT(1.4, c.wantShare); math.Abs(pr.IAT-want) > 1e-12 {
			t.Errorf("%s: planned τ %g, want %g", c.name, pr.IAT, want)
		}
	}
}

// TestSurrogateWorth: the chains use the surrogate only when its
// holding time is at least 5% shorter than the proposal's
// (surrogate.Gain = 0.95): 1.3 against 1.5 is, 1.45 against 1.5 is not.
func TestSurrogateWorth(t *testing.T) {
	for _, c := range []struct {
		hold, q float64
		want    bool
	}{
		{1.3, 1.5, true}, {1.45, 1.5, false}, {1.42, 1.5, true}, {1.43, 1.5, false}, {2, 1.5, false},
		{surrogate.Gain * 4, 4, true},
	} {
		if got := surrogateWorth(c.hold, c.q); got != c.want {
			t.Errorf("holding time %g against the proposal's %g: used %v, want %v", c.hold, c.q, got, c.want)
		}
	}
}

// fwdOnly is the control-variate chains' filter with CVParticles n.
func fwdOnly(n int) pf.Settings {
	return pf.Settings{N: n, Smoother: pf.ForwardOnly, Sorted: true}
}
