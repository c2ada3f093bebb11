package sgmcmc

import (
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Fit plans in counted work, never in measured time: every cost below is
// a count of filter steps (particles, grid nodes, exact-scorer
// observations) weighted by what one step costs on a reference machine
// (one core of a 2-core x86-64 machine), and is reported in those
// "nominal seconds". So the same seed, data and settings give the same
// draws on an idle machine and a saturated one, and whatever GOMAXPROCS
// or Workers is; only a time budget the user sets (MaxTime) reads the
// clock, and it warns when it stops a run.
//
// The weights, per observation of a window, from the benchmarks on a
// 2-core machine (go test -run XXX -bench 'Filter|GridWindow' ./pf, and
// the fits' own probes):
//   - a particle filter: particleStepNS per particle and state dimension
//     (BenchmarkFilter: 1.24 ms for 1,000 particles over 60 rows), and
//     with the forward-only smoother (FitSettings.CVParticles) pairStepNS
//     more per pair of particles and state dimension: its statistic sums
//     over all N² pairs of every row (BenchmarkFilter's forward-only
//     cases, sorted resampling, against the 1,000-particle filter on the
//     same machine, the means of two runs: N = 50 2.1 times its time,
//     N = 100 8.0, N = 200 33; measured for a scalar state);
//   - a grid filter: gridNodeNS per node (the SVM's 80-node grid on DAX:
//     10.8 ms per full-data score over 1,859 returns);
//   - an exact scorer: its ssm.Coster's ScoreCost, else kalmanStepNS·d³
//     (the LGSSM's Kalman score on the S&P 500: 1.01 ms over 17,055).
const (
	particleStepNS = 21
	pairStepNS     = 17
	gridNodeNS     = 72
	kalmanStepNS   = 60
)

// obsWork returns the counted work, in nanoseconds of the reference
// machine, of filtering one observation with set.
func (f *fit) obsWork(set gradient.Settings) float64 {
	switch {
	case set.Exact:
		if c, ok := f.model.(ssm.Coster); ok {
			if w := c.ScoreCost(); w > 0 {
				return w
			}
		}
		d := float64(f.model.Dims().State)
		return kalmanStepNS * d * d * d
	case set.Grid.Nodes > 0:
		return gridNodeNS * float64(set.Grid.Nodes)
	}
	n := set.PF.N
	if n <= 0 {
		n = 1000
	}
	d := float64(f.model.Dims().State)
	w := particleStepNS * float64(n) * d
	if set.PF.Smoother == pf.ForwardOnly {
		w += pairStepNS * float64(n) * float64(n) * d
	}
	return w
}

// windowCost returns the counted cost, in nominal seconds, of one
// subsequence gradient with set: S + 2B observations per subsequence.
func (f *fit) windowCost(set gradient.Settings) float64 {
	draws := max(set.Draws, 1)
	return 1e-9 * float64(draws*(set.S+2*set.B)) * f.obsWork(set)
}

// iterCost returns the counted cost, in nominal seconds, of one sampling
// iteration of one chain with the chosen gradient.
func (f *fit) iterCost() float64 {
	switch f.prep.Gradient {
	case FullGradient:
		return f.prep.CostFull
	case ControlVariateGradient:
		return f.prep.CostCV
	}
	return f.prep.CostPlain
}

// cheapMore returns the iterations per chain that take FullGradient's
// chains to MinIterations (0: cheapIters) when those iterations cost less
// than cheapWork nominal seconds of one worker (0: none). ESS and R-hat
// reach their targets within a few hundred iterations of independence-type
// steps, before the chains have found a tail their proposals barely reach
// (the LGSSM on the S&P 500 returns: sds 0.65–0.88 of the Kalman
// posterior's on half of eight seeds after 5–10 s; 0.91–1.05 on all eight
// when run on to 10,000 iterations per chain, 0.82–0.95 on four of them at
// 5,000); where iterations cost well under a millisecond, running on costs
// seconds. cheapWork admits the LGSSM on the S&P 500 (40.9 nominal s from
// no draws) and short series on the grid (the SVM on 201 returns: 46);
// not the SVM on DAX (385) or GARCH (over 1,000, measured with its σ²
// node filter).
func (f *fit) cheapMore(done int) int {
	least := f.s.MinIterations
	if least == 0 {
		least = cheapIters
	}
	if f.prep.Gradient != FullGradient || done >= least || done == 0 {
		return 0
	}
	more := least - done
	if float64(more*f.s.Chains)*f.prep.CostFull > cheapWork {
		return 0
	}
	f.log("cheap chains: running on towards %d iterations per chain", least)
	return more
}

// cheapIters and cheapWork: see cheapMore.
const (
	cheapIters = 10000
	cheapWork  = 50 // nominal seconds of one worker
)

// Extensions past the planned ones (Fit's sampling segments): while the
// chains fall short of TargetESS or R-hat, sampling continues up to
// maxSegments segments as long as the sampling so far cost less than
// cheapSampling nominal seconds of one worker (iterations times chains
// times iterCost, about a minute on two workers). The projected lengths
// rest on autocorrelation times measured on short runs, which a curved
// posterior makes optimistic (the LGSSM on the S&P 500 returns, a ridge
// along φσ²: refitted proposals promised holding times of 1.4–1.7 and
// delivered 4–16), and when a whole run costs seconds, stopping short of
// the target with a warning serves no one.
const (
	maxSegments   = 12
	cheapSampling = 120 // nominal seconds of one worker
)
