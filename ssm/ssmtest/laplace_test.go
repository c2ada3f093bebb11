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

// coupling is the "separable" bug's term c x_0 x_1, added consistently to
// the emission's value, gradient and Hessian: only the claim of
// ssm.SeparableEmission is then wrong.
const coupling = 0.01

func (k buggyKernel) AddLogEmission(lw, y, x []float64) {
	k.Kernel.AddLogEmission(lw, y, x)
	if k.bug == "separable" {
		for i := range lw {
			lw[i] += coupling * x[2*i] * x[2*i+1]
		}
	}
}

// SeparableEmission is MSV's claim, kept by the "separable" bug.
func (k buggyKernel) SeparableEmission() bool {
	return k.Kernel.(ssm.SeparableEmission).SeparableEmission()
}

func (k buggyKernel) LogEmissionCurvature(g, H, y, x []float64) float64 {
	l := k.Kernel.(ssm.EmissionCurvature).LogEmissionCurvature(g, H, y, x)
	switch k.bug {
	case "separable":
		l += coupling * x[0] * x[1]
		g[0] += coupling * x[1]
		g[1] += coupling * x[0]
		H[1] += coupling
		H[2] += coupling
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
// gradient or its Hessian, and a coupling of the state's components in an
// emission that claims to be separable.
func TestCheckLaplace(t *testing.T) {
	m := models.MSV{D: 2}
	u, err := m.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		t.Fatal(err)
	}
	if err := ssmtest.CheckLaplace(buggyLaplace{MSV: m}, u, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Errorf("no bug: %v", err)
	}
	for _, bug := range []string{"F", "P0", "gradient", "hessian", "value", "separable"} {
		err := ssmtest.CheckLaplace(buggyLaplace{MSV: m, bug: bug}, u, rand.New(rand.NewPCG(1, 2)))
		if !errors.Is(err, ssmtest.ErrMismatch) {
			t.Errorf("bug in %s: got %v, want an error wrapping ErrMismatch", bug, err)
		}
	}
}
