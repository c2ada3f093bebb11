package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestKalmanLogLikDense checks the Kalman log-likelihood used by the LGSSM
// reference against the dense Gaussian density of y: y ~ N(0, Σ) with
// Σ_ij = σ²/(1−φ²) φ^|i−j| + τ² δ_ij (x_0 stationary), at a few points.
func TestKalmanLogLikDense(t *testing.T) {
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1)
	_, seq, err := m.Simulate(80, u, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	T := seq.Len()
	for _, p := range [][3]float64{{0.9, 0.7, 1}, {0.5, 1.3, 0.4}, {-0.7, 0.2, 2}, {0.99, 0.1, 0.9}} {
		cov := mat.NewSymDense(T, nil)
		v := p[1] * p[1] / (1 - p[0]*p[0])
		for i := range T {
			for j := i; j < T; j++ {
				c := v * math.Pow(p[0], float64(j-i))
				if i == j {
					c += p[2] * p[2]
				}
				cov.SetSym(i, j, c)
			}
		}
		nrm, ok := distmv.NewNormal(make([]float64, T), cov, nil)
		if !ok {
			t.Fatal("covariance not positive definite")
		}
		want := nrm.LogProb(seq.Y)
		up, _ := m.Params(p[0], p[1], p[2])
		if got := kalmanLogLik(seq, up); math.Abs(got-want) > 1e-8*math.Abs(want) {
			t.Errorf("θ = %v: Kalman %.10f, dense Gaussian %.10f", p, got, want)
		}
	}
}

// TestLGSSMReferenceQuadrature checks the importance-sampling posterior
// (the one gridref reports for -model lgssm) on 200 simulated observations
// against brute-force quadrature of the same posterior on a 41³ grid in u
// spanning ±6 Laplace sds per coordinate: posterior means within 4
// Monte Carlo standard errors (sd/√ESS), sds within 10%.
func TestLGSSMReferenceQuadrature(t *testing.T) {
	m := models.LGSSM{}
	u, _ := m.Params(0.9, 0.7, 1)
	_, seq, err := m.Simulate(200, u, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	logpost := func(u []float64, _ uint64) float64 { return kalmanLogLik(seq, u) + m.LogPrior(nil, u) }
	u0 := make([]float64, 3)
	if err := m.Start(u0, ssm.Dataset{Sequences: []ssm.Sequence{seq}}); err != nil {
		t.Fatal(err)
	}
	mode, cov, err := newtonMode(func(u []float64) float64 { return logpost(u, 0) }, u0, 0.02, 40, 0)
	if err != nil {
		t.Fatal(err)
	}
	is, err := importanceSample(m, logpost, mode, cov, 1.5, 5, 4000, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Quadrature: trapezoid rule (weights equal inside the box, the
	// integrand is negligible at its faces).
	const k = 41
	var sd [3]float64
	for i := range sd {
		sd[i] = math.Sqrt(cov.At(i, i))
	}
	pts := make([][]float64, 0, k*k*k)
	lps := make([]float64, 0, k*k*k)
	mx := math.Inf(-1)
	for a := range k {
		for b := range k {
			for c := range k {
				v := []float64{
					mode[0] + sd[0]*(-6+12*float64(a)/(k-1)),
					mode[1] + sd[1]*(-6+12*float64(b)/(k-1)),
					mode[2] + sd[2]*(-6+12*float64(c)/(k-1)),
				}
				lp := logpost(v, 0)
				th := make([]float64, 3)
				m.Constrain(th, v)
				pts = append(pts, th)
				lps = append(lps, lp)
				mx = math.Max(mx, lp)
			}
		}
	}
	w := make([]float64, len(lps))
	sw := 0.0
	for i, lp := range lps {
		w[i] = math.Exp(lp - mx)
		sw += w[i]
	}
	for i := range w {
		w[i] /= sw
	}
	for j, name := range m.ParamNames() {
		q := summarise(name, pts, j, w)
		r := summarise(name, is.Theta, j, is.W)
		se := q.SD / math.Sqrt(is.ESS)
		t.Logf("%s: quadrature mean %.5f sd %.5f; importance sampling mean %.5f sd %.5f (ESS %.0f, z %.2f)", name, q.Mean, q.SD, r.Mean, r.SD, is.ESS, (r.Mean-q.Mean)/se)
		if math.Abs(r.Mean-q.Mean) > 4*se {
			t.Errorf("%s: importance sampling mean %.5f, quadrature %.5f (se %.5f)", name, r.Mean, q.Mean, se)
		}
		if math.Abs(r.SD/q.SD-1) > 0.1 {
			t.Errorf("%s: importance sampling sd %.5f, quadrature %.5f", name, r.SD, q.SD)
		}
	}
}

// TestGARCHLogLikPF compares the self-contained GARCH particle filter's
// likelihood estimate with the library's (pf.Filter with models.GARCH's
// locally optimal proposal) on 150 simulated observations: the means of 30
// independent estimates each must agree within 4 standard errors.
func TestGARCHLogLikPF(t *testing.T) {
	m := models.GARCH{}
	u, _ := m.FromABG(0.1, 0.8, 0.05, 0.3)
	rng := rand.New(rand.NewPCG(9, 10))
	_, seq, err := m.Simulate(150, u, rng)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := m.Bind(u)
	f, err := pf.New(pf.Settings{N: 500})
	if err != nil {
		t.Fatal(err)
	}
	const reps = 30
	var a, aa, b, bb float64
	for r := range reps {
		res, err := f.Run(context.Background(), k, m.Dims(), seq, ssm.Full(seq.Len()), nil, nil, rng)
		if err != nil {
			t.Fatal(err)
		}
		a += res.LogLik
		aa += res.LogLik * res.LogLik
		v := garchLogLik(seq.Y, u, 500, rand.New(rand.NewPCG(1, uint64(r))))
		b += v
		bb += v * v
	}
	ma, mb := a/reps, b/reps
	se := math.Sqrt(((aa/reps-ma*ma)+(bb/reps-mb*mb))/(reps-1) + 1e-12)
	t.Logf("library %.3f, gridref %.3f, se of the difference %.3f", ma, mb, se)
	if math.Abs(ma-mb) > 4*se+1e-3 {
		t.Errorf("library particle filter %.3f, gridref's %.3f (se %.3f)", ma, mb, se)
	}
}

// TestRunLGSSMJSON runs -model lgssm -simulate -json and checks the JSON.
func TestRunLGSSMJSON(t *testing.T) {
	var out, errb bytes.Buffer
	file := filepath.Join(t.TempDir(), "sim.csv")
	if err := run([]string{"-model", "lgssm", "-simulate", "300", "-write", file, "-n", "500", "-json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r struct {
		Model  string
		T      int
		Params []paramSummary
		Mode   []float64
		ESS    float64
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.Model != "lgssm" || r.T != 300 || len(r.Params) != 3 || len(r.Mode) != 3 || r.Params[0].Name != "phi" || !(r.ESS > 50) {
		t.Errorf("unexpected JSON %+v", r)
	}
	for _, p := range r.Params {
		if !(p.Q05 < p.Q50 && p.Q50 < p.Q95 && p.SD > 0) {
			t.Errorf("%s: bad summary %+v", p.Name, p)
		}
	}
	seq, err := ssm.ReadCSVFile(file)
	if err != nil || seq.Len() != 300 {
		t.Errorf("simulated file: %v, T = %d", err, seq.Len())
	}
}
