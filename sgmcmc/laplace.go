package sgmcmc

import (
	"fmt"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// A model with a vector state, no exact scorer and a kernel that
// implements ssm.LinearGaussian and ssm.EmissionCurvature (models.MSV)
// is scored by Laplace importance sampling (pf.Laplace) instead of
// particle filters: laplaceModel makes it an ssm.ExactScorer whose
// log-likelihood is a deterministic, smooth function of u (its paths use
// fixed random numbers), on which the preparation runs as for GARCH's
// quadrature filter (Newton steps on the full-data log posterior, the
// metric, the noise). The full-data chains then run pseudo-marginal on
// the resampling sweep with fresh random numbers (pmLaplace), which
// needs no correction. Chains on subsequence gradients would run on the
// plain estimate, which is an ssm.RefinedScorer whose finer
// log-likelihood uses laplaceRefine times the paths with other random
// numbers: their target is corrected towards it, and the correction is
// checked by importance weights after sampling.

// laplacePaths is the default number of paths of the chains' scorer
// (FitSettings.LaplacePaths) and laplaceRefine the factor of the finer
// scorer's. With pseudo-marginal chains the paths trade each estimate's
// noise against its cost: on MSV{D: 2} 64 paths took 43.9 s instead of
// 39.8 s on 2,000 simulated rows and 76.2 s instead of 82.0 s on DAX and
// CAC 40, all within 0.10 NUTS sds (docs/particles.md; measured before
// the sweep got faster). On the
// corrected plain estimate, the chains' target before, 32 and 64 paths
// left the chains' means up to 0.18 and 0.11 sd from the finer scorer's
// on the simulated series, 128 up to 0.013 sd.
const (
	laplacePaths  = 128
	laplaceRefine = 4
)

// laplaceStartSteps is the number of Newton steps for the mode of
// p(x | y, u) that the chains' sweeps take from the mode at the
// preparation's u* (pf.Laplace.StartSteps): the Gauss–Hermite refits
// that follow adjust the Gaussian model, which changes the estimate's
// spread only (it is unbiased from any Gaussian), and two steps instead of
// the 5–6 to convergence changed the log-likelihoods by under 10⁻⁵
// (TestLaplaceStartSteps in pf), for about a fifth less time per
// estimate (BenchmarkLaplaceScore's sweep/M=128/start/shifted cases on
// MSV{D: 2}: 24–27 ms to convergence, 18–21 ms with two steps).
const laplaceStartSteps = 2

// laplaceModel is a model scored by pf.Laplace. Its Bind and every
// other ssm.Model method are the user's.
type laplaceModel struct {
	ssm.Model
	paths int
	seed  uint64
	pool  sync.Pool // of *laplaceWorker

	// starts holds, per sequence, the mode of p(x | y, u*) at the
	// preparation's mode u*, from which the sweeps' Newton steps start
	// (pf.Laplace.Start): on the DAX and CAC 40 returns, 6 steps to
	// convergence instead of the prior mean's 8 at other parameters, and
	// the sweeps take laplaceStartSteps of them. It depends on u* alone,
	// so a resumed fit starts from the same paths.
	startOnce sync.Once
	starts    [][]float64
}

// laplaceWorker is one goroutine's scorer and kernel.
type laplaceWorker struct {
	l pf.Laplace
	k ssm.Kernel
}

// newLaplaceModel returns model scored by Laplace importance sampling
// with paths paths (0: laplacePaths) when its kernel at u has the
// capabilities and the model has no exact scorer of its own, else nil.
func newLaplaceModel(model ssm.Model, u []float64, paths int, seed uint64) *laplaceModel {
	if _, ok := model.(ssm.ExactScorer); ok {
		return nil
	}
	k, err := model.Bind(u)
	if err != nil {
		return nil
	}
	_, lg := k.(ssm.LinearGaussian)
	_, ec := k.(ssm.EmissionCurvature)
	if !lg || !ec {
		return nil
	}
	if paths == 0 {
		paths = laplacePaths
	}
	return &laplaceModel{Model: model, paths: paths, seed: seed}
}

func (m *laplaceModel) score(grad, u []float64, seq ssm.Sequence, w ssm.Window, paths int, seed uint64) (float64, error) {
	return m.run(grad, u, seq, w, paths, seed, true, nil)
}

// sweep is the chains' estimate on the pseudo-marginal path
// (pmLaplace): the resampling sweep over the whole window, unbiased for
// p(y | u) whatever seed.
func (m *laplaceModel) sweep(grad, u []float64, seq ssm.Sequence, w ssm.Window, seed uint64, start []float64) (float64, error) {
	return m.run(grad, u, seq, w, m.paths, seed, false, start)
}

// startAt sets m.starts, once, to the modes of every sequence of data at
// u; a sequence whose mode fails keeps the prior mean's start.
func (m *laplaceModel) startAt(u []float64, data ssm.Dataset) {
	m.startOnce.Do(func() {
		k, err := m.Bind(u)
		if err != nil {
			return
		}
		l := pf.Laplace{Paths: 2, Plain: true, Whole: true}
		m.starts = make([][]float64, len(data.Sequences))
		for j, seq := range data.Sequences {
			if _, err := l.Score(nil, k, m.Dims(), seq, ssm.Full(seq.Len())); err == nil {
				m.starts[j] = l.LastMode()
			}
		}
	})
}

func (m *laplaceModel) run(grad, u []float64, seq ssm.Sequence, w ssm.Window, paths int, seed uint64, plain bool, start []float64) (float64, error) {
	wk, _ := m.pool.Get().(*laplaceWorker)
	if wk == nil {
		wk = new(laplaceWorker)
	}
	defer m.pool.Put(wk)
	if rb, ok := wk.k.(ssm.Rebinder); ok {
		if err := rb.Rebind(u); err != nil {
			return 0, err
		}
	} else {
		k, err := m.Bind(u)
		if err != nil {
			return 0, err
		}
		wk.k = k
	}
	// Plain: the chains' Newton steps differentiate the score by forward
	// differences and the correction fits a smooth difference of scorers;
	// a resampling's jumps broke both on MSV{D: 2} (observed information
	// with eigenvalues of −10⁵, a residual warning on the simulated series).
	//
	// Whole: pf.Laplace's blocks make the estimate jump where their lag
	// changes with u, and a lag fixed for the fit left the Newton steps
	// unconverged on MSV{D: 2} (the blocks' Fisher-identity score agrees
	// less with their log-likelihood than a whole window's): see
	// docs/particles.md.
	wk.l.Paths, wk.l.Seed, wk.l.Plain, wk.l.Whole, wk.l.Start = paths, seed, plain, true, start
	wk.l.StartSteps = 0
	if !plain {
		wk.l.StartSteps = laplaceStartSteps
	}
	return wk.l.Score(grad, wk.k, m.Dims(), seq, w)
}

// onLaplace reports whether the fit scores its model by Laplace
// importance sampling: newFit chose it, and f.model is still that scorer
// (a fallback to particle filters, toParticles, puts the user's model
// back).
func (f *fit) onLaplace() bool {
	return f.laplace != nil && f.model == ssm.Model(f.laplace)
}

// evenWeights reports whether the importance weights of the chains'
// scorer at u are all equal on every sequence of data (their ESS is the
// number of paths to within evenESS): a Gaussian emission, as LGSSMd's
// with its Kalman scorer hidden, where the estimate is exact and its
// Fisher-identity score its derivative.
func (m *laplaceModel) evenWeights(u []float64, data ssm.Dataset) (bool, error) {
	k, err := m.Bind(u)
	if err != nil {
		return false, err
	}
	l := pf.Laplace{Paths: m.paths, Seed: m.seed, Plain: true, Whole: true}
	for _, seq := range data.Sequences {
		if _, err := l.Score(nil, k, m.Dims(), seq, ssm.Full(seq.Len())); err != nil {
			return false, err
		}
		if l.ESS < float64(m.paths)*(1-evenESS) {
			return false, nil
		}
	}
	return true, nil
}

// evenESS is evenWeights' tolerance, relative: rounding alone leaves
// LGSSMd's weights within 10⁻¹² of each other.
const evenESS = 1e-9

// ExactScore implements ssm.ExactScorer with pf.Laplace's estimate.
func (m *laplaceModel) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	return m.score(grad, u, seq, w, m.paths, m.seed)
}

