package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// deterministic reports whether a window's gradient has no Monte Carlo
// error (Kalman or grid filter): one tiling pass is then exact.
func (f *fit) deterministic() bool { return f.gset.Exact || f.gset.Grid.Nodes > 0 }

// chooseFilter switches every estimator after the warm-up to the grid
// filter chosen by pf.GridFor at u (the warm-up's mode) when Filter
// allows it and the model has one.
func (f *fit) chooseFilter(u []float64) error {
	_, exact := f.model.(ssm.ExactScorer)
	switch {
	case f.s.Exact:
		f.path = "the model's exact scorer, as FitSettings.Exact asks"
		return nil
	case f.s.Filter == ParticleFilter:
		f.path = fmt.Sprintf("particle filters with N = %d, as FitSettings.Filter asks", f.s.N)
		return nil
	}
	if exact && f.s.Filter == AutoFilter {
		f.path = "the model's exact scorer (ssm.ExactScorer): exact filtering and smoothing, no particles"
		if f.onLaplace() {
			f.path, f.prep.Laplace = f.laplace.describe(), true
		}
		// Exact (the LGSSM's Kalman filter) beats any grid: no
		// discretisation, and the preparation's Newton steps run on the
		// exact full-data log posterior (observedNewton).
		f.setExact(true)
		f.log("the model's exact scorer, B = %d", f.gridB)
		return nil
	}
	g, err := f.gridAt(u)
	if err != nil {
		if f.s.Filter == GridFilter {
			return fmt.Errorf("sgmcmc: Filter: %w", err)
		}
		f.log("grid filter not used (%v): particle filters with N = %d", err, f.s.N)
		why := strings.TrimPrefix(err.Error(), "pf: grid filter: ")
		f.path = fmt.Sprintf("particle filters with N = %d: the grid filter does not apply (%s) and the model has no exact scorer (ssm.ExactScorer)", f.s.N, why)
		return nil
	}
	f.path = "the grid filter (a scalar state): deterministic, so the control variate and full-data Metropolis–Hastings apply"
	f.setGrid(g)
	f.log("grid filter: %d nodes on [%.3g, %.3g], spacing %.3g", g.Nodes, g.Lo, g.Hi, g.Spacing())
	return nil
}

// regrid re-chooses the grid at the mode u found with the grid chosen at
// the warm-up's end, which may be far from it (on the S&P 500 series 11
// posterior sds, where σ was larger: the first grid had 0.86 nodes per
// transition sd at the mode and the posterior means came out a posterior
// sd off). It reports whether the grid changed, so that the Newton steps
// are repeated on the new one.
func (f *fit) regrid(u []float64) bool {
	cur := f.gset.Grid
	if cur.Nodes == 0 {
		return false
	}
	g, err := f.gridAt(u)
	slack := 0.05 * (cur.Hi - cur.Lo)
	if err != nil || g.Spacing() >= 0.9*cur.Spacing() && g.Lo >= cur.Lo-slack && g.Hi <= cur.Hi+slack {
		return false
	}
	if g, err = gridUnion(g, cur); err != nil {
		return false
	}
	f.setGrid(g)
	f.log("grid filter at the mode: %d nodes on [%.3g, %.3g], spacing %.3g", g.Nodes, g.Lo, g.Hi, g.Spacing())
	return true
}

// gridUnion returns the grid over the union of a's and b's ranges at the
// finer of their spacings, or an error when it needs more than
// pf.MaxGridNodes nodes.
func gridUnion(a, b pf.Grid) (pf.Grid, error) {
	g := pf.Grid{Lo: min(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi)}
	g.Nodes = int(math.Ceil((g.Hi-g.Lo)/min(a.Spacing(), b.Spacing()))) + 1
	if g.Nodes > pf.MaxGridNodes {
		return pf.Grid{}, fmt.Errorf("%w: the union of [%.3g, %.3g] and [%.3g, %.3g] needs %d nodes, more than %d",
			pf.ErrGrid, a.Lo, a.Hi, b.Lo, b.Hi, g.Nodes, pf.MaxGridNodes)
	}
	return g, nil
}

func (f *fit) gridAt(u []float64) (pf.Grid, error) {
	k, err := f.model.Bind(u)
	if err != nil {
		return pf.Grid{}, err
	}
	return pf.GridFor(k, u, f.model.Dims(), f.data, rand.New(rand.NewPCG(f.s.Seed, gridStream)))
}

