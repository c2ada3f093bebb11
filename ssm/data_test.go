package ssm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func TestSequenceLenAt(t *testing.T) {
	s := ssm.Sequence{Obs: 2, Y: []float64{1, 2, 3, 4, 5, 6}}
	if s.Len() != 3 {
		t.Errorf("Len = %d, want 3", s.Len())
	}
	row := s.At(1)
	if len(row) != 2 || row[0] != 3 || row[1] != 4 {
		t.Errorf("At(1) = %v, want [3 4]", row)
	}
	// The capacity is clipped so that an append cannot overwrite row 2.
	if cap(row) != 2 {
		t.Errorf("cap(At(1)) = %d, want 2", cap(row))
	}
	_ = append(row, 99)
	if s.Y[4] != 5 {
		t.Error("append to At(1) overwrote the next row")
	}
	row[0] = -3 // At aliases Y
	if s.Y[2] != -3 {
		t.Error("At does not alias Y")
	}
	for _, z := range []ssm.Sequence{{}, {Obs: 0, Y: []float64{1}}, {Obs: -1, Y: []float64{1}}, {Obs: 3}} {
		if z.Len() != 0 {
			t.Errorf("%v.Len() = %d, want 0", z, z.Len())
		}
	}
}

func TestSequenceObserved(t *testing.T) {
	nan := math.NaN()
	s := ssm.Sequence{Obs: 2, Y: []float64{nan, nan, nan, 4, nan, nan, nan, nan}}
	for _, c := range []struct {
		start, end int
		want       bool
	}{{0, 4, true}, {0, 1, false}, {1, 2, true}, {2, 4, false}, {1, 1, false}} {
		if got := s.Observed(c.start, c.end); got != c.want {
			t.Errorf("Observed(%d, %d) = %v, want %v", c.start, c.end, got, c.want)
		}
	}
}

func TestSequenceValidate(t *testing.T) {
	good := ssm.Sequence{Obs: 2, Y: []float64{1, math.NaN(), 3, 4}}
	for _, obs := range []int{0, 2} {
		if err := good.Validate(obs); err != nil {
			t.Errorf("Validate(%d) = %v", obs, err)
		}
	}
	for _, tc := range []struct {
		s    ssm.Sequence
		obs  int
		want string
	}{
		{ssm.Sequence{Obs: 0, Y: []float64{1}}, 0, "observation dimension 0"},
		{ssm.Sequence{Obs: -2, Y: []float64{1, 2}}, 0, "observation dimension -2"},
		{good, 3, "model wants 3"},
		{ssm.Sequence{Obs: 2}, 2, "length 0"},
		{ssm.Sequence{Obs: 2, Y: []float64{1, 2, 3}}, 0, "3 values do not fill rows of 2"},
	} {
		err := tc.s.Validate(tc.obs)
		if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v.Validate(%d) = %v, want ErrData mentioning %q", tc.s, tc.obs, err, tc.want)
		}
	}
	// Validate does not scan values: ±Inf is CheckFinite's job.
	inf := ssm.Sequence{Obs: 1, Y: []float64{math.Inf(1)}}
	if err := inf.Validate(1); err != nil {
		t.Errorf("Validate scanned values: %v", err)
	}
}

func TestSequenceCheckFinite(t *testing.T) {
	if err := (ssm.Sequence{Obs: 2, Y: []float64{math.NaN(), 1, -math.MaxFloat64, 0}}).CheckFinite(); err != nil {
		t.Errorf("finite sequence with NaN: %v", err)
	}
	s := ssm.Sequence{Obs: 3, Y: []float64{0, 1, 2, 3, 4, math.Inf(1), math.Inf(-1)}}
	err := s.CheckFinite()
	if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "observation 1, component 2 is +Inf") {
		t.Errorf("CheckFinite = %v, want the first Inf at observation 1, component 2", err)
	}
}

