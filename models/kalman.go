package models

import (
	"fmt"
	"math"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Kalman is a time-invariant linear Gaussian state space model with an
// identity emission matrix and diagonal noise covariances,
//
//	x_0 ~ N(M0, P0),  x_k = A x_{k-1} + N(0, diag Q),  y_k = x_k + N(0, diag R),
//
// the form shared by the scalar and the d-dimensional LGSSM. Its methods run
// the Kalman filter and the Rauch–Tung–Striebel smoother over a window of
// a sequence. Because R is diagonal and the emission matrix is the identity,
// each observation is absorbed one component at a time (sequential scalar
// updates), so a missing (NaN) component is simply skipped.
//
// Windows: over observation rows [start, end) of a sequence, state k = 0 is
// the state just before row start (drawn from N(M0, P0)) and state k ≥ 1 is
// the one observed at row start+k−1.
type Kalman struct {
	D  int       // state and observation dimension, > 0
	A  []float64 // D×D transition matrix, row-major
	Q  []float64 // length D: diagonal of the transition noise covariance, each > 0
	R  []float64 // length D: diagonal of the observation noise covariance, each > 0
	M0 []float64 // length D: mean of x_0; nil means zero
	P0 []float64 // D×D covariance of x_0, symmetric positive definite
}

// Smoothed holds the RTS smoother output over a window of n observations:
// the moments of the states x_0..x_n given the window's observations.
type Smoothed struct {
	D      int
	Start  int       // sequence row of the window's first observation (state k = 1)
	LogLik float64   // log p(y_window)
	Mean   []float64 // (n+1)×D: E[x_k | y]
	Cov    []float64 // (n+1)×D×D: Cov(x_k | y)
	Lag    []float64 // n×D×D: block k−1 is Cov(x_k, x_{k−1} | y), k = 1..n
}

// Len returns the number of observations n of the window.
func (s *Smoothed) Len() int { return len(s.Mean)/s.D - 1 }

// MeanAt returns E[x_k | y] for state k in [0, n].
func (s *Smoothed) MeanAt(k int) []float64 { return s.Mean[k*s.D : (k+1)*s.D] }

// CovAt returns Cov(x_k | y) (D×D row-major) for state k in [0, n].
func (s *Smoothed) CovAt(k int) []float64 {
	d2 := s.D * s.D
	return s.Cov[k*d2 : (k+1)*d2]
}

// LagAt returns Cov(x_k, x_{k−1} | y) (D×D row-major, rows index x_k) for
// k in [1, n].
func (s *Smoothed) LagAt(k int) []float64 {
	d2 := s.D * s.D
	return s.Lag[(k-1)*d2 : k*d2]
}

// KalmanGrad is the gradient of an expected complete-data log-likelihood
// with respect to the natural parameters of a Kalman model. The covariance
// entries are derivatives with respect to the diagonal entries Q_ii and R_ii
// (not the standard deviations). P0 holds the symmetric matrix G such that
// the derivative along a symmetric perturbation dP0 is tr(G dP0).
type KalmanGrad struct {
	A  []float64 // D×D: ∂/∂A_ij
	Q  []float64 // D: ∂/∂Q_ii
	R  []float64 // D: ∂/∂R_ii
	M0 []float64 // D: ∂/∂M0_i
	P0 []float64 // D×D symmetric G: ∂ = tr(G dP0)
}

// NewKalmanGrad returns a zeroed KalmanGrad for dimension d.
func NewKalmanGrad(d int) *KalmanGrad {
	buf := make([]float64, 2*d*d+3*d)
	return newKalmanGradFrom(d, buf)
}

func newKalmanGradFrom(d int, buf []float64) *KalmanGrad {
	d2 := d * d
	return &KalmanGrad{
		A:  buf[:d2:d2],
		Q:  buf[d2 : d2+d : d2+d],
		R:  buf[d2+d : d2+2*d : d2+2*d],
		M0: buf[d2+2*d : d2+3*d : d2+3*d],
		P0: buf[d2+3*d : 2*d2+3*d : 2*d2+3*d],
	}
}

// Validate checks the parameter values; a wrong slice length panics.
func (k Kalman) Validate() error {
	d := k.D
	if d <= 0 {
		panic(fmt.Sprintf("models: Kalman dimension %d must be positive", d))
	}
	if len(k.A) != d*d || len(k.Q) != d || len(k.R) != d || len(k.P0) != d*d || (k.M0 != nil && len(k.M0) != d) {
		panic("models: Kalman slice lengths do not match D")
	}
	for _, v := range k.A {
		if !kfFinite(v) {
			return &ssm.ParamError{Name: "A", Value: v, Reason: "must be finite"}
		}
	}
	for _, v := range k.M0 {
		if !kfFinite(v) {
			return &ssm.ParamError{Name: "M0", Value: v, Reason: "must be finite"}
		}
	}
	for i := 0; i < d; i++ {
		if !(k.Q[i] > 0) || math.IsInf(k.Q[i], 1) {
			return &ssm.ParamError{Name: "Q", Value: k.Q[i], Reason: "diagonal entries must be positive and finite"}
		}
		if !(k.R[i] > 0) || math.IsInf(k.R[i], 1) {
			return &ssm.ParamError{Name: "R", Value: k.R[i], Reason: "diagonal entries must be positive and finite"}
		}
	}
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			v := k.P0[i*d+j]
			if !kfFinite(v) || v != k.P0[j*d+i] {
				return &ssm.ParamError{Name: "P0", Value: v, Reason: "must be finite and symmetric"}
			}
		}
	}
	l := make([]float64, d*d)
	if !kfChol(l, k.P0, d) {
		return &ssm.ParamError{Name: "P0", Value: k.P0[0], Reason: "must be positive definite"}
	}
	return nil
}

