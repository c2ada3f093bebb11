package pf_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

// BenchmarkResample times each scheme on N = 1000 random weights.
func BenchmarkResample(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	n := 1000
	w := make([]float64, n)
	for i := range w {
		w[i] = rng.ExpFloat64()
	}
	dst := make([]int, n)
	for _, s := range schemes {
		b.Run(fmt.Sprintf("%v/N=%d", s, n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pf.Resample(dst, w, s, rng)
			}
		})
	}
}
