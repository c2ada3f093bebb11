// Package tmix holds the mixtures of multivariate Student-t
// distributions (ν = 5) that Fit's importance sampling, independence
// proposals, surrogate and spread check draw from and weigh with, and
// the weighted-sample functions they share (normalised weights, weighted
// moments, Cholesky factors). It imports nothing of sgmcmc.
package tmix

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// Nu is the Student-t degrees of freedom of every component.
const Nu = 5.0

// Mixture is a mixture of multivariate Student-t distributions with ν =
// Nu: weight w_k, centre c_k and scale L_k L_kᵀ.
type Mixture struct {
	Weight  []float64
	Center  [][]float64
	Chol    [][]float64 // lower triangular, row-major
	logNorm []float64   // log w_k − log |L_k|
}

// New returns the mixture of the given components (weights normalised
// here; the slices are copied).
func New(weight []float64, center, chol [][]float64) *Mixture {
	q := &Mixture{Weight: append([]float64(nil), weight...)}
	sum := 0.0
	for _, w := range weight {
		sum += w
	}
	for k := range weight {
		q.Weight[k] /= sum
		q.Center = append(q.Center, append([]float64(nil), center[k]...))
		q.Chol = append(q.Chol, append([]float64(nil), chol[k]...))
		p := len(center[k])
		ld := 0.0
		for i := range p {
			ld += math.Log(chol[k][i*p+i])
		}
		q.logNorm = append(q.logNorm, math.Log(q.Weight[k])-ld)
	}
	return q
}

// Scaled returns the mixture with every L_k multiplied by sc.
func (q *Mixture) Scaled(sc float64) *Mixture {
	chol := make([][]float64, len(q.Chol))
	for k, l := range q.Chol {
		chol[k] = make([]float64, len(l))
		for i, v := range l {
			chol[k][i] = sc * v
		}
	}
	return New(q.Weight, q.Center, chol)
}

// Draw stores a draw of q in dst; s is scratch of length p.
func (q *Mixture) Draw(dst, s []float64, rng *rand.Rand) {
	k, v := 0, rng.Float64()
	for k < len(q.Weight)-1 && v >= q.Weight[k] {
		v -= q.Weight[k]
		k++
	}
	DrawT(dst, q.Center[k], q.Chol[k], s, rng)
}

// LogDensity returns log q(x) up to a constant shared by every mixture of
// the same dimension (so ratios and mixtures of mixtures are right); z is
// scratch of length p. It allocates nothing.
func (q *Mixture) LogDensity(x, z []float64) float64 {
	top, sum := math.Inf(-1), 0.0 // running log-sum-exp
	for k := range q.Weight {
		v := q.logNorm[k] + LogDensityT(x, q.Center[k], q.Chol[k], z)
		if v > top {
			sum = sum*math.Exp(top-v) + 1
			top = v
		} else {
			sum += math.Exp(v - top)
		}
	}
	return top + math.Log(sum)
}

// LogDensityT returns −(ν+p)/2 · log(1 + |L⁻¹(x − c)|²/ν) for ν = Nu
// (the Student-t log density up to its constant and −log|L|); z is
// scratch of length p.
func LogDensityT(x, c, l, z []float64) float64 {
	return -0.5 * (Nu + float64(len(x))) * math.Log1p(Mahalanobis2(x, c, l, z)/Nu)
}

// Mahalanobis2 returns |L⁻¹(x − c)|² (L lower triangular, row-major);
// z is scratch of length p.
func Mahalanobis2(x, c, l, z []float64) float64 {
	p := len(x)
	r2 := 0.0
	for i := range p { // forward substitution
		a := x[i] - c[i]
		for j := range i {
			a -= l[i*p+j] * z[j]
		}
		z[i] = a / l[i*p+i]
		r2 += z[i] * z[i]
	}
	return r2
}

// DrawT stores c + L t in dst, t a standard Student-t vector with ν =
// Nu; s is scratch of length p.
func DrawT(dst, c, l, s []float64, rng *rand.Rand) {
	p := len(dst)
	chi := 0.0 // χ²_ν as a sum of ν squared normals
	for range int(Nu) {
		x := rng.NormFloat64()
		chi += x * x
	}
	w := 1 / math.Sqrt(chi/Nu)
	for j := range s {
		s[j] = w * rng.NormFloat64()
	}
	for i := range p {
		a := c[i]
		for j := 0; j <= i; j++ {
			a += l[i*p+j] * s[j]
		}
		dst[i] = a
	}
}

// With returns q's weights scaled by 1 − d with the component (c, l) of
// weight d added.
func (q *Mixture) With(d float64, c, l []float64) *Mixture {
	w := make([]float64, 0, len(q.Weight)+1)
	for _, v := range q.Weight {
		w = append(w, (1-d)*v)
	}
	return New(append(w, d), append(append([][]float64(nil), q.Center...), c), append(append([][]float64(nil), q.Chol...), l))
}

