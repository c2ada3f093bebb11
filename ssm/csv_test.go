package ssm_test

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

var nan = math.NaN()

// sameValues reports whether a and b are equal, NaN matching NaN.
func sameValues(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
			return false
		}
	}
	return true
}

func TestReadCSV(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		obs  int
		want []float64
	}{
		{"no header", "1\n2.5\n-3e2\n", 1, []float64{1, 2.5, -300}},
		{"no trailing newline", "1,2\n3,4", 2, []float64{1, 2, 3, 4}},
		{"CRLF", "a,b\r\n1,2\r\n3,4\r\n", 2, []float64{1, 2, 3, 4}},
		{"header and missing markers", "y1,y2\n1, 2\n NA ,nan\n\"3\",\nNaN,na\n", 2,
			[]float64{1, 2, nan, nan, 3, nan, nan, nan}},
		{"header with a missing cell", ",x\n1,2\n", 2, []float64{1, 2}},
		// What data sources write for a gap: Yahoo Finance null, FRED ".",
		// Excel and Bloomberg #N/A, pandas None.
		{"FRED's dot", "DATE_VALUE\n1.5\n.\n2\n", 1, []float64{1.5, nan, 2}},
		{"first row a FRED dot is data", ".\n2\n", 1, []float64{nan, 2}},
		{"source markers", "a,b,c\nnull,NULL,#N/A\nN/A,n/a,None\n#N/A N/A, none ,1\n", 3,
			[]float64{nan, nan, nan, nan, nan, nan, nan, nan, 1}},
		{"whitespace around cells", "  1.5 ,\t-2 \n", 2, []float64{1.5, -2}},
		// Investing.com's "Change %": the number, in percent.
		{"percent cells", "Change %\n-0.52%\n1.3 %\n0%\nnull\n", 1, []float64{-0.52, 1.3, 0, nan}},
		// One column: an empty cell is an empty line, a missing value
		// (pandas writes a series' gaps so); trailing blank lines are not.
		{"one column: blank lines are missing", "\n1\n\n2\n\n", 1, []float64{nan, 1, nan, 2}},
		{"one column with header: gaps as pandas writes them", "y\n\n1.5\n\n\n2\n\r\n", 1, []float64{nan, 1.5, nan, nan, 2}},
		{"one column CRLF gaps", "1\r\n\r\n2\r\n", 1, []float64{1, nan, 2}},
		{"several columns: blank lines skipped", "\n1,2\n\n3,4\n\n", 2, []float64{1, 2, 3, 4}},
		{"blank-looking line is a missing value", "1\n \n2\n", 1, []float64{1, nan, 2}},
		{"quoted empty is missing", "1\n\"\"\n2\n", 1, []float64{1, nan, 2}},
		{"one column: trailing spaces and tabs ignored", "1\n \n2\n  \n\t\n", 1, []float64{1, nan, 2}},
		{"byte order mark, no header", "\uFEFF1,2\n", 2, []float64{1, 2}},
		{"byte order mark before header", "\uFEFFx,y\n1,2\n", 2, []float64{1, 2}},
		{"numeric-looking header is data", "1,2\n3,4\n", 2, []float64{1, 2, 3, 4}},
		{"first row all missing is data", "NA,\n1,2\n", 2, []float64{nan, nan, 1, 2}},
		{"every value missing is accepted", "NA\nNA\n", 1, []float64{nan, nan}},
		{"quoted field across lines", "a,b\n\"1\n\",2\n", 2, []float64{1, 2}},
		{"extreme finite values", "1.7976931348623157e308,-5e-324\n1e-400,0x1p-2\n", 2,
			[]float64{math.MaxFloat64, -5e-324, 0, 0.25}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ssm.ReadCSV(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("ReadCSV(%q): %v", tc.in, err)
			}
			if s.Obs != tc.obs || !sameValues(s.Y, tc.want) {
				t.Errorf("ReadCSV(%q) = Obs %d, Y %v; want Obs %d, Y %v", tc.in, s.Obs, s.Y, tc.obs, tc.want)
			}
			if err := s.Validate(tc.obs); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
		})
	}
}

// csvErrorCase is one malformed input and where the error must point.
type csvErrorCase struct {
	name       string
	in         string
	line, col  int
	msgContain string
}

