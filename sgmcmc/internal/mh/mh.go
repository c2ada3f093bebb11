// Package mh holds the exact Metropolis–Hastings kernels of sgmcmc.Fit's
// full-data chains (FullGradient): Langevin proposals with a constant
// preconditioner (MALA), independence proposals from a Student-t mixture,
// and, with a surrogate, surrogate transitions and random-walk steps.
// A Kernel is both a chain's gradient estimator and its update rule
// (sgmcmc.Estimator and sgmcmc.Method); it knows the posterior only
// through an Estimator that returns the exact log posterior.
package mh

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// Estimator returns the log posterior at u and stores its gradient in
// grad (sgmcmc.Estimator).
type Estimator interface {
	Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error)
}

// Kernel is Precond's update made exact by a Metropolis–Hastings test, for
// the full-data score (FullGradient): that estimator returns the exact log
// posterior with the gradient, so the test costs no extra evaluation. In
// the coordinates z = L⁻¹u the proposal is
//
//	z' = z + d(z) + √(2h − h²) ξ,  d(z) = h Lᵀ∇log π(u) (at most MaxDrift long),
//
// Precond's update with W = 0, and z' is accepted with probability
// min(1, π(u') q(u | u') / (π(u) q(u' | u))) (MALA, Roberts and Tweedie
// 1996, with a constant preconditioner). The chain then targets the
// posterior exactly for any h < 2, so h is tuned for the acceptance rate
// instead of being held at Precond's 0.25 (GARCH on DAX: the unadjusted
// chains at 0.25 had autocorrelation times near 40 in μ, which is
// unidentified as φ → 1).
//
// Every other iteration on average the proposal is instead independent
// of the current point: u' = u* + L t, t a standard Student-t vector with
// ν = 5 degrees of freedom (an independence Metropolis–Hastings step with
// the metric's heavy-tailed Laplace approximation, Tierney 1994, mixed
// with the Langevin kernel; each leaves the posterior invariant, so does
// the mixture). Where the posterior is close to its Laplace approximation
// an accepted independent proposal is a fresh draw; the Langevin steps
// alone, moving a fraction of a posterior sd each, took autocorrelation
// times near 40 in GARCH's μ on DAX (μ's posterior is skewed towards its
// upper bound as φ → 1).
//
// With a surrogate (sur, see Surrogate) the independence steps are
// surrogate transitions and the Langevin steps random-walk Metropolis
// steps on π: every step then needs the log posterior alone.
//
// One Kernel per chain is both the chain's Estimator and its Method: Grad
// keeps the last two evaluations, so the Sampler's evaluation of the
// accepted point (just evaluated by Step as a proposal, or the previous
// state) costs nothing.
type Kernel struct {
	est Estimator
	l   []float64     // L, row-major lower triangular
	ind *tmix.Mixture // the independence proposal (nil: none)
	// sur, when set (with ind), turns the independence steps into
	// surrogate transitions (surrogateMove); sw and v are its scratch.
	sur      *surrogate.Surrogate
	sw       *surrogate.Work
	v        []float64
	maxDrift float64
	dim      int
	// pInd is the probability of an independence proposal (DefaultIndependence
	// unless the preparation measured a better one).
	pInd float64
	// walk makes the local steps random-walk Metropolis (SetWalk).
	walk bool

	// Cached points, gradients (cgOK: present; an independence proposal
	// is evaluated without one) and log posteriors.
	cu       [2][]float64
	cg       [2][]float64
	cgOK     [2]bool
	clp      [2]float64
	next     int
	up, gp   []float64
	s, d1, g []float64
	// kind is the coming step's proposal, drawn by SkipGrad before the
	// Sampler evaluates the gradient: 0 undrawn, 1 Langevin, 2 independence.
	kind int

	// accepted and proposed count the Langevin proposals' tests, indAcc
	// and indProp the independence proposals'.
	accepted, proposed, indAcc, indProp int
	// edge counts the proposals refused because a window's grid did not
	// cover the filter's mass there (gradient.GridEdgeError).
	edge int
}

// refused reports whether err is non-nil, counting a proposal refused
// for a grid too narrow at it in edge.
func (m *Kernel) refused(err error) bool {
	if err == nil {
		return false
	}
	var ge *gradient.GridEdgeError
	if errors.As(err, &ge) {
		m.edge++
	}
	return true
}

