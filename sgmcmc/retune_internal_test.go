package sgmcmc

import (
	"math"
	"testing"
)

// TestRetuneLangevin: after a sampling segment whose Langevin steps were
// accepted under langevinFloor = 0.3 of the time (at least
// langevinMinSteps = 10 of them per chain), retuneLangevin lowers the
// full-data chains' step by tuneMALA's rule h·exp(2(acc − 0.7)), for the
// next segment and the report; it leaves the step alone when the
// acceptance is at the floor or above, when the segment had too few
// Langevin steps, for random-walk local steps, for SGLD and for a step
// given in FitSettings.
func TestRetuneLangevin(t *testing.T) {
	const chains = 4
	enough := langevinMinSteps * chains
	low := mhCounts{acc: enough * 6 / 100, prop: enough, mh: true} // 6%
	for _, c := range []struct {
		name   string
		counts mhCounts
		grad   Gradient
		walk   bool
		user   float64
		want   float64
	}{
		{"6% accepted", low, FullGradient, false, 0, 0.7 * math.Exp(2*(float64(enough*6/100)/float64(enough)-langevinAccept))},
		{"at the floor", mhCounts{acc: int(langevinFloor * float64(enough)), prop: enough, mh: true}, FullGradient, false, 0, 0.7},
		{"too few steps", mhCounts{acc: 0, prop: enough - 1, mh: true}, FullGradient, false, 0, 0.7},
		{"random-walk steps", low, FullGradient, true, 0, 0.7},
		{"SGLD", low, ControlVariateGradient, false, 0, 0.7},
		{"the user's step", low, FullGradient, false, 0.7, 0.7},
	} {
		f := &fit{log: t.Logf}
		f.s.Chains, f.s.StepSize = chains, c.user
		f.prep.Gradient, f.prep.Walk, f.prep.StepSize = c.grad, c.walk, 0.7
		s := &sampling{h: 0.7, post: &Posterior{}}
		s.post.Preparation.StepSize = 0.7
		f.retuneLangevin(s, c.counts)
		if math.Abs(s.h-c.want) > 1e-12 || f.prep.StepSize != s.h || s.post.Preparation.StepSize != s.h {
			t.Errorf("%s: step %.4g (preparation %.4g, report %.4g), want %.4g", c.name, s.h, f.prep.StepSize, s.post.Preparation.StepSize, c.want)
		}
	}
	// Counts over one segment are the difference of the running totals.
	before := mhCounts{acc: 5, prop: 50, indAcc: 20, indProp: 400, mh: true}
	after := mhCounts{acc: 8, prop: 100, indAcc: 120, indProp: 800, mh: true}
	if acc, ind := after.since(before).rates(); math.Abs(acc-0.06) > 1e-12 || math.Abs(ind-0.25) > 1e-12 {
		t.Errorf("segment rates %.4g, %.4g, want 0.06, 0.25", acc, ind)
	}
	if acc, ind := (mhCounts{}).rates(); !math.IsNaN(acc) || !math.IsNaN(ind) {
		t.Errorf("rates without Metropolis–Hastings chains %g, %g, want NaN", acc, ind)
	}
}

// TestRetryWorth: importance sampling is retried after an adaptation
// window whose random-walk steps moved (MSV{D: 2} on DAX and CAC 40: 22%
// accepted, retryMinAccept 0.1), not after one whose chains stood still
// (MSV{D: 5}: 3%) or whose rate is unknown.
func TestRetryWorth(t *testing.T) {
	for _, c := range []struct {
		acc  float64
		want bool
	}{{0.22, true}, {retryMinAccept, true}, {0.03, false}, {math.NaN(), false}} {
		if got := retryWorth(c.acc); got != c.want {
			t.Errorf("retryWorth(%v) = %v, want %v", c.acc, got, c.want)
		}
	}
}
