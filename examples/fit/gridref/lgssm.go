package main

import (
	"math"
	"math/rand/v2"
	"os"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// lgssmTruth is the parameter point (φ, σ, τ) at which -simulate draws
// LGSSM data.
var lgssmTruth = [3]float64{0.9, 0.7, 1}

// kalmanLogLik returns the exact log p(y | θ(u)) of the scalar LGSSM (x_0
// from the stationary law) by the models package's Kalman filter, or −Inf
// at invalid parameters.
func kalmanLogLik(seq ssm.Sequence, u []float64) float64 {
	k, err := models.LGSSM{}.Kalman(u)
	if err != nil {
		return math.Inf(-1)
	}
	ll, err := k.LogLik(seq, 0, seq.Len())
	if err != nil {
		return math.Inf(-1)
	}
	return ll
}

// simulateLGSSM draws T observations from the LGSSM at lgssmTruth with
// the given seed and writes them to path (one column, no header) in the
// format examples/fit reads.
func simulateLGSSM(path string, T int, seed uint64) (ssm.Sequence, error) {
	m := models.LGSSM{}
	u, err := m.Params(lgssmTruth[0], lgssmTruth[1], lgssmTruth[2])
	if err != nil {
		return ssm.Sequence{}, err
	}
	_, y, err := m.Simulate(T, u, rand.New(rand.NewPCG(seed, 0x5eed)))
	if err != nil {
		return ssm.Sequence{}, err
	}
	f, err := os.Create(path)
	if err != nil {
		return ssm.Sequence{}, err
	}
	if err := ssm.WriteCSV(f, y); err != nil {
		f.Close()
		return ssm.Sequence{}, err
	}
	return y, f.Close()
}
