package ssm_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestMalformedFirstRow: a first row that starts like a number but does
// not parse ("0.5x", "-1e", ".3.4", "+-2") is a *ParseError on line 1,
// not a header silently dropped; names are still headers. On the DAX
// file (T = 1859) a damaged first value gives an error instead of
// T = 1858.
func TestMalformedFirstRow(t *testing.T) {
	for _, c := range []struct {
		in     string
		header bool
		T      int
	}{
		{"0.5x\n1\n2\n", false, 0},
		{"-1e\n1\n", false, 0},
		{".3.4\n1\n", false, 0},
		{"+-2\n1\n", false, 0},
		{"1,2x\n3,4\n", false, 0},
		{"y,0.5x\n3,4\n", false, 0}, // one malformed number is enough
		{"return\n1\n2\n", true, 2},
		{"x0.5\n1\n", true, 1},
		{"y1,y2\n1,2\n", true, 1},
		{"date,NA\n1,2\n", true, 1},
	} {
		s, err := ssm.ReadCSV(strings.NewReader(c.in))
		if c.header {
			if err != nil || s.Len() != c.T {
				t.Errorf("%q: T = %d, err %v; want a header and T = %d", c.in, s.Len(), err, c.T)
			}
			continue
		}
		var pe *ssm.ParseError
		if !errors.As(err, &pe) || pe.Line != 1 || !errors.Is(err, ssm.ErrData) {
			t.Errorf("%q: T = %d, err %v; want a *ParseError on line 1", c.in, s.Len(), err)
		}
	}
	// The same rule for CSVDataset with an id index.
	if _, err := (ssm.CSVDataset{IDIndex: 1}).Read(strings.NewReader("a,0.5x\na,1\n")); err == nil {
		t.Error("dataset with malformed first value: no error")
	}
	if d, err := (ssm.CSVDataset{IDIndex: 1}).Read(strings.NewReader("id,value\na,1\n")); err != nil || d.Sequences[0].Len() != 1 {
		t.Errorf("dataset with header: %v", err)
	}

	raw, err := os.ReadFile("../testdata/dax_returns.csv")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssm.ReadCSV(strings.NewReader(string(raw)))
	if err != nil || s.Len() != 1859 {
		t.Fatalf("DAX: T = %d, err %v", s.Len(), err)
	}
	first, rest, _ := strings.Cut(string(raw), "\n")
	bad := first + "x\n" + rest
	if s, err := ssm.ReadCSV(strings.NewReader(bad)); err == nil {
		t.Errorf("DAX with first value %q: T = %d, no error", first+"x", s.Len())
	}
}

// TestDatasetIDCount: Dataset.Validate rejects ids that are not one per
// sequence.
func TestDatasetIDCount(t *testing.T) {
	seq := ssm.Sequence{Obs: 1, Y: []float64{1, 2}}
	for _, ids := range [][]string{{}, {"a", "b"}} {
		d := ssm.Dataset{Sequences: []ssm.Sequence{seq}, IDs: ids}
		if err := d.Validate(1); !errors.Is(err, ssm.ErrData) {
			t.Errorf("%d ids for 1 sequence: %v", len(ids), err)
		}
	}
}

// TestControlCharacterID: an id holding a line break (the fuzz crasher
// testdata/fuzz/FuzzReadCSVDataset/crlf_quoted_id: encoding/csv reads a
// quoted "a\r\r\nb" as "a\r\nb" and writes it back so that it reads as
// "a\nb") is a *ParseError naming the line.
func TestControlCharacterID(t *testing.T) {
	_, err := (ssm.CSVDataset{IDIndex: 1}).Read(strings.NewReader("\"a\r\r\nb\",1\n\"c\",2\n"))
	var pe *ssm.ParseError
	if !errors.As(err, &pe) || pe.Line != 1 || !strings.Contains(err.Error(), "control character") {
		t.Errorf("err = %v, want a *ParseError on line 1 about a control character", err)
	}
}
