package sgmcmc

import (
	"math"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
)

// TestWalkTune: on Laplace importance sampling (the model's exact scorer
// is its Laplace model) the full-data chains' local steps are random
// walks (walkSteps, Preparation.Walk) and an adaptation window tunes
// their step towards an acceptance of walkAccept; on any other exact
// scorer towards 0.7, the Langevin proposals'. Independence steps that an
// adaptation window accepted under rareAccept of the time drop to
// rareIndependence of the steps, unless a surrogate drives them.
func TestWalkTune(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.9, 0.9}, []float64{0.3, 0.3}, []float64{0.5}, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	lm := newLaplaceModel(m, u, 0, 1)
	if lm == nil {
		t.Fatal("no Laplace model for MSV{D: 2}")
	}
	for _, c := range []struct {
		name    string
		laplace bool
		target  float64
	}{{"laplace", true, walkAccept}, {"exact", false, 0.7}} {
		f := &fit{model: models.LGSSM{}, log: t.Logf}
		f.prep.Exact = true
		if c.laplace {
			f.laplace, f.model = lm, lm
		}
		if f.walkSteps() != c.laplace {
			t.Errorf("%s: walkSteps %v", c.name, f.walkSteps())
		}
		for _, acc := range []float64{c.target, c.target + 0.1} {
			f.prep.StepSize = 0.5
			f.tuneMALA(acc, 0.5)
			want := 0.5 * math.Exp(2*(acc-c.target))
			if math.Abs(f.prep.StepSize-want) > 1e-12 {
				t.Errorf("%s: acceptance %.2f: step %.4f, want %.4f", c.name, acc, f.prep.StepSize, want)
			}
		}
	}
	f := &fit{log: t.Logf}
	f.tuneIndependence(rareAccept + 0.01)
	if f.prep.Independence != 0 {
		t.Errorf("independence accepted %.2f of the time: share %.2f, want unchanged", rareAccept+0.01, f.prep.Independence)
	}
	f.tuneIndependence(rareAccept / 2)
	if f.prep.Independence != rareIndependence {
		t.Errorf("independence accepted %.3f of the time: share %.2f, want %.2f", rareAccept/2, f.prep.Independence, rareIndependence)
	}
	g := &fit{log: t.Logf}
	g.prep.sur, g.prep.Independence = &surrogate.Surrogate{}, 0.9
	g.tuneIndependence(0)
	if g.prep.Independence != 0.9 {
		t.Errorf("with a surrogate: share %.2f, want 0.9 unchanged", g.prep.Independence)
	}
}
