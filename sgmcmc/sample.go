package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// extendMax bounds an extension to this many times the iterations per
// chain so far (see Fit's segments).
const extendMax = 2

// capExtension returns the next segment's iterations per chain, at most
// extendMax times the done so far, and the last planned segment, one
// later (within maxSegments) when the cap binds. The ESS of short chains
// is a noisy, low estimate: GARCH on DAX, seed 3, measured 57 after 150
// iterations per chain and projected 1,088 more; the 1,238 gave 1,281.
func capExtension(iters, done, lastSeg int) (int, int) {
	if iters <= extendMax*done {
		return iters, lastSeg
	}
	return extendMax * done, min(lastSeg+1, maxSegments-1)
}

// firstSegment plans the first sampling segment's iterations per chain
// when Iterations does not fix them (1.25·TargetESS autocorrelation
// times, at least sgldMinIters or fullMinIters, at most 50,000), and the
// last planned segment.
func (f *fit) firstSegment() (iters, lastSeg int) {
	pr := &f.prep
	least := sgldMinIters
	if pr.Gradient == FullGradient {
		least = fullMinIters // exact chains: no transient, a fresh draw every few steps
	}
	iters = max(least, int(math.Ceil(1.25*float64(f.s.TargetESS)*pr.IAT/float64(f.s.Chains))))
	iters = min(iters, 50000)
	if pr.Gradient == FullGradient && pr.proposal != nil {
		// A short first segment: the proposal is refitted to its draws
		// (refitProposal) before the rest, which may take one more
		// extension.
		return min(iters, isPilot), 3
	}
	return iters, 2
}

// sampling is the state of (*fit).sample across its phases: plan,
// segments (run, check, extend), then the draws' collection and the
// warnings.
type sampling struct {
	names    []string
	natural  func(dst, u []float64)
	h        float64 // the step
	iters    int     // the next segment's iterations per chain (times Thin)
	lastSeg  int     // the last planned segment
	setupErr error   // a chain's set-up error (chainFactories)

	newEst     func(int) Estimator
	newMethod  func(int) Method
	acceptance func() mhCounts
	retarget   func(*tmix.Mixture, *surrogate.Surrogate, float64)

	logPost [][]float64 // the draws' log posteriors (refitProposal)
	user    *segmented  // the user's recorder across segments (nil: none, or a checkpoint's)
	starts  [][]float64 // each chain's next start
	post    *Posterior

	res       *Result
	runErr    error
	stopped   int           // chains stopped by an error
	stay      int           // the last segment's longest stay at one point (longestStay)
	stayChain int           // and its chain
	stuck     bool          // and whether it is too long (stayLimit, stayFrac)
	spread    *spreadResult // the spread check's outcome (tailcheck.go)
	spreadAt  int           // and the iterations per chain it saw
	done      int           // iterations per chain so far
	budgetHit bool          // the time budget ended the sampling
}

// prepOverBudget is the error of a fit whose preparation spent the time
// budget MaxTime (in wall time used).
func (f *fit) prepOverBudget(used time.Duration) error {
	saved := ""
	if f.s.Checkpoint != "" {
		saved = fmt.Sprintf("; the preparation is saved in %s.prep and the same call resumes from it", f.s.Checkpoint)
	}
	return fmt.Errorf("sgmcmc: the time budget (MaxTime %v) was spent by the preparation (%v), before any draw%s",
		f.s.MaxTime, used.Round(time.Millisecond), saved)
}

