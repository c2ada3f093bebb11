package models

import (
	"math"
)

// garchEdge holds, at one knot t (r = √((t−c)/β), r = 0 when t ≤ c) for
// Z ~ N(m, sd²), either the upper moments E_p = E[Z^{2p} 1{|Z| > r}]
// (low false) or the lower ones E[Z^{2p} 1{|Z| < r}] (low true: where
// P(|Z| > r) > ½), p = 0…4, with their partials d[p][l] in
// l = (c, β, m, sd). Each side is computed where it is the smaller, so
// that the differences of consecutive edges (garchInterval) do not
// cancel: on the intervals far below the bulk of a row the upper moments
// would be differences of nearly equal large numbers (E[Z⁸] of a row after
// a large return is ~10⁷).
type garchEdge struct {
	low bool
	v   [5]float64
	d   [5][4]float64
}

// at sets e at knot t. With a₁,₂ = (r ∓ m)/sd, g₁,₂ = φ(a₁,₂) and
// V_n = E[Zⁿ 1{|Z| > r}], integration by parts gives
//
//	V_0 = Φc(a₁) + Φc(a₂),
//	V_n = m V_{n−1} + (n−1)sd² V_{n−2} + sd·r^{n−1}(g₁ + (−1)ⁿ g₂),
//
// and, for even n (N± = g₁,₂/sd, the density of Z at ±r),
//
//	∂V_n/∂r = −rⁿ(N₊ + N₋),  ∂V_n/∂m = n V_{n−1} + rⁿ(N₊ − N₋),
//	∂V_n/∂sd = n(V_n − m V_{n−1})/sd + rⁿ(a₁N₊ + a₂N₋),
//
// with ∂r/∂c = −1/(2βr), ∂r/∂β = −r/(2β). The lower moments W_n obey the
// same recurrences with the boundary terms negated, from
// W_0 = Φ(a₁) − Φc(a₂) (m ≥ 0) or Φ(a₂) − Φc(a₁) (m < 0); at r = 0 they
// are 0. The row's reciprocals ib = 1/β, k = 1/sd and v = sd² come from
// the caller (garchRow): one row evaluates a dozen or more edges.
func (e *garchEdge) at(t, c, m, sd float64, rw *garchRow, tan bool) {
	if !(t > c) {
		*e = garchEdge{low: true}
		return
	}
	ib, k, v := rw.ib, rw.k, rw.v
	r := math.Sqrt((t - c) * ib)
	a1, a2 := (r-m)*k, (r+m)*k
	u1, l1, g1 := garchTail2(a1)
	u2, l2, g2 := garchTail2(a2)
	sg, v0 := 1.0, u1+u2
	e.low = v0 > 0.5
	if e.low {
		sg = -1
		if m >= 0 {
			v0 = l1 - u2
		} else {
			v0 = l2 - u1
		}
	}
	gp, gm := sg*sd*(g1+g2), sg*sd*(g1-g2)
	r2 := r * r
	r4 := r2 * r2
	r6 := r4 * r2
	v1 := m*v0 + gm
	v2 := m*v1 + v*v0 + r*gp
	v3 := m*v2 + 2*v*v1 + r2*gm
	v4 := m*v3 + 3*v*v2 + r2*r*gp
	v5 := m*v4 + 4*v*v3 + r4*gm
	v6 := m*v5 + 5*v*v4 + r4*r*gp
	v7 := m*v6 + 6*v*v5 + r6*gm
	v8 := m*v7 + 7*v*v6 + r6*r*gp
	e.v = [5]float64{v0, v2, v4, v6, v8}
	if !tan {
		return
	}
	np, nm, na := sg*(g1+g2)*k, sg*(g1-g2)*k, sg*(a1*g1+a2*g2)*k
	rn := [5]float64{1, r2, r4, r6, r6 * r2}
	vo := [5]float64{0, v1, v3, v5, v7}
	var drc, drb float64
	if r > 0 {
		drc, drb = -0.5*ib/r, -0.5*r*ib
	}
	for p := range 5 {
		n := float64(2 * p)
		dr := -rn[p] * np
		e.d[p] = [4]float64{dr * drc, dr * drb, n*vo[p] + rn[p]*nm, n*k*(e.v[p]-m*vo[p]) + rn[p]*na}
	}
}

// moments sets e to the full moments E[Z^{2p}] (as upper moments at r = 0).
func (e *garchEdge) moments(m, sd float64, tan bool) {
	v := sd * sd
	var mo [9]float64
	mo[0], mo[1] = 1, m
	for n := 2; n < 9; n++ {
		mo[n] = m*mo[n-1] + float64(n-1)*v*mo[n-2]
	}
	e.low = false
	for p := range 5 {
		n := 2 * p
		e.v[p] = mo[n]
		if tan {
			e.d[p] = [4]float64{}
			if n > 0 {
				e.d[p][2] = float64(n) * mo[n-1]
				e.d[p][3] = float64(n) * (mo[n] - m*mo[n-1]) / sd
			}
		}
	}
}

