package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/amis"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// measureNoise estimates the covariance V of the gradient noise of both
// estimators, in u, from pairs of evaluations with independent windows and
// particles at draws u = u* + L z, z ~ N(0, I) (V = ½ Cov(d) for the
// difference d of two independent estimates), and chooses the estimator.
func (f *fit) measureNoise(ctx context.Context) error {
	pr := &f.prep
	if f.fullOnly() {
		// No noise, and no choice to make. The costs are counted, not
		// probed: the full-data score's sets how far cheap chains run on
		// (cheapMore), how far they are extended and how often they are
		// checkpointed; 0 would make every scorer look free (Laplace
		// importance sampling of the S&P 500 returns, 148 ms a score, ran
		// on towards 10,000 iterations per chain).
		pr.NoisePlain, pr.NoiseCV = make([]float64, f.dim*f.dim), make([]float64, f.dim*f.dim)
		pr.CostPlain, pr.CostCV = f.windowCost(f.gset), f.cvFilters()*f.windowCost(f.cvset)
		return f.chooseGradient()
	}
	points := f.noisePoints()
	if f.s.Gradient == AutoGradient && f.deterministic() && len(points) > noiseFirstProbes {
		// Staged: the first points, and the rest unless the full-data
		// score is clearly cheaper (the same probes as in one call).
		first, err := f.probeNoise(ctx, points[:noiseFirstProbes], noiseStream)
		if err != nil {
			return err
		}
		// The control variate's plan rests on its tail noise.
		if err := f.tailNoise(ctx); err != nil {
			return err
		}
		if f.fullClearlyCheaper() {
			f.log("gradient noise measured at %d of %d points: the full-data score is over %d times cheaper than either subsequence gradient", noiseFirstProbes, len(points), noiseMargin)
			return f.chooseGradient()
		}
		rest, err := f.probeNoise(ctx, points[noiseFirstProbes:], noiseStream+noiseFirstProbes)
		if err != nil {
			return err
		}
		f.setNoise(first.merge(rest))
		return f.chooseGradient()
	}
	if err := f.noiseAt(ctx, points, noiseStream); err != nil {
		return err
	}
	if err := f.tailNoise(ctx); err != nil {
		return err
	}
	return f.chooseGradient()
}

// noisePoints returns measureNoise's NoiseProbes points u* + L z, z ~
// N(0, I).
func (f *fit) noisePoints() [][]float64 {
	pr := &f.prep
	rng := rand.New(rand.NewPCG(f.s.Seed, noiseStream))
	points := make([][]float64, f.s.NoiseProbes)
	for k := range points {
		z := make([]float64, f.dim)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		points[k] = linalg.LMul(pr.Mode, pr.Chol, z)
	}
	return points
}

// Staged noise measurement: with AutoGradient and a deterministic filter,
// the noise is first measured at noiseFirstProbes of the NoiseProbes
// points (and the control variate's tail, tailNoise); when the full-data
// score's planned cost is then below 1/noiseMargin of both subsequence
// estimators', the rest would not change the choice and is skipped. Measured plan ratios: GARCH on DAX 21 and on the S&P 500 9 in
// favour of the full-data score with its σ² node filter (6 of its 20 s
// preparation were probes), on DAX 27 with the quadrature filter
// (go run ./examples/fit -model garch -v: 4.09e+03 s plain against 151 s
// full-data), the SVM on DAX 2 (measured in full, as before). A λ from 16
// probes is off by far less than 4 (heavy-tailed noise is clipped,
// clippedNoise), and an underestimate only favours the subsequence
// estimators.
const (
	noiseFirstProbes = 16
	noiseMargin      = 4
)

