package pf

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// sortedResample draws f.anc from the weights f.w with the particles taken
// in increasing order of their state (Settings.Sorted): of the state
// itself for a scalar state, of its index along a Hilbert curve
// (hilbertKeys) for a vector state.
//
// Each particle gets a key with i in its low bits: for a scalar state the
// order-preserving integer image of x_i with its low bits replaced by i,
// so one slices.Sort of integers gives the permutation (ties and the few
// lowest mantissa bits are broken by index, which keeps the order
// deterministic). The scheme then runs on the permuted weights and the
// indices are mapped back.
func (f *Filter) sortedResample(state int, rng *rand.Rand) {
	n := f.n
	shift := uint(bits.Len(uint(n - 1)))
	mask := uint64(1)<<shift - 1
	keys := f.sortKeys[:n]
	if state == 1 {
		for i := range keys {
			b := math.Float64bits(f.x[i])
			if b>>63 != 0 {
				b = ^b
			} else {
				b |= 1 << 63
			}
			keys[i] = b&^mask | uint64(i)
		}
	} else {
		hilbertKeys(keys, f.x[:n*state], f.w[:n], f.wsum, state, shift)
	}
	slices.Sort(keys)
	sw := f.sortW[:n]
	total := 0.0 // summed in the walk's order, as resample requires
	for k, key := range keys {
		sw[k] = f.w[key&mask]
		total += sw[k]
	}
	resample(f.anc, sw, total, f.set.Resampling, rng, f.scratch)
	for j, a := range f.anc {
		f.anc[j] = int(keys[a] & mask)
	}
}

func growUint(b []uint64, n int) []uint64 {
	if cap(b) < n {
		return make([]uint64, n)
	}
	return b[:n]
}
