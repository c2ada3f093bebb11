package sgmcmc

import (
	"math"
	"testing"
)

// TestSGLDStepCap: the SGLD step is 1/(1 + κλ) but never above
// sgldMaxStep, so the cap binds while κλ < 1/sgldMaxStep − 1 = 3, where
// it sets the autocorrelation time (2 − h)/h = 7. At every step the rule
// gives, the injected covariance 2h − h² − h²κλ keeps at least half of
// SGLD's 2h.
func TestSGLDStepCap(t *testing.T) {
	for _, kl := range []float64{0, 0.5, 1, 3, 3.5, 10, 100, 1e4} {
		h := sgldStep(kl)
		if h > sgldMaxStep {
			t.Errorf("sgldStep(%g) = %g, above sgldMaxStep %g", kl, h, sgldMaxStep)
		}
		if capped := kl <= 1/sgldMaxStep-1; capped != (h == sgldMaxStep) {
			t.Errorf("sgldStep(%g) = %g: capped %v, want %v", kl, h, h == sgldMaxStep, capped)
		}
		if kept := 2*h - h*h - h*h*kl; kept < h*(1-1e-12) {
			t.Errorf("sgldStep(%g) = %g keeps %g of the noise 2h = %g, less than half", kl, h, kept, 2*h)
		}
	}
	if got := sgldIAT(sgldStep(0)); got != 7 {
		t.Errorf("autocorrelation time at the cap %g, want 7", got)
	}
}

// TestMALAStart: FullGradient's chains start the adaptation at
// malaStart, and tuneMALA (h·e^{2(acc − 0.7)} within [0.05, 1]) can
// reach either end of its range from there within the adaptWindows
// windows: at acceptance 0 the lower bound, at 1 the upper one (any
// start in [e^{−1.8}, 1] = [0.17, 1] can). From a start of 0.1 it could
// not reach 1 (0.1·e^{1.8} = 0.6). A step the user gave, or one tuned by
// an earlier window, is kept.
func TestMALAStart(t *testing.T) {
	newFull := func(step float64) *fit {
		f := &fit{dim: 1, log: t.Logf, prep: Preparation{Gradient: FullGradient, Chol: []float64{1}, NoisePlain: []float64{0}, NoiseCV: []float64{0}, StepSize: step}}
		f.setStep()
		return f
	}
	if f := newFull(0); f.prep.StepSize != malaStart {
		t.Fatalf("first step %g, want malaStart %g", f.prep.StepSize, malaStart)
	}
	if f := newFull(0.3); f.prep.StepSize != 0.3 {
		t.Errorf("a tuned step 0.3 became %g", f.prep.StepSize)
	}
	reach := func(start, acc float64) float64 {
		f := newFull(start)
		for range adaptWindows {
			f.tuneMALA(acc, 0)
		}
		return f.prep.StepSize
	}
	if lo, hi := reach(malaStart, 0), reach(malaStart, 1); lo != 0.05 || hi != 1 {
		t.Errorf("from malaStart %g, %d windows reach %g (acceptance 0) and %g (acceptance 1); want 0.05 and 1", malaStart, adaptWindows, lo, hi)
	}
	if hi := reach(0.1, 1); hi >= 1 {
		t.Errorf("from 0.1, %d windows at acceptance 1 reach %g: the test no longer tells the start apart", adaptWindows, hi)
	}
}

// TestCheapMore: FullGradient's chains run on to cheapIters iterations
// per chain (or MinIterations) when that costs less than cheapWork
// nominal seconds of one worker. The comment's planned costs of 10,000
// iterations of four chains: the LGSSM on the S&P 500 40.9 s and the SVM
// on 201 returns 46 s run on; the SVM on DAX (385 s) does not.
func TestCheapMore(t *testing.T) {
	for _, c := range []struct {
		name       string
		work       float64 // nominal seconds of cheapIters iterations of 4 chains
		grad       Gradient
		minIters   int
		done, want int
	}{
		{"lgssm on the S&P 500", 40.9, FullGradient, 0, 200, cheapIters - 200},
		{"svm on 201 returns", 46, FullGradient, 0, 200, cheapIters - 200},
		{"svm on DAX", 385, FullGradient, 0, 200, 0},
		{"MinIterations", 385, FullGradient, 1000, 200, 800},
		{"done", 40.9, FullGradient, 0, cheapIters, 0},
		{"no draws yet", 40.9, FullGradient, 0, 0, 0},
		{"SGLD", 1, PlainGradient, 0, 200, 0},
	} {
		f := &fit{s: FitSettings{Chains: 4, MinIterations: c.minIters}, log: t.Logf}
		f.prep.Gradient, f.prep.CostFull = c.grad, c.work/(4*cheapIters)
		if got := f.cheapMore(c.done); got != c.want {
			t.Errorf("%s: cheapMore(%d) = %d, want %d", c.name, c.done, got, c.want)
		}
	}
	if 40.9 >= cheapWork || 46 >= cheapWork || 385 < cheapWork {
		t.Errorf("cheapWork %v no longer separates the cases its comment names", float64(cheapWork))
	}
}