// fullClearlyCheaper reports whether the full-data score's planned cost
// is below 1/noiseMargin of both subsequence estimators' at the noise
// measured so far (false unless AutoGradient may pick it).
func (f *fit) fullClearlyCheaper() bool {
	if f.s.Gradient != AutoGradient || !f.deterministic() {
		return false
	}
	lp, lc := f.lambdas()
	full := f.planCost(FullGradient, lp, lc)
	return full*noiseMargin < f.planCost(PlainGradient, lp, lc) && full*noiseMargin < f.planCost(ControlVariateGradient, lp, lc)
}

// tailNoise sets Preparation.LambdaCVTail, the second-order control
// variate's largest noise eigenvalue at 2p points on the 0.99 contour of
// N(u*, L Lᵀ) (u* ± r L e_k), when AutoGradient may pick it. The step h
// is set from the noise at typical draws; where the noise is larger the
// gradient injects h²λ of variance per step against the diffusion's 2h,
// the chains' excursions go further, see still more noise and, when it
// grows fast with the distance, run away. chooseGradient keeps the
// control variate only while hλ ≤ maxTailNoise on the contour.
func (f *fit) tailNoise(ctx context.Context) error {
	pr := &f.prep
	pr.LambdaCVTail = 0
	if f.s.Gradient != AutoGradient || !f.deterministic() || pr.jacobian == nil {
		return nil
	}
	p := f.dim
	r := math.Sqrt(distuv.ChiSquared{K: float64(p)}.Quantile(0.99))
	var points [][]float64
	for k := range 2 * p {
		z := make([]float64, p)
		z[k/2] = r * float64(1-2*(k%2))
		points = append(points, linalg.LMul(pr.Mode, pr.Chol, z))
	}
	_, dCV, _, _, err := f.probe(ctx, points, tailNoiseStream)
	if err != nil {
		return err
	}
	for _, d := range dCV {
		z := linalg.LTrans(pr.Chol, d)
		pr.LambdaCVTail = math.Max(pr.LambdaCVTail, 0.5*linalg.Dot(z, z))
	}
	return nil
}

// chooseGradient picks the estimator of the lower cost per effective
// draw (unless the user chose one) and sets the step for it. The step h =
// 1/(1+κλ) makes the chain's autocorrelation time about 2(1+κλ)
// iterations (setStep), each at the measured cost of its estimator. It is
// called once, at the mode: the noise measured later where the chains are
// only resets the step, because a λ estimated from heavy-tailed gradient
// noise varies two- to three-fold between windows, and a switch to the
// plain estimator on such a draw made the DAX posterior measurably worse
// (σ 0.6 reference sds off, sds 6–13% too wide; its noise correction h·W
// is about 1, so an error in W shows, while the control variate's is
// small).
func (f *fit) chooseGradient() error {
	pr := &f.prep
	lp, lc := f.lambdas()
	// The full-data score: no noise.
	pr.CostFull = f.costFull()
	switch {
	case f.s.Gradient == AutoGradient && f.fullOnly():
		pr.Gradient = FullGradient
	case f.s.Gradient == AutoGradient:
		pr.Gradient = PlainGradient
		best := pr.CostPlain * (1 + lp)
		stable := tailStable(f.step(f.cvKappa()*lc), pr.LambdaCVTail)
		if c := pr.CostCV * (1 + f.cvKappa()*lc); c < best && stable && (pr.ShiftSD <= maxAnchorShift || f.prepSubset()) {
			pr.Gradient, best = ControlVariateGradient, c
		}
		if pr.CostFull > 0 && f.planCost(FullGradient, lp, lc) < f.planCost(pr.Gradient, lp, lc) {
			pr.Gradient = FullGradient
		}
	case f.s.Gradient == FullGradient:
		if !f.deterministic() {
			return fmt.Errorf("sgmcmc: Gradient full needs a deterministic filter (Exact, the grid filter or the model's exact scorer); the windows are filtered by particles")
		}
		pr.Gradient = FullGradient
	default:
		pr.Gradient = f.s.Gradient
	}
	f.setStep()
	if f.s.Gradient == AutoGradient && f.fullOnly() {
		f.log("Laplace importance sampling: pseudo-marginal chains on full-data log posteriors (%.3g ms each)", 1e3*pr.CostFull)
		return nil
	}
	f.log("gradient noise λ_max(W): plain %.3g (%.2f ms per gradient), control variate %.3g (%.2f ms; %.3g on the 0.99 contour), full-data score 0 (%.3g ms); using %v gradients",
		lp, 1e3*pr.CostPlain, lc, 1e3*pr.CostCV, pr.LambdaCVTail, 1e3*pr.CostFull, pr.Gradient)
	if f.s.Gradient == AutoGradient && pr.CostFull > 0 {
		f.log("planned cost of the run (one worker): plain %.3g s, control variate %.3g s, full-data score %.3g s",
			f.planCost(PlainGradient, lp, lc), f.planCost(ControlVariateGradient, lp, lc), f.planCost(FullGradient, lp, lc))
	}
	return nil
}