// sample adapts the metric, runs the chains and builds the posterior.
//
// Segments: the first of the planned length; while the ESS falls short
// of TargetESS (the autocorrelation time of a short adaptation window
// is a rough guess) or R-hat exceeds 1.01, up to two more (three after
// FullGradient's short first segment, and one more for each extension
// cut to extendMax times the draws so far), and more while the
// sampling so far took less than cheapSampling (up to maxSegments in
// all), continuing every chain where it stopped. A fixed Iterations
// makes it one segment. With a checkpoint every segment is a
// checkpointed Run and the draws of those done are saved with the
// preparation (segments.go), so the draws are those of the same fit
// without one. A time budget (MaxTime) bounds the
// wall time of all segments together: each chain of a segment gets
// the budget left over the waves in which Run's workers take the
// chains (4 chains on 2 workers: two waves of half of it), so a fit
// that does not reach it runs as it would without one.
func (f *fit) sample(ctx context.Context, start time.Time) (*Posterior, error) {
	f.start = start // MaxTime counts the preparation too
	if used := time.Since(start); f.s.MaxTime > 0 && used >= f.s.MaxTime {
		return nil, f.prepOverBudget(used)
	}
	// The budget's context: for the adaptation, which ends the
	// preparation (unless a checkpoint is to keep it), and the checks
	// after sampling. The chains have Runtime instead (chainBudget).
	bctx, cancel := f.budgetContext(ctx)
	defer cancel()
	actx := ctx
	if f.s.Checkpoint == "" {
		actx = bctx
	}
	if err := f.ensureAdapted(actx); err != nil {
		if ctx.Err() == nil && overBudget(actx) {
			return nil, f.prepOverBudget(time.Since(start))
		}
		return nil, err
	}
	s := f.planSampling()
	first, err := f.restoreSegments(s)
	if err != nil {
		return nil, err
	}
	for seg, ended := first, false; !ended; seg++ {
		before := s.acceptance()
		trace, err := f.runSegment(ctx, s, seg)
		if err != nil {
			return nil, err
		}
		ended = f.checkSegment(s, seg, trace) || f.extend(ctx, s, seg, trace)
		if !ended && f.chainBudget() < 0 { // spent between segments (refits, checks)
			ended, s.budgetHit = true, true
		}
		if !ended {
			f.retuneLangevin(s, s.acceptance().since(before))
		}
		if !ended && f.s.Checkpoint != "" {
			if err := f.saveSegments(s, seg); err != nil {
				return nil, err
			}
		}
	}
	if err := f.collect(bctx, s); err != nil {
		return nil, err
	}
	f.warnings(bctx, s)
	s.post.Total = time.Since(start)
	return s.post, nil
}

// ensureAdapted runs the adaptation unless the preparation (or its
// checkpoint) already holds the chains' starts.
func (f *fit) ensureAdapted(ctx context.Context) error {
	pr := &f.prep
	if pr.starts != nil {
		return nil
	}
	err := f.adapt(ctx)
	// Nothing has reached the user's recorder yet: noisy chains that
	// fail here can still give way to exact ones, a grid to particles.
	if f.toFull(ctx, err) {
		err = f.adapt(ctx)
	}
	if f.toParticles(ctx, err, "adaptation") {
		if err = f.prepareAt(ctx, f.warm); err == nil {
			err = f.adapt(ctx)
		}
	}
	if err != nil {
		return err
	}
	if f.s.Checkpoint != "" {
		if err := f.savePreparation(); err != nil {
			return err
		}
	}
	return nil
}

// planSampling plans the first segment and sets up the chains and the
// Posterior.
func (f *fit) planSampling() *sampling {
	pr := &f.prep
	s := &sampling{names: f.model.ParamNames(), h: pr.StepSize, iters: f.s.Iterations}
	s.natural = func(dst, u []float64) { f.model.Constrain(dst, u) }
	s.lastSeg = 2 // segments: the first and up to two extensions
	if s.iters == 0 {
		s.iters, s.lastSeg = f.firstSegment()
	}
	s.iters *= f.s.Thin
	s.newEst, s.newMethod, s.acceptance, s.retarget = f.chainFactories(f.noiseW(), &s.setupErr)
	s.logPost = make([][]float64, f.s.Chains)
	if f.s.Recorder != nil {
		s.user = &segmented{r: f.s.Recorder}
	}
	s.starts = pr.starts
	post := &Posterior{Names: s.names, Dim: f.dim, Preparation: f.prep, BurnIn: pr.AdaptIterations, Thin: f.s.Thin, resumed: f.resumed}
	post.model, post.data = f.user, f.data
	post.U = make([][]float64, f.s.Chains)
	post.Natural = make([][]float64, f.s.Chains)
	s.post = post
	return s
}

