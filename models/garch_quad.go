package models

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/integrate/quad"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// A filter for GARCH on a moving quadrature rule: the filtered law of
// log σ_t² given y up to t is a K-point rule (nodes and weights) that
// moves with the data and with u, so that K = 10 points do what 512 fixed
// σ² nodes do (see GARCH).
//
// One step from the filtered rule at t to the one at t+1:
//  1. every node s_k (weight π_k) maps through σ_{t+1}² = c + βZ²,
//     c = α + γ s_k, Z = x_t | y_t ~ N(f y_t, f τ²), f = s_k/(s_k + τ²)
//     (Z ~ N(0, s_k) when y_t is missing), on a J-point Gauss–Hermite rule
//     in Z: K·J atoms a = c + βZ² with weights π_k ω_j;
//  2. the atoms are weighed by the emission N(y_{t+1}; 0, a + τ²); their
//     weighted sum is p(y_{t+1} | y before), exactly for this atomic law,
//     so an extreme return is weighed on K·J points of the predictive law
//     rather than K;
//  3. the weighted atoms are compressed to the K-point Gauss rule of their
//     law in log σ² (Stieltjes procedure for the recurrence, Golub–Welsch
//     for nodes and weights), which keeps its first 2K moments.
//
// Every map is smooth in u (the rule's nodes are eigenvalues of a Jacobi
// matrix whose entries are smooth in the atoms), so the log-likelihood is
// too; its derivative is carried through the same pass in forward mode
// (garch_quad_tangent.go).

// ghRule is a Gauss–Hermite rule for N(0, 1), with its law of Z² (the
// rule folded at 0: each ±z pair is one point z² of twice the weight).
type ghRule struct{ z, w, z2, w2 []float64 }

var ghRules sync.Map // int → ghRule

// gaussHermite returns the n-point Gauss–Hermite rule for N(0, 1).
func gaussHermite(n int) ghRule {
	if r, ok := ghRules.Load(n); ok {
		return r.(ghRule)
	}
	x, w := make([]float64, n), make([]float64, n)
	quad.Hermite{}.FixedLocations(x, w, math.Inf(-1), math.Inf(1))
	for i := range x {
		x[i] *= math.Sqrt2
		w[i] /= math.SqrtPi
	}
	r := ghRule{z: x, w: w}
	// The nodes are sorted and symmetric about 0.
	for i := range n / 2 {
		z := 0.5 * (x[n-1-i] - x[i])
		r.z2, r.w2 = append(r.z2, z*z), append(r.w2, w[i]+w[n-1-i])
	}
	if n%2 == 1 {
		r.z2, r.w2 = append(r.z2, 0), append(r.w2, w[n/2])
	}
	ghRules.Store(n, r)
	return r
}

// garchQuadWork is the pooled workspace of the quadrature filter.
type garchQuadWork struct {
	K, J         int
	rj           ghRule
	a, la, w     []float64 // atoms: σ², log σ², weight (K·J)
	p0, p1       []float64 // Stieltjes: the last two orthonormal polynomials
	d, e, z      []float64 // Jacobi matrix and the first row of its eigenvectors
	node, weight []float64 // the filtered rule: σ² nodes and weights
	tan          garchQuadTan
}

var garchQuadPool = sync.Pool{New: func() any { return new(garchQuadWork) }}

func (q *garchQuadWork) init(K, J int) {
	grow := growSlice[float64]
	q.K, q.J, q.rj = K, J, gaussHermite(J)
	n := K * J
	q.a, q.la, q.w, q.p0, q.p1 = grow(q.a, n), grow(q.la, n), grow(q.w, n), grow(q.p0, n), grow(q.p1, n)
	q.d, q.e, q.z, q.node, q.weight = grow(q.d, K), grow(q.e, K), grow(q.z, K), grow(q.node, K), grow(q.weight, K)
}

// start sets the atoms of the state paired with y[Start], σ² = α + γμ +
// βx², x ~ N(0, μ), on the rule's law of Z² (x² = μZ²), and returns their
// number: J/2 distinct atoms, fewer than a rule of K ≥ J/2 points, which
// compress then keeps as they are (a Gauss rule of more points than the
// law's support has coinciding nodes, whose weights have no derivative).
func (q *garchQuadWork) start(k *garchKernel) int {
	c := k.alpha + k.gamma*k.mu
	for j, z2 := range q.rj.z2 {
		q.a[j], q.w[j] = c+k.beta*k.mu*z2, q.rj.w2[j]
	}
	return len(q.rj.z2)
}

