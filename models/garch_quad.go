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
// too, and its derivative is taken by central differences.

// ghRule is a Gauss–Hermite rule for N(0, 1).
type ghRule struct{ z, w []float64 }

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
}

var garchQuadPool = sync.Pool{New: func() any { return new(garchQuadWork) }}

func (q *garchQuadWork) init(K, J int) {
	grow := func(b []float64, n int) []float64 {
		if cap(b) < n {
			return make([]float64, n)
		}
		return b[:n]
	}
	q.K, q.J, q.rj = K, J, gaussHermite(J)
	n := K * J
	q.a, q.la, q.w, q.p0, q.p1 = grow(q.a, n), grow(q.la, n), grow(q.w, n), grow(q.p0, n), grow(q.p1, n)
	q.d, q.e, q.z, q.node, q.weight = grow(q.d, K), grow(q.e, K), grow(q.z, K), grow(q.node, K), grow(q.weight, K)
}

// garchSeeded gives the kernel of a factor with seed s: the parameters at
// u + s·δ·e_dir (u itself when s or δ is 0).
type garchSeeded struct {
	u     []float64
	dir   int
	delta float64
	base  garchKernel
	last  float64 // the seed of cur
	cur   garchKernel
	pert  [garchParams]float64
}

// at returns the kernel of seed s, a copy: the factors of two rows are in
// use at once.
func (g *garchSeeded) at(s float64) (garchKernel, error) {
	if s == 0 || g.delta == 0 {
		return g.base, nil
	}
	if s != g.last {
		copy(g.pert[:], g.u)
		g.pert[g.dir] += s * g.delta
		if err := g.cur.Rebind(g.pert[:]); err != nil {
			return garchKernel{}, err
		}
		if err := garchExactValid(&g.cur); err != nil {
			return garchKernel{}, err
		}
		g.last = s
	}
	return g.cur, nil
}

// filter returns log p(y_window) with the factors of the kept rows at
// u + w_t·δ·e_dir (dir < 0: all at u); see ExactScore for which factor a
// parameter belongs to.
func (q *garchQuadWork) filter(g *garchSeeded, seq ssm.Sequence, w ssm.Window, acc bool) (float64, error) {
	seed := func(t int) float64 {
		if !acc || t < w.KeepStart || t >= w.KeepEnd {
			return 0
		}
		return w.Weight(t)
	}
	s0 := 0.0
	if acc && w.KeepsInitial() {
		s0 = w.Weight(0)
	}
	k0, err := g.at(s0)
	if err != nil {
		return 0, err
	}
	mu0 := k0.mu
	k, err := g.at(seed(w.Start))
	if err != nil {
		return 0, err
	}
	// The state paired with y[Start]: σ² = α + γμ + βx², x ~ N(0, μ).
	rj, n := q.rj, 0
	sm := math.Sqrt(mu0)
	c := k.alpha + k.gamma*k.mu
	for j, z := range rj.z {
		x := sm * z
		q.a[n], q.w[n] = c+k.beta*x*x, rj.w[j]
		n++
	}
	ll := 0.0
	for t := w.Start; ; t++ {
		// k is the kernel of factor t.
		yt := seq.Y[t]
		miss := math.IsNaN(yt)
		if !miss {
			l, err := q.emit(n, yt, k.tau2)
			if err != nil {
				return 0, fmt.Errorf("models: GARCH quadrature filter: observation row %d (y = %v): %w", t, yt, err)
			}
			ll += l
		}
		if t == w.End-1 {
			break
		}
		q.compress(n)
		kn, err := g.at(seed(t + 1))
		if err != nil {
			return 0, err
		}
		n = q.move(&k, &kn, yt, miss)
		k = kn
	}
	return ll, nil
}

// emit weighs the n atoms by N(y; 0, a + τ²), normalises them and returns
// the log of their weighted sum.
func (q *garchQuadWork) emit(n int, y, t2 float64) (float64, error) {
	a, w, lw := q.a[:n], q.w[:n], q.p0[:n]
	y2, mx := y*y, math.Inf(-1)
	for i := range a {
		v := a[i] + t2
		lw[i] = -0.5*y2/v - 0.5*math.Log(v)
		mx = math.Max(mx, lw[i])
	}
	sum := 0.0
	for i := range a {
		w[i] *= math.Exp(lw[i] - mx)
		sum += w[i]
	}
	if !(sum > 0) || math.IsInf(sum, 1) {
		return 0, fmt.Errorf("the filter lost all mass")
	}
	inv := 1 / sum
	for i := range w {
		w[i] *= inv
	}
	return math.Log(sum) + mx - garchHalfLog2Pi, nil
}