// fullOnly reports whether the chains run on full-data scores without a
// choice to make: the user chose FullGradient, or AutoGradient on Laplace
// importance sampling. There the subsequence estimators run on the plain
// estimate's Fisher-identity scores, which are not its derivatives where
// the paths' weights are uneven (valuediff.go), and the control variate
// built on them lost the posterior: SVM as MSV{D: 1} on the S&P 500
// returns, noise λ 0.43 at the mode and 1.21 on the 0.99 contour, sent
// the first adaptation window's chains to φ 0.998 and τ 0.12–0.55 (the
// posterior: 0.984 ± 0.002 and 0.80 ± 0.04), where λ was 5.9·10⁴. The
// pseudo-marginal chains target the exact posterior.
func (f *fit) fullOnly() bool {
	if !f.deterministic() {
		return false
	}
	return f.s.Gradient == FullGradient || f.s.Gradient == AutoGradient && f.onLaplace()
}

// laplaceGradientWarning returns the Posterior's warning when the user
// chose a subsequence gradient on Laplace importance sampling ("" otherwise):
// the estimator that lost the posterior in fullOnly's example.
func (f *fit) laplaceGradientWarning() string {
	g := f.prep.Gradient
	if !f.onLaplace() || (g != PlainGradient && g != ControlVariateGradient) {
		return ""
	}
	return fmt.Sprintf("%v gradients on Laplace importance sampling run on the plain estimate's Fisher-identity scores, which are not its derivatives where the paths' weights are uneven "+
		"(the SVM on the S&P 500 returns: the control variate's chains left the posterior): leave Gradient at its default for pseudo-marginal chains on full-data log posteriors, which target the exact posterior", g)
}

// costFull returns the predicted cost of a full-data score with a
// deterministic filter (0 without one): a pass over all T observations
// costs about T/(S+2B) windows.
func (f *fit) costFull() float64 {
	if !f.deterministic() {
		return 0
	}
	return f.prep.CostPlain * float64(f.total) / float64(f.gset.S+2*f.gset.B)
}

