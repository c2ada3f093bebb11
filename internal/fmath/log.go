package fmath

import "math"

// Table-driven logarithm: x = 2^e · m with m ∈ [1, 2), c_j = 1 + (j + ½)/256
// the centre of the 1/256-wide cell of m, and
//
//	log x = e·ln2 + log c_j + log1p(r),   r = m/c_j − 1,  |r| ≤ 1/513,
//
// with log1p(r) from its degree-5 Taylor polynomial (truncation below
// 2e-17). 1/c_j and log c_j come from a table built with math.Log at
// start-up.
const (
	logBits = 8
	logSize = 1 << logBits
)

// logTab[j] holds 1/c_j and log c_j.
var logTab = func() (t [logSize]struct{ inv, log float64 }) {
	for j := range t {
		c := 1 + (float64(j)+0.5)/logSize
		t[j].inv, t[j].log = 1/c, math.Log(c)
	}
	return t
}()

// LogCore returns log x for a positive, finite, normal x (at least
// 2.2250738585072014e−308) with an error below 1e−15·max(1, |log x|): a
// relative error below 1e−15 where |log x| ≥ 1, an absolute one below
// 1e−15 nearer x = 1 (where the relative error can be larger). It does not
// check its argument. It suits log-weights and log-densities, where
// absolute accuracy is what counts; use math.Log where relative accuracy
// near x = 1 matters.
func LogCore(x float64) float64 {
	b := math.Float64bits(x)
	c := &logTab[(b>>(52-logBits))&(logSize-1)]
	r := math.Float64frombits(b&(1<<52-1)|1023<<52)*c.inv - 1
	r2 := r * r
	return float64(int64(b>>52)-1023)*math.Ln2 + c.log + (r - r2*((0.5-r*(1.0/3))+r2*(0.25-r*(1.0/5))))
}

// Log is LogCore with math.Log's handling of zero, negative, subnormal,
// infinite and NaN arguments.
func Log(x float64) float64 {
	if !(x >= 0x1p-1022 && x <= math.MaxFloat64) {
		return math.Log(x)
	}
	return LogCore(x)
}
