package ssm_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func TestLogReturns(t *testing.T) {
	// Prices built from known percent returns come back as those returns.
	want := []float64{1.5, -0.25, 3, -2}
	p := []float64{50}
	for _, r := range want {
		p = append(p, p[len(p)-1]*math.Exp(r/100))
	}
	got, err := ssm.LogReturns(ssm.Sequence{Obs: 1, Y: p}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got.Obs != 1 || got.Len() != len(want) {
		t.Fatalf("got %d rows of %d, want %d of 1", got.Len(), got.Obs, len(want))
	}
	for i, w := range want {
		if math.Abs(got.Y[i]-w) > 1e-12 {
			t.Errorf("return %d = %.15g, want %g", i, got.Y[i], w)
		}
	}

	// Two components, a missing price: both returns that use it are
	// missing, the other component is untouched; the input is not changed.
	in := []float64{1, 10, math.NaN(), 20, 4, 40}
	two, err := ssm.LogReturns(ssm.Sequence{Obs: 2, Y: in}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ln2 := math.Ln2
	wantTwo := []float64{math.NaN(), ln2, math.NaN(), ln2}
	for i, w := range wantTwo {
		if math.IsNaN(w) != math.IsNaN(two.Y[i]) || !math.IsNaN(w) && math.Abs(two.Y[i]-w) > 1e-15 {
			t.Errorf("two components: value %d = %v, want %v", i, two.Y[i], w)
		}
	}
	if !math.IsNaN(in[2]) || in[5] != 40 {
		t.Errorf("input changed: %v", in)
	}
}

func TestLogReturnsErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		s     ssm.Sequence
		scale float64
		msg   string
	}{
		{"zero price", ssm.Sequence{Obs: 1, Y: []float64{1, 0, 2}}, 100, "observation 1, component 0 is 0"},
		{"negative price (returns given)", ssm.Sequence{Obs: 1, Y: []float64{0.5, -1.2}}, 100, "observation 1, component 0 is -1.2"},
		{"infinite price", ssm.Sequence{Obs: 2, Y: []float64{1, 1, 1, math.Inf(1)}}, 100, "observation 1, component 1 is +Inf"},
		{"one row", ssm.Sequence{Obs: 1, Y: []float64{3}}, 100, "at least 2 rows"},
		{"empty", ssm.Sequence{Obs: 1}, 100, "length 0"},
		{"zero scale", ssm.Sequence{Obs: 1, Y: []float64{1, 2}}, 0, "scale 0"},
		{"NaN scale", ssm.Sequence{Obs: 1, Y: []float64{1, 2}}, math.NaN(), "scale NaN"},
	} {
		_, err := ssm.LogReturns(c.s, c.scale)
		if err == nil || !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want ErrData naming %q", c.name, err, c.msg)
		}
	}
}

// TestScaled: a copy times the factor, NaN kept, the input untouched, and
// bad factors refused.
func TestScaled(t *testing.T) {
	in := ssm.Sequence{Obs: 2, Y: []float64{0.01, math.NaN(), -0.025, 0.5}}
	got, err := ssm.Scaled(in, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, math.NaN(), -2.5, 50}
	for i, v := range got.Y {
		if math.IsNaN(want[i]) != math.IsNaN(v) || !math.IsNaN(v) && math.Abs(v-want[i]) > 1e-12 {
			t.Errorf("Y[%d] = %v, want %v", i, v, want[i])
		}
	}
	if got.Obs != 2 || in.Y[0] != 0.01 || &got.Y[0] == &in.Y[0] {
		t.Errorf("Obs %d, input %v: want a copy of 2 components", got.Obs, in.Y)
	}
	for _, f := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := ssm.Scaled(in, f); !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "scale factor") {
			t.Errorf("factor %v: error %v, want ErrData", f, err)
		}
	}
}

// Demeaned subtracts each component's mean over its observed values and
// leaves missing values missing and the input untouched.
func TestDemeaned(t *testing.T) {
	nan := math.NaN()
	in := ssm.Sequence{Obs: 2, Y: []float64{1, 10, nan, 20, 5, nan, 3, nan}}
	orig := slices.Clone(in.Y)
	out, means := ssm.Demeaned(in)
	if means[0] != 3 || means[1] != 15 {
		t.Errorf("means %v, want [3 15]", means)
	}
	want := []float64{-2, -5, nan, 5, 2, nan, 0, nan}
	for i := range want {
		if !(out.Y[i] == want[i] || math.IsNaN(out.Y[i]) && math.IsNaN(want[i])) {
			t.Errorf("Demeaned: %v, want %v", out.Y, want)
			break
		}
	}
	for i := range orig {
		if !(in.Y[i] == orig[i] || math.IsNaN(orig[i])) {
			t.Fatalf("input changed: %v", in.Y)
		}
	}
	// A component with no observed value is left as it is.
	if out, means := ssm.Demeaned(ssm.Sequence{Obs: 1, Y: []float64{nan, nan}}); !math.IsNaN(means[0]) || !math.IsNaN(out.Y[0]) {
		t.Errorf("all missing: %v, means %v", out.Y, means)
	}
}
