// Package amis prepares the full-data (FullGradient) chains of sgmcmc.Fit
// by adaptive importance sampling (AMIS: Cornuet, Marin, Mira and Robert
// 2012) instead of adaptation windows: round r draws n points from a
// proposal q_r, every point so far is weighted by π(x)/Σ_r (n_r/N) q_r(x)
// (the deterministic mixture of the proposals), and q_{r+1} is fitted to
// all of them (BestProposal: a mixture of Student-t, ν = 5). q_0 is a t
// at the mode u* with Scale0 × the Laplace scale (less above HighDim
// parameters: FirstScale). Each point costs one
// log posterior without its gradient (about half a gradient with
// GARCH's σ² node filter, a third with its quadrature filter) and the
// points are independent, so they run on all workers; the adaptation
// windows of the Metropolis-adjusted Langevin chains cost 3 × 300
// gradients per chain (GARCH on DAX, σ² node filter: 9.5 of 25
// minutes). The last
// proposal then drives the chains' independence steps, the weighted
// covariance is the Langevin steps' metric, the chains start from points
// drawn from the weighted points (already posterior draws, so no
// transient), and the expected holding time of the independence steps,
// computed from a final round drawn from the last proposal, sets the
// number of iterations. When the importance sampling is poor (the chosen
// proposal's effective sample size below MinEfficiency of its draws),
// Adapt returns nil and the fit runs adaptation windows instead.
//
// The package knows nothing of the fit: it takes a batch log-posterior
// function and the target's Laplace approximation (Config).
package amis

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/pbsgmcmc/pbsgmcmc/internal/par"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// Rounds and what ends them.
const (
	MinRounds     = 4   // rounds (of Draws points) before the chains may start
	MaxRounds     = 8   // rounds at most
	GoodHold      = 1.6 // a proposal's measured holding time that ends the rounds
	MinEfficiency = 0.1 // the chosen proposal's ESS over its draws, at least
	Scale0        = 1.5 // q_0's scale over the Laplace approximation's
	// SurRounds is the round from which a surrogate is fitted after
	// each (chooseSurrogate), and SurHold its leave-one-out holding
	// time that ends the rounds. From the third round (300 points), six
	// of eight GARCH-on-DAX seeds stopped there, and on seed 7 the
	// chains' first 600 draws, whose surrogate knew those points only,
	// had a smallest ESS of 34; from the fourth (400 points), 185, and
	// seeds 1–8 took 17.9–24.9 s instead of 20.4–35.2 s (GARCH's σ² node
	// filter at 24 nodes, when it was the default, on a 2-core machine).
	SurRounds = 4
	SurHold   = 1.3
	// After GiveUpRounds rounds none of whose proposals kept an ESS of
	// GiveUpEfficiency of its own draws, Adapt gives up: the chosen
	// proposal must reach MinEfficiency, four times more. On MSV with
	// five series (T = 5,000, 25 parameters) the rounds kept 1–2 of 625
	// each at about 90 s a round, and the fit fell back to adaptation
	// windows after all eight.
	GiveUpRounds     = 3
	GiveUpEfficiency = MinEfficiency / 4
)

// Draws is the number of points per round for p parameters.
func Draws(p int) int { return max(64, 25*p) }

// Result is what Adapt found.
type Result struct {
	Proposal *tmix.Mixture
	Chol     []float64 // the weighted covariance's factor
	Starts   [][]float64
	Accept   float64 // expected acceptance rate of independence steps
	Hold     float64 // and their expected holding time (ExpectedHold)
	Evals    int
	Sur      *surrogate.Surrogate // nil: the surrogate does not shorten the holding time
	// Xs, LPs and LogW are every round's points, their log posteriors
	// and their log importance weights.
	Xs   [][]float64
	LPs  []float64
	LogW []float64
}

// Round is one round's proposal Q and the number N of points drawn from it.
type Round struct {
	Q *tmix.Mixture
	N int
}

