package sgmcmc

import (
	"slices"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// sizedFit returns a fit of T observations (zeros, one sequence) with
// exact gradients, for the subset rules, which read lengths only.
func sizedFit(T int) *fit {
	f := &fit{total: T, data: ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: make([]float64, T)}}}}
	f.gset.Exact = true
	f.log = func(string, ...any) {}
	return f
}

// TestNewtonLevels: with deterministic gradients Newton first runs on
// subsets of subsetObs = 10⁵, 10⁶, ... observations, each while less than
// half of the data (a level costs a tiling of its subset and saves the
// full data Newton steps from far off): none at 2·10⁵ observations, one
// just above, two above 2·10⁶; none with noisy gradients, and only those
// below PrepObs when the preparation reads a subset.
func TestNewtonLevels(t *testing.T) {
	for _, c := range []struct {
		T, prepObs int
		noisy      bool
		want       []int
	}{
		{200000, 0, false, nil},
		{200001, 0, false, []int{100000}},
		{2000000, 0, false, []int{100000}},
		{2000001, 0, false, []int{100000, 1000000}},
		{2000001, 0, true, nil},
		{2000001, 500000, false, []int{100000}},
		{2000001, 100000, false, nil},
		{2*subsetObs + 1, 0, false, []int{subsetObs}},
	} {
		f := sizedFit(c.T)
		f.gset.Exact = !c.noisy
		f.s.PrepObs = c.prepObs
		if got := f.newtonLevels(); !slices.Equal(got, c.want) {
			t.Errorf("T = %d, PrepObs = %d, noisy %v: levels %v, want %v", c.T, c.prepObs, c.noisy, got, c.want)
		}
	}
}

// TestNewtonLevelDiff: a Newton level reads its own subset once and
// differences its later scores on a tenth of it (scoreTile) from diffObs
// = 10⁶ observations on; a smaller level tiles its whole subset at every
// step. Of 2.1·10⁶ observations, the 10⁵ level tiles, the 10⁶ level
// differences.
func TestNewtonLevelDiff(t *testing.T) {
	f := sizedFit(2100000)
	for _, c := range []struct {
		n    int
		want bool
	}{{100000, false}, {1000000, true}} {
		sub := f.newtonLevel(c.n)
		if sub.diffOK != c.want {
			t.Errorf("level %d (%d observations): differences %v, want %v (diffObs %d)", c.n, sub.total, sub.diffOK, c.want, diffObs)
		}
	}
}

// TestJacobianFit: the Jacobian (p + 1 tilings) reads all of sf's
// observations up to twice jacobianObs = 10⁶, and above that a subset of
// jacobianObs, whose error only rescales the control variate's linear
// term (jacobianAt).
func TestJacobianFit(t *testing.T) {
	for _, c := range []struct{ T, want int }{
		{2000000, 2000000},
		{2000001, 1000000},
		{2*jacobianObs + 1, jacobianObs},
	} {
		f := sizedFit(c.T)
		if got := f.jacobianFit(f).total; got != c.want {
			t.Errorf("T = %d: the Jacobian reads %d observations, want %d", c.T, got, c.want)
		}
	}
}

// TestSubsetBlocks: a subset is made of blocks of subsetBlock = 1000
// observations spread evenly over the data (longer blocks keep more of
// the dependence within each, shorter ones spread the subset wider), a
// sequence shorter than a block being one block; PrepObs uses a subset
// only when the data are more than two blocks (or 2·PrepObs) long.
func TestSubsetBlocks(t *testing.T) {
	f := sizedFit(10000)
	sub := f.subset(3000)
	if sub.total != 3000 || len(sub.data.Sequences) != 3 || sub.short != 1000 {
		t.Errorf("subset of 3000 of %d: %d observations in %d blocks (shortest %d), want 3 blocks of 1000 (subsetBlock %d)",
			f.total, sub.total, len(sub.data.Sequences), sub.short, subsetBlock)
	}
	for i, seq := range sub.data.Sequences {
		if seq.Len() != 1000 {
			t.Errorf("block %d: %d observations, want 1000", i, seq.Len())
		}
	}
	short := &fit{total: 300, data: ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: make([]float64, 300)}}}}
	short.log = f.log
	if sub := short.subset(1); sub.total != 300 || sub.short != 300 {
		t.Errorf("a 300-observation sequence: subset of %d (shortest %d), want the whole sequence as one block", sub.total, sub.short)
	}
	for _, c := range []struct {
		T, prepObs int
		want       bool
	}{
		{2000, 1, false},
		{2001, 1, true},
		{4000, 2000, false},
		{4001, 2000, true},
		{10000, 0, false},
		{2*subsetBlock + 1, 1, true},
	} {
		f := sizedFit(c.T)
		f.s.PrepObs = c.prepObs
		if got := f.prepSubset(); got != c.want {
			t.Errorf("T = %d, PrepObs = %d: subset %v, want %v", c.T, c.prepObs, got, c.want)
		}
	}
}

// TestMorePasses: each round of the anchor's refinement adds the passes
// its standard error asks for, but at least anchorBatch = 2 (fewer
// rounds, each of which waits for its slowest pass, for at most one pass
// beyond the need), and never beyond AnchorPasses. The batch is a constant, not Workers,
// so that the passes, and the draws, are the same on every machine.
func TestMorePasses(t *testing.T) {
	for _, c := range []struct{ want, have, limit, more int }{
		{0, 4, 100, 2}, {1, 4, 100, 2}, {2, 4, 100, 2}, {7, 4, 100, 7},
		{7, 97, 100, 3}, {1, 99, 100, 1}, {-3, 4, 100, anchorBatch},
	} {
		if got := morePasses(c.want, c.have, c.limit); got != c.more {
			t.Errorf("want %d more after %d of %d: %d, want %d", c.want, c.have, c.limit, got, c.more)
		}
	}
}

// TestTileSplit: a single pass of a deterministic estimator (exact or
// grid scores: the long series' full-data score, read once) is split
// into tileParts = 8 interleaved parts, so that up to 8 workers share it;
// the parts are summed in their order, so the score is the same whatever
// Workers is (more parts would serve more workers at the cost of more
// partial sums). Several passes, or noisy ones, are not split.
func TestTileSplit(t *testing.T) {
	var grid gradient.Settings
	grid.Grid.Nodes = 64
	for _, c := range []struct {
		passes int
		set    gradient.Settings
		want   int
	}{
		{1, gradient.Settings{Exact: true}, 8},
		{1, grid, 8},
		{2, gradient.Settings{Exact: true}, 1},
		{1, gradient.Settings{}, 1},
		{1, grid, tileParts},
	} {
		if got := tileSplit(c.passes, c.set); got != c.want {
			t.Errorf("%d passes, exact %v, grid nodes %d: %d parts, want %d", c.passes, c.set.Exact, c.set.Grid.Nodes, got, c.want)
		}
	}
}
