package pf

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// skillingIndex is Skilling's AxesToTranspose as published (branches and
// all), followed by reading the transpose bit by bit: the reference for
// hilbertIndex.
func skillingIndex(x []uint64, b uint) uint64 {
	n := len(x)
	m := uint64(1) << (b - 1)
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := 0; i < n; i++ {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	t := uint64(0)
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := range x {
		x[i] ^= t
	}
	var h uint64
	for j := int(b) - 1; j >= 0; j-- {
		for i := 0; i < n; i++ {
			h = h<<1 | x[i]>>uint(j)&1
		}
	}
	return h
}

// TestHilbertIndexGrid checks the curve on every point of small grids
// (d = 2 with 1 to 5 bits per axis, d = 3 with 1 to 3, d = 4 and 5 with
// 2): the index is a bijection onto 0..2^(b·d)−1, index 0 is the origin,
// and points with consecutive indices are one unit step apart in exactly
// one coordinate.
func TestHilbertIndexGrid(t *testing.T) {
	for _, c := range []struct{ d, b int }{
		{2, 1}, {2, 2}, {2, 3}, {2, 4}, {2, 5},
		{3, 1}, {3, 2}, {3, 3},
		{4, 2}, {5, 2},
	} {
		d, b := c.d, uint(c.b)
		size := 1 << (b * uint(d))
		at := make([][]uint64, size) // at[h] is the point of index h
		p := make([]uint64, d)
		x := make([]uint64, d)
		for cell := 0; cell < size; cell++ {
			for j := range p { // cell's digits in base 2^b
				p[j] = uint64(cell>>(uint(j)*b)) & (1<<b - 1)
			}
			copy(x, p)
			h := hilbertIndex(x, b)
			if h >= uint64(size) {
				t.Fatalf("d = %d, b = %d: index %d of %v is out of range [0, %d)", d, b, h, p, size)
			}
			if at[h] != nil {
				t.Fatalf("d = %d, b = %d: %v and %v share index %d", d, b, at[h], p, h)
			}
			at[h] = slices.Clone(p)
		}
		// size distinct indices below size: a bijection
		for j, v := range at[0] {
			if v != 0 {
				t.Errorf("d = %d, b = %d: index 0 is %v, not the origin (coordinate %d)", d, b, at[0], j)
			}
		}
		for h := 1; h < size; h++ {
			moved, dist := 0, uint64(0)
			for j := range at[h] {
				if a, z := at[h-1][j], at[h][j]; a != z {
					moved++
					dist += max(a, z) - min(a, z)
				}
			}
			if moved != 1 || dist != 1 {
				t.Fatalf("d = %d, b = %d: indices %d and %d are %v and %v, not one unit step apart", d, b, h-1, h, at[h-1], at[h])
			}
		}
	}
}

// TestHilbertIndexSkilling checks the branch-free hilbertIndex against
// Skilling's published loop on random points at every number of bits the
// keys use, for d = 2 to 8.
func TestHilbertIndexSkilling(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for d := 2; d <= 8; d++ {
		for b := uint(1); b*uint(d) <= 64; b++ {
			x, y := make([]uint64, d), make([]uint64, d)
			for r := 0; r < 200; r++ {
				for j := range x {
					x[j] = rng.Uint64() >> (64 - b)
				}
				copy(y, x)
				p := slices.Clone(x)
				if got, want := hilbertIndex(x, b), skillingIndex(y, b); got != want {
					t.Fatalf("d = %d, b = %d, point %v: index %#x, Skilling's %#x", d, b, p, got, want)
				}
			}
		}
	}
}

// TestHilbertKeys checks the keys built for sorting: the particle index in
// the low bits, the Hilbert index of the squashed, quantised state above
// it, the same order after a positive affine change of each coordinate
// (the squashing standardises by the weighted mean and sd), and a valid
// order (the index in the low bits, keys distinct) for NaN and infinite
// states, degenerate weights and states too long for one bit per axis.
func TestHilbertKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const n = 302 // not a multiple of 4: both paths of d = 2
	shift := uint(bits.Len(uint(n - 1)))
	mask := uint64(1)<<shift - 1
	distinct := func(name string, keys []uint64) {
		t.Helper()
		for i, k := range keys {
			if int(k&mask) != i {
				t.Errorf("%s: key %d holds index %d", name, i, k&mask)
				return
			}
		}
	}
	for _, d := range []int{2, 3, 5} {
		x := make([]float64, n*d)
		w := make([]float64, n)
		wsum := 0.0
		for i := range w {
			w[i] = rng.ExpFloat64()
			wsum += w[i]
		}
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		keys := make([]uint64, n)
		hilbertKeys(keys, x, w, wsum, d, shift)
		distinct("plain", keys)

		// the key's high bits are the index of the quantised squashed state
		k := (64 - shift) / uint(d)
		mu, inv := make([]float64, d), make([]float64, d)
		hilbertScale(mu, inv, x, w, wsum)
		for j := range mu {
			m, s := 0.0, 0.0
			for i := range w {
				m += w[i] * x[i*d+j] / wsum
			}
			for i := range w {
				s += w[i] * (x[i*d+j] - m) * (x[i*d+j] - m) / wsum
			}
			if math.Abs(mu[j]-m) > 1e-12 || math.Abs(inv[j]*math.Sqrt(s)-1) > 1e-12 {
				t.Errorf("d = %d, coordinate %d: mean %v, 1/sd %v; want %v, %v", d, j, mu[j], inv[j], m, 1/math.Sqrt(s))
			}
		}
		q := make([]uint64, d)
		for i := range w {
			for j := range q {
				z := (x[i*d+j] - mu[j]) * inv[j]
				q[j] = uint64(math.Ldexp(1/(1+math.Exp(-z)), int(k)))
			}
			if want := hilbertIndex(q, k)<<shift | uint64(i); keys[i] != want {
				t.Fatalf("d = %d, particle %d: key %#x, want %#x", d, i, keys[i], want)
			}
		}

		// invariance under x_j -> a_j x_j + c_j, a_j > 0
		y := make([]float64, n*d)
		for j := 0; j < d; j++ {
			a, c := math.Exp(rng.NormFloat64()), 10*rng.NormFloat64()
			for i := 0; i < n; i++ {
				y[i*d+j] = a*x[i*d+j] + c
			}
		}
		ykeys := make([]uint64, n)
		hilbertKeys(ykeys, y, w, wsum, d, shift)
		slices.Sort(keys)
		slices.Sort(ykeys)
		same := 0
		for i := range keys {
			if keys[i]&mask == ykeys[i]&mask {
				same++
			}
		}
		if same < n-2 { // a point on a cell boundary may move by rounding
			t.Errorf("d = %d: an affine change of the coordinates reorders %d of %d particles", d, n-same, n)
		}

		// non-finite states and weights on one particle
		x[0], x[d+1], x[2*d] = math.NaN(), math.Inf(1), math.Inf(-1)
		hilbertKeys(keys, x, w, wsum, d, shift) // mean and sd not finite
		distinct("non-finite", keys)
		clear(w)
		w[5] = 1
		hilbertKeys(keys, x, w, 1, d, shift) // sd 0
		distinct("one weight", keys)
	}
	// d > 64 − shift: no bit per axis, the index order
	d := 60
	x := make([]float64, n*d)
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	keys := make([]uint64, n)
	hilbertKeys(keys, x, w, n, d, shift)
	for i, k := range keys {
		if k != uint64(i) {
			t.Fatalf("d = %d: key %d is %#x, want the index", d, i, k)
		}
	}
}

