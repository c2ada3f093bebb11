package models_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// TestSimulators checks every shipped model's SampleInitial,
// SampleTransition and SampleEmission, and its proposal where it has one,
// against its log densities (ssmtest.Simulator: score, information and
// Stein moments within 5 Monte Carlo standard errors of zero, 4000 draws,
// fixed seeds; proposal weights to 1e-8).
func TestSimulators(t *testing.T) {
	garch, err := models.GARCH{}.FromABG(0.1, 0.8, 0.05, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	var ar1 [][]float64
	for _, th := range [][3]float64{{0.9, 0.5, 1}, {-0.3, 1.5, 0.2}} {
		u, err := models.LGSSM{}.Params(th[0], th[1], th[2])
		if err != nil {
			t.Fatal(err)
		}
		ar1 = append(ar1, u)
	}
	cases := []struct {
		name string
		m    ssm.Model
		us   [][]float64
	}{
		{"LGSSM", models.LGSSM{}, ar1},
		{"SVM", models.SVM{}, ar1},
		{"SVM guided", models.SVM{Guided: true}, ar1},
		{"GARCH", models.GARCH{}, [][]float64{garch}},
		{"LGSSMd", models.LGSSMd{D: 2}, [][]float64{{0.5, 0.2, -0.1, 0.3, -0.5, 0.1, 0, -0.7}}},
	}
	for ci, c := range cases {
		for i, u := range c.us {
			t.Run(c.name, func(t *testing.T) {
				ssmtest.Simulator(t, c.m, u, 4000, rand.New(rand.NewPCG(uint64(ci), uint64(i))))
			})
		}
	}
}

// emission3 is a model whose SampleEmission returns 3·y: its densities and
// score are the wrapped model's, so ssmtest.Model passes it, but
// ssmtest.CheckSampler must not.
type emission3 struct{ ssm.Model }
type emission3Kernel struct{ ssm.Kernel }

func (m emission3) Bind(u []float64) (ssm.Kernel, error) {
	k, err := m.Model.Bind(u)
	return emission3Kernel{k}, err
}

// Complete forwards ssm.StateCompleter (GARCH); a no-op for other kernels.
func (k emission3Kernel) Complete(x, prev []float64) {
	if c, ok := k.Kernel.(ssm.StateCompleter); ok {
		c.Complete(x, prev)
	}
}

func (k emission3Kernel) SampleEmission(y, x []float64, rng *rand.Rand) {
	k.Kernel.SampleEmission(y, x, rng)
	for i := range y {
		y[i] *= 3
	}
}

// TestSimulatorCatchesEmissionBug plants SampleEmission = 3·y in the
// shipped models: the score, transform and prior checks pass, the sampler
// check fails.
func TestSimulatorCatchesEmissionBug(t *testing.T) {
	u, _ := models.LGSSM{}.Params(0.9, 0.5, 1)
	for _, m := range []ssm.Model{models.LGSSM{}, models.SVM{}, models.GARCH{}} {
		if m.Dims().Param == 4 {
			u, _ = models.GARCH{}.FromABG(0.1, 0.8, 0.05, 0.3)
		}
		bad := emission3{m}
		ssmtest.Model(t, bad, u, 30, rand.New(rand.NewPCG(1, 2)))
		err := ssmtest.CheckSampler(bad, u, 4000, rand.New(rand.NewPCG(3, 4)))
		if !errors.Is(err, ssmtest.ErrSampler) {
			t.Errorf("%T with SampleEmission = 3y: CheckSampler gives %v, want ErrSampler", m, err)
		} else {
			t.Logf("%T: %v", m, err)
		}
	}
}