// LogLik returns log p(y[start:end]) by the Kalman filter, in O(D²) memory.
func (k Kalman) LogLik(seq ssm.Sequence, start, end int) (float64, error) {
	if err := k.check(seq, ssm.Window{Start: start, End: end, KeepStart: start, KeepEnd: start}); err != nil {
		return 0, err
	}
	ws := newKalmanWork(k.D, end-start, false)
	return ws.forward(&k, seq, start, end, false)
}

// Smooth runs the filter and the RTS smoother over observation rows
// [start, end) and returns the smoothed moments of x_0..x_n.
func (k Kalman) Smooth(seq ssm.Sequence, start, end int) (*Smoothed, error) {
	if err := k.check(seq, ssm.Window{Start: start, End: end, KeepStart: start, KeepEnd: start}); err != nil {
		return nil, err
	}
	n := end - start
	ws := newKalmanWork(k.D, n, true)
	ll, err := ws.forward(&k, seq, start, end, true)
	if err != nil {
		return nil, err
	}
	ws.backward(&k)
	d2 := k.D * k.D
	return &Smoothed{
		D: k.D, Start: start, LogLik: ll,
		Mean: ws.mean[: (n+1)*k.D : (n+1)*k.D],
		Cov:  ws.cov[: (n+1)*d2 : (n+1)*d2],
		Lag:  ws.lag[: n*d2 : n*d2],
	}, nil
}

// ExpectedScore returns log p(y[w.Start:w.End]) with x_0 ~ N(M0, P0) at the
// window start, and overwrites dst (when non-nil) with the gradient in the
// natural parameters of the smoothed statistic
//
//	Σ_{t ∈ [KeepStart, KeepEnd)} w_t E[∇ log p(x_t|x_{t−1}) + ∇ log p(y_t|x_t) | y_window]
//	  + w_0 E[∇ log N(x_0 | M0, P0) | y_window]   (only when w.KeepsInitial()).
//
// Each term is quadratic in (x_{t−1}, x_t), so its expectation follows
// exactly from the smoothed first and second moments. By Fisher's identity,
// with the whole window kept, unit weights and Start = 0 this is the
// gradient of the log-likelihood.
func (k Kalman) ExpectedScore(dst *KalmanGrad, seq ssm.Sequence, w ssm.Window) (float64, error) {
	if err := k.check(seq, w); err != nil {
		return 0, err
	}
	ws := newKalmanWork(k.D, w.End-w.Start, dst != nil)
	return ws.expectedScore(&k, dst, seq, w)
}