// TestStuckStay: a segment's longest stay asks for an extension when it
// is at least stayLimit draws and stayFrac of the segment: the LGSSM on
// the S&P 500 (stays of 38–50, 5–20% of their segments) does, GARCH on
// DAX (4–7) does not, and after 25,000 iterations a stay of 20 (0.08%)
// does not.
func TestStuckStay(t *testing.T) {
	for _, c := range []struct {
		stay, iters int
		want        bool
	}{
		{38, 760, true}, {50, 250, true}, {7, 150, false}, {4, 1200, false},
		{20, 100, true}, {19, 100, false}, {20, 1000, true},
		{20, 25000, false}, {499, 25000, false}, {500, 25000, true},
		{stayLimit, int(stayLimit / stayFrac), true}, {stayLimit, int(stayLimit/stayFrac) + 50, false},
	} {
		if got := stuckStay(c.stay, c.iters); got != c.want {
			t.Errorf("stuckStay(%d, %d) = %v, want %v", c.stay, c.iters, got, c.want)
		}
	}
	us := [][]float64{{1, 1, 2, 2, 2, 3}, {5, 5, 5, 5, 6, 7}}
	if n, c := longestStay(us, 1); n != 4 || c != 1 {
		t.Errorf("longestStay = %d in chain %d, want 4 in chain 1", n, c)
	}
}

// TestExtensionsSpent: the sampling extends past its planned segments
// until maxSegments segments or cheapSampling nominal seconds of
// sampling, whichever comes first.
func TestExtensionsSpent(t *testing.T) {
	f := &fit{s: FitSettings{Chains: 4}}
	f.prep.Gradient, f.prep.CostFull = FullGradient, 0.01 // cheapSampling at 3,000 iterations per chain
	for _, c := range []struct {
		seg, last, done int
		want            bool
	}{
		{1, 2, 100000, false},            // planned segments first
		{2, 2, 1000, false},              // cheap: extend
		{maxSegments - 1, 2, 1000, true}, // the last segment
		{2, 2, 3000, true},               // 120 nominal seconds
		{2, 2, 2999, false},
		{2, 2, int(cheapSampling / (4 * 0.01)), true},
	} {
		if got := f.extensionsSpent(c.seg, c.last, c.done); got != c.want {
			t.Errorf("extensionsSpent(%d, %d, %d) = %v, want %v", c.seg, c.last, c.done, got, c.want)
		}
	}
}

// TestFullExtension: an extension of FullGradient's chains adds the
// fullExtendMargin·TargetESS − ess effective draws the draws so far
// project, at least fullESSExtend of the draws so far when the ESS falls
// short, fullRhatExtend of them when only R-hat does, and at least
// fullMinExtend iterations per chain; thinned chains run Thin times as
// many iterations.
func TestFullExtension(t *testing.T) {
	const chains, target = 4, 400
	ext := func(perChain int, ess float64, thin int) int {
		f := &fit{dim: 1, s: FitSettings{Chains: chains, TargetESS: target, Thin: thin}}
		post := &Posterior{U: make([][]float64, chains)}
		for c := range post.U {
			post.U[c] = make([]float64, perChain)
		}
		return f.fullExtension(post, nil, ess, segment{}, nil)
	}
	kept := 4 * 300.0
	projected := func(ess float64) int {
		return int(math.Ceil((fullExtendMargin*target - ess) * kept / ess / chains))
	}
	for _, c := range []struct {
		name       string
		ess        float64
		thin, want int
	}{
		{"ESS 200", 200, 1, projected(200)}, // 420 per chain, above the floor
		{"ESS 200, Thin 2", 200, 2, 2 * projected(200)},
		{"ESS 396", 396, 1, 75},     // a quarter of 1,200 draws: the projection's 64 is below it
		{"R-hat only", 500, 1, 150}, // half of them
	} {
		if got := ext(300, c.ess, c.thin); got != c.want {
			t.Errorf("%s: %d iterations per chain, want %d (fullExtendMargin %g, fullESSExtend %g, fullRhatExtend %g)", c.name, got, c.want, fullExtendMargin, fullESSExtend, fullRhatExtend)
		}
	}
	if projected(200) != 420 || projected(396) >= 75 {
		t.Errorf("projections %d and %d: the cases no longer test what they say", projected(200), projected(396))
	}
	if got := ext(20, 500, 1); got != 50 {
		t.Errorf("short chains: %d iterations per chain, want 50 (fullMinExtend %d)", got, fullMinExtend)
	}
}
