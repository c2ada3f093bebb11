package pf

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkSortedResample times one sorted resampling (Settings.Sorted,
// systematic): the keys, their sort, the walk and the mapping back, on
// N Gaussian particles of dimension d with exponential weights. d = 1 is
// the first-component order, d > 1 the Hilbert order; the difference to
// BenchmarkResample's systematic case is the price of the order.
func BenchmarkSortedResample(b *testing.B) {
	for _, d := range []int{1, 2, 5} {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("d=%d/N=%d", d, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				f, err := New(Settings{N: n, Sorted: true})
				if err != nil {
					b.Fatal(err)
				}
				f.ensure(n, d, 0, 1)
				for i := range f.x {
					f.x[i] = rng.NormFloat64()
				}
				f.wsum = 0
				for i := range f.w {
					f.w[i] = rng.ExpFloat64()
					f.wsum += f.w[i]
				}
				b.ReportAllocs()
				for b.Loop() {
					f.sortedResample(d, rng)
				}
			})
		}
	}
}