// check validates parameters, sequence and window.
func (k *Kalman) check(seq ssm.Sequence, w ssm.Window) error {
	if err := k.Validate(); err != nil {
		return err
	}
	if err := seq.Validate(k.D); err != nil {
		return err
	}
	return w.Validate(seq.Len())
}

// kalmanWork holds every buffer of one filter/smoother run in one slab.
type kalmanWork struct {
	d                 int
	mean, cov         []float64 // filtered, then smoothed in place: (n+1) slots (1 when not storing)
	pred, lag         []float64 // predicted covariances of x_1..x_n and lag-one covariances
	l, b, jt, tmp     []float64 // D×D scratch
	v1, v2, col       []float64 // D scratch
	s11, s10, s00, ee []float64 // D×D accumulators of the statistic
	wr, er            []float64 // D accumulators of the emission statistic
	buf               []float64 // backing store of all of the above, reused
}

// scalarWork recycles scalar workspaces: the exact gradient is called at
// every sampler iteration and should not allocate.
var scalarWork = sync.Pool{New: func() any { return new(kalmanWork) }}

func newKalmanWork(d, n int, store bool) *kalmanWork {
	ws := new(kalmanWork)
	ws.init(d, n, store)
	return ws
}

// init sizes the workspace for a window of n observations with one
// allocation.
func (ws *kalmanWork) init(d, n int, store bool) {
	d2 := d * d
	slots := 1
	if store {
		slots = n + 1
	}
	size := slots*(d+d2) + 8*d2 + 5*d
	if store {
		size += 2 * n * d2
	}
	if cap(ws.buf) < size {
		ws.buf = make([]float64, size)
	}
	buf := ws.buf[:size]
	clear(buf)
	take := func(m int) []float64 {
		s := buf[:m:m]
		buf = buf[m:]
		return s
	}
	ws.d = d
	ws.mean, ws.cov = take(slots*d), take(slots*d2)
	if store {
		ws.pred, ws.lag = take(n*d2), take(n*d2)
	}
	ws.l, ws.b, ws.jt, ws.tmp = take(d2), take(d2), take(d2), take(d2)
	ws.s11, ws.s10, ws.s00, ws.ee = take(d2), take(d2), take(d2), take(d2)
	ws.v1, ws.v2, ws.col, ws.wr, ws.er = take(d), take(d), take(d), take(d), take(d)
}

// forward runs the filter over rows [start, end). With store it keeps the
// filtered moments of every state and the predicted covariances for the
// smoother; otherwise it keeps only the current state in slot 0.
func (ws *kalmanWork) forward(k *Kalman, seq ssm.Sequence, start, end int, store bool) (float64, error) {
	if ws.d == 1 && seq.Obs == 1 {
		return ws.forward1(k, seq, start, end, store)
	}
	d, d2 := ws.d, ws.d*ws.d
	A, Q, R := k.A, k.Q, k.R
	m, P := ws.mean[:d], ws.cov[:d2]
	if k.M0 != nil {
		copy(m, k.M0)
	} else {
		clear(m)
	}
	copy(P, k.P0)
	const log2Pi = 1.8378770664093453 // log(2π)
	ll := 0.0
	mp, col := ws.v1, ws.col
	for kk := 1; kk <= end-start; kk++ {
		// Predict: mp = A m, P ← A P Aᵀ + Q (tmp = A P first).
		kfMatVec(mp, A, m, d)
		kfMul(ws.tmp, A, P, d)
		if store {
			m, P = ws.mean[kk*d:(kk+1)*d], ws.cov[kk*d2:(kk+1)*d2]
		}
		kfMulT(P, ws.tmp, A, d)
		for i := 0; i < d; i++ {
			P[i*d+i] += Q[i]
			for j := 0; j < i; j++ { // keep P exactly symmetric
				s := 0.5 * (P[i*d+j] + P[j*d+i])
				P[i*d+j], P[j*d+i] = s, s
			}
		}
		copy(m, mp)
		if store {
			copy(ws.pred[(kk-1)*d2:kk*d2], P)
		}
		// Update one observed component at a time.
		y := seq.At(start + kk - 1)
		for i, yi := range y {
			if math.IsNaN(yi) {
				continue
			}
			if math.IsInf(yi, 0) {
				return 0, fmt.Errorf("%w: observation %d component %d is %v", ssm.ErrData, start+kk-1, i, yi)
			}
			s := P[i*d+i] + R[i]
			v := yi - m[i]
			ll -= 0.5 * (log2Pi + math.Log(s) + v*v/s)
			if ll < -math.MaxFloat64 {
				return 0, kfOverflow(start+kk-1, i, yi)
			}
			copy(col, P[i*d:(i+1)*d]) // row i = column i by symmetry
			vs, is := v/s, 1/s
			for a := 0; a < d; a++ {
				m[a] += col[a] * vs
				ca := col[a]
				for b := 0; b < d; b++ {
					P[a*d+b] -= ca * col[b] * is // exactly symmetric
				}
			}
		}
	}
	return ll, nil
}

