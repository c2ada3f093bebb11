package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// LGSSMd is the d-dimensional linear Gaussian state space model
//
//	x_t = A x_{t−1} + N(0, diag σ²),  y_t = x_t + N(0, diag τ²),  x_0 ~ N(0, P),
//
// with A a full d×d matrix of spectral radius < 1 and P its stationary
// covariance, the solution of the discrete Lyapunov equation
// P = A P Aᵀ + diag σ². The natural parameters are (A, σ, τ) and the
// unconstrained vector is
//
//	u = (A_11, A_12, …, A_dd, log σ_1, …, log σ_d, log τ_1, …, log τ_d)
//
// (A row-major and untransformed), so Param = d² + 2d. A u whose A is not
// stable is outside the model: Bind, ExactScore and the like return a
// *ssm.ParamError naming "A".
//
// Default prior (Prior nil): A_ij iid N(0, 1) restricted to the stable
// region {spectral radius(A) < 1}, σ_i² ~ InvGamma(2, 0.5) and
// τ_i² ~ InvGamma(2, 0.5) (as the scalar LGSSM), pushed forward to u.
// The restriction is not renormalised: LogPrior is −Inf outside the stable
// region and otherwise misses the constant −log Pr(A stable), which does not
// matter to MCMC.
//
// LGSSMd implements ssm.ExactScorer by the Kalman filter and RTS smoother.
// Its kernel implements ssm.Proposer (the locally optimal proposal, exact
// here since the noise covariances are diagonal and the emission matrix is
// the identity) and ssm.TransitionBounder.
type LGSSMd struct {
	D     int       // state and observation dimension, > 0
	Prior ssm.Prior // prior on u; nil means the default prior above
}

// Dims implements ssm.Model.
func (m LGSSMd) Dims() ssm.Dims {
	m.checkD()
	return ssm.Dims{State: m.D, Obs: m.D, Param: m.D*m.D + 2*m.D}
}

func (m LGSSMd) checkD() {
	if m.D <= 0 {
		panic(fmt.Sprintf("models: LGSSMd.D = %d must be positive", m.D))
	}
}

func (m LGSSMd) checkU(method string, u []float64) {
	m.checkD()
	if p := m.D*m.D + 2*m.D; len(u) != p {
		panic(fmt.Sprintf("models: LGSSMd.%s: len(u) = %d, want %d", method, len(u), p))
	}
}

// ParamNames implements ssm.Model: "A11", "A12", …, "sigma1", …, "tau1", ….
// For D ≥ 10 the entries of A are named "A1,10" and so on.
func (m LGSSMd) ParamNames() []string {
	m.checkD()
	d := m.D
	names := make([]string, 0, d*d+2*d)
	for i := 1; i <= d; i++ {
		for j := 1; j <= d; j++ {
			if d < 10 {
				names = append(names, fmt.Sprintf("A%d%d", i, j))
			} else {
				names = append(names, fmt.Sprintf("A%d,%d", i, j))
			}
		}
	}
	for _, s := range []string{"sigma", "tau"} {
		for i := 1; i <= d; i++ {
			names = append(names, fmt.Sprintf("%s%d", s, i))
		}
	}
	return names
}

// paramName names coordinate k of u without building the whole list.
func (m LGSSMd) paramName(k int) string {
	d := m.D
	switch {
	case k < d*d:
		if d < 10 {
			return fmt.Sprintf("A%d%d", k/d+1, k%d+1)
		}
		return fmt.Sprintf("A%d,%d", k/d+1, k%d+1)
	case k < d*d+d:
		return fmt.Sprintf("sigma%d", k-d*d+1)
	default:
		return fmt.Sprintf("tau%d", k-d*d-d+1)
	}
}

var lgssmdScalePrior = InvGammaSq{A: 2, B: 0.5}