// DefaultIndependence is the default probability of an independence
// proposal (its Student-t degrees of freedom are tmix.Nu).
const DefaultIndependence = 0.5

// logDensity is an Estimator that can return the log posterior alone
// (gradient.Estimator.LogPosterior).
type logDensity interface {
	LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error)
}

// New returns the chain's kernel with metric L and independence
// proposal ind (nil: Langevin proposals only).
func New(est Estimator, l []float64, ind *tmix.Mixture, dim int) *Kernel {
	m := &Kernel{est: est, l: l, ind: ind, maxDrift: 1, dim: dim, pInd: DefaultIndependence}
	for i := range m.cu {
		m.cu[i], m.cg[i] = make([]float64, dim), make([]float64, dim)
		m.clp[i] = math.NaN()
	}
	m.up, m.gp = make([]float64, dim), make([]float64, dim)
	m.s, m.d1, m.g = make([]float64, dim), make([]float64, dim), make([]float64, dim)
	return m
}

// Grad implements Estimator, from the cache when u was evaluated last or
// before last with its gradient.
func (m *Kernel) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	i := m.cached(u)
	if i >= 0 && m.cgOK[i] {
		copy(grad, m.cg[i])
		return m.clp[i], nil
	}
	lp, err := m.est.Grad(ctx, grad, u, rng)
	if err != nil {
		return lp, err
	}
	if i < 0 { // else the entry of u's log posterior gains its gradient
		i = m.store(u, lp)
	}
	copy(m.cg[i], grad)
	m.cgOK[i] = true
	return lp, nil
}

// logPost returns the log posterior at u without its gradient, from the
// cache or from the estimator (NaN becomes −∞: always rejected).
func (m *Kernel) logPost(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	if i := m.cached(u); i >= 0 {
		return m.clp[i], nil
	}
	var lp float64
	var err error
	if d, ok := m.est.(logDensity); ok {
		lp, err = d.LogPosterior(ctx, u, rng)
	} else {
		lp, err = m.est.Grad(ctx, m.g, u, rng)
	}
	if err != nil {
		return lp, err
	}
	return m.clp[m.store(u, lp)], nil
}

// cached returns the cache entry holding u, or −1. A hit makes the other
// entry the next to be overwritten (least recently used), so that the
// current state survives a run of rejected proposals.
func (m *Kernel) cached(u []float64) int {
	for i := range m.cu {
		if !math.IsNaN(m.clp[i]) && slices.Equal(m.cu[i], u) {
			m.next = 1 - i
			return i
		}
	}
	return -1
}

// store puts u and lp (NaN as −∞) in the older cache entry, without a
// gradient, and returns the entry.
func (m *Kernel) store(u []float64, lp float64) int {
	i := m.next
	m.next = 1 - i
	copy(m.cu[i], u)
	m.cgOK[i] = false
	m.clp[i] = lp
	if math.IsNaN(lp) {
		m.clp[i] = math.Inf(-1) // never a cache hit, always rejected
	}
	return i
}

// choose draws the kind of the coming proposal: 2 (independence) with
// probability pInd when there is an independence proposal, else 1.
func (m *Kernel) choose(rng *rand.Rand) int {
	if m.ind != nil && rng.Float64() < m.pInd {
		return 2
	}
	if m.sur != nil || m.walk {
		return 3
	}
	return 1
}

// SetWalk makes the local steps random-walk Metropolis steps whose
// whitened proposal sd is that of the Langevin proposal's noise,
// √(2h − h²), without the drift: for an estimator whose gradient is not
// its log posterior's (Laplace importance sampling's Fisher-identity
// score is not the derivative of its likelihood estimate), where a
// Langevin drift pointing elsewhere than the target's gradient fails the
// test: on MSV{D: 2} on DAX and CAC 40 returns 14%, 8% and then 1% of
// Langevin proposals were accepted as the step shrank. With a surrogate
// the local steps are random-walk steps anyway (surrogate.Walk).
func (m *Kernel) SetWalk() { m.walk = true }

// SkipGrad is the Sampler's optional gradient-free step: it draws the coming step's proposal and,
// for an independence proposal, returns the log posterior at u without
// the gradient the Langevin proposal would need.
func (m *Kernel) SkipGrad(ctx context.Context, u []float64, rng *rand.Rand) (float64, bool, error) {
	if m.kind = m.choose(rng); m.kind == 1 {
		return 0, false, nil
	}
	// Independence steps, surrogate transitions and random-walk steps
	// need the log posterior alone.
	lp, err := m.logPost(ctx, u, rng)
	return lp, true, err
}

