package sgmcmc

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestValueDiff: valueDiff's gradient and information at the points of
// valuePoints, for f(u) = −½ uᵀAu + b·u + c·u₀²u₁ in three dimensions,
// against the exact ones. The central differences are exact here up to
// rounding; the forward off-diagonal entry (0, 1) is off by about
// η/2·(f₀₀₁ + f₀₁₁) = c·η, 10⁻⁴ with valueEta = 10⁻⁴ and c = 1. The test
// allows 10⁻³ of the largest entry, which a step of 10⁻² would exceed.
func TestValueDiff(t *testing.T) {
	a := []float64{4, 1, 0.5, 1, 3, -0.2, 0.5, -0.2, 2}
	b := []float64{0.3, -1, 2}
	const c = 1.0
	fn := func(u []float64) float64 {
		v := c * u[0] * u[0] * u[1]
		for i := range 3 {
			v += b[i] * u[i]
			for j := range 3 {
				v -= 0.5 * a[i*3+j] * u[i] * u[j]
			}
		}
		return v
	}
	u := []float64{0.7, -0.4, 1.1}
	pts := valuePoints(u)
	if len(pts) != 1+2*3+3 {
		t.Fatalf("%d points, want 1 + 2p + p(p − 1)/2 = 10", len(pts))
	}
	ls := make([]float64, len(pts))
	for i, x := range pts {
		ls[i] = fn(x)
	}
	grad, fisher := valueDiff(ls, 3)
	worst := 0.0
	for i := range 3 {
		g := b[i]
		for j := range 3 {
			g -= a[i*3+j] * u[j]
			h := a[i*3+j]
			switch {
			case i == 0 && j == 0:
				h -= 2 * c * u[1]
			case i+j == 1:
				h -= 2 * c * u[0]
			}
			worst = math.Max(worst, math.Abs(fisher[i*3+j]-h))
		}
		switch i {
		case 0:
			g += 2 * c * u[0] * u[1]
		case 1:
			g += c * u[0] * u[0]
		}
		worst = math.Max(worst, math.Abs(grad[i]-g))
	}
	t.Logf("largest error %.3g (η = %g)", worst, valueEta)
	if worst > 1e-3*4 {
		t.Errorf("largest error of the differences %.3g, want below %g", worst, 4e-3)
	}
}

// TestValueNewtonChoice: the Newton steps differentiate values on Laplace
// importance sampling with uneven weights (MSV{D: 2}: 7 parameters), not
// above valueNewtonMaxDim = 12 parameters (MSV{D: 4}: 18), not where the
// weights are even (LGSSMd, its Kalman scorer hidden), and not on a model's
// own exact scorer (the LGSSM).
func TestValueNewtonChoice(t *testing.T) {
	dax := testdataSet(t, "dax_cac_returns.csv")
	lgm := models.LGSSMd{D: 2}
	ulg, err := lgm.Params([]float64{0.7, 0.1, 0, 0.6}, []float64{0.5, 0.5}, []float64{0.4, 0.4})
	if err != nil {
		t.Fatal(err)
	}
	_, lgd, err := lgm.Simulate(300, ulg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	_, lg, err := models.LGSSM{}.Simulate(300, []float64{1, -0.3, 0}, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	four := make([]ssm.Sequence, 1)
	four[0] = ssm.Sequence{Obs: 4, Y: make([]float64, 4*300)}
	for i := range four[0].Y {
		four[0].Y[i] = dax.Sequences[0].Y[i%(2*300)]
	}
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		want  bool
	}{
		{"MSV{D: 2}", models.MSV{D: 2}, dax, true},
		{"MSV{D: 4}", models.MSV{D: 4}, ssm.Dataset{Sequences: four}, false},
		{"LGSSMd{D: 2}", struct{ ssm.Model }{lgm}, ssm.Dataset{Sequences: []ssm.Sequence{lgd}}, false},
		{"LGSSM", models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{lg}}, false},
	} {
		f, err := newFit(c.model, c.data, FitSettings{Seed: 1, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.chooseFilter(f.u0); err != nil {
			t.Fatal(err)
		}
		if wide := c.name == "MSV{D: 4}"; wide != (f.dim > valueNewtonMaxDim) {
			t.Fatalf("%s has %d parameters: the case needs them above valueNewtonMaxDim = %d for MSV{D: 4} alone", c.name, f.dim, valueNewtonMaxDim)
		}
		got, err := f.valueNewton(f.u0)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s (%d parameters): values %v, want %v", c.name, f.dim, got, c.want)
		}
	}
}

// TestValueNewton: on the DAX and CAC 40 returns (MSV{D: 2}), from the
// point where the Newton steps on the Laplace estimate's Fisher-identity
// score stopped (φ 0.82 and 0.76, σ 0.48 and 0.53, ρ 0.94, τ 0.82 and
// 0.93: no damped step along them raised the log posterior), the steps on
// the values' differences converge (a last step under 0.1 posterior sd)
// to a mode whose every coordinate lies inside the 90% interval of the
// NUTS posterior (examples/fit/gridref/ref_msv_daxcac.json); the start's
// φ₁ and σ₁ lie outside theirs.
func TestValueNewton(t *testing.T) {
	if testing.Short() {
		t.Skip("a few hundred log-likelihoods of 1,859 rows")
	}
	dax := testdataSet(t, "dax_cac_returns.csv")
	var log bytes.Buffer
	f, err := newFit(models.MSV{D: 2}, dax, FitSettings{Seed: 1, Gradient: FullGradient, Progress: &log, Verbose: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	stall := []float64{1.1495082504562721, 0.9857294885014793, -0.737084458385061, -0.6365247765171598, 1.7019322748924637, -0.19699879851035768, -0.06746701894660988}
	if err := f.chooseFilter(stall); err != nil {
		t.Fatal(err)
	}
	u, _, h, _, _, err := f.observedNewton(context.Background(), append([]float64(nil), stall...), 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := regexp.MustCompile(`observed information: ([0-9.]+) posterior sds`).FindAllStringSubmatch(log.String(), -1)
	if h == nil || len(steps) == 0 {
		t.Fatalf("no converged Newton step:\n%s", log.String())
	}
	last, _ := strconv.ParseFloat(steps[len(steps)-1][1], 64)
	b, err := os.ReadFile(filepath.Join("..", "examples", "fit", "gridref", "ref_msv_daxcac.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Params []struct {
			Name     string
			Q05, Q95 float64
		}
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	th, th0 := make([]float64, f.dim), make([]float64, f.dim)
	f.model.Constrain(th, u)
	f.model.Constrain(th0, stall)
	t.Logf("%d steps, the last %.2f sds; mode %.4f, start %.4f", len(steps), last, th, th0)
	if last >= 0.1 {
		t.Errorf("the last Newton step was %.2f posterior sds: want under 0.1", last)
	}
	outside := 0
	for i, r := range ref.Params {
		if th[i] < r.Q05 || th[i] > r.Q95 {
			t.Errorf("%s: mode %.4f outside the NUTS 90%% interval [%.4f, %.4f]", r.Name, th[i], r.Q05, r.Q95)
		}
		if th0[i] < r.Q05 || th0[i] > r.Q95 {
			outside++
		}
	}
	if outside < 2 {
		t.Errorf("the start has %d coordinates outside the NUTS 90%% intervals: the test needs a start the score's steps left far off", outside)
	}
}