// planCost returns the predicted cost, in seconds of one worker, of the
// adaptation and the sampling with gradient g: the plan Fit makes for it
// at the measured costs and noise. Per draw, the full-data score is dear
// and noiseless, a subsequence gradient cheap and noisy; which wins
// depends on how many draws each needs, so they are compared over the
// whole run:
//   - SGLD (plain, control variate): three adaptation windows of ten
//     autocorrelation times (300 to 3000 iterations) and 1.25·TargetESS
//     autocorrelation times, at the step h = min(0.25, 1/(1 + κλ)) and
//     τ = (2 − h)/h. The control variate's λ is the larger of the mode's
//     and the 0.99 contour's (tailNoise): its noise grows away from u*,
//     the chains' windows re-measure it where they are and the step
//     follows. On DAX (SVM) λ is 0.31 at the mode and 25 on the contour;
//     planned at the mode the control variate looked four times cheaper
//     than the full-data score, and took 28 s (a window measured λ = 295
//     and ran 3000 iterations at h = 0.0034) against the full-data
//     path's 12 s at the same accuracy.
//   - FullGradient: amis.MinRounds rounds of importance sampling and chains
//     whose independence steps hold for planHold iterations
//     (independenceIAT), at least fullMinIters each, a full-data pass per
//     iteration.
func (f *fit) planCost(g Gradient, lp, lc float64) float64 {
	pr := &f.prep
	chains, ess := float64(f.s.Chains), float64(f.s.TargetESS)
	// The same effective draws for every estimator, also when Iterations
	// fixes the run's length: compared at equal iterations SGLD looked
	// cheaper, and the LGSSM on the S&P 500 with Iterations 2,000 ran
	// control-variate SGLD chains with R-hat 2.65 and sds 0.25–0.55 of
	// the Kalman posterior's (warned), where the full-data chains the
	// planned run takes are within 0.1.
	sampling := func(iat, least float64) float64 {
		return math.Max(least, 1.25*ess*iat/chains)
	}
	if g == FullGradient {
		iat := amis.IndependenceIAT(planHold, isIndependence)
		return (float64(amis.MinRounds*amis.Draws(f.dim)) + chains*sampling(iat, fullMinIters)) * f.costFull()
	}
	cost, kl := pr.CostPlain, lp
	if g == ControlVariateGradient {
		cost, kl = pr.CostCV, f.cvKappa()*math.Max(lc, pr.LambdaCVTail)
	}
	h := f.step(kl)
	iat := sgldIAT(h)
	window := float64(windowLen(h))
	if f.s.AdaptWindow > 0 {
		window = float64(f.s.AdaptWindow)
	}
	return chains * (adaptWindows*window + sampling(iat, sgldMinIters)) * cost
}

// planHold is the independence steps' holding time planCost assumes: the
// importance-sampled proposals measured 1.27–1.44 on the SVM and GARCH
// posteriors of DAX. A larger one plans full-data chains dearer against
// SGLD (τ = 2(2H − 1)/isIndependence: 4 at 1.4; TestPlanCost).
const planHold = 1.4

// fullMinIters and sgldMinIters are the fewest sampling iterations per
// chain that Fit plans with FullGradient and with SGLD: where the ESS
// target asks for fewer (TestPlanCost), SGLD's chains get more for the
// transient after the adaptation; full-data chains have none and make a
// fresh draw every few steps.
const (
	fullMinIters = 200
	sgldMinIters = 500
)

// noiseAt sets V for both estimators from probes at points (each point
// evaluated twice, independently), random stream stream.
func (f *fit) noiseAt(ctx context.Context, points [][]float64, stream uint64) error {
	_, err := f.probeNoise(ctx, points, stream)
	return err
}

// noiseProbes are the pairs' differences of both estimators at some
// points and their measured costs per gradient.
type noiseProbes struct {
	plain, cv         [][]float64
	costPlain, costCV float64
}

// merge returns the probes of n and o together (costs averaged by count).
func (n noiseProbes) merge(o noiseProbes) noiseProbes {
	a, b := float64(len(n.plain)), float64(len(o.plain))
	return noiseProbes{
		plain:     append(slices.Clip(n.plain), o.plain...),
		cv:        append(slices.Clip(n.cv), o.cv...),
		costPlain: (a*n.costPlain + b*o.costPlain) / (a + b),
		costCV:    (a*n.costCV + b*o.costCV) / (a + b),
	}
}

// probeNoise probes at points (stream: see probe), sets V for both
// estimators from them and returns them.
func (f *fit) probeNoise(ctx context.Context, points [][]float64, stream uint64) (noiseProbes, error) {
	var n noiseProbes
	var err error
	if n.plain, n.cv, n.costPlain, n.costCV, err = f.probe(ctx, points, stream); err != nil {
		return n, err
	}
	f.setNoise(n)
	return n, nil
}

