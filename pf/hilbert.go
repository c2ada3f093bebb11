package pf

import "math"

// maxHilbertDim is the largest state dimension that gets at least one bit
// per coordinate in a 64-bit key; larger states keep the index order.
const maxHilbertDim = 64

// hilbertKeys sets keys[i], for the n = len(keys) particles whose states
// are the rows of length d of x, to the Hilbert index of particle i's
// state in the bits above shift and i in the bits below (Settings.Sorted
// for vector states, d > 1). The low bits make the keys distinct, so that
// sorting them gives a deterministic permutation.
//
// Each coordinate is mapped to (0, 1) by the logistic function of its
// standardised value, (x_j − μ_j)/s_j, with μ_j and s_j the mean and
// standard deviation of coordinate j under the weights w (sum wsum; zero
// weights are skipped): a smooth, increasing map that follows the cloud
// and moves continuously with the particles and the weights. The image
// is quantised to k = ⌊(64 − shift)/d⌋ bits per coordinate and the
// d-dimensional Hilbert index of the grid point (k·d bits) is computed by
// Skilling's transpose algorithm. Particles whose states fall in the same
// cell are ordered by index; with k = 0 (d > 64 − shift) every key is
// the index. A non-finite mean or a standard deviation that is not
// positive and finite is replaced by 0 or 1, and a NaN coordinate goes to
// cell 0, so that any input gives a valid, deterministic order.
func hilbertKeys(keys []uint64, x, w []float64, wsum float64, d int, shift uint) {
	k := (64 - shift) / uint(d)
	if d > maxHilbertDim || k == 0 {
		for i := range keys {
			keys[i] = uint64(i)
		}
		return
	}
	// Fixed arrays keep the per-resampling work off the heap.
	var mu, inv [maxHilbertDim]float64
	var q [4 * maxHilbertDim]uint64
	hilbertScale(mu[:d], inv[:d], x, w, wsum)
	sq := squash{cells: math.Ldexp(1, int(k)), top: uint64(1)<<k - 1}
	// Four particles at a time: the curve's loop is a chain of dependent
	// bit operations per particle, and four chains overlap.
	i := 0
	if d == 2 {
		sq.mu0, sq.mu1, sq.inv0, sq.inv1 = mu[0], mu[1], inv[0], inv[1]
		for ; i+4 <= len(keys); i += 4 {
			r := x[2*i : 2*i+8 : 2*i+8]
			h0, h1, h2, h3 := hilbertIndex2x4(
				sq.at0(r[0]), sq.at1(r[1]), sq.at0(r[2]), sq.at1(r[3]),
				sq.at0(r[4]), sq.at1(r[5]), sq.at0(r[6]), sq.at1(r[7]), k)
			keys[i] = h0<<shift | uint64(i)
			keys[i+1] = h1<<shift | uint64(i+1)
			keys[i+2] = h2<<shift | uint64(i+2)
			keys[i+3] = h3<<shift | uint64(i+3)
		}
	} else {
		q0, q1, q2, q3 := q[:d], q[d:2*d], q[2*d:3*d], q[3*d:4*d]
		for ; i+4 <= len(keys); i += 4 {
			r := x[i*d : (i+4)*d]
			for j := range q0 {
				q0[j] = sq.cell(r[j], mu[j], inv[j])
				q1[j] = sq.cell(r[d+j], mu[j], inv[j])
				q2[j] = sq.cell(r[2*d+j], mu[j], inv[j])
				q3[j] = sq.cell(r[3*d+j], mu[j], inv[j])
			}
			hilbertUndo4(q0, q1, q2, q3, k)
			keys[i] = hilbertRead(q0, k)<<shift | uint64(i)
			keys[i+1] = hilbertRead(q1, k)<<shift | uint64(i+1)
			keys[i+2] = hilbertRead(q2, k)<<shift | uint64(i+2)
			keys[i+3] = hilbertRead(q3, k)<<shift | uint64(i+3)
		}
	}
	for ; i < len(keys); i++ {
		row := x[i*d : i*d+d]
		for j, v := range row {
			q[j] = sq.cell(v, mu[j], inv[j])
		}
		keys[i] = hilbertIndex(q[:d], k)<<shift | uint64(i)
	}
}

// squash maps a coordinate to its cell: the logistic function of the
// standardised value, (v − μ)/s with inv = 1/s, times the number of cells
// per axis (cells = 2^k), truncated to at most top = 2^k − 1; a NaN goes
// to cell 0. mu0, inv0 and mu1, inv1 are the two coordinates of d = 2.
type squash struct {
	cells      float64
	top        uint64
	mu0, mu1   float64
	inv0, inv1 float64
}