// garchInterval sets in[p] = E[Z^{2p} 1{r_lo ≤ |Z| < r_hi}] and its
// partials from the edges lo, hi (hi nil: r_hi = ∞) and the full moments.
func garchInterval(in *[5]float64, din *[5][4]float64, lo, hi, mom *garchEdge, tan bool) {
	// in = a − b (− lo when both ends are on different sides).
	var a, b *garchEdge
	three := false
	switch {
	case hi == nil && !lo.low:
		*in = lo.v
		if tan {
			*din = lo.d
		}
		return
	case hi == nil:
		a, b = mom, lo
	case !lo.low:
		a, b = lo, hi
	case hi.low:
		a, b = hi, lo
	default:
		a, b, three = mom, hi, true
	}
	for p := range 5 {
		in[p] = a.v[p] - b.v[p]
	}
	if tan {
		for p := range 5 {
			for l := range 4 {
				din[p][l] = a.d[p][l] - b.d[p][l]
			}
		}
	}
	if three {
		for p := range 5 {
			in[p] -= lo.v[p]
		}
		if tan {
			for p := range 5 {
				for l := range 4 {
					din[p][l] -= lo.d[p][l]
				}
			}
		}
	}
}

// garchRow holds the reciprocals an edge of one transition row needs.
type garchRow struct{ ib, k, v float64 }

// garchSrc is one transition row: weight w, lower end c, scale β and
// Z ~ N(m, sd²), each with its tangent.
type garchSrc struct {
	w, c, b, m, sd     float64
	dw, dc, db, dm, ds [garchParams]float64
}

