package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestPseudoMarginalKSDScores: on the pseudo-marginal path the KSD weighs
// the draws against the resampling sweep's scores, which estimate the
// exact posterior's: by the Stein identity E_π[∇log π(u)] = 0, their mean
// over every draw of the chains is within 4 standard errors (sd/√ESS) of
// 0 in every coordinate (MSV{D: 1}, the 500 simulated rows of
// TestFitPseudoMarginalSV, where the weights are uneven).
func TestPseudoMarginalKSDScores(t *testing.T) {
	longtest.Skip(t, "a whole fit")
	m := models.MSV{D: 1}
	u0 := make([]float64, 3)
	if err := m.Unconstrain(u0, []float64{0.6, 0.75, 1}); err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(500, u0, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFit(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := f.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	post, err := f.sample(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !f.pseudoMarginal() || !f.prep.Walk {
		t.Fatalf("pseudo-marginal %v, walk %v: want the pseudo-marginal path with uneven weights", f.pseudoMarginal(), f.prep.Walk)
	}
	p := f.dim
	var x []float64
	for _, c := range post.U {
		x = append(x, c...)
	}
	K := len(x) / p
	sweep := make([]float64, K*p)
	if err := f.pmKSDScores(ctx, x, sweep, K); err != nil {
		t.Fatal(err)
	}
	pts := make([][]float64, K)
	for i := range pts {
		pts[i] = x[i*p : (i+1)*p]
	}
	sc, err := f.fullScores(ctx, pts)
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]float64, K*p)
	prior := make([]float64, p)
	for i, g := range sc {
		f.model.LogPrior(prior, pts[i])
		for j := range g {
			plain[i*p+j] = g[j] + prior[j]
		}
	}
	chains, per := len(post.U), K/len(post.U)
	for d, name := range post.Names {
		ms, ses := chainMeanSE(sweep, d, p, chains, per)
		mp, sep := chainMeanSE(plain, d, p, chains, per)
		t.Logf("%s: mean score %.3f ± %.3f (the sweep's), %.3f ± %.3f (the plain estimate's)", name, ms, ses, mp, sep)
		if math.Abs(ms) > 4*ses {
			t.Errorf("%s: the sweep's mean score %.3f is %.1f standard errors from 0", name, ms, ms/ses)
		}
	}
}

// chainMeanSE returns the mean of column d of s (rows: chains chains of
// per draws in turn, p columns) and its standard error sd/√ESS, with the
// multi-chain ESS of that column.
func chainMeanSE(s []float64, d, p, chains, per int) (mean, se float64) {
	cs := make([][]float64, chains)
	var all []float64
	for c := range cs {
		for i := range per {
			cs[c] = append(cs[c], s[(c*per+i)*p+d])
		}
		all = append(all, cs[c]...)
	}
	mean = stat.Mean(all, nil)
	return mean, stat.StdDev(all, nil) / math.Sqrt(ksd.ESS(cs))
}
