package ksd

import (
	"cmp"
	"math"
	"slices"

	"gonum.org/v1/gonum/dsp/fourier"
	"gonum.org/v1/gonum/stat/distuv"
)

// Chain diagnostics for one scalar quantity. chains[c][t] is draw t of chain c;
// all chains must have the same length (a programmer error otherwise: the
// functions panic).
//
// NaN semantics, shared by every function here: a NaN or ±Inf draw anywhere
// gives NaN; so do no chains and chains too short for the estimator (ESS, MCSE
// and the R-hats: fewer than 4 draws per chain; BulkESS: fewer than 8, so that
// each half has 4). When every draw has the same value, ESS
// and BulkESS return 0 (a stuck sampler carries no information, and 0 sorts as
// the worst value in a minimum over parameters), MCSE returns 0, and the R-hats
// return NaN (0/0). When every chain is constant but the chains differ, R-hat is
// +Inf.

// checkChains returns the number of chains and draws per chain, and whether
// every draw is finite. It panics on unequal lengths.
func checkChains(chains [][]float64) (m, n int, finite bool) {
	m = len(chains)
	if m == 0 {
		return 0, 0, true
	}
	n = len(chains[0])
	finite = true
	for _, c := range chains {
		if len(c) != n {
			panic("ksd: chains have unequal lengths")
		}
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				finite = false
			}
		}
	}
	return m, n, finite
}

func isConstant(chains [][]float64) bool {
	v0 := chains[0][0]
	for _, c := range chains {
		for _, v := range c {
			if v != v0 {
				return false
			}
		}
	}
	return true
}

// ESS returns the effective sample size of the chain mean, pooled over chains
// as in Stan and blackjax (Vehtari et al. 2021, Geyer 1992). With per-chain
// autocovariances γ_c(t) (biased, divided by n), W = mean_c γ_c(0)·n/(n−1),
// var⁺ = mean_c γ_c(0) + B/n where B/n is the sample variance of the chain means,
// the combined autocorrelation is ρ(t) = 1 − (W − mean_c γ_c(t))/var⁺. Pairs
// ρ(2k)+ρ(2k+1) are summed while positive (initial positive sequence) and
// forced to be non-increasing (initial monotone sequence), giving
// τ = −1 + 2 Σ ρ(t) and ESS = m n / τ, with τ floored at 1/log10(m n) as Stan
// does (ESS can exceed m n for antithetic chains). The chains are not split;
// see BulkESS for the rank-normalised split version. Autocovariances use an
// FFT for n >= 64. See the package's NaN semantics above.
func ESS(chains [][]float64) float64 {
	m, n, finite := checkChains(chains)
	if !finite || m == 0 || n < 4 {
		return math.NaN()
	}
	if isConstant(chains) {
		return 0
	}
	return essCore(chains, m, n)
}

func essCore(chains [][]float64, m, n int) float64 {
	ac := newAutocov(n)
	meanAcov := make([]float64, n)
	means := make([]float64, m)
	for c, x := range chains {
		means[c] = ac.compute(x)
		for t, v := range ac.out {
			meanAcov[t] += v / float64(m)
		}
	}
	fn := float64(n)
	meanVar := meanAcov[0] * fn / (fn - 1)
	varPlus := meanAcov[0]
	if m > 1 {
		varPlus += sampleVar(means)
	}
	rho := make([]float64, n)
	rhoAt := func(t int) float64 { return 1 - (meanVar-meanAcov[t])/varPlus }

	// Geyer's initial positive sequence over pairs (ρ(t), ρ(t+1)), t even.
	even, odd := 1.0, rhoAt(1)
	rho[0], rho[1] = even, odd
	t := 0
	for t < n-3 && even+odd > 0 {
		t += 2
		even, odd = rhoAt(t), rhoAt(t+1)
		if even+odd >= 0 {
			rho[t], rho[t+1] = even, odd
		}
	}
	maxT := t
	// The last even lag is kept if positive: Stan's "improved estimate".
	if even > 0 {
		rho[maxT] = even
	}
	// Geyer's initial monotone sequence.
	for t = 2; t <= maxT-2; t += 2 {
		if prev := rho[t-2] + rho[t-1]; rho[t]+rho[t+1] > prev {
			rho[t] = prev / 2
			rho[t+1] = rho[t]
		}
	}
	total := float64(m) * fn
	tau := -1.0 + rho[maxT]
	for _, r := range rho[:maxT] {
		tau += 2 * r
	}
	tau = math.Max(tau, 1/math.Log10(total))
	return total / tau
}