// runSegment runs segment seg of s.iters iterations per chain from
// s.starts and appends its draws to the Posterior; it returns the
// segment's trace, or an error when no chain could run.
func (f *fit) runSegment(ctx context.Context, s *sampling, seg int) (*Trace, error) {
	pr, post, names := &f.prep, s.post, s.names
	trace := &Trace{Transform: s.natural, NaturalDim: len(names)}
	recs := []Recorder{trace}
	var draws *drawFile
	if f.s.Checkpoint != "" {
		// The segment's draws survive an interrupt (drawFile).
		draws = newDrawFile(trace, f.s.Checkpoint+".draws", f.dim, f.segmentFingerprint(seg))
		recs[0] = draws
	}
	if s.user != nil {
		recs = append(recs, s.user)
	}
	if f.s.Progress != nil {
		pr := &Printer{W: f.s.Progress, Interval: 2 * time.Second, Names: names, Transform: s.natural}
		if !f.s.Verbose {
			pr.Label = fmt.Sprintf("sampling %d chains × %d iterations", f.s.Chains, s.iters)
		}
		recs = append(recs, pr)
	}
	if pr.Gradient == FullGradient {
		if pr.sur != nil {
			post.segments.Surrogate++
		} else {
			post.segments.Other++
		}
		if pr.sur != nil {
			f.log("sampling: %d chains × %d iterations of Metropolis–Hastings on log posteriors, %.0f%% surrogate transitions and %.0f%% random-walk steps (autocorrelation time ≈ %.0f)",
				f.s.Chains, s.iters, 100*pr.Independence, 100*(1-pr.Independence), pr.IAT)
		} else if f.prep.Walk {
			f.log("sampling: %d chains × %d iterations of Metropolis–Hastings on log posteriors, random-walk step %.3g (autocorrelation time ≈ %.0f)",
				f.s.Chains, s.iters, s.h, pr.IAT)
		} else {
			f.log("sampling: %d chains × %d iterations of Metropolis–Hastings on full-data scores, Langevin step %.3g (autocorrelation time ≈ %.0f)",
				f.s.Chains, s.iters, s.h, pr.IAT)
		}
	} else {
		f.log("sampling: %d chains × %d iterations of %v-gradient SGLD, step %.3g (autocorrelation time ≈ %.0f)",
			f.s.Chains, s.iters, pr.Gradient, s.h, pr.IAT)
	}
	st := Settings{
		Iterations:  s.iters,
		Runtime:     f.segmentRuntime(),
		Thin:        f.s.Thin,
		Schedule:    Constant(s.h),
		Chains:      f.s.Chains,
		Concurrency: f.s.Workers,
		Seed:        f.s.Seed + uint64(seg)*segmentSeedStride,
		NonFinite:   Skip,
		Recorder:    Multi(recs...),
		RecordAll:   true,
	}
	if f.s.Checkpoint != "" {
		st.Checkpoint, st.Resume, st.Fingerprint = f.s.Checkpoint, true, f.segmentFingerprint(seg)
		st.CheckpointEvery = f.checkpointEvery()
	}
	starts := s.starts
	s.res, s.runErr = Run(ctx, s.newEst, s.newMethod,
		func(c int, u []float64) error { copy(u, starts[c]); return nil },
		f.dim, st)
	if draws != nil {
		// Run's Done closed it unless Init or Resume failed.
		if err := draws.close(); err != nil && s.runErr == nil {
			s.runErr = err
		}
	}
	if s.setupErr != nil {
		return nil, s.setupErr
	}
	if s.res == nil {
		return nil, s.runErr
	}
	res := s.res
	post.Run = res
	post.Sampling += res.Runtime
	for c, ch := range res.Chains {
		post.Iterations = min(post.Iterations, ch.Iterations)
		post.Skipped += ch.Skipped
		s.starts[c] = ch.U
		if ch.Err != nil {
			s.stopped++
			post.Warnings = append(post.Warnings, fmt.Sprintf("chain %d stopped at iteration %d: %v", c, ch.Iterations, ch.Err))
		}
	}
	for c, ch := range trace.Chains {
		post.U[c] = append(post.U[c], ch.U...)
		post.Natural[c] = append(post.Natural[c], ch.Natural...)
		s.logPost[c] = append(s.logPost[c], ch.LogPost...)
	}
	if s.user != nil {
		s.user.offset += s.iters
	}
	s.done += s.iters
	return trace, nil
}

