package sgmcmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Posterior is what Fit returns: the kept draws of every chain, their
// summary, diagnostics and warnings.
type Posterior struct {
	Names []string // natural parameter names (Model.ParamNames)
	// U and Natural hold each chain's kept draws, row-major: draw i of
	// chain c is U[c][i*Dim:(i+1)*Dim] in the unconstrained coordinates and
	// Natural[c][i*len(Names):...] in the natural ones.
	U, Natural [][]float64
	Dim        int
	// KSD is the kernel Stein discrepancy of KSDDraws thinned draws in u
	// (nil when skipped or when it could not be computed: see Warnings).
	KSD *ksd.Result
	// Preparation is what the fit learned before sampling.
	Preparation Preparation
	// Iterations is the number of sampling iterations per chain (the
	// most over chains: a time budget or an interrupt may stop some
	// earlier); BurnIn more, per chain, prepared the chains before them
	// (adaptation windows, or importance-sampling points over Chains)
	// and were discarded.
	Iterations, BurnIn, Thin int
	Skipped                  int           // non-finite iterations skipped, over all chains
	Run                      *Result       // the sampler run
	Sampling, Total          time.Duration // wall-clock time of the sampling and of the whole fit
	// Warnings lists every reason not to trust the summary as it is:
	// R-hat above 1.01, bulk or tail ESS below 400, skipped iterations,
	// stopped chains, an interrupted run, an imprecise anchor.
	Warnings []string

	summary []ParamSummary

	model ssm.Model   // the fitted model and data, for States, Forecast and PredictiveScore
	data  ssm.Dataset // (sgmcmc/states.go)
	// resumed: the preparation was read from a checkpoint, so
	// Preparation.Seconds is not part of Total.
	resumed bool
}

// ParamSummary summarises the posterior draws of one natural parameter,
// pooled over chains.
type ParamSummary struct {
	Name             string
	Mean, SD         float64
	Q05, Q50, Q95    float64
	BulkESS, TailESS float64 // Vehtari et al. (2021)
	Rhat             float64 // rank-normalised split R-hat
	MCSE             float64 // Monte Carlo standard error of the mean
}

// Summary returns one row per natural parameter.
func (p *Posterior) Summary() []ParamSummary { return p.summary }

// Draws returns the number of kept draws over all chains.
func (p *Posterior) Draws() int {
	n := 0
	for _, c := range p.U {
		n += len(c) / p.Dim
	}
	return n
}

// WriteText writes the summary table.
func (p *Posterior) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "param\tmean\tsd\tq05\tq50\tq95\tbulk ESS\ttail ESS\tR-hat\tMCSE\t")
	for _, r := range p.summary {
		fmt.Fprintf(tw, "%s\t%.4g\t%.3g\t%.4g\t%.4g\t%.4g\t%.0f\t%.0f\t%.3f\t%.2g\t\n",
			r.Name, r.Mean, r.SD, r.Q05, r.Q50, r.Q95, r.BulkESS, r.TailESS, r.Rhat, r.MCSE)
	}
	return tw.Flush()
}

