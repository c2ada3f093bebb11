package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// rwmResult holds random-walk Metropolis chains (after burn-in) and their
// convergence diagnostics per coordinate of u.
type rwmResult struct {
	U      [][][]float64 // U[c][i]: chain c, kept draw i
	Accept float64       // acceptance rate over all chains and iterations
	Rhat   []float64     // split R-hat (Gelman et al. 2013, BDA3 §11.4)
	ESS    []float64     // effective sample size by batch means, summed over chains
}

// randomWalk runs chains random-walk Metropolis chains of iters
// iterations on logpost, started at starts[c], with Gaussian proposals of
// covariance 2.38²/d·cov (Roberts, Gelman and Gilks 1997), and keeps the
// second half of each chain. Chain c uses random stream (seed, c) and runs
// on its own goroutine. logpost must be safe for concurrent use.
func randomWalk(logpost func(u []float64, k uint64) float64, starts [][]float64, cov *mat.SymDense, iters int, seed uint64) (*rwmResult, error) {
	d := len(starts[0])
	sc := mat.NewSymDense(d, nil)
	sc.ScaleSym(2.38*2.38/float64(d), cov)
	var ch mat.Cholesky
	if !ch.Factorize(sc) {
		return nil, errors.New("random walk: proposal covariance not positive definite")
	}
	var low mat.TriDense
	ch.LTo(&low)
	res := &rwmResult{U: make([][][]float64, len(starts))}
	accepted := make([]int, len(starts))
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for c := range starts {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			x := slices.Clone(starts[c])
			lp := logpost(x, 0)
			if math.IsInf(lp, -1) || math.IsNaN(lp) {
				mu.Lock()
				failed = fmt.Errorf("random walk: chain %d starts where the log posterior is %v", c, lp)
				mu.Unlock()
				return
			}
			z, y := make([]float64, d), make([]float64, d)
			for it := range iters {
				for i := range z {
					z[i] = rng.NormFloat64()
				}
				for i := range d {
					v := 0.0
					for j := 0; j <= i; j++ {
						v += low.At(i, j) * z[j]
					}
					y[i] = x[i] + v
				}
				if lq := logpost(y, 0); lq-lp >= math.Log(rng.Float64()) {
					x, y, lp = y, x, lq
					accepted[c]++
				}
				if it >= iters/2 {
					res.U[c] = append(res.U[c], slices.Clone(x))
				}
			}
		})
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	total := 0
	for _, a := range accepted {
		total += a
	}
	res.Accept = float64(total) / float64(iters*len(starts))
	res.Rhat, res.ESS = make([]float64, d), make([]float64, d)
	for j := range d {
		res.Rhat[j], res.ESS[j] = chainDiagnostics(res.U, j)
	}
	return res, nil
}

// chainDiagnostics returns the split R-hat of coordinate j over the chains
// and its effective sample size by batch means (√n batches per chain,
// ESS = n·s²/σ²_batch summed over chains).
func chainDiagnostics(us [][][]float64, j int) (rhat, ess float64) {
	var halves [][]float64
	for _, c := range us {
		n := len(c) / 2
		a, b := make([]float64, n), make([]float64, n)
		for i := range n {
			a[i], b[i] = c[i][j], c[n+i][j]
		}
		halves = append(halves, a, b)
	}
	m, n := float64(len(halves)), float64(len(halves[0]))
	means, vars := make([]float64, len(halves)), make([]float64, len(halves))
	for k, h := range halves {
		means[k], vars[k] = stat.MeanVariance(h, nil)
	}
	_, bVar := stat.MeanVariance(means, nil)
	w := 0.0
	for _, v := range vars {
		w += v / m
	}
	rhat = math.Sqrt(((n-1)/n*w + bVar) / w)
	for _, c := range us {
		x := make([]float64, len(c))
		for i := range c {
			x[i] = c[i][j]
		}
		_, s2 := stat.MeanVariance(x, nil)
		bs := int(math.Sqrt(float64(len(x))))
		nb := len(x) / bs
		bm := make([]float64, nb)
		for b := range nb {
			bm[b], _ = stat.MeanVariance(x[b*bs:(b+1)*bs], nil)
		}
		_, v := stat.MeanVariance(bm, nil)
		if v > 0 {
			ess += math.Min(float64(len(x)), float64(len(x))*s2/(float64(bs)*v))
		}
	}
	return rhat, ess
}

// mcmcPosterior runs 4 random-walk chains of iters iterations on logpost,
// started at draws resampled from the importance sample is (with
// replacement, by weight), with its weighted covariance.
func mcmcPosterior(m paramModel, logpost func(u []float64, k uint64) float64, is *isResult, iters int, seed uint64) (*rwmResult, error) {
	_, cov, err := weightedMoments(is)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 1<<62))
	starts := make([][]float64, 4)
	for c := range starts {
		r, k := rng.Float64(), 0
		for ; k < len(is.W)-1 && r >= is.W[k]; k++ {
			r -= is.W[k]
		}
		starts[c] = slices.Clone(is.U[k])
	}
	return randomWalk(logpost, starts, cov, iters, seed)
}

// summary returns the posterior summaries of the natural parameters over
// all kept draws (equal weights).
func (r *rwmResult) summary(m paramModel, names []string) []paramSummary {
	var th [][]float64
	for _, c := range r.U {
		for _, u := range c {
			t := make([]float64, len(names))
			m.Constrain(t, u)
			th = append(th, t)
		}
	}
	w := make([]float64, len(th))
	for i := range w {
		w[i] = 1 / float64(len(th))
	}
	out := make([]paramSummary, len(names))
	for j, name := range names {
		out[j] = summarise(name, th, j, w)
	}
	return out
}

// mcmcJSON is the random-walk run in gridref's JSON output.
type mcmcJSON struct {
	Chains int       `json:"chains"`
	Iters  int       `json:"iters"`
	Accept float64   `json:"accept"`
	Rhat   []float64 `json:"rhat_u"`
	ESS    []float64 `json:"ess_u"`
}

func (r *rwmResult) json(iters int) *mcmcJSON {
	if r == nil {
		return nil
	}
	return &mcmcJSON{Chains: len(r.U), Iters: iters, Accept: r.Accept, Rhat: r.Rhat, ESS: r.ESS}
}