// checkSegment runs the stay check on the segment just run (on every
// segment, the last one included) and reports whether the sampling ends
// here: the planned segments are done and the cap or the cheap budget
// is reached, a chain failed, Iterations is fixed, or the time budget
// is spent.
func (f *fit) checkSegment(s *sampling, seg int, trace *Trace) bool {
	segU := make([][]float64, len(trace.Chains))
	for c, ch := range trace.Chains {
		segU[c] = ch.U
	}
	s.stay, s.stayChain = longestStay(segU, f.dim)
	s.stuck = f.prep.Gradient == FullGradient && stuckStay(s.stay, s.iters)
	s.budgetHit = s.res != nil && s.res.Status == RuntimeLimit || f.chainBudget() < 0
	return f.extensionsSpent(seg, s.lastSeg, s.done) || s.runErr != nil || s.stopped > 0 ||
		f.s.Iterations != 0 || s.budgetHit
}

// extensionsSpent reports whether segment seg (of lastSeg planned, done
// iterations per chain so far) ends the extensions: the planned segments
// are done and either maxSegments is reached or the sampling so far cost
// cheapSampling nominal seconds of one worker.
func (f *fit) extensionsSpent(seg, lastSeg, done int) bool {
	return seg >= lastSeg && (seg+1 >= maxSegments || float64(done*f.s.Chains)*f.iterCost() >= cheapSampling)
}

// extend measures the ESS and R-hat of the draws so far and either ends
// the sampling (true: the targets are met, no cheap run-on or stay asks
// for more, and the spread check, run once, passed or could not run) or
// sets the next segment's iterations.
func (f *fit) extend(ctx context.Context, s *sampling, seg int, trace *Trace) bool {
	pr, post, names := &f.prep, s.post, s.names
	ess, rhat := convergence(post, len(names))
	cheapMore, spreadMore := 0, 0
	if ess >= float64(f.s.TargetESS) && rhat <= maxRhat {
		if cheapMore = f.cheapMore(s.done); !s.stuck && cheapMore == 0 {
			// The spread check, once: chains that pass R-hat and ESS
			// may still share a blind spot in the tails.
			n := f.spreadDraws()
			if n == 0 || s.spread != nil {
				return true
			}
			var err error
			if s.spread, err = f.spreadCheck(ctx, post.U, n, spreadStream+uint64(seg)); err != nil {
				f.log("spread check not run: %v", err)
				return true
			}
			s.spreadAt = s.done
			if s.spread.off() < 0 {
				f.log("spread check: chains' sds %s times an importance-sampling check's (ESS %.0f)", fmtRatios(s.spread), s.spread.ess)
				return true
			}
			f.log("spread check: %s", spreadWarning(s.spread, names))
			spreadMore = s.done
		}
		if s.stuck {
			f.log("chain %d stood %d iterations at one point: its proposals miss part of the posterior there", s.stayChain, s.stay)
		}
	}
	if pr.Gradient == FullGradient {
		// The last segment's own ESS, when there were segments before
		// it: how the chains mix now (see fullExtension).
		var last segment
		if seg > 0 {
			segNat := make([][]float64, len(trace.Chains))
			for c, ch := range trace.Chains {
				segNat[c] = ch.Natural
				last.kept += len(ch.Natural) / len(names)
			}
			last.ess, _ = convergence(&Posterior{Natural: segNat}, len(names))
		}
		s.iters = max(f.fullExtension(post, s.logPost, ess, last, s.retarget), f.s.Thin*cheapMore, spreadMore)
	} else {
		// Enough for the ESS target, and at least half as many again
		// when only R-hat is short.
		more := float64(s.done) * math.Max(float64(f.s.TargetESS)/math.Max(ess, 1)-1, 0.5) * 1.2
		s.iters = min(50000, max(200, int(math.Ceil(more))))
	}
	s.iters, s.lastSeg = capExtension(s.iters, s.done, s.lastSeg)
	f.log("ESS %.0f (smallest bulk or tail; target %d), R-hat %.3f: %d more iterations per chain", ess, f.s.TargetESS, rhat, s.iters)
	return false
}

