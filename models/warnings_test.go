package models_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func TestDataWarnings(t *testing.T) {
	data := dataset
	nan := math.NaN()
	custom := models.DefaultSVMPrior()
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		want  string // the warning, "" for none
	}{
		{"unit scale", models.SVM{}, data([]float64{1, -1, 0.5, -0.5}), ""},
		// sd of (0.01, -0.01, 0.005) is 0.01041 (n − 1 denominator).
		{"returns as fractions", models.SVM{}, data([]float64{0.01, -0.01, 0.005}), "the data's sd is 0.0104, but the default priors"},
		{"pointer model", &models.LGSSM{}, data([]float64{100, -100, 50}), "the data's sd is 104, but the default priors"},
		// Welford's sum of squares overflows: say so, with the value.
		{"overflow", models.SVM{}, data([]float64{1, -1, 1e300}), "the data's sd overflows (a value of 1e+300)"},
		// Pooled over sequences, NaN skipped: 2, −2, 1.5, −1.5 have variance 4.167.
		{"GARCH variance", models.GARCH{}, data([]float64{2, nan, -2}, []float64{1.5, -1.5}), "the data's variance is 4.17, but the default GARCH prior"},
		{"same data, SVM", models.SVM{}, data([]float64{2, nan, -2}, []float64{1.5, -1.5}), ""},
		{"constant", models.SVM{}, data([]float64{0, 0, nan}, []float64{0}), "the data are constant"},
		{"constant, any model", ssm.Model(nil), data([]float64{3, 3}), "the data are constant"},
		{"nothing observed", models.GARCH{}, data([]float64{nan, nan}), "the data hold no observed values"},
		// A prior of one's own, or a model of another type: no scale check.
		{"custom prior", models.SVM{Prior: custom}, data([]float64{0.01, -0.01, 0.005}), ""},
		{"other model", models.LGSSMd{}, data([]float64{100, -100, 50}), ""},
		// Exact zeros: SVM only (any prior), from 1% of the observed values.
		{"SVM zeros", models.SVM{Prior: custom}, data(zeroEvery(10, 200), []float64{nan, 0}), "21 of 201 observed values (10.4%) are exactly 0"},
		{"SVM zeros and scale", &models.SVM{}, data(scaled(zeroEvery(4, 100), 100)), "the data's sd is"},
		{"SVM 1% zeros", models.SVM{}, data(zeroEvery(100, 1000)), "10 of 1000 observed values (1.0%) are exactly 0"},
		{"SVM 0.9% zeros", models.SVM{}, data(zeroEvery(111, 999)), ""},
		{"GARCH zeros", models.GARCH{}, data(zeroEvery(2, 100)), ""},
		{"LGSSM zeros", models.LGSSM{}, data(zeroEvery(2, 100)), ""},
		// No negative value in 20 or more: levels, not returns (SVM and
		// GARCH, any prior; the LGSSM models any zero-mean series).
		{"prices, SVM", models.SVM{Prior: custom}, data(levels(25, 1.1, 0.02), []float64{nan}), "none of the 25 observed values is negative (they run from 1.1 to 1.58)"},
		{"prices, GARCH pointer", &models.GARCH{}, data(levels(12, 1.1, 0.02), levels(8, 1.2, 0.01)), "none of the 20 observed values is negative"},
		{"absolute returns with zeros, GARCH", models.GARCH{}, data(append(levels(30, 0.5, 0.05), 0)), "none of the 31 observed values is negative (they run from 0 to"},
		{"19 positive values", models.SVM{}, data(levels(19, 1.1, 0.02)), ""},
		{"levels, LGSSM", models.LGSSM{}, data(levels(25, 1.1, 0.02)), ""},
	} {
		got := models.DataWarnings(c.model, c.data)
		if zeros, ok := map[string]string{"SVM zeros and scale": "(25.0%) are exactly 0", "constant": "3 of 3 observed values (100.0%) are exactly 0"}[c.name]; ok {
			// Both problems are reported (all zeros under the SVM: the
			// constant data and the zeros, which its fit fails on).
			if len(got) != 2 || !strings.HasPrefix(got[0], c.want) || !strings.Contains(got[1], zeros) {
				t.Errorf("%s: warnings %q, want %q and the zeros", c.name, got, c.want)
			}
			continue
		}
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%s: warnings %q, want none", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)):
			t.Errorf("%s: warnings %q, want one starting %q", c.name, got, c.want)
		}
	}
}