func (s *squash) cell(v, mu, inv float64) uint64 {
	u := 1 / (1 + math.Exp((mu-v)*inv))
	if !(u > 0) { // 0 or NaN
		return 0
	}
	return min(uint64(u*s.cells), s.top)
}

func (s *squash) at0(v float64) uint64 { return s.cell(v, s.mu0, s.inv0) }
func (s *squash) at1(v float64) uint64 { return s.cell(v, s.mu1, s.inv1) }

// hilbertScale sets mu and inv (length d) to the weighted mean and the
// reciprocal weighted standard deviation of each coordinate of the rows
// of length d of x under the weights w with sum wsum.
func hilbertScale(mu, inv, x, w []float64, wsum float64) {
	d := len(mu)
	clear(mu)
	clear(inv) // the second moments first
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		row := x[i*d : i*d+d]
		for j, v := range row {
			mu[j] += wi * v
		}
	}
	for j := range mu {
		mu[j] /= wsum
	}
	for i, wi := range w {
		if wi == 0 {
			continue
		}
		row := x[i*d : i*d+d]
		for j, v := range row {
			e := v - mu[j]
			inv[j] += wi * e * e
		}
	}
	for j := range mu {
		s := math.Sqrt(inv[j] / wsum)
		if math.IsNaN(mu[j]) || math.IsInf(mu[j], 0) {
			mu[j] = 0
		}
		if s > 0 && !math.IsInf(s, 0) {
			inv[j] = 1 / s
		} else {
			inv[j] = 1
		}
	}
}

// hilbertIndex returns the index along the d-dimensional Hilbert curve of
// order b (2^b cells per axis, d = len(x), b·d <= 64) of the grid point
// x, whose coordinates are below 2^b; x is overwritten. It is Skilling's
// AxesToTranspose (J. Skilling, Programming the Hilbert curve, AIP Conf.
// Proc. 707, 2004) followed by reading the transposed index: its bits
// from the most significant down are bit b−1 of x[0], …, x[d−1], then
// bit b−2 of x[0], …, x[d−1], and so on. Consecutive indices are grid
// points one unit step apart in exactly one coordinate.
func hilbertIndex(x []uint64, b uint) uint64 {
	d := len(x)
	if d == 0 || b == 0 {
		return 0
	}
	if d == 2 {
		return hilbertIndex2(x[0], x[1], b)
	}
	hilbertUndo(x, b)
	return hilbertRead(x, b)
}

// hilbertUndo is the first loop of Skilling's AxesToTranspose, "undo
// excess work": for each bit q = 2^j from the top down to 2 and each i,
// if bit q of x[i] is set, invert the bits below q of x[0], else exchange
// them with those of x[i]. The branches are masks here.
func hilbertUndo(x []uint64, b uint) {
	for j := b - 1; j > 0; j-- {
		p := uint64(1)<<j - 1
		x0 := x[0]
		x0 ^= p & -(x0 >> j & 1)
		for i := 1; i < len(x); i++ {
			xi := x[i]
			set := -(xi >> j & 1) // all ones when bit j of x[i] is set
			t := (x0 ^ xi) & p &^ set
			x0 ^= p&set | t
			x[i] = xi ^ t
		}
		x[0] = x0
	}
}

// hilbertUndo4 is hilbertUndo of four points of the same dimension, their
// loops interleaved.
func hilbertUndo4(xa, xb, xc, xd []uint64, b uint) {
	xb, xc, xd = xb[:len(xa)], xc[:len(xa)], xd[:len(xa)]
	for j := b - 1; j > 0; j-- {
		p := uint64(1)<<j - 1
		a0, b0, c0, d0 := xa[0], xb[0], xc[0], xd[0]
		a0 ^= p & -(a0 >> j & 1)
		b0 ^= p & -(b0 >> j & 1)
		c0 ^= p & -(c0 >> j & 1)
		d0 ^= p & -(d0 >> j & 1)
		for i := 1; i < len(xa); i++ {
			ai, bi, ci, di := xa[i], xb[i], xc[i], xd[i]
			sa, sb := -(ai >> j & 1), -(bi >> j & 1)
			sc, sd := -(ci >> j & 1), -(di >> j & 1)
			ta, tb := (a0^ai)&p&^sa, (b0^bi)&p&^sb
			tc, td := (c0^ci)&p&^sc, (d0^di)&p&^sd
			a0 ^= p&sa | ta
			b0 ^= p&sb | tb
			c0 ^= p&sc | tc
			d0 ^= p&sd | td
			xa[i], xb[i], xc[i], xd[i] = ai^ta, bi^tb, ci^tc, di^td
		}
		xa[0], xb[0], xc[0], xd[0] = a0, b0, c0, d0
	}
}

