package ssm_test

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// dated is a small CSV with a header, a date column, a blank line (skipped),
// a missing value and a row longer than the header (other columns unread).
const dated = "\uFEFFdate, return ,volume\n" +
	"2024-01-02,0.5,100\n" +
	"\n" +
	"2024-01-03, -1.25,200\n" +
	"2024-01-04,NA,300,extra\n" +
	"2024-01-05,2e-1,400\n"

func TestCSVColumnReadsByNameAndIndex(t *testing.T) {
	path := writeFile(t, "dated.csv", []byte(dated))
	want := []float64{0.5, -1.25, nan, 0.2}
	for _, spec := range []string{"return", " return ", "2"} {
		c, err := ssm.ParseCSVColumn(spec)
		if err != nil {
			t.Fatalf("ParseCSVColumn(%q): %v", spec, err)
		}
		s, err := c.ReadFile(path)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if s.Obs != 1 || !sameValues(s.Y, want) {
			t.Errorf("%q: read %+v, want Obs 1, Y %v", spec, s, want)
		}
	}
	// The BOM is stripped before the header names are compared.
	s, err := ssm.CSVColumn{Name: "date"}.Read(strings.NewReader("\uFEFFdate,x\n3,a\n4,b\n"))
	if err != nil || !sameValues(s.Y, []float64{3, 4}) {
		t.Errorf("first column after a BOM: %v, %v; want [3 4]", s.Y, err)
	}
	// By index, a numeric first row is data, as in ReadCSV.
	s, err = ssm.CSVColumn{Index: 2}.Read(strings.NewReader("a,1.5\nb,2.5\nc,\n"))
	if err != nil || !sameValues(s.Y, []float64{1.5, 2.5, nan}) {
		t.Errorf("headerless by index: %v, %v; want [1.5 2.5 NaN]", s.Y, err)
	}
}

func TestCSVColumnErrors(t *testing.T) {
	for _, c := range []struct {
		name       string
		col        ssm.CSVColumn
		in         string
		line, cell int    // the *ParseError's Line and Column
		msg        string // substring of its message
	}{
		{"missing name", ssm.CSVColumn{Name: "price"}, dated, 1, 0, `no column named "price" in the header "date,return,volume"`},
		{"index beyond the first row", ssm.CSVColumn{Index: 4}, dated, 1, 0, "no column 4: the first row has 3 columns"},
		{"bad number", ssm.CSVColumn{Name: "return"}, "date,return\nd1,0.5\n\nd2,0.5x\n", 4, 2, `non-numeric cell "0.5x"`},
		{"non-numeric column", ssm.CSVColumn{Index: 1}, dated, 2, 1, `non-numeric cell "2024-01-02"`},
		{"infinite value", ssm.CSVColumn{Index: 2}, "y,z\n1,Inf\n", 2, 2, "infinite value"},
		{"short row", ssm.CSVColumn{Name: "return"}, "date,return\nd1,1\nd2\n", 3, 2, "row has 1 fields, no column 2"},
		{"name twice", ssm.CSVColumn{Name: "y"}, "y,x,y\n1,2,3\n", 1, 3, `column "y" appears more than once`},
		{"header only", ssm.CSVColumn{Name: "y"}, "x,y\n", 2, 0, "no data rows"},
		{"empty input", ssm.CSVColumn{Index: 1}, "", 1, 0, "empty input"},
		{"CSV syntax", ssm.CSVColumn{Index: 1}, "y\n1\n\"2\n", 3, 0, "malformed CSV"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.col.Read(strings.NewReader(c.in))
			var pe *ssm.ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ssm.ErrData) {
				t.Fatalf("read %v, error %v: want a *ssm.ParseError", s.Y, err)
			}
			if pe.Line != c.line || pe.Column != c.cell || !strings.Contains(pe.Msg, c.msg) {
				t.Errorf("error %q (line %d, column %d): want line %d, column %d, %q", err, pe.Line, pe.Column, c.line, c.cell, c.msg)
			}
		})
	}
	// ReadFile names the file; a missing file is the *os.PathError.
	path := writeFile(t, "dated.csv", []byte(dated))
	if _, err := (ssm.CSVColumn{Name: "price"}).ReadFile(path); err == nil || !strings.HasPrefix(err.Error(), path+": ssm: csv line 1: no column named") {
		t.Errorf("ReadFile: error %v, want one starting with the path", err)
	}
	if _, err := (ssm.CSVColumn{Index: 1}).ReadFile(filepath.Join(t.TempDir(), "nope.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v, want os.ErrNotExist", err)
	}
	// Invalid choices are errors, not panics, and not data errors.
	for _, col := range []ssm.CSVColumn{{}, {Name: "y", Index: 1}, {Index: -1}} {
		if _, err := col.Read(strings.NewReader("y\n1\n")); err == nil || errors.Is(err, ssm.ErrData) {
			t.Errorf("%+v: error %v, want a non-data error", col, err)
		}
	}
	for _, spec := range []string{"0", "-2", " "} {
		if c, err := ssm.ParseCSVColumn(spec); err == nil {
			t.Errorf("ParseCSVColumn(%q) = %+v, want an error", spec, c)
		}
	}
}

