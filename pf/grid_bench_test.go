package pf_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// BenchmarkGridWindow: one buffered window (S = 40, B = 10) of an SVM
// series by the grid filter with the score, at a fixed parameter value
// (band cached) and alternating between two (the control variate's
// pattern), against the guided particle filter with N = 1000.
func BenchmarkGridWindow(b *testing.B) {
	var m models.SVM
	u, _ := m.Params(0.94, 0.26, 0.87)
	u2, _ := m.Params(0.95, 0.25, 0.9)
	k, _ := m.Bind(u)
	k2, _ := m.Bind(u2)
	d := m.Dims()
	_, seq, _ := m.Simulate(2000, u, rand.New(rand.NewPCG(5, 6)))
	g, err := pf.GridFor(k, u, d, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	w := ssm.Window{Start: 500, End: 560, KeepStart: 510, KeepEnd: 550}
	stat := make([]float64, d.Param)
	ctx := context.Background()
	b.Run("grid-cached", func(b *testing.B) {
		f, _ := pf.NewGridFilter(g)
		sc := pf.Score(k, d)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Run(ctx, k, u, d, seq, w, sc, stat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grid-alternating", func(b *testing.B) {
		f, _ := pf.NewGridFilter(g)
		sc, sc2 := pf.Score(k, d), pf.Score(k2, d)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			kk, uu, s := k, u, sc
			if i%2 == 1 {
				kk, uu, s = k2, u2, sc2
			}
			if _, err := f.Run(ctx, kk, uu, d, seq, w, s, stat); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("particles-1000", func(b *testing.B) {
		f, _ := pf.New(pf.Settings{N: 1000})
		sc := pf.Score(k, d)
		rng := rand.New(rand.NewPCG(1, 1))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Run(ctx, k, d, seq, w, sc, stat, rng); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Logf("grid %+v", g)
}
