package pf_test

import (
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// ar1 is a self-contained scalar linear Gaussian kernel used to test the
// filter independently of package models:
//
//	x_0 ~ N(0, σ²/(1−φ²)),  x_t = φ x_{t-1} + σ ε_t,  y_t = x_t + τ η_t.
//
// It offers the locally optimal proposal and a transition bound. Its score
// is with respect to (φ, log σ, log τ).
type ar1 struct{ phi, sigma, tau float64 }

var ar1Dims = ssm.Dims{State: 1, Obs: 1, Param: 3}

func (k ar1) v0() float64 { return k.sigma * k.sigma / (1 - k.phi*k.phi) }

func (k ar1) SampleInitial(x []float64, rng *rand.Rand) {
	s := math.Sqrt(k.v0())
	for i := range x {
		x[i] = s * rng.NormFloat64()
	}
}

func (k ar1) SampleTransition(x, prev []float64, rng *rand.Rand) {
	for i := range x {
		x[i] = k.phi*prev[i] + k.sigma*rng.NormFloat64()
	}
}

func (k ar1) SampleEmission(y, x []float64, rng *rand.Rand) {
	y[0] = x[0] + k.tau*rng.NormFloat64()
}

func logNorm(x, m, v float64) float64 {
	d := x - m
	return -0.5*math.Log(2*math.Pi*v) - d*d/(2*v)
}

func (k ar1) LogInitial(x []float64) float64 { return logNorm(x[0], 0, k.v0()) }

func (k ar1) LogTransitions(dst, x, prev []float64) {
	for j, p := range prev {
		dst[j] = logNorm(x[0], k.phi*p, k.sigma*k.sigma)
	}
}

func (k ar1) AddLogEmission(logw, y, x []float64) {
	if math.IsNaN(y[0]) {
		return
	}
	for i, v := range x {
		logw[i] += logNorm(y[0], v, k.tau*k.tau)
	}
}

func (k ar1) AddScore(h []float64, w float64, y, x, prev []float64) {
	s2, t2 := k.sigma*k.sigma, k.tau*k.tau
	if prev == nil {
		v0 := k.v0()
		for i, v := range x {
			g := h[3*i : 3*i+3]
			g[0] += w * (-k.phi/(1-k.phi*k.phi) + v*v*k.phi/s2)
			g[1] += w * (-1 + v*v/v0)
		}
		return
	}
	miss := math.IsNaN(y[0])
	for i, v := range x {
		g := h[3*i : 3*i+3]
		e := v - k.phi*prev[i]
		g[0] += w * e * prev[i] / s2
		g[1] += w * (-1 + e*e/s2)
		if !miss {
			r := y[0] - v
			g[2] += w * (-1 + r*r/t2)
		}
	}
}

// Propose is the locally optimal proposal N(m, v), v = (1/σ² + 1/τ²)^-1,
// m = v(φ prev/σ² + y/τ²), with weight log N(y; φ prev, σ²+τ²).
func (k ar1) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	if math.IsNaN(y[0]) {
		k.SampleTransition(x, prev, rng)
		return
	}
	s2, t2 := k.sigma*k.sigma, k.tau*k.tau
	v := 1 / (1/s2 + 1/t2)
	sd := math.Sqrt(v)
	for i, p := range prev {
		m := v * (k.phi*p/s2 + y[0]/t2)
		x[i] = m + sd*rng.NormFloat64()
		logw[i] += logNorm(y[0], k.phi*p, s2+t2)
	}
}

func (k ar1) LogProposal(x, prev, y []float64) float64 {
	if math.IsNaN(y[0]) {
		return logNorm(x[0], k.phi*prev[0], k.sigma*k.sigma)
	}
	s2, t2 := k.sigma*k.sigma, k.tau*k.tau
	v := 1 / (1/s2 + 1/t2)
	return logNorm(x[0], v*(k.phi*prev[0]/s2+y[0]/t2), v)
}

func (k ar1) MaxLogTransition() float64 { return -0.5 * math.Log(2*math.Pi*k.sigma*k.sigma) }

// kernelOnly hides every optional capability of the wrapped kernel.
type kernelOnly struct{ ssm.Kernel }

// moments is the statistic h_t = (x_t, x_t², x_t x_{t-1}); at the initial
// state it is (x_0, x_0², 0).
type moments struct{}

