package sgmcmc

import "math"

// Schedule gives the step size h_k of iteration k = 0, 1, 2, ...
// It must be safe for concurrent use (the chains of Run share it); Run stops a
// chain with an error wrapping ErrStepSize when h_k is not finite and positive.
type Schedule interface {
	At(k int) float64
}

// Constant is a fixed step size h, as in the paper's experiments.
type Constant float64

// At returns h.
func (c Constant) At(int) float64 { return float64(c) }

// Polynomial is the decreasing schedule h_k = A (B + k)^(−C) of Welling and Teh
// (2011). C in (0.5, 1] gives the classical Robbins–Monro conditions. A > 0,
// and B > 0 when C > 0.
type Polynomial struct {
	A, B, C float64
}

// At returns A (B + k)^(−C).
func (p Polynomial) At(k int) float64 { return p.A * math.Pow(p.B+float64(k), -p.C) }

// Cyclical is the cyclical cosine schedule of Zhang et al. (2020):
//
//	h_k = (Initial/2) (cos(π mod(k, L)/L) + 1),  L = ⌈Iterations/Cycles⌉,
//
// restarting at Initial at the start of each of the Cycles cycles (their
// k − 1 is our k, counted from 0). It keeps cycling after Iterations. Their
// exploration stage (noise switched off early in each cycle) is not part of
// the schedule; use SGD for the first part of a cycle if needed.
type Cyclical struct {
	Initial    float64 // h at the start of a cycle, > 0
	Iterations int     // total iterations K, > 0
	Cycles     int     // number of cycles M in K, > 0
}

// At returns the cyclical step size, or NaN for invalid fields.
func (c Cyclical) At(k int) float64 {
	if c.Iterations <= 0 || c.Cycles <= 0 {
		return math.NaN()
	}
	l := (c.Iterations + c.Cycles - 1) / c.Cycles
	return c.Initial / 2 * (math.Cos(math.Pi*float64(k%l)/float64(l)) + 1)
}

// validStep reports whether h is a usable step size.
func validStep(h float64) bool { return h > 0 && !math.IsInf(h, 1) }