// widenGrid reports whether err is a grid filter that was too narrow at
// some u (gradient.GridEdgeError) and, if so, widens the grid to the
// union of the current one and the grid chosen at u (pf.GridFor, at the
// finer of the two spacings), at most gridWidenings times and within
// pf.MaxGridNodes. The preparation then runs again on the wider grid. A
// short series has a wide posterior: on the first 201 DAX returns the
// SVM's noise probes (draws from the Laplace approximation) reached
// φ = −0.5, σ = 1.7, where the grid chosen at the mode lost 3·10⁻⁴ of the
// filter mass at its edges; the fit fell back to particle filters and
// planned 4 × 50,000 SGLD iterations (more than ten minutes).
func (f *fit) widenGrid(err error) bool {
	var ge *gradient.GridEdgeError
	cur := f.gset.Grid
	if !errors.As(err, &ge) || cur.Nodes == 0 || f.widened >= gridWidenings {
		return false
	}
	g, gerr := f.gridAt(ge.U)
	if gerr == nil {
		g, gerr = gridUnion(g, cur)
	}
	if gerr != nil {
		return false
	}
	f.widened++
	f.setGrid(g)
	f.log("the grid filter lost mass at its edges at u = %.4g: grid widened to %d nodes on [%.3g, %.3g], spacing %.3g; preparing again", ge.U, g.Nodes, g.Lo, g.Hi, g.Spacing())
	return true
}

// gridWidenings is the most times widenGrid widens the grid.
const gridWidenings = 3

// toParticles reports whether a failure err on the grid filter is to be
// retried on particle filters (AutoFilter, not cancelled), and switches
// to them if so. The grid is chosen at the warm-up's end and the mode;
// data such as returns with every other day exactly 0 drive the chains
// where the filter's mass leaves it (σ 17, τ 0.01), which particles, with
// no edges, survive.
func (f *fit) toParticles(ctx context.Context, err error, stage string) bool {
	if err == nil || f.gset.Grid.Nodes == 0 && !f.prep.Exact || f.s.Filter != AutoFilter || ctx.Err() != nil || f.warm == nil ||
		errors.Is(err, ErrNoMode) { // the posterior's fault, not the filter's
		return false
	}
	f.log("the deterministic filter failed during the %s (%v): particle filters with N = %d instead", stage, err, f.s.N)
	what := "grid filter"
	switch {
	case f.prep.Exact && f.onLaplace():
		what = "Laplace importance sampling"
	case f.prep.Exact:
		what = "model's exact scorer"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	f.fallback = fmt.Sprintf("the %s failed during the %s (%s): particle filters with N = %d were used instead, whose bias can widen the posterior", what, stage, msg, f.s.N)
	f.path = fmt.Sprintf("particle filters with N = %d: the %s failed during the %s", f.s.N, what, stage)
	f.setGrid(pf.Grid{})
	f.setExact(false)
	f.prep.jacobian = nil
	// The discretisation correction belongs to the exact scorer, and the
	// coarser model to its cost: particles filter the model as given.
	f.prep.dc = nil
	f.model, f.trial, f.prep.Laplace = f.user, false, false
	return true
}

// toFull reports whether the adaptation error err, from chains on the
// plain or control-variate gradient with a deterministic filter, is
// handled by switching AutoGradient to the full-data score (which cannot
// run away: its Metropolis–Hastings test rejects what leaves the support
// or fails). The tail check (tailNoise) rests on 2p probes: GARCH on DAX
// (σ² node filter) measured h·λ = 123 with seed 1 and 18.5 with seed 2, whose
// control-variate chains then ran off to μ → 2 (u = 37).
func (f *fit) toFull(ctx context.Context, err error) bool {
	pr := &f.prep
	if err == nil || ctx.Err() != nil || f.s.Gradient != AutoGradient || !f.deterministic() || pr.Gradient == FullGradient {
		return false
	}
	f.log("the %v-gradient chains failed during the adaptation (%v): full-data scores instead", pr.Gradient, err)
	pr.Gradient = FullGradient
	pr.StepSize = 0
	f.setStep()
	return true
}

// setExact puts every estimator on the model's exact scorer (on), with
// the grid filter's buffer, or back on particle filters.
func (f *fit) setExact(on bool) {
	f.prep.Exact = on
	for _, set := range []*gradient.Settings{&f.gset, &f.cvset, &f.aset} {
		set.Exact = on
		set.B = f.s.B
		if on {
			set.B = f.gridB
		}
	}
}

// setGrid puts every estimator on grid g (Nodes 0: back on particles).
func (f *fit) setGrid(g pf.Grid) {
	f.diff = nil // its tilings are on the old grid
	for _, set := range []*gradient.Settings{&f.gset, &f.cvset, &f.aset} {
		set.Grid = g
		set.B = f.gridB
		if g.Nodes == 0 {
			set.B = f.s.B
		}
	}
}
