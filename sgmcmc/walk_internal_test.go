package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestWalkTune: on Laplace importance sampling (the model's exact scorer
// is its Laplace model) the full-data chains' local steps are random
// walks (chooseWalk, Preparation.Walk) and an adaptation window tunes
// their step towards an acceptance of walkAccept; on any other exact
// scorer, and on Laplace importance sampling whose weights are even
// (LGSSMd with its Kalman scorer hidden, evenESS), towards 0.7, the
// Langevin proposals'. Independence steps that an
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
	_, seq, err := m.Simulate(200, u, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	lg := models.LGSSMd{D: 2}
	ulg, err := lg.Params([]float64{0.7, 0.1, 0, 0.6}, []float64{0.5, 0.5}, []float64{0.4, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	_, lgSeq, err := lg.Simulate(200, ulg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	hidden := newLaplaceModel(struct{ ssm.Model }{lg}, ulg, 0, 1) // its Kalman scorer hidden
	if hidden == nil {
		t.Fatal("no Laplace model for LGSSMd{D: 2} without its Kalman scorer")
	}
	// The tolerance's margins: LGSSMd's weights are even to rounding,
	// MSV's far from even.
	for _, c := range []struct {
		model ssm.Model
		u     []float64
		seq   ssm.Sequence
		even  bool
	}{{lg, ulg, lgSeq, true}, {m, u, seq, false}} {
		k, err := c.model.Bind(c.u)
		if err != nil {
			t.Fatal(err)
		}
		l := pf.Laplace{Paths: laplacePaths, Plain: true, Whole: true}
		if _, err := l.Score(nil, k, c.model.Dims(), c.seq, ssm.Full(c.seq.Len())); err != nil {
			t.Fatal(err)
		}
		short := 1 - l.ESS/laplacePaths
		t.Logf("%T: ESS %.12g of %d", c.model, l.ESS, laplacePaths)
		if c.even && !(short < evenESS/1000) || !c.even && !(short > 1000*evenESS) {
			t.Errorf("%T: ESS short of the paths by %.3g, the tolerance is %g", c.model, short, evenESS)
		}
	}
	for _, c := range []struct {
		name   string
		lm     *laplaceModel
		u      []float64
		seq    ssm.Sequence
		walk   bool
		target float64
	}{
		{"msv", lm, u, seq, true, walkAccept},
		{"lgssmd (even weights)", hidden, ulg, lgSeq, false, 0.7},
		{"the model's own exact scorer", nil, ulg, lgSeq, false, 0.7},
	} {
		f := &fit{model: models.LGSSM{}, data: ssm.Dataset{Sequences: []ssm.Sequence{c.seq}}, log: t.Logf}
		f.prep.Exact = true
		if c.lm != nil {
			f.laplace, f.model = c.lm, c.lm
		}
		walk, err := f.chooseWalk(c.u)
		if err != nil || walk != c.walk {
			t.Errorf("%s: chooseWalk %v (%v), want %v", c.name, walk, err, c.walk)
		}
		f.prep.Walk = walk
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
