package sgmcmc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
)

// reportPosterior is a small hand-made posterior: two chains of two draws
// of two parameters, with a KSD and a measured gradient noise.
func reportPosterior() *Posterior {
	return &Posterior{
		Names: []string{"phi", "sigma"}, Dim: 2,
		U:   [][]float64{{0, 0, 1, 1}, {2, 2, 3, 3}},
		KSD: &ksd.Result{KSD: 6.25, N: 40},
		Preparation: Preparation{
			Mode: []float64{0.1, 0.2}, Gradient: ControlVariateGradient, StepSize: 0.25, IAT: 3.4, Seconds: 1.26,
			NoisePlain: []float64{4, 9, 9, 0.5}, NoiseCV: []float64{1, 7, 7, 0.001},
		},
		Iterations: 200, BurnIn: 150,
		Sampling: 2500 * time.Millisecond, Total: 4 * time.Second,
		summary: []ParamSummary{
			{Name: "phi", Mean: 0.9424, SD: 0.0145, Q05: 0.9174, Q50: 0.9436, Q95: 0.9642, BulkESS: 857, TailESS: 969, Rhat: 1.002, MCSE: 0.00049},
			{Name: "sigma", Mean: 1234567, SD: math.Inf(1), Q05: 0.1, Q50: 0.2, Q95: 0.3, BulkESS: math.NaN(), TailESS: 1, Rhat: 1, MCSE: 5e-7},
		},
	}
}

func TestPosteriorReportJSON(t *testing.T) {
	p := reportPosterior()
	if got, want := p.Preparation.NoiseRatio(), []float64{0.25, 0.002}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("NoiseRatio = %v, want %v", got, want)
	}
	b, err := json.Marshal(p.Report())
	if err != nil {
		t.Fatal(err)
	}
	// Summary values in strconv's 'g' form, NaN and Inf as null, no
	// warnings as [] (not null).
	want := `{"gradient":"control-variate","method":"preconditioned SGLD","filter":"","params":[` +
		`{"name":"phi","mean":0.9424,"sd":0.0145,"q05":0.9174,"q50":0.9436,"q95":0.9642,"bulk_ess":857,"tail_ess":969,"rhat":1.002,"mcse":0.00049},` +
		`{"name":"sigma","mean":1.234567e+06,"sd":null,"q05":0.1,"q50":0.2,"q95":0.3,"bulk_ess":null,"tail_ess":1,"rhat":1,"mcse":5e-07}],` +
		`"ksd":6.25,"step":0.25,"noise_ratio":[0.25,0.002],"iters":200,"adapt_iters":150,"seconds":4,"chains":2,"kept":4,"warnings":[]}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
	// Embedded without a tag, the fields sit in place among the program's.
	p.KSD, p.Warnings = nil, []string{"phi: R-hat 1.02 > 1.01"}
	b, err = json.Marshal(struct {
		Model string `json:"model"`
		PosteriorReport
		Extra int `json:"extra"`
	}{"svm", p.Report(), 7})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.HasPrefix(s, `{"model":"svm","gradient":"control-variate","method":"preconditioned SGLD","filter":"","params":[{"name":"phi"`) ||
		!strings.Contains(s, `"ksd":null,"step":0.25`) || !strings.HasSuffix(s, `"warnings":["phi: R-hat 1.02 \u003e 1.01"],"extra":7}`) {
		t.Errorf("embedded report: %s", s)
	}
	// It decodes back into a PosteriorReport (null leaves the zero value).
	var back PosteriorReport
	if err := json.Unmarshal(b, &back); err != nil || back.Params[0].Mean != 0.9424 || back.Params[1].SD != 0 || back.Kept != 4 {
		t.Errorf("decoded %+v, %v", back, err)
	}
}

func TestWriteDiagnostics(t *testing.T) {
	p := reportPosterior()
	p.Warnings = []string{"phi: bulk ESS 51 (< 400)", "the data are constant"}
	var b bytes.Buffer
	if err := p.WriteDiagnostics(&b); err != nil {
		t.Fatal(err)
	}
	want := "KSD = 6.25 (in u, over 40 draws, full-data scores)\n" +
		"step 0.25 (posterior-scale), autocorrelation time ≈ 3; 150 adaptation + 200 sampling iterations per chain\n" +
		"gradient noise variance per coordinate of u, control variate / plain: [0.25 0.002] (at the chains' states)\n" +
		"preparation 1.3 s, sampling 2.5 s, total 4.0 s\n" +
		"warning: phi: bulk ESS 51 (< 400)\n" +
		"warning: the data are constant\n"
	if b.String() != want {
		t.Errorf("WriteDiagnostics:\n%s\nwant\n%s", b.String(), want)
	}
	// Without a KSD the first line is left out; a failing writer's error
	// is returned.
	p.KSD, p.Warnings = nil, nil
	b.Reset()
	if err := p.WriteDiagnostics(&b); err != nil || !strings.HasPrefix(b.String(), "step 0.25") || strings.Count(b.String(), "\n") != 3 {
		t.Errorf("without KSD: %q, %v", b.String(), err)
	}
	if err := p.WriteDiagnostics(failWriter{}); err == nil {
		t.Error("no error from a failing writer")
	}
	// Full-data chains with surrogate transitions take no Langevin step:
	// the line gives their random-walk steps' sd, and the method and
	// acceptance rates name what ran.
	p.Preparation.Gradient, p.Preparation.sur = FullGradient, &surrogate.Surrogate{}
	p.Preparation.Accept, p.Preparation.AcceptIndependent = 0.5, 0.75
	b.Reset()
	if err := p.WriteDiagnostics(&b); err != nil ||
		!strings.HasPrefix(b.String(), "random-walk step sd 0.707 per coordinate (posterior-scale), autocorrelation time ≈ 3;") ||
		!strings.Contains(b.String(), "acceptance rates: random walk 0.50, surrogate transitions 0.75\n") ||
		p.Method() != "Metropolis–Hastings (surrogate transitions and random-walk steps)" {
		t.Errorf("surrogate transitions: %q, %q, %v", b.String(), p.Method(), err)
	}
	// A run whose surrogate came or went between segments names both
	// kinds, and its acceptance rates as the last segment's.
	p.segments = segmentKinds{Surrogate: 2, Other: 1}
	b.Reset()
	if err := p.WriteDiagnostics(&b); err != nil ||
		!strings.Contains(b.String(), "acceptance rates (of the last segment): random walk 0.50") ||
		p.Method() != "Metropolis–Hastings (surrogate transitions and random-walk steps in 2 of 3 segments, Langevin and independence proposals in the others)" {
		t.Errorf("mixed segments: %q, %q, %v", b.String(), p.Method(), err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }
