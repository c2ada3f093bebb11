package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/amis"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// FullGradient's chains are prepared by adaptive importance sampling
// (package sgmcmc/internal/amis); this file connects it to the fit: the
// target's Laplace approximation, the batch log posterior on the
// workers, the refit of the proposal to the chains' draws, and the
// preparation it leaves.

// adaptIS runs the importance-sampling adaptation (amis.Adapt) on the
// fit's target and keeps its points for the spread check and the
// surrogate. It returns nil (and no error) when no proposal's importance
// sampling is good enough to use.
func (f *fit) adaptIS(ctx context.Context) (*amis.Result, error) {
	mode, chol := f.targetLaplace()
	return f.adaptISFrom(ctx, mode, chol, 0)
}

// adaptISFrom is adaptIS with the first proposal centred at mode with
// scale chol, its streams offset by off.
func (f *fit) adaptISFrom(ctx context.Context, mode, chol []float64, off uint64) (*amis.Result, error) {
	res, err := amis.Adapt(ctx, amis.Config{
		Mode: mode, Chol: chol, Seed: f.s.Seed, Chains: f.s.Chains,
		DrawStream: isDrawStream + off, LogPostStream: isLogPostStream + off<<27, StartStream: isStartStream + off,
		LogPosteriors: f.logPosteriors,
		Surrogate:     f.chooseSurrogate,
		Log:           f.log,
		Workers:       f.s.Workers,
	})
	if res != nil {
		f.isPts.xs, f.isPts.lps, f.isPts.lw = res.Xs, res.LPs, res.LogW
	}
	return res, err
}

// isPilot is the iterations per chain of the first sampling segment
// after importance sampling, whose draws the proposal is refitted to: a
// shorter pilot refits sooner from fewer draws, a longer one runs longer
// on the importance-sampled proposal (TestFirstSegment).
const isPilot = 150

// proposalComponents returns q for Preparation.proposal.
func proposalComponents(q *tmix.Mixture) []proposalComponent {
	out := make([]proposalComponent, len(q.Weight))
	for k := range q.Weight {
		out[k] = proposalComponent{Weight: q.Weight[k], Center: q.Center[k], Chol: q.Chol[k]}
	}
	return out
}

// mixtureOf returns the mixture of Preparation.proposal's components, or
// nil when there are none.
func mixtureOf(cs []proposalComponent) *tmix.Mixture {
	if len(cs) == 0 {
		return nil
	}
	var w []float64
	var c, l [][]float64
	for _, k := range cs {
		w, c, l = append(w, k.Weight), append(c, k.Center), append(l, k.Chol)
	}
	return tmix.New(w, c, l)
}

// targetLaplace returns the Laplace approximation N(m, C Cᵀ) of the
// chains' target (fresh slices): the preparation's mode u* and L, or,
// with a discretisation correction, the mode moved by its predicted shift
// (Discretisation.Shift) and L rescaled by its curvature,
// C = L diag((1 − b_k)^(−1/2)) in the correction's frame. The first
// importance-sampling proposal is centred there: with the σ² node
// filter, when it was GARCH's default, the coarser model's mode (32
// nodes) was 0.36 posterior sds from its corrected target's in λ on DAX,
// and proposals centred at it took more rounds and gave the chains
// 30–110% more iterations over three seeds (at the 7 quadrature points of
// GARCH's default now, 0.14 sd: go run ./examples/fit -model garch -v).
func (f *fit) targetLaplace() (mode, chol []float64) {
	pr := &f.prep
	mode, chol = slices.Clone(pr.Mode), slices.Clone(pr.Chol)
	dc := pr.dc
	if dc == nil {
		return mode, chol
	}
	p := f.dim
	for i, sd := range cholSD(dc.Chol, p) {
		mode[i] += dc.Shift[i] * sd
	}
	if dc.TargetChol != nil {
		return mode, slices.Clone(dc.TargetChol)
	}
	for i := range p {
		for k := 0; k <= i; k++ {
			chol[i*p+k] = dc.Chol[i*p+k] / math.Sqrt(1-appliedCurve(dc.Curve[k]))
		}
	}
	return mode, chol
}