// collect runs the spread check on the final draws (unless it already
// passed on them), records the acceptance rates, closes the user's
// recorder and drops chains without draws; it returns an error when no
// draw was kept.
func (f *fit) collect(ctx context.Context, s *sampling) error {
	post, names := s.post, s.names
	// The spread check on the final draws, unless it already passed on
	// them: a fixed Iterations, a checkpoint, a cap or an extension after
	// a failed check end here.
	if n := f.spreadDraws(); n > 0 && s.done > s.spreadAt {
		r, err := f.spreadCheck(ctx, post.U, n, spreadFinalStream)
		if err == nil {
			s.spread = r
			f.log("spread check: chains' sds %s times an importance-sampling check's (ESS %.0f)", fmtRatios(r), r.ess)
		} else {
			f.log("spread check not run: %v", err)
		}
		if overBudget(ctx) {
			post.Warnings = append(post.Warnings, "the spread check after sampling was not run: the time budget (MaxTime) ran out")
		}
	}
	if s.spread != nil {
		if w := spreadWarning(s.spread, names); w != "" {
			post.Warnings = append(post.Warnings, w)
		}
	}
	if s.stuck {
		post.Warnings = append(post.Warnings, fmt.Sprintf("chain %d stood %d iterations at one point in the last segment: the independence proposals or surrogate transitions miss part of the posterior there, which R-hat and ESS may not show; run longer (FitSettings.Iterations) or check the tails", s.stayChain, s.stay))
	}
	if acc, ind := s.acceptance().rates(); !math.IsNaN(ind) {
		if math.IsNaN(acc) {
			acc = 0 // no Langevin proposal (JSON has no NaN)
		}
		post.Preparation.Accept, post.Preparation.AcceptIndependent = acc, ind
		f.log("Metropolis–Hastings acceptance rates: %s", post.Preparation.acceptance())
	}
	if s.user != nil {
		if err := s.user.r.Done(s.res); err != nil {
			post.Warnings = append(post.Warnings, "recorder: "+err.Error())
		}
	}
	post.Iterations = 0
	for _, c := range post.U {
		post.Iterations = max(post.Iterations, len(c)/f.dim*f.s.Thin)
	}
	// Drop chains without draws (Run's workers take the chains in waves:
	// an interrupt or a budget can stop the run before the last ones).
	var us, nat [][]float64
	var empty []int
	for c := range post.U {
		if len(post.U[c]) > 0 {
			us, nat = append(us, post.U[c]), append(nat, post.Natural[c])
		} else {
			empty = append(empty, c)
		}
	}
	post.U, post.Natural = us, nat
	if len(empty) > 0 && len(us) > 0 {
		post.Warnings = append(post.Warnings, fmt.Sprintf("chains %v have no draws (stopped before they started: %d workers run the %d chains in turn): the summary uses %d of %d chains",
			empty, f.s.Workers, f.s.Chains, len(us), f.s.Chains))
	}
	if post.Draws() == 0 {
		if f.s.Checkpoint != "" && s.runErr == nil && s.res.Status == IterationLimit {
			return fmt.Errorf("%w: its draws are in the recorder's output; remove %s, %[2]s.prep and %[2]s.draws to fit again",
				ErrFinished, f.s.Checkpoint)
		}
		if s.runErr != nil {
			return fmt.Errorf("sgmcmc: no draws kept: %w", s.runErr)
		}
		if s.res.Status == RuntimeLimit {
			return fmt.Errorf("sgmcmc: no draws kept: the time budget (MaxTime %v) ran out before the first draw", f.s.MaxTime)
		}
		return fmt.Errorf("sgmcmc: no draws kept: the chains stopped after %d iterations", post.Iterations)
	}
	return nil
}