// Init implements Method.
func (m *Kernel) Init(int) {}

// drift stores d = h Lᵀ grad in d, shortened to maxDrift.
func (m *Kernel) drift(d, grad []float64, h float64) {
	n := m.dim
	for j := range n {
		s := 0.0
		for i := j; i < n; i++ {
			s += m.l[i*n+j] * grad[i]
		}
		d[j] = h * s
	}
	if l := math.Sqrt(linalg.Dot(d, d)); l > m.maxDrift {
		for j := range d {
			d[j] *= m.maxDrift / l
		}
	}
}

// Step implements Method: u holds the current state and grad its
// gradient, which the Sampler has just evaluated (through Grad, so its
// log posterior is cached).
func (m *Kernel) Step(u, grad []float64, h float64, rng *rand.Rand) {
	lp0 := math.NaN()
	if i := m.cached(u); i >= 0 {
		lp0 = m.clp[i]
	}
	kind := m.kind
	m.kind = 0
	if kind == 0 { // not drawn by SkipGrad (a caller outside Sampler)
		kind = m.choose(rng)
	}
	if kind == 3 {
		m.randomWalk(u, lp0, h, rng)
		return
	}
	if kind == 2 {
		if m.sur != nil {
			m.surrogate(u, lp0, rng)
			return
		}
		m.independent(u, lp0, rng)
		return
	}
	v := 2*h - h*h
	sd := math.Sqrt(v)
	m.drift(m.s, grad, h)
	fwd := 0.0 // −2v log q(u' | u) up to a constant: |ξ|² v
	for j := range m.s {
		xi := rng.NormFloat64()
		fwd += xi * xi * v
		m.s[j] += sd * xi
	}
	m.propose(u)
	logU := math.Log(rng.Float64())
	m.proposed++
	if math.IsNaN(lp0) || math.IsInf(lp0, -1) {
		// The current state has no log posterior (not evaluated by Grad):
		// move unadjusted, as Precond would.
		copy(u, m.up)
		return
	}
	lp1, err := m.Grad(context.Background(), m.gp, m.up, rng)
	if m.refused(err) || math.IsNaN(lp1) || math.IsInf(lp1, 0) || fmath.FirstNonFinite(m.gp) >= 0 {
		return // rejected: outside the support or a failed filter
	}
	m.drift(m.d1, m.gp, h)
	rev := 0.0 // the reverse move's residual: −s − d(u')
	for j := range m.s {
		r := -m.s[j] - m.d1[j]
		rev += r * r
	}
	if logU < lp1-lp0-(rev-fwd)/(2*v) {
		copy(u, m.up)
		m.accepted++
	}
}

// independent does the independence step from u (log posterior lp0).
func (m *Kernel) independent(u []float64, lp0 float64, rng *rand.Rand) {
	m.indProp++
	m.ind.Draw(m.up, m.s, rng)
	logU := math.Log(rng.Float64())
	if math.IsNaN(lp0) || math.IsInf(lp0, -1) {
		return
	}
	lp1, err := m.logPost(context.Background(), m.up, rng)
	if m.refused(err) || math.IsNaN(lp1) || math.IsInf(lp1, 0) {
		return
	}
	if logU < lp1-lp0+m.ind.LogDensity(u, m.d1)-m.ind.LogDensity(m.up, m.d1) {
		copy(u, m.up)
		m.indAcc++
	}
}

// surrogate does the surrogate transition from u (log posterior lp0):
// u' from surrogateMove, accepted with min(1, π(u')π̃(u)/(π(u)π̃(u'))).
// Its tests count as the independence proposals'.
func (m *Kernel) surrogate(u []float64, lp0 float64, rng *rand.Rand) {
	m.indProp++
	if m.sw == nil {
		m.sw, m.v = surrogate.NewWork(m.dim), make([]float64, m.dim)
	}
	dl := surrogate.Move(m.sur, m.ind, m.sw, u, m.up, m.v, m.s, m.d1, rng)
	logU := math.Log(rng.Float64())
	if math.IsNaN(lp0) || math.IsInf(lp0, -1) || slices.Equal(m.up, u) {
		return // no log posterior at u, or P^K stayed at u
	}
	lp1, err := m.logPost(context.Background(), m.up, rng)
	if m.refused(err) || math.IsNaN(lp1) || math.IsInf(lp1, 0) {
		return
	}
	if logU < lp1-lp0-dl {
		copy(u, m.up)
		m.indAcc++
	}
}

