package models

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// DataWarnings returns what the data say against fitting model m with its
// default prior, one sentence per problem, or nil when nothing is amiss
// (CheckData splits them into warnings and the problems a fit should stop
// at):
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
//     x → −∞; over x ~ N(m, σ²) it integrates to e^{−m/2+σ²/8}/(√(2π)τ),
//     so with n₀ zeros the likelihood grows like e^{n₀σ²/8} (at φ = 0,
//     against σ^{−n₁} from the n₁ other values): the posterior is
//     improper under any prior with polynomial tails, and a fit finds at
//     most a local mode, with σ pulled up and φ down (on the DAX returns
//     2% zeros moved σ by 0.4 posterior sd, 10% by 1.6–3.2 sds); 1% or
//     more zeros get a warning, and from 12% CheckData
//     stops the fit, whose chains leave any local mode (GARCH and the
//     LGSSM have observation noise and are not affected);
//   - under the SVM and GARCH (any prior), 20 or more observed values none
//     of which is negative are levels (prices, an index) or absolute
//     returns, not the returns these models describe (symmetric about 0:
//     20 positive returns by chance have probability 2⁻²⁰);
//   - for any model, a value more than 100 robust sds (1.4826 × the
//     median absolute deviation) from the median is named with its place:
//     a data error or a missing-value code (−999, 9999), not a return;
//     the scale checks are then not made (one such value inflates the
//     sd). The median and MAD come from at most 2·10⁴ evenly strided
//     values.
//
// The scale checks (the second and third) apply to LGSSM, SVM and GARCH
// values (or pointers) with a nil Prior; the others to any prior, and the
// first and last to any model. The sd and variance pool every observed (non-NaN)
// value of every sequence and component, so DataWarnings reads all the
// data once (a memory-mapped sequence is paged in).
func DataWarnings(m ssm.Model, data ssm.Dataset) []string {
	var all []string
	for _, p := range dataProblems(m, data) {
		all = append(all, p.text)
	}
	return all
}

// CheckData returns DataWarnings(m, data) in two parts: the warnings, and
// an error wrapping ssm.ErrData that holds the problems the default prior
// of an LGSSM, SVM or GARCH cannot accommodate, when m uses it: a scale
// outside what it expects (sd outside [0.1, 10], or overflowing) and, for
// the SVM and GARCH, levels instead of returns. Under that prior such data
// give a posterior that reflects the prior, not the data, after many
// minutes (the SVM on the DAX returns ÷ 14, sd 0.073: φ 0.998 instead of
// 0.94, 2.5 minutes; ÷ 28: no convergence in 5 minutes), so sgmcmc.Fit
// stops at the error before any work. A model with a prior of its own is
// not scale-checked (its prior is the user's statement of the scale) and
// gets the levels problem as a warning. Under the SVM (any prior), 12% or more
// exact zeros stop the fit too: its posterior then has no mode that the
// chains stay near.
func CheckData(m ssm.Model, data ssm.Dataset) ([]string, error) {
	var warn, fatal []string
	noMode := false
	for _, p := range dataProblems(m, data) {
		if p.fatal {
			fatal = append(fatal, p.text)
			noMode = noMode || p.noMode
		} else {
			warn = append(warn, p.text)
		}
	}
	if fatal == nil {
		return warn, nil
	}
	why := "before minutes of work on a posterior that would reflect the default prior, not the data"
	if noMode {
		why = "before minutes of sampling a posterior that has no mode to find"
	}
	return warn, fmt.Errorf("%w: %s (the fit stops here, %s)", ssm.ErrData, strings.Join(fatal, "; "), why)
}

// problem is one sentence of DataWarnings; fatal ones make CheckData's
// error. noMode marks one whose posterior has no mode to find (not one
// that would reflect the prior).
type problem struct {
	text   string
	fatal  bool
	noMode bool
}

// svmZerosStop is the share of exact zeros from which CheckData stops an
// SVM fit. Measured on the DAX returns (examples/fit, seed 1, -time 4m):
// 5% and 10% zeros, evenly spaced or at random, fitted in 28–32 s with
// R-hat ≤ 1.009, sigma 0.75–3.2 posterior sds above the clean fit's;
// (a second random set of 10%: tau −1.2 sd, sigma −0.4); every 7th value
// 0 (14.3%) sampled for four minutes with R-hat 1.9 as
// the chains left the local mode; 15% at random fitted a local mode in
// 38 s; 30% either way stopped after 45–52 s of Newton steps with no mode.
const svmZerosStop = 0.12

