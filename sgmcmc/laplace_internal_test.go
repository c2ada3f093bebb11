package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
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
