package main

import "math"

// gridTiny is the filter probability below which a grid cell is skipped in
// the transition step. The filter distribution is normalised at each step,
// so skipping cells below it changes log p(y) by at most T·G·gridTiny
// (3·10⁻⁷ nats for T = 17,055 and G = 400).
const gridTiny = 1e-14

// gridLogLik returns log p(y | φ, σ, τ) of the SVM by a forward filter on
// a grid of g points. It is safe for concurrent use.
//
// The log-volatility x_t lives on g points spanning ±8 stationary sds; the
// transition N(φx, σ²) and the initial law N(0, σ²/(1−φ²)) are integrated
// over the grid cells exactly (normal CDF differences) within 8σ of the
// mean, and the forward recursion gives log p(y_{1:T} | θ). The emission
// N(y; 0, τ²eˣ) is evaluated at the cell centres; it is finite at y = 0
// (it is then (2πτ²eˣ)^(−1/2)), and a NaN y is skipped. Cells whose
// filter probability is below gridTiny are not propagated, which makes the
// cost proportional to the width of the filter distribution, not of the
// grid.
func gridLogLik(y []float64, phi, sigma, tau float64, g int) float64 {
	sd := sigma / math.Sqrt(1-phi*phi)
	lo, hi := -8*sd, 8*sd
	dx := (hi - lo) / float64(g-1)
	x := make([]float64, g)
	for i := range x {
		x[i] = lo + dx*float64(i)
	}
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	p := make([]float64, g)
	for i := range p {
		p[i] = cdf((x[i]+dx/2)/sd) - cdf((x[i]-dx/2)/sd)
	}
	// Transition rows: the mass of N(φx_i, σ²) in each cell, within 8σ,
	// stored flat: row i covers cells j0[i] .. j0[i]+n[i]-1 at w[off[i]:].
	band := int(math.Ceil(8*sigma/dx)) + 1
	j0 := make([]int, g)
	j1 := make([]int, g)
	off := make([]int, g+1)
	w := make([]float64, 0, g*(2*band+1))
	for i := range g {
		m := phi * x[i]
		c := int(math.Round((m - lo) / dx))
		a, b := max(0, c-band), min(g-1, c+band)
		j0[i], j1[i] = a, b
		off[i] = len(w)
		for j := a; j <= b; j++ {
			w = append(w, cdf((x[j]+dx/2-m)/sigma)-cdf((x[j]-dx/2-m)/sigma))
		}
	}
	off[g] = len(w)
	// Emission: N(y; 0, τ²e^{x_j}) = c_j exp(−½ y² a_j).
	a := make([]float64, g)
	c := make([]float64, g)
	for j := range g {
		v := tau * tau * math.Exp(x[j])
		a[j] = 1 / v
		c[j] = 1 / math.Sqrt(2*math.Pi*v)
	}
	q := make([]float64, g)
	plo, phiIdx := 0, g-1 // cells of p that may be ≥ gridTiny
	ll := 0.0
	for _, yt := range y {
		qlo, qhi := g, -1
		for i := plo; i <= phiIdx; i++ {
			if p[i] >= gridTiny {
				qlo, qhi = min(qlo, j0[i]), max(qhi, j1[i])
			}
		}
		if qhi >= 0 {
			clear(q[qlo : qhi+1])
		}
		for i := plo; i <= phiIdx; i++ {
			pi := p[i]
			if pi < gridTiny {
				continue
			}
			ww := w[off[i]:off[i+1]]
			qq := q[j0[i]:]
			qq = qq[:len(ww)]
			for k, wk := range ww {
				qq[k] += pi * wk
			}
		}
		if qhi < 0 { // cannot happen: p sums to 1
			return math.Inf(-1)
		}
		if math.IsNaN(yt) {
			s := 0.0
			for j := qlo; j <= qhi; j++ {
				s += q[j]
			}
			for j := qlo; j <= qhi; j++ {
				p[j] = q[j] / s
			}
			plo, phiIdx = qlo, qhi
			continue
		}
		h := -0.5 * yt * yt
		s := 0.0
		for j := qlo; j <= qhi; j++ {
			q[j] *= c[j] * math.Exp(h*a[j])
			s += q[j]
		}
		if !(s > 0) {
			return math.Inf(-1)
		}
		ll += math.Log(s)
		inv := 1 / s
		nlo, nhi := g, -1
		for j := qlo; j <= qhi; j++ {
			v := q[j] * inv
			p[j] = v
			if v >= gridTiny {
				nlo, nhi = min(nlo, j), j
			}
		}
		// p is only read over [plo, phiIdx], all written above.
		plo, phiIdx = nlo, nhi
	}
	return ll
}