// refitProposal fits the independence proposal again, to the chains'
// draws so far (us: per chain, row-major; lps: their log posteriors),
// and returns it with its cross-validated holding time on them when that
// is shorter than the current proposal's (old, measured on the same
// draws), else nil. Draws from π cover its tails in
// proportion, where the importance-sampling rounds had few effective
// points: GARCH's chains stood longest at μ → 2, φ → 1, a ridge that 500
// weighted points barely reach (adaptive independence Metropolis–Hastings
// with mixtures fitted to past draws: Giordani and Kohn 2010). Changing
// the kernel between runs, a finite number of times, leaves every run
// π-invariant.
func (f *fit) refitProposal(us, lps [][]float64) (q *tmix.Mixture, hold, old float64) {
	p := f.dim
	cur := mixtureOf(f.prep.proposal)
	n := 0
	for _, l := range lps {
		n += len(l)
	}
	if cur == nil || n < 50*p {
		return nil, 0, 0
	}
	xs, lp := amis.ThinnedDraws(us, lps, p)
	lw := make([]float64, len(xs)) // draws from π: equal weights
	z := make([]float64, p)
	old = amis.ExpectedHold(cur, xs, lp, lw, z)
	q, k, sc, d, hold := amis.BestProposal(xs, lp, lw, z, nil, f.s.Workers)
	if q == nil || !(hold < old) {
		f.log("independence proposal kept: holding time %.2f on the %d draws", old, len(xs))
		return nil, 0, old
	}
	f.log("independence proposal refitted to %d draws: %d Student-t components at %.2f × their fitted scale, defensive weight %.2f; holding time %.2f (cross-validated), the old one's %.2f",
		len(xs), k, sc, d, hold, old)
	return q, hold, old
}

// Independence proposals' share of FullGradient's steps after adaptIS,
// and the Langevin step: the independence steps do the mixing (an
// accepted one is a fresh draw), the Langevin steps move a stuck chain
// locally where the proposal fits badly (a point of large π/q) at about
// four times the cost (two gradients).
const (
	isIndependence = 0.9
	isLangevinStep = 0.7
)

// useIS sets the preparation from adaptIS's result.
func (f *fit) useIS(res *amis.Result) {
	pr := &f.prep
	if res.Chol != nil {
		pr.Chol = res.Chol // the Langevin steps' metric
	}
	pr.proposal = proposalComponents(res.Proposal)
	pr.starts = res.Starts
	pr.AdaptIterations = (res.Evals + f.s.Chains - 1) / f.s.Chains
	f.setSurrogate(res.Sur)
	pr.Accept, pr.AcceptIndependent = 0, res.Accept // no Langevin step yet
	if f.s.StepSize == 0 {
		pr.StepSize = isLangevinStep
	}
	// q's holding time, also with a surrogate: its own is measured on the
	// points it was fitted to, and the first segment is planned from it (planned from the surrogate's, the LGSSM's fell
	// short of TargetESS in tail ESS).
	pr.IAT = amis.IndependenceIAT(res.Hold, pr.Independence)
	pr.ShiftSD = linalg.MaxAbs(linalg.LTrans(pr.Chol, pr.AnchorSE))
	f.log("importance sampling: %d log posteriors; posterior sds in u %v; %s %.0f%% of steps, autocorrelation time ≈ %.1f",
		res.Evals, fmtSD(pr.Chol, f.dim), pr.independenceKind(), 100*pr.Independence, pr.IAT)
}

// logPosteriors evaluates the log posterior (without its gradient) at
// every point on f.s.Workers workers, each with its own estimator. A point
// where it fails (outside the support, a filter that fails for that
// parameter) gets −∞; the first error is returned when every point fails
// or ctx is done.
func (f *fit) logPosteriors(ctx context.Context, xs [][]float64, stream uint64) ([]float64, error) {
	out := make([]float64, len(xs))
	for i := range out {
		out[i] = math.Inf(-1) // until evaluated: a worker without an estimator leaves its points failed
	}
	workers := f.workersFor(len(xs))
	errs := make([]error, workers)
	nfail := make([]int, workers)
	nedge := make([]int, workers)
	werr := f.withEstimators(len(xs), func(w int, est Estimator, i int) error {
		d, ok := est.(logDensity)
		if !ok {
			return fmt.Errorf("sgmcmc: the %v estimator has no log posterior", f.prep.Gradient)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(f.s.Seed, stream+uint64(i)))
		lp, err := d.LogPosterior(ctx, xs[i], rng)
		if err != nil {
			// A failed point weighs 0; the worker goes on.
			lp = math.Inf(-1)
			nfail[w]++
			if ge := (*gradient.GridEdgeError)(nil); errors.As(err, &ge) {
				nedge[w]++
			}
			if errs[w] == nil {
				errs[w] = err
			}
		}
		out[i] = lp
		return nil
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	errs = append(errs, werr)
	f.isEdge[1] += len(xs)
	for _, n := range nedge {
		f.isEdge[0] += n
	}
	err := errors.Join(errs...)
	if !slices.ContainsFunc(out, func(lp float64) bool { return !math.IsInf(lp, -1) }) {
		return nil, fmt.Errorf("sgmcmc: importance sampling: every log posterior failed: %w", err)
	}
	if err != nil {
		// Weight 0 where the filter failed: the importance sample (and
		// the proposal fitted to it) then leaves those points out.
		failed := 0
		for _, n := range nfail {
			failed += n
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		f.log("importance sampling: %d of %d log posteriors failed and weigh 0 (%s)", failed, len(out), msg)
	}
	return out, nil
}