// Config is what Adapt needs of the fit: the target's Laplace
// approximation N(Mode, Chol Cholᵀ), the random streams, and the batch
// log posterior.
type Config struct {
	Mode, Chol []float64
	Seed       uint64
	Chains     int // starting points to resample
	// DrawStream + r drives round r's draws from its proposal,
	// LogPostStream + r<<24 is passed to LogPosteriors for round r, and
	// StartStream drives the resampled starts (PCG(Seed, stream)).
	DrawStream, LogPostStream, StartStream uint64
	// LogPosteriors returns the log posterior at every point (−∞ where
	// it is 0 or fails), with random numbers from stream + i for point i.
	LogPosteriors func(ctx context.Context, xs [][]float64, stream uint64) ([]float64, error)
	// Surrogate fits a surrogate to the points (nil: none that helps);
	// Adapt calls it from round SurRounds on.
	Surrogate func(q *tmix.Mixture, xs [][]float64, lps, logW []float64) *surrogate.Surrogate
	// Log, when non-nil, receives progress lines.
	Log func(format string, a ...any)
	// Workers bounds the goroutines of the proposals' fits (BestProposal);
	// the result does not depend on it.
	Workers int
}

// Adapt runs the importance-sampling adaptation. It returns nil (and no
// error) when no proposal's importance sampling is good enough to use.
//
// Each round's own draws measure its proposal honestly (it was fitted
// before they were drawn): the chains get the proposal with the shortest
// measured holding time. Rounds continue past MinRounds until one
// measures at most GoodHold, up to MaxRounds (GARCH on DAX, seed 2:
// a two-component mixture whose holding time on the points it was fitted
// to was 1.53 measured 6.10 on its own draws).
func Adapt(ctx context.Context, c Config) (*Result, error) {
	logf := c.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	p := len(c.Mode)
	n := Draws(p)
	mode, l0 := slices.Clone(c.Mode), slices.Clone(c.Chol)
	s0 := FirstScale(p)
	for i := range l0 {
		l0[i] *= s0
	}
	// Above HighDim parameters the fitted covariances are shrunk towards
	// the Laplace approximation's (shrink).
	var prior []float64
	if p > HighDim {
		prior = outer(c.Chol, p)
	}
	rounds := []Round{{Q: tmix.New([]float64{1}, [][]float64{mode}, [][]float64{l0})}}
	var xs [][]float64
	var lps []float64
	z, s := make([]float64, p), make([]float64, p)
	best, bestHold, bestAcc, bestESS, maxESS := -1, math.Inf(1), 0.0, 0.0, 0.0
	w := make([]float64, n)
	for r := 0; ; r++ {
		q := rounds[r].Q
		rng := rand.New(rand.NewPCG(c.Seed, c.DrawStream+uint64(r)))
		batch := make([][]float64, n)
		for i := range batch {
			batch[i] = make([]float64, p)
			q.Draw(batch[i], s, rng)
		}
		lp, err := c.LogPosteriors(ctx, batch, c.LogPostStream+uint64(r)<<24)
		if err != nil {
			return nil, err
		}
		rounds[r].N = n
		xs, lps = append(xs, batch...), append(lps, lp...)
		for i, x := range batch {
			w[i] = lp[i] - q.LogDensity(x, z)
		}
		essR, acc, hold := Quality(w)
		if hold < bestHold {
			best, bestHold, bestAcc, bestESS = r, hold, acc, essR
		}
		maxESS = max(maxESS, essR)
		logW := Weights(rounds, xs, lps, z)
		m, cov, ess := tmix.WeightedMoments(xs, logW)
		cov = shrink(cov, prior, ess, p)
		logf("importance sampling, round %d: its proposal's own draws: ESS %.0f of %d, expected independence acceptance %.2f, holding time %.2f; all draws: ESS %.0f of %d",
			r+1, essR, n, acc, hold, ess, len(xs))
		if m == nil {
			return nil, nil // no finite weight
		}
		if hopeless(r, maxESS, n) {
			logf("importance sampling: no proposal kept an ESS of %.1f%% of its draws in %d rounds (at most %.1f of %d): given up", 100*GiveUpEfficiency, r+1, maxESS, n)
			return nil, nil
		}
		stop := roundsDone(r, bestHold)
		var sur *surrogate.Surrogate
		if r+1 >= SurRounds && bestESS >= MinEfficiency*float64(n) && c.Surrogate != nil {
			// A surrogate that already fits well ends the rounds: its
			// transitions need a design of the posterior, not a t
			// mixture that fits it alone.
			sur = c.Surrogate(rounds[best].Q, xs, lps, logW)
			stop = stop || sur != nil && sur.Hold <= SurHold
		}
		if stop {
			if bestESS < MinEfficiency*float64(n) {
				return nil, nil
			}
			starts, err := Resample(xs, logW, c.Chains, rand.New(rand.NewPCG(c.Seed, c.StartStream)))
			if err != nil {
				return nil, err
			}
			res := &Result{Proposal: rounds[best].Q, Starts: starts, Accept: bestAcc, Hold: bestHold, Evals: len(xs), Sur: sur, Xs: xs, LPs: lps, LogW: logW}
			if l, err := tmix.Cholesky(cov, p); err == nil {
				res.Chol = l
			}
			logf("importance sampling: the chains use round %d's proposal", best+1)
			return res, nil
		}
		next, k, sc, d, h := BestProposal(xs, lps, logW, z, prior, c.Workers)
		if next == nil {
			return nil, nil
		}
		logf("importance sampling: next proposal %d Student-t components at %.2f × their fitted scale, defensive weight %.2f (cross-validated holding time %.2f)", k, sc, d, h)
		rounds = append(rounds, Round{Q: next})
	}
}

