package sgmcmc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// The spread check. Independence-type and surrogate transitions reach a
// posterior's far tails rarely; until they do, every chain has the same
// blind spot, so R-hat and ESS look fine while the sds are short (the
// LGSSM on the S&P 500 returns, seed 1, stopped after 774 iterations per
// chain: sds ×0.70–0.80 of the Kalman posterior's with R-hat ≤ 1.005 and
// bulk ESS ≥ 687). spreadCheck compares the chains' sd of each parameter
// (in u) with a self-normalised importance-sampling estimate from a
// proposal that is deliberately wider than the chains: an equal mixture
// of multivariate t's with ν = tmix.Nu at the chains' mean, one with their
// covariance and one spreadWiden times as wide, whose tails cover what
// the chains missed while the first keeps the weights' ESS high. Only a
// spread that is short is reported: short spreads are what these kernels
// get wrong, and a wide one is caught where it arises (Precond's noise
// clipping warns). Both estimates
// carry their Monte Carlo error, and the chains' spread is short (or wide)
// only beyond it.
const (
	spreadWiden     = 2.0  // the wide component's scale, in units of the chains' sd
	spreadWideShare = 0.5  // and its weight
	spreadWork      = 3.0  // nominal seconds of one worker the check may cost
	spreadMin       = 200  // fewest log posteriors for a check
	spreadMax       = 2000 // most log posteriors
	spreadTol       = 0.15 // the sd ratio beyond which the check speaks
	spreadZ         = 2.0  // and only this many standard errors beyond it
)

// spreadResult is the outcome of a spread check, per parameter in u.
type spreadResult struct {
	ratio, se []float64 // the chains' sd over the importance-sampling sd, and its standard error
	ess       float64   // the importance weights' effective sample size
	draws     int
}

// off returns the parameter whose chains' sd is furthest short of the
// importance-sampling sd beyond the tolerance, significantly (−1: none).
// Only a short spread counts (a ratio below 1/(1+spreadTol) < 1), so a
// parameter it returns is always one whose chains are too narrow.
func (r *spreadResult) off() int {
	k, worst := -1, 0.0
	for j, q := range r.ratio {
		d := math.Abs(math.Log(q))
		if q < 1/(1+spreadTol) && 1-q > spreadZ*r.se[j] && d > worst {
			k, worst = j, d
		}
	}
	return k
}

// spreadDraws returns the log posteriors a spread check may cost (0: it
// would cost too much).
func (f *fit) spreadDraws() int {
	c := f.prep.CostFull
	if !(c > 0) || f.prep.Gradient != FullGradient {
		return 0
	}
	n := int(spreadWork / c)
	if n < spreadMin {
		return 0
	}
	return min(n, spreadMax)
}

// spreadProposal returns the spread check's proposal for chains of mean
// mean and covariance LLᵀ: an equal mixture of t's at mean, one with
// scale L and one spreadWiden times as wide (weight spreadWideShare).
func spreadProposal(mean, l []float64) *tmix.Mixture {
	wide := make([]float64, len(l))
	for i, v := range l {
		wide[i] = spreadWiden * v
	}
	return tmix.New([]float64{1 - spreadWideShare, spreadWideShare}, [][]float64{mean, mean}, [][]float64{l, wide})
}

// spreadCheck runs the spread check on the chains' draws us (per chain,
// p numbers per draw) with n log posteriors (spreadDraws).
func (f *fit) spreadCheck(ctx context.Context, us [][]float64, n int, stream uint64) (*spreadResult, error) {
	p := f.dim
	// Chains cut by a time budget or an interrupt differ in length: the
	// check reads the same number of draws from each (ESS needs it),
	// leaving out chains with none.
	n0 := math.MaxInt
	var kept [][]float64
	for _, u := range us {
		if k := len(u) / p; k > 0 {
			n0 = min(n0, k)
			kept = append(kept, u)
		}
	}
	us = kept
	for c := range us {
		us[c] = us[c][:n0*p]
	}
	var all [][]float64
	cols := make([][][]float64, p) // per parameter, per chain
	for j := range cols {
		cols[j] = make([][]float64, len(us))
	}
	for c, u := range us {
		for i := 0; (i+1)*p <= len(u); i++ {
			all = append(all, u[i*p:(i+1)*p])
			for j := range p {
				cols[j][c] = append(cols[j][c], u[i*p+j])
			}
		}
	}
	if len(all) < 2*p+2 {
		return nil, fmt.Errorf("%d draws are too few", len(all))
	}
	mean, cov, _ := tmix.WeightedMoments(all, make([]float64, len(all))) // equal weights
	l, err := tmix.Cholesky(cov, p)
	if err != nil {
		return nil, fmt.Errorf("the chains' covariance: %w", err)
	}
	q := spreadProposal(mean, l)
	rng := rand.New(rand.NewPCG(f.s.Seed^spreadSeedXor, stream))
	xs := make([][]float64, n)
	s := make([]float64, p)
	for i := range xs {
		xs[i] = make([]float64, p)
		q.Draw(xs[i], s, rng)
	}
	edge := f.isEdge // the check's own wide proposals are not the chains' (gridEdgeWarning)
	lps, err := f.logPosteriors(ctx, xs, stream)
	f.isEdge = edge
	if err != nil {
		return nil, err
	}
	lw := make([]float64, n)
	for i, x := range xs {
		lw[i] = lps[i] - q.LogDensity(x, s)
	}
	wn := tmix.Normalized(lw)
	if wn == nil {
		return nil, fmt.Errorf("no finite log posterior among %d points", n)
	}
	isMean, isCov, ess := tmix.WeightedMoments(xs, lw)
	r := &spreadResult{ratio: make([]float64, p), se: make([]float64, p), ess: ess, draws: n}
	for j := range p {
		vIS := isCov[j*p+j]
		// Delta method for the self-normalised estimate of the variance:
		// Var ≈ Σ w̄_i² ((x_i − m)² − v)².
		varIS := 0.0
		for i, x := range xs {
			d := (x[j]-isMean[j])*(x[j]-isMean[j]) - vIS
			varIS += wn[i] * wn[i] * d * d
		}
		vC := cov[j*p+j]
		essC := math.Max(ksd.BulkESS(cols[j]), 2)
		// The chains' variance: relative error √(2/ESS) for a normal
		// margin.
		relC := math.Sqrt(2 / essC)
		// The delta method understates the error of heavy-tailed weights
		// (independent draws of the check differed by several of its
		// SEs): at least the normal margin's √(2/ESS), and at least the
		// spread of the estimates from spreadBatches separate batches.
		relIS := math.Max(math.Sqrt(varIS)/vIS, math.Sqrt(2/ess))
		relIS = math.Max(relIS, batchRel(xs, lw, j))
		r.ratio[j] = math.Sqrt(vC / vIS)
		r.se[j] = 0.5 * r.ratio[j] * math.Hypot(relC, relIS)
	}
	return r, nil
}