// LogPrior implements ssm.Prior with m.Prior, or the default prior (see the
// type's documentation) when it is nil. Outside the stable region the
// default returns −Inf and grad holds the gradient of the unrestricted
// density.
func (m LGSSMd) LogPrior(grad, u []float64) float64 {
	if m.Prior != nil {
		return m.Prior.LogPrior(grad, u)
	}
	m.checkU("LogPrior", u)
	d := m.D
	d2 := d * d
	lp := 0.0
	for k := 0; k < d2; k++ {
		lp -= 0.5*u[k]*u[k] + halfLog2Pi
		if grad != nil {
			grad[k] = -u[k]
		}
	}
	for k := d2; k < d2+2*d; k++ {
		v, dv, logJ, dlogJ := Positive.Forward(u[k])
		l, dl := lgssmdScalePrior.LogDensity(v)
		lp += l + logJ
		if grad != nil {
			grad[k] = dl*dv + dlogJ
		}
	}
	if math.IsNaN(lp) {
		return math.NaN()
	}
	if r, ok := spectralRadius(u[:d2], d); !ok || !(r < 1) {
		return math.Inf(-1)
	}
	return lp
}

// Constrain implements ssm.Model: θ = (A, σ, τ) = (u_A, exp u_σ, exp u_τ).
func (m LGSSMd) Constrain(theta, u []float64) float64 {
	m.checkU("Constrain", u)
	m.checkU("Constrain", theta)
	d2 := m.D * m.D
	copy(theta[:d2], u[:d2])
	logJ := 0.0
	for k := d2; k < len(u); k++ {
		theta[k] = math.Exp(u[k])
		logJ += u[k]
	}
	return logJ
}

// Unconstrain implements ssm.Model. A with spectral radius ≥ 1, σ_i ≤ 0,
// τ_i ≤ 0, NaN or Inf give a *ssm.ParamError.
func (m LGSSMd) Unconstrain(u, theta []float64) error {
	m.checkU("Unconstrain", u)
	m.checkU("Unconstrain", theta)
	d2 := m.D * m.D
	tmp := make([]float64, len(u))
	for k, v := range theta {
		if k < d2 {
			if !kfFinite(v) {
				return &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: "must be finite"}
			}
			tmp[k] = v
			continue
		}
		if !(v > 0) || math.IsInf(v, 1) {
			return &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: "must be positive and finite"}
		}
		tmp[k] = math.Log(v)
	}
	if r, ok := spectralRadius(tmp[:d2], m.D); !ok || !(r < 1) {
		return &ssm.ParamError{Name: "A", Value: r, Reason: "its spectral radius (the value shown) must be < 1"}
	}
	copy(u, tmp)
	return nil
}

// Params returns u for the natural parameters: A (D×D row-major), σ and τ
// (length D each). Invalid values give a *ssm.ParamError; wrong lengths
// panic.
func (m LGSSMd) Params(A, sigma, tau []float64) ([]float64, error) {
	m.checkD()
	d := m.D
	if len(A) != d*d || len(sigma) != d || len(tau) != d {
		panic(fmt.Sprintf("models: LGSSMd.Params: lengths %d, %d, %d, want %d, %d, %d", len(A), len(sigma), len(tau), d*d, d, d))
	}
	theta := make([]float64, 0, d*d+2*d)
	theta = append(append(append(theta, A...), sigma...), tau...)
	u := make([]float64, len(theta))
	if err := m.Unconstrain(u, theta); err != nil {
		return nil, err
	}
	return u, nil
}

// lgssmdParams holds the natural parameters at u and the stationary
// covariance, with the factorised Lyapunov operator for further solves.
type lgssmdParams struct {
	a, sig, tau, q, r []float64
	p                 []float64
	lyap              *lyapunov
}

// natural decodes and validates u into freshly allocated storage (the
// result may be kept).
func (m LGSSMd) natural(u []float64) (*lgssmdParams, error) {
	ws := new(lgssmdWork)
	ws.init(m.D)
	return m.naturalWS(ws, u)
}

