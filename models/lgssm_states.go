package models

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Exact state moments of the linear Gaussian models (ssm.StateSmoother) by
// the Kalman filter and RTS smoother of kalman.go.

var (
	_ ssm.StateSmoother = LGSSM{}
	_ ssm.StateSmoother = LGSSMd{}
)

// SmoothStates implements ssm.StateSmoother for the scalar LGSSM: the
// Kalman filter and RTS smoother over the window, x before w.Start from
// N(0, σ²/(1−φ²)).
func (m LGSSM) SmoothStates(u []float64, seq ssm.Sequence, w ssm.Window, out ssm.StateMoments) (float64, error) {
	lgssmCheckU("SmoothStates", u)
	k, err := m.Kalman(u)
	if err != nil {
		return 0, err
	}
	return k.smoothStates(seq, w, out)
}

// SmoothStates implements ssm.StateSmoother for the d-dimensional LGSSM
// (marginal variances are the diagonals of the state covariances).
func (m LGSSMd) SmoothStates(u []float64, seq ssm.Sequence, w ssm.Window, out ssm.StateMoments) (float64, error) {
	m.checkU("SmoothStates", u)
	k, err := m.Kalman(u)
	if err != nil {
		return 0, err
	}
	return k.smoothStates(seq, w, out)
}

// smoothStates fills out (see ssm.StateSmoother) from one filter pass and,
// when smoothed moments are wanted, one RTS pass. In the window's state
// numbering (kalmanWork slots) state t of the sequence is slot t − w.Start.
//
// The predictive density of row t is that of the observed components of
// y_t ~ N(A m_{t−1}, P_{t|t−1} + diag R), with m_{t−1} the filtered mean of
// the previous state and P_{t|t−1} the stored predicted covariance,
// evaluated by the same sequential scalar updates as the filter, so the
// entries sum to the filter's log-likelihood.
func (k Kalman) smoothStates(seq ssm.Sequence, w ssm.Window, out ssm.StateMoments) (float64, error) {
	if err := k.check(seq, w); err != nil {
		return 0, err
	}
	d, d2 := k.D, k.D*k.D
	n := w.KeepEnd - w.KeepStart + 1
	for _, s := range []struct {
		name string
		v    []float64
		want int
	}{{"FilterMean", out.FilterMean, n * d}, {"FilterVar", out.FilterVar, n * d},
		{"SmoothMean", out.SmoothMean, n * d}, {"SmoothVar", out.SmoothVar, n * d},
		{"LogPred", out.LogPred, w.End - w.Start}} {
		if s.v != nil && len(s.v) != s.want {
			panic(fmt.Sprintf("models: SmoothStates: len(%s) = %d, want %d", s.name, len(s.v), s.want))
		}
	}
	steps := w.End - w.Start
	ws := newKalmanWork(d, steps, true)
	ll, err := ws.forward(&k, seq, w.Start, w.End, true)
	if err != nil {
		return 0, err
	}
	copyMoments := func(mean, vr []float64) {
		for i := range n {
			slot := w.KeepStart - w.Start + i
			for c := range d {
				if mean != nil {
					mean[i*d+c] = ws.mean[slot*d+c]
				}
				if vr != nil {
					vr[i*d+c] = ws.cov[slot*d2+c*d+c]
				}
			}
		}
	}
	copyMoments(out.FilterMean, out.FilterVar)
	if out.LogPred != nil {
		const log2Pi = 1.8378770664093453
		mp, P, col := make([]float64, d), make([]float64, d2), make([]float64, d)
		for i := range steps {
			kfMatVec(mp, k.A, ws.mean[i*d:(i+1)*d], d)
			copy(P, ws.pred[i*d2:(i+1)*d2])
			lp := 0.0
			for c, yc := range seq.At(w.Start + i) {
				if math.IsNaN(yc) {
					continue
				}
				s := P[c*d+c] + k.R[c]
				v := yc - mp[c]
				lp -= 0.5 * (log2Pi + math.Log(s) + v*v/s)
				copy(col, P[c*d:(c+1)*d])
				for a := range d {
					mp[a] += col[a] * v / s
					for b := range d {
						P[a*d+b] -= col[a] * col[b] / s
					}
				}
			}
			out.LogPred[i] = lp
		}
	}
	if out.SmoothMean != nil || out.SmoothVar != nil {
		ws.backward(&k)
		copyMoments(out.SmoothMean, out.SmoothVar)
	}
	return ll, nil
}