// backward turns the stored filtered moments into smoothed ones in place
// and fills the lag-one covariances (RTS with J_k = Pf_k Aᵀ Pp_{k+1}⁻¹).
func (ws *kalmanWork) backward(k *Kalman) {
	if ws.d == 1 {
		ws.backward1(k)
		return
	}
	d, d2 := ws.d, ws.d*ws.d
	n := len(ws.pred) / d2
	A := k.A
	jt, dm := ws.jt, ws.v1
	for kk := n - 1; kk >= 0; kk-- {
		mf, pf := ws.mean[kk*d:(kk+1)*d], ws.cov[kk*d2:(kk+1)*d2]
		ms1, ps1 := ws.mean[(kk+1)*d:(kk+2)*d], ws.cov[(kk+1)*d2:(kk+2)*d2]
		pp := ws.pred[kk*d2 : (kk+1)*d2]
		// jt = Jᵀ = Pp⁻¹ A Pf.
		kfMul(ws.b, A, pf, d)
		if d == 1 {
			jt[0] = ws.b[0] / pp[0]
		} else {
			if !kfChol(ws.l, pp, d) {
				panic("models: predicted covariance not positive definite")
			}
			kfCholSolve(jt, ws.l, ws.b, d, ws.v2)
		}
		// dm = ms_{k+1} − A mf; ms_k = mf + J dm.
		kfMatVec(dm, A, mf, d)
		for i := 0; i < d; i++ {
			dm[i] = ms1[i] - dm[i]
		}
		for i := 0; i < d; i++ {
			s := 0.0
			for j := 0; j < d; j++ {
				s += jt[j*d+i] * dm[j]
			}
			mf[i] += s
		}
		// Lag: Cov(x_{k+1}, x_k) = Ps_{k+1} Jᵀ.
		kfMul(ws.lag[kk*d2:(kk+1)*d2], ps1, jt, d)
		// Ps_k = Pf + J (Ps_{k+1} − Pp) Jᵀ.
		for i := 0; i < d2; i++ {
			ws.tmp[i] = ps1[i] - pp[i]
		}
		kfMul(ws.b, ws.tmp, jt, d) // (Ps−Pp) Jᵀ
		for i := 0; i < d; i++ {
			for j := 0; j <= i; j++ {
				s := 0.0
				for a := 0; a < d; a++ {
					s += jt[a*d+i] * ws.b[a*d+j]
				}
				pf[i*d+j] += s
				if j != i {
					pf[j*d+i] = pf[i*d+j]
				}
			}
		}
	}
}