// levels returns n values a, a + d, a + 2d, ….
func levels(n int, a, d float64) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = a + float64(i)*d
	}
	return y
}

// zeroEvery returns n values alternating ±1 with every k-th (from the
// first) replaced by 0.
func zeroEvery(k, n int) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = float64(1 - 2*(i%2))
		if i%k == 0 {
			y[i] = 0
		}
	}
	return y
}

func scaled(y []float64, c float64) []float64 {
	for i := range y {
		y[i] *= c
	}
	return y
}

// TestDataWarningsOutliers: a value beyond 100 robust sds from the median
// is named with its place, for any model, and the sd-based scale advice
// (which it would distort) is not given; the real S&P 500 series, whose
// 1987 crash is about 30 robust sds out, draws no such warning.
func TestDataWarningsOutliers(t *testing.T) {
	pm := func(n int) []float64 { // ±1 alternating, then 0.5 steps: MAD > 0
		y := make([]float64, n)
		for i := range y {
			y[i] = float64(1-2*(i%2)) * (1 + 0.01*float64(i%7))
		}
		return y
	}
	one := pm(200)
	one[57] = 1e6
	codes := pm(300)
	codes[10], codes[20], codes[30] = -999, -999, 9999
	seqs := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: pm(50)}, {Obs: 2, Y: append(pm(40), 3, -5000)}}}
	zeros := make([]float64, 100) // over half zero: no robust scale, no outliers
	zeros[3], zeros[5] = 2, -1.5
	half := pm(200) // half zeros, the rest of unit scale: MAD ≈ 0.005 would flag them all
	for i := range 100 {
		half[2*i] = 0
	}
	half[1] = 0.01
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		want  string // the only warning's start, "" for none
	}{
		{"one error, SVM", models.SVM{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: one}}}, "observation 57 (counting from 0) is 1e+06, "},
		{"missing-value codes, LGSSM with a prior of its own", models.LGSSM{Prior: models.DefaultLGSSMPrior()}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: codes}}},
			"observation 30 (counting from 0) is 9999, "},
		{"several sequences, two components", models.LGSSMd{}, seqs, "sequence 1, observation 20, component 1 (counting from 0) is -5000"},
		{"SVM zeros", models.SVM{Prior: models.DefaultSVMPrior()}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: zeros}}}, "98 of 100 observed values (98.0%) are exactly 0"},
		{"half zeros, LGSSM", models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: half}}}, ""},
	} {
		got := models.DataWarnings(c.model, c.data)
		if c.want == "" && got != nil || c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)) {
			t.Errorf("%s: warnings %q, want one starting %q", c.name, got, c.want)
		}
	}
	// The codes: the farthest named, the others counted.
	if got := models.DataWarnings(models.GARCH{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: codes}}}); len(got) != 1 || !strings.Contains(got[0], "(and 2 more values beyond 100)") {
		t.Errorf("codes: warnings %q, want the two other codes counted", got)
	}
	sp, err := ssm.ReadCSVFile("../testdata/sp500_returns.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got := models.DataWarnings(models.SVM{}, ssm.Dataset{Sequences: []ssm.Sequence{sp}}); got != nil {
		t.Errorf("S&P 500 returns: warnings %q, want none", got)
	}
}

// BenchmarkDataWarnings: the checks Fit makes before it starts, on 10⁶
// values (one pass, plus the robust scale's 2·10⁴ strided values).
func BenchmarkDataWarnings(b *testing.B) {
	y := make([]float64, 1000000)
	for i := range y {
		y[i] = math.Sin(float64(i)) * (1 + 0.5*math.Cos(float64(i)/1000))
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y}}}
	b.ReportAllocs()
	for b.Loop() {
		if w := models.DataWarnings(models.SVM{}, data); w != nil {
			b.Fatal(w)
		}
	}
}

