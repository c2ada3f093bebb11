package sgmcmc

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
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
	// segments counts the full-data chains' segments that ran with
	// surrogate transitions (segments.surrogate) and with Langevin and
	// independence proposals (segments.other): the surrogate is refitted
	// between segments and may come or go, and Method names both kinds.
	segments segmentKinds
}

// segmentKinds counts a run's full-data segments by their transitions.
type segmentKinds struct {
	Surrogate int `json:",omitempty"`
	Other     int `json:",omitempty"`
}

// mixed reports whether the run used both kinds of segments.
func (k segmentKinds) mixed() bool { return k.Surrogate > 0 && k.Other > 0 }

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
		case !(r.Rhat <= maxRhat):
			who := "the chains disagree"
			if len(p.Natural) == 1 {
				who = "the halves of the chain disagree"
			}
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: R-hat %.3f > %g: %s (not converged); run longer", name, r.Rhat, maxRhat, who))
		}
		switch {
		case nMin >= 4 && (math.IsNaN(r.BulkESS) || math.IsNaN(r.TailESS)):
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: the ESS cannot be computed (non-finite draws)", name))
		case nMin >= 4 && !(r.BulkESS >= minESS && r.TailESS >= minESS):
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s: bulk ESS %.0f, tail ESS %.0f (< %d): too few effective draws for reliable quantiles; run longer", name, r.BulkESS, r.TailESS, minESS))
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
	if f.pseudoMarginal() {
		if err := f.pmKSDScores(ctx, x, scores, K); err != nil {
			return nil, err
		}
		return ksd.Compute(x, scores, f.dim, nil)
	}
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
		rng := rand.New(rand.NewPCG(f.s.Seed, ksdStream+uint64(i)))
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
	if f.prep.dc == nil {
		return scores
	}
	d := newDiscretised(nil, f.prep.dc)
	for i := 0; i < len(x); i += f.dim {
		d.correction(scores[i:i+f.dim], x[i:i+f.dim])
	}
	return scores
}

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

// stuckStay reports whether a longest stay of stay iterations, in a
// segment of iters, is too long (stayLimit, stayFrac).
func stuckStay(stay, iters int) bool {
	return stay >= max(stayLimit, int(stayFrac*float64(iters)))
}

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
