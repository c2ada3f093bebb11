package ssm_test

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// csvSeeds are shared by both fuzz targets; testdata/fuzz holds more.
var csvSeeds = []string{
	"1,2\n3,4\n",
	"y1,y2\n1, 2\n NA ,nan\n\"3\",\n",
	"id,y\na,1\nb,2\na,NaN\n",
	"x\n",
	"",
	"1,2\n3\n",
	"1e999\n",
	"a,b\n\"1\n\",2\n",
	"\uFEFFx\n-Inf\n",
	"\"abc\n",
}

// checkCSVError asserts the error contract: every failure on in-memory
// input is a *ParseError wrapping ErrData with a 1-based line.
func checkCSVError(t *testing.T, err error) {
	t.Helper()
	var pe *ssm.ParseError
	if !errors.As(err, &pe) || !errors.Is(err, ssm.ErrData) {
		t.Fatalf("error %v (%T) is not a *ParseError wrapping ErrData", err, err)
	}
	if pe.Line < 1 || pe.Column < 0 {
		t.Fatalf("error at line %d, column %d", pe.Line, pe.Column)
	}
}

// checkSequence asserts what every successfully read sequence satisfies.
func checkSequence(t *testing.T, s ssm.Sequence) {
	t.Helper()
	if s.Obs < 1 || s.Len() < 1 || len(s.Y) != s.Len()*s.Obs {
		t.Fatalf("not a rectangular non-empty sequence: Obs %d, %d values", s.Obs, len(s.Y))
	}
	for _, v := range s.Y {
		if math.IsInf(v, 0) {
			t.Fatalf("read an infinite value")
		}
	}
}

// FuzzReadCSV checks that ReadCSV never panics, that failures are
// *ParseErrors, that successes are valid sequences, that reading one byte
// at a time gives the same answer, and that WriteCSV then ReadCSV gives the
// sequence back exactly (NaN matching NaN).
func FuzzReadCSV(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ssm.ReadCSV(bytes.NewReader(data))
		s1, err1 := ssm.ReadCSV(iotest.OneByteReader(bytes.NewReader(data)))
		if (err == nil) != (err1 == nil) || (err != nil && err.Error() != err1.Error()) {
			t.Fatalf("whole read: %v; byte-at-a-time read: %v", err, err1)
		}
		if err != nil {
			checkCSVError(t, err)
			return
		}
		checkSequence(t, s)
		if s1.Obs != s.Obs || !sameValues(s1.Y, s.Y) {
			t.Fatalf("byte-at-a-time read differs")
		}

		var buf bytes.Buffer
		if err := ssm.WriteCSV(&buf, s); err != nil {
			t.Fatalf("WriteCSV: %v", err)
		}
		back, err := ssm.ReadCSV(&buf)
		if err != nil {
			t.Fatalf("re-reading %q: %v", buf.String(), err)
		}
		if back.Obs != s.Obs || !sameValues(back.Y, s.Y) {
			t.Fatalf("round trip changed Obs %d %v into Obs %d %v", s.Obs, s.Y, back.Obs, back.Y)
		}
	})
}

// FuzzReadCSVDataset checks CSVDataset.Read with the id in one of the
// first four columns: no panic, *ParseError failures, unique non-empty ids,
// one valid sequence each with a common dimension, and a round trip
// through encoding/csv in long format.
func FuzzReadCSVDataset(f *testing.F) {
	for i, s := range csvSeeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, data []byte, col uint8) {
		spec := ssm.CSVDataset{IDIndex: int(col%4) + 1}
		d, err := spec.Read(bytes.NewReader(data))
		if err != nil {
			checkCSVError(t, err)
			return
		}
		if len(d.Sequences) < 1 || len(d.IDs) != len(d.Sequences) {
			t.Fatalf("%d sequences, %d ids", len(d.Sequences), len(d.IDs))
		}
		if err := d.Validate(0); err != nil {
			t.Fatal(err)
		}
		seen := make(map[string]bool)
		for i, s := range d.Sequences {
			checkSequence(t, s)
			id := d.IDs[i]
			if id == "" || id != strings.TrimSpace(id) || seen[id] {
				t.Fatalf("id %q empty, untrimmed or repeated", id)
			}
			seen[id] = true
		}

		// Write back: a header, then the id first and the values.
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		obs := d.Sequences[0].Obs
		rec := []string{"id"}
		for j := range obs {
			rec = append(rec, "y"+strconv.Itoa(j))
		}
		w.Write(rec)
		for i, s := range d.Sequences {
			for tt := range s.Len() {
				rec = append(rec[:0], d.IDs[i])
				for _, v := range s.At(tt) {
					rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
				}
				w.Write(rec)
			}
		}
		w.Flush()
		back, err := ssm.CSVDataset{IDIndex: 1}.Read(&buf)
		if err != nil {
			t.Fatalf("re-reading: %v", err)
		}
		if len(back.IDs) != len(d.IDs) {
			t.Fatalf("round trip: ids %q became %q", d.IDs, back.IDs)
		}
		for i := range d.IDs {
			if back.IDs[i] != d.IDs[i] || back.Sequences[i].Obs != obs || !sameValues(back.Sequences[i].Y, d.Sequences[i].Y) {
				t.Fatalf("round trip changed sequence %d (%q)", i, d.IDs[i])
			}
		}
	})
}