// warnings adds the run's and the preparation's warnings, summarises
// the draws, checks the discretisation correction and computes the KSD.
func (f *fit) warnings(ctx context.Context, s *sampling) {
	pr, post, names, runErr := &f.prep, s.post, s.names, s.runErr
	switch {
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		post.Warnings = append(post.Warnings, fmt.Sprintf("interrupted after %s iterations per chain: the summary uses the %d draws kept so far", post.iterationRange(), post.Draws()))
	case s.budgetHit:
		post.Warnings = append(post.Warnings, fmt.Sprintf("time budget (%v for the whole fit) reached after %s of the %d planned iterations per chain", f.s.MaxTime, post.iterationRange(), s.done))
	case runErr != nil && s.stopped == 0:
		post.Warnings = append(post.Warnings, "run: "+strings.ReplaceAll(runErr.Error(), "\n", "; "))
	}
	if pr.Fallback != "" {
		post.Warnings = append(post.Warnings, pr.Fallback)
	}
	if f.newtonWarn != "" {
		post.Warnings = append(post.Warnings, f.newtonWarn)
	}
	post.Warnings = append(slices.Clip(f.dataWarn), post.Warnings...)
	if dc := pr.dc; dc != nil {
		if k, v := argMaxAbs(dc.Shift); v > discretisationMaxShift {
			post.Warnings = append(post.Warnings, fmt.Sprintf("the model's exact scorer is exact only up to its discretisation, and the correction towards its finer scorer "+
				"moves the posterior mean of %s by %.2f posterior sd: it rests on a quadratic model of a large difference; %s",
				names[k], v, f.refineHint()))
		}
		for k, b := range dc.Curve {
			if dc.Cross == nil && appliedCurve(b) != b {
				post.Warnings = append(post.Warnings, fmt.Sprintf("the model's exact scorer is exact only up to its discretisation, and its curvature along whitened axis %d differs from the finer scorer's "+
					"by %.2f (more than %.1f): the correction applies the tilt only; %s", k, b, discretisationMaxCurve, f.refineHint()))
				break
			}
		}
	}
	if w := f.gridEdgeWarning(); w != "" {
		post.Warnings = append(post.Warnings, w)
	}
	if w := f.laplaceGradientWarning(); w != "" {
		post.Warnings = append(post.Warnings, w)
	}
	if n := f.clippedSteps(); n > 0 {
		post.Warnings = append(post.Warnings, fmt.Sprintf("%d of the SGLD steps injected more noise than the posterior allows (step %.3g with gradient noise λ_max(W) = %.3g needs h(1 + λ) ≤ 2): the draws are wider than the posterior; use a smaller StepSize or leave it 0",
			n, s.h, linalg.MaxEigen(f.noiseW(), f.dim)))
	}
	if post.Skipped > 0 {
		post.Warnings = append(post.Warnings, fmt.Sprintf("%d iterations with a non-finite gradient or parameter were skipped", post.Skipped))
	}
	if pr.ShiftSD > maxAnchorShift && pr.Gradient == ControlVariateGradient {
		fix := "raise AnchorPasses or N"
		if f.prepSubset() {
			fix = fmt.Sprintf("it comes from PrepObs = %d of the %d observations; raise PrepObs or set it to 0", f.s.PrepObs, f.total)
		}
		post.Warnings = append(post.Warnings, fmt.Sprintf("the full-data score at the mode is imprecise: its error may shift the mean by %.2f posterior sd (%s)", pr.ShiftSD, fix))
	}
	post.summarize()
	if dc := post.Preparation.dc; dc != nil && !interrupted(ctx) {
		if err := f.checkResidual(ctx, post); err != nil {
			post.Warnings = append(post.Warnings, "discretisation correction not checked after sampling: "+budgetWords(ctx, err))
		}
		if w := residualWarning(dc, post.Names, f.refineHint()); w != "" {
			post.Warnings = append(post.Warnings, w)
		}
	}
	if f.s.KSDDraws > 0 && !interrupted(ctx) {
		k, err := f.ksd(ctx, post)
		if err != nil {
			post.Warnings = append(post.Warnings, "KSD not computed: "+budgetWords(ctx, err))
		}
		post.KSD = k
	}
}

// segmentRuntime is Settings.Runtime for the next segment: chainBudget,
// or 1 ns (no draw) when the budget is spent.
func (f *fit) segmentRuntime() time.Duration {
	if b := f.chainBudget(); b >= 0 {
		return b
	}
	return 1
}

// budgetContext returns ctx ending at the time budget's deadline
// (MaxTime after f.start), or ctx itself without a budget.
func (f *fit) budgetContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if f.s.MaxTime == 0 {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, f.start.Add(f.s.MaxTime))
}

// overBudget reports whether ctx, a budget's context, ended at its
// deadline.
func overBudget(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// interrupted reports whether ctx was cancelled other than by the time
// budget: the caller stopped the fit, and its checks are skipped.
func interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !overBudget(ctx)
}

// budgetWords is err's text, or the time budget's when it cut the check
// short.
func budgetWords(ctx context.Context, err error) string {
	if overBudget(ctx) {
		return "the time budget (MaxTime) ran out"
	}
	return err.Error()
}