// roundsDone reports whether the rounds end after round r (from 0) when
// the best holding time measured so far is bestHold: at MaxRounds, or
// from MinRounds on at a holding time of at most GoodHold.
func roundsDone(r int, bestHold float64) bool {
	return r+1 >= MaxRounds || r+1 >= MinRounds && bestHold <= GoodHold
}

// hopeless reports whether the rounds give up after round r (from 0),
// no proposal so far having kept an ESS above maxESS of its n draws.
func hopeless(r int, maxESS float64, n int) bool {
	return r+1 >= GiveUpRounds && maxESS < GiveUpEfficiency*float64(n)
}

// ThinnedDraws returns the chains' draws (us: per chain, p numbers per
// draw) with finite log posteriors lps, evenly thinned to about
// RefitDraws.
func ThinnedDraws(us, lps [][]float64, p int) (xs [][]float64, lp []float64) {
	n := 0
	for _, l := range lps {
		n += len(l)
	}
	thin := max(1, n/RefitDraws)
	for c, l := range lps {
		for i := 0; i < len(l) && (i+1)*p <= len(us[c]); i += thin {
			if !math.IsInf(l[i], 0) && !math.IsNaN(l[i]) {
				xs, lp = append(xs, us[c][i*p:(i+1)*p]), append(lp, l[i])
			}
		}
	}
	return xs, lp
}

// RefitDraws is the number of draws a refit of the independence proposal
// to the chains' draws thins them to (ThinnedDraws).
const RefitDraws = 1200

// Components is the largest number of mixture components BestProposal
// fits, up to HighDim parameters; above, it fits a single t
// (maxComponents): a component's covariance has p(p + 1)/2 entries, 630
// for LGSSMd{D: 5}'s 35 parameters, which the rounds' few hundred
// effective points cannot fix (its seven refits in 35 dimensions chose a
// single t every time), and the mixtures' EM took 40% of that fit's CPU
// time.
const Components = 4

// maxComponents is the largest number of components BestProposal fits
// for p parameters.
func maxComponents(p int) int {
	if p > HighDim {
		return 1
	}
	return Components
}

// evenly returns min(n, m) increasing indices spread evenly over [0, n):
// all of them when n ≤ m.
func evenly(n, m int) []int {
	m = min(n, m)
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i * n / m
	}
	return idx
}

// HoldPoints is the most points per fold on which BestProposal judges a
// candidate (ExpectedHold is O(n²) in them): larger folds are thinned
// evenly. Eight rounds of up to HighDim parameters draw at most 2,400
// points, 1,200 per fold, which are all used; LGSSMd{D: 5}'s 7,000 took
// 36 s of CPU time in ExpectedHold.
const HoldPoints = 1500

