package ssm

import (
	"fmt"
	"math"
)

// LogReturns returns the log returns scale·(log y_t − log y_{t−1}),
// t = 1..T−1, of a sequence of prices or index levels, component by
// component: T−1 rows of s.Obs components. Stochastic volatility and
// GARCH models describe returns (zero-mean, symmetric), not the levels a
// price download holds; scale 100 gives returns in percent, the unit the
// default priors of models.SVM and models.GARCH assume.
//
// A missing price (NaN) makes both returns that use it missing: the
// models have no term for the sum of two days' returns, and a return over
// a gap spans several steps of the state. A price that is not positive
// (and finite) is an error naming its row and component (wrapping
// ErrData), as are a sequence of fewer than two rows and a scale that is
// not positive and finite. The input is only read; the result is newly
// allocated (8·(T−1)·Obs bytes, also for a memory-mapped input).
func LogReturns(s Sequence, scale float64) (Sequence, error) {
	if err := s.Validate(0); err != nil {
		return Sequence{}, err
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return Sequence{}, fmt.Errorf("%w: log-return scale %v must be positive and finite", ErrData, scale)
	}
	T, d := s.Len(), s.Obs
	if T < 2 {
		return Sequence{}, fmt.Errorf("%w: log returns need at least 2 rows of prices, got %d", ErrData, T)
	}
	for i, v := range s.Y {
		if !(v > 0) && !math.IsNaN(v) || math.IsInf(v, 0) {
			return Sequence{}, fmt.Errorf("%w: observation %d, component %d is %v: log returns need positive prices (fit returns as they are, without taking log returns)", ErrData, i/d, i%d, v)
		}
	}
	r := Sequence{Obs: d, Y: make([]float64, (T-1)*d)}
	for i := range r.Y {
		// NaN in either price propagates through the difference.
		r.Y[i] = scale * (math.Log(s.Y[i+d]) - math.Log(s.Y[i]))
	}
	return r, nil
}

// Scaled returns a copy of s with every observation multiplied by f (a
// missing value stays missing): returns in fractions times 100 are the
// percent the default priors of models.LGSSM, SVM and GARCH assume. A
// factor that is not positive and finite is an error wrapping ErrData.
// The input is only read (it may be memory-mapped).
func Scaled(s Sequence, f float64) (Sequence, error) {
	if !(f > 0) || math.IsInf(f, 0) {
		return Sequence{}, fmt.Errorf("%w: scale factor %v must be positive and finite", ErrData, f)
	}
	y := make([]float64, len(s.Y))
	for i, v := range s.Y {
		y[i] = f * v
	}
	s.Y = y
	return s, nil
}

// Demeaned returns a copy of s with each component's mean over its
// observed values subtracted (a missing value stays missing), and those
// means: the deviations from a level that a model without an intercept
// (models.LGSSM's state is an AR(1) about 0) can describe. A component
// with no observed value is left as it is (mean NaN). The input is only
// read (it may be memory-mapped).
func Demeaned(s Sequence) (Sequence, []float64) {
	d := max(s.Obs, 1)
	sum, cnt := make([]float64, d), make([]float64, d)
	for i, v := range s.Y {
		if !math.IsNaN(v) {
			sum[i%d] += v
			cnt[i%d]++
		}
	}
	means := make([]float64, d)
	for k := range means {
		means[k] = math.NaN()
		if cnt[k] > 0 {
			means[k] = sum[k] / cnt[k]
		}
	}
	y := make([]float64, len(s.Y))
	for i, v := range s.Y {
		y[i] = v
		if m := means[i%d]; !math.IsNaN(m) {
			y[i] = v - m
		}
	}
	s.Y = y
	return s, means
}
