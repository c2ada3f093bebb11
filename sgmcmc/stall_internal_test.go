package sgmcmc

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// skewScored is an LGSSM whose exact scorer's gradient is not its
// log-likelihood's: it adds c·(u − u0) spread over the windows, as a
// likelihood estimate whose Fisher-identity score is not its derivative
// (Laplace importance sampling) does. Its log-likelihood is the Kalman
// filter's.
type skewScored struct {
	models.LGSSM
	c  float64
	u0 []float64
	t  int
}

func (m skewScored) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	ll, err := m.LGSSM.ExactScore(grad, u, seq, w)
	if grad != nil {
		frac := float64(w.KeepEnd-w.KeepStart) / float64(m.t)
		for i := range grad {
			grad[i] += frac * m.c * (u[i] - m.u0[i])
		}
	}
	return ll, err
}

// TestNewtonStall: observedNewton on a scorer whose −J is indefinite and
// whose score is not its log posterior's gradient stops once a damped
// step gains under newtonStallGain, with fewer Jacobians than when its
// steps run on, and a log posterior (Kalman, plus the prior) within
// 20·newtonStallGain of theirs. (Both stop about 0.8 below the maximum,
// found here by Newton's method on the exact gradient: the skewed score
// points away from it.)
func TestNewtonStall(t *testing.T) {
	base := models.LGSSM{}
	truth := []float64{math.Atanh(0.9), math.Log(0.7), math.Log(1)}
	seq, lpost, mode := kalmanMode(t, base, truth)
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	best := lpost(nil, mode)
	// newton runs observedNewton from start and returns the Kalman log
	// posterior where it stops, the Jacobians it computed and its log.
	start := []float64{mode[0] - 0.05, mode[1] + 0.1, mode[2] - 0.05}
	newton := func(noStall bool) (float64, int, string) {
		var log bytes.Buffer
		m := skewScored{LGSSM: base, c: 150, u0: mode, t: seq.Len()}
		f, err := newFit(m, data, FitSettings{Seed: 1, Gradient: FullGradient, Progress: &log, Verbose: true, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.chooseFilter(truth); err != nil {
			t.Fatal(err)
		}
		f.noStall = noStall
		u, _, _, _, _, err := f.observedNewton(context.Background(), slices.Clone(start), 0)
		if err != nil {
			t.Fatal(err)
		}
		return lpost(nil, u), strings.Count(log.String(), "observed information not positive definite"), log.String()
	}
	stop, jStop, logStop := newton(false)
	on, jOn, logOn := newton(true)
	t.Logf("maximum %.4f; stopped at %.4f after %d Jacobians; run on: %.4f after %d\n%s%s", best, stop, jStop, on, jOn, logStop, logOn)
	if !strings.Contains(logStop, "stalled") || jStop >= jOn {
		t.Errorf("the damped steps did not stop early as stalled (%d Jacobians against %d)", jStop, jOn)
	}
	if on-stop > 20*newtonStallGain {
		t.Errorf("stopping lost %.4f of log posterior against running on: want within %g", on-stop, 20*newtonStallGain)
	}
}

// solve3 solves the 3×3 system a x = b by Cramer's rule.
func solve3(a, b []float64) []float64 {
	det := func(m []float64) float64 {
		return m[0]*(m[4]*m[8]-m[5]*m[7]) - m[1]*(m[3]*m[8]-m[5]*m[6]) + m[2]*(m[3]*m[7]-m[4]*m[6])
	}
	d := det(a)
	x := make([]float64, 3)
	for j := range 3 {
		m := append([]float64(nil), a...)
		for i := range 3 {
			m[i*3+j] = b[i]
		}
		x[j] = det(m) / d
	}
	return x
}

// kalmanMode simulates 1,000 rows of base at truth and returns them, the
// Kalman log posterior (its gradient into g when not nil) and its
// maximum, found by Newton's method on the exact gradient with central
// differences for the Hessian.
func kalmanMode(t *testing.T, base models.LGSSM, truth []float64) (ssm.Sequence, func(g, u []float64) float64, []float64) {
	t.Helper()
	_, seq, err := base.Simulate(1000, truth, rand.New(rand.NewPCG(5, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const p = 3
	lpost := func(g, u []float64) float64 {
		if g != nil {
			clear(g)
		}
		ll, err := base.ExactScore(g, u, seq, ssm.Full(seq.Len()))
		if err != nil {
			t.Fatal(err)
		}
		prior := make([]float64, p)
		lp := base.LogPrior(prior, u)
		if g != nil {
			for i := range g {
				g[i] += prior[i]
			}
		}
		return ll + lp
	}
	// The maximum: Newton on the exact gradient.
	mode := append([]float64(nil), truth...)
	for range 30 {
		g := make([]float64, p)
		lpost(g, mode)
		h := make([]float64, p*p)
		for k := range p {
			up, um := append([]float64(nil), mode...), append([]float64(nil), mode...)
			up[k] += 1e-5
			um[k] -= 1e-5
			gp, gm := make([]float64, p), make([]float64, p)
			lpost(gp, up)
			lpost(gm, um)
			for i := range p {
				h[i*p+k] = -(gp[i] - gm[i]) / 2e-5
			}
		}
		step := solve3(h, g)
		for i := range mode {
			mode[i] += step[i]
		}
	}
	return seq, lpost, mode
}

// stretched is an LGSSM whose first coordinate is w₀ = u₀/k: its
// log posterior's curvature along w₀ is k² times the LGSSM's, so its
// information matrix has a condition number above 10⁵ for k = 300.
type stretched struct {
	models.LGSSM
	k float64
}

func (m stretched) inner(w []float64) []float64 {
	u := slices.Clone(w)
	u[0] *= m.k
	return u
}

func (m stretched) ExactScore(grad, w []float64, seq ssm.Sequence, win ssm.Window) (float64, error) {
	ll, err := m.LGSSM.ExactScore(grad, m.inner(w), seq, win)
	if grad != nil {
		grad[0] *= m.k
	}
	return ll, err
}

func (m stretched) LogPrior(grad, w []float64) float64 {
	lp := m.LGSSM.LogPrior(grad, m.inner(w))
	if grad != nil {
		grad[0] *= m.k
	}
	return lp
}

// TestNewtonMarquardt: on an exact scorer with a positive definite but
// badly conditioned information (condition number above 10⁵),
// observedNewton reaches the Kalman mode in at most four Jacobians from
// about 5 posterior sds away. The damping it used to add, μI with μ at
// least 10⁻³ of the largest eigenvalue, shrank each step along the weak
// directions about a hundredfold, and twenty Jacobians did not get there.
func TestNewtonMarquardt(t *testing.T) {
	const k = 300
	base := models.LGSSM{}
	truth := []float64{math.Atanh(0.9), math.Log(0.7), math.Log(1)}
	seq, _, mode := kalmanMode(t, base, truth)
	m := stretched{LGSSM: base, k: k}
	var log bytes.Buffer
	f, err := newFit(m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, FitSettings{Seed: 1, Gradient: FullGradient, Progress: &log, Verbose: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	w := []float64{truth[0] / k, truth[1], truth[2]}
	if err := f.chooseFilter(w); err != nil {
		t.Fatal(err)
	}
	start := []float64{(mode[0] - 0.2) / k, mode[1] + 0.3, mode[2] - 0.2}
	got, _, h, _, _, err := f.observedNewton(context.Background(), start, 0)
	if err != nil {
		t.Fatal(err)
	}
	jacobians := strings.Count(log.String(), "Newton step with the observed information")
	t.Logf("%d Jacobians\n%s", jacobians, log.String())
	if h == nil {
		t.Fatalf("observedNewton did not converge (%d Jacobians)", jacobians)
	}
	var eig mat.EigenSym
	if !eig.Factorize(h, false) {
		t.Fatal("eigendecomposition failed")
	}
	vals := eig.Values(nil)
	if c := vals[len(vals)-1] / vals[0]; c < 1e5 {
		t.Errorf("condition number %.3g: want above 1e5 for this test to mean anything", c)
	}
	// Distances in posterior sds: √(dᵀ H d).
	want := []float64{mode[0] / k, mode[1], mode[2]}
	dist := distH(h, got, want)
	startDist := distH(h, start, want)
	t.Logf("start %.2f posterior sds from the mode, end %.4f", startDist, dist)
	if startDist < 3 {
		t.Errorf("start only %.2f posterior sds from the mode: want at least 3", startDist)
	}
	if dist > 0.05 || jacobians > 4 {
		t.Errorf("ended %.3f posterior sds from the mode after %d Jacobians: want within 0.05 in at most 4", dist, jacobians)
	}
}

// distH returns √((a − b)ᵀ H (a − b)).
func distH(h *mat.SymDense, a, b []float64) float64 {
	d := make([]float64, len(a))
	for i := range d {
		d[i] = a[i] - b[i]
	}
	v := mat.NewVecDense(len(d), d)
	return math.Sqrt(mat.Inner(v, h, v))
}

// counted is skewScored counting its evaluations on values only (the log
// posteriors observedNewton tries).
type counted struct {
	skewScored
	values *atomic.Int64
}

func (m counted) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	if grad == nil {
		m.values.Add(1)
	}
	return m.skewScored.ExactScore(grad, u, seq, w)
}

// TestNewtonDampingCap: where the information is positive definite but
// the score is not the log posterior's gradient (skewScored with c < 0,
// whose zero is not the maximum), observedNewton stops trying once the
// damping passes pdMaxDamping, at a point whose log posterior is above the
// start's and within 1 of the maximum, after 12 log posteriors at most
// (26 without the cap: its last step, damped by 10¹², gained 0.000).
func TestNewtonDampingCap(t *testing.T) {
	base := models.LGSSM{}
	truth := []float64{math.Atanh(0.9), math.Log(0.7), math.Log(1)}
	seq, lpost, mode := kalmanMode(t, base, truth)
	u0 := []float64{mode[0] + 0.3, mode[1] - 0.3, mode[2] + 0.3}
	var values atomic.Int64
	m := counted{skewScored{LGSSM: base, c: -300, u0: u0, t: seq.Len()}, &values}
	var log bytes.Buffer
	f, err := newFit(m, ssm.Dataset{Sequences: []ssm.Sequence{seq}}, FitSettings{Seed: 1, Gradient: FullGradient, Progress: &log, Verbose: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.chooseFilter(truth); err != nil {
		t.Fatal(err)
	}
	start := []float64{mode[0] - 0.05, mode[1] + 0.1, mode[2] - 0.05}
	values.Store(0)
	got, _, _, _, _, err := f.observedNewton(context.Background(), slices.Clone(start), 0)
	if err != nil {
		t.Fatal(err)
	}
	n := values.Load()
	best, from, at := lpost(nil, mode), lpost(nil, start), lpost(nil, got)
	t.Logf("%d log posteriors; log posterior: maximum %.4f, start %.4f, end %.4f\n%s", n, best, from, at, log.String())
	if strings.Contains(log.String(), "not positive definite") {
		t.Fatal("the information was indefinite: the test does not reach the positive definite damping")
	}
	if !strings.Contains(log.String(), "damped Newton step") {
		t.Fatal("no damped step: the test does not reach the damping")
	}
	if n > 12 {
		t.Errorf("%d log posteriors: want at most 12 (the cap at μ = %g ends a failed step after at most 8 tries; without it, 26 here)", n, pdMaxDamping)
	}
	if !(at > from) || best-at > 1 {
		t.Errorf("log posterior %.4f at the end, %.4f at the start, maximum %.4f: want above the start and within 1 of the maximum", at, from, best)
	}
}