// expectedScore runs filter and smoother and accumulates the statistic
// (see Kalman.ExpectedScore). dst nil: log-likelihood only.
func (ws *kalmanWork) expectedScore(k *Kalman, dst *KalmanGrad, seq ssm.Sequence, w ssm.Window) (_ float64, err error) {
	ll, err := ws.forward(k, seq, w.Start, w.End, dst != nil)
	if err != nil || dst == nil {
		return ll, err
	}
	defer func() {
		if err == nil {
			err = kfCheckGrad(dst, seq, w)
		}
	}()
	ws.backward(k)
	d, d2 := ws.d, ws.d*ws.d
	A, Q, R := k.A, k.Q, k.R
	s11, s10, s00 := ws.s11, ws.s10, ws.s00
	clear(s11)
	clear(s10)
	clear(s00)
	clear(ws.wr)
	clear(ws.er)
	wsum := 0.0
	if d == 1 {
		wsum = ws.accumulate1(seq, w)
	}
	for t := w.KeepStart; t < w.KeepEnd && d > 1; t++ {
		wt := w.Weight(t)
		kk := t - w.Start + 1
		m1, m0 := ws.mean[kk*d:(kk+1)*d], ws.mean[(kk-1)*d:kk*d]
		p1, p0 := ws.cov[kk*d2:(kk+1)*d2], ws.cov[(kk-1)*d2:kk*d2]
		lag := ws.lag[(kk-1)*d2 : kk*d2]
		wsum += wt
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s11[i*d+j] += wt * (p1[i*d+j] + m1[i]*m1[j])
				s10[i*d+j] += wt * (lag[i*d+j] + m1[i]*m0[j])
				s00[i*d+j] += wt * (p0[i*d+j] + m0[i]*m0[j])
			}
		}
		for i, yi := range seq.At(t) {
			if math.IsNaN(yi) {
				continue
			}
			r := yi - m1[i]
			ws.wr[i] += wt
			ws.er[i] += wt * (r*r + p1[i*d+i])
		}
	}
	// ∇_A = Q⁻¹ (S10 − A S00).
	kfMul(ws.tmp, A, s00, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			dst.A[i*d+j] = (s10[i*d+j] - ws.tmp[i*d+j]) / Q[i]
		}
	}
	// Σ E[e eᵀ] = S11 − A S10ᵀ − S10 Aᵀ + A S00 Aᵀ, e = x_t − A x_{t−1}; only its diagonal is needed.
	for i := 0; i < d; i++ {
		e := s11[i*d+i]
		for j := 0; j < d; j++ {
			e -= 2 * A[i*d+j] * s10[i*d+j]
			e += ws.tmp[i*d+j] * A[i*d+j]
		}
		dst.Q[i] = -0.5*wsum/Q[i] + 0.5*e/(Q[i]*Q[i])
		dst.R[i] = -0.5*ws.wr[i]/R[i] + 0.5*ws.er[i]/(R[i]*R[i])
	}
	clear(dst.M0)
	clear(dst.P0)
	if w.KeepsInitial() {
		// ∇ log N(x|m, P): dm = P⁻¹(x−m); dP: G = ½ P⁻¹ (E[(x−m)(x−m)ᵀ] − P) P⁻¹.
		w0 := w.Weight(0)
		mean0, cov0 := ws.mean[:d], ws.cov[:d2]
		dev := ws.v1
		for i := 0; i < d; i++ {
			dev[i] = mean0[i]
			if k.M0 != nil {
				dev[i] -= k.M0[i]
			}
		}
		// l = chol(P0); b = P0⁻¹.
		kfChol(ws.l, k.P0, d)
		for i := 0; i < d2; i++ {
			ws.tmp[i] = 0
		}
		for i := 0; i < d; i++ {
			ws.tmp[i*d+i] = 1
		}
		kfCholSolve(ws.b, ws.l, ws.tmp, d, ws.v2)
		kfMatVec(ws.v2, ws.b, dev, d)
		for i := 0; i < d; i++ {
			dst.M0[i] = w0 * ws.v2[i]
		}
		// tmp = E[(x−m)(x−m)ᵀ] − P0, then G = ½ w0 b tmp b.
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				ws.tmp[i*d+j] = cov0[i*d+j] + dev[i]*dev[j] - k.P0[i*d+j]
			}
		}
		kfMul(ws.jt, ws.b, ws.tmp, d)
		kfMul(dst.P0, ws.jt, ws.b, d)
		for i := 0; i < d; i++ {
			for j := 0; j <= i; j++ {
				g := 0.25 * w0 * (dst.P0[i*d+j] + dst.P0[j*d+i])
				dst.P0[i*d+j], dst.P0[j*d+i] = g, g
			}
		}
	}
	return ll, nil
}