// setNoise sets V and the costs of both estimators from n.
func (f *fit) setNoise(n noiseProbes) {
	pr := &f.prep
	pr.CostPlain, pr.CostCV = n.costPlain, n.costCV
	pr.NoisePlain = f.clippedNoise(n.plain, 1)
	pr.NoiseCV = f.clippedNoise(n.cv, f.cvKappa())
	pr.ShiftSD = linalg.MaxAbs(linalg.LTrans(pr.Chol, pr.AnchorSE))
}

// clippedNoise returns the noise covariance V = ½ E[d dᵀ] (u coordinates,
// row-major) from the differences d of independent pairs of estimates, as
// the sampler feels it. Particle gradients on heavy-tailed data have
// heavy-tailed noise: a rare window with an extreme day gives a gradient
// tens of times the usual, and one such probe among 96 moved λ_max(W)
// from 12 to 549 between two windows of one DAX fit (and the step with
// it). Precond bounds every drift h·Lᵀĝ to MaxDrift = 1 posterior sd, so
// noise beyond |Lᵀξ| = 1/h never reaches the chain; each probe's noise is
// clipped there, with h the step that the clipped V itself gives (three
// fixed-point rounds from the unclipped V). Noise that is large but not
// rare (|Lᵀξ| ≈ √(λp) ≪ 1 + λ) is not touched.
func (f *fit) clippedNoise(d [][]float64, kappa float64) []float64 {
	p, K := f.dim, len(d)
	l := f.prep.Chol
	scale := make([]float64, K)
	for k := range scale {
		scale[k] = 1
	}
	cov := func() []float64 {
		v := make([]float64, p*p)
		for k, dk := range d {
			w := 0.5 * scale[k] * scale[k] / float64(K)
			for a := range p {
				for b := range p {
					v[a*p+b] += w * dk[a] * dk[b]
				}
			}
		}
		return v
	}
	v := cov()
	for range 3 {
		limit := 1 / f.step(kappa*linalg.MaxEigen(linalg.Sandwich(l, v), p)) // MaxDrift / h
		for k, dk := range d {
			z := linalg.LTrans(l, dk)
			r := math.Sqrt(0.5 * linalg.Dot(z, z))
			scale[k] = 1
			if r > limit {
				scale[k] = limit / r
			}
		}
		v = cov()
	}
	return v
}

// lambdas returns λ_max of W = Lᵀ V L for both estimators at the current L.
func (f *fit) lambdas() (plain, cv float64) {
	pr := &f.prep
	return linalg.MaxEigen(linalg.Sandwich(pr.Chol, pr.NoisePlain), f.dim), linalg.MaxEigen(linalg.Sandwich(pr.Chol, pr.NoiseCV), f.dim)
}

// noiseW returns W = Lᵀ V L of the chosen estimator.
func (f *fit) noiseW() []float64 {
	pr := &f.prep
	switch pr.Gradient {
	case ControlVariateGradient:
		return linalg.Sandwich(pr.Chol, pr.NoiseCV)
	case FullGradient:
		return make([]float64, f.dim*f.dim)
	}
	return linalg.Sandwich(pr.Chol, pr.NoisePlain)
}