// Fit fits a k-component Gaussian mixture to the points xs with log
// weights lw by weighted EM (started from k groups along the first
// principal axis; each covariance ridged by 1% of the overall one) and
// returns it as a Student-t mixture with the same centres and scales, or
// nil when a component collapses.
func Fit(xs [][]float64, lw []float64, k int) *Mixture {
	w := Normalized(lw)
	if w == nil {
		return nil
	}
	p := len(xs[0])
	gm, gcov, _ := WeightedMoments(xs, lw)
	// Start: the weighted k-quantile groups along the leading eigenvector.
	sym := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			sym.SetSym(i, j, gcov[i*p+j])
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return nil
	}
	var vec mat.Dense
	eig.VectorsTo(&vec)
	proj := make([]float64, len(xs))
	idx := make([]int, 0, len(xs))
	for i, x := range xs {
		for a := range p {
			proj[i] += (x[a] - gm[a]) * vec.At(a, p-1) // eigenvalues ascend
		}
		if w[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool { return proj[idx[a]] < proj[idx[b]] })
	resp := make([][]float64, len(xs)) // r_ic
	for i := range resp {
		resp[i] = make([]float64, k)
	}
	cum := 0.0
	for _, i := range idx {
		resp[i][min(k-1, int(cum*float64(k)))] = 1
		cum += w[i]
	}
	weight := make([]float64, k)
	center := make([][]float64, k)
	chol := make([][]float64, k)
	cov := make([]float64, p*p)
	z := make([]float64, p)
	logp, norm := make([]float64, k), make([]float64, k) // norm: log w_c − log |L_c|
	for iter := 0; iter < 100; iter++ {
		// M-step.
		for c := range k {
			wc := 0.0
			mc := make([]float64, p)
			for _, i := range idx {
				wc += w[i] * resp[i][c]
				for a := range p {
					mc[a] += w[i] * resp[i][c] * xs[i][a]
				}
			}
			if wc < 0.02 { // a component without mass
				return nil
			}
			for a := range mc {
				mc[a] /= wc
			}
			for a := range cov {
				cov[a] = 0.01 * gcov[a]
			}
			for _, i := range idx {
				r := w[i] * resp[i][c] / wc
				for a := range p {
					for b := range p {
						cov[a*p+b] += r * (xs[i][a] - mc[a]) * (xs[i][b] - mc[b])
					}
				}
			}
			l, err := Cholesky(cov, p)
			if err != nil {
				return nil
			}
			weight[c], center[c], chol[c] = wc, mc, l
		}
		// E-step (Gaussian log densities up to their shared constant).
		for c := range k {
			norm[c] = math.Log(weight[c])
			for a := range p {
				norm[c] -= math.Log(chol[c][a*p+a])
			}
		}
		change := 0.0
		for _, i := range idx {
			for c := range k {
				logp[c] = norm[c] - 0.5*Mahalanobis2(xs[i], center[c], chol[c], z)
			}
			top := LogSumExp(logp)
			for c := range k {
				r := math.Exp(logp[c] - top)
				change = math.Max(change, math.Abs(r-resp[i][c]))
				resp[i][c] = r
			}
		}
		if change < 1e-4 {
			break
		}
	}
	return New(weight, center, chol)
}

// Normalized returns exp(lw) scaled to sum 1, or nil when no weight is
// finite.
func Normalized(lw []float64) []float64 {
	top := math.Inf(-1)
	for _, v := range lw {
		top = math.Max(top, v)
	}
	if math.IsInf(top, -1) || math.IsNaN(top) {
		return nil
	}
	w := make([]float64, len(lw))
	sum := 0.0
	for i, v := range lw {
		w[i] = math.Exp(v - top)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// LogSumExp returns log Σ exp(v_i), computed without overflow (±Inf when
// the largest v_i is infinite).
func LogSumExp(v []float64) float64 {
	top := math.Inf(-1)
	for _, x := range v {
		top = math.Max(top, x)
	}
	if math.IsInf(top, 0) {
		return top
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - top)
	}
	return top + math.Log(s)
}

// WeightedMoments returns the weighted mean and covariance (row-major) of
// xs under log weights lw and the weights' effective sample size; nil
// when no weight is finite.
func WeightedMoments(xs [][]float64, lw []float64) (mean, cov []float64, ess float64) {
	w := Normalized(lw)
	if w == nil {
		return nil, nil, 0
	}
	p := len(xs[0])
	mean = make([]float64, p)
	s2 := 0.0
	for i, x := range xs {
		s2 += w[i] * w[i]
		for a := range p {
			mean[a] += w[i] * x[a]
		}
	}
	cov = make([]float64, p*p)
	for i, x := range xs {
		for a := range p {
			for b := range p {
				cov[a*p+b] += w[i] * (x[a] - mean[a]) * (x[b] - mean[b])
			}
		}
	}
	// Unbiased for weighted draws: divide by 1 − Σw².
	for i := range cov {
		cov[i] /= 1 - s2
	}
	return mean, cov, 1 / s2
}

// Cholesky returns the lower Cholesky factor (row-major) of the p×p
// covariance cov.
func Cholesky(cov []float64, p int) ([]float64, error) {
	sym := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			sym.SetSym(i, j, 0.5*(cov[i*p+j]+cov[j*p+i]))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(sym) {
		return nil, errors.New("sgmcmc: covariance not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	out := make([]float64, p*p)
	for i := range p {
		for j := 0; j <= i; j++ {
			out[i*p+j] = l.At(i, j)
		}
	}
	return out, nil
}

// IndependenceRates returns E_x α(x) and E_x 1/α(x) for x weighted by
// omega, α(x_i) = Σ_j ν_j min(1, w_j/w_i), with the log weights lw = log w
// (the acceptance rate and the holding time of an independence chain).
func IndependenceRates(omega, nu, lw []float64) (accept, hold float64) {
	for i, oi := range omega {
		if oi == 0 {
			continue
		}
		a := 0.0
		for j, nj := range nu {
			if nj > 0 {
				a += nj * math.Min(1, math.Exp(lw[j]-lw[i]))
			}
		}
		accept += oi * a
		hold += oi / math.Max(a, 1e-6)
	}
	return accept, hold
}
