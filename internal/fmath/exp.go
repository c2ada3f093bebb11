package fmath

import "math"

// Table-driven exponential: x = (32m + j)·ln2/32 + r with |r| ≤ ln2/64,
// e^x = 2^m · 2^{j/32} · e^r, and e^r from a degree-6 Taylor polynomial
// (truncation error below 4e-18 on that interval).
const (
	tableBits = 5
	tableSize = 1 << tableBits
	invL      = tableSize / math.Ln2
	lHi       = 2.16608493865351192653e-02 // high part of ln2/32 (exact in few bits)
	lLo       = math.Ln2/tableSize - lHi
	shift     = 0x1.8p52 // adding and subtracting it rounds to an integer
)

// twoPow[j] = 2^{j/32}, correctly rounded by math.Exp2 at start-up.
var twoPow = func() (t [tableSize]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / tableSize)
	}
	return t
}()

// Exp returns e^x with a relative error below 1e-15 for x in
// [−708, 709]; outside it (and for NaN) it defers to math.Exp, so
// overflow, underflow to subnormals and NaN behave exactly as there.
func Exp(x float64) float64 {
	var d [1]float64
	ExpTo(d[:], []float64{x})
	return d[0]
}

// ExpTo sets dst[i] = e^{src[i]} (the accuracy and edge behaviour of Exp).
// dst and src may be the same slice. The loop body is written out, so no
// call is made per element; a table of 2^{j/32} keeps the polynomial
// short, which makes it cheaper than math.Exp per element.
func ExpTo(dst, src []float64) {
	dst = dst[:len(src)]
	for i, x := range src {
		if !(x >= -708 && x <= 709) {
			dst[i] = math.Exp(x)
			continue
		}
		kf := (x*invL + shift) - shift
		k := int64(kf)
		r := (x - kf*lHi) - kf*lLo
		r2 := r * r
		p := 1 + r + r2*((0.5+r*(1.0/6))+r2*((1.0/24+r*(1.0/120))+r2*(1.0/720)))
		scale := math.Float64frombits(uint64((k>>tableBits)+1023) << 52)
		dst[i] = twoPow[k&(tableSize-1)] * scale * p
	}
}