func TestDataFileOpen(t *testing.T) {
	dir := t.TempDir()
	csvPath := writeFile(t, "dated.csv", []byte(dated))
	plain := writeFile(t, "plain.csv", []byte("y\n1\n2\nNA\n"))
	long := writeFile(t, "long.csv", []byte("id,y\na,1\nb,2\na,3\n"))
	panel := writeFile(t, "panel.csv", []byte("date,ticker,close,volume\n2024-01-02,a,1,10\n2024-01-02,b,2,n/a\n2024-01-03,a,3,12\n"))
	binPath := filepath.Join(dir, "s.bin")
	f, err := os.Create(binPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := ssm.WriteBinary(f, ssm.Sequence{Obs: 1, Y: []float64{0.25, -4, nan}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// WriteBinary refuses ±Inf, so the file with one is written by hand.
	raw := make([]byte, 0, 24)
	for _, v := range []float64{1, math.Inf(1), 2} {
		raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
	}
	infBin := filepath.Join(dir, "inf.bin")
	if err := os.WriteFile(infBin, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file ssm.DataFile
		want [][]float64
		ids  []string
	}{
		{ssm.DataFile{Path: csvPath, Column: "return"}, [][]float64{{0.5, -1.25, nan, 0.2}}, nil},
		{ssm.DataFile{Path: plain}, [][]float64{{1, 2, nan}}, nil},
		{ssm.DataFile{Path: long, ID: "id"}, [][]float64{{1, 3}, {2}}, []string{"a", "b"}},
		{ssm.DataFile{Path: panel, ID: "ticker", Column: "close"}, [][]float64{{1, 3}, {2}}, []string{"a", "b"}},
		{ssm.DataFile{Path: panel, ID: "ticker", Column: "3"}, [][]float64{{1, 3}, {2}}, []string{"a", "b"}},
		{ssm.DataFile{Path: binPath}, [][]float64{{0.25, -4, nan}}, nil},
	} {
		d, closer, err := c.file.Open()
		if err != nil {
			t.Fatalf("%+v: %v", c.file, err)
		}
		if len(d.Sequences) != len(c.want) || strings.Join(d.IDs, ",") != strings.Join(c.ids, ",") {
			t.Fatalf("%+v: %d sequences, ids %v; want %d, %v", c.file, len(d.Sequences), d.IDs, len(c.want), c.ids)
		}
		for i, w := range c.want {
			if !sameValues(d.Sequences[i].Y, w) {
				t.Errorf("%+v: sequence %d is %v, want %v", c.file, i, d.Sequences[i].Y, w)
			}
		}
		if err := closer.Close(); err != nil {
			t.Errorf("%+v: Close: %v", c.file, err)
		}
	}
	for _, c := range []struct {
		file ssm.DataFile
		want string
	}{
		{ssm.DataFile{Path: binPath, Column: "1"}, "apply to CSV files"},
		{ssm.DataFile{Path: long, Column: "id", ID: "id"}, long + ": ssm: csv line 1, column 1: the observation column is the id column"},
		{ssm.DataFile{Path: long, Column: "0", ID: "id"}, long + ": ssm: column index 0"},
		{ssm.DataFile{Path: csvPath, Column: "0"}, csvPath + ": ssm: column index 0"},
		{ssm.DataFile{Path: csvPath, Column: "price"}, csvPath + ": ssm: csv line 1: no column named"},
		{ssm.DataFile{Path: csvPath}, csvPath + ": ssm: csv line 2, column 1: non-numeric cell"},
		{ssm.DataFile{Path: plain, ID: "week"}, plain + `: ssm: csv line 1: no column named "week"`},
		{ssm.DataFile{Path: filepath.Join(dir, "nope.bin")}, "no such file"},
		{ssm.DataFile{Path: infBin}, infBin + ": ssm: invalid data: observation 1, component 0 is +Inf"},
	} {
		d, closer, err := c.file.Open()
		if err == nil || !strings.Contains(err.Error(), c.want) || len(d.Sequences) != 0 || closer == nil {
			t.Errorf("%+v: %d sequences, closer %v, error %v; want no data, a closer and an error containing %q", c.file, len(d.Sequences), closer, err, c.want)
		}
	}
}

// A hostile header cannot make a huge error message.
func TestCSVColumnLongHeader(t *testing.T) {
	in := strings.Repeat("abcdefghij,", 1000) + "z\n1\n"
	_, err := ssm.CSVColumn{Name: "price"}.Read(strings.NewReader(in))
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), `"abcdefghij,abcdefghij,`) {
		t.Errorf("error %q (%d bytes): want the start of the header in at most 300 bytes", err, len(err.Error()))
	}
}

// FuzzCSVColumn: Read never panics, and what it returns is a valid
// one-component sequence without infinities.
func FuzzCSVColumn(f *testing.F) {
	for _, s := range []string{dated, "", "y\n1\n", "a,b\n1\n", "\"x\n", "1,2\n3\n", "\uFEFFy\nInf\n"} {
		f.Add(s, "y", 0)
		f.Add(s, "", 2)
	}
	f.Fuzz(func(t *testing.T, in, name string, index int) {
		s, err := ssm.CSVColumn{Name: name, Index: index}.Read(strings.NewReader(in))
		if err != nil {
			return
		}
		if err := s.Validate(1); err != nil {
			t.Fatalf("invalid sequence %+v: %v", s, err)
		}
		if err := s.CheckFinite(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestDataFileBinaryPlausible: a binary file's values are scanned once at
// open; ±Inf is an error, and so is a file whose non-zero values are mostly
// beyond 1e±20 (the format has no header: a text file named .bin read as
// float64s is values near 1e−50, a big-endian one magnitudes all over
// 1e±300), while real data with a few tiny values open.
func TestDataFileBinaryPlausible(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	float := func(order binary.ByteOrder, ys ...float64) []byte {
		b := make([]byte, 8*len(ys))
		for i, y := range ys {
			order.PutUint64(b[8*i:], math.Float64bits(y))
		}
		return b
	}
	ys := []float64{0.5, -1.25, 0, 2.5e-30, 3, math.NaN(), -0.75, 1.5}
	text := []byte("0.565165\n-0.670643\n1.234567\n0.987654\n")
	for len(text)%8 != 0 {
		text = append(text, '\n')
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string // "" for success
	}{
		{"real.bin", float(binary.LittleEndian, ys...), ""},
		{"text.bin", text, "not little-endian float64 data"},
		{"bigendian.bin", float(binary.BigEndian, ys...), "not little-endian float64 data"},
		{"inf.bin", float(binary.LittleEndian, 1, math.Inf(1)), "is +Inf"},
	} {
		data, closer, err := ssm.DataFile{Path: write(c.name, c.b)}.Open()
		if c.want == "" {
			if err != nil || data.TotalLen() != len(ys) {
				t.Errorf("%s: %v, %d rows", c.name, err, data.TotalLen())
			}
		} else if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ssm.ErrData) {
			t.Errorf("%s: err = %v, want ErrData saying %q", c.name, err, c.want)
		}
		closer.Close()
	}
}