// sampleVar returns the unbiased sample variance of x (len(x) >= 2).
func sampleVar(x []float64) float64 {
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return ss / float64(len(x)-1)
}

// autocov computes biased autocovariances γ(t) = (1/n) Σ_{i<n−t} (x_i − x̄)(x_{i+t} − x̄),
// directly for short series and by a zero-padded FFT otherwise.
type autocov struct {
	n     int
	out   []float64
	fft   *fourier.FFT // nil for the direct method
	pad   []float64
	coeff []complex128
}

// fftMin is the series length from which the O(n log n) FFT beats the O(n²) sum.
const fftMin = 64

func newAutocov(n int) *autocov {
	a := &autocov{n: n, out: make([]float64, n)}
	if n >= fftMin {
		// Padding to at least 2n removes the circular wrap-around.
		l := 1
		for l < 2*n {
			l <<= 1
		}
		a.fft = fourier.NewFFT(l)
		a.pad = make([]float64, l)
		a.coeff = make([]complex128, l/2+1)
	}
	return a
}

// compute fills a.out with the autocovariances of x and returns the mean of x.
func (a *autocov) compute(x []float64) float64 {
	n := a.n
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	if a.fft == nil {
		for t := range n {
			s := 0.0
			for i := 0; i+t < n; i++ {
				s += (x[i] - mean) * (x[i+t] - mean)
			}
			a.out[t] = s / float64(n)
		}
		return mean
	}
	clear(a.pad)
	for i, v := range x {
		a.pad[i] = v - mean
	}
	a.fft.Coefficients(a.coeff, a.pad)
	for i, z := range a.coeff {
		a.coeff[i] = complex(real(z)*real(z)+imag(z)*imag(z), 0)
	}
	a.fft.Sequence(a.pad, a.coeff)
	// Sequence is unnormalised: divide by the padded length, then by n.
	scale := 1 / (float64(len(a.pad)) * float64(n))
	for t := range n {
		a.out[t] = a.pad[t] * scale
	}
	return mean
}

// MCSE returns the Monte Carlo standard error of the mean of all draws,
// sd/√ESS, with sd the sample standard deviation of the pooled draws and ESS
// from ESS. It is 0 for constant draws; see the NaN semantics above.
func MCSE(chains [][]float64) float64 {
	m, n, finite := checkChains(chains)
	if !finite || m == 0 || n < 4 {
		return math.NaN()
	}
	if isConstant(chains) {
		return 0
	}
	pooled := make([]float64, 0, m*n)
	for _, c := range chains {
		pooled = append(pooled, c...)
	}
	return math.Sqrt(sampleVar(pooled) / essCore(chains, m, n))
}

// splitChains returns the first and second halves of every chain as 2m
// sub-slices of the input (no copy). The middle draw of an odd-length chain is
// dropped, as in Stan.
func splitChains(chains [][]float64) [][]float64 {
	out := make([][]float64, 0, 2*len(chains))
	for _, c := range chains {
		h := len(c) / 2
		out = append(out, c[:h], c[len(c)-h:])
	}
	return out
}