// propose stores u + L s (s = m.s) in m.up.
func (m *Kernel) propose(u []float64) {
	n := m.dim
	for i := range n {
		a := u[i]
		for j := 0; j <= i; j++ {
			a += m.l[i*n+j] * m.s[j]
		}
		m.up[i] = a
	}
}

// randomWalk does a random-walk Metropolis step from u (log posterior
// lp0): u' = u + L s, s ~ N(0, (surWalk²/p) I) with a surrogate, else
// (SetWalk) s ~ N(0, (2h − h²) I). Its tests count as the Langevin
// proposals'.
func (m *Kernel) randomWalk(u []float64, lp0, h float64, rng *rand.Rand) {
	sd := surrogate.Walk / math.Sqrt(float64(m.dim))
	if m.walk && m.sur == nil {
		sd = math.Sqrt(2*h - h*h)
	}
	for j := range m.s {
		m.s[j] = sd * rng.NormFloat64()
	}
	m.propose(u)
	logU := math.Log(rng.Float64())
	m.proposed++
	if math.IsNaN(lp0) || math.IsInf(lp0, -1) {
		return
	}
	lp1, err := m.logPost(context.Background(), m.up, rng)
	if m.refused(err) || math.IsNaN(lp1) || math.IsInf(lp1, 0) {
		return
	}
	if logU < lp1-lp0 {
		copy(u, m.up)
		m.accepted++
	}
}

// MarshalBinary returns the counts and the cache of the last two
// evaluations: a resumed chain then finds the current point's log
// posterior where the uninterrupted one did, instead of evaluating it
// again with its generator (the estimator draws a window from it), so
// that it repeats the uninterrupted chain's draws exactly.
func (m *Kernel) MarshalBinary() ([]byte, error) {
	b := fmath.AppendFloats(nil, float64(m.accepted), float64(m.proposed), float64(m.indAcc), float64(m.indProp), float64(m.next))
	for i := range m.cu {
		ok := 0.0
		if m.cgOK[i] {
			ok = 1
		}
		b = fmath.AppendFloats(b, m.clp[i], ok)
		b = fmath.AppendFloats(b, m.cu[i]...)
		b = fmath.AppendFloats(b, m.cg[i]...)
	}
	return b, nil
}

// UnmarshalBinary restores the counts and the cache (a checkpoint
// written before the cache was saved holds the counts alone).
func (m *Kernel) UnmarshalBinary(b []byte) error {
	full := 5 + len(m.cu)*(2+2*m.dim)
	if len(b) != 8*4 {
		if len(b) != 8*full {
			return fmt.Errorf("Metropolis–Hastings kernel state has %d bytes, want %d", len(b), 8*full)
		}
	}
	v := make([]float64, len(b)/8)
	fmath.ReadFloats(v, b)
	m.accepted, m.proposed, m.indAcc, m.indProp = int(v[0]), int(v[1]), int(v[2]), int(v[3])
	if len(v) == 4 {
		return nil
	}
	m.next = int(v[4])
	k := 5
	for i := range m.cu {
		m.clp[i], m.cgOK[i] = v[k], v[k+1] == 1
		k += 2
		copy(m.cu[i], v[k:k+m.dim])
		k += m.dim
		copy(m.cg[i], v[k:k+m.dim])
		k += m.dim
	}
	if m.next != 0 && m.next != 1 {
		return fmt.Errorf("Metropolis–Hastings kernel state's next cache entry is %d", m.next)
	}
	return nil
}

// Counts returns the Langevin (or random-walk) proposals accepted and
// made, the independence proposals (or surrogate transitions) accepted
// and made, and the proposals refused because a window's grid did not
// cover the filter's mass there (gradient.GridEdgeError).
func (m *Kernel) Counts() (accepted, proposed, indAccepted, indProposed, gridEdge int) {
	return m.accepted, m.proposed, m.indAcc, m.indProp, m.edge
}

// Retarget gives the kernel a new independence proposal q, surrogate sur
// (nil: none) and independence share pInd, between runs of a chain.
func (m *Kernel) Retarget(q *tmix.Mixture, sur *surrogate.Surrogate, pInd float64) {
	m.ind, m.sur, m.pInd = q, sur, pInd
}