// setStep sets the step h = min(0.25, 1/(1 + κλ_max(W))) unless the user
// gave one: the injected covariance (2h − h²)I − h²W then keeps at least
// half of SGLD's noise. κ = 1 for the plain estimator and the ancestral
// control variate, whose noise (subsampling, resp. the particles'
// discontinuities) is about the same everywhere. The noise of the
// continuous control variate (CVParticles: forward-only, sorted) grows
// like the squared distance r² from u* (in posterior sds), and W is its average
// over the posterior (E r² = p): at r the chain sees about r²/p times W,
// and a step that is large against that excess widens the tails, which
// raises the noise further out, and the chains run away (measured on the
// SVM: φ → 1 within a few hundred iterations). So κ = r²₀.₉₉₉/p, with
// r²₀.₉₉₉ the 0.999 quantile of χ²_p, keeps hλ below about 1 out to the
// 0.999 contour of the posterior.
func (f *fit) setStep() {
	pr := &f.prep
	pr.LambdaPlain, pr.LambdaCV = f.lambdas()
	lambda := pr.LambdaPlain
	switch pr.Gradient {
	case ControlVariateGradient:
		lambda = pr.LambdaCV * f.cvKappa()
	case FullGradient:
		// Metropolis-adjusted (mh.Kernel): the step is tuned for the
		// acceptance rate by tuneMALA, from malaStart.
		switch {
		case f.s.StepSize > 0:
			pr.StepSize = f.s.StepSize
		case pr.StepSize == 0:
			pr.StepSize = malaStart
		}
		return
	}
	pr.StepSize = f.step(lambda)
}

// maxTailNoise bounds hλ on the 0.99 contour for the control variate (see
// tailNoise): gradient noise there may inject up to 10 times the
// diffusion's variance (h²λ ≤ 10·2h). Measured hλ: GARCH on DAX 123 (λ 491;
// at typical draws 1.6; its chains ran off to φ → 1 at step 0.25; with
// its σ² node filter: the quadrature filter's λ there is 464, go run
// ./examples/fit -model garch -v), the
// SVM on DAX 6.4 (λ 25; calibrated with the control variate).
const maxTailNoise = 20

// tailStable reports whether the control variate at step h, with noise
// eigenvalue tail on the 0.99 contour, keeps hλ within maxTailNoise.
func tailStable(h, tail float64) bool { return h*tail <= maxTailNoise }

// malaStart is the first adaptation window's step with FullGradient:
// from it tuneMALA's adaptWindows windows can reach either end of its
// range [0.05, 1] (TestMALAStart).
const malaStart = 0.5

// tuneMALA records an adaptation window's acceptance rates (Langevin acc,
// independence ind) and sets the step from acc: h·exp(2(acc − 0.7)) within [0.05, 1]. h = 1 proposes from the
// Laplace approximation at the current point (for a Gaussian posterior
// with the right metric every proposal is accepted, at any h < 2); 0.7 is
// above MALA's asymptotically optimal 0.574 because four parameters are
// far from the asymptotic regime and a rejected step costs a full pass.
func (f *fit) tuneMALA(acc, ind float64) {
	pr := &f.prep
	pr.Accept, pr.AcceptIndependent = acc, ind
	target, local := langevinAccept, "Langevin"
	if f.prep.Walk {
		target, local = walkAccept, "random walk"
	}
	if f.s.StepSize == 0 {
		pr.StepSize = math.Min(1, math.Max(0.05, pr.StepSize*math.Exp(2*(acc-target))))
	}
	f.log("Metropolis–Hastings acceptance rates: %s %.2f (step now %.3g), independence %.2f", local, acc, pr.StepSize, pr.AcceptIndependent)
}

// langevinAccept is the acceptance rate tuneMALA aims at for Langevin
// local steps (see tuneMALA).
const langevinAccept = 0.7

// retuneLangevin lowers the full-data chains' Langevin step after a
// sampling segment (counts seg) whose Langevin steps were accepted under
// langevinFloor of the time, by tuneMALA's rule. After importance
// sampling the step is isLangevinStep, which suits a few parameters: on
// LGSSMd{D: 5} (35 parameters, Kalman scores) 6% of the Langevin steps
// were accepted, so only the independence steps moved the chains. The
// step only falls: chains whose Langevin steps are accepted often
// enough keep it, and their draws. A step given in FitSettings is kept.
func (f *fit) retuneLangevin(s *sampling, seg mhCounts) {
	pr := &f.prep
	if pr.Gradient != FullGradient || pr.Walk || f.s.StepSize != 0 || seg.prop < langevinMinSteps*f.s.Chains {
		return
	}
	acc, _ := seg.rates()
	if !(acc < langevinFloor) {
		return
	}
	old := s.h
	s.h = math.Max(0.05, s.h*math.Exp(2*(acc-langevinAccept)))
	pr.StepSize, s.post.Preparation.StepSize = s.h, s.h
	f.log("Langevin steps accepted %.0f%% of the time in the last segment: step %.3g, was %.3g", 100*acc, s.h, old)
}

