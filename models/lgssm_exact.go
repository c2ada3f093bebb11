package models

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Exact (N = ∞) inference for the scalar LGSSM: the generic Kalman filter
// and RTS smoother with D = 1.

var _ ssm.ExactScorer = LGSSM{}

func lgssmCheckU(method string, u []float64) {
	if len(u) != ar1Params {
		panic(fmt.Sprintf("models: LGSSM.%s: len(u) = %d, want %d", method, len(u), ar1Params))
	}
}

// Kalman returns the model at u in the generic Kalman form:
// A = φ, Q = σ², R = τ², x_0 ~ N(0, σ²/(1−φ²)).
func (LGSSM) Kalman(u []float64) (Kalman, error) {
	lgssmCheckU("Kalman", u)
	ar, err := newScalarAR1("LGSSM", u)
	if err != nil {
		return Kalman{}, err
	}
	return Kalman{D: 1, A: []float64{ar.phi}, Q: []float64{ar.s2}, R: []float64{ar.t2}, P0: []float64{ar.s2 / ar.dPhi}}, nil
}

// Smooth runs the Kalman filter and RTS smoother at u over the whole
// sequence, x_0 from the stationary law.
func (m LGSSM) Smooth(u []float64, seq ssm.Sequence) (*Smoothed, error) {
	k, err := m.Kalman(u)
	if err != nil {
		return nil, err
	}
	return k.Smooth(seq, 0, seq.Len())
}

// ExactScore implements ssm.ExactScorer: the log-likelihood by the Kalman
// filter over the window and the statistic Σ_t w_t E[∇ log f_t | y_window]
// (f_t: the transition into x_t and the emission of y_t; the initial law
// with row 0's weight when the window keeps it) by the filter's forward
// sensitivities, in O(1) memory whatever the window's
// length: by Fisher's identity the statistic is the derivative at δ = 0 of
// the window's log-likelihood in which factor t depends on u + w_t δ. The
// RTS smoother's version of the same statistic (Kalman.Score, kept for
// D > 1) stored 4 floats per step, 785 MB of workspaces for a full-data
// score at T = 10⁷.
func (LGSSM) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	lgssmCheckU("ExactScore", u)
	if grad != nil && len(grad) != ar1Params {
		panic(fmt.Sprintf("models: LGSSM.ExactScore: len(grad) = %d, want %d", len(grad), ar1Params))
	}
	ar, err := newScalarAR1("LGSSM", u)
	if err != nil {
		return 0, err
	}
	if err := seq.Validate(1); err != nil {
		return 0, err
	}
	if err := w.Validate(seq.Len()); err != nil {
		return 0, err
	}
	if grad != nil {
		return lgssmTangentScore(grad, ar, seq, w)
	}
	p0 := ar.s2 / ar.dPhi
	var par [4]float64
	par[0], par[1], par[2], par[3] = ar.phi, ar.s2, ar.t2, p0
	k := Kalman{D: 1, A: par[0:1], Q: par[1:2], R: par[2:3], P0: par[3:4]}
	ws := scalarWork.Get().(*kalmanWork)
	defer scalarWork.Put(ws)
	ws.init(1, w.End-w.Start, grad != nil)
	if grad == nil {
		return ws.expectedScore(&k, nil, seq, w)
	}
	var gb [5]float64
	g := KalmanGrad{A: gb[0:1], Q: gb[1:2], R: gb[2:3], M0: gb[3:4], P0: gb[4:5]}
	ll, err := ws.expectedScore(&k, &g, seq, w)
	if err != nil {
		return ll, err
	}
	// dφ/du_1 = 1−φ², dσ²/du_2 = 2σ², dτ²/du_3 = 2τ².
	grad[0] += g.A[0]*ar.dPhi + g.P0[0]*2*ar.phi*p0
	grad[1] += g.Q[0]*2*ar.s2 + g.P0[0]*2*p0
	grad[2] += g.R[0] * 2 * ar.t2
	return ll, nil
}

// lgssmTangentScore adds to grad the weighted complete-data score of the
// window (see ExactScore) by forward-mode differentiation of the scalar
// Kalman filter in the three directions of u = (atanh φ, log σ, log τ),
// each factor's parameters seeded with its weight, and returns the
// window's log-likelihood. With a = φ, q = σ², r = τ²:
//
//	predict: m⁻ = a m, P⁻ = a²P + q;  update: S = P⁻ + r, v = y − m⁻,
//	K = P⁻/S, m = m⁻ + K v, P = P⁻ r/S,  log p += −½(log 2πS + v²/S),
//
// differentiated line by line with ∂a/∂u₁ = 1−φ², ∂q/∂u₂ = 2σ², ∂r/∂u₃ =
// 2τ² (times w_t in row t) and P₀ = σ²/(1−φ²) (∂P₀/∂u₁ = 2φP₀, ∂P₀/∂u₂ =
// 2P₀, times row 0's weight when the window keeps the initial state).
func lgssmTangentScore(grad []float64, ar scalarAR1, seq ssm.Sequence, w ssm.Window) (float64, error) {
	a, q, r := ar.phi, ar.s2, ar.t2
	m, P := 0.0, ar.s2/ar.dPhi
	var dm, dP [ar1Params]float64
	if w.KeepsInitial() {
		w0 := w.Weight(0)
		dP[0], dP[1] = w0*2*ar.phi*P, w0*2*P
	}
	acc := kfLogLik{prod: 1}
	var g [ar1Params]float64
	for t := w.Start; t < w.End; t++ {
		wt := 0.0
		if t >= w.KeepStart && t < w.KeepEnd {
			wt = w.Weight(t)
		}
		da, dq, dr := wt*ar.dPhi, wt*2*q, wt*2*r
		// Predict (direction 0 moves a, direction 1 moves q).
		dm[0] = a*dm[0] + da*m
		dm[1] *= a
		dm[2] *= a
		dP[0] = a*a*dP[0] + 2*a*da*P
		dP[1] = a*a*dP[1] + dq
		dP[2] *= a * a
		m *= a
		P = a*a*P + q
		y := seq.Y[t]
		if y != y { // missing: no emission factor
			continue
		}
		if math.IsInf(y, 0) {
			return 0, fmt.Errorf("%w: observation %d component 0 is %v", ssm.ErrData, t, y)
		}
		s := P + r
		v := y - m
		is := 1 / s
		if acc.add(v*v*is, s); acc.quad > math.MaxFloat64 {
			return 0, kfOverflow(t, 0, y)
		}
		k := P * is
		vis, pris := v*is, P*r*is*is
		// Directions 0 and 1 move P⁻ and m⁻ only; direction 2 also r.
		for j := range 2 {
			ds := dP[j]
			g[j] -= 0.5*ds*is*(1-v*vis) - vis*dm[j]
			dm[j] += (dP[j]-k*ds)*is*v - k*dm[j]
			dP[j] = dP[j]*r*is - pris*ds
		}
		ds := dP[2] + dr
		g[2] -= 0.5*ds*is*(1-v*vis) - vis*dm[2]
		dm[2] += (dP[2]-k*ds)*is*v - k*dm[2]
		dP[2] = (dP[2]*r+P*dr)*is - pris*ds
		m += k * v
		P *= r * is
	}
	if err := kfCheckGrad(&KalmanGrad{A: g[:]}, seq, w); err != nil {
		return 0, err
	}
	for j, v := range g {
		grad[j] += v
	}
	return acc.value(), nil
}