// TestSortedScalarKeys checks that a scalar state keeps the keys of the
// first-component order (the order-preserving image of x_i with i in the
// low bits), so that Sorted draws for scalar models do not change.
func TestSortedScalarKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, n := range []int{1, 2, 100, 1000} {
		f, err := New(Settings{N: n, Sorted: true})
		if err != nil {
			t.Fatal(err)
		}
		f.ensure(n, 1, 0, 1)
		f.wsum = 0
		for i := 0; i < n; i++ {
			f.x[i] = 3 * rng.NormFloat64()
			f.w[i] = rng.ExpFloat64()
			f.wsum += f.w[i]
		}
		f.x[0] = math.Copysign(0, -1)
		f.sortedResample(1, rand.New(rand.NewPCG(1, 2)))
		shift := uint(bits.Len(uint(n - 1)))
		mask := uint64(1)<<shift - 1
		want := make([]uint64, n)
		for i := range want {
			b := math.Float64bits(f.x[i])
			if b>>63 != 0 {
				b = ^b
			} else {
				b |= 1 << 63
			}
			want[i] = b&^mask | uint64(i)
		}
		slices.Sort(want)
		if !slices.Equal(f.sortKeys[:n], want) {
			t.Errorf("N = %d: scalar keys differ from the first-component keys", n)
		}
	}
}
