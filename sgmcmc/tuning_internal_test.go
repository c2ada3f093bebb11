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

// TestCheapMore checks the run-on of cheap full-data chains (cheapIters,
// cheapWork) at the counted costs cheapMore's comment gives: the LGSSM on
// the S&P 500 returns (40.9 nominal seconds for cheapIters iterations of
// 4 chains) and the SVM on 201 returns (46) run on to cheapIters; the SVM
// on DAX (385) does not; nor do chains already there, SGLD, or a run with
// no draws yet.
func TestCheapMore(t *testing.T) {
	at := func(total float64, g Gradient, done int) int {
		f := &fit{s: FitSettings{Chains: 4}, log: func(string, ...any) {}}
		f.prep.Gradient = g
		f.prep.CostFull = total / float64(cheapIters*4)
		return f.cheapMore(done)
	}
	for _, c := range []struct {
		name  string
		total float64
		g     Gradient
		done  int
		want  int
	}{
		{"LGSSM, S&P 500", 40.9, FullGradient, 1, cheapIters - 1},
		{"SVM, 201 returns", 46, FullGradient, 1, cheapIters - 1},
		{"SVM, DAX", 385, FullGradient, 1, 0},
		{"already there", 40.9, FullGradient, cheapIters, 0},
		{"no draws yet", 40.9, FullGradient, 0, 0},
		{"SGLD", 40.9, ControlVariateGradient, 1, 0},
	} {
		if got := at(c.total, c.g, c.done); got != c.want {
			t.Errorf("%s: %d more iterations, want %d", c.name, got, c.want)
		}
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

// TestResidualWarning checks the bounds of the discretisation check
// (discretisationMaxResidual, discretisationMaxSDRatio,
// discretisationBand): a mean moved by more than 0.1 posterior sd, or an
// sd by more than a factor 1 ± 0.1, warns only when the move is also
// beyond 1.96 of its standard errors, so that 24 noisy importance weights
// do not warn on their own noise.
func TestResidualWarning(t *testing.T) {
	names := []string{"mu", "phi"}
	check := func(r, rse, sd, sdse float64) string {
		dc := &discretisation{DiscretisationReport: DiscretisationReport{Draws: 24,
			Residual: []float64{0, r}, ResidualSE: []float64{0.01, rse},
			ResidualSD: []float64{1, sd}, ResidualSDSE: []float64{0.01, sdse}}}
		return residualWarning(dc, names, "raise Points")
	}
	for _, c := range []struct {
		name             string
		r, rse, sd, sdse float64
		want             string // a substring of the warning; "" for none
	}{
		{"mean moved, precisely", 0.15, 0.05, 1, 0.01, "move the mean of phi by 0.15 ± 0.05"},
		{"mean moved, within its noise", 0.15, 0.08, 1, 0.01, ""},
		{"mean moved little", 0.09, 0.01, 1, 0.01, ""},
		{"sd widened, precisely", 0, 0.01, 1.12, 0.02, "change the sd of phi by a factor 1.12 ± 0.02"},
		{"sd widened, within its noise", 0, 0.01, 1.12, 0.07, ""},
		{"sd widened little", 0, 0.01, 1.08, 0.01, ""},
	} {
		got := check(c.r, c.rse, c.sd, c.sdse)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: warning %q, want one containing %q", c.name, got, c.want)
		}
	}
}

// TestAppliedCurve checks discretisationMaxCurve: a curvature b of the
// correction changes a posterior sd by 1/√(1 − b) on the quadratic model,
// 1.41 at the bound 0.5, beyond which the correction keeps its tilt only.
func TestAppliedCurve(t *testing.T) {
	if f := 1 / math.Sqrt(1-discretisationMaxCurve); math.Abs(f-1.414) > 1e-3 {
		t.Errorf("sd factor at the bound %.4f, want 1.414", f)
	}
	for _, c := range []struct{ b, want float64 }{{0.3, 0.3}, {-0.5, -0.5}, {0.5, 0.5}, {0.51, 0}, {-0.8, 0}} {
		if got := appliedCurve(c.b); got != c.want {
			t.Errorf("appliedCurve(%g) = %g, want %g", c.b, got, c.want)
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
		k, narrow := r.off()
		if want := c.want; (want == 0 && (k != 1 || !narrow)) || (want == -1 && k != -1) {
			t.Errorf("%s: off() = %d, %v", c.name, k, narrow)
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

// TestGridEdgeWarning checks maxGridEdgeShare: one refusal in 1,000
// proposals is tolerated, two warn.
func TestGridEdgeWarning(t *testing.T) {
	f := &fit{}
	f.isEdge = [2]int{1, 1000}
	if w := f.gridEdgeWarning(); w != "" {
		t.Errorf("1 of 1000: %q", w)
	}
	f.isEdge = [2]int{2, 1000}
	if w := f.gridEdgeWarning(); !strings.Contains(w, "2 of 1000 proposals") {
		t.Errorf("2 of 1000: %q", w)
	}
}
