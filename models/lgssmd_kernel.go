package models

import (
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// lgssmdKernel is LGSSMd bound at one u.
type lgssmdKernel struct {
	d, np         int
	a             []float64 // D×D
	sig, tau      []float64
	invQ, invR    []float64
	normQ, normR  []float64 // −½ log 2π − log σ_i (resp. τ_i)
	postSD, normS []float64 // locally optimal proposal sd; −½ log 2π(σ_i²+τ_i²)
	transConst    float64   // Σ normQ = MaxLogTransition
	p, l, pinv    []float64 // stationary P, its Cholesky factor, P⁻¹
	initConst     float64   // −D/2 log 2π − ½ log det P
	bk, trk       []float64 // per A_ij and log σ_i: P⁻¹ ∂P P⁻¹ and tr(P⁻¹ ∂P)
}

var (
	_ ssm.Model             = LGSSMd{}
	_ ssm.ExactScorer       = LGSSMd{}
	_ ssm.Proposer          = (*lgssmdKernel)(nil)
	_ ssm.TransitionBounder = (*lgssmdKernel)(nil)
	_ ssm.LinearGaussian    = (*lgssmdKernel)(nil)
	_ ssm.EmissionCurvature = (*lgssmdKernel)(nil)
)

func (k *lgssmdKernel) rows(method string, x []float64) int {
	if len(x)%k.d != 0 {
		panic(fmt.Sprintf("models: LGSSMd.%s: block length %d is not a multiple of %d", method, len(x), k.d))
	}
	return len(x) / k.d
}

func (k *lgssmdKernel) checkPrev(method string, x, prev []float64) int {
	n := k.rows(method, x)
	if len(prev) != len(x) {
		panic(fmt.Sprintf("models: LGSSMd.%s: len(prev) = %d, len(x) = %d", method, len(prev), len(x)))
	}
	return n
}

func (k *lgssmdKernel) checkObs(method string, y []float64) {
	if len(y) != k.d {
		panic(fmt.Sprintf("models: LGSSMd.%s: len(y) = %d, want %d", method, len(y), k.d))
	}
}

// SampleInitial implements ssm.Kernel: x = L z with L L ᵀ = P.
func (k *lgssmdKernel) SampleInitial(x []float64, rng *rand.Rand) {
	d, n := k.d, k.rows("SampleInitial", x)
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		for i := range row {
			row[i] = rng.NormFloat64()
		}
		for i := d - 1; i >= 0; i-- { // bottom up: row[j], j ≤ i, still hold z
			s := 0.0
			for j := 0; j <= i; j++ {
				s += k.l[i*d+j] * row[j]
			}
			row[i] = s
		}
	}
}

// SampleTransition implements ssm.Kernel.
func (k *lgssmdKernel) SampleTransition(x, prev []float64, rng *rand.Rand) {
	d, n := k.d, k.checkPrev("SampleTransition", x, prev)
	for r := 0; r < n; r++ {
		row, pr := x[r*d:(r+1)*d], prev[r*d:(r+1)*d]
		for i := 0; i < d; i++ {
			s := 0.0
			for j, pj := range pr {
				s += k.a[i*d+j] * pj
			}
			row[i] = s + k.sig[i]*rng.NormFloat64()
		}
	}
}

// SampleEmission implements ssm.Kernel.
func (k *lgssmdKernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	k.checkObs("SampleEmission", y)
	if len(x) != k.d {
		panic(fmt.Sprintf("models: LGSSMd.SampleEmission: len(x) = %d, want %d", len(x), k.d))
	}
	for i := range y {
		y[i] = x[i] + k.tau[i]*rng.NormFloat64()
	}
}

// LogInitial implements ssm.Kernel.
func (k *lgssmdKernel) LogInitial(x []float64) float64 {
	d := k.d
	if len(x) != d {
		panic(fmt.Sprintf("models: LGSSMd.LogInitial: len(x) = %d, want %d", len(x), d))
	}
	q := 0.0
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < d; j++ {
			s += k.pinv[i*d+j] * x[j]
		}
		q += x[i] * s
	}
	return k.initConst - 0.5*q
}

// LogTransitions implements ssm.Kernel.
func (k *lgssmdKernel) LogTransitions(dst, x, prev []float64) {
	d := k.d
	if len(x) != d {
		panic(fmt.Sprintf("models: LGSSMd.LogTransitions: len(x) = %d, want %d", len(x), d))
	}
	n := k.rows("LogTransitions", prev)
	if len(dst) != n {
		panic(fmt.Sprintf("models: LGSSMd.LogTransitions: len(dst) = %d, want %d", len(dst), n))
	}
	for r := 0; r < n; r++ {
		pr := prev[r*d : (r+1)*d]
		q := 0.0
		for i := 0; i < d; i++ {
			e := x[i]
			for j, pj := range pr {
				e -= k.a[i*d+j] * pj
			}
			q += e * e * k.invQ[i]
		}
		dst[r] = k.transConst - 0.5*q
	}
}

