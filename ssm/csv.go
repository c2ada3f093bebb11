package ssm

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseError reports malformed CSV input. It wraps ErrData, so
// errors.Is(err, ErrData) holds.
type ParseError struct {
	// Line is the 1-based line of the input where the problem is. For input
	// with no data rows it is the line after the last one read.
	Line int
	// Column is the 1-based field (not byte) of the offending cell within
	// its row. It is 0 when the problem concerns a whole row or the whole
	// input: no data rows, no observation columns, a CSV syntax error.
	Column int
	// Msg describes the problem.
	Msg string
}

func (e *ParseError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("ssm: csv line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("ssm: csv line %d: %s", e.Line, e.Msg)
}

// Unwrap makes errors.Is(err, ErrData) true.
func (e *ParseError) Unwrap() error { return ErrData }

// ReadCSV reads one sequence from r: one row per time step, one column per
// observation component, fields separated by commas (RFC 4180 quoting).
//
// The first row is a header, and is skipped, when any of its cells is
// neither a number nor a missing marker, and none of those cells starts
// with a digit, a sign or '.': a first row such as "0.5x" is a malformed
// number, a *ParseError on line 1, not a header. A header whose names all
// look like numbers is read as data. Whitespace around a cell is ignored.
// The cells "", "NaN", "NA" (R), "null" (Yahoo Finance), "." (FRED),
// "#N/A", "N/A", "#N/A N/A" (Excel, Bloomberg) and "None" (pandas), in
// any case, mark a missing component and become NaN. A number followed
// by "%" (Investing.com's "Change %": -0.52%) reads as that number, in
// percent. A quoted number with commas between groups of three digits
// ("10,000.00", as spreadsheets and Investing.com write prices and
// volumes) reads as the number without them (10000); DataFile.Note is
// told so. In a one-column
// file an empty cell is an empty line, so there a blank line after the
// header (or from the start, without one) and before the last data row
// is a missing value (pandas' to_csv of a series with gaps writes them
// so; skipping them would shift every later observation in time);
// trailing blank lines (and lines of spaces, or an empty quoted cell, at
// the end) are ignored. In a file of several columns blank lines are
// skipped (a missing row is ",,"). A leading UTF-8 byte order mark is
// ignored, and a file that starts with a UTF-16 byte order mark (little-
// or big-endian: Excel's "Unicode text", PowerShell's redirections) is
// decoded to UTF-8. Numbers are read with strconv.ParseFloat. A non-numeric cell
// in a file of several columns, or a row split by ';', gets a hint in its
// error (a date column; a semicolon-separated file).
//
// Every row must have as many cells as the first. A non-numeric cell, a
// ragged row, an infinite value (Inf, 1e999), input with no data rows or a
// CSV syntax error gives a *ParseError naming the line and column. Rows
// whose cells are all missing are kept: a wholly missing observation is
// valid data (it adds nothing to the likelihood), so even a sequence with
// every value missing is returned without error. ReadCSV never panics.
//
// An error from r itself is returned wrapped, and does not wrap ErrData.
func ReadCSV(r io.Reader) (Sequence, error) {
	return readCSVSeq(r, nil)
}

func readCSVSeq(r io.Reader, n *csvNotes) (Sequence, error) {
	res, err := readCSV(r, "", -1, CSVColumn{}, n)
	if err != nil {
		return Sequence{}, err
	}
	return Sequence{Obs: res.obs, Y: res.seqs[0]}, nil
}

// ReadCSVFile opens the named file and reads it with ReadCSV. Errors are
// prefixed with the path and still wrap *ParseError and ErrData.
func ReadCSVFile(path string) (Sequence, error) {
	return readCSVFile(path, nil)
}

func readCSVFile(path string, n *csvNotes) (Sequence, error) {
	f, err := os.Open(path)
	if err != nil {
		return Sequence{}, err
	}
	defer f.Close()
	s, err := readCSVSeq(bufio.NewReader(f), n)
	if err != nil {
		return Sequence{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ReadCSVDataset reads several sequences from r, told apart by the column
// whose header is idColumn. It is CSVDataset{IDColumn: idColumn}.Read(r).
func ReadCSVDataset(r io.Reader, idColumn string) (Dataset, error) {
	return CSVDataset{IDColumn: idColumn}.Read(r)
}

// CSVDataset describes a CSV file holding several sequences in long
// format: one row per time step of some sequence, a sequence-id column and
// one column per observation component. Exactly one of IDColumn and IDIndex
// must be set.
type CSVDataset struct {
	// IDColumn is the header name of the id column. The first row is then
	// always a header, and must hold this name (after trimming whitespace)
	// exactly once.
	IDColumn string
	// IDIndex is the 1-based index of the id column, used when IDColumn is
	// "". The first row is then a header when any of its cells other than
	// the id is neither a number nor a missing marker, unless such a cell
	// starts with a digit, a sign or '.' (a malformed number, as in
	// ReadCSV).
	IDIndex int
	// Column, when set (Name or Index, as in CSVColumn), picks the one
	// observation column of a panel that holds other columns too (a date,
	// a volume: id,date,close,volume); the other columns are not read.
	// Its zero value reads every column but the id as the observation
	// components. A Name needs a header (the first row is then always
	// one); an Index counts the file's columns from 1, id included.
	Column CSVColumn
}

// Read reads a Dataset from r. Cells are read as in ReadCSV. Rows of one
// sequence need not be contiguous: sequences are ordered by the first
// appearance of their id, and the rows of a sequence keep their order in
// the input. Ids are compared after trimming whitespace and stored in
// Dataset.IDs. An empty id, an id holding a control character (which
// encoding/csv would not write back unchanged), a row without observation columns and every
// error of ReadCSV give a *ParseError. Read never panics on any input; it
// panics when neither or both of IDColumn and IDIndex are set, or IDIndex
// is negative.
func (c CSVDataset) Read(r io.Reader) (Dataset, error) {
	return c.read(r, nil)
}

func (c CSVDataset) read(r io.Reader, n *csvNotes) (Dataset, error) {
	idCol := -1
	switch {
	case c.IDColumn != "" && c.IDIndex != 0:
		panic("ssm: CSVDataset with both IDColumn and IDIndex set")
	case c.IDColumn == "" && c.IDIndex <= 0:
		panic("ssm: CSVDataset needs IDColumn or a positive IDIndex")
	case c.IDColumn == "":
		idCol = c.IDIndex - 1
	}
	if c.Column.Name != "" && c.Column.Index != 0 || c.Column.Index < 0 {
		return Dataset{}, fmt.Errorf("ssm: CSVDataset.Column = CSVColumn{Name: %q, Index: %d}: set at most one of Name and a positive Index", c.Column.Name, c.Column.Index)
	}
	res, err := readCSV(r, c.IDColumn, idCol, c.Column, n)
	if err != nil {
		return Dataset{}, err
	}
	d := Dataset{Sequences: make([]Sequence, len(res.seqs)), IDs: res.ids}
	for i, y := range res.seqs {
		d.Sequences[i] = Sequence{Obs: res.obs, Y: y}
	}
	return d, nil
}

// WriteCSV writes s to w in the format ReadCSV reads: no header, one row
// per time step, numbers in the shortest form that reads back exactly
// (strconv 'g', -1) and NaN written as "NaN". It refuses an invalid
// sequence or one holding ±Inf before writing anything.
func WriteCSV(w io.Writer, s Sequence) error {
	if err := s.Validate(0); err != nil {
		return err
	}
	if err := s.CheckFinite(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	var buf []byte
	for t := 0; t < s.Len(); t++ {
		buf = buf[:0]
		for j, v := range s.At(t) {
			if j > 0 {
				buf = append(buf, ',')
			}
			if math.IsNaN(v) {
				buf = append(buf, "NaN"...)
			} else {
				buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
			}
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// csvResult is what readCSV parsed: one flat row-major slice per sequence.
type csvResult struct {
	obs  int
	seqs [][]float64
	ids  []string // nil without an id column
}

// readCSV parses r. idName, when non-empty, names the id column in the
// header; otherwise idCol is its 0-based index, or -1 for a single
// sequence. pick, when set, is the one observation column to read. n,
// when non-nil, collects what the reader did unasked.
func readCSV(r io.Reader, idName string, idCol int, pick CSVColumn, n *csvNotes) (csvResult, error) {
	cr := newCSVReaderNotes(r, n) // ragged rows are reported by us, with the column

	rec, err := cr.Read()
	if err == io.EOF {
		return csvResult{}, &ParseError{Line: 1, Msg: "empty input: no data rows"}
	}
	if err != nil {
		return csvResult{}, convertCSVError(err)
	}
	line, _ := cr.FieldPos(0)
	sc, err := csvLayout(rec, line, idName, idCol, pick)
	if err != nil {
		return csvResult{}, err
	}
	sc.cr, sc.notes = cr, n
	lastLine, _ := cr.FieldPos(sc.width - 1)
	header := sc.header
	for {
		// In a one-column file a line of spaces is a blank line: missing
		// when a data row follows (the gap fill in row), ignored at the end.
		if !header && !(sc.oneColumn && strings.TrimSpace(rec[0]) == "") {
			if err := sc.row(rec, line); err != nil {
				return csvResult{}, err
			}
		}
		header = false

		rec, err = cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return csvResult{}, convertCSVError(err)
		}
		line, _ = cr.FieldPos(0)
		lastLine, _ = cr.FieldPos(len(rec) - 1)
	}
	if sc.rows == 0 {
		return csvResult{}, &ParseError{Line: lastLine + 1, Msg: "no data rows after the header (sequence of length 0)"}
	}
	return sc.res, nil
}

// csvScan is readCSV's layout, from the first row, and its state.
type csvScan struct {
	width, idCol int
	col          int // the picked observation column (−1: every column but the id)
	header       bool
	// semicolons: a semicolon-separated file (European spreadsheets, with
	// decimal commas) reads as one column whose rows then split at the
	// commas.
	semicolons bool
	oneColumn  bool // one column and no ids: blank lines are missing values
	cr         *csv.Reader
	notes      *csvNotes
	res        csvResult
	index      map[string]int
	// prev is the line of the last row read (header or data); in a
	// one-column file without ids the lines skipped between rows are
	// blank: missing values.
	prev, rows int
}

// csvLayout reads the layout from the first row rec, at line.
func csvLayout(rec []string, line int, idName string, idCol int, pick CSVColumn) (*csvScan, error) {
	width := len(rec)
	sc := &csvScan{width: width, semicolons: width == 1 && strings.Contains(rec[0], ";"), col: -1}
	var err error
	if idName != "" {
		sc.header = true
		if idCol, err = headerColumn(rec, idName, line); err != nil {
			return nil, err
		}
	} else {
		if idCol >= width {
			return nil, &ParseError{Line: line, Msg: fmt.Sprintf("id column %d is beyond the %d columns of the first row", idCol+1, width)}
		}
		sc.header = looksLikeHeader(rec, idCol)
	}
	sc.idCol = idCol
	obs := width
	if idCol >= 0 {
		obs--
	}
	switch {
	case pick.Name != "":
		sc.header = true
		if sc.col, err = headerColumn(rec, pick.Name, line); err != nil {
			return nil, err
		}
	case pick.Index > 0:
		sc.col = pick.Index - 1
		if sc.col >= width {
			return nil, &ParseError{Line: line, Msg: fmt.Sprintf("no column %d: the first row has %d columns", pick.Index, width)}
		}
		if idName == "" {
			sc.header = looksLikeHeader(rec[sc.col:sc.col+1], -1)
		}
	}
	if sc.col >= 0 {
		if sc.col == idCol {
			return nil, &ParseError{Line: line, Column: sc.col + 1, Msg: "the observation column is the id column"}
		}
		obs = 1
	}
	if obs == 0 {
		return nil, &ParseError{Line: line, Msg: "no observation columns"}
	}
	sc.res = csvResult{obs: obs}
	sc.oneColumn = width == 1 && idCol < 0
	if sc.header {
		sc.prev = line
	}
	if idCol >= 0 {
		sc.index = make(map[string]int)
	} else {
		sc.res.seqs = [][]float64{nil}
	}
	return sc, nil
}

// row reads the data row rec at line.
func (sc *csvScan) row(rec []string, line int) error {
	width, idCol, col := sc.width, sc.idCol, sc.col
	if len(rec) != width {
		c := min(len(rec), width) + 1
		msg := fmt.Sprintf("row has %d fields, the first row has %d", len(rec), width)
		if sc.semicolons {
			msg += semicolonHint
		}
		return &ParseError{Line: line, Column: c, Msg: msg}
	}
	k := 0
	if idCol >= 0 {
		var err error
		if k, err = sc.sequence(rec[idCol]); err != nil {
			return err
		}
	}
	y := sc.res.seqs[k]
	if sc.oneColumn {
		for ; sc.prev+1 < line; sc.prev++ {
			y = append(y, math.NaN())
			sc.rows++
		}
		sc.prev = line
	}
	for i, cell := range rec {
		if i == idCol || col >= 0 && i != col {
			continue
		}
		v, kind := parseCell(cell)
		if !kind.ok() {
			l, _ := sc.cr.FieldPos(i)
			msg := kind.message(cell)
			switch {
			case sc.semicolons || strings.Contains(cell, ";"):
				msg += semicolonHint
			case kind == cellBad && width > 1 && idCol < 0:
				msg += " (a date or label column? " + PickColumnHint + ")"
			case kind == cellBad && col < 0 && sc.res.obs > 1:
				msg += " (a date or label column? " + PickColumnHint + " of each sequence)"
			}
			return &ParseError{Line: l, Column: i + 1, Msg: msg}
		}
		if kind == cellGrouped {
			l, _ := sc.cr.FieldPos(i)
			sc.notes.grouped(cell, v, l, i+1)
		}
		y = append(y, v)
	}
	sc.res.seqs[k] = y
	sc.rows++
	return nil
}

// sequence returns the index of the sequence whose id is the cell,
// adding it at its first row.
func (sc *csvScan) sequence(cell string) (int, error) {
	id := strings.TrimSpace(cell)
	if id == "" {
		l, _ := sc.cr.FieldPos(sc.idCol)
		return 0, &ParseError{Line: l, Column: sc.idCol + 1, Msg: "empty sequence id"}
	}
	if strings.ContainsFunc(id, unicode.IsControl) {
		// encoding/csv turns \r\n inside quotes into \n, so such an id
		// would not survive being written and read back.
		l, _ := sc.cr.FieldPos(sc.idCol)
		return 0, &ParseError{Line: l, Column: sc.idCol + 1, Msg: fmt.Sprintf("sequence id %s holds a control character (line break, tab, ...)", quoteCell(id))}
	}
	k, ok := sc.index[id]
	if !ok {
		k = len(sc.res.seqs)
		sc.index[id] = k
		sc.res.seqs = append(sc.res.seqs, nil)
		sc.res.ids = append(sc.res.ids, id)
	}
	return k, nil
}

// PickColumnHint is the advice in the error about a non-numeric cell of a
// file of several columns (a date or a label column): read the value
// column alone (CSVColumn; CSVDataset.Column with an id column). A
// command that reads the column from a flag may replace it in the
// message by the flag's name.
const PickColumnHint = "pick the value column by its header name or 1-based index"

// semicolonHint ends the message of a row that a semicolon-separated file
// (European spreadsheets, decimal commas) makes malformed.
const semicolonHint = "; the data hold ';': a semicolon-separated file? The reader takes comma-separated values with '.' decimals"

// looksLikeHeader reports whether the first row rec is a header: some
// cell other than the id column is not a number or a missing marker, and
// none of those cells starts like a number (a digit, a sign or '.'), which
// would make it a malformed number such as "0.5x" in the first data row
// rather than a column name.
func looksLikeHeader(rec []string, idCol int) bool {
	header := false
	for i, cell := range rec {
		if i == idCol {
			continue
		}
		if _, kind := parseCell(cell); kind != cellBad {
			continue
		}
		c := strings.TrimSpace(cell)
		if c != "" && strings.ContainsRune("0123456789+-.", rune(c[0])) {
			return false
		}
		header = true
	}
	return header
}

// convertCSVError turns an encoding/csv syntax error into a *ParseError;
// other errors come from the reader and are passed on.
func convertCSVError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &ParseError{Line: pe.Line, Msg: fmt.Sprintf("malformed CSV at byte %d of the line: %v", pe.Column, pe.Err)}
	}
	return fmt.Errorf("ssm: reading csv: %w", err)
}

type cellKind int

const (
	cellNumber cellKind = iota
	cellMissing
	cellInf      // parses to ±Inf
	cellOverflow // finite syntax beyond the float64 range
	cellBad      // not a number
	cellGrouped  // a number with thousands separators: 10,000.00
)

// ok reports whether the cell is a value: a number or a missing marker.
func (k cellKind) ok() bool { return k == cellNumber || k == cellMissing || k == cellGrouped }

func (k cellKind) message(cell string) string {
	switch k {
	case cellInf:
		return fmt.Sprintf("infinite value %s", quoteCell(cell))
	case cellOverflow:
		return fmt.Sprintf("value %s overflows float64", quoteCell(cell))
	}
	return fmt.Sprintf("non-numeric cell %s", quoteCell(cell))
}

// missingMarkers are the cells (besides "" and NaN) that data sources
// write for a missing value, compared in any case: R's NA, Yahoo
// Finance's null, FRED's ".", Excel's and Bloomberg's #N/A, pandas'
// None. None of them can be a number, so reading them as missing never
// hides a malformed value.
var missingMarkers = []string{"NA", "null", ".", "#N/A", "N/A", "#N/A N/A", "None"}

// missingMarker reports whether the trimmed cell s marks a missing value.
func missingMarker(s string) bool {
	if s == "" {
		return true
	}
	for _, m := range missingMarkers {
		if strings.EqualFold(s, m) {
			return true
		}
	}
	return false
}

// parseCell reads one cell; missing cells are NaN. A number followed by
// "%" (Investing.com's "Change %" column: -0.52%) reads as that number:
// percent is the unit the default priors of models.SVM and GARCH assume.
func parseCell(cell string) (float64, cellKind) {
	s := strings.TrimSpace(cell)
	if missingMarker(s) {
		return math.NaN(), cellMissing
	}
	if p, ok := strings.CutSuffix(s, "%"); ok && p != "" && !strings.HasSuffix(p, "%") {
		s = strings.TrimSpace(p)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && strings.IndexByte(s, ',') > 0 {
		if g, ok := ungroup(s); ok {
			if v, err = strconv.ParseFloat(g, 64); err == nil && !math.IsInf(v, 0) {
				return v, cellGrouped
			}
		}
	}
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0):
		return 0, cellOverflow
	case err != nil:
		return 0, cellBad
	case math.IsNaN(v):
		return v, cellMissing
	case math.IsInf(v, 0):
		return 0, cellInf
	}
	return v, cellNumber
}

// ungroup removes the thousands separators of s when it is a number
// written with them: an optional sign, 1 to 3 digits, then groups of a
// comma and exactly 3 digits, then optionally '.' and digits ("10,000.00",
// "-1,234,567"). A decimal comma ("0,5", "1,25") or any other use of commas
// is not one.
func ungroup(s string) (string, bool) {
	t := s
	if t != "" && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	intPart, frac, hasFrac := strings.Cut(t, ".")
	groups := strings.Split(intPart, ",")
	if len(groups) < 2 || len(groups[0]) < 1 || len(groups[0]) > 3 {
		return "", false
	}
	digits := func(g string) bool {
		for i := 0; i < len(g); i++ {
			if g[i] < '0' || g[i] > '9' {
				return false
			}
		}
		return true
	}
	for i, g := range groups {
		if !digits(g) || i > 0 && len(g) != 3 {
			return "", false
		}
	}
	if hasFrac && (frac == "" || !digits(frac)) {
		return "", false
	}
	return strings.ReplaceAll(s, ",", ""), true
}

// csvNotes collects what a reader did to the input unasked, for
// DataFile.Note: the first cell read with thousands separators and how
// many there were, and a UTF-16 encoding decoded. A nil *csvNotes
// collects nothing.
type csvNotes struct {
	groupedCell      string
	groupedValue     float64
	groupedLine, col int
	groupedCells     int
	encoding         string // "UTF-16 little-endian", "UTF-16 big-endian" or ""
}

func (n *csvNotes) grouped(cell string, v float64, line, col int) {
	if n == nil {
		return
	}
	if n.groupedCells == 0 {
		n.groupedCell, n.groupedValue, n.groupedLine, n.col = strings.TrimSpace(cell), v, line, col
	}
	n.groupedCells++
}

// messages returns the notes as sentences about the file at path.
func (n *csvNotes) messages(path string) []string {
	if n == nil {
		return nil
	}
	var out []string
	if n.encoding != "" {
		out = append(out, fmt.Sprintf("%s is %s text (it starts with that byte order mark): decoded to UTF-8", path, n.encoding))
	}
	if n.groupedCells > 0 {
		more := ""
		if n.groupedCells > 1 {
			more = fmt.Sprintf(" (and %d more cells like it)", n.groupedCells-1)
		}
		out = append(out, fmt.Sprintf("%s: read %s (line %d, column %d) as %s%s: commas between groups of three digits are thousands separators",
			path, strconv.Quote(n.groupedCell), n.groupedLine, n.col, strconv.FormatFloat(n.groupedValue, 'g', -1, 64), more))
	}
	return out
}

// quoteCell quotes a cell for a message, shortening long ones so that a
// hostile input cannot produce a huge error string.
func quoteCell(s string) string {
	const max = 40
	s = strings.TrimSpace(s)
	n := 0
	for i := range s {
		if n == max {
			return strconv.Quote(s[:i]) + "..."
		}
		n++
	}
	return strconv.Quote(s)
}

// newCSVReader returns the readers' CSV parser of r: a leading byte order
// mark skipped, ragged rows allowed (the readers report them), records
// reused, leading spaces trimmed.
func newCSVReader(r io.Reader) *csv.Reader { return newCSVReaderNotes(r, nil) }

// newCSVReaderNotes is newCSVReader telling n of a UTF-16 encoding.
func newCSVReaderNotes(r io.Reader, n *csvNotes) *csv.Reader {
	cr := csv.NewReader(skipBOM(r, n))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	return cr
}

// skipBOM returns r without a leading UTF-8 byte order mark (Excel's "CSV
// UTF-8" writes one). It must go before the CSV parser: after it, a quoted
// first cell ("\uFEFF\"Date\"") is a bare quote in an unquoted field, and
// every reader failed on such a file. Input that starts with a UTF-16
// byte order mark (FF FE little-endian, FE FF big-endian; Excel's
// "Unicode text" and PowerShell write it) is decoded to UTF-8 (it used
// to fail with "non-numeric cell" on its first value, every other byte
// being 0), and n, when non-nil, is told the encoding.
func skipBOM(r io.Reader, n *csvNotes) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		br.Discard(3)
		return br
	}
	b, err := br.Peek(2)
	if err != nil {
		return br
	}
	var order binaryOrder
	switch {
	case b[0] == 0xFF && b[1] == 0xFE:
		order = littleEndian16
	case b[0] == 0xFE && b[1] == 0xFF:
		order = bigEndian16
	default:
		return br
	}
	br.Discard(2)
	if n != nil {
		n.encoding = map[binaryOrder]string{littleEndian16: "UTF-16 little-endian", bigEndian16: "UTF-16 big-endian"}[order]
	}
	return bufio.NewReader(&utf16Reader{r: br, big: order == bigEndian16})
}

type binaryOrder int

const (
	littleEndian16 binaryOrder = iota + 1
	bigEndian16
)

// utf16Reader decodes UTF-16 text (after its byte order mark) from r to
// UTF-8. Unpaired surrogates and a trailing odd byte become U+FFFD.
type utf16Reader struct {
	r   *bufio.Reader
	big bool
	out []byte // decoded bytes not yet returned
	err error
}

func (u *utf16Reader) unit() (uint16, error) {
	b0, err := u.r.ReadByte()
	if err != nil {
		return 0, err
	}
	b1, err := u.r.ReadByte()
	if err != nil {
		return 0, io.ErrUnexpectedEOF
	}
	if u.big {
		return uint16(b0)<<8 | uint16(b1), nil
	}
	return uint16(b1)<<8 | uint16(b0), nil
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) < len(p) && u.err == nil {
		c, err := u.unit()
		if err != nil {
			if err == io.ErrUnexpectedEOF {
				u.out = utf8.AppendRune(u.out, utf8.RuneError)
				err = io.EOF
			}
			u.err = err
			break
		}
		r := rune(c)
		if utf16.IsSurrogate(r) {
			if c >= 0xDC00 { // a low surrogate first
				r = utf8.RuneError
			} else if next, err := u.r.Peek(2); err == nil {
				var c2 uint16
				if u.big {
					c2 = uint16(next[0])<<8 | uint16(next[1])
				} else {
					c2 = uint16(next[1])<<8 | uint16(next[0])
				}
				if r = utf16.DecodeRune(r, rune(c2)); r != utf8.RuneError {
					u.r.Discard(2)
				}
			} else {
				r = utf8.RuneError
			}
		}
		u.out = utf8.AppendRune(u.out, r)
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	if n == 0 && u.err != nil {
		return 0, u.err
	}
	return n, nil
}