// forward1 is forward for D = 1 (the scalar LGSSM, called at every SGLD
// iteration). Log-determinant terms are accumulated as a product and
// logged when it nears the floating-point range, saving a log per step.
func (ws *kalmanWork) forward1(k *Kalman, seq ssm.Sequence, start, end int, store bool) (float64, error) {
	a, q, r := k.A[0], k.Q[0], k.R[0]
	m, P := 0.0, k.P0[0]
	if k.M0 != nil {
		m = k.M0[0]
	}
	ws.mean[0], ws.cov[0] = m, P
	acc := kfLogLik{prod: 1}
	ys := seq.Y[start:end]
	for i, y := range ys {
		m *= a
		P = a*a*P + q
		if store {
			ws.pred[i] = P
		}
		if y == y { // not NaN
			if math.IsInf(y, 0) {
				return 0, fmt.Errorf("%w: observation %d component 0 is %v", ssm.ErrData, start+i, y)
			}
			s := P + r
			v := y - m
			is := 1 / s
			if acc.add(v*v*is, s); acc.quad > math.MaxFloat64 {
				return 0, kfOverflow(start+i, 0, y)
			}
			g := P * is
			m += g * v
			P *= r * is // P − P²/s without cancellation
		}
		if store {
			ws.mean[i+1], ws.cov[i+1] = m, P
		}
	}
	return acc.value(), nil
}

// kfLogLik accumulates a scalar Kalman log-likelihood
// −½ Σ (log 2π + log S_t + v_t²/S_t); the log-determinants as a product,
// logged only near the floating-point range's ends (a log per step would
// cost a third of the filter's loop). The zero value needs prod = 1.
type kfLogLik struct {
	quad, prod, logs float64
	nobs             int
}

// add adds one observation's v²/S and S (the caller checks quad for
// overflow: add must stay cheap enough to inline).
func (a *kfLogLik) add(v2is, s float64) {
	a.quad += v2is
	a.prod *= s
	if a.prod > 1e250 || a.prod < 1e-250 {
		a.renorm()
	}
	a.nobs++
}

// renorm moves the product into the logs (kept out of add so that add
// inlines into the filters' loops).
func (a *kfLogLik) renorm() {
	a.logs += math.Log(a.prod)
	a.prod = 1
}

func (a *kfLogLik) value() float64 {
	const log2Pi = 1.8378770664093453 // log(2π)
	return -0.5 * (float64(a.nobs)*log2Pi + a.logs + math.Log(a.prod) + a.quad)
}

// accumulate1 is the statistic loop of expectedScore for D = 1; it
// returns Σ w_t.
func (ws *kalmanWork) accumulate1(seq ssm.Sequence, w ssm.Window) float64 {
	var s11, s10, s00, wr, er, wsum float64
	off := 1 - w.Start // state index of row t is t + off
	for t := w.KeepStart; t < w.KeepEnd; t++ {
		wt := 1.0
		if w.Weights != nil {
			wt = w.Weights[t-w.KeepStart]
		}
		kk := t + off
		m1, m0 := ws.mean[kk], ws.mean[kk-1]
		wsum += wt
		s11 += wt * (ws.cov[kk] + m1*m1)
		s10 += wt * (ws.lag[kk-1] + m1*m0)
		s00 += wt * (ws.cov[kk-1] + m0*m0)
		if y := seq.Y[t]; y == y {
			r := y - m1
			wr += wt
			er += wt * (r*r + ws.cov[kk])
		}
	}
	ws.s11[0], ws.s10[0], ws.s00[0], ws.wr[0], ws.er[0] = s11, s10, s00, wr, er
	return wsum
}