// sample adapts the metric, runs the chains and builds the posterior.
func (f *fit) sample(ctx context.Context, start time.Time) (*Posterior, error) {
	pr := &f.prep
	names := f.model.ParamNames()
	natural := func(dst, u []float64) { f.model.Constrain(dst, u) }
	if pr.Starts == nil {
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
			return nil, err
		}
		if f.s.Checkpoint != "" {
			if err := f.savePreparation(); err != nil {
				return nil, err
			}
		}
	}
	h := pr.StepSize
	iters := f.s.Iterations
	lastSeg := 2 // segments: the first and up to two extensions
	if iters == 0 {
		least := sgldMinIters
		if pr.Gradient == FullGradient {
			least = fullMinIters // exact chains: no transient, a fresh draw every few steps
		}
		iters = max(least, int(math.Ceil(1.25*float64(f.s.TargetESS)*pr.IAT/float64(f.s.Chains))))
		iters = min(iters, 50000)
		if pr.Gradient == FullGradient && pr.Proposal != nil && f.s.Checkpoint == "" {
			// A short first segment: the proposal is refitted to its
			// draws (refitProposal) before the rest, which may take one
			// more extension. (A checkpoint makes one segment: no refit.)
			iters = min(iters, isPilot)
			lastSeg = 3
		}
	}
	iters *= f.s.Thin
	var setupErr error
	newEst, newMethod, acceptance, retarget := f.chainFactories(f.noiseW(), &setupErr)
	logPost := make([][]float64, f.s.Chains) // the draws' log posteriors (refitProposal)
	var user *segmented
	if f.s.Recorder != nil && f.s.Checkpoint == "" {
		user = &segmented{r: f.s.Recorder}
	}
	starts := pr.Starts
	burn := pr.AdaptIterations
	post := &Posterior{Names: names, Dim: f.dim, Preparation: f.prep, BurnIn: burn, Thin: f.s.Thin, resumed: f.resumed}
	post.model, post.data = f.user, f.data
	post.U = make([][]float64, f.s.Chains)
	post.Natural = make([][]float64, f.s.Chains)
	// Segments: the first of the planned length; while the ESS falls short
	// of TargetESS (the autocorrelation time of a short adaptation window
	// is a rough guess) or R-hat exceeds 1.01, up to two more (three after
	// FullGradient's short first segment, and one more for each extension
	// cut to extendMax times the draws so far), and more while the
	// sampling so far took less than cheapSampling (up to maxSegments in
	// all), continuing every chain where it stopped. A fixed Iterations or
	// a checkpoint make it one segment. A time budget (MaxTime) bounds the
	// wall time of all segments together: each chain of a segment gets
	// the budget left over the waves in which Run's workers take the
	// chains (4 chains on 2 workers: two waves of half of it), so a fit
	// that does not reach it runs as it would without one.
	var res *Result
	var runErr error
	stopped := 0
	stay, stayChain := 0, 0  // the last segment's longest stay at one point (longestStay)
	stuck := false           // and whether it is too long (stayLimit, stayFrac)
	var spread *spreadResult // the spread check's outcome (tailcheck.go)
	spreadAt := 0            // and the iterations per chain it saw
	done := 0                // iterations per chain so far
	for seg := 0; ; seg++ {
		trace := &Trace{Transform: natural, NaturalDim: len(names)}
		recs := []Recorder{trace}
		var draws *drawFile
		if f.s.Checkpoint != "" {
			// One segment: its draws survive an interrupt (drawFile).
			draws = newDrawFile(trace, f.s.Checkpoint+".draws", f.dim, f.fingerprint())
			recs[0] = draws
		}
		switch {
		case user != nil:
			recs = append(recs, user)
		case f.s.Recorder != nil:
			// One segment with a checkpoint: the recorder itself, so that a
			// Resumer (CSVRecorder) continues its file on resume.
			recs = append(recs, f.s.Recorder)
		}
		if f.s.Progress != nil {
			recs = append(recs, &Printer{W: f.s.Progress, Interval: 2 * time.Second, Names: names, Transform: natural})
		}
		if pr.Gradient == FullGradient {
			if pr.Surrogate != nil {
				f.log("sampling: %d chains × %d iterations of Metropolis–Hastings on log posteriors, %.0f%% surrogate transitions and %.0f%% random-walk steps (autocorrelation time ≈ %.0f)",
					f.s.Chains, iters, 100*pr.Independence, 100*(1-pr.Independence), pr.IAT)
			} else {
				f.log("sampling: %d chains × %d iterations of Metropolis–Hastings on full-data scores, Langevin step %.3g (autocorrelation time ≈ %.0f)",
					f.s.Chains, iters, h, pr.IAT)
			}
		} else {
			f.log("sampling: %d chains × %d iterations of %v-gradient SGLD, step %.3g (autocorrelation time ≈ %.0f)",
				f.s.Chains, iters, pr.Gradient, h, pr.IAT)
		}
		st := Settings{
			Iterations:  iters,
			Runtime:     f.chainBudget(post.Sampling),
			Thin:        f.s.Thin,
			Schedule:    Constant(h),
			Chains:      f.s.Chains,
			Concurrency: f.s.Workers,
			Seed:        f.s.Seed + uint64(seg)*0x6A09E667F3BCC909,
			NonFinite:   Skip,
			Recorder:    Multi(recs...),
			RecordAll:   true,
		}
		if seg == 0 {
			st.Checkpoint, st.Resume, st.Fingerprint = f.s.Checkpoint, f.s.Checkpoint != "", f.fingerprint()
			st.CheckpointEvery = f.checkpointEvery()
		}
		res, runErr = Run(ctx, newEst, newMethod,
			func(c int, u []float64) error { copy(u, starts[c]); return nil },
			f.dim, st)
		if draws != nil {
			// Run's Done closed it unless Init or Resume failed.
			if err := draws.close(); err != nil && runErr == nil {
				runErr = err
			}
		}
		if setupErr != nil {
			return nil, setupErr
		}
		if res == nil {
			return nil, runErr
		}
		post.Run = res
		post.Sampling += res.Runtime
		for c, ch := range res.Chains {
			post.Iterations = min(post.Iterations, ch.Iterations)
			post.Skipped += ch.Skipped
			starts[c] = ch.U
			if ch.Err != nil {
				stopped++
				post.Warnings = append(post.Warnings, fmt.Sprintf("chain %d stopped at iteration %d: %v", c, ch.Iterations, ch.Err))
			}
		}
		for c, ch := range trace.Chains {
			post.U[c] = append(post.U[c], ch.U...)
			post.Natural[c] = append(post.Natural[c], ch.Natural...)
			logPost[c] = append(logPost[c], ch.LogPost...)
		}
		if user != nil {
			user.offset += iters
		}
		done += iters
		// The stay check on every segment, the last one included (a cap,
		// a fixed Iterations, a checkpoint or a time budget ends the loop
		// below).
		segU := make([][]float64, len(trace.Chains))
		for c, ch := range trace.Chains {
			segU[c] = ch.U
		}
		stay, stayChain = longestStay(segU, f.dim)
		stuck = pr.Gradient == FullGradient && stay >= max(stayLimit, int(stayFrac*float64(iters)))
		if seg >= lastSeg && (seg+1 >= maxSegments || float64(done*f.s.Chains)*f.iterCost() >= cheapSampling) || runErr != nil || stopped > 0 ||
			f.s.Iterations != 0 || f.s.Checkpoint != "" || f.budgetSpent(res, post) {
			break
		}
		ess, rhat := convergence(post, len(names))
		cheapMore, spreadMore := 0, 0
		if ess >= float64(f.s.TargetESS) && rhat <= 1.01 {
			if cheapMore = f.cheapMore(done); !stuck && cheapMore == 0 {
				// The spread check, once: chains that pass R-hat and ESS
				// may still share a blind spot in the tails.
				n := f.spreadDraws()
				if n == 0 || spread != nil {
					break
				}
				var err error
				if spread, err = f.spreadCheck(ctx, post.U, n, uint64(seg)); err != nil {
					f.log("spread check not run: %v", err)
					break
				}
				spreadAt = done
				if k, _ := spread.off(); k < 0 {
					f.log("spread check: chains' sds %s times an importance-sampling check's (ESS %.0f)", fmtRatios(spread), spread.ess)
					break
				}
				f.log("spread check: %s", spreadWarning(spread, names))
				spreadMore = done
			}
			if stuck {
				f.log("chain %d stood %d iterations at one point: its proposals miss part of the posterior there", stayChain, stay)
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
			iters = max(f.fullExtension(post, logPost, ess, last, retarget), f.s.Thin*cheapMore, spreadMore)
		} else {
			// Enough for the ESS target, and at least half as many again
			// when only R-hat is short.
			more := float64(done) * math.Max(float64(f.s.TargetESS)/math.Max(ess, 1)-1, 0.5) * 1.2
			iters = min(50000, max(200, int(math.Ceil(more))))
		}
		iters, lastSeg = capExtension(iters, done, lastSeg)
		f.log("ESS %.0f (smallest bulk or tail; target %d), R-hat %.3f: %d more iterations per chain", ess, f.s.TargetESS, rhat, iters)
	}
	// The spread check on the final draws, unless it already passed on
	// them: a fixed Iterations, a checkpoint, a cap or an extension after
	// a failed check end here.
	if n := f.spreadDraws(); n > 0 && ctx.Err() == nil && done > spreadAt {
		if r, err := f.spreadCheck(ctx, post.U, n, 1<<20); err == nil {
			spread = r
			f.log("spread check: chains' sds %s times an importance-sampling check's (ESS %.0f)", fmtRatios(r), r.ess)
		} else {
			f.log("spread check not run: %v", err)
		}
	}
	if spread != nil {
		if w := spreadWarning(spread, names); w != "" {
			post.Warnings = append(post.Warnings, w)
		}
	}
	if stuck {
		post.Warnings = append(post.Warnings, fmt.Sprintf("chain %d stood %d iterations at one point in the last segment: the independence proposals or surrogate transitions miss part of the posterior there, which R-hat and ESS may not show; run longer (-iters) or check the tails", stayChain, stay))
	}
	if acc, ind := acceptance(); !math.IsNaN(ind) {
		if math.IsNaN(acc) {
			acc = 0 // no Langevin proposal (JSON has no NaN)
		}
		post.Preparation.Accept, post.Preparation.AcceptIndependent = acc, ind
		f.log("Metropolis–Hastings acceptance rates: %s", post.Preparation.acceptance())
	}
	if user != nil {
		if err := user.r.Done(res); err != nil {
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
		if f.s.Checkpoint != "" && runErr == nil && res.Status == IterationLimit {
			return nil, fmt.Errorf("%w: its draws are in the recorder's output; remove %s, %[2]s.prep and %[2]s.draws to fit again",
				ErrFinished, f.s.Checkpoint)
		}
		if runErr != nil {
			return nil, fmt.Errorf("sgmcmc: no draws kept: %w", runErr)
		}
		if res.Status == RuntimeLimit {
			return nil, fmt.Errorf("sgmcmc: no draws kept: the time budget (MaxTime %v) ran out before the first draw", f.s.MaxTime)
		}
		return nil, fmt.Errorf("sgmcmc: no draws kept: the chains stopped after %d iterations", post.Iterations)
	}
	switch {
	case errors.Is(runErr, context.Canceled) || errors.Is(runErr, context.DeadlineExceeded):
		post.Warnings = append(post.Warnings, fmt.Sprintf("interrupted after %s iterations per chain: the summary uses the %d draws kept so far", post.iterationRange(), post.Draws()))
	case f.budgetSpent(res, post):
		post.Warnings = append(post.Warnings, fmt.Sprintf("time budget (%v of sampling) reached after %s of the %d planned iterations per chain", f.s.MaxTime, post.iterationRange(), done))
	case runErr != nil && stopped == 0:
		post.Warnings = append(post.Warnings, "run: "+strings.ReplaceAll(runErr.Error(), "\n", "; "))
	}
	if pr.Fallback != "" {
		post.Warnings = append(post.Warnings, pr.Fallback)
	}
	if f.newtonWarn != "" {
		post.Warnings = append(post.Warnings, f.newtonWarn)
	}
	post.Warnings = append(slices.Clip(f.dataWarn), post.Warnings...)
	if dc := pr.Discretisation; dc != nil {
		if k, v := argMaxAbs(dc.Shift); v > discretisationMaxShift {
			post.Warnings = append(post.Warnings, fmt.Sprintf("the model's exact scorer is exact only up to its discretisation, and the correction towards its finer scorer "+
				"moves the posterior mean of %s by %.2f posterior sd: it rests on a quadratic model of a large difference; refine the scorer (GARCH: Nodes, -nodes)",
				names[k], v))
		}
		for k, b := range dc.Curve {
			if dc.Cross == nil && appliedCurve(b) != b {
				post.Warnings = append(post.Warnings, fmt.Sprintf("the model's exact scorer is exact only up to its discretisation, and its curvature along whitened axis %d differs from the finer scorer's "+
					"by %.2f (more than %.1f): the correction applies the tilt only; refine the scorer (GARCH: Nodes, -nodes)", k, b, discretisationMaxCurve))
				break
			}
		}
	}
	if w := f.gridEdgeWarning(); w != "" {
		post.Warnings = append(post.Warnings, w)
	}
	if n := f.clippedSteps(); n > 0 {
		post.Warnings = append(post.Warnings, fmt.Sprintf("%d of the SGLD steps injected more noise than the posterior allows (step %.3g with gradient noise λ_max(W) = %.3g needs h(1 + λ) ≤ 2): the draws are wider than the posterior; use a smaller StepSize or leave it 0",
			n, h, maxEigen(f.noiseW(), f.dim)))
	}
	if post.Skipped > 0 {
		post.Warnings = append(post.Warnings, fmt.Sprintf("%d iterations with a non-finite gradient or parameter were skipped", post.Skipped))
	}
	if pr.ShiftSD > 0.25 && pr.Gradient == ControlVariateGradient {
		fix := "raise AnchorPasses or N"
		if f.prepSubset() {
			fix = fmt.Sprintf("it comes from PrepObs = %d of the %d observations; raise PrepObs or set it to 0", f.s.PrepObs, f.total)
		}
		post.Warnings = append(post.Warnings, fmt.Sprintf("the full-data score at the mode is imprecise: its error may shift the mean by %.2f posterior sd (%s)", pr.ShiftSD, fix))
	}
	post.summarize()
	if dc := post.Preparation.Discretisation; dc != nil && ctx.Err() == nil {
		if err := f.checkResidual(ctx, post); err != nil {
			post.Warnings = append(post.Warnings, "discretisation correction not checked after sampling: "+err.Error())
		}
		if w := residualWarning(dc, post.Names); w != "" {
			post.Warnings = append(post.Warnings, w)
		}
	}
	if f.s.KSDDraws > 0 && ctx.Err() == nil {
		k, err := f.ksd(ctx, post)
		if err != nil {
			post.Warnings = append(post.Warnings, "KSD not computed: "+err.Error())
		}
		post.KSD = k
	}
	post.Total = time.Since(start)
	return post, nil
}

// chainBudget returns the compute time each chain of the next sampling
// segment may take (Settings.Runtime) under the time budget MaxTime,
// after sampling that took used: what is left over the number of waves
// in which Workers run Chains. 0 without a budget, negative when it is
// spent.
func (f *fit) chainBudget(used time.Duration) time.Duration {
	if f.s.MaxTime == 0 {
		return 0
	}
	left := f.s.MaxTime - used
	if left <= 0 {
		return -1
	}
	waves := (f.s.Chains + f.s.Workers - 1) / f.s.Workers
	// At least 1 ns: Runtime 0 would mean no budget (MaxTime = 1 ns ran
	// every planned iteration).
	return max(left/time.Duration(waves), 1)
}

// budgetSpent reports whether the time budget stopped the sampling: a
// segment's chains ran out of their share, or no time is left.
func (f *fit) budgetSpent(res *Result, post *Posterior) bool {
	return res.Status == RuntimeLimit || f.chainBudget(post.Sampling) < 0
}

// iterationRange returns the sampling iterations per chain: Iterations,
// or "lo–hi" (kept draws times Thin) when the chains stopped at different
// counts.
func (p *Posterior) iterationRange() string {
	lo, hi := math.MaxInt, 0
	for _, c := range p.U {
		n := len(c) / p.Dim * p.Thin
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo >= hi {
		return fmt.Sprint(p.Iterations)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// summarize fills the summary table and the convergence warnings.
func (p *Posterior) summarize() {
	d := len(p.Names)
	nMin := math.MaxInt
	for _, c := range p.Natural {
		nMin = min(nMin, len(c)/d)
	}
	p.summary = make([]ParamSummary, d)
	for j, name := range p.Names {
		cols := make([][]float64, len(p.Natural))
		var pooled []float64
		for c, x := range p.Natural {
			col := make([]float64, len(x)/d)
			for i := range col {
				col[i] = x[i*d+j]
			}
			pooled = append(pooled, col...)
			cols[c] = col[:nMin]
		}
		mean, sd := meanSD(pooled)
		sorted := slices.Clone(pooled)
		slices.Sort(sorted)
		r := ParamSummary{Name: name, Mean: mean, SD: sd,
			Q05: quantile(sorted, 0.05), Q50: quantile(sorted, 0.5), Q95: quantile(sorted, 0.95)}
		if nMin >= 4 {
			r.BulkESS = ksd.BulkESS(cols)
			r.TailESS = tailESS(cols, r.Q05, r.Q95)
			r.Rhat = ksd.RankRhat(cols)
			r.MCSE = sd / math.Sqrt(r.BulkESS)
		} else {
			r.BulkESS, r.TailESS, r.Rhat, r.MCSE = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		p.summary[j] = r
		switch {
		case nMin < 4:
			what := "ESS and R-hat"
			if len(pooled) < 2 {
				what = "an sd, ESS and R-hat"
			}
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: %d draws per chain are too few for %s", name, nMin, what))
		case math.IsNaN(r.Rhat):
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: R-hat cannot be computed (constant chains, or non-finite draws)", name))
		case !(r.Rhat <= 1.01):
			who := "the chains disagree"
			if len(p.Natural) == 1 {
				who = "the halves of the chain disagree"
			}
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: R-hat %.3f > 1.01: %s (not converged); run longer", name, r.Rhat, who))
		}
		switch {
		case nMin >= 4 && (math.IsNaN(r.BulkESS) || math.IsNaN(r.TailESS)):
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: the ESS cannot be computed (non-finite draws)", name))
		case nMin >= 4 && !(r.BulkESS >= 400 && r.TailESS >= 400):
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: bulk ESS %.0f, tail ESS %.0f (< 400): too few effective draws for reliable quantiles; run longer", name, r.BulkESS, r.TailESS))
		}
	}
}

// tailESS is the tail effective sample size of Vehtari et al. (2021): the
// smaller ESS of the indicators of the 5% and 95% quantiles, on split
// chains.
func tailESS(cols [][]float64, q05, q95 float64) float64 {
	ind := func(q float64) float64 {
		var split [][]float64
		for _, c := range cols {
			half := len(c) / 2
			for _, part := range [][]float64{c[:half], c[len(c)-half:]} {
				x := make([]float64, len(part))
				for i, v := range part {
					if v <= q {
						x[i] = 1
					}
				}
				split = append(split, x)
			}
		}
		return ksd.ESS(split)
	}
	return math.Min(ind(q05), ind(q95))
}

func meanSD(x []float64) (float64, float64) {
	n := float64(len(x))
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= n
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	if len(x) < 2 {
		return m, math.NaN()
	}
	return m, math.Sqrt(ss / (n - 1))
}

// quantile is the type-7 quantile of sorted x.
func quantile(x []float64, q float64) float64 {
	n := len(x)
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return x[n-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}

// ksd computes the KSD of evenly thinned draws, with full-data scores from
// one tiling pass at each (the likelihood part; the exact full-data score
// for chains on it) plus the prior gradient.
func (f *fit) ksd(ctx context.Context, post *Posterior) (*ksd.Result, error) {
	var pooled []float64
	for _, c := range post.U {
		pooled = append(pooled, c...)
	}
	n := len(pooled) / f.dim
	K := min(f.s.KSDDraws, n)
	x := make([]float64, K*f.dim)
	for i := range K {
		j := i * n / K
		copy(x[i*f.dim:(i+1)*f.dim], pooled[j*f.dim:(j+1)*f.dim])
	}
	scores := make([]float64, K*f.dim)
	if f.prep.Gradient == FullGradient || f.deterministic() {
		// The exact full-data posterior's scores, not a tiling's (whose
		// buffers may not forget the state: on the S&P 500 GARCH's tiled
		// score is 1.3 posterior sds off): the chains' target with
		// full-data scores, the posterior the control variate's chains
		// approximate otherwise. One pass of the data each, where a
		// tiling filters every block's buffers too (three times the data
		// at S = B: 20 of the S&P 500 SVM fit's 60 s).
		pts := make([][]float64, K)
		for i := range pts {
			pts[i] = x[i*f.dim : (i+1)*f.dim]
		}
		sc, err := f.fullScores(ctx, pts)
		if err != nil {
			return nil, err
		}
		prior := make([]float64, f.dim)
		for i, g := range sc {
			f.model.LogPrior(prior, pts[i])
			for j := range g {
				scores[i*f.dim+j] = g[j] + prior[j]
			}
		}
		return ksd.Compute(x, f.discretisationScores(x, scores), f.dim, nil)
	}
	err := f.parallel(K, f.tileSet(), func(est *gradient.Estimator, i int) error {
		rng := rand.New(rand.NewPCG(f.s.Seed, 1<<44+uint64(i)))
		u, g := x[i*f.dim:(i+1)*f.dim], scores[i*f.dim:(i+1)*f.dim]
		if _, err := est.Tile(ctx, g, u, rng.IntN(f.s.S), rng, nil); err != nil {
			return err
		}
		prior := make([]float64, f.dim)
		f.model.LogPrior(prior, u)
		for j := range g {
			g[j] += prior[j]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ksd.Compute(x, f.discretisationScores(x, scores), f.dim, nil)
}

// discretisationScores adds the discretisation correction's gradient
// (Preparation.Discretisation) to the scores at the points x, so that the
// KSD measures the draws against the chains' target.
func (f *fit) discretisationScores(x, scores []float64) []float64 {
	if f.prep.Discretisation == nil {
		return scores
	}
	d := newDiscretised(nil, f.prep.Discretisation)
	for i := 0; i < len(x); i += f.dim {
		d.correction(scores[i:i+f.dim], x[i:i+f.dim])
	}
	return scores
}

// savePreparation writes the preparation next to the checkpoint, so that a
// resumed fit samples with exactly the same anchor, preconditioner and step.
func (f *fit) savePreparation() error {
	b, err := json.Marshal(struct {
		Fingerprint string
		Prep        Preparation
		Surrogate   *Surrogate `json:",omitempty"`
	}{f.fingerprint(), f.prep, f.prep.Surrogate})
	if err != nil {
		return err
	}
	// Sealed with a checksum (ckfile.go), written atomically.
	if err := atomicWrite(f.s.Checkpoint+".prep", seal(b)); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}

// loadPreparation reads a saved preparation; false when there is none.
func (f *fit) loadPreparation() (bool, error) {
	b, err := os.ReadFile(f.s.Checkpoint + ".prep")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var saved struct {
		Fingerprint string
		Prep        Preparation
		Surrogate   *Surrogate
	}
	body, why := unseal(b)
	if why != "" {
		return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, why)
	}
	if err := json.Unmarshal(body, &saved); err != nil {
		return false, damaged(f.s.Checkpoint+".prep", f.s.Checkpoint, err.Error())
	}
	if fp := f.fingerprint(); saved.Fingerprint != fp {
		return false, fmt.Errorf("%w: %s.prep was written by a fit with other data or settings (remove it and %s for a fresh run)",
			ErrCheckpoint, f.s.Checkpoint, f.s.Checkpoint)
	}
	p := f.dim
	saved.Surrogate.bind(f.surBase())
	if len(saved.Prep.Mode) != p || len(saved.Prep.Chol) != p*p || len(saved.Prep.Anchor) != p ||
		len(saved.Prep.NoisePlain) != p*p || len(saved.Prep.NoiseCV) != p*p || !saved.Prep.Discretisation.valid(p) ||
		saved.Surrogate != nil && !saved.Surrogate.valid(p) {
		return false, fmt.Errorf("%w: %s.prep has the wrong dimensions", ErrCheckpoint, f.s.Checkpoint)
	}
	f.prep = saved.Prep
	f.prep.Surrogate = saved.Surrogate
	if dc := f.prep.Discretisation; dc != nil && dc.Coarse {
		coarse := f.model
		for range max(1, dc.Level) {
			cs, ok := coarse.(ssm.Coarsener)
			if ok {
				coarse, ok = cs.Coarsen()
			}
			if !ok {
				return false, fmt.Errorf("%w: %s.prep samples a coarser discretisation that the model does not offer", ErrCheckpoint, f.s.Checkpoint)
			}
		}
		f.model = coarse
	}
	if f.prep.Grid.Nodes > 0 {
		if err := f.prep.Grid.Validate(); err != nil {
			return false, fmt.Errorf("%w: %s.prep: %v", ErrCheckpoint, f.s.Checkpoint, err)
		}
		f.setGrid(f.prep.Grid)
	}
	if f.prep.Exact {
		f.setExact(true)
	}
	return true, nil
}

// modelKey identifies a model for the fingerprint: its type, and its
// settings (GARCH's Nodes, a prior given by value or by pointer) when
// they print the same in every process: pointers are followed, and a
// function, map or channel inside leaves the type alone. (Pointers used
// to leave the type alone too: a resumed fit with another prior passed by
// pointer reused the checkpoint.)
func modelKey(m ssm.Model) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%T", m)
	if !writeKey(&b, reflect.ValueOf(m), 0) {
		return fmt.Sprintf("%T", m)
	}
	return b.String()
}

// writeKey writes v to b, following pointers (to a depth of 32), and
// reports false when v holds something that does not print the same in
// every process (functions, maps, channels, unsafe pointers, cycles).
func writeKey(b *strings.Builder, v reflect.Value, depth int) bool {
	if depth > 32 {
		return false
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		fmt.Fprintf(b, "%v", v)
		return true
	case reflect.Array, reflect.Slice:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteByte(' ')
			}
			if !writeKey(b, v.Index(i), depth+1) {
				return false
			}
		}
		b.WriteByte(']')
		return true
	case reflect.Struct:
		b.WriteByte('{')
		for i := range v.NumField() {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(v.Type().Field(i).Name + ":")
			if !writeKey(b, v.Field(i), depth+1) {
				return false
			}
		}
		b.WriteByte('}')
		return true
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return true
		}
		if v.Kind() == reflect.Pointer {
			b.WriteByte('&')
		} else {
			fmt.Fprintf(b, "%v", v.Elem().Type())
		}
		return writeKey(b, v.Elem(), depth+1)
	}
	return false
}

// fingerprint identifies everything that determines the preparation.
func (f *fit) fingerprint() string {
	h := uint64(14695981039346656037)
	add := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	for _, seq := range f.data.Sequences {
		add(uint64(len(seq.Y)))
		for _, y := range seq.Y {
			add(math.Float64bits(y))
		}
	}
	s := f.s
	return fmt.Sprintf("%s|%x|S%d B%d N%d NC%d NA%d P%d E%v F%d G%d W%d A%d K%d AW%d h%v seed%d chains%d thin%d init%v prep%d",
		modelKey(f.user), h, s.S, s.B, s.N, s.CVParticles, s.AnchorParticles, s.Proposal, s.Exact, s.Filter, s.Gradient, s.WarmUp, s.AnchorPasses, s.NoiseProbes,
		s.AdaptWindow, s.StepSize, s.Seed, s.Chains, s.Thin, s.Init, s.PrepObs)
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
// they saved 3–10 s on GARCH, but the LGSSM on the S&P 500 returns then
// stopped after 3,825 iterations per chain with R-hat 1.006 and bulk ESS
// ≥ 1,311 and sds 0.86–0.94 of the reference, its chains not yet in the
// tails that the 18 s run of this rule reaches (ratios 1.02–1.06).
func (f *fit) fullExtension(post *Posterior, logPost [][]float64, ess float64, last segment, retarget func(*tMixture, *Surrogate, float64)) int {
	pr := &f.prep
	kept := 0
	for _, u := range post.U {
		kept += len(u) / f.dim
	}
	iat := float64(kept) / math.Max(ess, 1)
	gain := 1.0 // the refitted proposal's autocorrelation time over the old one's
	if retarget != nil && pr.Proposal != nil {
		q, hold, old := f.refitProposal(post.U, logPost)
		if q != nil {
			pr.Proposal = q.components()
			post.Preparation.Proposal = pr.Proposal
			gain = math.Min(1, (2*hold-1)/(2*old-1))
		}
		if pr.Surrogate != nil || f.isPts.xs != nil {
			f.setSurrogate(f.refitSurrogate(post.U, logPost))
			post.Preparation.Surrogate, post.Preparation.SurrogateHold = pr.Surrogate, pr.SurrogateHold
			post.Preparation.Independence = pr.Independence
		}
		retarget(mixtureOf(pr.Proposal), pr.Surrogate, pr.Independence)
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
// S&P 500: about a second each) wrote no checkpoint between its start
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
// R-hat, took GARCH on DAX from an ESS of 378 at 1,800 draws to 900 more
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

// convergence returns the smallest bulk or tail ESS and the largest rank
// R-hat over the natural parameters.
func convergence(p *Posterior, d int) (ess, rhat float64) {
	n := math.MaxInt
	for _, c := range p.Natural {
		n = min(n, len(c)/d)
	}
	if n < 4 {
		return 0, math.Inf(1)
	}
	ess = math.Inf(1)
	for j := range d {
		cols := make([][]float64, len(p.Natural))
		for c, x := range p.Natural {
			col := make([]float64, n)
			for i := range col {
				col[i] = x[i*d+j]
			}
			cols[c] = col
		}
		// The summary warns on either ESS, so the stopping rule looks at
		// both: tail ESS (5% and 95% quantiles) is often the smaller.
		pooled := slices.Concat(cols...)
		slices.Sort(pooled)
		tail := tailESS(cols, quantile(pooled, 0.05), quantile(pooled, 0.95))
		ess = math.Min(ess, math.Min(ksd.BulkESS(cols), tail))
		rhat = math.Max(rhat, ksd.RankRhat(cols))
	}
	return ess, rhat
}

// argMaxAbs returns the index and magnitude of a's largest |entry| (−1, 0
// for an empty a).
func argMaxAbs(a []float64) (int, float64) {
	k, m := -1, 0.0
	for i, v := range a {
		if math.Abs(v) > m || k < 0 {
			k, m = i, math.Abs(v)
		}
	}
	return k, m
}

// stayLimit is the longest stay at one point that FullGradient's chains
// may show in their last segment before the fit extends them (and, at
// the end, warns). An independence or surrogate transition leaves x with
// probability about E min(1, w(y)/w(x)), w = π/q, so a stay of 20
// iterations marks a point where the proposal has some twenty times too
// little mass: a part of the posterior the chains reach rarely and then
// stick in. The LGSSM on the S&P 500 returns (a long curved ridge to
// small σ and large τ) showed stays of 38–50 with R-hat ≤ 1.005 and bulk
// ESS ≥ 965 while its sds were 0.73–0.84 of the reference; GARCH on DAX
// stays at most 4–7 times. A stay counts when it is also at least
// stayFrac of the segment's iterations: the longer a chain runs, the
// farther into a tail it reaches and the longer its longest stay, which
// then weighs little (the LGSSM's stays of 38–50 were 5–20% of their
// segments; after 25,000 iterations a stay of 20 is 0.08%).
const (
	stayLimit = 20
	stayFrac  = 0.02
)

// longestStay returns the longest run of identical consecutive draws in
// any chain (us: per chain, p numbers per draw) and that chain.
func longestStay(us [][]float64, p int) (n, chain int) {
	for c, u := range us {
		run := 0
		for i := 0; (i+1)*p <= len(u); i++ {
			if i > 0 && slices.Equal(u[i*p:(i+1)*p], u[(i-1)*p:i*p]) {
				run++
			} else {
				run = 1
			}
			if run > n {
				n, chain = run, c
			}
		}
	}
	return n, chain
}
