package sgmcmc

import (
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestFilterPath: the fit names the filter it runs on and why
// (Preparation.Path): the exact scorer of a model that has one, the grid
// for a scalar state, Laplace importance sampling for a vector state with
// linear Gaussian dynamics (MSV), and particles for a vector state with
// neither, naming the state's dimension; FitSettings.Filter and Exact are
// said to be the user's choice.
func TestFilterPath(t *testing.T) {
	lg := lgssmSimInternal(t)
	dax := testdataSet(t, "dax_cac_returns.csv")
	col := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: make([]float64, dax.Sequences[0].Len())}}}
	for i := range col.Sequences[0].Y {
		col.Sequences[0].Y[i] = dax.Sequences[0].Y[2*i]
	}
	msvU, err := models.MSV{D: 2}.Params([]float64{0.94, 0.94}, []float64{0.27, 0.27}, []float64{0.8}, []float64{0.9, 0.9})
	if err != nil {
		t.Fatal(err)
	}
	svmU, _ := models.SVM{}.Params(0.94, 0.27, 0.87)
	lgU := make([]float64, 3)
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		u     []float64
		set   FitSettings
		want  []string
	}{
		{"lgssm", models.LGSSM{}, lg, lgU, FitSettings{}, []string{"exact scorer", "ssm.ExactScorer"}},
		{"lgssm/exact", models.LGSSM{}, lg, lgU, FitSettings{Exact: true}, []string{"exact scorer", "FitSettings.Exact"}},
		{"lgssm/particles", models.LGSSM{}, lg, lgU, FitSettings{Filter: ParticleFilter, N: 500}, []string{"particle filters with N = 500", "FitSettings.Filter"}},
		{"svm", models.SVM{}, col, svmU, FitSettings{}, []string{"grid filter", "scalar state"}},
		// A vector state without Laplace importance sampling (a fit
		// constructed here, without newFit's choice), then with it.
		{"msv", models.MSV{D: 2}, dax, msvU, FitSettings{N: 1000}, []string{"particle filters with N = 1000", "state dimension 2", "no exact scorer"}},
		{"msv/laplace", models.MSV{D: 2}, dax, msvU, FitSettings{}, []string{"Laplace importance sampling", "128 paths", "ssm.LinearGaussian"}},
	} {
		f := &fit{s: c.set, model: c.model, user: c.model, data: c.data, dim: c.model.Dims().Param, log: t.Logf}
		if strings.HasSuffix(c.name, "/laplace") {
			f.laplace = newLaplaceModel(c.model, c.u, 0, 1)
			if f.laplace == nil {
				t.Fatalf("%s: no Laplace importance sampling for the model", c.name)
			}
			f.model = f.laplace
		}
		if err := f.chooseFilter(c.u); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(f.path, w) {
				t.Errorf("%s: path %q does not say %q", c.name, f.path, w)
			}
		}
	}
}