// hilbertRead finishes Skilling's AxesToTranspose after hilbertUndo (the
// Gray encoding) and reads the index off the transpose; x is overwritten.
func hilbertRead(x []uint64, b uint) uint64 {
	d := len(x)
	// Gray encode, then x ^= t (Skilling's "for Q: if X[n−1] & Q: t ^= Q−1").
	for i := 1; i < d; i++ {
		x[i] ^= x[i-1]
	}
	t := grayTail(x[d-1], b)
	for i := range x {
		x[i] ^= t
	}
	if d == 3 {
		return spread3(x[0])<<2 | spread3(x[1])<<1 | spread3(x[2])
	}
	var h uint64
	for j := int(b) - 1; j >= 0; j-- {
		for _, v := range x {
			h = h<<1 | v>>uint(j)&1
		}
	}
	return h
}

// grayTail returns Skilling's t for the last coordinate v of b bits after
// the Gray encoding: the XOR of 2^j − 1 over the set bits j >= 1 of v,
// whose bit i is the parity of the bits of v above i (j <= b − 1), the
// inverse Gray code of v >> 1 with the top bit dropped.
func grayTail(v uint64, b uint) uint64 {
	t := (v & ((uint64(1)<<(b-1) - 1) << 1)) >> 1
	t ^= t >> 1
	t ^= t >> 2
	t ^= t >> 4
	t ^= t >> 8
	t ^= t >> 16
	t ^= t >> 32
	return t
}

// hilbertIndex2 is hilbertIndex for d = 2, the loop on registers.
func hilbertIndex2(x0, x1 uint64, b uint) uint64 {
	for j := b - 1; j > 0; j-- {
		p := uint64(1)<<j - 1
		x0 ^= p & -(x0 >> j & 1)
		set := -(x1 >> j & 1)
		t := (x0 ^ x1) & p &^ set
		x0 ^= p&set | t
		x1 ^= t
	}
	return hilbertRead2(x0, x1, b)
}

// hilbertIndex2x4 is hilbertIndex2 of the points (a0, a1), (b0, b1),
// (c0, c1) and (d0, d1), their loops interleaved.
func hilbertIndex2x4(a0, a1, b0, b1, c0, c1, d0, d1 uint64, b uint) (ha, hb, hc, hd uint64) {
	for j := b - 1; j > 0; j-- {
		p := uint64(1)<<j - 1
		a0 ^= p & -(a0 >> j & 1)
		b0 ^= p & -(b0 >> j & 1)
		c0 ^= p & -(c0 >> j & 1)
		d0 ^= p & -(d0 >> j & 1)
		sa, sb := -(a1 >> j & 1), -(b1 >> j & 1)
		sc, sd := -(c1 >> j & 1), -(d1 >> j & 1)
		ta, tb := (a0^a1)&p&^sa, (b0^b1)&p&^sb
		tc, td := (c0^c1)&p&^sc, (d0^d1)&p&^sd
		a0 ^= p&sa | ta
		b0 ^= p&sb | tb
		c0 ^= p&sc | tc
		d0 ^= p&sd | td
		a1 ^= ta
		b1 ^= tb
		c1 ^= tc
		d1 ^= td
	}
	return hilbertRead2(a0, a1, b), hilbertRead2(b0, b1, b), hilbertRead2(c0, c1, b), hilbertRead2(d0, d1, b)
}

// hilbertRead2 finishes hilbertIndex2 after the loop: the Gray encoding
// and the reading of the transpose.
func hilbertRead2(x0, x1 uint64, b uint) uint64 {
	x1 ^= x0
	t := grayTail(x1, b)
	return spread2(x0^t)<<1 | spread2(x1^t)
}

// spread2 moves bit j of v (v < 2^32) to bit 2j.
func spread2(v uint64) uint64 {
	v &= 0xffffffff
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	v = (v | v<<2) & 0x3333333333333333
	v = (v | v<<1) & 0x5555555555555555
	return v
}

// spread3 moves bit j of v (v < 2^21) to bit 3j.
func spread3(v uint64) uint64 {
	v &= 0x1fffff
	v = (v | v<<32) & 0x001f00000000ffff
	v = (v | v<<16) & 0x001f0000ff0000ff
	v = (v | v<<8) & 0x100f00f00f00f00f
	v = (v | v<<4) & 0x10c30c30c30c30c3
	v = (v | v<<2) & 0x1249249249249249
	return v
}
