package sgmcmc

import (
	"math"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/amis"
)

// planFit is a deterministic two-parameter fit whose full-data score
// costs 10 subsequence gradients of 1 ms, with noise eigenvalue lambda
// for both subsequence estimators.
func planFit(lambda float64, ess int) *fit {
	f := &fit{dim: 2, total: 1000, gset: gradient.Settings{Exact: true, Subsequencer: gradient.Subsequencer{S: 100}}, s: FitSettings{Chains: 4, TargetESS: ess}}
	f.prep.Chol = []float64{1, 0, 0, 1}
	f.prep.NoisePlain = []float64{lambda, 0, 0, lambda}
	f.prep.NoiseCV = []float64{lambda, 0, 0, lambda}
	f.prep.CostPlain, f.prep.CostCV = 0.001, 0.001
	return f
}

// TestPlanCost: the plan Fit compares the estimators by, in nominal
// seconds of one worker, at hand-computed values. Full-data chains:
// amis.MinRounds = 4 rounds of 64 points, then 4 chains of at least
// fullMinIters = 200 iterations and 1.25·TargetESS autocorrelation times
// 2(2·planHold − 1)/isIndependence = 4 (planHold 1.4, isIndependence
// 0.9), at 10 ms each. SGLD: adaptWindows = 3 windows of ten
// autocorrelation times (2 − h)/h (300 to 3,000 iterations), then at
// least sgldMinIters = 500 iterations and 1.25·TargetESS
// autocorrelation times, at 1 ms each.
func TestPlanCost(t *testing.T) {
	if tau := amis.IndependenceIAT(planHold, isIndependence); math.Abs(tau-4) > 1e-12 {
		t.Errorf("full-data chains planned at τ = %g, want 4", tau)
	}
	if 1.25*100*4/4 >= fullMinIters || 1.25*100*7/4 >= sgldMinIters || adaptWindows != 3 {
		t.Fatal("the TargetESS 100 cases no longer reach the floors, or the windows are not three")
	}
	for _, c := range []struct {
		name   string
		lambda float64
		ess    int
		g      Gradient
		want   float64
	}{
		{"full, TargetESS 400", 0, 400, FullGradient, (256 + 4*500) * 0.01},
		{"full, TargetESS 100 (fullMinIters)", 0, 100, FullGradient, (256 + 4*200) * 0.01},
		{"plain, λ 0 (h 0.25, τ 7)", 0, 400, PlainGradient, 4 * (3*300 + 875) * 0.001},
		{"plain, λ 0, TargetESS 100 (sgldMinIters)", 0, 100, PlainGradient, 4 * (3*300 + 500) * 0.001},
		{"control variate, λ 99 (h 0.01, τ 199)", 99, 400, ControlVariateGradient, 4 * (3*1990 + 24875) * 0.001},
		{"plain, λ 999 (windows of 3000)", 999, 400, PlainGradient, 4 * (3*3000 + 249875) * 0.001},
	} {
		f := planFit(c.lambda, c.ess)
		lp, lc := f.lambdas()
		if got := f.planCost(c.g, lp, lc); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s: planned %.6g s, want %.6g s", c.name, got, c.want)
		}
	}
}

// TestFullClearlyCheaper: the noise measurement stops after its first
// points when the full-data score's plan costs less than 1/noiseMargin
// of both subsequence estimators': at λ = 99 they plan 48.8 s against
// its 10.6 s (4.6 times), at λ = 79 39.0 s (3.7 times), which measures
// on. Only with AutoGradient.
func TestFullClearlyCheaper(t *testing.T) {
	for _, c := range []struct {
		lambda float64
		g      Gradient
		want   bool
	}{
		{99, AutoGradient, true},
		{79, AutoGradient, false},
		{99, PlainGradient, false},
	} {
		f := planFit(c.lambda, 100)
		f.s.Gradient = c.g
		lp, lc := f.lambdas()
		full, plain := f.planCost(FullGradient, lp, lc), f.planCost(PlainGradient, lp, lc)
		if c.g == AutoGradient && (plain > noiseMargin*full) != c.want {
			t.Errorf("λ %g: plain %.4g s over full %.4g s is %.2f, on the wrong side of noiseMargin %d", c.lambda, plain, full, plain/full, noiseMargin)
		}
		if got := f.fullClearlyCheaper(); got != c.want {
			t.Errorf("λ %g, %v: clearly cheaper %v (full %.4g s, plain %.4g s), want %v", c.lambda, c.g, got, full, plain, c.want)
		}
	}
}
