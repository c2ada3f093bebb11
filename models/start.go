package models

import (
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// observedVariance returns the sample variance of the observed (non-NaN)
// values of data, or 1 when there are fewer than two or they are constant.
func observedVariance(data ssm.Dataset) float64 {
	var n, mean, m2 float64
	for _, seq := range data.Sequences {
		for _, y := range seq.Y {
			if math.IsNaN(y) {
				continue
			}
			n++
			d := y - mean
			mean += d / n
			m2 += d * (y - mean)
		}
	}
	if n < 2 || !(m2 > 0) || math.IsInf(m2, 0) {
		return 1
	}
	return m2 / (n - 1)
}

// Start implements ssm.Starter: φ = 0.5 and the data's variance v split
// evenly between the latent AR(1) and the noise, σ = τ = √(v/2).
func (m LGSSM) Start(u []float64, data ssm.Dataset) error {
	s := math.Sqrt(observedVariance(data) / 2)
	return m.Unconstrain(u, []float64{0.5, s, s})
}

// Start implements ssm.Starter: a persistent log-volatility (φ = 0.9,
// σ = 0.3) with τ at the data's sd.
func (m SVM) Start(u []float64, data ssm.Dataset) error {
	return m.Unconstrain(u, []float64{0.9, 0.3, math.Sqrt(observedVariance(data))})
}

// Start implements ssm.Starter: μ at half the data's variance (kept inside
// the prior's (0, 2)), φ = 0.9, λ = 0.5 and τ² at half the variance.
func (m GARCH) Start(u []float64, data ssm.Dataset) error {
	v := observedVariance(data)
	return m.Unconstrain(u, []float64{math.Min(v/2, 1.5), 0.9, 0.5, math.Sqrt(v / 2)})
}
