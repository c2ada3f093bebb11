package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestLaplaceRefine: pf.Laplace scores the chains with laplacePaths =
// 128 paths by default (FitSettings.LaplacePaths = 0), and the finer
// scorer the correction aims at with laplaceRefine = 4 times as many, at
// 4 times the cost, so its Monte Carlo sd is about half the chains'
// scorer's. On MSV{D: 2} over 100 simulated observations, with 32 paths,
// the sd of the log-likelihood over 160 seeds is compared for both: the
// ratio is 0.47 and must lie in 0.4–0.6 (its Monte Carlo error is about
// 8%); with laplaceRefine = 2 it is 0.82, with 8 0.33.
func TestLaplaceRefine(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.94, 0.94}, []float64{0.27, 0.27}, []float64{0.8}, []float64{0.9, 0.9})
	var seq ssm.Sequence
	if err == nil {
		_, seq, err = m.Simulate(100, u, rand.New(rand.NewPCG(1, 2)))
	}
	if err != nil {
		t.Fatal(err)
	}
	if lm := newLaplaceModel(m, u, 0, 1); lm == nil || lm.paths != 128 {
		t.Fatalf("LaplacePaths 0: not 128 paths (laplacePaths %d)", laplacePaths)
	}
	const seeds = 160
	var plain, fine [2]float64 // sum, sum of squares
	for s := range seeds {
		lm := newLaplaceModel(m, u, 32, uint64(s+1))
		a, err := lm.ExactScore(nil, u, seq, ssm.Full(seq.Len()))
		if err != nil {
			t.Fatal(err)
		}
		b, err := lm.RefinedLogLik(u, seq, ssm.Full(seq.Len()))
		if err != nil {
			t.Fatal(err)
		}
		plain[0], plain[1] = plain[0]+a, plain[1]+a*a
		fine[0], fine[1] = fine[0]+b, fine[1]+b*b
	}
	sd := func(s [2]float64) float64 { return math.Sqrt((s[1] - s[0]*s[0]/seeds) / (seeds - 1)) }
	ratio := sd(fine) / sd(plain)
	t.Logf("sd with 32 paths %.4f, with %d: %.4f; ratio %.3f (laplaceRefine %d)", sd(plain), 32*laplaceRefine, sd(fine), ratio, laplaceRefine)
	if ratio < 0.4 || ratio > 0.6 {
		t.Errorf("the finer scorer's sd is %.3f of the chains' scorer's, want about 1/2 (0.4–0.6)", ratio)
	}
}

// TestLaplaceStartSteps: the chains' sweeps (laplaceModel.sweep) start
// from the mode at the preparation's u* and take laplaceStartSteps Newton
// steps, and the preparation's plain estimate runs its steps to
// convergence: on MSV{D: 2} over 300 simulated rows, at parameters 0.05
// from u* in each coordinate, each equals pf.Laplace's own estimate with
// those settings bit for bit, and the sweep differs (in its last digits:
// pf's TestLaplaceStartSteps bounds the change) from the sweep with its
// steps run to convergence.
func TestLaplaceStartSteps(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	var seq ssm.Sequence
	if err == nil {
		_, seq, err = m.Simulate(300, u, rand.New(rand.NewPCG(1, 2)))
	}
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	lm := newLaplaceModel(m, u, 0, 1)
	lm.startAt(u, data)
	if len(lm.starts) != 1 || lm.starts[0] == nil {
		t.Fatal("no start at u*")
	}
	v := append([]float64(nil), u...)
	for i := range v {
		v[i] += 0.05 * float64(i%3-1)
	}
	k, err := m.Bind(v)
	if err != nil {
		t.Fatal(err)
	}
	w := ssm.Full(seq.Len())
	direct := func(plain bool, steps int) (float64, int) {
		l := pf.Laplace{Paths: lm.paths, Seed: 7, Plain: plain, Whole: true, Start: lm.starts[0], StartSteps: steps}
		if plain {
			l.Seed, l.Start = lm.seed, nil
		}
		ll, err := l.Score(nil, k, m.Dims(), seq, w)
		if err != nil {
			t.Fatal(err)
		}
		return ll, l.Steps
	}
	sweep, err := lm.sweep(nil, v, seq, w, 7, lm.starts[0])
	if err != nil {
		t.Fatal(err)
	}
	capped, steps := direct(false, laplaceStartSteps)
	full, fullSteps := direct(false, 0)
	t.Logf("sweep %.12f: %d steps %.12f, %d steps %.12f", sweep, steps, capped, fullSteps, full)
	if sweep != capped || steps != laplaceStartSteps {
		t.Errorf("the chains' sweep %.12f, pf.Laplace with StartSteps %d %.12f (%d steps)", sweep, laplaceStartSteps, capped, steps)
	}
	if fullSteps <= laplaceStartSteps || sweep == full {
		t.Errorf("steps to convergence %d (log-likelihood %.12f): the test does not tell the sweep's %d steps apart", fullSteps, full, laplaceStartSteps)
	}
	plain, err := lm.ExactScore(nil, v, seq, w)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := direct(true, 0); plain != want {
		t.Errorf("the plain estimate %.12f, pf.Laplace's to convergence %.12f", plain, want)
	}
}