// AddLogEmission implements ssm.Kernel.
func (k *lgssmdKernel) AddLogEmission(logw, y, x []float64) {
	k.checkObs("AddLogEmission", y)
	d, n := k.d, k.rows("AddLogEmission", x)
	if len(logw) != n {
		panic(fmt.Sprintf("models: LGSSMd.AddLogEmission: len(logw) = %d, want %d", len(logw), n))
	}
	c := 0.0
	for i, yi := range y {
		if !math.IsNaN(yi) {
			c += k.normR[i]
		}
	}
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		q := 0.0
		for i, yi := range y {
			if math.IsNaN(yi) {
				continue
			}
			e := yi - row[i]
			q += e * e * k.invR[i]
		}
		logw[r] += c - 0.5*q
	}
}

// AddScore implements ssm.Kernel. u-coordinates: A_ij, log σ_i, log τ_i.
func (k *lgssmdKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	d, np := k.d, k.np
	d2 := d * d
	n := k.rows("AddScore", x)
	if len(h) != n*np {
		panic(fmt.Sprintf("models: LGSSMd.AddScore: len(h) = %d, want %d", len(h), n*np))
	}
	if prev == nil {
		// ∂/∂u_k log N(x|0,P) = ½ (xᵀ B_k x − tr(P⁻¹ ∂P)); τ does not enter.
		for r := 0; r < n; r++ {
			row, hr := x[r*d:(r+1)*d], h[r*np:(r+1)*np]
			for idx, tr := range k.trk {
				b := k.bk[idx*d2 : (idx+1)*d2]
				q := 0.0
				for i := 0; i < d; i++ {
					s := 0.0
					for j := 0; j < d; j++ {
						s += b[i*d+j] * row[j]
					}
					q += row[i] * s
				}
				hr[idx] += 0.5 * w * (q - tr)
			}
		}
		return
	}
	k.checkPrev("AddScore", x, prev)
	k.checkObs("AddScore", y)
	for r := 0; r < n; r++ {
		row, pr, hr := x[r*d:(r+1)*d], prev[r*d:(r+1)*d], h[r*np:(r+1)*np]
		for i := 0; i < d; i++ {
			e := row[i]
			for j, pj := range pr {
				e -= k.a[i*d+j] * pj
			}
			ew := w * e * k.invQ[i]
			for j, pj := range pr {
				hr[i*d+j] += ew * pj
			}
			hr[d2+i] += w * (e*e*k.invQ[i] - 1)
			if yi := y[i]; !math.IsNaN(yi) {
				v := yi - row[i]
				hr[d2+d+i] += w * (v*v*k.invR[i] - 1)
			}
		}
	}
}

// MaxLogTransition implements ssm.TransitionBounder: the transition density
// peaks at x = A prev.
func (k *lgssmdKernel) MaxLogTransition() float64 { return k.transConst }

// Propose implements ssm.Proposer with the locally optimal proposal
// p(x_t | x_{t−1}, y_t): componentwise N((σ²y + τ²μ)/(σ²+τ²), σ²τ²/(σ²+τ²))
// with μ = (A x_{t−1})_i, or the transition for a missing component. The
// weight increment is the predictive density Π_i N(y_i | μ_i, σ_i²+τ_i²).
func (k *lgssmdKernel) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	k.checkObs("Propose", y)
	d, n := k.d, k.checkPrev("Propose", x, prev)
	if len(logw) != n {
		panic(fmt.Sprintf("models: LGSSMd.Propose: len(logw) = %d, want %d", len(logw), n))
	}
	for r := 0; r < n; r++ {
		row, pr := x[r*d:(r+1)*d], prev[r*d:(r+1)*d]
		lw := 0.0
		for i := 0; i < d; i++ {
			mu := 0.0
			for j, pj := range pr {
				mu += k.a[i*d+j] * pj
			}
			yi := y[i]
			if math.IsNaN(yi) {
				row[i] = mu + k.sig[i]*rng.NormFloat64()
				continue
			}
			q, rr := k.sig[i]*k.sig[i], k.tau[i]*k.tau[i]
			s := q + rr
			row[i] = (q*yi+rr*mu)/s + k.postSD[i]*rng.NormFloat64()
			e := yi - mu
			lw += k.normS[i] - 0.5*e*e/s
		}
		logw[r] += lw
	}
}

// LogProposal implements ssm.Proposer.
func (k *lgssmdKernel) LogProposal(x, prev, y []float64) float64 {
	k.checkObs("LogProposal", y)
	d := k.d
	if len(x) != d || len(prev) != d {
		panic(fmt.Sprintf("models: LGSSMd.LogProposal: len(x) = %d, len(prev) = %d, want %d", len(x), len(prev), d))
	}
	lp := 0.0
	for i := 0; i < d; i++ {
		mu := 0.0
		for j, pj := range prev {
			mu += k.a[i*d+j] * pj
		}
		if yi := y[i]; math.IsNaN(yi) {
			e := x[i] - mu
			lp += k.normQ[i] - 0.5*e*e*k.invQ[i]
		} else {
			q, rr := k.sig[i]*k.sig[i], k.tau[i]*k.tau[i]
			s := q + rr
			e := (x[i] - (q*yi+rr*mu)/s) / k.postSD[i]
			lp += -halfLog2Pi - math.Log(k.postSD[i]) - 0.5*e*e
		}
	}
	return lp
}