// naturalWS decodes and validates u into ws's storage: the result is valid
// until ws is reused. Stability of A is established by the Lyapunov
// theorem: with diag σ² ≻ 0, P = A P Aᵀ + diag σ² has a positive definite
// solution exactly when the spectral radius of A is below 1, so the
// eigenvalues are computed only to word the error when the solve or the
// Cholesky factorisation of P fails.
func (m LGSSMd) naturalWS(ws *lgssmdWork, u []float64) (*lgssmdParams, error) {
	d := m.D
	d2 := d * d
	for k, v := range u {
		if math.IsNaN(v) {
			return nil, &ssm.ParamError{Name: m.paramName(k), Value: v, Reason: fmt.Sprintf("u[%d] is NaN", k)}
		}
	}
	np := &ws.np
	buf := ws.buf
	*np = lgssmdParams{a: u[:d2:d2], sig: buf[:d:d], tau: buf[d : 2*d : 2*d], q: buf[2*d : 3*d : 3*d], r: buf[3*d : 4*d : 4*d],
		p: buf[4*d : 4*d+d2 : 4*d+d2]}
	for i := 0; i < d; i++ {
		np.sig[i], np.tau[i] = math.Exp(u[d2+i]), math.Exp(u[d2+d+i])
		np.q[i], np.r[i] = np.sig[i]*np.sig[i], np.tau[i]*np.tau[i]
		if !(np.q[i] > 0) || math.IsInf(np.q[i], 1) {
			return nil, &ssm.ParamError{Name: m.paramName(d2 + i), Value: np.sig[i], Reason: "sigma² must be positive and finite"}
		}
		if !(np.r[i] > 0) || math.IsInf(np.r[i], 1) {
			return nil, &ssm.ParamError{Name: m.paramName(d2 + d + i), Value: np.tau[i], Reason: "tau² must be positive and finite"}
		}
	}
	for k := 0; k < d2; k++ {
		if math.IsInf(u[k], 0) {
			return nil, &ssm.ParamError{Name: m.paramName(k), Value: u[k], Reason: "must be finite"}
		}
	}
	if err := ws.ly.factorize(np.a, d); err != nil {
		return nil, stabilityError(np.a, d, err)
	}
	np.lyap = &ws.ly
	clear(np.p)
	for i := 0; i < d; i++ {
		np.p[i*d+i] = np.q[i]
	}
	np.lyap.solve(np.p, np.p, false)
	for i := 0; i < d; i++ { // exact symmetry for Cholesky and the filter
		for j := 0; j < i; j++ {
			s := 0.5 * (np.p[i*d+j] + np.p[j*d+i])
			np.p[i*d+j], np.p[j*d+i] = s, s
		}
	}
	if !kfChol(buf[4*d+d2:4*d+2*d2], np.p, d) {
		return nil, stabilityError(np.a, d, &ssm.ParamError{Name: "A", Value: np.a[0], Reason: "stationary covariance is numerically not positive definite (A too close to unstable)"})
	}
	return np, nil
}

// stabilityError words a failure of the stationary covariance: an unstable
// A (spectral radius ≥ 1) is reported as such, anything else as err.
func stabilityError(a []float64, d int, err error) error {
	if r, ok := spectralRadius(a, d); !ok || !(r < 1) {
		return &ssm.ParamError{Name: "A", Value: r, Reason: "its spectral radius (the value shown) must be < 1"}
	}
	return err
}

// lgssmdWork holds everything one ExactScore call needs, so that calls
// (one per sampler iteration) allocate nothing once a pooled workspace
// has the right size.
type lgssmdWork struct {
	d    int
	np   lgssmdParams
	ly   lyapunov
	buf  []float64 // σ, τ, σ², τ² (4d), P and its Cholesky factor (2d²)
	kw   kalmanWork
	gbuf []float64 // KalmanGrad storage (2d² + 3d)
	g    KalmanGrad
	adj  []float64 // adjoint Lyapunov solution and A P (2d²)
}

var lgssmdPool = sync.Pool{New: func() any { return new(lgssmdWork) }}