// RefinedLogLik implements ssm.RefinedScorer: laplaceRefine times the
// paths, with other random numbers.
func (m *laplaceModel) RefinedLogLik(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	return m.score(nil, u, seq, w, laplaceRefine*m.paths, ^m.seed)
}

// ScoreCost implements ssm.Coster: per observation, the Kalman passes of
// the Newton steps and refits (O(d³) each), the Gauss–Hermite nodes of
// the refits (5^d, 3^d above d = 3) and the paths (O(M d²)); pf.Laplace
// on MSV{D: 2} takes about 11 µs per row with M = 32 (21 ms for 2,000
// rows, BenchmarkLaplaceSpread).
func (m *laplaceModel) ScoreCost() float64 {
	d := float64(m.Dims().State)
	return 1000*d*d*d + 60*float64(m.paths)*d*d
}

// describe says what the scorer is, for Preparation.Path.
func (m *laplaceModel) describe() string {
	return fmt.Sprintf("Laplace importance sampling (pf.Laplace, %d paths): the state is linear Gaussian (ssm.LinearGaussian) and the emission has derivatives (ssm.EmissionCurvature), so no particles; the full-data chains are pseudo-marginal, on an unbiased likelihood estimate with fresh random numbers at each proposal, so they target the exact posterior", m.paths)
}

// refineHint is the cure the discretisation warnings give: a finer
// scorer for the chains.
func (f *fit) refineHint() string {
	if f.onLaplace() {
		return fmt.Sprintf("raise FitSettings.LaplacePaths (now %d)", f.laplace.paths)
	}
	return "refine the scorer (GARCH: raise models.GARCH.Points, or Nodes with the σ² node filter)"
}
