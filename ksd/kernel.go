package ksd

import (
	"errors"
	"fmt"
	"math"
)

var (
	// ErrKernel is wrapped by errors about invalid IMQ parameters.
	ErrKernel = errors.New("ksd: invalid kernel parameters")
	// ErrShape is wrapped by errors about inconsistent input shapes.
	ErrShape = errors.New("ksd: inconsistent input shapes")
	// ErrTooFew is wrapped by errors about too few samples for the estimator.
	ErrTooFew = errors.New("ksd: too few samples")
	// ErrNonFinite is wrapped by every *NonFiniteError.
	ErrNonFinite = errors.New("ksd: non-finite input")
	// ErrOverflow is returned when the inputs are finite but the Stein
	// kernel sums overflow float64 (scores or samples of magnitude about
	// 1e154 and more): the discrepancy cannot be represented, and NaN or
	// +Inf is never returned in its place.
	ErrOverflow = errors.New("ksd: overflow in the Stein kernel")
)

// checkOverflow returns nil when every value of vals is finite, and else
// an error wrapping ErrOverflow naming the input entry of largest
// magnitude (the likely culprit).
func checkOverflow(vals, x, score []float64, dim int) error {
	for d, v := range vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			continue
		}
		name, idx, big := "score", 0, -1.0
		for _, in := range [...]struct {
			name string
			v    []float64
		}{{"x", x}, {"score", score}} {
			for i, w := range in.v {
				if math.Abs(w) > big {
					name, idx, big = in.name, i, math.Abs(w)
				}
			}
		}
		return fmt.Errorf("%w: coordinate %d is %v (largest input |%s[%d, %d]| = %g); rescale the parameters or scores", ErrOverflow, d, v, name, idx/dim, idx%dim, big)
	}
	return nil
}

// NonFiniteError names the first NaN or ±Inf entry found in an input.
type NonFiniteError struct {
	Input string  // "x" or "score"
	Row   int     // sample index k (0-based)
	Col   int     // coordinate d (0-based)
	Value float64 // the offending value
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("ksd: non-finite %s[%d, %d] = %v", e.Input, e.Row, e.Col, e.Value)
}

// Unwrap makes errors.Is(err, ErrNonFinite) true.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }

// IMQ is the inverse multiquadric base kernel
//
//	k(x, y) = (C² + ‖x − y‖²)^Beta,  C > 0, −1 < Beta < 0.
//
// Beta is signed: the paper's kernel (1 + ‖x − y‖²)^(−1/2) is IMQ{C: 1, Beta: −0.5}.
// SteinDiscrepancy.jl and the paper's reference code take a positive exponent
// (they pass 0.5 and negate it internally); do not copy their value unchanged.
// Gorham and Mackey (2017) show that with −1 < Beta < 0 the KSD detects
// non-convergence for distantly dissipative targets.
//
// The zero value IMQ{} is not a valid kernel in itself, but Settings treats it
// as DefaultIMQ so that a zero Settings means the paper's choice.
type IMQ struct {
	C    float64 // scale, must be > 0 and finite
	Beta float64 // exponent, must satisfy −1 < Beta < 0
}

// DefaultIMQ returns the paper's kernel, IMQ{C: 1, Beta: −0.5}.
func DefaultIMQ() IMQ { return IMQ{C: 1, Beta: -0.5} }

// NewIMQ returns IMQ{C: c, Beta: beta} after validating it.
func NewIMQ(c, beta float64) (IMQ, error) {
	k := IMQ{C: c, Beta: beta}
	return k, k.Validate()
}

