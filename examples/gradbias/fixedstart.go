package main

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// fixedVar is the variance of the fixed state prior N(0, 10) from which the
// authors' code (aicherc/sgmcmc_ssm_code: the LGSSM and SVM helpers'
// default forward message has precision I/10, and pf_wrapper draws x_0
// from it) starts every window, whatever θ.
const fixedVar = 10

// fixedInitial draws the state before a window from N(0, v): the
// pf.Settings.Initial of the authors' protocol for a scalar state. The
// filter then adds no initial-state score, as the prior does not depend
// on θ.
func fixedInitial(v float64) func(x []float64, rng *rand.Rand) {
	sd := math.Sqrt(v)
	return func(x []float64, rng *rand.Rand) {
		for i := range x {
			x[i] = sd * rng.NormFloat64()
		}
	}
}

// fixedStart is a scalar-state model whose state before the first
// observation (of a window) is N(0, Var) instead of the stationary law at
// θ: the model the authors' code filters. The particle filters of the
// study get the same law through pf.Settings.Initial (which keeps the
// kernel's guided proposal); fixedStart is what the deterministic grid
// filter (N = ∞) runs on, since it takes ν_0 from the kernel. Only
// ssm.Kernel's methods are promoted, so capabilities such as
// ssm.ExactScorer (which would use the stationary start) are hidden.
type fixedStart struct {
	ssm.Model
	Var float64
}

func newFixedStart(m ssm.Model, v float64) (fixedStart, error) {
	if d := m.Dims().State; d != 1 {
		return fixedStart{}, fmt.Errorf("fixed N(0, %g) start: state dimension %d, want 1", v, d)
	}
	return fixedStart{Model: m, Var: v}, nil
}

// Bind implements ssm.Model.
func (m fixedStart) Bind(u []float64) (ssm.Kernel, error) {
	k, err := m.Model.Bind(u)
	if err != nil {
		return nil, err
	}
	return fixedKernel{Kernel: k, v: m.Var, draw: fixedInitial(m.Var)}, nil
}

// fixedKernel is a kernel with ν_0 replaced by N(0, v).
type fixedKernel struct {
	ssm.Kernel
	v    float64
	draw func(x []float64, rng *rand.Rand)
}

// SampleInitial draws every row from N(0, v).
func (k fixedKernel) SampleInitial(x []float64, rng *rand.Rand) { k.draw(x, rng) }

// LogInitial is the log density of N(0, v).
func (k fixedKernel) LogInitial(x []float64) float64 {
	return -0.5*math.Log(2*math.Pi*k.v) - x[0]*x[0]/(2*k.v)
}

// AddScore adds the wrapped kernel's pairwise score; the initial term
// (prev nil) is 0 because N(0, v) does not depend on θ.
func (k fixedKernel) AddScore(h []float64, w float64, y, x, prev []float64) {
	if prev == nil {
		return
	}
	k.Kernel.AddScore(h, w, y, x, prev)
}