func TestDataset(t *testing.T) {
	a := ssm.Sequence{Obs: 1, Y: []float64{1, 2, 3}}
	b := ssm.Sequence{Obs: 1, Y: []float64{4, 5}}
	d := ssm.Dataset{Sequences: []ssm.Sequence{a, b}, IDs: []string{"a", "b"}}
	if d.TotalLen() != 5 {
		t.Errorf("TotalLen = %d, want 5", d.TotalLen())
	}
	if (ssm.Dataset{}).TotalLen() != 0 {
		t.Error("empty TotalLen is not 0")
	}
	for _, obs := range []int{0, 1} {
		if err := d.Validate(obs); err != nil {
			t.Errorf("Validate(%d) = %v", obs, err)
		}
	}
	if err := (ssm.Dataset{Sequences: d.Sequences}).Validate(1); err != nil {
		t.Errorf("nil IDs: %v", err)
	}
	two := ssm.Sequence{Obs: 2, Y: []float64{1, 2}}
	for _, tc := range []struct {
		d    ssm.Dataset
		obs  int
		want string
	}{
		{ssm.Dataset{}, 0, "no sequences"},
		{ssm.Dataset{Sequences: d.Sequences, IDs: []string{"a"}}, 0, "1 ids for 2 sequences"},
		{ssm.Dataset{Sequences: []ssm.Sequence{a, {Obs: 1}}, IDs: []string{"a", "w2"}}, 0, `sequence 1 (id "w2")`},
		{ssm.Dataset{Sequences: []ssm.Sequence{a, two}}, 0, "sequence 1: ssm: invalid data: sequence has 2"},
		{ssm.Dataset{Sequences: []ssm.Sequence{a, b}}, 2, "sequence 0:"},
	} {
		err := tc.d.Validate(tc.obs)
		if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%d) = %v, want ErrData mentioning %q", tc.obs, err, tc.want)
		}
	}
}

func TestWindow(t *testing.T) {
	w := ssm.Full(7)
	if w.Start != 0 || w.End != 7 || w.KeepStart != 0 || w.KeepEnd != 7 || w.Weights != nil || w.Validate(7) != nil {
		t.Errorf("Full(7) = %+v (%v)", w, w.Validate(7))
	}
	if w.Weight(3) != 1 {
		t.Errorf("nil weights: Weight = %v, want 1", w.Weight(3))
	}
	ww := ssm.Window{Start: 2, End: 9, KeepStart: 4, KeepEnd: 6, Weights: []float64{2.5, 3.5}}
	if ww.Weight(4) != 2.5 || ww.Weight(5) != 3.5 {
		t.Errorf("Weight(4), Weight(5) = %v, %v; want 2.5, 3.5", ww.Weight(4), ww.Weight(5))
	}
	if err := ww.Validate(9); err != nil {
		t.Error(err)
	}

	for _, tc := range []struct {
		w    ssm.Window
		want bool
	}{
		{ssm.Full(5), true},
		{ssm.Window{Start: 0, End: 5, KeepStart: 0, KeepEnd: 2}, true},
		{ssm.Window{Start: 0, End: 5, KeepStart: 1, KeepEnd: 3}, false}, // time 0 is buffer
		{ssm.Window{Start: 1, End: 5, KeepStart: 1, KeepEnd: 3}, false}, // ν_0 is not the true prior here
		{ssm.Window{Start: 0, End: 5, KeepStart: 0, KeepEnd: 0}, false}, // nothing kept
	} {
		if got := tc.w.KeepsInitial(); got != tc.want {
			t.Errorf("%+v.KeepsInitial() = %v, want %v", tc.w, got, tc.want)
		}
	}

	for _, tc := range []struct {
		w    ssm.Window
		T    int
		want string
	}{
		{ssm.Window{Start: -1, End: 3, KeepStart: 0, KeepEnd: 3}, 5, "filter span"},
		{ssm.Window{Start: 0, End: 6, KeepStart: 0, KeepEnd: 3}, 5, "filter span"},
		{ssm.Window{Start: 3, End: 3, KeepStart: 3, KeepEnd: 3}, 5, "filter span"},
		{ssm.Window{Start: 1, End: 4, KeepStart: 0, KeepEnd: 3}, 5, "kept span"},
		{ssm.Window{Start: 1, End: 4, KeepStart: 2, KeepEnd: 5}, 5, "kept span"},
		{ssm.Window{Start: 1, End: 4, KeepStart: 3, KeepEnd: 2}, 5, "kept span"},
		{ssm.Window{Start: 0, End: 4, KeepStart: 1, KeepEnd: 3, Weights: []float64{1}}, 5, "1 weights for 2 kept steps"},
		{ssm.Window{Start: 0, End: 4, KeepStart: 1, KeepEnd: 3, Weights: []float64{1, math.NaN()}}, 5, "weight of time 2 is NaN"},
		{ssm.Window{Start: 0, End: 4, KeepStart: 1, KeepEnd: 3, Weights: []float64{math.Inf(1), 1}}, 5, "weight of time 1 is +Inf"},
	} {
		err := tc.w.Validate(tc.T)
		if !errors.Is(err, ssm.ErrWindow) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v.Validate(%d) = %v, want ErrWindow mentioning %q", tc.w, tc.T, err, tc.want)
		}
	}
	// An empty kept span inside a valid filter span is allowed (pure buffer).
	if err := (ssm.Window{Start: 0, End: 3, KeepStart: 2, KeepEnd: 2}).Validate(3); err != nil {
		t.Errorf("empty kept span: %v", err)
	}
}
