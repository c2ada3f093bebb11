package models_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// gapWindows are windows over a series of 300 rows whose rows [0, 100)
// (a late start) and [150, 220) (a 70-row gap) are missing.
var gapWindows = []ssm.Window{
	{Start: 0, End: 300, KeepStart: 0, KeepEnd: 300},     // everything
	{Start: 0, End: 60, KeepStart: 0, KeepEnd: 50},       // inside the leading gap, initial term kept
	{Start: 0, End: 100, KeepStart: 0, KeepEnd: 100},     // the whole leading gap
	{Start: 0, End: 130, KeepStart: 10, KeepEnd: 120},    // ends after the leading gap
	{Start: 160, End: 210, KeepStart: 165, KeepEnd: 205}, // inside the 70-row gap
	{Start: 140, End: 240, KeepStart: 145, KeepEnd: 230}, // straddles it
}

func punchGaps(seq ssm.Sequence) {
	for t := 0; t < seq.Len(); t++ {
		if t < 100 || (t >= 150 && t < 220) {
			for i := range seq.At(t) {
				seq.At(t)[i] = math.NaN()
			}
		}
	}
}

// TestExactScoreLongGaps checks LGSSM and LGSSMd (D = 2) ExactScore on
// windows with long runs of missing rows against the dense Gaussian
// answer (kfDenseLogLik, kfBruteStatistic: conditioning the joint normal
// of all states on the observed components, independent of the Kalman
// code), to a relative 1e-9; on windows with no observation at all the
// log-likelihood is exactly 0 and the statistic is the expected
// transition (and initial) score under the stationary law, which is 0.
func TestExactScoreLongGaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	u1, y1 := lgxData(t, rng, 0.9, 0.7, 1.1, 300, 0)
	md := models.LGSSMd{D: 2}
	u2 := lgdRandomU(t, rng, 2, 0.85)
	_, y2 := lgdData(t, rng, md, u2, 300, 0)
	for _, c := range []struct {
		name string
		m    kfExactModel
		u    []float64
		seq  ssm.Sequence
	}{{"lgssm", models.LGSSM{}, u1, y1}, {"lgssmd", md, u2, y2}} {
		punchGaps(c.seq)
		k, err := c.m.Kalman(c.u)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for _, w := range gapWindows {
			got := make([]float64, len(c.u))
			ll, err := c.m.ExactScore(got, c.u, c.seq, w)
			if err != nil {
				t.Fatalf("%s window %+v: %v", c.name, w, err)
			}
			if !c.seq.Observed(w.Start, w.End) {
				if ll != 0 {
					t.Errorf("%s window %+v: log-likelihood %v, want exactly 0", c.name, w, ll)
				}
				for i, v := range got {
					if math.Abs(v) > 1e-9 {
						t.Errorf("%s window %+v, %s: statistic %v, want 0 (stationary transitions)", c.name, w, c.m.ParamNames()[i], v)
					}
				}
			}
			if want := kfDenseLogLik(t, k, c.seq, w.Start, w.End); kfRelErr(ll, want) > 1e-10 {
				t.Errorf("%s window %+v: log-lik %.15g, dense %.15g", c.name, w, ll, want)
			}
			want := kfBruteStatistic(t, c.m, c.u, c.seq, w)
			for i := range got {
				e := kfRelErr(got[i], want[i])
				worst = math.Max(worst, e)
				if e > 1e-9 {
					t.Errorf("%s window %+v, %s: exact %.15g, dense %.15g", c.name, w, c.m.ParamNames()[i], got[i], want[i])
				}
			}
		}
		t.Logf("%s: worst relative error vs dense conditioning %.2g", c.name, worst)
	}
}

// TestExactScoreHugeObservation: an observation whose square overflows
// float64 (|y| ≥ 1.35e154) is a clear ErrData naming its row, for the log
// likelihood and the score, never NaN or ±Inf with a nil error; 1e100 is
// finite (a log-likelihood of about −5e199).
func TestExactScoreHugeObservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	u, y := lgxData(t, rng, 0.9, 0.7, 1.1, 50, 0)
	md := models.LGSSMd{D: 2}
	u2 := lgdRandomU(t, rng, 2, 0.8)
	_, y2 := lgdData(t, rng, md, u2, 50, 0)
	for _, c := range []struct {
		name string
		m    kfExactModel
		u    []float64
		seq  ssm.Sequence
		obs  int
	}{{"lgssm", models.LGSSM{}, u, y, 1}, {"lgssmd", md, u2, y2, 2}} {
		for _, big := range []float64{1.3e154, 1e155, -1e200, math.MaxFloat64} {
			seq := ssm.Sequence{Obs: c.obs, Y: append([]float64(nil), c.seq.Y...)}
			seq.Y[30*c.obs] = big
			w := ssm.Full(50)
			for _, grad := range [][]float64{nil, make([]float64, len(c.u))} {
				ll, err := c.m.ExactScore(grad, c.u, seq, w)
				finite := err == nil && !math.IsInf(ll, 0) && !math.IsNaN(ll)
				for _, v := range grad {
					finite = finite && !math.IsInf(v, 0) && !math.IsNaN(v)
				}
				named := errors.Is(err, ssm.ErrData) && strings.Contains(err.Error(), "row 30")
				// Up to about 1.3e154 the answer may still be finite; beyond,
				// y² overflows and only the error is right.
				if !named && (math.Abs(big) > 1.4e154 || !finite) {
					t.Errorf("%s y = %g (grad %v): ll %v, err %v; want ErrData naming row 30", c.name, big, grad != nil, ll, err)
				}
			}
		}
		seq := ssm.Sequence{Obs: c.obs, Y: append([]float64(nil), c.seq.Y...)}
		seq.Y[30*c.obs] = 1e100
		grad := make([]float64, len(c.u))
		ll, err := c.m.ExactScore(grad, c.u, seq, ssm.Full(50))
		if err != nil || math.IsInf(ll, 0) || math.IsNaN(ll) || ll > -1e190 {
			t.Errorf("%s y = 1e100: ll %v, err %v; want a finite −huge log-likelihood", c.name, ll, err)
		}
		for i, v := range grad {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				t.Errorf("%s y = 1e100: score component %d = %v", c.name, i, v)
			}
		}
	}
}