// filter returns log p(y_window) at u (kernel k) and, with tangents pt
// (nil: none), adds its seeded score to grad.
func (q *garchQuadWork) filter(k *garchKernel, pt *garchTangents, seq ssm.Sequence, w ssm.Window, grad []float64) (float64, error) {
	n := q.start(k)
	if pt != nil {
		q.startTangent(k, pt, w)
	}
	ll := 0.0
	for t := w.Start; ; t++ {
		yt := seq.Y[t]
		miss := math.IsNaN(yt)
		if !miss {
			var dt2 *tan4
			if pt != nil {
				d := scaled(pt.tau2, garchSeed(w, t))
				dt2 = &d
			}
			l, err := q.emit(n, yt, k.tau2, dt2)
			if err != nil {
				return 0, fmt.Errorf("models: GARCH quadrature filter: observation row %d (y = %v): %w", t, yt, err)
			}
			ll += l
		}
		if t == w.End-1 {
			break
		}
		if pt == nil {
			q.compress(n)
			n = q.move(k, yt, miss)
		} else {
			q.compressTangent(n)
			n = q.moveTangent(k, pt, garchSeed(w, t), garchSeed(w, t+1), yt, miss)
		}
	}
	if pt != nil {
		for i, d := range q.tan.dll {
			grad[i] += d
		}
	}
	return ll, nil
}

// emit weighs the n atoms by N(y; 0, a + τ²), normalises them and returns
// the log of their weighted sum; with dt2 (τ²'s tangents; nil: none) it
// carries the weights' tangents and adds the log-likelihood's to dll.
//
// Each density is taken as exp(q − q_max)/√v with q = −y²/2v, q_max the
// largest q: one exponential and one square root per atom, no logarithm.
// The factors 1/√v lie within √(v_max/v_min) of each other, so the atom of
// largest density keeps a factor of order 1 and none overflows.
func (q *garchQuadWork) emit(n int, y, t2 float64, dt2 *tan4) (float64, error) {
	a, w, qv := q.a[:n], q.w[:n], q.p0[:n]
	hy2 := 0.5 * y * y
	mx := math.Inf(-1)
	for i := range a {
		qv[i] = -hy2 / (a[i] + t2)
		mx = max(mx, qv[i])
	}
	t := &q.tan
	var dsum tan4
	sum := 0.0
	for i := range a {
		v := a[i] + t2
		e := math.Exp(qv[i]-mx) / math.Sqrt(v)
		w[i] *= e
		sum += w[i]
		if dt2 != nil {
			g := w[i] * (hy2/(v*v) - 0.5/v) // ∂w/∂v
			for d := range dsum {
				x := t.dw[i][d]*e + g*(t.da[i][d]+dt2[d])
				t.dw[i][d] = x
				dsum[d] += x
			}
		}
	}
	if !(sum > 0) || math.IsInf(sum, 1) {
		return 0, fmt.Errorf("the filter lost all mass")
	}
	inv := 1 / sum
	for i := range w {
		w[i] *= inv
		if dt2 != nil {
			for d := range dsum {
				t.dw[i][d] = (t.dw[i][d] - w[i]*dsum[d]) * inv
			}
		}
	}
	if dt2 != nil {
		for d := range dsum {
			t.dll[d] += dsum[d] * inv
		}
	}
	return math.Log(sum) + mx - garchHalfLog2Pi, nil
}

// move maps the filtered rule through the transition out of a row with
// value y and returns the number of atoms.
func (q *garchQuadWork) move(k *garchKernel, y float64, miss bool) int {
	rj, n := q.rj, 0
	t2 := k.tau2
	for i := range q.K {
		s, pw := q.node[i], q.weight[i]
		mz, sz := 0.0, math.Sqrt(s)
		if !miss {
			f := s / (s + t2)
			mz, sz = f*y, math.Sqrt(f*t2)
		}
		c := k.alpha + k.gamma*s
		for j, z := range rj.z {
			x := mz + sz*z
			q.a[n], q.w[n] = c+k.beta*x*x, pw*rj.w[j]
			n++
		}
	}
	return n
}