// BestProposal fits Student-t mixtures of 1 to Components components to
// the weighted points (k = 1: their weighted mean and covariance), at the
// scales of Scales, each with a defensive component (the t at the
// weighted mean with DefensiveScale × its scale, weight Defensive: Hesterberg
// 1995), and returns the one with the shortest expected holding time of
// an independence chain (ExpectedHold, two-fold cross-validated), its
// number of fitted components, scale, defensive weight and holding time.
// An independence chain waits about 1/α(x) steps at x,
// α(x) = E_q min(1, w(y)/w(x)), w = π/q, so a proposal too light where π
// has mass (w large) makes it stick: GARCH's μ has an exponential tail
// towards its bound in u, where the chains stood for 10–20 steps at a
// time with a single t chosen for its acceptance rate. A Student-t with
// ν = 5 at scale 1 has 5/3 the covariance, which wastes proposals in the
// tails; a single t cannot follow a skewed posterior whose spread in one
// coordinate grows with another (μ as φ → 1), a mixture can. The
// defensive component is always there: the points under-represent a long
// tail, so the cross-validated holding time judged on them prefers no
// defensive part, and chains whose independence proposal cannot reach the
// tail miss it without any diagnostic noticing (the LGSSM on the S&P 500
// returns: sds 0.72–0.86 of the reference with R-hat ≤ 1.005; with the
// defensive part 0.90–0.97).
//
// With prior (a covariance, row-major) the single component's covariance
// is shrunk towards it by the points' ESS (shrink); nil: no shrinkage.
// The candidates are fitted on up to workers goroutines; the choice does
// not depend on their number.
func BestProposal(xs [][]float64, lps, lw, z, prior []float64, workers int) (best *tmix.Mixture, k int, scale, defensive, hold float64) {
	// Two folds (alternate points): candidates fitted on one are judged
	// on the other, so that a mixture does not win by fitting the very
	// points it is judged on.
	var fold [2]struct {
		xs      [][]float64
		lps, lw []float64
	}
	for i := range xs {
		f := &fold[i%2]
		f.xs, f.lps, f.lw = append(f.xs, xs[i]), append(f.lps, lps[i]), append(f.lw, lw[i])
	}
	// The points each fold's candidates are judged on: the other fold,
	// thinned evenly to at most HoldPoints.
	var judge [2]struct {
		xs      [][]float64
		lps, lw []float64
	}
	for j := range fold {
		f, g := &fold[j], &judge[j]
		for _, k := range evenly(len(f.xs), HoldPoints) {
			g.xs, g.lps, g.lw = append(g.xs, f.xs[k]), append(g.lps, f.lps[k]), append(g.lw, f.lw[k])
		}
	}
	// fitK returns the k-component fit (unscaled, no defensive part) to
	// the points and its wide defensive component.
	fitK := func(xs [][]float64, lw []float64, k int) (*tmix.Mixture, []float64, []float64) {
		mk, cov, ess := tmix.WeightedMoments(xs, lw)
		if mk == nil {
			return nil, nil, nil
		}
		cov = shrink(cov, prior, ess, len(mk))
		lk, err := tmix.Cholesky(cov, len(mk))
		if err != nil {
			return nil, nil, nil
		}
		wide := make([]float64, len(lk))
		for i, v := range lk {
			wide[i] = DefensiveScale * v
		}
		if k == 1 {
			return tmix.New([]float64{1}, [][]float64{mk}, [][]float64{lk}), mk, wide
		}
		return tmix.Fit(xs, lw, k), mk, wide
	}
	build := func(q *tmix.Mixture, sc, d float64, mk, wide []float64) *tmix.Mixture {
		c := q.Scaled(sc)
		if d > 0 {
			c = c.With(d, mk, wide)
		}
		return c
	}
	// The component counts' candidates on the workers (each job its own
	// scratch), the most components (the longest EM) first, then chosen
	// in order, as one worker would.
	nks := maxComponents(len(z))
	holds := make([][]float64, nks) // [nk−1][scale]; nil: no fit
	par.Do(nks, workers, func(job int) {
		c := nks - 1 - job
		nk, z := c+1, make([]float64, len(z))
		var qs [2]*tmix.Mixture
		var ms, wides [2][]float64
		for j := range fold {
			if qs[j], ms[j], wides[j] = fitK(fold[j].xs, fold[j].lw, nk); qs[j] == nil {
				return
			}
		}
		holds[c] = make([]float64, len(Scales))
		for i, sc := range Scales {
			for j := range fold {
				o := &judge[1-j]
				holds[c][i] += 0.5 * ExpectedHold(build(qs[j], sc, Defensive, ms[j], wides[j]), o.xs, o.lps, o.lw, z)
			}
		}
	})
	hold = math.Inf(1)
	for c, hs := range holds {
		for i, h := range hs {
			if h < hold {
				k, scale, defensive, hold = c+1, Scales[i], Defensive, h
			}
		}
	}
	if k == 0 {
		return nil, 0, 0, 0, hold
	}
	q, mk, wide := fitK(xs, lw, k)
	if q == nil {
		return nil, 0, 0, 0, hold
	}
	return build(q, scale, defensive, mk, wide), k, scale, defensive, hold
}

