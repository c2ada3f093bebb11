package sgmcmc

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// tMixture is a mixture of multivariate Student-t distributions with ν =
// malaNu: weight w_k, centre c_k and scale L_k L_kᵀ.
type tMixture struct {
	weight  []float64
	center  [][]float64
	chol    [][]float64 // lower triangular, row-major
	logNorm []float64   // log w_k − log |L_k|
}

// newTMixture returns the mixture of the given components (weights
// normalised here).
func newTMixture(weight []float64, center, chol [][]float64) *tMixture {
	q := &tMixture{weight: append([]float64(nil), weight...)}
	sum := 0.0
	for _, w := range weight {
		sum += w
	}
	for k := range weight {
		q.weight[k] /= sum
		q.center = append(q.center, append([]float64(nil), center[k]...))
		q.chol = append(q.chol, append([]float64(nil), chol[k]...))
		p := len(center[k])
		ld := 0.0
		for i := range p {
			ld += math.Log(chol[k][i*p+i])
		}
		q.logNorm = append(q.logNorm, math.Log(q.weight[k])-ld)
	}
	return q
}

// scaled returns the mixture with every L_k multiplied by sc.
func (q *tMixture) scaled(sc float64) *tMixture {
	chol := make([][]float64, len(q.chol))
	for k, l := range q.chol {
		chol[k] = make([]float64, len(l))
		for i, v := range l {
			chol[k][i] = sc * v
		}
	}
	return newTMixture(q.weight, q.center, chol)
}

// draw stores a draw of q in dst; s is scratch of length p.
func (q *tMixture) draw(dst, s []float64, rng *rand.Rand) {
	k, v := 0, rng.Float64()
	for k < len(q.weight)-1 && v >= q.weight[k] {
		v -= q.weight[k]
		k++
	}
	drawT(dst, q.center[k], q.chol[k], s, rng)
}

// logDensity returns log q(x) up to a constant shared by every mixture of
// the same dimension (so ratios and mixtures of mixtures are right); z is
// scratch of length p. It allocates nothing.
func (q *tMixture) logDensity(x, z []float64) float64 {
	top, sum := math.Inf(-1), 0.0 // running log-sum-exp
	for k := range q.weight {
		v := q.logNorm[k] + tLogDensity(x, q.center[k], q.chol[k], z)
		if v > top {
			sum = sum*math.Exp(top-v) + 1
			top = v
		} else {
			sum += math.Exp(v - top)
		}
	}
	return top + math.Log(sum)
}

// tLogDensity returns −(ν+p)/2 · log(1 + |L⁻¹(x − c)|²/ν) for ν = malaNu
// (the Student-t log density up to its constant and −log|L|); z is
// scratch of length p.
func tLogDensity(x, c, l, z []float64) float64 {
	return -0.5 * (malaNu + float64(len(x))) * math.Log1p(mahalanobis2(x, c, l, z)/malaNu)
}

// mahalanobis2 returns |L⁻¹(x − c)|² (L lower triangular, row-major);
// z is scratch of length p.
func mahalanobis2(x, c, l, z []float64) float64 {
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

// drawT stores c + L t in dst, t a standard Student-t vector with ν =
// malaNu; s is scratch of length p.
func drawT(dst, c, l, s []float64, rng *rand.Rand) {
	p := len(dst)
	chi := 0.0 // χ²_ν as a sum of ν squared normals
	for range int(malaNu) {
		x := rng.NormFloat64()
		chi += x * x
	}
	w := 1 / math.Sqrt(chi/malaNu)
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

// with returns q scaled by 1 − d with the component (c, l) of weight d
// added.
func (q *tMixture) with(d float64, c, l []float64) *tMixture {
	w := make([]float64, 0, len(q.weight)+1)
	for _, v := range q.weight {
		w = append(w, (1-d)*v)
	}
	return newTMixture(append(w, d), append(append([][]float64(nil), q.center...), c), append(append([][]float64(nil), q.chol...), l))
}

// fitMixture fits a k-component Gaussian mixture to the points xs with log
// weights lw by weighted EM (started from k groups along the first
// principal axis; each covariance ridged by 1% of the overall one) and
// returns it as a Student-t mixture with the same centres and scales, or
// nil when a component collapses.
func fitMixture(xs [][]float64, lw []float64, k int) *tMixture {
	w := normalized(lw)
	if w == nil {
		return nil
	}
	p := len(xs[0])
	gm, gcov, _ := weightedMoments(xs, lw)
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
			l, err := choleskyOf(cov, p)
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
				logp[c] = norm[c] - 0.5*mahalanobis2(xs[i], center[c], chol[c], z)
			}
			top := logSumExp(logp)
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
	return newTMixture(weight, center, chol)
}

// normalized returns exp(lw) scaled to sum 1, or nil when no weight is
// finite.
func normalized(lw []float64) []float64 {
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

func logSumExp(v []float64) float64 {
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

// weightedMoments returns the weighted mean and covariance (row-major) of
// xs under log weights lw and the weights' effective sample size; nil
// when no weight is finite.
func weightedMoments(xs [][]float64, lw []float64) (mean, cov []float64, ess float64) {
	w := normalized(lw)
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

// choleskyOf returns the lower Cholesky factor (row-major) of the p×p
// covariance cov.
func choleskyOf(cov []float64, p int) ([]float64, error) {
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
