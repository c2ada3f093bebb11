package sgmcmc_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/models"
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
	// The reference: self-normalised importance sampling in u.
	p := len(u0)
	var us [][]float64
	for _, c := range post.U {
		for i := 0; i+p <= len(c); i += p {
			us = append(us, c[i:i+p])
		}
	}
	mean, cov := momentsOf(us, p)
	var ch mat.Cholesky
	if !ch.Factorize(mat.NewSymDense(p, cov)) {
		t.Fatal("the fit's covariance is not positive definite")
	}
	var l mat.TriDense
	ch.LTo(&l)
	rng := rand.New(rand.NewPCG(7, 8))
	const n, nu = 20000, 5.0
	names := lg.ParamNames()
	theta := make([]float64, p)
	sw, lws := 0.0, make([]float64, n)
	thetas := make([][]float64, n)
	z, x := make([]float64, p), make([]float64, p)
	top := math.Inf(-1)
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
		q := 0.0
		for j := range p {
			x[j] = mean[j]
			for k := 0; k <= j; k++ {
				x[j] += s * l.At(j, k) * z[k]
			}
		}
		// log t density up to a constant: −(ν+p)/2 log(1 + |L⁻¹(x−m)|²/(1.5²ν)).
		for j := range z {
			q += z[j] * z[j]
		}
		q = q * s * s / (1.5 * 1.5)
		logq := -(nu + float64(p)) / 2 * math.Log(1+q/nu)
		ll, err := lg.ExactScore(nil, x, y, ssm.Full(T))
		lws[i] = math.Inf(-1)
		if err == nil {
			lws[i] = ll + lg.LogPrior(nil, x) - logq
		}
		top = math.Max(top, lws[i])
		lg.Constrain(theta, x)
		thetas[i] = append([]float64(nil), theta...)
	}
	s2 := 0.0
	rm, rm2 := make([]float64, p), make([]float64, p)
	for i := range n {
		w := math.Exp(lws[i] - top)
		sw += w
		s2 += w * w
		for j, v := range thetas[i] {
			rm[j] += w * v
			rm2[j] += w * v * v
		}
	}
	ess := sw * sw / s2
	if ess < 1000 {
		t.Fatalf("the reference's importance sampling has ESS %.0f of %d", ess, n)
	}
	for j, r := range post.Summary() {
		m := rm[j] / sw
		sd := math.Sqrt(rm2[j]/sw - m*m)
		z, ratio := (r.Mean-m)/sd, r.SD/sd
		t.Logf("%s: fit %.4f ± %.4f, exact %.4f ± %.4f (z %.2f, sd ratio %.2f)", names[j], r.Mean, r.SD, m, sd, z, ratio)
		if math.Abs(z) > 0.25 || ratio < 0.8 || ratio > 1.25 || r.Rhat > 1.01 {
			t.Errorf("%s: mean %.2f reference sds off, sd ratio %.2f, R-hat %.3f", names[j], z, ratio, r.Rhat)
		}
	}
	t.Logf("reference ESS %.0f; %d iterations per chain; warnings %q", ess, post.Iterations, post.Warnings)
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
