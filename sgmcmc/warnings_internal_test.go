package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestNewtonWarning: the preparation warns when its Newton steps did not
// converge and the last one moved more than newtonUnconverged = 3
// posterior sds (bad data: 15–90), not within 3, not on a subset, and
// not for the exact scorer's steps, which go on with observedNewton.
func TestNewtonWarning(t *testing.T) {
	for _, c := range []struct {
		name             string
		conv, det, exact bool
		scale, last      float64
		warn             bool
	}{
		{"15 sds", false, false, false, 0, 15, true},
		{"3.1 sds", false, false, false, 0, 3.1, true},
		{"3 sds", false, false, false, 0, newtonUnconverged, false},
		{"converged", true, false, false, 0, 15, false},
		{"subset", false, true, false, 10, 15, false},
		{"exact scorer", false, true, true, 0, 15, false},
		{"exact, particle gradients", false, false, true, 0, 15, true},
		{"NaN step", false, false, false, 0, math.NaN(), false},
	} {
		f := &fit{scale: c.scale}
		f.prep.Exact = c.exact
		if got := f.newtonWarning(c.conv, c.det, c.last) != ""; got != c.warn {
			t.Errorf("%s: warns %v, want %v", c.name, got, c.warn)
		}
	}
}

// TestKSDDefault: the KSD of the draws is computed by default (50 draws,
// each a full pass over the data) up to maxKSDObs = 100,000
// observations, and skipped above.
func TestKSDDefault(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{maxKSDObs, maxKSDObs + 1} {
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		f, err := newFit(models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y}}}, FitSettings{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := 50
		if n > 100000 {
			want = -1
		}
		if f.s.KSDDraws != want {
			t.Errorf("%d observations: KSDDraws %d, want %d", n, f.s.KSDDraws, want)
		}
	}
}