// init sizes ws for dimension d (a no-op when it already has it).
func (ws *lgssmdWork) init(d int) {
	if ws.d == d && ws.buf != nil {
		return
	}
	d2 := d * d
	ws.d = d
	ws.buf = make([]float64, 4*d+2*d2)
	ws.gbuf = make([]float64, 2*d2+3*d)
	ws.g = *newKalmanGradFrom(d, ws.gbuf)
	ws.adj = make([]float64, 2*d2)
}

// StationaryCov returns the stationary covariance P of x_t at u (D×D
// row-major), the solution of P = A P Aᵀ + diag σ².
func (m LGSSMd) StationaryCov(u []float64) ([]float64, error) {
	m.checkU("StationaryCov", u)
	np, err := m.natural(u)
	if err != nil {
		return nil, err
	}
	return np.p, nil
}

// Kalman returns the model at u in the generic Kalman form (x_0 from the
// stationary law).
func (m LGSSMd) Kalman(u []float64) (Kalman, error) {
	m.checkU("Kalman", u)
	np, err := m.natural(u)
	if err != nil {
		return Kalman{}, err
	}
	return Kalman{D: m.D, A: append([]float64(nil), np.a...), Q: np.q, R: np.r, P0: np.p}, nil
}

// Smooth runs the Kalman filter and RTS smoother at u over the whole
// sequence, x_0 from the stationary law.
func (m LGSSMd) Smooth(u []float64, seq ssm.Sequence) (*Smoothed, error) {
	k, err := m.Kalman(u)
	if err != nil {
		return nil, err
	}
	return k.Smooth(seq, 0, seq.Len())
}

// ExactScore implements ssm.ExactScorer by the Kalman filter and RTS
// smoother over the window, with the initial-state term differentiated
// through the stationary covariance (an adjoint Lyapunov solve).
func (m LGSSMd) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	m.checkU("ExactScore", u)
	if grad != nil && len(grad) != len(u) {
		panic(fmt.Sprintf("models: LGSSMd.ExactScore: len(grad) = %d, want %d", len(grad), len(u)))
	}
	d := m.D
	d2 := d * d
	if err := seq.Validate(d); err != nil {
		return 0, err
	}
	if err := w.Validate(seq.Len()); err != nil {
		return 0, err
	}
	lw := lgssmdPool.Get().(*lgssmdWork)
	defer lgssmdPool.Put(lw)
	lw.init(d)
	np, err := m.naturalWS(lw, u)
	if err != nil {
		return 0, err
	}
	k := Kalman{D: d, A: np.a, Q: np.q, R: np.r, P0: np.p}
	ws := &lw.kw
	ws.init(d, w.End-w.Start, grad != nil)
	var g *KalmanGrad
	if grad != nil {
		clear(lw.gbuf)
		g = &lw.g
	}
	ll, err := ws.expectedScore(&k, g, seq, w)
	if err != nil || grad == nil {
		return ll, err
	}
	for i := 0; i < d; i++ {
		grad[d2+i] += 2 * np.q[i] * g.Q[i]
		grad[d2+d+i] += 2 * np.r[i] * g.R[i]
	}
	for k := 0; k < d2; k++ {
		grad[k] += g.A[k]
	}
	if w.KeepsInitial() {
		// tr(G dP) with (I − A⊗A) vec dP = vec(dA P Aᵀ + A P dAᵀ + dQ) equals
		// tr(Y (dA P Aᵀ + A P dAᵀ + dQ)) where Y = Aᵀ Y A + G: one adjoint
		// solve instead of one solve per parameter.
		y, ap := lw.adj[:d2], lw.adj[d2:]
		np.lyap.solve(y, g.P0, true)
		for i := 0; i < d; i++ {
			for j := 0; j < i; j++ {
				s := 0.5 * (y[i*d+j] + y[j*d+i])
				y[i*d+j], y[j*d+i] = s, s
			}
		}
		kfMul(ap, np.a, np.p, d)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s := 0.0
				for c := 0; c < d; c++ {
					s += y[i*d+c] * ap[c*d+j]
				}
				grad[i*d+j] += 2 * s // 2 (Y A P)_ij
			}
			grad[d2+i] += 2 * np.q[i] * y[i*d+i]
		}
	}
	return ll, nil
}

