package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// paramModel is what the reference needs from a model: names, the
// transform to natural parameters and the prior density of u.
type paramModel interface {
	ParamNames() []string
	Constrain(theta, u []float64) float64
	Unconstrain(u, theta []float64) error
	LogPrior(grad, u []float64) float64
}

// logLikFunc returns log p(y | θ(u)), or an estimate of it; stream selects
// the random numbers of a stochastic estimate (ignored by exact ones). It
// must be safe for concurrent use.
type logLikFunc func(u []float64, stream uint64) float64

// newtonMode maximises f from x0 by Newton's method with finite-difference
// derivatives of step h, and returns the mode and the inverse of minus the
// Hessian there (the Laplace covariance). Where minus the Hessian at the
// last point is not positive definite it fails, unless floor > 0: then its
// eigenvalues are raised to at least floor (for a proposal that adaptation
// corrects).
func newtonMode(f func([]float64) float64, x0 []float64, h float64, iters int, floor float64) ([]float64, *mat.SymDense, error) {
	d := len(x0)
	mode := slices.Clone(x0)
	var cov mat.SymDense
	for it := 0; it < iters; it++ {
		H, grad := negHessian(f, mode, h)
		var ch mat.Cholesky
		var step mat.VecDense
		if ch.Factorize(H) {
			ch.InverseTo(&cov)
			step.MulVec(&cov, mat.NewVecDense(d, grad))
		} else {
			// Not concave here: a step along the floored inverse.
			fi, err := flooredInverse(H, 1)
			if err != nil {
				return nil, nil, err
			}
			step.MulVec(fi, mat.NewVecDense(d, grad))
		}
		// Damp long steps (far from the mode the quadratic model is poor).
		sc := 1.0
		if n := mat.Norm(&step, 2); n > 1 {
			sc = 1 / n
		}
		f0 := f(mode)
		for {
			trial := slices.Clone(mode)
			for i := range trial {
				trial[i] += sc * step.AtVec(i)
			}
			if f(trial) >= f0-1e-9 || sc < 1e-3 {
				copy(mode, trial)
				break
			}
			sc /= 2
		}
		if sc*mat.Norm(&step, 2) < 1e-6 {
			break
		}
	}
	// The Laplace covariance at the last point (the iteration limit only
	// matters when the finite-difference gradient noise stalls the steps).
	H, _ := negHessian(f, mode, h)
	var ch mat.Cholesky
	if !ch.Factorize(H) {
		if floor > 0 {
			fi, err := flooredInverse(H, floor)
			return mode, fi, err
		}
		return nil, nil, fmt.Errorf("the Hessian at %v is not negative definite", mode)
	}
	ch.InverseTo(&cov)
	return mode, &cov, nil
}

// negHessian returns minus the Hessian of f at x by central differences of
// step h, and the gradient.
func negHessian(f func([]float64) float64, x []float64, h float64) (*mat.SymDense, []float64) {
	d := len(x)
	H := mat.NewSymDense(d, nil)
	grad := make([]float64, d)
	f0 := f(x)
	at := func(i, j int, si, sj float64) float64 {
		u := append([]float64(nil), x...)
		u[i] += si * h
		u[j] += sj * h
		return f(u)
	}
	for i := range d {
		fp, fm := at(i, i, 0.5, 0.5), at(i, i, -0.5, -0.5) // ±h along i
		H.SetSym(i, i, -(fp-2*f0+fm)/(h*h))
		grad[i] = (fp - fm) / (2 * h)
		for j := i + 1; j < d; j++ {
			v := (at(i, j, 1, 1) - at(i, j, 1, -1) - at(i, j, -1, 1) + at(i, j, -1, -1)) / (4 * h * h)
			H.SetSym(i, j, -v)
		}
	}
	return H, grad
}

// isResult is a weighted sample of the posterior.
type isResult struct {
	U, Theta [][]float64 // draws, in u and in natural parameters
	W        []float64   // normalised importance weights
	ESS      float64
}