// compress sets the filtered rule (node: σ² values, weight) to the K-point
// Gauss rule of the n weighted atoms' law in log σ² (total weight 1).
func (q *garchQuadWork) compress(n int) {
	if q.keep(n) {
		return
	}
	a, la, w := q.a[:n], q.la[:n], q.w[:n]
	mean := 0.0
	for i := range a {
		la[i] = math.Log(a[i])
		mean += w[i] * la[i]
	}
	// Stieltjes on the centred atoms x = log a − mean, one pass over the
	// atoms per polynomial: each pass forms the next polynomial
	// unnormalised, p = (x − α_r) q_r − b_r q_{r−1}, with q_r = cur·s1 and
	// q_{r−1} = prev·s0, and accumulates the sums that give its norm
	// b_{r+1} and α_{r+1}.
	cur, prev := q.p1[:n], q.p0[:n]
	v, al := 0.0, 0.0
	for i := range la {
		x := la[i] - mean
		la[i] = x
		al += w[i] * x
		v += w[i] * x * x
		cur[i], prev[i] = 1, 0
	}
	K := q.K
	if !(v > 1e-24) {
		for i := range K {
			q.node[i], q.weight[i] = math.Exp(mean), 1/float64(K)
		}
		return
	}
	b, s0, s1 := 0.0, 0.0, 1.0
	for r := range K {
		q.d[r] = al
		if r == K-1 {
			break
		}
		c1, c0 := s1, b*s0
		nn, nx := 0.0, 0.0
		for i, x := range la {
			p := (x-al)*c1*cur[i] - c0*prev[i]
			prev[i] = p
			wp := w[i] * p * p
			nn += wp
			nx += wp * x
		}
		cur, prev = prev, cur
		b = math.Sqrt(nn)
		q.e[r] = b
		s0, s1 = s1, 1/b
		al = nx / nn
	}
	q.e[K-1] = 0
	jacobiRule(q.d[:K], q.e[:K], q.z[:K])
	for i := range K {
		q.node[i] = math.Exp(mean + q.d[i])
		q.weight[i] = q.z[i] * q.z[i]
	}
}

// keep sets the rule to the n atoms themselves when n ≤ K, padded by
// points of weight 0, and reports whether it did.
func (q *garchQuadWork) keep(n int) bool {
	if n > q.K {
		return false
	}
	for i := range q.K {
		if i < n {
			q.node[i], q.weight[i] = q.a[i], q.w[i]
		} else {
			q.node[i], q.weight[i] = q.a[0], 0
		}
	}
	return true
}

// jacobiRule overwrites d with the eigenvalues of the symmetric
// tridiagonal matrix with diagonal d and off-diagonal e (e[i] couples i
// and i+1; e is destroyed) and z with the first components of its
// normalised eigenvectors (Golub–Welsch: the Gauss rule's nodes and the
// square roots of its weights), by implicit QL steps with Wilkinson
// shifts that rotate the first row only.
func jacobiRule(d, e, z []float64) {
	n := len(d)
	clear(z)
	z[0] = 1
	for l := 0; l < n; l++ {
		for iter := 0; iter < 60; iter++ {
			m := l
			for ; m < n-1; m++ {
				dd := math.Abs(d[m]) + math.Abs(d[m+1])
				if math.Abs(e[m])+dd == dd {
					break
				}
			}
			if m == l {
				break
			}
			g := (d[l+1] - d[l]) / (2 * e[l])
			r := math.Sqrt(g*g + 1)
			g = d[m] - d[l] + e[l]/(g+math.Copysign(r, g))
			s, c, p := 1.0, 1.0, 0.0
			i := m - 1
			for ; i >= l; i-- {
				f, b := s*e[i], c*e[i]
				r = math.Sqrt(f*f + g*g) // standardised entries: no overflow
				e[i+1] = r
				if r == 0 {
					d[i+1] -= p
					e[m] = 0
					break
				}
				s, c = f/r, g/r
				g = d[i+1] - p
				r = (d[i]-g)*s + 2*c*b
				p = s * r
				d[i+1] = g + p
				g = c*r - b
				f = z[i+1]
				z[i+1] = s*z[i] + c*f
				z[i] = c*z[i] - s*f
			}
			if r == 0 && i >= l {
				continue
			}
			d[l] -= p
			e[l] = g
			e[m] = 0
		}
	}
}

// garchQuadScore is ExactScore on the quadrature filter with K points in
// log σ² and J in Z: the log-likelihood and, when grad is not nil, the
// seeded score (see ExactScore) from the same pass in forward mode.
func garchQuadScore(grad, u []float64, seq ssm.Sequence, w ssm.Window, K, J int) (float64, error) {
	var k garchKernel
	if err := k.Rebind(u); err != nil {
		return 0, err
	}
	if err := garchExactValid(&k); err != nil {
		return 0, err
	}
	if err := seq.Validate(1); err != nil {
		return 0, err
	}
	if err := w.Validate(seq.Len()); err != nil {
		return 0, err
	}
	q := garchQuadPool.Get().(*garchQuadWork)
	defer garchQuadPool.Put(q)
	q.init(K, J)
	if grad == nil {
		return q.filter(&k, nil, seq, w, nil)
	}
	pt, err := newGARCHTangents(u)
	if err != nil {
		return 0, err
	}
	q.tan.init(K, J)
	return q.filter(&k, &pt, seq, w, grad)
}