// Defensive is the weight of BestProposal's defensive component and
// DefensiveScale its scale over the fitted covariance's. The LGSSM on
// the S&P 500 returns with MinIterations −1 (chains that stop once R-hat
// and ESS pass), seeds 1–8, against the Kalman posterior: at 2.5 the
// chains' sds were 0.76–1.05 of the reference (below 0.9 in 4 of 8 seeds:
// the curved ridge's far end was reached rarely), at 4 they were
// 0.92–1.06.
const (
	Defensive      = 0.1
	DefensiveScale = 4.0
)

// Scales are the factors of the fitted scales that BestProposal tries.
var Scales = []float64{0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.2}

// ExpectedHold returns the expected holding time E_{x~π} 1/α(x) of an
// independence Metropolis–Hastings chain with proposal q,
// α(x) = E_{y~q} min(1, w(y)/w(x)), w = π/q, estimated from the points
// drawn so far: x weighted by the log weights lw, y reweighted from the
// proposals' mixture (log density lps − lw) to q. O(len(xs)²). The
// chain's autocorrelation time is about 2·hold − 1 (each stay lasts
// 1/α(x) steps on average; hold = 1 for q = π).
func ExpectedHold(q *tmix.Mixture, xs [][]float64, lps, lw, z []float64) float64 {
	omega := tmix.Normalized(lw)
	lq := make([]float64, len(xs))
	ws := make([]float64, len(xs))
	for i, x := range xs {
		if math.IsInf(lw[i], -1) {
			lq[i], ws[i] = math.Inf(-1), math.Inf(-1)
			continue
		}
		logQ := q.LogDensity(x, z)
		lq[i] = logQ - (lps[i] - lw[i])
		ws[i] = lps[i] - logQ
	}
	nu := tmix.Normalized(lq)
	if omega == nil || nu == nil {
		return math.Inf(1)
	}
	_, hold := tmix.IndependenceRates(omega, nu, ws)
	return hold
}

// IndependenceIAT returns the autocorrelation time expected of the chains
// for the holding time H of their independence proposal, taken a share
// pInd of the steps: 2H − 1 for a chain of independence steps alone
// (each stay lasts 1/α(x) steps), doubled because H, estimated from a few
// hundred points, misses the longest stays in the tails: the measured
// autocorrelation times were 1.5–3 times 2H − 1 (GARCH on DAX after the
// first refit: predicted 1.9, measured ≈ 3.3 over 708 draws; the LGSSM
// with Kalman scores ≈ 3.3 for 1.9).
func IndependenceIAT(hold, pInd float64) float64 {
	return 2 * (2*hold - 1) / pInd
}

// Weights returns the log weights log π(x) − log Σ_r (n_r/N) q_r(x)
// of every point drawn so far (−∞ where π is 0 or unknown).
func Weights(rounds []Round, xs [][]float64, lps []float64, z []float64) []float64 {
	total := 0
	for _, r := range rounds {
		total += r.N
	}
	lw := make([]float64, len(xs))
	terms := make([]float64, len(rounds))
	for i, x := range xs {
		if math.IsNaN(lps[i]) || math.IsInf(lps[i], 0) {
			lw[i] = math.Inf(-1)
			continue
		}
		for r := range rounds {
			terms[r] = math.Log(float64(rounds[r].N)/float64(total)) + rounds[r].Q.LogDensity(x, z)
		}
		lw[i] = lps[i] - tmix.LogSumExp(terms)
	}
	return lw
}

