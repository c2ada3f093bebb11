package models

import (
	"fmt"

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

// ExactScore implements ssm.ExactScorer by the Kalman filter and RTS
// smoother over the window. The statistic is computed in the natural
// parameters (φ, σ², τ², P0) and mapped to u = (atanh φ, log σ, log τ); the
// initial term differentiates P0 = σ²/(1−φ²) through both φ and σ:
// ∂P0/∂u_1 = 2φ P0 and ∂P0/∂u_2 = 2 P0.
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