// spectralRadius returns max |λ_i(A)|, ok = false when the eigenvalue
// iteration fails (or A holds NaN).
func spectralRadius(a []float64, d int) (float64, bool) {
	for _, v := range a {
		if !kfFinite(v) {
			return math.NaN(), false
		}
	}
	if d == 1 {
		return math.Abs(a[0]), true
	}
	var eig mat.Eigen
	if !eig.Factorize(mat.NewDense(d, d, append([]float64(nil), a...)), mat.EigenNone) {
		return math.NaN(), false
	}
	r := 0.0
	for _, l := range eig.Values(nil) {
		r = math.Max(r, cmplx.Abs(l))
	}
	return r, true
}

// lyapunov solves X − A X Aᵀ = B (and the adjoint Y − Aᵀ Y A = G) through
// the d²×d² system (I − A⊗A) vec X = vec B, vec row-major, by an LU
// factorisation (LAPACK getrf, with a getcon condition estimate) held in
// buffers that are reused across factorisations of the same size.
type lyapunov struct {
	d     int
	lu    blas64.General // the operator, then its LU factors
	x     blas64.General // right-hand side and solution (d²×1)
	pivot []int
	work  []float64 // 4d² for getcon (and d² for the norm)
	iwork []int
}

// factorize sets up the operator for A.
func (ly *lyapunov) factorize(a []float64, d int) error {
	d2 := d * d
	if ly.d != d || ly.lu.Data == nil {
		ly.d = d
		ly.lu = blas64.General{Rows: d2, Cols: d2, Stride: d2, Data: make([]float64, d2*d2)}
		ly.x = blas64.General{Rows: d2, Cols: 1, Stride: 1, Data: make([]float64, d2)}
		ly.pivot = make([]int, d2)
		ly.work = make([]float64, 4*d2)
		ly.iwork = make([]int, d2)
	}
	k := ly.lu.Data
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			for p := 0; p < d; p++ {
				for q := 0; q < d; q++ {
					// (A X Aᵀ)_ij = Σ_pq A_ip X_pq A_jq.
					v := -a[i*d+p] * a[j*d+q]
					if i == p && j == q {
						v++
					}
					k[(i*d+j)*d2+p*d+q] = v
				}
			}
		}
	}
	anorm := lapack64.Lange(lapack.MaxColumnSum, ly.lu, ly.work[:d2])
	ok := lapack64.Getrf(ly.lu, ly.pivot)
	c := math.Inf(1)
	if ok {
		c = 1 / lapack64.Gecon(lapack.MaxColumnSum, ly.lu, anorm, ly.work, ly.iwork)
	}
	if math.IsInf(c, 1) || !(c <= 1e14) {
		return &ssm.ParamError{Name: "A", Value: a[0], Reason: fmt.Sprintf("Lyapunov operator I − A⊗A is numerically singular (condition %.3g)", c)}
	}
	return nil
}

// solve sets dst = L⁻¹(b) (trans: the adjoint); dst may alias b.
func (ly *lyapunov) solve(dst, b []float64, trans bool) {
	copy(ly.x.Data, b)
	t := blas.NoTrans
	if trans {
		t = blas.Trans
	}
	lapack64.Getrs(t, ly.lu, ly.x, ly.pivot)
	copy(dst, ly.x.Data)
}

// LinearGaussian implements ssm.LinearGaussian: F = A, c = 0,
// Q = diag(σ²), m0 = 0 and P0 = P, the stationary covariance.
func (k *lgssmdKernel) LinearGaussian(F, c, Q, m0, P0 []float64) {
	d := k.d
	copy(F, k.a)
	copy(P0, k.p)
	for i := 0; i < d; i++ {
		c[i], m0[i] = 0, 0
		for j := 0; j < d; j++ {
			Q[i*d+j] = 0
		}
		Q[i*d+i] = 1 / k.invQ[i]
	}
}

// SeparableEmission implements ssm.SeparableEmission: y_i depends on x_i
// only.
func (k *lgssmdKernel) SeparableEmission() bool { return true }

// LogEmissionCurvature implements ssm.EmissionCurvature: the Gaussian
// emission's log density, −(y_i − x_i)²/(2τ_i²) + const per observed
// component; its gradient (y_i − x_i)/τ_i² and constant Hessian
// −diag(1/τ_i²) make the Laplace approximation exact.
func (k *lgssmdKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	k.checkObs("LogEmissionCurvature", y)
	d := k.d
	clear(g)
	clear(H[:d*d])
	l := 0.0
	for i, yi := range y {
		if math.IsNaN(yi) {
			continue
		}
		e := yi - x[i]
		l += k.normR[i] - 0.5*e*e*k.invR[i]
		g[i] = e * k.invR[i]
		H[i*d+i] = -k.invR[i]
	}
	return l
}