func (moments) Dim() int { return 3 }
func (moments) Add(h []float64, w float64, y, x, prev []float64) {
	for i, v := range x {
		g := h[3*i : 3*i+3]
		g[0] += w * v
		g[1] += w * v * v
		if prev != nil {
			g[2] += w * v * prev[i]
		}
	}
}

// kalman holds the exact filtering and RTS smoothing moments of ar1 over
// a window: index 0 is the state before w.Start, index k the state of row
// w.Start+k-1.
type kalman struct {
	loglik float64
	ms, ps []float64 // smoothed means and variances
	cross  []float64 // cross[k] = Cov(z_k, z_{k-1} | y), k >= 1
}

// kalmanWindow runs the Kalman filter and RTS smoother for k over rows
// [start, end) of seq, the state before start ~ N(m0, p0).
func kalmanWindow(k ar1, seq ssm.Sequence, start, end int, m0, p0 float64) kalman {
	L := end - start
	mf, pf := make([]float64, L+1), make([]float64, L+1) // filtered
	mp, pp := make([]float64, L+1), make([]float64, L+1) // predicted
	mf[0], pf[0] = m0, p0
	s2, t2 := k.sigma*k.sigma, k.tau*k.tau
	ll := 0.0
	for i := 1; i <= L; i++ {
		mp[i] = k.phi * mf[i-1]
		pp[i] = k.phi*k.phi*pf[i-1] + s2
		y := seq.Y[start+i-1]
		if math.IsNaN(y) {
			mf[i], pf[i] = mp[i], pp[i]
			continue
		}
		ll += logNorm(y, mp[i], pp[i]+t2)
		g := pp[i] / (pp[i] + t2)
		mf[i] = mp[i] + g*(y-mp[i])
		pf[i] = (1 - g) * pp[i]
	}
	r := kalman{loglik: ll, ms: make([]float64, L+1), ps: make([]float64, L+1), cross: make([]float64, L+1)}
	r.ms[L], r.ps[L] = mf[L], pf[L]
	for i := L; i >= 1; i-- {
		j := pf[i-1] * k.phi / pp[i]
		r.ms[i-1] = mf[i-1] + j*(r.ms[i]-mp[i])
		r.ps[i-1] = pf[i-1] + j*j*(r.ps[i]-pp[i])
		r.cross[i] = j * r.ps[i]
	}
	return r
}

// exactMoments returns the exact value of the moments statistic for
// window w (initial term included when w.KeepsInitial()).
func (r kalman) exactMoments(w ssm.Window) []float64 {
	out := make([]float64, 3)
	if w.KeepsInitial() {
		out[0] += w.Weight(0) * r.ms[0]
		out[1] += w.Weight(0) * (r.ps[0] + r.ms[0]*r.ms[0])
	}
	for t := w.KeepStart; t < w.KeepEnd; t++ {
		i := t - w.Start + 1
		wt := w.Weight(t)
		out[0] += wt * r.ms[i]
		out[1] += wt * (r.ps[i] + r.ms[i]*r.ms[i])
		out[2] += wt * (r.cross[i] + r.ms[i]*r.ms[i-1])
	}
	return out
}

// exactScore returns the exact expected ar1 score over the kept rows of w
// (no initial term), from the smoothed moments.
func (r kalman) exactScore(k ar1, seq ssm.Sequence, w ssm.Window) []float64 {
	out := make([]float64, 3)
	s2, t2 := k.sigma*k.sigma, k.tau*k.tau
	for t := w.KeepStart; t < w.KeepEnd; t++ {
		i := t - w.Start + 1
		wt := w.Weight(t)
		exx := r.ps[i] + r.ms[i]*r.ms[i]          // E x_t²
		epp := r.ps[i-1] + r.ms[i-1]*r.ms[i-1]    // E x_{t-1}²
		exq := r.cross[i] + r.ms[i]*r.ms[i-1]     // E x_t x_{t-1}
		out[0] += wt * (exq - k.phi*epp) / s2     // E (x−φx')x'/σ²
		ee := exx - 2*k.phi*exq + k.phi*k.phi*epp // E (x−φx')²
		out[1] += wt * (-1 + ee/s2)
		if y := seq.Y[t]; !math.IsNaN(y) {
			out[2] += wt * (-1 + (y*y-2*y*r.ms[i]+exx)/t2)
		}
	}
	return out
}

// meanSE returns the mean and standard error of the mean of xs.
func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	for _, v := range xs {
		mean += v
	}
	mean /= n
	ss := 0.0
	for _, v := range xs {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / (n - 1) / n)
}
