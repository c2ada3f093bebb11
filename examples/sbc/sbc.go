package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// drawMarginal draws one value of a natural parameter from its prior
// marginal. A truncated Beta (GARCH's φ and λ) is drawn by rejection from
// the untruncated one, which is exactly the truncated law.
func drawMarginal(m models.Marginal, rng *rand.Rand) (float64, error) {
	switch d := m.(type) {
	case models.Beta:
		b := distuv.Beta{Alpha: d.A, Beta: d.B, Src: rng}
		trunc := d.TruncLo != 0 || d.TruncHi != 0
		for range 100000 {
			v := d.Lo + (d.Hi-d.Lo)*b.Rand()
			if trunc && (v <= d.TruncLo || v >= d.TruncHi) {
				continue
			}
			return v, nil
		}
		return 0, fmt.Errorf("no draw of %+v inside its truncation in 100000 tries", d)
	case models.InvGammaSq:
		// v² ~ InvGamma(A, B) ⇔ B/v² ~ Gamma(A, 1).
		g := distuv.Gamma{Alpha: d.A, Beta: 1, Src: rng}.Rand()
		return math.Sqrt(d.B / g), nil
	case models.Uniform:
		return d.Lo + (d.Hi-d.Lo)*rng.Float64(), nil
	case models.Normal:
		return d.Mu + d.Sigma*rng.NormFloat64(), nil
	}
	return 0, fmt.Errorf("cannot draw from a prior marginal of type %T", m)
}

// drawPrior draws the natural parameters θ from prior and returns them with
// u = u(θ). A value on the boundary of its transform's support (which
// happens only through floating-point rounding, e.g. a Beta draw of exactly
// 1) is drawn again.
func drawPrior(prior models.Independent, rng *rand.Rand) (theta, u []float64, err error) {
	if len(prior.Marginals) != len(prior.Transforms) {
		return nil, nil, errors.New("prior: marginals and transforms differ in number")
	}
	theta = make([]float64, len(prior.Marginals))
	u = make([]float64, len(prior.Marginals))
	for i, m := range prior.Marginals {
		ok := false
		for range 1000 {
			v, err := drawMarginal(m, rng)
			if err != nil {
				return nil, nil, err
			}
			if x, in := prior.Transforms[i].Inverse(v); in && !math.IsInf(x, 0) {
				theta[i], u[i], ok = v, x, true
				break
			}
		}
		if !ok {
			return nil, nil, fmt.Errorf("prior marginal %d: no draw inside its transform's support", i)
		}
	}
	return theta, u, nil
}

// thinIndices returns L indices evenly spaced over n pooled draws: draw
// floor((j+½)·n/L) for j = 0..L−1. It needs n ≥ L.
func thinIndices(n, L int) ([]int, error) {
	if L <= 0 || n < L {
		return nil, fmt.Errorf("cannot thin %d draws to %d", n, L)
	}
	idx := make([]int, L)
	for j := range idx {
		idx[j] = int((float64(j) + 0.5) * float64(n) / float64(L))
	}
	return idx, nil
}

// rank returns the number of draws below truth, 0..len(draws); a draw equal
// to truth counts as below with probability ½ (rng decides), so that ties,
// which a continuous posterior makes improbable, keep the rank uniform.
func rank(truth float64, draws []float64, rng *rand.Rand) int {
	r := 0
	for _, d := range draws {
		switch {
		case d < truth:
			r++
		case d == truth && rng.IntN(2) == 0:
			r++
		}
	}
	return r
}

// binCounts bins ranks 0..L into B bins of (L+1)/B consecutive ranks each.
func binCounts(ranks []int, L, B int) ([]int, error) {
	if B <= 1 || (L+1)%B != 0 {
		return nil, fmt.Errorf("%d bins do not divide the %d possible ranks 0..%d", B, L+1, L)
	}
	w := (L + 1) / B
	c := make([]int, B)
	for _, r := range ranks {
		if r < 0 || r > L {
			return nil, fmt.Errorf("rank %d outside 0..%d", r, L)
		}
		c[r/w]++
	}
	return c, nil
}

// chiSquare returns Pearson's statistic of the bin counts against equal
// expected counts and its p-value from the χ² law with B−1 degrees of
// freedom (NaN, NaN without counts).
func chiSquare(counts []int) (stat, p float64) {
	n := 0
	for _, c := range counts {
		n += c
	}
	if n == 0 || len(counts) < 2 {
		return math.NaN(), math.NaN()
	}
	e := float64(n) / float64(len(counts))
	for _, c := range counts {
		d := float64(c) - e
		stat += d * d / e
	}
	return stat, distuv.ChiSquared{K: float64(len(counts) - 1)}.Survival(stat)
}

// binomialBand returns the central 99% interval [lo, hi] of a bin's count
// under uniform ranks: Binomial(n, 1/B), the 0.005 and 0.995 quantiles.
func binomialBand(n, B int) (lo, hi int) {
	b := distuv.Binomial{N: float64(n), P: 1 / float64(B)}
	lo, hi = 0, n
	for k := 0; k <= n; k++ {
		if b.CDF(float64(k)) >= 0.005 {
			lo = k
			break
		}
	}
	for k := 0; k <= n; k++ {
		if b.CDF(float64(k)) >= 0.995 {
			hi = k
			break
		}
	}
	return lo, hi
}

// meanRank returns the mean of rank/L and its z-score against ½ under
// uniform ranks (variance ((L+1)²−1)/(12L²) per rank): z > 0 means the
// truth sits high among the draws, i.e. the posterior is too low.
func meanRank(ranks []int, L int) (m, z float64) {
	if len(ranks) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, r := range ranks {
		m += float64(r) / float64(L)
	}
	m /= float64(len(ranks))
	sd := math.Sqrt((float64((L+1)*(L+1)) - 1) / (12 * float64(L*L)) / float64(len(ranks)))
	return m, (m - 0.5) / sd
}

// writeHistogram writes one parameter's rank histogram as text: a row per
// bin with its ranks, a bar and the count, the expected count and the 99%
// band of a bin's count under uniformity.
func writeHistogram(w io.Writer, name string, counts []int, L int, stat, p float64) {
	n := 0
	for _, c := range counts {
		n += c
	}
	B := len(counts)
	lo, hi := binomialBand(n, B)
	fmt.Fprintf(w, "%s: chi2 = %.2f (%d df), p = %.3g; expected %.1f per bin, 99%% band [%d, %d]\n",
		name, stat, B-1, p, float64(n)/float64(B), lo, hi)
	wd := (L + 1) / B
	for b, c := range counts {
		mark := ""
		if c < lo || c > hi {
			mark = "  <- outside the 99% band"
		}
		fmt.Fprintf(w, "  %3d-%-3d | %-*s %d%s\n", b*wd, (b+1)*wd-1, hi+1, strings.Repeat("#", c), c, mark)
	}
}
