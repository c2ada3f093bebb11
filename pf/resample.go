package pf

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Resampling selects how ancestor indices are drawn from normalised
// weights. Every scheme is unbiased: the expected number of offspring of
// particle i is M·w_i for M draws.
type Resampling int

const (
	// Systematic uses one uniform U and the points (k+U)/M. Offspring
	// counts are floor(M·w_i) or ceil(M·w_i) for every i. The default.
	Systematic Resampling = iota
	// Stratified uses one uniform per stratum [k/M, (k+1)/M).
	Stratified
	// Multinomial draws M independent indices (the paper's scheme), by
	// walking sorted uniforms built from exponential spacings: O(M+N).
	Multinomial
	// Residual keeps floor(M·w_i) copies of particle i and draws the
	// remaining ones multinomially from the residual weights.
	Residual
)

// String returns the scheme's name.
func (r Resampling) String() string {
	switch r {
	case Systematic:
		return "systematic"
	case Stratified:
		return "stratified"
	case Multinomial:
		return "multinomial"
	case Residual:
		return "residual"
	}
	return fmt.Sprintf("Resampling(%d)", int(r))
}

func (r Resampling) valid() bool { return r >= Systematic && r <= Residual }

// Resample fills dst with len(dst) ancestor indices drawn from the
// non-negative weights w by the given scheme. The weights need not be
// normalised but must have a positive finite sum. Systematic and
// multinomial draws come out sorted. Resample panics when dst or w is
// empty, the weight sum is not positive and finite, or the scheme is
// unknown. Multinomial and Residual allocate a scratch slice; a Filter
// keeps its own.
func Resample(dst []int, w []float64, scheme Resampling, rng *rand.Rand) {
	if len(dst) == 0 || len(w) == 0 {
		panic("pf: Resample with empty dst or weights")
	}
	if !scheme.valid() {
		panic(fmt.Sprintf("pf: unknown resampling scheme %d", int(scheme)))
	}
	total := 0.0
	for _, v := range w {
		if v < 0 || math.IsNaN(v) {
			panic("pf: Resample with a negative or NaN weight")
		}
		total += v
	}
	if !(total > 0) || math.IsInf(total, 0) {
		panic("pf: Resample weights must have a positive finite sum")
	}
	var scratch []float64
	switch scheme {
	case Multinomial:
		scratch = make([]float64, len(dst))
	case Residual:
		scratch = make([]float64, len(w)+len(dst))
	}
	resample(dst, w, total, scheme, rng, scratch)
}

// resample is Resample without checks. total is the sum of w computed in
// index order (walks compare against running sums computed the same way).
// scratch has at least len(dst) elements for Multinomial and
// len(w)+len(dst) for Residual.
func resample(dst []int, w []float64, total float64, scheme Resampling, rng *rand.Rand, scratch []float64) {
	switch scheme {
	case Systematic:
		systematic(dst, w, total, rng.Float64())
	case Stratified:
		stratified(dst, w, total, rng)
	case Multinomial:
		multinomial(dst, w, total, rng, scratch[:len(dst)])
	case Residual:
		residual(dst, w, total, rng, scratch)
	}
}

// lastPositive returns the largest i with w[i] > 0. Walks stop there, so
// a point that rounding pushed to the total never selects a zero weight.
func lastPositive(w []float64) int {
	for i := len(w) - 1; i > 0; i-- {
		if w[i] > 0 {
			return i
		}
	}
	return 0
}

// systematic avoids the usual two-pointer walk, whose data-dependent
// inner loop mispredicts a branch about once per particle on uneven
// weights. Particle i owns the points (k+u)·step below its running sum C_i
// and not below C_{i-1}; their number below C_i is K_i = floor(C_i/step −
// u) + 1 (the argument exceeds −1, so truncation is floor). Then dst[k] =
// #{i : K_i ≤ k}, a histogram followed by a prefix sum. Ties (C_i/step − u
// an integer) have probability zero.
func systematic(dst []int, w []float64, total, u float64) {
	m := len(dst)
	inv := float64(m) / total
	last := lastPositive(w)
	clear(dst) // dst holds the histogram of K_i first
	c := 0.0
	for _, v := range w[:last] {
		c += v
		if k := int(c*inv - u + 1); k < m {
			dst[k]++
		}
	}
	// Particles after last have zero weight: last owns the remaining
	// points, whatever the rounding of the final sums.
	s := 0
	for k, n := range dst {
		s += n
		dst[k] = s
	}
}

func stratified(dst []int, w []float64, total float64, rng *rand.Rand) {
	step := total / float64(len(dst))
	last := lastPositive(w)
	i, c := 0, w[0]
	for k := range dst {
		p := (float64(k) + rng.Float64()) * step
		for c <= p && i < last {
			i++
			c += w[i]
		}
		dst[k] = i
	}
}

// multinomial draws len(dst) sorted iid indices. The sorted uniforms are
// the normalised partial sums of len(dst)+1 standard exponentials (the
// order statistics of uniforms), so no sort is needed.
func multinomial(dst []int, w []float64, total float64, rng *rand.Rand, spacing []float64) {
	s := 0.0
	for k := range spacing {
		s += rng.ExpFloat64()
		spacing[k] = s
	}
	s += rng.ExpFloat64()
	scale := total / s
	last := lastPositive(w)
	i, c := 0, w[0]
	for k, e := range spacing {
		p := e * scale
		for c <= p && i < last {
			i++
			c += w[i]
		}
		dst[k] = i
	}
}

// residual writes the deterministic copies first, then the multinomial
// draws on the residual weights. scratch[:len(w)] holds the residuals.
func residual(dst []int, w []float64, total float64, rng *rand.Rand, scratch []float64) {
	m := len(dst)
	res := scratch[:len(w)]
	scale := float64(m) / total
	pos := 0
	rtot := 0.0
	for i, v := range w {
		a := v * scale
		c := int(a)
		if pos+c > m { // rounding guard; cannot happen in exact arithmetic
			c = m - pos
		}
		for ; c > 0; c-- {
			dst[pos] = i
			pos++
		}
		r := a - math.Floor(a)
		res[i] = r
		rtot += r
	}
	if pos == m {
		return
	}
	if !(rtot > 0) {
		// Rounding left draws but no residual mass: fall back to w.
		copy(res, w)
		rtot = total
	}
	multinomial(dst[pos:], res, rtot, rng, scratch[len(w):len(w)+m-pos])
}

// ESS returns the effective sample size (Σw)²/Σw² of the unnormalised
// log-weights logw, computed stably from the maximum. NaN log-weights
// count as -Inf; ESS is 0 when every weight is zero.
func ESS(logw []float64) float64 {
	m := math.Inf(-1)
	for _, v := range logw {
		if v > m {
			m = v
		}
	}
	if math.IsInf(m, -1) {
		return 0
	}
	if math.IsInf(m, 1) {
		n := 0.0 // the infinite weights share all the mass equally
		for _, v := range logw {
			if math.IsInf(v, 1) {
				n++
			}
		}
		return n
	}
	s, s2 := 0.0, 0.0
	for _, v := range logw {
		if v != v {
			continue
		}
		e := math.Exp(v - m)
		s += e
		s2 += e * e
	}
	return s * s / s2
}
