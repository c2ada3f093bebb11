package sgmcmc

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

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
	_, seq, err := base.Simulate(1000, truth, rand.New(rand.NewPCG(5, 1)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
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