// spreadWarning returns the warning for a spread check that found the
// chains' spread of parameter k off ("" for none).
func spreadWarning(r *spreadResult, names []string) string {
	k := r.off()
	if k < 0 {
		return ""
	}
	name := fmt.Sprintf("u[%d]", k)
	if len(names) == len(r.ratio) {
		name = names[k]
	}
	return fmt.Sprintf("the chains' spread of %s (in its unconstrained coordinate) is %.2f ± %.2f times an importance-sampling check's (%d log posteriors from a proposal twice as wide, ESS %.0f): narrower than the posterior's; run longer (Iterations, MinIterations)",
		name, r.ratio[k], r.se[k], r.draws, r.ess)
}

// fmtRatios formats a spread check's ratios with their standard errors.
func fmtRatios(r *spreadResult) string {
	s := "["
	for j, q := range r.ratio {
		if j > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.2f±%.2f", q, r.se[j])
	}
	return s + "]"
}

// maxGridEdgeShare is the share of proposals (the chains' and importance
// sampling's) that may be refused because a window's grid did not cover
// the filter's mass at them before the fit warns: each refusal cuts the
// posterior where the grid chosen at the mode is too narrow, which the
// draws cannot show.
const maxGridEdgeShare = 0.001

// gridEdgeWarning returns the warning for proposals refused at a grid's
// edge beyond maxGridEdgeShare ("" for none).
func (f *fit) gridEdgeWarning() string {
	edge, all := f.isEdge[0], f.isEdge[1]
	if f.gridEdges != nil {
		e, n := f.gridEdges()
		edge, all = edge+e, all+n
	}
	if all == 0 || float64(edge) <= maxGridEdgeShare*float64(all) {
		return ""
	}
	return fmt.Sprintf("%d of %d proposals (%.2g%%) were refused because the grid filter's nodes did not cover the state's mass there: the posterior is cut where the grid chosen at the mode is too narrow; fit with particle filters (Filter: ParticleFilter) to compare",
		edge, all, 100*float64(edge)/float64(all))
}

// spreadBatches is the number of batches whose separate estimates of a
// variance give the spread check its batch standard error: more batches
// estimate it more precisely (with 8, to about 27%: 7 degrees of
// freedom) but need more draws (10 a batch; TestBatchRel).
const spreadBatches = 8

// batchRel returns the relative standard error of the self-normalised
// importance-sampling variance of coordinate j, from the spread of its
// estimates on spreadBatches consecutive batches of the draws.
func batchRel(xs [][]float64, lw []float64, j int) float64 {
	n := len(xs) / spreadBatches
	if n < 10 {
		return 0
	}
	vs := make([]float64, 0, spreadBatches)
	for b := range spreadBatches {
		w := tmix.Normalized(lw[b*n : (b+1)*n])
		if w == nil {
			return math.Inf(1)
		}
		m, v := 0.0, 0.0
		for i, wi := range w {
			m += wi * xs[b*n+i][j]
		}
		for i, wi := range w {
			d := xs[b*n+i][j] - m
			v += wi * d * d
		}
		vs = append(vs, v)
	}
	mean, ss := 0.0, 0.0
	for _, v := range vs {
		mean += v / spreadBatches
	}
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / (spreadBatches - 1))
	return sd / math.Sqrt(spreadBatches) / mean
}