func checkParseError(t *testing.T, err error, tc csvErrorCase) {
	t.Helper()
	if err == nil {
		t.Fatalf("%q: no error", tc.in)
	}
	if !errors.Is(err, ssm.ErrData) {
		t.Errorf("%q: error %v does not wrap ErrData", tc.in, err)
	}
	var pe *ssm.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("%q: error %v (%T) is not a *ParseError", tc.in, err, err)
	}
	if pe.Line != tc.line || pe.Column != tc.col {
		t.Errorf("%q: error at line %d, column %d; want line %d, column %d (%v)", tc.in, pe.Line, pe.Column, tc.line, tc.col, err)
	}
	if !strings.Contains(pe.Msg, tc.msgContain) {
		t.Errorf("%q: message %q does not contain %q", tc.in, pe.Msg, tc.msgContain)
	}
	// The message names the line, and the column when there is one.
	msg := err.Error()
	if !strings.Contains(msg, "line "+itoa(tc.line)) || (tc.col > 0 && !strings.Contains(msg, "column "+itoa(tc.col))) {
		t.Errorf("%q: message %q does not name line %d column %d", tc.in, msg, tc.line, tc.col)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestReadCSVErrors(t *testing.T) {
	for _, tc := range []csvErrorCase{
		{"empty input", "", 1, 0, "empty input"},
		{"only blank lines", "\n\n\n", 1, 0, "empty input"},
		{"header only", "x,y\n", 2, 0, "no data rows"},
		{"header then blank lines", "x,y\n\n\n", 2, 0, "no data rows"},
		{"non-numeric cell", "1,2\n3,abc\n", 2, 2, `non-numeric cell "abc"`},
		{"non-numeric after header", "a,b\n1,2\n3, x\n", 3, 2, `"x"`},
		// Hints for what spreadsheets and downloads hold.
		{"date column", "date,y\n2020-01-02,1.5\n", 2, 1, `"2020-01-02" (a date or label column? pick the value column by its header name or 1-based index)`},
		{"semicolons with decimal commas", "Datum;Rendite\n2020-01-02;1,5\n", 2, 2, "row has 2 fields, the first row has 1; the data hold ';': a semicolon-separated file?"},
		{"semicolon in a cell", "y\n1;2\n", 2, 1, `"1;2"; the data hold ';'`},
		{"non-numeric on a later line of a multi-line record", "a,b\n\"1\n\",zz\n", 3, 2, `"zz"`},
		{"short row", "1,2\n3\n", 2, 2, "row has 1 fields, the first row has 2"},
		{"long row", "1,2\n3,4,5\n", 2, 3, "row has 3 fields"},
		{"row shorter than header", "a,b,c\n1,2\n", 2, 3, "the first row has 3"},
		{"Inf cell", "1,2\ninf,4\n", 2, 1, `infinite value "inf"`},
		{"-Inf in first row", "1,-Inf\n", 1, 2, "infinite"},
		{"+Infinity", "x\n+Infinity\n", 2, 1, "infinite"},
		{"overflow", "1e999\n", 1, 1, "overflows"},
		{"negative overflow after header", "y\n2\n-1e400\n", 3, 1, "overflows"},
		{"text that marks no gap", "y\nn.v.\n", 2, 1, "non-numeric"},
		{"a bare percent sign", "y\n1%\n%\n", 3, 1, `non-numeric cell "%"`},
		{"two percent signs", "y\n5%%\n", 2, 1, "non-numeric"},
		{"text with a percent sign", "y\n1\nabc%\n", 3, 1, "non-numeric"},
		{"signed NaN is not a marker", "y\n-nan\n", 2, 1, "non-numeric"},
		{"bare quote", "1,2\n3,4\"\n", 2, 0, "malformed CSV"},
		{"unterminated quote", "x\n1\n\"abc\n", 3, 0, "malformed CSV"},
		{"long cell is shortened", "y\n" + strings.Repeat("z", 1000) + "\n", 2, 1, `"...`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ssm.ReadCSV(strings.NewReader(tc.in))
			checkParseError(t, err, tc)
			if len(err.Error()) > 200 {
				t.Errorf("message of %d bytes", len(err.Error()))
			}
		})
	}
}