// Quality returns the effective sample size of the log weights lw of
// draws from one proposal q, and the expected acceptance rate and
// holding time of an independence Metropolis–Hastings chain with q
// (ExpectedHold), estimated with x weighted by w and y uniform over the
// draws.
func Quality(lw []float64) (ess, accept, hold float64) {
	w := tmix.Normalized(lw)
	if w == nil {
		return 0, 0, math.Inf(1)
	}
	s2 := 0.0
	for _, v := range w {
		s2 += v * v
	}
	uniform := make([]float64, len(w))
	for i := range uniform {
		uniform[i] = 1 / float64(len(w))
	}
	accept, hold = tmix.IndependenceRates(w, uniform, lw)
	return 1 / s2, accept, hold
}

// Resample draws k distinct points of xs with probabilities from the log
// weights lw (systematic resampling over the sorted weights, so that the
// chains start spread over the posterior rather than at its mode).
func Resample(xs [][]float64, lw []float64, k int, rng *rand.Rand) ([][]float64, error) {
	w := tmix.Normalized(lw)
	if w == nil {
		return nil, errors.New("sgmcmc: importance sampling: no draw has a finite weight")
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	// Order along the first principal direction would be better; the
	// log posterior is a cheap proxy that spreads the picks over levels.
	sort.Slice(idx, func(a, b int) bool { return lw[idx[a]] < lw[idx[b]] })
	out := make([][]float64, 0, k)
	u := rng.Float64() / float64(k)
	cum := 0.0
	j := 0
	for _, i := range idx {
		cum += w[i]
		for j < k && u+float64(j)/float64(k) < cum {
			out = append(out, append([]float64(nil), xs[i]...))
			j++
		}
	}
	for len(out) < k { // rounding at the end
		out = append(out, append([]float64(nil), xs[idx[len(idx)-1]]...))
	}
	return out, nil
}

// HighDim is the number of parameters above which the first proposal is
// narrower than Scale0 (FirstScale) and the fitted covariances are shrunk
// towards the Laplace approximation's (shrink). Up to it nothing changes.
// Against the standard normal, a Student-t (ν = 5) at Scale0 keeps 45% of
// its draws as ESS in 4 dimensions but 17% in 35 (TestFirstScale), where
// LGSSMd{D: 5}'s first round (Laplace importance sampling, 875 points)
// kept 64; and a covariance fitted to an ESS of 64 in 35 dimensions has
// eigenvalues spread by (1 ± √(35/64))², 0.07 to 2.4 times the truth's, so
// its next round kept 4 (and the third 13). With FirstScale and shrink
// its first five rounds kept 142, 46, 64, 108 and 82.
const HighDim = 12

// FirstScale is q_0's scale over the Laplace approximation's for p
// parameters: Scale0 up to HighDim, above it 1 + (Scale0 − 1)·HighDim/p
// (p = 35: 1.17, which keeps 40% of the draws against the standard
// normal).
func FirstScale(p int) float64 {
	if p <= HighDim {
		return Scale0
	}
	return 1 + (Scale0-1)*HighDim/float64(p)
}

// shrink returns the weighted covariance cov of points with effective
// sample size ess shrunk towards prior: (ess·cov + ν·prior)/(ess + ν),
// ν = p + 2, the mean of an inverse-Wishart posterior whose prior mean is
// prior (cov itself when prior is nil).
func shrink(cov, prior []float64, ess float64, p int) []float64 {
	if prior == nil || cov == nil {
		return cov
	}
	nu := float64(p + 2)
	out := make([]float64, len(cov))
	for i := range cov {
		out[i] = (ess*cov[i] + nu*prior[i]) / (ess + nu)
	}
	return out
}

// outer returns L Lᵀ (row-major) for a p×p factor l.
func outer(l []float64, p int) []float64 {
	out := make([]float64, p*p)
	for i := range p {
		for j := range p {
			s := 0.0
			for k := range p {
				s += l[i*p+k] * l[j*p+k]
			}
			out[i*p+j] = s
		}
	}
	return out
}