// rhat returns the potential scale reduction sqrt(((n−1)/n W + B/n)/W) of
// equal-length chains (m >= 2, n >= 2).
func rhat(chains [][]float64) float64 {
	m, n := len(chains), len(chains[0])
	means := make([]float64, m)
	w := 0.0
	for c, x := range chains {
		s := 0.0
		for _, v := range x {
			s += v
		}
		means[c] = s / float64(n)
		w += sampleVar(x) / float64(m)
	}
	bOverN := sampleVar(means)
	if w == 0 {
		if bOverN == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	fn := float64(n)
	return math.Sqrt(((fn-1)/fn*w + bOverN) / w)
}

// SplitRhat returns the classic split R-hat (Gelman et al. 2013): each chain is
// cut in half and the potential scale reduction of the 2m halves is returned.
// Values near 1 indicate agreement; note that R-hat can fall slightly below 1
// by chance. See the NaN semantics above.
func SplitRhat(chains [][]float64) float64 {
	m, n, finite := checkChains(chains)
	if !finite || m == 0 || n < 4 {
		return math.NaN()
	}
	return rhat(splitChains(chains))
}

// RankRhat returns the rank-normalised split R-hat of Vehtari et al. (2021),
// the maximum of the bulk R-hat (split R-hat of the rank-normalised draws, which
// detects different locations) and the tail R-hat (the same after folding the
// draws about their median, |θ − median|, which detects different scales).
// Vehtari et al. recommend trusting the draws only when it is below 1.01. See
// the NaN semantics above.
func RankRhat(chains [][]float64) float64 {
	m, n, finite := checkChains(chains)
	if !finite || m == 0 || n < 4 {
		return math.NaN()
	}
	split := splitChains(chains)
	bulk := rhat(zScale(split))
	med := median(split)
	folded := make([][]float64, len(split))
	for c, x := range split {
		folded[c] = make([]float64, len(x))
		for i, v := range x {
			folded[c][i] = math.Abs(v - med)
		}
	}
	tail := rhat(zScale(folded))
	if math.IsNaN(bulk) || math.IsNaN(tail) {
		return math.NaN()
	}
	return math.Max(bulk, tail)
}

// BulkESS returns ESS computed on the rank-normalised split chains (Vehtari et
// al. 2021), Stan's default ESS; it is robust to heavy tails and penalises
// chains whose halves disagree. See the NaN semantics above.
func BulkESS(chains [][]float64) float64 {
	m, n, finite := checkChains(chains)
	if !finite || m == 0 || n < 8 {
		// Each half needs at least 4 draws for the Geyer sums.
		return math.NaN()
	}
	if isConstant(chains) {
		return 0
	}
	z := zScale(splitChains(chains))
	return essCore(z, len(z), len(z[0]))
}

// zScale returns the rank-normalised draws Φ⁻¹((r − 3/8)/(S + 1/4)), where r is
// the rank of a draw among all S pooled draws (ties get their average rank).
func zScale(chains [][]float64) [][]float64 {
	n := len(chains[0])
	s := len(chains) * n
	type draw struct {
		v    float64
		c, t int
	}
	all := make([]draw, 0, s)
	for c, x := range chains {
		for t, v := range x {
			all = append(all, draw{v, c, t})
		}
	}
	// Ties are averaged below, so the order among equal values is irrelevant.
	slices.SortFunc(all, func(a, b draw) int { return cmp.Compare(a.v, b.v) })
	out := make([][]float64, len(chains))
	for c := range out {
		out[c] = make([]float64, n)
	}
	for lo := 0; lo < s; {
		hi := lo + 1
		for hi < s && all[hi].v == all[lo].v {
			hi++
		}
		// Ranks lo+1..hi share their average.
		r := float64(lo+1+hi) / 2
		z := distuv.UnitNormal.Quantile((r - 0.375) / (float64(s) + 0.25))
		for _, d := range all[lo:hi] {
			out[d.c][d.t] = z
		}
		lo = hi
	}
	return out
}

// median returns the median of all draws (mean of the middle two for an even count).
func median(chains [][]float64) float64 {
	var all []float64
	for _, c := range chains {
		all = append(all, c...)
	}
	slices.Sort(all)
	k := len(all)
	if k%2 == 1 {
		return all[k/2]
	}
	return (all[k/2-1] + all[k/2]) / 2
}