// move maps the filtered rule through the transition out of a row with
// value y (factor kernel k for τ in x | y, kn for the map into the next
// σ²) and returns the number of atoms.
func (q *garchQuadWork) move(k, kn *garchKernel, y float64, miss bool) int {
	rj, n := q.rj, 0
	t2 := k.tau2
	for i := range q.K {
		s, pw := q.node[i], q.weight[i]
		mz, sz := 0.0, math.Sqrt(s)
		if !miss {
			f := s / (s + t2)
			mz, sz = f*y, math.Sqrt(f*t2)
		}
		c := kn.alpha + kn.gamma*s
		for j, z := range rj.z {
			x := mz + sz*z
			q.a[n], q.w[n] = c+kn.beta*x*x, pw*rj.w[j]
			n++
		}
	}
	return n
}

// compress sets the filtered rule (node: σ² values, weight) to the K-point
// Gauss rule of the n weighted atoms' law in log σ² (total weight 1).
func (q *garchQuadWork) compress(n int) {
	a, la, w := q.a[:n], q.la[:n], q.w[:n]
	mean := 0.0
	for i := range a {
		la[i] = math.Log(a[i])
		mean += w[i] * la[i]
	}
	v := 0.0
	for i := range la {
		d := la[i] - mean
		v += w[i] * d * d
	}
	K := q.K
	if !(v > 1e-24) {
		for i := range K {
			q.node[i], q.weight[i] = math.Exp(mean), 1/float64(K)
		}
		return
	}
	sd := math.Sqrt(v)
	inv := 1 / sd
	// Stieltjes on the standardised atoms x = (log a − mean)/sd with
	// orthonormal polynomials p1 (current) and p0 (previous).
	p0, p1 := q.p0[:n], q.p1[:n]
	for i := range la {
		la[i] = (la[i] - mean) * inv
		p0[i], p1[i] = 0, 1
	}
	b := 0.0
	for r := range K {
		al := 0.0
		for i, x := range la {
			al += w[i] * x * p1[i] * p1[i]
		}
		q.d[r] = al
		if r == K-1 {
			break
		}
		nn := 0.0
		for i, x := range la {
			p := (x-al)*p1[i] - b*p0[i]
			p0[i] = p
			nn += w[i] * p * p
		}
		b = math.Sqrt(nn)
		q.e[r] = b
		ib := 1 / b
		for i := range la {
			p0[i], p1[i] = p1[i], p0[i]*ib
		}
	}
	q.e[K-1] = 0
	jacobiRule(q.d[:K], q.e[:K], q.z[:K])
	for i := range K {
		q.node[i] = math.Exp(mean + sd*q.d[i])
		q.weight[i] = q.z[i] * q.z[i]
	}
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

// garchQuadDelta is the step, in u, of the central differences of the
// quadrature filter's score, divided by the largest seed: the
// log-likelihood of the S&P 500 returns (−2·10⁴) is smooth to rounding
// (about 10⁻⁹), so the differences' error is about 10⁻⁴ from rounding and
// δ²ℓ”'/6 from truncation.
const garchQuadDelta = 1e-5

// garchQuadScore is ExactScore on the quadrature filter with K points in
// log σ² and J in Z: the log-likelihood, and the seeded score (see
// ExactScore) by central differences of the seeded log-likelihood, each
// direction perturbing only the factors of the kept rows.
func garchQuadScore(grad, u []float64, seq ssm.Sequence, w ssm.Window, K, J int) (float64, error) {
	g := garchSeeded{u: u, dir: -1, last: math.NaN()}
	if err := g.base.Rebind(u); err != nil {
		return 0, err
	}
	if err := garchExactValid(&g.base); err != nil {
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
	ll, err := q.filter(&g, seq, w, false)
	if err != nil || grad == nil {
		return ll, err
	}
	top := 0.0
	for t := w.KeepStart; t < w.KeepEnd; t++ {
		top = math.Max(top, math.Abs(w.Weight(t)))
	}
	if top == 0 {
		return ll, nil
	}
	g.delta = garchQuadDelta / top
	for i := range garchParams {
		var l [2]float64
		for k, sign := range [2]float64{1, -1} {
			g.dir, g.delta, g.last = i, sign*math.Abs(g.delta), math.NaN()
			if l[k], err = q.filter(&g, seq, w, true); err != nil {
				return ll, err
			}
		}
		grad[i] += (l[0] - l[1]) / (2 * math.Abs(g.delta))
	}
	return ll, nil
}
