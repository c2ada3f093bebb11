package fmath

import "math"

// Table-driven exponential: x = (64m + j)·ln2/64 + r with |r| ≤ ln2/128,
// e^x = 2^m · 2^{j/64} · e^r, and e^r from a degree-5 Taylor polynomial
// (truncation error below 4e-17 on that interval).
const (
	tableBits = 6
	tableSize = 1 << tableBits
	invL      = tableSize / math.Ln2
	lHi       = 1.083042469326755963265e-02 // high part of ln2/64 (exact in few bits)
	lLo       = math.Ln2/tableSize - lHi
	shift     = 0x1.8p52 // adding and subtracting it rounds to an integer
)

// twoPowBits[j] holds the bits of 2^{j/64}, correctly rounded by
// math.Exp2 at start-up. Adding m<<52 to them multiplies by 2^m, which
// stays a normal number for the m that ExpCore's domain produces.
var twoPowBits = func() (t [tableSize]uint64) {
	for j := range t {
		t[j] = math.Float64bits(math.Exp2(float64(j) / tableSize))
	}
	return t
}()

// ExpCore returns e^x for x in [−708, 709], with the accuracy of Exp; it
// does not check the range (outside it the result is wrong, not an
// error). It is small enough for the compiler to inline, so callers can
// fuse an exponential into their own loops: check the range and call
// math.Exp outside it, as Exp does.
func ExpCore(x float64) float64 {
	kf := (x*invL + shift) - shift
	k := int64(kf)
	r := (x - kf*lHi) - kf*lLo
	r2 := r * r
	p := 1 + r + r2*((0.5+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	return math.Float64frombits(twoPowBits[k&(tableSize-1)]+uint64(k>>tableBits)<<52) * p
}

// Exp returns e^x with a relative error below 1e-15 for x in
// [−708, 709]; outside it (and for NaN) it defers to math.Exp, so
// overflow, underflow to subnormals and NaN behave exactly as there.
func Exp(x float64) float64 {
	if !(x >= -708 && x <= 709) {
		return math.Exp(x)
	}
	return ExpCore(x)
}

// ExpTo sets dst[i] = e^{src[i]} (the accuracy and edge behaviour of Exp).
// dst and src may be the same slice. ExpCore is inlined, so no call is
// made per element; a table of 2^{j/64} keeps the polynomial short, which
// makes it cheaper than math.Exp per element.
func ExpTo(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		if !(x >= -708 && x <= 709) {
			dst[i] = math.Exp(x)
			continue
		}
		dst[i] = ExpCore(x)
	}
}