// langevinFloor and langevinMinSteps: see retuneLangevin (at least
// langevinMinSteps Langevin proposals per chain in the segment).
const (
	langevinFloor    = 0.3
	langevinMinSteps = 10
)

// tuneIndependence lowers the share of independence steps of full-data
// chains without a surrogate to rareIndependence when an adaptation
// window accepted under rareAccept of them: each costs a log posterior,
// and on MSV{D: 2} on DAX and CAC 40 (Laplace importance sampling, whose
// importance-sampling rounds found no proposal) 0–1% were accepted while
// they were half of all steps.
func (f *fit) tuneIndependence(ind float64) {
	pr := &f.prep
	if pr.sur != nil || !(ind < rareAccept) || pr.Independence == rareIndependence {
		return
	}
	pr.Independence = rareIndependence
	f.log("independence steps accepted %.1f%% of the time: %.0f%% of the steps from now on", 100*ind, 100*rareIndependence)
}

// rareAccept and rareIndependence: see tuneIndependence.
const (
	rareAccept       = 0.02
	rareIndependence = 0.1
)

// walkAccept is the acceptance rate tuneMALA aims at for random-walk
// local steps (Preparation.Walk): near the optimal 0.234 of random-walk
// Metropolis in many dimensions (Roberts, Gelman and Gilks 1997), a
// little above it for the few parameters of these models.
const walkAccept = 0.3

// chooseWalk decides Preparation.Walk at the mode u: on Laplace
// importance sampling, whose score is not the derivative of its
// likelihood estimate, unless its weights are even there (evenWeights),
// where it is.
func (f *fit) chooseWalk(u []float64) (bool, error) {
	if !f.prep.Exact || !f.onLaplace() {
		return false, nil
	}
	even, err := f.laplace.evenWeights(u, f.data)
	return !even, err
}

// step returns the user's StepSize, or sgldStep(kl) for the scaled
// largest noise eigenvalue kl = κλ.
func (f *fit) step(kl float64) float64 {
	if f.s.StepSize > 0 {
		return f.s.StepSize
	}
	return sgldStep(kl)
}

// sgldMaxStep is the largest step SGLD takes, in posterior-scale units,
// the step wherever κλ < 3. It trades mixing (autocorrelation time
// (2 − h)/h: 7 at the cap) for the Euler step's error, which the
// noise-corrected injection removes on a Gaussian posterior with the
// right metric only (TestSGLDStepCap).
const sgldMaxStep = 0.25

// sgldStep is the SGLD step rule: h = min(0.25, 1/(1 + kl)) for the
// scaled largest noise eigenvalue kl = κλ_max(W) (see setStep). The
// injected covariance (2h − h²)I − h²W then keeps at least half of
// SGLD's noise.
func sgldStep(kl float64) float64 {
	return math.Min(sgldMaxStep, 1/(1+kl))
}

// sgldIAT is the autocorrelation time τ = (2 − h)/h of preconditioned
// SGLD at step h on a Gaussian posterior with the right metric: each
// coordinate is then an AR(1) with coefficient 1 − h, whose τ is
// (1 + (1 − h))/(1 − (1 − h)).
func sgldIAT(h float64) float64 {
	return sgldIATs(1, h)
}