// importanceSample draws n points from a multivariate t_ν centred at mode
// with scale matrix scale²·cov and weights them by exp(logpost)/t density.
// The draws are spread over GOMAXPROCS goroutines; draw k uses its own
// random stream (seed, k), so the result does not depend on the number of
// goroutines. logpost(u, k) must be safe for concurrent use.
func importanceSample(m paramModel, logpost func(u []float64, k uint64) float64, mode []float64, cov *mat.SymDense, scale float64, nu float64, n int, seed uint64) (*isResult, error) {
	d := len(mode)
	var L mat.Cholesky
	sc := mat.NewSymDense(d, nil)
	sc.ScaleSym(scale*scale, cov)
	if !L.Factorize(sc) {
		return nil, errors.New("proposal covariance not positive definite")
	}
	var low mat.TriDense
	L.LTo(&low)
	r := &isResult{U: make([][]float64, n), Theta: make([][]float64, n), W: make([]float64, n)}
	logw := r.W
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			z := make([]float64, d)
			for {
				mu.Lock()
				k := next
				next++
				mu.Unlock()
				if k >= n {
					return
				}
				rng := rand.New(rand.NewPCG(seed, uint64(k)))
				for i := range z {
					z[i] = rng.NormFloat64()
				}
				chi := 0.0
				for range int(nu) {
					v := rng.NormFloat64()
					chi += v * v
				}
				s := math.Sqrt(nu / chi)
				q := 0.0
				u := make([]float64, d)
				for i := range d {
					v := 0.0
					for j := 0; j <= i; j++ {
						v += low.At(i, j) * z[j]
					}
					u[i] = mode[i] + s*v
					q += z[i] * z[i] * s * s
				}
				th := make([]float64, d)
				m.Constrain(th, u)
				// log t density up to a constant (the same for every draw).
				logw[k] = logpost(u, uint64(k)) + 0.5*(nu+float64(d))*math.Log1p(q/nu)
				r.U[k], r.Theta[k] = u, th
			}
		})
	}
	wg.Wait()
	mx := math.Inf(-1)
	for _, v := range logw {
		if !math.IsNaN(v) {
			mx = math.Max(mx, v)
		}
	}
	if math.IsInf(mx, 0) {
		return nil, errors.New("importance sampling: no draw has a finite weight")
	}
	sw, sw2 := 0.0, 0.0
	for k, v := range logw {
		w := 0.0
		if !math.IsNaN(v) {
			w = math.Exp(v - mx)
		}
		logw[k] = w
		sw += w
		sw2 += w * w
	}
	for k := range logw {
		logw[k] /= sw
	}
	r.ESS = sw * sw / sw2
	return r, nil
}

// weightedMoments returns the weighted mean and covariance in u of an
// importance sample.
func weightedMoments(is *isResult) ([]float64, *mat.SymDense, error) {
	d := len(is.U[0])
	mean := make([]float64, d)
	for k, u := range is.U {
		for i, v := range u {
			mean[i] += is.W[k] * v
		}
	}
	cov := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			s := 0.0
			for k, u := range is.U {
				s += is.W[k] * (u[i] - mean[i]) * (u[j] - mean[j])
			}
			cov.SetSym(i, j, s)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(cov) {
		return nil, nil, fmt.Errorf("weighted covariance of the draws (ESS %.1f) is not positive definite", is.ESS)
	}
	return mean, cov, nil
}

// paramSummary is the weighted posterior summary of one natural parameter.
type paramSummary struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Q05  float64 `json:"q05"`
	Q50  float64 `json:"q50"`
	Q95  float64 `json:"q95"`
}

// summarise returns the weighted mean, sd and 5/50/95% quantiles of
// coordinate j of xs under normalised weights w.
func summarise(name string, xs [][]float64, j int, w []float64) paramSummary {
	type pt struct{ x, w float64 }
	pts := make([]pt, len(xs))
	var mean, m2 float64
	for k, x := range xs {
		pts[k] = pt{x[j], w[k]}
		mean += w[k] * x[j]
	}
	for k, x := range xs {
		m2 += w[k] * (x[j] - mean) * (x[j] - mean)
	}
	slices.SortFunc(pts, func(a, b pt) int {
		switch {
		case a.x < b.x:
			return -1
		case a.x > b.x:
			return 1
		}
		return 0
	})
	return paramSummary{Name: name, Mean: mean, SD: math.Sqrt(m2),
		Q05: wquantile(pts, 0.05, func(p pt) (float64, float64) { return p.x, p.w }),
		Q50: wquantile(pts, 0.50, func(p pt) (float64, float64) { return p.x, p.w }),
		Q95: wquantile(pts, 0.95, func(p pt) (float64, float64) { return p.x, p.w })}
}

// wquantile returns the p-quantile of sorted weighted points: the value at
// which the cumulative weight, counting each point's weight as centred on
// it, reaches p (linear interpolation between neighbours).
func wquantile[T any](pts []T, p float64, get func(T) (float64, float64)) float64 {
	cum := 0.0
	prevX, prevC := math.NaN(), 0.0
	for i, pt := range pts {
		x, w := get(pt)
		c := cum + w/2 // mid-point cumulative weight
		if c >= p {
			if i == 0 {
				return x
			}
			return prevX + (x-prevX)*(p-prevC)/(c-prevC)
		}
		prevX, prevC = x, c
		cum += w
	}
	return prevX
}

// flooredInverse returns the inverse of the symmetric matrix H after
// raising its eigenvalues to at least floor, and reports them on failure
// to be positive.
func flooredInverse(H *mat.SymDense, floor float64) (*mat.SymDense, error) {
	var eig mat.EigenSym
	if !eig.Factorize(H, true) {
		return nil, errors.New("eigendecomposition of the Hessian failed")
	}
	vals := eig.Values(nil)
	var V mat.Dense
	eig.VectorsTo(&V)
	d := len(vals)
	cov := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			s := 0.0
			for k, l := range vals {
				s += V.At(i, k) * V.At(j, k) / math.Max(l, floor)
			}
			cov.SetSym(i, j, s)
		}
	}
	return cov, nil
}