// TestCheckData: CheckData splits DataWarnings' sentences into warnings and
// an error wrapping ssm.ErrData. Under a default prior, a scale outside
// [0.1, 10] (with the cure in the units it suggests) and levels are the
// error; under the SVM 12% or more exact zeros are too; a prior of one's
// own, the GARCH variance bound, fewer zeros and gross outliers leave
// warnings only.
func TestCheckData(t *testing.T) {
	seq := dataset
	own := models.DefaultSVMPrior()
	outlier := []float64{1e5} // and 40 values from −3.5 to 2.5: unit scale, no zeros
	for i := range 40 {
		outlier = append(outlier, float64(i%7)-3.5)
	}
	for _, c := range []struct {
		name  string
		model ssm.Model
		data  ssm.Dataset
		warn  int    // warnings expected
		err   string // substring of the error, "" for none
	}{
		{"fractions, SVM", models.SVM{}, seq([]float64{0.01, -0.01, 0.005}), 0, "the data's sd is 0.0104"},
		{"fractions: the cure", &models.GARCH{}, seq([]float64{0.01, -0.01, 0.005}), 0, "multiply by 100 (ssm.Scaled(y, 100))"},
		{"basis points: the cure", models.LGSSM{}, seq([]float64{100, -100, 50}), 0, "divide by 100 (ssm.Scaled(y, 0.01))"},
		{"overflow", models.SVM{}, seq([]float64{1, -1, 1e300}), 0, "the data's sd overflows"},
		{"prices, default prior", models.GARCH{}, seq(levels(25, 1.1, 0.02)), 0, "look like prices"},
		{"prices, own prior", models.SVM{Prior: own}, seq(levels(25, 1.1, 0.02)), 1, ""},
		{"fractions, own prior", models.SVM{Prior: own}, seq([]float64{0.01, -0.01, 0.005}), 0, ""},
		{"GARCH variance", models.GARCH{}, seq([]float64{2, -2}, []float64{1.5, -1.5}), 1, ""},
		{"SVM zeros", models.SVM{}, seq(zeroEvery(10, 200)), 1, ""},
		// From 12% zeros the SVM's posterior has no mode the chains stay
		// near: the fit stops at once, whatever the prior.
		{"SVM 14% zeros", models.SVM{Prior: own}, seq(zeroEvery(7, 210)), 0, "30 of 210 observed values (14.3%) are exactly 0"},
		{"SVM 14% zeros: why", models.SVM{}, seq(zeroEvery(7, 210)), 0, "before minutes of sampling a posterior that has no mode to find"},
		{"SVM 11% zeros", models.SVM{}, seq(zeroEvery(9, 207)), 1, ""},
		{"outlier", models.SVM{}, seq(outlier), 1, ""},
		{"unit scale", models.SVM{}, seq([]float64{1, -1, 0.5, -0.5}), 0, ""},
	} {
		warn, err := models.CheckData(c.model, c.data)
		all := models.DataWarnings(c.model, c.data)
		if len(warn) != c.warn {
			t.Errorf("%s: warnings %q, want %d", c.name, warn, c.warn)
		}
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: error %v, want none", c.name, err)
		case c.err != "" && (!errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want ssm.ErrData containing %q", c.name, err, c.err)
		case c.err != "" && (len(all) != c.warn+1 || !strings.Contains(err.Error(), all[len(all)-1])):
			t.Errorf("%s: DataWarnings %q does not end with the error's sentence", c.name, all)
		}
		// The ssm.DataChecker methods are CheckData.
		if dc, ok := c.model.(ssm.DataChecker); ok {
			w2, err2 := dc.CheckData(c.data)
			if len(w2) != len(warn) || (err2 == nil) != (err == nil) {
				t.Errorf("%s: the method gives %q, %v", c.name, w2, err2)
			}
		}
	}
}

// dataset makes a data set of univariate sequences.
func dataset(seqs ...[]float64) ssm.Dataset {
	var d ssm.Dataset
	for _, y := range seqs {
		d.Sequences = append(d.Sequences, ssm.Sequence{Obs: 1, Y: y})
	}
	return d
}
