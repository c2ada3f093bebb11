package pf

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGather checks every row length, including the unrolled 3 and 4,
// against a plain row copy, with repeated and out-of-order ancestors.
func TestGather(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n = 37
	for s := 1; s <= 6; s++ {
		src := make([]float64, n*s)
		for i := range src {
			src[i] = rng.NormFloat64()
		}
		anc := make([]int, n)
		for i := range anc {
			anc[i] = rng.IntN(n)
		}
		want := make([]float64, n*s)
		for i, a := range anc {
			copy(want[i*s:(i+1)*s], src[a*s:(a+1)*s])
		}
		got := make([]float64, n*s)
		gather(got, src, anc, s)
		if !slices.Equal(got, want) {
			t.Errorf("row length %d: gather differs from a row copy", s)
		}
	}
}