func TestReadCSVDataset(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec ssm.CSVDataset
		in   string
		obs  int
		ids  []string
		seqs [][]float64
	}{
		{"by name, interleaved rows", ssm.CSVDataset{IDColumn: "id"},
			"id,y1,y2\nb,1,2\na,3,4\n b ,5,6\na,NA,8\n", 2,
			[]string{"b", "a"}, [][]float64{{1, 2, 5, 6}, {3, 4, nan, 8}}},
		{"by name, id column last", ssm.CSVDataset{IDColumn: "week"},
			"y, week \n1,w1\n2,w1\n3,w2\n", 1,
			[]string{"w1", "w2"}, [][]float64{{1, 2}, {3}}},
		{"by name, byte order mark", ssm.CSVDataset{IDColumn: "id"},
			"\uFEFFid,y\na,1\n", 1,
			[]string{"a"}, [][]float64{{1}}},
		{"by name, numeric ids", ssm.CSVDataset{IDColumn: "id"},
			"id,y\n2,1\n1,2\n", 1,
			[]string{"2", "1"}, [][]float64{{1}, {2}}},
		{"by index, no header", ssm.CSVDataset{IDIndex: 1},
			"s1,1\ns2,2\ns1,3\n", 1,
			[]string{"s1", "s2"}, [][]float64{{1, 3}, {2}}},
		{"by index, header, id in the middle", ssm.CSVDataset{IDIndex: 2},
			"x,seq,y\n1,a,2\n3,a,4\n", 2,
			[]string{"a"}, [][]float64{{1, 2, 3, 4}}},
		{"by index, header detected from non-id cells only", ssm.CSVDataset{IDIndex: 1},
			"id,y\nx,1\n", 1,
			[]string{"x"}, [][]float64{{1}}},
		{"by index, first row with text id is data", ssm.CSVDataset{IDIndex: 1},
			"first,1\nfirst,2\n", 1,
			[]string{"first"}, [][]float64{{1, 2}}},
		{"panel, value column by name", ssm.CSVDataset{IDColumn: "ticker", Column: ssm.CSVColumn{Name: "close"}},
			"date,ticker,close,volume\n2024-01-02,AAA,10.5,n/a\n2024-01-02,BBB,20,7\n2024-01-03,AAA,NA,5\n2024-01-03,BBB,21,x\n", 1,
			[]string{"AAA", "BBB"}, [][]float64{{10.5, nan}, {20, 21}}},
		{"panel, value column by index, id by index", ssm.CSVDataset{IDIndex: 2, Column: ssm.CSVColumn{Index: 3}},
			"date,ticker,close\n2024-01-02,AAA,1\n2024-01-03,AAA,2\n", 1,
			[]string{"AAA"}, [][]float64{{1, 2}}},
		{"panel, value column by index, no header", ssm.CSVDataset{IDIndex: 1, Column: ssm.CSVColumn{Index: 3}},
			"a,2024-01-02,1\na,2024-01-03,2\n", 1,
			[]string{"a"}, [][]float64{{1, 2}}},
		{"panel, value column by name, id by index", ssm.CSVDataset{IDIndex: 1, Column: ssm.CSVColumn{Name: "y"}},
			"id,y,z\na,1,2\n", 1,
			[]string{"a"}, [][]float64{{1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.spec.Read(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("%+v.Read(%q): %v", tc.spec, tc.in, err)
			}
			if len(d.IDs) != len(tc.ids) || len(d.Sequences) != len(tc.seqs) {
				t.Fatalf("got ids %q and %d sequences; want %q and %d", d.IDs, len(d.Sequences), tc.ids, len(tc.seqs))
			}
			for i := range tc.ids {
				if d.IDs[i] != tc.ids[i] {
					t.Errorf("id %d = %q, want %q", i, d.IDs[i], tc.ids[i])
				}
				s := d.Sequences[i]
				if s.Obs != tc.obs || !sameValues(s.Y, tc.seqs[i]) {
					t.Errorf("sequence %d = Obs %d, Y %v; want Obs %d, Y %v", i, s.Obs, s.Y, tc.obs, tc.seqs[i])
				}
			}
			if err := d.Validate(tc.obs); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
		})
	}

	// ReadCSVDataset is the by-name form.
	d, err := ssm.ReadCSVDataset(strings.NewReader("id,y\nq,1\n"), "id")
	if err != nil || len(d.IDs) != 1 || d.IDs[0] != "q" || d.Sequences[0].Y[0] != 1 {
		t.Errorf("ReadCSVDataset = %+v, %v", d, err)
	}
}