// addRow adds w·E[N_j(X)] and w·E[X N_j(X)], X = c + βZ², Z ~ N(m, sd²),
// to q_j and q1_j for every node j (and, when tan, their tangents to dq,
// dq1), and returns the range of nodes written. On the knot interval
// [t_i, t_{i+1}] (1 ≤ i ≤ G+1), X = t_i + Δ_i v with v = bZ² + e, and the
// four B-splines are cubics in v (garchExactWork.knots), so both
// expectations are combinations of M_k = E[vᵏ 1{t_i ≤ X < t_{i+1}}],
// k ≤ 4, binomial sums of the differences I_p = E_p(t_i) − E_p(t_{i+1})
// of garchEdge (the lower edge is r = 0 on the interval holding c). Below
// t_1 everything goes to node 0, above t_{G+2} to node G−1. The partials
// in (c, β, m, sd) are those of the I_p plus ∂M_k/∂e = k M_{k−1} and
// ∂M_k/∂b = k E[v^{k−1}Z²]; the row's total tangent is then
// dw·N + w·Σ_l ∂N/∂l · dl. The row ends at the first knot where
// w·P(X > t) < garchRowTail (the rest is dropped and the renormalisation
// restores the mass).
func (ws *garchExactWork) addRow(src *garchSrc, tan bool) (int, int) {
	g, t, bc := ws.g, ws.t, &ws.bc
	c, beta, m, sd := src.c, src.b, src.m, src.sd
	rv, rv1, rl, rl1 := ws.rv, ws.rv1, ws.rl, ws.rl1
	i := ws.interval(c)
	rw := garchRow{ib: 1 / beta, k: 1 / sd, v: sd * sd}
	// Two edges, swapped by pointer as the row moves up the knots.
	var e0, e1 garchEdge
	lo, hi := &e0, &e1
	lo.at(t[i], c, m, sd, &rw, tan)
	var mom garchEdge
	mom.moments(m, sd, tan)
	jlo, jhi := g, -1
	var in [5]float64
	var din [5][4]float64
	// whole puts the mass between edge a and edge b (b nil: none above)
	// into node j: mass I_0, first moment c I_0 + β I_1.
	whole := func(j int, a, b *garchEdge) {
		garchInterval(&in, &din, a, b, &mom, tan)
		rv[j] += in[0]
		rv1[j] += c*in[0] + beta*in[1]
		if tan {
			for l := range 4 {
				rl[4*j+l] += din[0][l]
				rl1[4*j+l] += c*din[0][l] + beta*din[1][l]
			}
			rl1[4*j] += in[0]
			rl1[4*j+1] += in[1]
		}
		jlo, jhi = min(jlo, j), max(jhi, j)
	}
	for ; ; i++ {
		if i >= g+2 {
			whole(g-1, lo, nil)
			break
		}
		hi.at(t[i+1], c, m, sd, &rw, tan)
		if i == 0 {
			whole(0, lo, hi)
		} else {
			garchInterval(&in, &din, lo, hi, &mom, tan)
			ti, dt, idt := t[i], t[i+1]-t[i], ws.idt[i]
			b, e := beta*idt, (c-ti)*idt
			b2, e2 := b*b, e*e
			b3, e3 := b2*b, e2*e
			mk := [5]float64{
				in[0],
				b*in[1] + e*in[0],
				b2*in[2] + 2*b*e*in[1] + e2*in[0],
				b3*in[3] + 3*b2*e*in[2] + 3*b*e2*in[1] + e3*in[0],
				b2*b2*in[4] + 4*b3*e*in[3] + 6*b2*e2*in[2] + 4*b*e3*in[1] + e2*e2*in[0],
			}
			var dm [5][4]float64
			if tan {
				mz := [4]float64{
					in[1],
					b*in[2] + e*in[1],
					b2*in[3] + 2*b*e*in[2] + e2*in[1],
					b3*in[4] + 3*b2*e*in[3] + 3*b*e2*in[2] + e3*in[1],
				}
				for l := range 4 {
					d0, d1, d2, d3, d4 := din[0][l], din[1][l], din[2][l], din[3][l], din[4][l]
					dm[0][l] = d0
					dm[1][l] = b*d1 + e*d0
					dm[2][l] = b2*d2 + 2*b*e*d1 + e2*d0
					dm[3][l] = b3*d3 + 3*b2*e*d2 + 3*b*e2*d1 + e3*d0
					dm[4][l] = b2*b2*d4 + 4*b3*e*d3 + 6*b2*e2*d2 + 4*b*e3*d1 + e2*e2*d0
				}
				for kk := 1; kk < 5; kk++ {
					dm[kk][0] += float64(kk) * mk[kk-1] * idt
					dm[kk][1] += float64(kk) * mz[kk-1] * idt
				}
			}
			// First moments: X vᵏ = t_i vᵏ + Δ v^{k+1}, so node j's first
			// moment is t_i E[B(v)] + Δ E[v B(v)] (both ≥ 0: no cancellation).
			for a := range 4 {
				j := min(g-1, max(0, i-3+a))
				cf := &bc[a]
				s0 := cf[0]*mk[0] + cf[1]*mk[1] + cf[2]*mk[2] + cf[3]*mk[3]
				s1 := cf[0]*mk[1] + cf[1]*mk[2] + cf[2]*mk[3] + cf[3]*mk[4]
				rv[j] += s0
				rv1[j] += ti*s0 + dt*s1
				if tan {
					r := rl[4*j : 4*j+4 : 4*j+4]
					r1 := rl1[4*j : 4*j+4 : 4*j+4]
					for l := range 4 {
						d0 := cf[0]*dm[0][l] + cf[1]*dm[1][l] + cf[2]*dm[2][l] + cf[3]*dm[3][l]
						d1 := cf[0]*dm[1][l] + cf[1]*dm[2][l] + cf[2]*dm[3][l] + cf[3]*dm[4][l]
						r[l] += d0
						r1[l] += ti*d0 + dt*d1
					}
				}
			}
			jlo = min(jlo, max(0, i-3))
			jhi = max(jhi, min(g-1, i))
		}
		lo, hi = hi, lo
		if !lo.low && src.w*lo.v[0] < garchRowTail {
			break
		}
	}
	ws.contract(src, tan, jlo, jhi)
	return jlo, jhi
}

// contract adds the row of src on nodes jlo..jhi, weighted by src.w,
// into q, q1 (and dq, dq1) and clears it.
func (ws *garchExactWork) contract(src *garchSrc, tan bool, jlo, jhi int) {
	w, q, q1, dq, dq1 := src.w, ws.q, ws.q1, ws.dq, ws.dq1
	rv, rv1, rl, rl1 := ws.rv, ws.rv1, ws.rl, ws.rl1
	for j := jlo; j <= jhi; j++ {
		val, val1 := rv[j], rv1[j]
		q[j] += w * val
		q1[j] += w * val1
		rv[j], rv1[j] = 0, 0
		if tan {
			r := rl[4*j : 4*j+4 : 4*j+4]
			r1 := rl1[4*j : 4*j+4 : 4*j+4]
			dqj := dq[4*j : 4*j+4 : 4*j+4]
			dq1j := dq1[4*j : 4*j+4 : 4*j+4]
			for i := range garchParams {
				dc, db, dmm, ds := src.dc[i], src.db[i], src.dm[i], src.ds[i]
				dqj[i] += src.dw[i]*val + w*(r[0]*dc+r[1]*db+r[2]*dmm+r[3]*ds)
				dq1j[i] += src.dw[i]*val1 + w*(r1[0]*dc+r1[1]*db+r1[2]*dmm+r1[3]*ds)
			}
			clear(r)
			clear(r1)
		}
	}
}
