package sgmcmc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// withoutKalman is a model with LGSSMd's kernel but not its exact
// scorer: Fit must take Laplace importance sampling (the kernel is
// ssm.LinearGaussian and ssm.EmissionCurvature), as for models.MSV.
type withoutKalman struct{ ssm.Model }

// TestFitLaplaceLGSSMd fits a simulated 2-dimensional LGSSM (T = 300)
// with the defaults on the Laplace path and compares the posterior with
// the exact one, computed here without Fit: importance sampling from a
// Student-t (ν = 5, 1.5 × the fit's covariance) with weights from the
// Kalman log-likelihood (LGSSMd.ExactScore) and the prior. Every mean
// must be within 0.25 reference sds and every sd within ×[0.8, 1.25],
// the targets of a fit against an exact posterior; the importance
// sampling's own ESS must exceed 1,000. The emission is Gaussian, so the
// Laplace approximation is exact and every importance weight is 1: 64
// paths (half the default) give the same likelihood and a score with
// Monte Carlo error only, in two thirds of the time.
func TestFitLaplaceLGSSMd(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole fit: long test")
	}
	t.Parallel() // a whole fit: it shares the cores with the other long fits
	lg := models.LGSSMd{D: 2}
	u0, err := lg.Params([]float64{0.8, 0.1, -0.2, 0.6}, []float64{0.5, 0.4}, []float64{0.3, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	const T = 300
	_, y, err := lg.Simulate(T, u0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	post, err := sgmcmc.Fit(context.Background(), withoutKalman{lg}, ssm.Dataset{Sequences: []ssm.Sequence{y}}, sgmcmc.FitSettings{Seed: 1, KSDDraws: -1, LaplacePaths: 64})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(post.Preparation.Path, "Laplace importance sampling") {
		t.Fatalf("path %q: want Laplace importance sampling", post.Preparation.Path)
	}
	names := lg.ParamNames()
	rm, rsd, ess := exactMoments(t, post, 20000, func(x []float64) float64 {
		ll, err := lg.ExactScore(nil, x, y, ssm.Full(T))
		if err != nil {
			return math.Inf(-1)
		}
		return ll + lg.LogPrior(nil, x)
	}, func(theta, x []float64) { lg.Constrain(theta, x) })
	checkExact(t, post, names, rm, rsd)
	t.Logf("reference ESS %.0f; %d iterations per chain; warnings %q; gradient %v walk %v", ess, post.Iterations, post.Warnings, post.Preparation.Gradient, post.Preparation.Walk)
}

// checkExact compares the fit's summary with the exact posterior's means
// and sds: every mean within 0.25 reference sds, every sd within
// ×[0.8, 1.25] and R-hat ≤ 1.01, the targets of a fit against an exact
// posterior.
func checkExact(t *testing.T, post *sgmcmc.Posterior, names []string, rm, rsd []float64) {
	t.Helper()
	for j, r := range post.Summary() {
		z, ratio := (r.Mean-rm[j])/rsd[j], r.SD/rsd[j]
		t.Logf("%s: fit %.4f ± %.4f, exact %.4f ± %.4f (z %.2f, sd ratio %.2f)", names[j], r.Mean, r.SD, rm[j], rsd[j], z, ratio)
		if math.Abs(z) > 0.25 || ratio < 0.8 || ratio > 1.25 || r.Rhat > 1.01 {
			t.Errorf("%s: mean %.2f reference sds off, sd ratio %.2f, R-hat %.3f", names[j], z, ratio, r.Rhat)
		}
	}
}

// exactMoments returns the posterior means and sds of the natural
// parameters by self-normalised importance sampling in u, computed
// without Fit: n draws from a Student-t (ν = 5) at 1.5 × the fit's
// covariance around its mean, weighted by logTarget (the exact log
// posterior in u) over the t density. It fails the test when the
// weights' ESS is under 1,000. logTarget is called from two goroutines.
func exactMoments(t *testing.T, post *sgmcmc.Posterior, n int, logTarget func(x []float64) float64, constrain func(theta, x []float64)) (mean, sd []float64, ess float64) {
	t.Helper()
	p := len(post.Names)
	var us [][]float64
	for _, c := range post.U {
		for i := 0; i+p <= len(c); i += p {
			us = append(us, c[i:i+p])
		}
	}
	m, cov := momentsOf(us, p)
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(p, cov)) {
		t.Fatal("the fit's covariance is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	rng := rand.New(rand.NewPCG(7, 8))
	const nu = 5.0
	xs, lqs := make([][]float64, n), make([]float64, n)
	z := make([]float64, p)
	for i := range n {
		g := 0.0
		for j := range z {
			z[j] = rng.NormFloat64()
		}
		for range int(nu) { // χ²_5
			v := rng.NormFloat64()
			g += v * v
		}
		s := 1.5 / math.Sqrt(g/nu)
		x := make([]float64, p)
		q := 0.0
		for j := range p {
			x[j] = m[j]
			for k := 0; k <= j; k++ {
				x[j] += s * l.At(j, k) * z[k]
			}
			q += z[j] * z[j]
		}
		// log t density up to a constant: −(ν+p)/2 log(1 + |L⁻¹(x−m)|²/(1.5²ν)).
		q = q * s * s / (1.5 * 1.5)
		xs[i], lqs[i] = x, -(nu+float64(p))/2*math.Log(1+q/nu)
	}
	lws := make([]float64, n)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 2 {
				lws[i] = logTarget(xs[i]) - lqs[i]
			}
		}()
	}
	wg.Wait()
	top := math.Inf(-1)
	for _, v := range lws {
		top = math.Max(top, v)
	}
	sw, s2 := 0.0, 0.0
	rm, rm2 := make([]float64, p), make([]float64, p)
	theta := make([]float64, p)
	for i := range n {
		w := math.Exp(lws[i] - top)
		sw += w
		s2 += w * w
		constrain(theta, xs[i])
		for j, v := range theta {
			rm[j] += w * v
			rm2[j] += w * v * v
		}
	}
	ess = sw * sw / s2
	if ess < 1000 {
		t.Fatalf("the reference's importance sampling has ESS %.0f of %d", ess, n)
	}
	sd = make([]float64, p)
	for j := range rm {
		rm[j] /= sw
		sd[j] = math.Sqrt(rm2[j]/sw - rm[j]*rm[j])
	}
	return rm, sd, ess
}

// momentsOf returns the mean and covariance (row-major) of the points.
func momentsOf(xs [][]float64, p int) ([]float64, []float64) {
	m, c := make([]float64, p), make([]float64, p*p)
	for _, x := range xs {
		for j, v := range x {
			m[j] += v / float64(len(xs))
		}
	}
	for _, x := range xs {
		for i := range p {
			for j := range p {
				c[i*p+j] += (x[i] - m[i]) * (x[j] - m[j]) / float64(len(xs)-1)
			}
		}
	}
	return m, c
}

// TestFitPseudoMarginalSV fits MSV{D: 1}, the stochastic volatility
// model, on 500 simulated rows with little persistence (φ 0.6, σ 0.75),
// where the Gaussian model of Laplace importance sampling is far from
// p(x | y) and its importance weights are uneven, so that Fit's chains
// run pseudo-marginal on the resampling estimate. The reference is exact
// up to quadrature: importance sampling (exactMoments) on the grid
// filter's log-likelihood of the same kernel (pf.GridFilter, 101 nodes
// over ±6 stationary sds of the state: its only error is the grid's,
// within 10⁻⁹ of the Kalman filter on the LGSSM). The targets are those
// of a fit against an exact posterior: every mean within 0.25 reference
// sds, every sd within ×[0.8, 1.25], R-hat ≤ 1.01.
func TestFitPseudoMarginalSV(t *testing.T) {
	longtest.Skip(t, "a whole fit")
	t.Parallel() // a whole fit: it shares the cores with the other long fits
	m := models.MSV{D: 1}
	u0 := make([]float64, 3)
	if err := m.Unconstrain(u0, []float64{0.6, 0.75, 1}); err != nil {
		t.Fatal(err)
	}
	const T = 500
	_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	post, err := sgmcmc.Fit(context.Background(), m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, sgmcmc.FitSettings{Seed: 1, KSDDraws: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(post.Preparation.Path, "Laplace importance sampling") || !post.Preparation.Walk {
		t.Fatalf("path %q, walk %v: want Laplace importance sampling with uneven weights", post.Preparation.Path, post.Preparation.Walk)
	}
	d := m.Dims()
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	rm, rsd, ess := exactMoments(t, post, 3000, func(x []float64) float64 {
		k, err := m.Bind(x)
		if err != nil {
			return math.Inf(-1)
		}
		theta := make([]float64, 3)
		m.Constrain(theta, x)
		half := 6 * theta[1] / math.Sqrt(1-theta[0]*theta[0])
		f, err := pf.NewGridFilter(pf.Grid{Lo: -half, Hi: half, Nodes: 101})
		if err != nil {
			t.Error(err)
			return math.Inf(-1)
		}
		res, err := f.Run(context.Background(), k, x, d, data.Sequences[0], ssm.Full(T), nil, nil)
		if err != nil {
			return math.Inf(-1)
		}
		return res.LogLik + m.LogPrior(nil, x)
	}, func(theta, x []float64) { m.Constrain(theta, x) })
	names := m.ParamNames()
	checkExact(t, post, names, rm, rsd)
	t.Logf("reference ESS %.0f; %d iterations per chain; warnings %q; fit %v", ess, post.Iterations, post.Warnings, post.Total)
}

// TestCheckpointPseudoMarginal: the pseudo-marginal chains draw their
// estimates' random numbers from the chains' generators and keep the
// current state's estimate in their kernels, so a fit interrupted in its
// sampling and resumed from its checkpoint gives the same draws as the
// uninterrupted fit (MSV{D: 1}, 200 simulated rows, little persistence so
// that the weights are uneven and the chains pseudo-marginal).
func TestCheckpointPseudoMarginal(t *testing.T) {
	if testing.Short() {
		t.Skip("three whole fits: long test")
	}
	m := models.MSV{D: 1}
	u0 := make([]float64, 3)
	if err := m.Unconstrain(u0, []float64{0.6, 0.75, 1}); err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(200, u0, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	set := sgmcmc.FitSettings{Seed: 2, Chains: 2, KSDDraws: -1, MinIterations: -1, TargetESS: 100}
	whole, err := sgmcmc.Fit(context.Background(), m, data, set)
	if err != nil {
		t.Fatal(err)
	}
	if !whole.Preparation.Walk {
		t.Fatalf("the weights are even (%s): the chains are not pseudo-marginal", whole.Preparation.Path)
	}
	dir := t.TempDir()
	s := set
	s.Checkpoint = filepath.Join(dir, "ck")
	ctx, cancel := context.WithCancel(context.Background())
	s.Recorder = &stopAt{k: whole.Iterations / 2, cancel: cancel}
	part, err := sgmcmc.Fit(ctx, m, data, s)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if part.Iterations >= whole.Iterations {
		t.Fatalf("the interrupted fit ran %d iterations per chain of %d", part.Iterations, whole.Iterations)
	}
	s.Recorder = nil
	resumed, err := sgmcmc.Fit(context.Background(), m, data, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d iterations per chain; interrupted after %d", whole.Iterations, part.Iterations)
	if resumed.Iterations != whole.Iterations {
		t.Fatalf("resumed fit has %d iterations per chain, uninterrupted %d", resumed.Iterations, whole.Iterations)
	}
	for c := range whole.U {
		if !slices.Equal(resumed.U[c], whole.U[c]) {
			t.Errorf("chain %d: the resumed draws differ from the uninterrupted fit's", c)
		}
	}
}
