// Package fmath holds numeric kernels shared by the particle filter and the
// models. ExpTo computes e^x over a slice by the table method: with
// x = (64m + j)·ln2/64 + r, |r| ≤ ln2/128,
//
//	e^x = 2^m · 2^{j/64} · e^r,   e^r ≈ Σ_{n≤5} r^n/n!,
//
// whose truncation error is below 4e-17, so the result is within about
// 5e-16 relative of e^x (measured against 200-bit arithmetic in the
// tests). Arguments outside [−708, 709] and NaN go to math.Exp. The
// particle filter spends a third of its time in exponentials (one per
// particle per step for the weights, one for the SVM emission), and this
// loop is about 1.5–2 times faster than calling math.Exp per element.
// ExpCore, the kernel without the range check, is small enough to be
// inlined, so hot loops elsewhere can fuse the exponential into their own
// arithmetic instead of making a separate pass.
//
// Log and its inlinable kernel LogCore compute log x by the same method:
// x = 2^e·m, m ∈ [1, 2), c_j the centre of m's 1/256-wide cell,
//
//	log x = e·ln2 + log c_j + log1p(m/c_j − 1),
//
// with log1p from a degree-5 polynomial on |r| ≤ 1/513. The error is below
// 1e−15·max(1, |log x|) (measured against 200-bit arithmetic), which is
// what log-weights need; the guided SVM proposal takes one per particle.
package fmath
