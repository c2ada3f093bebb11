package models

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Volatilities of the volatility models (ssm.Volatility), used by state and
// forecast summaries.

var (
	_ ssm.Volatility = (*svmKernel)(nil)
	_ ssm.Volatility = (*svmGuided)(nil)
	_ ssm.Volatility = (*garchKernel)(nil)
)

// Volatility implements ssm.Volatility for the SVM: τ·e^{x_t/2}, the sd of
// y_t given x_t.
func (k *svmKernel) Volatility(x []float64) float64 {
	ar1CheckRow("SVM.Volatility", x)
	return k.tau * math.Exp(0.5*x[0])
}

// Volatility implements ssm.Volatility for GARCH: σ_t = √(σ_t²), read from
// the state row (the conditional sd of x_t given the past).
func (k *garchKernel) Volatility(x []float64) float64 {
	if len(x) != garchState {
		panic(fmt.Sprintf("models: GARCH.Volatility: len(x) = %d, want %d", len(x), garchState))
	}
	return math.Sqrt(x[garchS2])
}
