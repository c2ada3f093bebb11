package models

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// DataWarnings returns what the data say against fitting model m with its
// default prior, one sentence per problem, or nil when nothing is amiss:
//
//   - a series whose observed values are all equal (or that has none)
//     carries no information about the dynamics of any model;
//   - the default priors of LGSSM, SVM and GARCH (σ², τ² ~ InvGamma(2,
//     0.5)) are not scale-free: they assume data on a unit scale, such as
//     returns in percent, and the data's sd should lie in [0.1, 10];
//   - GARCH's default μ ~ Uniform(0, 2) bounds the stationary variance of
//     x_t by 2, so the data's variance should not exceed 2;
//   - under the SVM (any prior) an observation of exactly 0 has a density
//     N(0; 0, τ²eˣ) that grows without bound as the log-volatility
//     x → −∞, so zeros pull σ up and φ down, and with many of them the
//     likelihood is dominated by that direction (on the DAX returns, 2%
//     zeros moved σ by 0.4 posterior sd, 10% by 3 sds, and at 20% the
//     chains left for σ ≈ 6, φ < 0); 1% or more zeros get a warning (GARCH and
//     the LGSSM have observation noise and are not affected);
//   - under the SVM and GARCH (any prior), 20 or more observed values none
//     of which is negative are levels (prices, an index) or absolute
//     returns, not the returns these models describe (symmetric about 0:
//     20 positive returns by chance have probability 2⁻²⁰).
//
// The scale checks apply to LGSSM, SVM and GARCH values (or pointers) with
// a nil Prior; a model with a prior of its own, or of another type, gets
// only the first check. The sd and variance pool every observed (non-NaN)
// value of every sequence and component, so DataWarnings reads all the
// data once (a memory-mapped sequence is paged in).
func DataWarnings(m ssm.Model, data ssm.Dataset) []string {
	var n, mean, m2, first, big float64 // Welford's running mean and sum of squared deviations; the largest |y|
	constant := true
	zeros, negative := 0, 0
	lo := math.Inf(1)
	for _, seq := range data.Sequences {
		for _, y := range seq.Y {
			if math.IsNaN(y) {
				continue
			}
			if y == 0 {
				zeros++
			}
			if y < 0 {
				negative++
			}
			lo = math.Min(lo, y)
			big = math.Max(big, math.Abs(y))
			if n++; n == 1 {
				first = y
			}
			constant = constant && y == first
			d := y - mean
			mean += d / n
			m2 += d * (y - mean)
		}
	}
	switch {
	case n == 0:
		return []string{"the data hold no observed values: the posterior is the prior's"}
	case constant:
		warn := []string{"the data are constant: they say nothing about the dynamics (the posterior of the state's parameters is close to their prior) and the fit is unlikely to be meaningful"}
		if isSVM(m) && zeros > 0 { // all zeros: the SVM's worst case, named
			warn = append(warn, svmZeros(zeros, n))
		}
		return warn
	}
	var warn []string
	levels := negative == 0 && n >= minLevels && returnsModel(m)
	if levels { // the scale checks below assume returns: not said as well
		warn = append(warn, fmt.Sprintf("none of the %.0f observed values is negative (they run from %.4g to %.4g): the SVM and GARCH "+
			"model returns (symmetric about 0), so these look like prices, index levels or absolute returns; fit percent log returns "+
			"100*(log p_t - log p_{t-1}) instead (ssm.LogReturns, or examples/fit -returns)", n, lo, big))
	}
	if defaultPrior, garch := usesDefaultPrior(m); defaultPrior && !levels {
		v := m2 / (n - 1)
		sd := math.Sqrt(v)
		switch {
		case math.IsInf(sd, 0) || math.IsNaN(sd):
			warn = append(warn, fmt.Sprintf("the data's sd overflows (a value of %.3g): the default priors (sigma^2, tau^2 ~ InvGamma(2, 0.5)) "+
				"assume data on a unit scale (e.g. returns in percent): rescale the data or remove the value", big))
		case sd < 0.1 || sd > 10:
			warn = append(warn, fmt.Sprintf("the data's sd is %.3g, but the default priors (sigma^2, tau^2 ~ InvGamma(2, 0.5)) "+
				"assume data on a unit scale (e.g. returns in percent): rescale the data, or the posterior reflects the prior", sd))
		case garch && v > 2:
			warn = append(warn, fmt.Sprintf("the data's variance is %.3g, but the default GARCH prior mu ~ Uniform(0, 2) bounds the "+
				"stationary variance of x_t by 2: rescale the data", v))
		}
	}
	if isSVM(m) && float64(zeros) >= 0.01*n {
		warn = append(warn, svmZeros(zeros, n))
	}
	return warn
}

// minLevels is the number of observed values from which a series without a
// negative value is taken for levels, not returns: returns symmetric about
// 0 are all positive by chance with probability 2^−20 < 10⁻⁶.
const minLevels = 20

// returnsModel reports whether m is an SVM or a GARCH (a value or a
// non-nil pointer): models of returns, whatever their prior.
func returnsModel(m ssm.Model) bool {
	switch m := m.(type) {
	case GARCH:
		return true
	case *GARCH:
		return m != nil
	}
	return isSVM(m)
}

// svmZeros is the warning for zeros of n observed values under the SVM.
func svmZeros(zeros int, n float64) string {
	return fmt.Sprintf("%d of %.0f observed values (%.1f%%) are exactly 0: under the SVM a zero has unbounded "+
		"density as the volatility goes to 0, so zeros pull sigma up and phi down (from 20%% on the chains can leave for "+
		"sigma of several units); if they are stale prices or closed markets, code them as missing (NA) or demean the returns",
		zeros, n, 100*float64(zeros)/n)
}

// isSVM reports whether m is a models.SVM or a non-nil pointer to one.
func isSVM(m ssm.Model) bool {
	switch m := m.(type) {
	case SVM:
		return true
	case *SVM:
		return m != nil
	}
	return false
}

// usesDefaultPrior reports whether m is an LGSSM, SVM or GARCH with its
// default prior, and whether it is a GARCH.
func usesDefaultPrior(m ssm.Model) (ok, garch bool) {
	switch m := m.(type) {
	case LGSSM:
		return m.Prior == nil, false
	case *LGSSM:
		return m != nil && m.Prior == nil, false
	case SVM:
		return m.Prior == nil, false
	case *SVM:
		return m != nil && m.Prior == nil, false
	case GARCH:
		return m.Prior == nil, true
	case *GARCH:
		return m != nil && m.Prior == nil, true
	}
	return false, false
}

var (
	_ ssm.DataChecker = SVM{}
	_ ssm.DataChecker = LGSSM{}
	_ ssm.DataChecker = GARCH{}
)

// CheckData implements ssm.DataChecker: DataWarnings(m, data).
func (m SVM) CheckData(data ssm.Dataset) []string { return DataWarnings(m, data) }

// CheckData implements ssm.DataChecker: DataWarnings(m, data).
func (m LGSSM) CheckData(data ssm.Dataset) []string { return DataWarnings(m, data) }

// CheckData implements ssm.DataChecker: DataWarnings(m, data).
func (m GARCH) CheckData(data ssm.Dataset) []string { return DataWarnings(m, data) }