// sgldIATs is n autocorrelation times n·(2 − h)/h, rounded as written
// (n·(2 − h) first), which adaptation windows of n = 10 τ depend on.
func sgldIATs(n, h float64) float64 {
	return n * (2 - h) / h
}

// cvKappa returns κ for the control variate: the 0.999 quantile of χ²_p
// over its mean p for the continuous (sorted, forward-only) filter, else 1.
func (f *fit) cvKappa() float64 {
	if !f.cvset.PF.Sorted {
		return 1
	}
	return distuv.ChiSquared{K: float64(f.dim)}.Quantile(0.999) / float64(f.dim)
}

// probe evaluates, at each point u, two independent plain estimates g_S(u)
// (filter gset) and two independent control-variate differences g_S(u) −
// g_S(u*) with common random numbers within each (filter cvset). It
// returns per point the difference of the two plain estimates and of the
// two control-variate differences, and the counted cost (windowCost) of
// a plain gradient and of a control-variate one: cvFilters (2, or 3 with
// the second-order term's directional difference) windows of its filter.
// Costs are counted, not timed, so that the plan is the same on every run
// with the same seed: timed, the control variate of the LGSSM's Kalman
// windows (0.01 ms) measured 0.06 ms on one run of four, enough to switch
// that run to full-data chains with other draws.
func (f *fit) probe(ctx context.Context, points [][]float64, stream uint64) (dPlain, dCV [][]float64, costPlain, costCV float64, err error) {
	p, K := f.dim, len(points)
	dPlain, dCV = make([][]float64, K), make([][]float64, K)
	// A probe outside the model's support (LGSSMd's A with spectral
	// radius ≥ 1 near a boundary) is left out, as an MH proposal there
	// would be rejected; only a failure of more than half of the probes
	// stops the fit.
	outside := func(err error) error {
		if errors.Is(err, ssm.ErrInvalidParam) {
			return nil
		}
		return err
	}
	err = f.parallel(K, f.gset, func(est *gradient.Estimator, k int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed^probeSeedXor, stream+uint64(k)))
		g0, g1 := make([]float64, p), make([]float64, p)
		if _, err := est.Likelihood(ctx, g0, points[k], rng); err != nil {
			return outside(err)
		}
		if _, err := est.Likelihood(ctx, g1, points[k], rng); err != nil {
			return outside(err)
		}
		for i := range g0 {
			g0[i] -= g1[i]
		}
		dPlain[k] = g0
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %w", err)
	}
	err = f.parallel(K, f.cvset, func(est *gradient.Estimator, k int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed^probeSeedXor, stream+uint64(k)+probeSecond))
		cv, err := f.newCV(est)
		if err != nil {
			return err
		}
		d0, d1 := make([]float64, p), make([]float64, p)
		if err := cv.Difference(ctx, d0, points[k], rng); err != nil {
			return outside(err)
		}
		if err := cv.Difference(ctx, d1, points[k], rng); err != nil {
			return outside(err)
		}
		for i := range d0 {
			d0[i] -= d1[i]
		}
		dCV[k] = d0
		return nil
	})
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %w", err)
	}
	kept := func(d [][]float64) [][]float64 {
		return slices.DeleteFunc(d, func(x []float64) bool { return x == nil })
	}
	if dPlain, dCV = kept(dPlain), kept(dCV); 2*len(dPlain) < K || 2*len(dCV) < K {
		return nil, nil, 0, 0, fmt.Errorf("sgmcmc: measuring the gradient noise: %d of %d plain and %d control-variate probes are outside the model's support", K-len(dPlain), K, K-len(dCV))
	}
	if len(dPlain) < K || len(dCV) < K {
		f.log("gradient noise: %d plain and %d control-variate probes of %d fell outside the model's support and were left out", K-len(dPlain), K-len(dCV), K)
	}
	return dPlain, dCV, f.windowCost(f.gset), f.cvFilters() * f.windowCost(f.cvset), nil
}