// dataProblems is DataWarnings with CheckData's split.
func dataProblems(m ssm.Model, data ssm.Dataset) []problem {
	var n, mean, m2, first, big float64 // Welford's running mean and sum of squared deviations; the largest |y|
	constant := true
	zeros, negative := 0, 0
	lo := math.Inf(1)
	med, rsd := robustScale(data)
	inv := 1 / rsd
	var far outlier // the value farthest from med, in units of rsd
	for si, seq := range data.Sequences {
		for i, y := range seq.Y {
			if math.IsNaN(y) {
				continue
			}
			if z := math.Abs(y-med) * inv; z > outlierZ { // rsd NaN: never
				far.count++
				if z > far.z {
					far.z, far.y, far.seq, far.i, far.obs = z, y, si, i, seq.Obs
				}
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
	defaultPrior, garch := usesDefaultPrior(m)
	switch {
	case n == 0:
		return []problem{{text: "the data hold no observed values: the posterior is the prior's"}}
	case constant:
		warn := []problem{{text: "the data are constant: they say nothing about the dynamics (the posterior of the state's parameters is close to their prior) and the fit is unlikely to be meaningful"}}
		if isSVM(m) && zeros > 0 { // all zeros: the SVM's worst case, named
			warn = append(warn, problem{text: svmZeros(zeros, n)})
		}
		return warn
	}
	var warn []problem
	if far.count > 0 {
		warn = append(warn, problem{text: far.warning(med, rsd, len(data.Sequences) > 1)})
	}
	levels := negative == 0 && n >= minLevels && returnsModel(m)
	if levels { // the scale checks below assume returns: not said as well
		warn = append(warn, problem{fatal: defaultPrior, text: fmt.Sprintf("none of the %.0f observed values is negative (they run from %.4g to %.4g): the SVM and GARCH "+
			"model returns (symmetric about 0), so these look like prices, index levels or absolute returns; fit percent log returns "+
			"100*(log p_t - log p_{t-1}) instead (ssm.LogReturns)", n, lo, big)})
	}
	// The scale checks below assume returns and no gross errors: with
	// either, their advice (rescale) would mislead.
	if defaultPrior && !levels && far.count == 0 {
		v := m2 / (n - 1)
		sd := math.Sqrt(v)
		const prior = "the default priors (sigma^2, tau^2 ~ InvGamma(2, 0.5)) assume data on a unit scale (e.g. returns in percent)"
		switch {
		case math.IsInf(sd, 0) || math.IsNaN(sd):
			warn = append(warn, problem{fatal: true, text: fmt.Sprintf("the data's sd overflows (a value of %.3g): %s: rescale the data or remove the value", big, prior)})
		case sd < 0.1 || sd > 10:
			how := "returns in fractions: multiply by 100 (ssm.Scaled(y, 100))"
			if sd > 10 {
				how = "returns in basis points: divide by 100 (ssm.Scaled(y, 0.01))"
			}
			warn = append(warn, problem{fatal: true, text: fmt.Sprintf("the data's sd is %.3g, but %s, and under them the posterior reflects the prior: "+
				"rescale the data (%s) or give the model a prior of its own", sd, prior, how)})
		case garch && v > 2:
			warn = append(warn, problem{text: fmt.Sprintf("the data's variance is %.3g, but the default GARCH prior mu ~ Uniform(0, 2) bounds the "+
				"stationary variance of x_t by 2: rescale the data", v)})
		}
	}
	if isSVM(m) && float64(zeros) >= 0.01*n {
		warn = append(warn, problem{text: svmZeros(zeros, n), fatal: float64(zeros) >= svmZerosStop*n, noMode: true})
	}
	return warn
}

// outlierZ is the distance from the median, in robust sds, beyond which a
// value is taken for a data error: the largest daily return of the S&P 500
// since 1950 (−20.5% on 19 October 1987) is about 30 of them, a code such
// as −999 in a series of unit scale about 1000.
const outlierZ = 100

// outlierSample is the most values robustScale reads: the MAD of 2·10⁴
// values is within about 1% of the data's, and sorting them costs
// milliseconds.
const outlierSample = 20000

// robustScale returns the median of the observed values and 1.4826 times
// their median absolute deviation (the sd of a normal law), from at most
// outlierSample values at an even stride over the data (so that it costs
// nothing at T = 10⁸); NaN, NaN for fewer than minLevels of them, and a
// NaN scale when a quarter or more of them equal the median.
func robustScale(data ssm.Dataset) (med, rsd float64) {
	total := 0
	for _, seq := range data.Sequences {
		total += len(seq.Y)
	}
	stride := max(1, total/outlierSample)
	var x []float64
	for _, seq := range data.Sequences {
		for i := 0; i < len(seq.Y); i += stride {
			if v := seq.Y[i]; !math.IsNaN(v) {
				x = append(x, v)
			}
		}
	}
	if len(x) < minLevels {
		return math.NaN(), math.NaN()
	}
	slices.Sort(x)
	med = median(x)
	lo, _ := slices.BinarySearch(x, med)
	hi, _ := slices.BinarySearch(x, math.Nextafter(med, math.Inf(1)))
	if 4*(hi-lo) >= len(x) {
		// A quarter or more of the values equal the median (zeros of
		// stale prices): the MAD measures the gap to their neighbours,
		// not the spread, and would flag every other value.
		return med, math.NaN()
	}
	for i, v := range x {
		x[i] = math.Abs(v - med)
	}
	slices.Sort(x)
	return med, 1.4826 * median(x)
}

// median returns the median of the sorted x.
func median(x []float64) float64 {
	k := len(x) / 2
	if len(x)%2 == 1 {
		return x[k]
	}
	return 0.5 * (x[k-1] + x[k])
}

// outlier is the observed value farthest beyond outlierZ robust sds from
// the median (y, its distance z, where it is) and how many values lie
// beyond.
type outlier struct {
	y, z        float64
	seq, i, obs int
	count       int
}

// warning names the outlier and the codes that typically make one.
func (o outlier) warning(med, rsd float64, many bool) string {
	where := fmt.Sprintf("observation %d", o.i/o.obs)
	if o.obs > 1 {
		where += fmt.Sprintf(", component %d", o.i%o.obs)
	}
	if many {
		where = fmt.Sprintf("sequence %d, ", o.seq) + where
	}
	more := ""
	if o.count > 1 {
		more = fmt.Sprintf(" (and %d more values beyond %d)", o.count-1, outlierZ)
	}
	return fmt.Sprintf("%s (counting from 0) is %.6g, %.3g robust sds (1.4826 × MAD = %.3g) from the median %.3g%s: "+
		"a data error, a price among returns or a missing-value code such as -999 or 9999? Correct it or mark it missing (NA); "+
		"one such value dominates the likelihood", where, o.y, o.z, rsd, med, more)
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
	share := float64(zeros) / n
	if share >= svmZerosStop {
		return fmt.Sprintf("%d of %.0f observed values (%.1f%%) are exactly 0: under the SVM a zero has unbounded density as the volatility "+
			"goes to 0 (the likelihood grows like exp(zeros*sigma^2/8)), so the posterior is improper, and from about %.0f%% zeros the chains "+
			"leave any local mode (on the DAX returns with every 7th value 0 they ran four minutes without converging; with 30%% zeros there "+
			"was no mode at all): code the zeros as missing (NA) if they are not real returns, or fit a model with observation noise (GARCH, LGSSM)",
			zeros, n, 100*share, 100*svmZerosStop)
	}
	return fmt.Sprintf("%d of %.0f observed values (%.1f%%) are exactly 0 (rounded prices, stale quotes, closed markets?): under the SVM "+
		"a zero's density grows without bound as the volatility goes to 0, so each pulls sigma up and phi down, and the fit finds the "+
		"local mode near the data's; on the DAX returns 2%% zeros moved sigma by 0.4 posterior sd, 5%% moved a parameter by 0.6-1.3 sd "+
		"and 10%% by 1.2-3.2; "+
		"if they are not real returns, code them as missing (NA), or fit a model with observation noise (GARCH, LGSSM)",
		zeros, n, 100*share)
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

// CheckData implements ssm.DataChecker: CheckData(m, data).
func (m SVM) CheckData(data ssm.Dataset) ([]string, error) { return CheckData(m, data) }

// CheckData implements ssm.DataChecker: CheckData(m, data).
func (m LGSSM) CheckData(data ssm.Dataset) ([]string, error) { return CheckData(m, data) }

// CheckData implements ssm.DataChecker: CheckData(m, data).
func (m GARCH) CheckData(data ssm.Dataset) ([]string, error) { return CheckData(m, data) }