func TestReadCSVDatasetErrors(t *testing.T) {
	byName := ssm.CSVDataset{IDColumn: "id"}
	for _, tc := range []struct {
		spec ssm.CSVDataset
		csvErrorCase
	}{
		{byName, csvErrorCase{"empty input", "", 1, 0, "empty input"}},
		{byName, csvErrorCase{"header only", "id,y\n", 2, 0, "no data rows"}},
		{byName, csvErrorCase{"no id column", "seq,y\na,1\n", 1, 0, `no column named "id"`}},
		{byName, csvErrorCase{"duplicate id column", "id,y,id\na,1,b\n", 1, 3, "more than once"}},
		{byName, csvErrorCase{"no observation columns", "id\na\n", 1, 0, "no observation columns"}},
		{byName, csvErrorCase{"empty id", "id,y\na,1\n,2\n", 3, 1, "empty sequence id"}},
		{byName, csvErrorCase{"blank id", "y,id\n1,a\n2,  \n", 3, 2, "empty sequence id"}},
		{byName, csvErrorCase{"non-numeric cell", "id,y\na,1\nb,x\n", 3, 2, "non-numeric"}},
		{byName, csvErrorCase{"ragged row", "id,y\na,1\nb\n", 3, 2, "row has 1 fields"}},
		{byName, csvErrorCase{"Inf cell", "id,y,z\na,1,2\na,3,Inf\n", 3, 3, "infinite"}},
		{ssm.CSVDataset{IDIndex: 3}, csvErrorCase{"index beyond the row", "a,1\n", 1, 0, "id column 3 is beyond"}},
		{ssm.CSVDataset{IDIndex: 1}, csvErrorCase{"index, no observation columns", "a\nb\n", 1, 0, "no observation columns"}},
		{ssm.CSVDataset{IDIndex: 2}, csvErrorCase{"index, empty id", "1,a\n2,\n", 2, 2, "empty sequence id"}},
		{byName, csvErrorCase{"date column without a pick", "id,date,y\na,2024-01-02,1\n", 2, 2, "pick the value column by its header name or 1-based index of each sequence"}},
		{ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Name: "close"}}, csvErrorCase{"no value column", "id,y\na,1\n", 1, 0, `no column named "close"`}},
		{ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Name: "y"}}, csvErrorCase{"duplicate value column", "id,y,y\na,1,2\n", 1, 3, "more than once"}},
		{ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Index: 4}}, csvErrorCase{"value index beyond the row", "id,y\na,1\n", 1, 0, "no column 4"}},
		{ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Name: "id"}}, csvErrorCase{"value column is the id", "id,y\na,1\n", 1, 1, "is the id column"}},
		{ssm.CSVDataset{IDIndex: 1, Column: ssm.CSVColumn{Index: 1}}, csvErrorCase{"value index is the id", "a,1\n", 1, 1, "is the id column"}},
		{ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Name: "y"}}, csvErrorCase{"non-numeric value", "id,d,y\na,x,1\na,x,z\n", 3, 3, "non-numeric"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.spec.Read(strings.NewReader(tc.in))
			checkParseError(t, err, tc.csvErrorCase)
		})
	}
}

// A Column with both or a negative index is an error that does not
// wrap ErrData (a caller's mistake, not the data's).
func TestCSVDatasetColumnMisuse(t *testing.T) {
	for _, c := range []ssm.CSVColumn{{Name: "y", Index: 2}, {Index: -1}} {
		_, err := ssm.CSVDataset{IDColumn: "id", Column: c}.Read(strings.NewReader("id,y\na,1\n"))
		if err == nil || errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "at most one of Name and a positive Index") {
			t.Errorf("Column %+v: error %v; want a settings error not wrapping ErrData", c, err)
		}
	}
}

func TestCSVDatasetMisuse(t *testing.T) {
	for _, spec := range []ssm.CSVDataset{{}, {IDIndex: -1}, {IDColumn: "id", IDIndex: 1}} {
		func() {
			defer func() {
				if r := recover(); r == nil {
					t.Errorf("%+v.Read did not panic", spec)
				} else if msg, _ := r.(string); !strings.HasPrefix(msg, "ssm: ") {
					t.Errorf("%+v.Read panicked with %v, want an ssm: message", spec, r)
				}
			}()
			spec.Read(strings.NewReader("1,2\n"))
		}()
	}
}