// Bind implements ssm.Model.
func (m LGSSMd) Bind(u []float64) (ssm.Kernel, error) {
	m.checkU("Bind", u)
	np, err := m.natural(u)
	if err != nil {
		return nil, err
	}
	d := m.D
	d2 := d * d
	np2 := d2 + d // parameters that P depends on
	k := &lgssmdKernel{d: d, np: d2 + 2*d}
	k.a = append([]float64(nil), np.a...)
	k.sig, k.tau = np.sig, np.tau
	k.invQ, k.invR = make([]float64, d), make([]float64, d)
	k.normQ, k.normR = make([]float64, d), make([]float64, d)
	k.postSD, k.normS = make([]float64, d), make([]float64, d)
	for i := 0; i < d; i++ {
		q, r := np.q[i], np.r[i]
		k.invQ[i], k.invR[i] = 1/q, 1/r
		k.normQ[i] = -halfLog2Pi - math.Log(np.sig[i])
		k.normR[i] = -halfLog2Pi - math.Log(np.tau[i])
		k.transConst += k.normQ[i]
		k.postSD[i] = math.Sqrt(q * r / (q + r))
		k.normS[i] = -halfLog2Pi - 0.5*math.Log(q+r)
	}
	k.p = np.p
	k.l = make([]float64, d2)
	kfChol(k.l, k.p, d)
	id := make([]float64, d2)
	for i := 0; i < d; i++ {
		id[i*d+i] = 1
	}
	k.pinv = make([]float64, d2)
	kfCholSolve(k.pinv, k.l, id, d, make([]float64, d))
	k.initConst = -float64(d) * halfLog2Pi
	for i := 0; i < d; i++ {
		k.initConst -= math.Log(k.l[i*d+i])
	}
	// ∂P/∂u_k for A_ij and log σ_i, then B_k = P⁻¹ ∂P/∂u_k P⁻¹ and
	// tr(P⁻¹ ∂P/∂u_k), so that ∂/∂u_k log N(x|0,P) = ½ (xᵀ B_k x − tr_k).
	k.bk = make([]float64, np2*d2)
	k.trk = make([]float64, np2)
	ap := make([]float64, d2)
	kfMul(ap, np.a, np.p, d)
	rhs, dp, tmp := make([]float64, d2), make([]float64, d2), make([]float64, d2)
	for idx := 0; idx < np2; idx++ {
		clear(rhs)
		if idx < d2 {
			i, j := idx/d, idx%d
			// E_ij P Aᵀ + A P E_ji: row i is row j of P Aᵀ = (A P)ᵀ,
			// column i is column j of A P.
			for c := 0; c < d; c++ {
				rhs[i*d+c] += ap[c*d+j]
				rhs[c*d+i] += ap[c*d+j]
			}
		} else {
			i := idx - d2
			rhs[i*d+i] = 2 * np.q[i]
		}
		np.lyap.solve(dp, rhs, false)
		kfMul(tmp, k.pinv, dp, d)
		tr := 0.0
		for i := 0; i < d; i++ {
			tr += tmp[i*d+i]
		}
		k.trk[idx] = tr
		kfMul(k.bk[idx*d2:(idx+1)*d2], tmp, k.pinv, d)
	}
	return k, nil
}

// Simulate draws x_0..x_T ((T+1)×D block) and y_1..y_T at u.
func (m LGSSMd) Simulate(T int, u []float64, rng *rand.Rand) (x []float64, y ssm.Sequence, err error) {
	if T < 0 {
		return nil, ssm.Sequence{}, fmt.Errorf("models: LGSSMd.Simulate: T = %d must be non-negative", T)
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, ssm.Sequence{}, err
	}
	x, y = ssm.Simulate(k, m.Dims(), T, rng)
	return x, y, nil
}
