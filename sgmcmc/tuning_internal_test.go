package sgmcmc

import (
	"errors"
	"math"
	"strings"
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

// TestTailStable checks maxTailNoise against the measurements beside it:
// the SVM on DAX (λ 25 on the 0.99 contour at h = 0.25: hλ 6.4, calibrated
// with the control variate) passes; GARCH on DAX (λ 491: hλ 123, whose
// chains ran off to φ → 1) and the quadrature filter's λ 464 there do
// not; and the bound is hλ = 10·2: h²λ at most ten times the diffusion's
// 2h.
func TestTailStable(t *testing.T) {
	for _, c := range []struct {
		name      string
		h, lambda float64
		want      bool
	}{
		{"SVM, DAX", 0.25, 25.6, true},
		{"GARCH, DAX, σ² nodes", 0.25, 491, false},
		{"GARCH, DAX, quadrature", 0.25, 464, false},
		{"at the bound", 0.25, 80, true},
		{"past it", 0.25, 80.5, false},
	} {
		if got := tailStable(c.h, c.lambda); got != c.want {
			t.Errorf("%s: hλ = %g: stable %v, want %v", c.name, c.h*c.lambda, got, c.want)
		}
		if got, want := c.h*c.h*c.lambda <= 10*2*c.h, c.want; got != want {
			t.Errorf("%s: h²λ ≤ 10·2h is %v, the rule says %v", c.name, got, want)
		}
	}
}

// TestFullExtensionFloors checks the four constants of fullExtension on
// 4 chains of one parameter, TargetESS 400, without a proposal to refit:
// the ESS model asks for (fullExtendMargin·400 − ESS)·(draws/ESS) more
// draws, at least fullESSExtend of the draws so far when the ESS is short,
// fullRhatExtend of them when only R-hat is, and fullMinExtend iterations
// per chain.
func TestFullExtensionFloors(t *testing.T) {
	ext := func(kept int, ess float64) int {
		f := &fit{s: FitSettings{Chains: 4, TargetESS: 400, Thin: 1}, dim: 1}
		post := &Posterior{U: make([][]float64, 4)}
		for c := range post.U {
			post.U[c] = make([]float64, kept/4)
		}
		return f.fullExtension(post, nil, ess, segment{}, nil)
	}
	for _, c := range []struct {
		name string
		kept int
		ess  float64
		want int
	}{
		{"R-hat short, ESS past the margin", 4000, 500, 2000 / 4},         // fullRhatExtend · 4000
		{"ESS just short", 4000, 390, 1000 / 4},                           // fullESSExtend · 4000 > (480 − 390)·4000/390
		{"ESS far short", 400, 100, 380 * 4 / 4},                          // (480 − 100)·4
		{"a short run", 40, 500, fullMinExtend},                           // 20 draws: fullMinExtend per chain
		{"ESS past the target, short of the margin", 4000, 450, 2000 / 4}, // R-hat is short: fullRhatExtend, over the margin's 30·4000/450 = 267 draws
	} {
		if got := ext(c.kept, c.ess); got != c.want {
			t.Errorf("%s: %d more iterations per chain, want %d", c.name, got, c.want)
		}
	}
}

// TestSettingsBounds checks the bounds that keep absurd counts from an
// allocation that never returns (maxChains, maxThin, maxNoiseProbes):
// each is allowed and one above it is an ErrSettings naming the field.
func TestSettingsBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		at, above FitSettings
	}{
		{"Chains", FitSettings{Chains: maxChains}, FitSettings{Chains: maxChains + 1}},
		{"Thin", FitSettings{Thin: maxThin}, FitSettings{Thin: maxThin + 1}},
		{"NoiseProbes", FitSettings{NoiseProbes: maxNoiseProbes}, FitSettings{NoiseProbes: maxNoiseProbes + 1}},
	} {
		if err := checkSettings(c.at, 3); err != nil {
			t.Errorf("%s at its bound: %v", c.name, err)
		}
		if err := checkSettings(c.above, 3); !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s above its bound: %v, want an ErrSettings naming it", c.name, err)
		}
	}
}

// TestSpreadCheckBounds checks the spread check's constants: it speaks
// when the chains' sd is below 1/(1 + spreadTol) of the importance
// sampling's and spreadZ standard errors short of it (narrow chains only:
// too wide ones are not cut tails); it costs spreadWork nominal seconds,
// within [spreadMin, spreadMax] log posteriors, or does not run.
func TestSpreadCheckBounds(t *testing.T) {
	for _, c := range []struct {
		name      string
		ratio, se float64
		want      int
	}{
		{"narrow, precisely", 0.80, 0.05, 0},
		{"narrow, within its noise", 0.80, 0.12, -1},
		{"within the tolerance", 0.88, 0.01, -1},
		{"wide", 1.30, 0.01, -1},
	} {
		r := &spreadResult{ratio: []float64{1, c.ratio}, se: []float64{0.01, c.se}}
		if k, want := r.off(), c.want; (want == 0 && k != 1) || (want == -1 && k != -1) {
			t.Errorf("%s: off() = %d", c.name, k)
		}
	}
	for _, c := range []struct {
		cost float64
		g    Gradient
		want int
	}{
		{0.001, FullGradient, spreadMax}, // 3000 affordable, capped
		{0.01, FullGradient, 300},
		{0.02, FullGradient, 0}, // 150 < spreadMin: no check
		{0.001, ControlVariateGradient, 0},
	} {
		f := &fit{}
		f.prep.CostFull, f.prep.Gradient = c.cost, c.g
		if got := f.spreadDraws(); got != c.want {
			t.Errorf("cost %g, %v: %d log posteriors, want %d", c.cost, c.g, got, c.want)
		}
	}
}