// chainBudget returns the compute time each chain of the next sampling
// segment may take (Settings.Runtime) under the time budget MaxTime: what
// is left of it since the fit started (preparation, earlier segments and
// the refits and checks between them), over the number of waves in
// which Workers run Chains. 0 without a budget, negative when it is
// spent.
func (f *fit) chainBudget() time.Duration {
	if f.s.MaxTime == 0 {
		return 0
	}
	left := f.s.MaxTime - time.Since(f.start)
	if left <= 0 {
		return -1
	}
	waves := (f.s.Chains + f.s.Workers - 1) / f.s.Workers
	// At least 1 ns: Runtime 0 would mean no budget (MaxTime = 1 ns ran
	// every planned iteration).
	return max(left/time.Duration(waves), 1)
}

// segmented passes a user's recorder the draws of every sampling segment
// as one run: Init once, iterations numbered on from the previous
// segments, Done once at the end (by sample).
type segmented struct {
	r      Recorder
	offset int
	inited bool
	d      Draw
}

func (s *segmented) Init(info Info) error {
	if s.inited {
		return nil
	}
	s.inited = true
	return s.r.Init(info)
}

func (s *segmented) Record(d *Draw) error {
	s.d = *d
	s.d.Iter += s.offset
	return s.r.Record(&s.d)
}

func (s *segmented) Done(*Result) error { return nil }

// Snapshot and Resume pass a checkpointed segment's calls on to the
// user's recorder when it is a Resumer; Resume initialises one that is
// not, as Multi does.
func (s *segmented) Snapshot() ([]byte, error) {
	if rs, ok := s.r.(Resumer); ok {
		return rs.Snapshot()
	}
	return nil, nil
}

func (s *segmented) Resume(info Info, state []byte) error {
	s.inited = true
	if rs, ok := s.r.(Resumer); ok {
		return rs.Resume(info, state)
	}
	return s.r.Init(info)
}

// segment is the draws (over all chains) and the smallest bulk or tail
// ESS of the last sampling segment alone (kept 0: no earlier segment).
type segment struct {
	kept int
	ess  float64
}

// fullExtension returns the iterations per chain (thinned ones included)
// of the next segment of FullGradient's chains, whose smallest ESS over
// their draws so far is ess, after refitting their independence proposal
// to those draws (retarget non-nil) when that shortens its holding time.
// The segment adds fullExtendMargin·TargetESS − ess effective draws, and
// at least a quarter of the draws so far (fullESSExtend; half when only
// R-hat falls short, all such an extension gets).
//
// Its autocorrelation time: the draws so far over ess, scaled by the ratio
// of the new proposal's and the old one's 2H − 1 (holding times H
// cross-validated on the same draws) when it is refitted. (The a-priori
// independenceIAT, twice 2H − 1, planned 271 more iterations per chain
// for GARCH on DAX after a first segment of 150 at ESS 202, and the run
// ended at ESS 706; the draws so far measured 2.97.) After the first
// segment the chains' past is not their future: the first segment's
// surrogate knows the importance points only, and its long stays in a
// tail (GARCH on DAX, seed 7: 10–14 iterations at μ ≈ 1.9) weigh on the
// ESS of all draws long after the refitted surrogate mixes well (seed 7:
// ESS 115 over the 1,800 draws of two segments, 492 over the second's
// 1,200). So the extension is the shorter of that and what a model of
// the ESS of segments with different autocorrelation times asks for: n
// draws of time τ_k each make ESS (Σn)²/Σ nτ, the draws so far count
// with Σ nτ = N²/ess, and the new ones with the last segment's τ (its
// draws over its own ESS, scaled as above).
//
// Smaller extensions were tried (aiming at 1.05·TargetESS, at most
// doubling the draws, and sizing an R-hat-only one by R̂² − 1 ∝ 1/n):
// they saved 3–10 s on GARCH (σ² node filter), but the LGSSM on the S&P 500 returns then
// stopped after 3,825 iterations per chain with R-hat 1.006 and bulk ESS
// ≥ 1,311 and sds 0.86–0.94 of the reference, its chains not yet in the
// tails that the 18 s run of this rule reaches (ratios 1.02–1.06).
func (f *fit) fullExtension(post *Posterior, logPost [][]float64, ess float64, last segment, retarget func(*tmix.Mixture, *surrogate.Surrogate, float64)) int {
	pr := &f.prep
	kept := 0
	for _, u := range post.U {
		kept += len(u) / f.dim
	}
	iat := float64(kept) / math.Max(ess, 1)
	gain := 1.0 // the refitted proposal's autocorrelation time over the old one's
	if retarget != nil && pr.proposal != nil {
		q, hold, old := f.refitProposal(post.U, logPost)
		if q != nil {
			pr.proposal = proposalComponents(q)
			post.Preparation.proposal = pr.proposal
			gain = math.Min(1, (2*hold-1)/(2*old-1))
		}
		if pr.sur != nil || f.isPts.xs != nil {
			f.setSurrogate(f.refitSurrogate(post.U, logPost))
			post.Preparation.sur, post.Preparation.SurrogateHold = pr.sur, pr.SurrogateHold
			post.Preparation.Independence = pr.Independence
		}
		retarget(mixtureOf(pr.proposal), pr.sur, pr.Independence)
	}
	iat *= gain
	pr.IAT, post.Preparation.IAT = iat, iat
	target := fullExtendMargin * float64(f.s.TargetESS)
	more := math.Max(target-ess, 0) * iat
	if n := float64(kept); last.kept > 0 && last.kept < kept && last.ess > 0 && ess < target {
		tau := gain * float64(last.kept) / last.ess
		more = math.Min(more, segmentsMore(n, n*n/math.Max(ess, 1), tau, target))
	}
	floor := fullRhatExtend // R-hat alone is short
	if ess < float64(f.s.TargetESS) {
		floor = fullESSExtend
	}
	more = math.Max(more, floor*float64(kept))
	return f.s.Thin * min(50000, max(fullMinExtend, int(math.Ceil(more/float64(f.s.Chains)))))
}