// backward1 is backward for D = 1.
func (ws *kalmanWork) backward1(k *Kalman) {
	a := k.A[0]
	n := len(ws.pred)
	mean, cov, pred, lag := ws.mean[:n+1], ws.cov[:n+1], ws.pred[:n], ws.lag[:n]
	ms, ps := mean[n], cov[n]
	for kk := n - 1; kk >= 0; kk-- {
		mf, pf, pp := mean[kk], cov[kk], pred[kk]
		j := pf * a / pp
		lag[kk] = ps * j
		ms = mf + j*(ms-a*mf)
		ps = pf + j*j*(ps-pp)
		mean[kk], cov[kk] = ms, ps
	}
}

// Small dense kernels on D×D row-major matrices; D is small, so plain loops
// beat any library call here and allocate nothing.

func kfMatVec(dst, a, x []float64, d int) {
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += a[i*d+j] * x[j]
		}
		dst[i] = s
	}
}

// kfMul sets dst = a b; dst must not alias a or b.
func kfMul(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for k := 0; k < d; k++ {
				s += a[i*d+k] * b[k*d+j]
			}
			dst[i*d+j] = s
		}
	}
}

// kfMulT sets dst = a bᵀ; dst must not alias a or b.
func kfMulT(dst, a, b []float64, d int) {
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for k := 0; k < d; k++ {
				s += a[i*d+k] * b[j*d+k]
			}
			dst[i*d+j] = s
		}
	}
}

// kfChol writes the lower Cholesky factor of the symmetric matrix a into
// l (upper part zeroed) and reports whether a is positive definite.
func kfChol(l, a []float64, d int) bool {
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			s := a[i*d+j]
			for k := 0; k < j; k++ {
				s -= l[i*d+k] * l[j*d+k]
			}
			if i == j {
				if !(s > 0) {
					return false
				}
				l[i*d+i] = math.Sqrt(s)
			} else {
				l[i*d+j] = s / l[j*d+j]
			}
		}
		for j := i + 1; j < d; j++ {
			l[i*d+j] = 0
		}
	}
	return true
}

// kfCholSolve sets dst = (l lᵀ)⁻¹ b column by column; v is D scratch.
func kfCholSolve(dst, l, b []float64, d int, v []float64) {
	for c := 0; c < d; c++ {
		for i := 0; i < d; i++ { // forward: l z = b[:,c]
			s := b[i*d+c]
			for k := 0; k < i; k++ {
				s -= l[i*d+k] * v[k]
			}
			v[i] = s / l[i*d+i]
		}
		for i := d - 1; i >= 0; i-- { // back: lᵀ x = z
			s := v[i]
			for k := i + 1; k < d; k++ {
				s -= l[k*d+i] * v[k]
			}
			v[i] = s / l[i*d+i]
		}
		for i := 0; i < d; i++ {
			dst[i*d+c] = v[i]
		}
	}
}

func kfFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// kfOverflow is the error for an observation whose squared standardised
// deviation overflows float64: the log-likelihood is below −1.8e308, so
// nothing finite can be returned.
func kfOverflow(row, comp int, y float64) error {
	return fmt.Errorf("%w: observation row %d component %d = %g: its squared deviation overflows float64 (the Kalman log-likelihood underflows to -Inf); rescale the data", ssm.ErrData, row, comp, y)
}

// kfCheckGrad reports a non-finite smoothed statistic (second moments of
// states of order 1e154 and more overflow), naming the observation of
// largest magnitude in the window.
func kfCheckGrad(g *KalmanGrad, seq ssm.Sequence, w ssm.Window) error {
	for _, s := range [][]float64{g.A, g.Q, g.R, g.M0, g.P0} {
		for _, v := range s {
			if kfFinite(v) {
				continue
			}
			row, comp, big := -1, 0, 0.0
			for t := w.Start; t < w.End; t++ {
				for i, y := range seq.At(t) {
					if math.Abs(y) > big {
						row, comp, big = t, i, math.Abs(y)
					}
				}
			}
			return fmt.Errorf("%w: the Kalman score over rows [%d,%d) is not finite (%v); the largest observation, row %d component %d = %g, is too large for float64 second moments; rescale the data", ssm.ErrData, w.Start, w.End, v, row, comp, seq.At(max(row, w.Start))[comp])
		}
	}
	return nil
}