// errReader returns some bytes and then a non-EOF error.
type errReader struct {
	data string
	err  error
}

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestReadCSVReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ssm.ReadCSV(&errReader{data: "1,2\n3,", err: boom})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v does not wrap the reader's error", err)
	}
	if errors.Is(err, ssm.ErrData) {
		t.Errorf("an I/O error %v must not wrap ErrData", err)
	}
}

// TestReadCSVFileDAX reads the bundled DAX returns and compares them with
// the summary that testdata/README.md gives (computed in R).
func TestReadCSVFileDAX(t *testing.T) {
	s, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "dax_returns.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Obs != 1 || s.Len() != 1859 {
		t.Fatalf("Obs %d, Len %d; want 1, 1859", s.Obs, s.Len())
	}
	// First line of the file, "-0.99785917513025935", is a %.17g double.
	if s.Y[0] != -0.99785917513025935 {
		t.Errorf("first value %v", s.Y[0])
	}
	var sum, lo, hi = 0.0, math.Inf(1), math.Inf(-1)
	for _, v := range s.Y {
		sum += v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	mean := sum / float64(len(s.Y))
	var ss float64
	for _, v := range s.Y {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / float64(len(s.Y)-1)) // R's sd divides by n-1
	// README: mean 0 (to rounding), sd 1.030084, min -9.6929, max 5.0108.
	if math.Abs(mean) > 1e-12 {
		t.Errorf("mean %v, want 0", mean)
	}
	if math.Abs(sd-1.030084) > 5e-7 {
		t.Errorf("sd %.8f, want 1.030084", sd)
	}
	if math.Abs(lo+9.6929) > 5e-5 || math.Abs(hi-5.0108) > 5e-5 {
		t.Errorf("min %v max %v, want -9.6929 and 5.0108", lo, hi)
	}
}

func TestReadCSVFileErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := ssm.ReadCSVFile(filepath.Join(dir, "missing.csv"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(path, []byte("y\n1\nx1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ssm.ReadCSVFile(path)
	var pe *ssm.ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Column != 1 || !errors.Is(err, ssm.ErrData) {
		t.Fatalf("bad file: %v", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("message %q does not name the file", err)
	}
}

func TestWriteCSV(t *testing.T) {
	s := ssm.Sequence{Obs: 2, Y: []float64{1, nan, 0.1, -2e-300, 1e21, 5e-324}}
	var buf bytes.Buffer
	if err := ssm.WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	const want = "1,NaN\n0.1,-2e-300\n1e+21,5e-324\n"
	if buf.String() != want {
		t.Errorf("WriteCSV wrote %q, want %q", buf.String(), want)
	}
	back, err := ssm.ReadCSV(&buf)
	if err != nil || back.Obs != 2 || !sameValues(back.Y, s.Y) {
		t.Errorf("round trip: %v, %v", back, err)
	}

	for _, bad := range []ssm.Sequence{
		{Obs: 0, Y: []float64{1}},
		{Obs: 2, Y: []float64{1, 2, 3}},
		{Obs: 1},
		{Obs: 2, Y: []float64{1, 2, 3, math.Inf(-1)}},
	} {
		var buf bytes.Buffer
		err := ssm.WriteCSV(&buf, bad)
		if !errors.Is(err, ssm.ErrData) || buf.Len() != 0 {
			t.Errorf("WriteCSV(%v) = %v after writing %d bytes; want an ErrData error and nothing written", bad, err, buf.Len())
		}
	}
	boom := errors.New("boom")
	if err := ssm.WriteCSV(failWriter{boom}, s); !errors.Is(err, boom) {
		t.Errorf("writer error: got %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

var _ io.Writer = failWriter{}

func BenchmarkReadCSV(b *testing.B) {
	const rows = 100_000
	var buf bytes.Buffer
	buf.WriteString("r,v\n")
	for i := range rows {
		buf.WriteString(strconv.FormatFloat(float64(i)*1.000123e-3, 'g', -1, 64))
		buf.WriteString(",NA\n")
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := ssm.ReadCSV(bytes.NewReader(data))
		if err != nil || s.Len() != rows {
			b.Fatal(s.Len(), err)
		}
	}
}

// Quoted numbers with thousands separators ("10,000.00") read as the
// number, and DataFile.Note is told once with the first cell and the
// count; commas that are not digit groups (a decimal comma) stay an
// error.
func TestThousandsSeparators(t *testing.T) {
	text := "Date,Price\n2024-01-02,\"10,000.00\"\n2024-01-03,\"9,876.5\"\n2024-01-04,12.5\n2024-01-05,\"-1,234,567\"\n"
	s, err := ssm.CSVColumn{Name: "Price"}.Read(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{10000, 9876.5, 12.5, -1234567}; !sameValues(s.Y, want) {
		t.Errorf("read %v, want %v", s.Y, want)
	}
	if d, err := ssm.ReadCSVDataset(strings.NewReader("id,y\na,\"1,000\"\nb,2\n"), "id"); err != nil || d.Sequences[0].Y[0] != 1000 {
		t.Errorf("dataset: %v, %v; want 1000 first", d, err)
	}
	if s, err := ssm.ReadCSV(strings.NewReader("y\n\"1,000.25\"\n3\n")); err != nil || !sameValues(s.Y, []float64{1000.25, 3}) {
		t.Errorf("one column: %v, %v", s.Y, err)
	}
	path := filepath.Join(t.TempDir(), "prices.csv")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var notes []string
	if _, _, err := (ssm.DataFile{Path: path, Column: "Price", Note: func(m string) { notes = append(notes, m) }}).Open(); err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], `read "10,000.00" (line 2, column 2) as 10000 (and 2 more cells like it)`) {
		t.Errorf("notes %q, want one naming the first grouped cell and the count", notes)
	}
	for _, cell := range []string{"0,5", "1,25", "12,3456", "1,234,56", ",123", "1,234.", "1,,234", "1234,567"} {
		_, err := ssm.ReadCSV(strings.NewReader("y\n\"" + cell + "\"\n"))
		if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "non-numeric cell") {
			t.Errorf("%q: error %v, want a non-numeric cell", cell, err)
		}
	}
}

// A file with a UTF-16 byte order mark (little- or big-endian) is decoded,
// with a note naming the encoding; characters beyond the BMP (surrogate
// pairs) survive in headers.
func TestUTF16(t *testing.T) {
	text := "\uFEFFDate,Kurs \U0001F4C8\n2024-01-02,1.5\n2024-01-03,NA\n2024-01-04,-2.25\n"
	encode := func(big bool) []byte {
		var b []byte
		for _, r := range text {
			var units []uint16
			if r > 0xFFFF {
				r -= 0x10000
				units = []uint16{uint16(0xD800 + r>>10), uint16(0xDC00 + r&0x3FF)}
			} else {
				units = []uint16{uint16(r)}
			}
			for _, u := range units {
				if big {
					b = append(b, byte(u>>8), byte(u))
				} else {
					b = append(b, byte(u), byte(u>>8))
				}
			}
		}
		return b
	}
	want := []float64{1.5, nan, -2.25}
	for _, big := range []bool{false, true} {
		b := encode(big)
		s, err := ssm.CSVColumn{Name: "Kurs \U0001F4C8"}.Read(bytes.NewReader(b))
		if err != nil || !sameValues(s.Y, want) {
			t.Errorf("big-endian %v: %v, %v; want %v", big, s.Y, err, want)
		}
		path := filepath.Join(t.TempDir(), "u16.csv")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var notes []string
		d, _, err := ssm.DataFile{Path: path, Column: "2", Note: func(m string) { notes = append(notes, m) }}.Open()
		if err != nil || !sameValues(d.Sequences[0].Y, want) {
			t.Errorf("big-endian %v: DataFile: %v", big, err)
		}
		enc := map[bool]string{false: "UTF-16 little-endian", true: "UTF-16 big-endian"}[big]
		if len(notes) != 1 || !strings.Contains(notes[0], enc) {
			t.Errorf("notes %q, want one naming %s", notes, enc)
		}
	}
	// A truncated file (an odd last byte) and an unpaired surrogate are
	// replacement characters, not a panic or a hang.
	b := append(encode(false), 0x31)
	if _, err := ssm.ReadCSV(bytes.NewReader(b)); err == nil {
		t.Error("odd trailing byte: no error")
	}
	if _, err := ssm.ReadCSV(bytes.NewReader([]byte{0xFF, 0xFE, 0x00, 0xD8, '1', 0, '\n', 0})); err == nil {
		t.Error("unpaired surrogate: no error")
	}
}
