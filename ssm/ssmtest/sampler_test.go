package ssmtest

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// toyGuided is toyLGSSM with its locally optimal proposal
// q(x|prev, y) = N((τ²φ prev + σ²y)/(σ²+τ²), σ²τ²/(σ²+τ²)) and weight
// log N(y | φ prev, σ²+τ²), written independently of package models. The
// bug fields plant one error each.
type toyGuided struct {
	toyLGSSM
	meanBug   bool // Propose draws around a mean shifted by 0.3 sd
	sdBug     bool // Propose draws with 1.5 times the sd
	weightBug bool // the weight omits the transition's normalising constant
}

type toyGuidedKernel struct {
	toyLGSSMKernel
	g toyGuided
}

func (m toyGuided) Bind(u []float64) (ssm.Kernel, error) {
	k, err := m.toyLGSSM.Bind(u)
	if err != nil {
		return nil, err
	}
	return toyGuidedKernel{k.(toyLGSSMKernel), m}, nil
}

func (k toyGuidedKernel) q(prev, y float64) (mean, v float64) {
	if math.IsNaN(y) {
		return k.phi * prev, k.s2
	}
	pv := k.s2 + k.t2
	return (k.t2*k.phi*prev + k.s2*y) / pv, k.s2 * k.t2 / pv
}

func (k toyGuidedKernel) Propose(x, logw, prev, y []float64, rng *rand.Rand) {
	for i := range x {
		mean, v := k.q(prev[i], y[0])
		sd := math.Sqrt(v)
		if k.g.meanBug {
			mean += 0.3 * sd
		}
		if k.g.sdBug {
			sd *= 1.5
		}
		x[i] = mean + sd*rng.NormFloat64()
		if !math.IsNaN(y[0]) {
			logw[i] += logNorm(y[0], k.phi*prev[i], k.s2+k.t2)
		}
		if k.g.weightBug {
			logw[i] += 0.5 * math.Log(2*math.Pi*k.s2)
		}
	}
}

func (k toyGuidedKernel) LogProposal(x, prev, y []float64) float64 {
	mean, v := k.q(prev[0], y[0])
	return logNorm(x[0], mean, v)
}

var _ ssm.Proposer = toyGuidedKernel{}

var samplerU = []float64{0.8, -0.3, 0.2} // φ = 0.66, σ = 0.74, τ = 1.22

// TestCheckSamplerCorrect: correct samplers pass, with and without a
// StateCompleter, at several parameter points.
func TestCheckSamplerCorrect(t *testing.T) {
	for i, u := range [][]float64{samplerU, {2, 0.5, -1}, {-0.5, -1, 0.7}} {
		if err := CheckSampler(toyLGSSM{}, u, 4000, rand.New(rand.NewPCG(uint64(i), 7))); err != nil {
			t.Errorf("toyLGSSM at %v: %v", u, err)
		}
		if err := CheckProposal(toyGuided{}, u, 4000, rand.New(rand.NewPCG(uint64(i), 8))); err != nil {
			t.Errorf("toyGuided at %v: %v", u, err)
		}
	}
	if err := CheckSampler(toyMean{}, []float64{0.7}, 4000, rand.New(rand.NewPCG(1, 9))); err != nil {
		t.Errorf("toyMean: %v", err)
	}
	Simulator(t, toyGuided{}, samplerU, 2000, rand.New(rand.NewPCG(2, 9)))
	ms, err := SamplerMoments(toyLGSSM{}, samplerU, 4000, rand.New(rand.NewPCG(3, 9)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3*(2*3+1) { // 3 pieces × (score and information per parameter + 1 Stein)
		t.Errorf("%d moments, want 21", len(ms))
	}
	for _, m := range ms {
		if math.IsNaN(m.Mean) || math.IsNaN(m.SE) {
			t.Errorf("%v", m)
		}
	}
}

// TestCheckSamplerCatchesBugs: each planted sampler bug fails the check
// that covers it, and the others pass. (ssmtest.Model, the score,
// transform and prior checks, passes every one of these models: the
// densities and scores are right, only the samplers are wrong.)
func TestCheckSamplerCatchesBugs(t *testing.T) {
	for _, c := range []struct {
		name string
		m    ssm.Model
	}{
		{"SampleEmission returns 3y", toyLGSSM{emissionBug: true}},
		{"SampleTransition uses phi²", toyLGSSM{transitionBug: true}},
		{"SampleInitial not stationary", toyLGSSM{initialBug: true}},
	} {
		rel, err := CheckScore(c.m, samplerU, 50, rand.New(rand.NewPCG(1, 2)))
		if err != nil || rel > ScoreTol {
			t.Errorf("%s: the score check fails (%v, %v); the bug is meant to be in the sampler only", c.name, rel, err)
		}
		err = CheckSampler(c.m, samplerU, 4000, rand.New(rand.NewPCG(4, 5)))
		if !errors.Is(err, ErrSampler) {
			t.Errorf("%s: CheckSampler gives %v, want ErrSampler", c.name, err)
		} else {
			t.Logf("%s caught:\n%v", c.name, err)
		}
	}
	for _, c := range []struct {
		name string
		m    toyGuided
	}{
		{"proposal mean shifted by 0.3 sd", toyGuided{meanBug: true}},
		{"proposal sd 1.5 times too large", toyGuided{sdBug: true}},
		{"weight off by a constant", toyGuided{weightBug: true}},
	} {
		if err := CheckSampler(c.m, samplerU, 4000, rand.New(rand.NewPCG(4, 5))); err != nil {
			t.Errorf("%s: the plain samplers are right but CheckSampler gives %v", c.name, err)
		}
		err := CheckProposal(c.m, samplerU, 4000, rand.New(rand.NewPCG(4, 6)))
		if !errors.Is(err, ErrSampler) {
			t.Errorf("%s: CheckProposal gives %v, want ErrSampler", c.name, err)
		} else {
			t.Logf("%s caught:\n%v", c.name, err)
		}
	}
	if _, _, err := ProposalMoments(toyLGSSM{}, samplerU, 100, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("ProposalMoments accepted a kernel without a proposal")
	}
}

// TestSamplerFalseAlarms runs the checks of correct models over 40 seeds:
// with 21 or 7 moments at 5 standard errors none may fail.
func TestSamplerFalseAlarms(t *testing.T) {
	if testing.Short() {
		t.Skip("40 seeds")
	}
	for seed := range uint64(40) {
		if err := CheckSampler(toyLGSSM{}, samplerU, 2000, rand.New(rand.NewPCG(seed, 100))); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
		if err := CheckProposal(toyGuided{}, samplerU, 2000, rand.New(rand.NewPCG(seed, 101))); err != nil {
			t.Errorf("seed %d: %v", seed, err)
		}
	}
}