// Validate reports whether k is a valid IMQ kernel. The error wraps ErrKernel.
func (k IMQ) Validate() error {
	if !(k.C > 0) || math.IsInf(k.C, 1) {
		return fmt.Errorf("%w: C = %v, must be finite and > 0", ErrKernel, k.C)
	}
	if !(k.Beta > -1 && k.Beta < 0) {
		if k.Beta > 0 && k.Beta < 1 {
			return fmt.Errorf("%w: Beta = %v, must satisfy -1 < Beta < 0 (Beta is signed: use %v)", ErrKernel, k.Beta, -k.Beta)
		}
		return fmt.Errorf("%w: Beta = %v, must satisfy -1 < Beta < 0", ErrKernel, k.Beta)
	}
	return nil
}

// Eval returns k(x, y). It panics if len(x) != len(y).
func (k IMQ) Eval(x, y []float64) float64 {
	if len(x) != len(y) {
		panic("ksd: slice lengths differ")
	}
	r2 := 0.0
	for i, xi := range x {
		t := xi - y[i]
		r2 += t * t
	}
	return math.Pow(k.C*k.C+r2, k.Beta)
}

// stein holds the constants of the Langevin Stein kernel of an IMQ base kernel.
// With u = C² + ‖x − y‖², δ = x_d − y_d, a = u^β, b = u^(β−1), c = u^(β−2):
//
//	k0^d(x, y) = a s_d(x) s_d(y) − 2β b (δ (s_d(x) − s_d(y)) + 1) − 4β(β−1) c δ².
type stein struct {
	c2   float64 // C²
	beta float64
	half bool    // Beta == −0.5: a = 1/√u avoids exp and log
	m2b  float64 // −2β
	m4bb float64 // −4β(β−1)
}

func newStein(k IMQ) stein {
	return stein{
		c2:   k.C * k.C,
		beta: k.Beta,
		half: k.Beta == -0.5,
		m2b:  -2 * k.Beta,
		m4bb: -4 * k.Beta * (k.Beta - 1),
	}
}

// powers returns u^β, u^(β−1), u^(β−2).
func (st *stein) powers(u float64) (a, b, c float64) {
	if st.half {
		a = 1 / math.Sqrt(u)
	} else {
		a = math.Exp(st.beta * math.Log(u))
	}
	b = a / u
	c = b / u
	return a, b, c
}

// addRow adds Σ_j k0^d(xi, x_j) to acc[d], where x_j and s_j run over the rows
// of the row-major blocks xs and ss (len(acc) columns); diff is scratch of
// length len(acc). This is the O(K² d) hot loop: it allocates nothing and
// spends one division and one square root (or one exp and one log when
// Beta != −0.5) per pair. Keeping x_i − x_j in diff, rather than recomputing
// it, halved the time per pair at d = 4.
func (st *stein) addRow(acc, diff, xi, si, xs, ss []float64) {
	n := len(acc)
	xi, si, diff = xi[:n], si[:n], diff[:n]
	ss = ss[:len(xs)]
	c2, beta, half, m2b, m4bb := st.c2, st.beta, st.half, st.m2b, st.m4bb
	for off := 0; off+n <= len(xs); off += n {
		xj := xs[off : off+n : off+n]
		sj := ss[off : off+n : off+n]
		r2 := 0.0
		for k := range n {
			t := xi[k] - xj[k]
			diff[k] = t
			r2 += t * t
		}
		inv := 1 / (c2 + r2)
		var a float64
		if half {
			a = math.Sqrt(inv)
		} else {
			a = math.Exp(-beta * math.Log(inv))
		}
		b := m2b * a * inv
		c := m4bb * a * inv * inv
		for k := range n {
			dl := diff[k]
			sx, sy := si[k], sj[k]
			acc[k] += a*sx*sy + b*(dl*(sx-sy)+1) + c*dl*dl
		}
	}
}

// addDiag adds k0^d(x, x) = C^(2β) s_d² − 2β C^(2β−2) to acc[d].
func (st *stein) addDiag(acc, s []float64) {
	a, b, _ := st.powers(st.c2)
	b *= st.m2b
	for k := range acc {
		acc[k] += a*s[k]*s[k] + b
	}
}
