package sgmcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/mh"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// banana is the log density of u₀ ~ N(0, 1), u₁ | u₀ ~ N(u₀²/2, 1/4),
// shifted by d in u₁: E u₀² = 1, E u₁ = 1/2 + d, Var u₁ = 1/2 + 1/4.
func banana(d float64) EstimatorFunc {
	return func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		e := u[1] - d - 0.5*u[0]*u[0]
		if grad != nil {
			grad[0] = -u[0] + 4*e*u[0]
			grad[1] = -4 * e
		}
		return -0.5*u[0]*u[0] - 2*e*e, nil
	}
}

// surrogatePoints draws n points from q and returns them with their log
// densities under target and their log importance weights.
func surrogatePoints(t *testing.T, q *tmix.Mixture, target Estimator, n int) (xs [][]float64, lps, lw []float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	s, z := make([]float64, 2), make([]float64, 2)
	var g [2]float64
	for range n {
		x := make([]float64, 2)
		q.Draw(x, s, rng)
		lp, err := target.Grad(context.Background(), g[:], x, nil)
		if err != nil {
			t.Fatal(err)
		}
		xs, lps, lw = append(xs, x), append(lps, lp), append(lw, lp-q.LogDensity(x, z))
	}
	return xs, lps, lw
}

// TestSurrogateExact samples the banana with surrogate transitions only
// (no Langevin step, no gradient) and checks that the draws are exact:
// E u₀², E u₁ and Var u₁ within 4 standard errors (bulk ESS) of 1, 1/2
// and 3/4, with a surrogate fitted to the banana itself (it must shorten
// the holding time of q, a t that fits it badly, and raise the
// acceptance rate of independence steps from q by more than 0.15), with
// one fitted to a banana shifted by 1 in u₁ (a wrong surrogate costs
// acceptance, not exactness), and with independence steps from q alone.
func TestSurrogateExact(t *testing.T) {
	if testing.Short() {
		t.Skip("four chain runs checked against moments: long test")
	}
	target := banana(0)
	q := tmix.New([]float64{1}, [][]float64{{0, 0.5}}, [][]float64{{1.3, 0, 0, 1.2}})
	accept := map[string]float64{}
	for _, c := range []struct {
		name  string
		shift float64
		none  bool
	}{{"fitted to the target", 0, false}, {"fitted to a shifted target", 1, false}, {"no surrogate (independence steps from q)", 0, true}} {
		xs, lps, lw := surrogatePoints(t, q, banana(c.shift), 400)
		sur, err := surrogate.Fit(q, xs, lps, lw, nil, surFitSeed, surFitStream, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: length %.2g, %d points, holding time %.2f (q: %.2f)", c.name, sur.Ell, len(sur.Alpha), sur.Hold, sur.HoldProposal)
		if c.shift == 0 && !(sur.Hold < 0.8*sur.HoldProposal) {
			t.Errorf("%s: holding time %.2f, q's %.2f: the surrogate should shorten it", c.name, sur.Hold, sur.HoldProposal)
		}
		if c.none {
			sur = nil
		}
		counted := &countingTarget{est: target}
		trace, acc := surrogateChains(t, counted, q, sur, []float64{0, 0.5}, 10000, 5)
		stats := make([][][]float64, 3)
		for _, ch := range trace.Chains {
			var s [3][]float64
			for i := 200; i < ch.Len(); i++ {
				a, b := ch.U[2*i], ch.U[2*i+1]
				s[0] = append(s[0], a*a)
				s[1] = append(s[1], b)
				s[2] = append(s[2], (b-0.5)*(b-0.5))
			}
			for k := range s {
				stats[k] = append(stats[k], s[k])
			}
		}
		want := [3]float64{1, 0.5, 0.75}
		names := [3]string{"E u₀²", "E u₁", "Var u₁"}
		for k, cs := range stats {
			m, se := meanSE(cs)
			t.Logf("%s: %s %.4f ± %.4f (exact %.2f)", c.name, names[k], m, se, want[k])
			if math.Abs(m-want[k]) > 4*se {
				t.Errorf("%s: %s = %.4f, want %.2f within 4 SE (%.4f)", c.name, names[k], m, want[k], 4*se)
			}
		}
		t.Logf("%s: surrogate transitions accepted %.2f; %d gradients, %d log posteriors", c.name, acc, counted.grads, counted.logPosts)
		if counted.grads > len(trace.Chains) {
			t.Errorf("%s: %d gradients: surrogate transitions need none (one per chain's start at most)", c.name, counted.grads)
		}
		accept[c.name] = acc
	}
	// π̃'s defensive share εq is accepted as q is; the rest nearly always.
	if a, b := accept["fitted to the target"], accept["no surrogate (independence steps from q)"]; !(a > b+0.15) {
		t.Errorf("acceptance %.2f with the fitted surrogate, %.2f with q alone: the surrogate should raise it by more than 0.15", a, b)
	}
}

// TestSurrogateFit checks the fit where log π − log q is a quadratic in
// the whitened coordinates: the quadratic takes all of it (the Gaussian
// process is left nothing: r − (log π − log q) is constant to 10⁻³ at
// fresh points inside the design's radius), and the defensive mixture
// integrates to one under q (LogZ).
func TestSurrogateFit(t *testing.T) {
	q := tmix.New([]float64{1}, [][]float64{{0, 0}}, [][]float64{{1.5, 0, 0.3, 1.2}})
	quad := EstimatorFunc(func(_ context.Context, _, u []float64, _ *rand.Rand) (float64, error) {
		var z [2]float64
		lq := q.LogDensity(u, z[:])
		return lq + 0.3*u[0] - 0.2*u[0]*u[0] + 0.1*u[0]*u[1] - 0.15*u[1]*u[1], nil
	})
	xs, lps, lw := surrogatePoints(t, q, quad, 300)
	sur, err := surrogate.Fit(q, xs, lps, lw, nil, surFitSeed, surFitStream, 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := *sur
	raw.Defensive = 0
	w := surrogate.NewWork(2)
	rng := rand.New(rand.NewPCG(7, 8))
	z := make([]float64, 2)
	var first float64
	for i := range 50 {
		u := []float64{rng.NormFloat64(), rng.NormFloat64()}
		if math.Sqrt(tmix.Mahalanobis2(u, sur.Mean, sur.Chol, z)) > sur.Radius {
			continue
		}
		lp, _ := quad.Grad(context.Background(), nil, u, nil)
		d := raw.R(u, q.LogDensity(u, z), w) - (lp - q.LogDensity(u, z))
		if i == 0 {
			first = d
		}
		if math.Abs(d-first) > 1e-3 {
			t.Errorf("r(%v) − (log π − log q) = %.6f, at the first point %.6f: not constant", u, d, first)
		}
	}
	// E_q[(1 − ε)e^{r − LogZ} + ε] = 1 by fresh draws from q.
	s := make([]float64, 2)
	v := make([]float64, 2)
	sum := 0.0
	const n = 20000
	for range n {
		q.Draw(v, s, rng)
		sum += math.Exp(sur.R(v, q.LogDensity(v, s), w))
	}
	t.Logf("E_q[π̃/q] = %.4f over %d draws; holding time %.3f (q: %.3f)", sum/n, n, sur.Hold, sur.HoldProposal)
	if math.Abs(sum/n-1) > 0.03 {
		t.Errorf("E_q[π̃/q] = %.4f, want 1 within 0.03", sum/n)
	}
}

// TestLongestStay counts runs of identical consecutive draws per chain.
func TestLongestStay(t *testing.T) {
	us := [][]float64{
		{0, 0, 1, 1, 1, 1, 2, 2},       // draws (0,0) (1,1) (1,1) (2,2): a stay of 2
		{5, 5, 5, 5, 5, 5, 6, 6, 6, 6}, // (5,5)×3 then (6,6)×2
		{1, 2, 1, 3, 1, 2},             // no two equal in a row (same first coordinate only)
	}
	if n, c := longestStay(us, 2); n != 3 || c != 1 {
		t.Errorf("longestStay = %d in chain %d, want 3 in chain 1", n, c)
	}
	if n, _ := longestStay(us[2:], 2); n != 1 {
		t.Errorf("longestStay of distinct draws = %d, want 1", n)
	}
	if n, _ := longestStay([][]float64{nil}, 2); n != 0 {
		t.Errorf("longestStay of no draws = %d, want 0", n)
	}
}

// ridgePrior and ridgeLogLik make a posterior with the shape of GARCH's
// (μ, φ) ridge: θ = logistic(u₀) has a uniform prior (in u₀ the logit's
// Jacobian, tails e^{−|u₀|}) and a Gaussian log-likelihood N(θ; 0.7, 0.2²)
// that stays finite at the bound θ = 1, and u₁ | θ ~ N(2θ, 1/4) (a flat
// prior on u₁). So θ's posterior is that normal truncated to (0, 1)
// (E θ = 0.67242, E u₁ = 2 E θ), and u₀'s right tail is the Jacobian's,
// along a ridge that is straight in (θ, u₁) and bends in u.
func ridgePrior(u []float64) float64 {
	return u[0] - 2*softplus(u[0])
}

func ridgeLogLik(u []float64) float64 {
	th := 1 / (1 + math.Exp(-u[0]))
	d, e := (th-0.7)/0.2, u[1]-2*th
	return -0.5*d*d - 2*e*e
}

// ridgeMean is E θ, the mean of N(0.7, 0.2²) truncated to (0, 1).
const ridgeMean = 0.6724222068303695

func softplus(x float64) float64 {
	if x > 30 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// TestSurrogatePriorTail fits the surrogate to draws from a t proposal
// on the ridge posterior, on the prior and θ (PriorBase) and in u alone,
// and checks (1) that on the prior and θ the surrogate follows π along
// the ridge into u₀'s exponential tail (log π − log π̃ at u₀ = 3…8 within
// 1 nat of its level in the bulk, and closer than the u-space fit, whose
// quadratic bends away from the ridge); (2) that chains on π with it are
// exact: E θ and E u₁ within 4 standard errors of their values.
func TestSurrogatePriorTail(t *testing.T) {
	q := tmix.New([]float64{1}, [][]float64{{0.8, 1.35}}, [][]float64{{1.1, 0, 0.3, 0.55}})
	target := EstimatorFunc(func(_ context.Context, _, u []float64, _ *rand.Rand) (float64, error) {
		return ridgePrior(u) + ridgeLogLik(u), nil
	})
	xs, lps, lw := surrogatePoints(t, q, target, 400)
	z := make([]float64, 2)
	w := surrogate.NewWork(2)
	gap := func(sur *surrogate.Surrogate, u []float64) float64 {
		lq := q.LogDensity(u, z)
		lt := math.Log((1-sur.Defensive)*math.Exp(sur.R(u, lq, w)-sur.LogZ)+sur.Defensive) + lq
		if sur.Defensive == 0 {
			lt = sur.R(u, lq, w) + lq
		}
		return ridgePrior(u) + ridgeLogLik(u) - lt
	}
	worst := map[bool]float64{}
	var withPrior *surrogate.Surrogate
	for _, prior := range []bool{false, true} {
		var base *surrogate.Base
		if prior {
			base = &surrogate.Base{LogPrior: ridgePrior, Constrain: func(th, u []float64) { th[0], th[1] = 1/(1+math.Exp(-u[0])), u[1] }}
		}
		sur, err := surrogate.Fit(q, xs, lps, lw, base, surFitSeed, surFitStream, 2)
		if err != nil {
			t.Fatal(err)
		}
		raw := *sur
		raw.Defensive = 0 // the fit itself, without q's share
		// The bulk's level: the mean gap at the points within 1.5 nats
		// of the best.
		top, bulk, nb := slices.Max(lps), 0.0, 0
		for i, x := range xs {
			if lps[i] > top-1.5 {
				bulk += gap(&raw, x)
				nb++
			}
		}
		bulk /= float64(nb)
		var gaps []float64
		for _, u0 := range []float64{3, 4, 5, 6, 8} {
			d := gap(&raw, []float64{u0, 2 / (1 + math.Exp(-u0))}) - bulk
			gaps = append(gaps, d)
			worst[prior] = math.Max(worst[prior], math.Abs(d))
		}
		t.Logf("prior-and-θ fit %v: design radius %.2f, log π − log π̃ on the ridge at u₀ = 3, 4, 5, 6, 8 minus the bulk's: %.2f", prior, sur.Radius, gaps)
		if prior {
			withPrior = sur
		}
	}
	if worst[true] > 1 {
		t.Errorf("with the prior-and-θ fit, log π − log π̃ in the tail is up to %.2f nats off the bulk's, want ≤ 1", worst[true])
	}
	if !(worst[true] < worst[false]) {
		t.Errorf("the prior-and-θ fit should follow the tail better: worst gap %.2f with it, %.2f in u alone", worst[true], worst[false])
	}

	if testing.Short() {
		t.Skip("the chains' exactness check runs without -short")
	}
	trace, acc := surrogateChains(t, target, q, withPrior, []float64{2, 1}, 8000, 9)
	var ths, us [][]float64
	for _, ch := range trace.Chains {
		var th, u []float64
		for i := 200; i < ch.Len(); i++ {
			th = append(th, 1/(1+math.Exp(-ch.U[2*i])))
			u = append(u, ch.U[2*i+1])
		}
		ths, us = append(ths, th), append(us, u)
	}
	for _, c := range []struct {
		name string
		x    [][]float64
		want float64
	}{{"E θ", ths, ridgeMean}, {"E u₁", us, 2 * ridgeMean}} {
		m, se := meanSE(c.x)
		t.Logf("%s = %.4f ± %.4f (exact %.4f)", c.name, m, se, c.want)
		if math.Abs(m-c.want) > 4*se {
			t.Errorf("%s = %.4f, want %.4f within 4 SE (%.4f)", c.name, m, c.want, 4*se)
		}
	}
	t.Logf("surrogate transitions accepted %.2f", acc)
}

// surrogateChains runs 4 chains of surrogate transitions only (sur nil:
// independence steps from q) on target for iters iterations from start
// (chain c's first coordinate shifted by 0.1c) and returns their trace
// and the transitions' acceptance rate.
func surrogateChains(t *testing.T, target Estimator, q *tmix.Mixture, sur *surrogate.Surrogate, start []float64, iters int, seed uint64) (*Trace, float64) {
	t.Helper()
	const chains = 4
	ms := make([]*mh.Kernel, chains)
	newEst := func(c int) Estimator {
		ms[c] = mh.New(target, []float64{1, 0, 0, 1}, q, 2)
		ms[c].Retarget(q, sur, 1)
		return ms[c]
	}
	trace := &Trace{}
	_, err := Run(context.Background(), newEst, func(c int) Method { return ms[c] },
		func(c int, u []float64) error { copy(u, start); u[0] += 0.1 * float64(c); return nil }, 2,
		Settings{Iterations: iters, Schedule: Constant(0.5), Chains: chains, Seed: seed, Recorder: trace})
	if err != nil {
		t.Fatal(err)
	}
	acc, prop := 0, 0
	for _, m := range ms {
		_, _, ia, ip, _ := m.Counts()
		acc += ia
		prop += ip
	}
	return trace, float64(acc) / float64(prop)
}

// meanSE returns the mean of the chains' values and its standard error
// by their bulk ESS.
func meanSE(cs [][]float64) (m, se float64) {
	n, m2 := 0.0, 0.0
	for _, ch := range cs {
		for _, v := range ch {
			n++
			m += v
			m2 += v * v
		}
	}
	m /= n
	return m, math.Sqrt((m2/n - m*m) / ksd.BulkESS(cs))
}
