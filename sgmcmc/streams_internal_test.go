package sgmcmc

import "testing"

// TestSeedConstants: the constants mixed into Seed are odd and pairwise
// distinct, with the finer Laplace scorer's complement among them, so
// that no two tables of streams share a generator for the same Seed.
func TestSeedConstants(t *testing.T) {
	seeds := map[string]uint64{
		"probeSeedXor":       probeSeedXor,
		"laplaceSeed":        laplaceSeed,
		"^laplaceSeed":       ^uint64(laplaceSeed),
		"spreadSeedXor":      spreadSeedXor,
		"adaptSeedStride":    adaptSeedStride,
		"segmentSeedStride":  segmentSeedStride,
		"zero (Seed itself)": 0,
	}
	seen := map[uint64]string{}
	for name, v := range seeds {
		if other, ok := seen[v]; ok {
			t.Errorf("%s and %s are both %#x", name, other, v)
		}
		seen[v] = name
	}
	for _, name := range []string{"probeSeedXor", "laplaceSeed", "spreadSeedXor", "adaptSeedStride", "segmentSeedStride"} {
		if seeds[name]%2 == 0 {
			t.Errorf("%s = %#x is even", name, seeds[name])
		}
	}
}
