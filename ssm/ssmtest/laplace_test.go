package ssmtest_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"github.com/pbsgmcmc/pbsgmcmc/ssm/ssmtest"
)

// buggyLaplace is MSV{D: 2} with one deliberate error in its Laplace
// capabilities.
type buggyLaplace struct {
	models.MSV
	bug string
}

type buggyKernel struct {
	ssm.Kernel
	bug string
}

func (m buggyLaplace) Bind(u []float64) (ssm.Kernel, error) {
	k, err := m.MSV.Bind(u)
	return buggyKernel{k, m.bug}, err
}

func (k buggyKernel) LinearGaussian(F, c, Q, m0, P0 []float64) {
	k.Kernel.(ssm.LinearGaussian).LinearGaussian(F, c, Q, m0, P0)
	switch k.bug {
	case "F":
		F[1] += 0.01 // a coupling the transition does not have
	case "P0":
		P0[0] *= 1.01
	}
}

func (k buggyKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	l := k.Kernel.(ssm.EmissionCurvature).LogEmissionCurvature(g, H, y, x)
	switch k.bug {
	case "gradient":
		g[1] += 1e-3
	case "hessian":
		H[1] += 1e-3 // an off-diagonal term
	case "value":
		l += 1e-6
	}
	return l
}

// TestCheckLaplace: CheckLaplace passes MSV and fails each deliberate
// error in the transition, the initial law, the emission's value, its
// gradient or its Hessian.
func TestCheckLaplace(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	if err := ssmtest.CheckLaplace(buggyLaplace{MSV: m}, u, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Errorf("no bug: %v", err)
	}
	for _, bug := range []string{"F", "P0", "gradient", "hessian", "value"} {
		err := ssmtest.CheckLaplace(buggyLaplace{MSV: m, bug: bug}, u, rand.New(rand.NewPCG(1, 2)))
		if !errors.Is(err, ssmtest.ErrMismatch) {
			t.Errorf("bug in %s: got %v, want an error wrapping ErrMismatch", bug, err)
		}
	}
}
