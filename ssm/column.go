package ssm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// CSVColumn picks one column of a CSV file with several columns (a date
// and a return, say) as a one-component sequence. Exactly one of Name and
// Index must be set; ParseCSVColumn makes one from a command-line string.
type CSVColumn struct {
	// Name is the header name of the column. The first row is then always
	// a header, and must hold this name (after trimming whitespace)
	// exactly once.
	Name string
	// Index is the 1-based index of the column, used when Name is "". The
	// first row is then a header when its cell in the column is neither a
	// number nor a missing marker and does not start with a digit, a sign
	// or '.' (as in ReadCSV).
	Index int
}

// ParseCSVColumn reads a column choice as a command line gives it: an
// integer is a 1-based index (it must be at least 1), anything else a
// header name (whitespace around it is ignored).
func ParseCSVColumn(spec string) (CSVColumn, error) {
	spec = strings.TrimSpace(spec)
	if k, err := strconv.Atoi(spec); err == nil {
		if k < 1 {
			return CSVColumn{}, fmt.Errorf("ssm: column index %d: columns count from 1", k)
		}
		return CSVColumn{Index: k}, nil
	}
	if spec == "" {
		return CSVColumn{}, errors.New("ssm: empty column name")
	}
	return CSVColumn{Name: spec}, nil
}

// Read reads the column from r. Cells are read as in ReadCSV: "", "NaN"
// and the markers of common sources ("NA", "null", ".", "#N/A", …; see
// ReadCSV) mark a missing value and become NaN, blank lines
// are skipped (a file with a column to pick has several columns, whose
// missing rows are ",,"), a leading UTF-8 byte order mark is ignored. Rows may have
// different numbers of cells (the other columns are not read), but every
// row must reach the column. A non-numeric or infinite cell in the column,
// a row too short to hold it, a name missing from the header or held by
// more than one column, an index beyond the first row, input with no data
// rows or a CSV syntax error gives a *ParseError naming the line of the
// input and the 1-based column of the file. A CSVColumn with neither or
// both of Name and Index set, or a negative Index, gives an error that does
// not wrap ErrData. Read never panics.
func (c CSVColumn) Read(r io.Reader) (Sequence, error) {
	return c.read(r, nil)
}

func (c CSVColumn) read(r io.Reader, n *csvNotes) (Sequence, error) {
	if (c.Name == "") == (c.Index == 0) || c.Index < 0 {
		return Sequence{}, fmt.Errorf("ssm: CSVColumn{Name: %q, Index: %d}: set exactly one of Name and a positive Index", c.Name, c.Index)
	}
	cr := newCSVReaderNotes(r, n)
	rec, err := cr.Read()
	if err == io.EOF {
		return Sequence{}, &ParseError{Line: 1, Msg: "empty input: no data rows"}
	}
	if err != nil {
		return Sequence{}, convertCSVError(err)
	}
	line, _ := cr.FieldPos(0)
	lastLine, _ := cr.FieldPos(len(rec) - 1)
	j, header := c.Index-1, c.Name != ""
	if header {
		if j, err = headerColumn(rec, c.Name, line); err != nil {
			return Sequence{}, err
		}
	} else {
		if j >= len(rec) {
			return Sequence{}, &ParseError{Line: line, Msg: fmt.Sprintf("no column %d: the first row has %d columns", c.Index, len(rec))}
		}
		header = looksLikeHeader(rec[j:j+1], -1)
	}
	var y []float64
	for {
		if !header {
			if j >= len(rec) {
				return Sequence{}, &ParseError{Line: line, Column: len(rec) + 1, Msg: fmt.Sprintf("row has %d fields, no column %d", len(rec), j+1)}
			}
			v, kind := parseCell(rec[j])
			if !kind.ok() {
				l, _ := cr.FieldPos(j)
				return Sequence{}, &ParseError{Line: l, Column: j + 1, Msg: kind.message(rec[j])}
			}
			if kind == cellGrouped {
				l, _ := cr.FieldPos(j)
				n.grouped(rec[j], v, l, j+1)
			}
			y = append(y, v)
		}
		header = false
		if rec, err = cr.Read(); err == io.EOF {
			break
		} else if err != nil {
			return Sequence{}, convertCSVError(err)
		}
		line, _ = cr.FieldPos(0)
		lastLine, _ = cr.FieldPos(len(rec) - 1)
	}
	if len(y) == 0 {
		return Sequence{}, &ParseError{Line: lastLine + 1, Msg: "no data rows after the header (sequence of length 0)"}
	}
	return Sequence{Obs: 1, Y: y}, nil
}

// headerColumn returns the index of the header cell rec holds name in
// (after trimming whitespace), or a *ParseError on line when it holds it
// not once: none (the error lists the header, cut to 200 bytes) or more.
func headerColumn(rec []string, name string, line int) (int, error) {
	j := -1
	for i, cell := range rec {
		if strings.TrimSpace(cell) != name {
			continue
		}
		if j >= 0 {
			return -1, &ParseError{Line: line, Column: i + 1, Msg: fmt.Sprintf("column %s appears more than once in the header", quoteCell(name))}
		}
		j = i
	}
	if j >= 0 {
		return j, nil
	}
	names := make([]string, len(rec))
	for i, cell := range rec {
		names[i] = strings.TrimSpace(cell)
	}
	h := strings.Join(names, ",")
	if len(h) > 200 {
		h = strings.ToValidUTF8(h[:200], "") + "..."
	}
	return -1, &ParseError{Line: line, Msg: fmt.Sprintf("no column named %s in the header %q", quoteCell(name), h)}
}

