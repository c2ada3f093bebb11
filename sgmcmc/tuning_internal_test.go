package sgmcmc

import (
	"math"
	"testing"
)

// TestSGLDStepRule checks what sgldStep's comment claims: with h =
// min(sgldMaxStep, 1/(1 + λ)) the injected noise covariance along the
// largest noise eigenvector, 2h − h² − h²λ, keeps at least half of
// SGLD's 2h for every λ, where the cap alone (h = sgldMaxStep at any λ)
// leaves none above λ = 2/h − 1 = 7; and the cap binds only for λ ≤ 3,
// where the chain's autocorrelation time (2 − h)/h is 7.
func TestSGLDStepRule(t *testing.T) {
	for _, lambda := range []float64{0, 0.5, 2.9, 3, 10, 100, 1e4} {
		h := sgldStep(lambda)
		if inj := 2*h - h*h - h*h*lambda; inj < h*(1-1e-12) {
			t.Errorf("λ = %g: h = %g injects %g, less than half of 2h", lambda, h, inj)
		}
		capped := sgldMaxStep
		if lambda > 2/capped-1 {
			if inj := 2*capped - capped*capped - capped*capped*lambda; inj >= 0 {
				t.Errorf("λ = %g: the capped step alone still injects %g ≥ 0", lambda, inj)
			}
		}
		if wantCap := lambda <= 1/sgldMaxStep-1; (h == sgldMaxStep) != wantCap {
			t.Errorf("λ = %g: h = %g, capped %v, want capped %v", lambda, h, h == sgldMaxStep, wantCap)
		}
	}
	if iat := sgldIAT(sgldMaxStep); math.Abs(iat-7) > 1e-12 {
		t.Errorf("autocorrelation time at the largest step %g, want 7", iat)
	}
}

// TestStuckStay checks the stay rule's trade (stayLimit, stayFrac): in a
// short segment a stay of stayLimit iterations asks for more, in a long
// one the same stay weighs little and only stayFrac of the segment does.
func TestStuckStay(t *testing.T) {
	for _, c := range []struct {
		stay, iters int
		want        bool
	}{
		{stayLimit - 1, 500, false},
		{stayLimit, 500, true},            // 4% of 500
		{stayLimit, 25000, false},         // 0.08%: the LGSSM's long runs
		{499, 25000, false},               // just under 2%
		{500, 25000, true},                // 2%
		{38, 400, true}, {50, 1000, true}, // the LGSSM on the S&P 500: 5–10% of their segments
	} {
		if got := stuckStay(c.stay, c.iters); got != c.want {
			t.Errorf("stay %d of %d iterations: stuck %v, want %v", c.stay, c.iters, got, c.want)
		}
	}
}
