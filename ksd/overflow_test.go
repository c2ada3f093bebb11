package ksd_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
)

// TestOverflow: inputs of 1e200 never give NaN or ±Inf with a nil
// error: where the Stein kernel overflows float64 (the V statistic's
// diagonal s_d² with a score of 1e200 or more) every estimator returns
// ErrOverflow naming the input; where it does not (the U statistic, or a
// sample far from the others, whose kernel terms vanish) the result is
// finite. Scores of 1e100 at K = 1 match the closed form
// k0^d(x, x) = s_d² − 2β (u = C² = 1, δ = 0).
func TestOverflow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dim = 30, 2
	x := make([]float64, n*dim)
	score := make([]float64, n*dim)
	for i := range x {
		x[i] = rng.NormFloat64()
		score[i] = -x[i]
	}
	for _, c := range []struct {
		name  string
		input []float64
		idx   int
		val   float64
	}{
		{"score 1e200", score, 7, 1e200},
		{"score -1e300", score, 3, -1e300},
		{"x 1e200", x, 5, 1e200},
	} {
		saved := c.input[c.idx]
		c.input[c.idx] = c.val
		check := func(est string, r *ksd.Result, err error, mustOverflow bool) {
			t.Helper()
			if errors.Is(err, ksd.ErrOverflow) && strings.Contains(err.Error(), "e+") {
				return
			}
			finite := err == nil && !math.IsInf(r.KSD, 0)
			negative := false
			for _, v := range r.Squared {
				finite = finite && !math.IsNaN(v) && !math.IsInf(v, 0)
				negative = negative || v < 0
			}
			// KSD is NaN by design when some signed estimate is negative.
			finite = finite && (!math.IsNaN(r.KSD) || negative)
			if mustOverflow || !finite {
				t.Errorf("%s, %s: result %+v, err %v; want ErrOverflow", c.name, est, r, err)
			}
		}
		for _, stat := range []ksd.Statistic{ksd.V, ksd.U} {
			r, err := ksd.Compute(x, score, dim, &ksd.Settings{Statistic: stat})
			check(stat.String(), r, err, stat == ksd.V && c.input[0] == score[0])
		}
		r, err := ksd.ComputeLinear(x, score, dim, ksd.IMQ{})
		check("linear", r, err, false)
		c.input[c.idx] = saved
	}
	// Scores of 1e100 at a single point (K = 1, V statistic).
	one, err := ksd.Compute([]float64{0.3, -1}, []float64{1e100, -2e100}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	for d, s := range []float64{1e100, -2e100} {
		want := s*s + 1 // −2β = 1 for β = −½
		if math.Abs(one.Squared[d]-want) > 1e-12*want {
			t.Errorf("K = 1, coordinate %d: KSD² = %g, closed form %g", d, one.Squared[d], want)
		}
	}
}