// ReadFile opens the named file and reads the column with Read. Errors are
// prefixed with the path and still wrap *ParseError and ErrData.
func (c CSVColumn) ReadFile(path string) (Sequence, error) {
	return c.readFile(path, nil)
}

func (c CSVColumn) readFile(path string, n *csvNotes) (Sequence, error) {
	f, err := os.Open(path)
	if err != nil {
		return Sequence{}, err
	}
	defer f.Close()
	s, err := c.read(f, n)
	if err != nil {
		return Sequence{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// DataFile names a file of observations and how to read it: what a
// command taking its data from a file needs (examples/fit's -data, -id
// and -col flags).
type DataFile struct {
	// Path is a binary sequence file (WriteBinary's format) when it ends
	// in ".bin", and a CSV file otherwise.
	Path string
	// Obs is the number of components per row of a binary file (0 means
	// 1); a CSV file has as many as it has observation columns.
	Obs int
	// ID, when set, names the id column of a CSV file holding several
	// sequences in long format (ReadCSVDataset).
	ID string
	// Column, when set, picks one column of a CSV file by header name or
	// 1-based index (ParseCSVColumn, CSVColumn); with ID, the observation
	// column of a panel (CSVDataset.Column).
	Column string
	// Note, when non-nil, is called once for each thing the reader did to
	// a CSV file unasked, with a sentence naming the file: a UTF-16 file
	// decoded, quoted numbers read without their thousands separators
	// ("10,000.00" as 10000; the first such cell and how many).
	Note func(string)
}

// Open reads the data set. A binary file is memory-mapped by OpenBinary
// (nothing is read until a value is used, so a file of 10^8 rows opens in
// milliseconds); a CSV file is read by ReadCSVFile, ReadCSVDataset (ID) or
// CSVColumn.ReadFile (Column), with errors prefixed by the path; ID and
// Column together read one column of a panel (CSVDataset with Column).
// The returned Closer releases the mapping of a binary file (and does
// nothing for a CSV file): the data must not be used after Close. ID and
// Column apply to CSV files only.
func (f DataFile) Open() (Dataset, io.Closer, error) {
	none := io.Closer(nopCloser{})
	switch {
	case strings.HasSuffix(f.Path, ".bin"):
		if f.ID != "" || f.Column != "" {
			return Dataset{}, none, fmt.Errorf("ssm: %s: ID and Column apply to CSV files, not to a binary file", f.Path)
		}
		m, err := OpenBinary(f.Path, max(f.Obs, 1))
		if err != nil {
			return Dataset{}, none, err
		}
		// The mapping is not validated at open: scan it once, streaming
		// through the pages (≈ 0.1 s per 10⁷ values), so that ±Inf is an
		// error naming its place rather than a NaN gradient later, and a
		// file that is not little-endian float64 data is refused.
		if err := checkBinaryValues(m.Seq()); err != nil {
			m.Close()
			return Dataset{}, none, fmt.Errorf("%s: %w", f.Path, err)
		}
		return Dataset{Sequences: []Sequence{m.Seq()}}, m, nil
	}
	notes := new(csvNotes)
	defer func() {
		if f.Note != nil {
			for _, m := range notes.messages(f.Path) {
				f.Note(m)
			}
		}
	}()
	switch {
	case f.Column != "" && f.ID == "":
		c, err := ParseCSVColumn(f.Column)
		if err != nil {
			return Dataset{}, none, fmt.Errorf("%s: %w", f.Path, err)
		}
		s, err := c.readFile(f.Path, notes)
		return oneSequence(s, err)
	case f.ID == "":
		return oneSequence(readCSVFile(f.Path, notes))
	}
	ds := CSVDataset{IDColumn: f.ID}
	if f.Column != "" {
		c, err := ParseCSVColumn(f.Column)
		if err != nil {
			return Dataset{}, none, fmt.Errorf("%s: %w", f.Path, err)
		}
		ds.Column = c
	}
	file, err := os.Open(f.Path)
	if err != nil {
		return Dataset{}, none, err
	}
	defer file.Close()
	d, err := ds.read(bufio.NewReader(file), notes)
	if err != nil {
		return Dataset{}, none, fmt.Errorf("%s: %w", f.Path, err)
	}
	return d, none, nil
}

func oneSequence(s Sequence, err error) (Dataset, io.Closer, error) {
	if err != nil {
		return Dataset{}, nopCloser{}, err
	}
	return Dataset{Sequences: []Sequence{s}}, nopCloser{}, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// checkBinaryValues is Sequence.CheckFinite plus a plausibility test of a
// binary file's values, in one pass: the format has no header, so a text
// file named .bin (its bytes read as float64 are mostly 1e−80…1e−30) or a
// big-endian one (magnitudes all over 1e±300) would be fitted as data.
// More than half of the non-zero values beyond 1e±20 is refused.
func checkBinaryValues(s Sequence) error {
	nonzero, extreme, first := 0, 0, -1
	for i, v := range s.Y {
		if v == 0 || math.IsNaN(v) {
			continue
		}
		if math.IsInf(v, 0) {
			return s.CheckFinite() // names the place
		}
		nonzero++
		if a := math.Abs(v); a < 1e-20 || a > 1e20 {
			extreme++
			if first < 0 {
				first = i
			}
		}
	}
	if extreme > 0 && 2*extreme > nonzero {
		return fmt.Errorf("%w: %d of the %d non-zero values are beyond 1e±20 (the first, %g, at value %d): "+
			"not little-endian float64 data (a text file named .bin, or big-endian bytes?)", ErrData, extreme, nonzero, s.Y[first], first)
	}
	return nil
}