// segmentsMore returns the draws x of autocorrelation time tau that bring
// n draws whose Σ n_kτ_k is s to ESS target: (n + x)²/(s + xτ) = target.
func segmentsMore(n, s, tau, target float64) float64 {
	b := 2*n - target*tau
	c := n*n - target*s // < 0 while n²/s = ESS < target
	if c >= 0 {
		return 0
	}
	return (-b + math.Sqrt(b*b-4*c)) / 2
}

// checkpointEvery returns the iterations between a checkpointed run's
// checkpoints: about checkpointPeriod of wall time at the planned cost per
// iteration (the preparation's, so a resumed run gets the same), with
// Workers running the Chains in waves, and at most Run's default of 1000.
// At 1000 a planned run of a few hundred slow iterations (GARCH on the
// S&P 500 with its σ² node filter: about a second each) wrote no
// checkpoint between its start
// and its end, and an interrupt lost all of its sampling.
func (f *fit) checkpointEvery() int {
	pr := &f.prep
	per := pr.CostPlain
	switch pr.Gradient {
	case FullGradient:
		per = pr.CostFull
	case ControlVariateGradient:
		per = pr.CostCV
	}
	if !(per > 0) {
		return 0 // Run's default
	}
	waves := float64((f.s.Chains + f.s.Workers - 1) / f.s.Workers)
	every := checkpointPeriod.Seconds() / (waves * per)
	if every >= 1000 {
		return 0
	}
	return max(1, int(every))
}

// checkpointPeriod is the wall time between a checkpointed Fit's
// checkpoints (each writes the chains' states and syncs the recorders'
// files: milliseconds).
const checkpointPeriod = 20 * time.Second

// fullExtendMargin is the ESS, in units of TargetESS, that an extension
// of FullGradient's chains aims at, and fullMinExtend its fewest
// iterations per chain (no transient: a short one costs nothing extra).
// fullRhatExtend is the extension, as a share of the draws so far, when
// only R-hat falls short, and fullESSExtend the least one when the ESS
// does: the ESS model sizes it then (half the draws so far, as for
// R-hat, took GARCH on DAX, σ² node filter, from an ESS of 378 at 1,800 draws to 900 more
// draws where 450 did; seeds 1–8: 201 s in all against 204 s, the
// slowest 35.2 s and 35.4 s). The LGSSM on the S&P 500
// returns, which stopped short of its tails with smaller extensions,
// is run on by cheapMore.
const (
	fullExtendMargin = 1.2
	fullMinExtend    = 50
	fullRhatExtend   = 0.5
	fullESSExtend    = 0.25
)
