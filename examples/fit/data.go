package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// loadData reads the data set and checks that every sequence has an
// observed value.
// The mapping of a .bin file lives as long as the process.
func loadData(c *config) (ssm.Dataset, error) {
	var data ssm.Dataset
	var err error
	if c.model == "msv" {
		if data, err = loadSeries(c); err != nil {
			return data, err
		}
	} else {
		note := func(m string) { c.notes = append(c.notes, m) }
		data, _, err = ssm.DataFile{Path: c.data, ID: c.id, Column: c.col, Note: note}.Open()
		if err != nil {
			// The library's advice for a non-numeric column names the flag here.
			return data, errors.New(strings.Replace(err.Error(), ssm.PickColumnHint, "pick the value column with -col NAME or -col N", 1))
		}
		if err := data.Validate(1); err != nil {
			return data, fmt.Errorf("%s: the %s model is univariate (pick a column with -col, or fit several with -model msv; a decimal comma, 0,5, makes two columns): %w", c.data, c.model, err)
		}
	}
	if !strings.HasSuffix(c.data, ".bin") {
		// Investing.com, Nasdaq.com and MarketWatch list the newest day
		// first; GARCH is not time-reversible (the DAX returns backwards
		// moved its posterior means of mu and tau by 1.2 and 1.5 sds).
		order, name, err := ssm.CSVFileDateOrder(c.data, c.id)
		if err != nil {
			return data, err
		}
		if order == ssm.DatesDescending {
			for j, seq := range data.Sequences {
				data.Sequences[j] = ssm.Reversed(seq)
			}
			c.notes = append(c.notes, fmt.Sprintf("the %s column of %s runs newest first: its rows are fitted oldest first", name, c.data))
		}
	}
	for j, seq := range data.Sequences { // new slices: a mapped .bin file is only read
		if c.returns {
			if seq, err = ssm.LogReturns(seq, 100); err != nil {
				return data, fmt.Errorf("%s: %s: -returns: %w", c.data, seqName(data, j), err)
			}
		}
		if c.scale != 1 {
			if seq, err = ssm.Scaled(seq, c.scale); err != nil {
				return data, fmt.Errorf("-scale: %w", err)
			}
		}
		if c.demean {
			seq, _ = ssm.Demeaned(seq)
		}
		data.Sequences[j] = seq
	}
	// A sequence shorter than S is one whole window (gradient.Subsequencer).
	for j, seq := range data.Sequences {
		if !seq.Observed(0, seq.Len()) {
			return data, fmt.Errorf("%s: %s has no observed values (every cell is missing)", c.data, seqName(data, j))
		}
		if c.model != "msv" {
			continue
		}
		for i := range seq.Obs {
			if !componentObserved(seq, i) {
				return data, fmt.Errorf("%s: the series %s of %s has no observed values (every cell of its column is missing)", c.data, c.series[i], seqName(data, j))
			}
		}
	}
	if !c.allowOutliers {
		if err := checkOutliers(c.data, data); err != nil {
			return data, err
		}
	}
	return data, nil
}

// seqName names sequence j of data: by its id (-id), else by its index.
func seqName(data ssm.Dataset, j int) string {
	if j < len(data.IDs) {
		return fmt.Sprintf("sequence %d (id %q)", j, data.IDs[j])
	}
	return fmt.Sprintf("sequence %d", j)
}

// outlierSDs is how many robust sds from the median a value may lie
// before checkOutliers refuses it: a sentinel (-999999, 9.99e9), a typo
// or a value in other units, not a heavy tail (the DAX returns' largest
// is about 15 robust sds out).
const outlierSDs = 1e6

// checkOutliers returns an error naming the first value of data beyond
// outlierSDs robust sds (the median absolute deviation from the median,
// times 1.4826, of every observed value; the mean absolute deviation
// times 1.2533 when more than half the values are equal) from the median,
// and nil when there is none or the values have no spread. Beyond 10⁵
// values the median and the deviation are those of an even subsample.
func checkOutliers(path string, data ssm.Dataset) error {
	var sample []float64
	total := 0
	for _, seq := range data.Sequences {
		total += len(seq.Y)
	}
	step := max(1, total/100_000)
	i := 0
	for _, seq := range data.Sequences {
		for _, v := range seq.Y {
			if i%step == 0 && !math.IsNaN(v) {
				sample = append(sample, v)
			}
			i++
		}
	}
	if len(sample) < 3 {
		return nil
	}
	slices.Sort(sample)
	med := median(sample)
	dev := make([]float64, len(sample))
	mean := 0.0
	for i, v := range sample {
		dev[i] = math.Abs(v - med)
		mean += dev[i]
	}
	slices.Sort(dev)
	sd := 1.4826 * median(dev)
	if sd == 0 {
		sd = 1.2533 * mean / float64(len(dev))
	}
	if !(sd > 0) {
		return nil
	}
	for j, seq := range data.Sequences {
		for t, v := range seq.Y {
			if z := math.Abs(v-med) / sd; z > outlierSDs {
				return fmt.Errorf("%s: %s, row %d (counting from 1, in the order fitted) is %.6g, %.3g robust sds from the median %.4g (robust sd %.3g): "+
					"a sentinel, a typo or other units? Correct or blank the cell, or pass -allow-outliers to fit it as it is",
					path, seqName(data, j), t/max(seq.Obs, 1)+1, v, z, med, sd)
			}
		}
	}
	return nil
}

// median of sorted values.
func median(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// fewObservations is the number of observed values below which the fit
// warns that the data say little.
const fewObservations = 50

// smallDataWarning is the warning for data with fewer than
// fewObservations observed values ("" otherwise).
func smallDataWarning(data ssm.Dataset) string {
	n := 0
	for _, seq := range data.Sequences {
		for _, v := range seq.Y {
			if !math.IsNaN(v) {
				n++
			}
		}
	}
	if n >= fewObservations {
		return ""
	}
	return fmt.Sprintf("only %d observed values (fewer than %d): the posterior stays close to the prior, and the summary mostly reflects the prior's choice", n, fewObservations)
}

// parseCols splits -cols into its column choices (header names or 1-based
// indices), or returns an error naming the flag.
func parseCols(s string) ([]string, error) {
	specs := strings.Split(s, ",")
	for i, spec := range specs {
		specs[i] = strings.TrimSpace(spec)
		if _, err := ssm.ParseCSVColumn(spec); err != nil {
			return nil, fmt.Errorf("-cols %q: entry %d: %s", s, i+1, strings.TrimPrefix(err.Error(), "ssm: "))
		}
	}
	return specs, nil
}

// loadSeries reads the series of -model msv: every column of the CSV file
// (but the -id column), or those of -cols (or -col: one series), as the
// components of y_t, and names them in c.series by their header (y1, y2, …
// without one). Empty cells and the other missing markers are NaN.
func loadSeries(c *config) (ssm.Dataset, error) {
	seen := map[string]bool{}
	note := func(m string) {
		if !seen[m] { // one note per file, not one per column read
			seen[m] = true
			c.notes = append(c.notes, m)
		}
	}
	header, err := csvHeader(c.data)
	if err != nil {
		return ssm.Dataset{}, err
	}
	flagName, list := "-cols", c.cols
	if list == "" && c.col != "" {
		flagName, list = "-col", c.col
	}
	if list == "" {
		data, _, err := ssm.DataFile{Path: c.data, ID: c.id, Note: note}.Open()
		if err != nil {
			return data, errors.New(strings.Replace(err.Error(), ssm.PickColumnHint, "pick the series' columns with -cols NAME,NAME or -cols N,N", 1))
		}
		d := data.Sequences[0].Obs
		names := slices.DeleteFunc(slices.Clone(header), func(n string) bool { return c.id != "" && n == c.id })
		if len(names) != d { // no header
			names = names[:0]
			for i := range d {
				names = append(names, fmt.Sprintf("y%d", i+1))
			}
		}
		c.series = names
		return data, nil
	}
	specs, err := parseCols(list)
	if err != nil {
		return ssm.Dataset{}, err
	}
	var parts []ssm.Dataset
	at := map[int]string{} // the 0-based file column of each pick
	for _, spec := range specs {
		col, _ := ssm.ParseCSVColumn(spec)
		j := col.Index - 1
		if col.Name != "" {
			j = slices.Index(header, col.Name)
		}
		if prev, dup := at[j]; dup && j >= 0 {
			return ssm.Dataset{}, fmt.Errorf("%s %s: %q and %q are the same column of %s: each series once", flagName, list, prev, spec, c.data)
		}
		at[j] = spec
		part, _, err := ssm.DataFile{Path: c.data, ID: c.id, Column: spec, Note: note}.Open()
		if err != nil {
			return ssm.Dataset{}, fmt.Errorf("%s %s: %w", flagName, list, err)
		}
		parts = append(parts, part)
		name := col.Name
		if name == "" {
			name = fmt.Sprintf("y%d", col.Index)
			if j < len(header) {
				name = header[j]
			}
		}
		c.series = append(c.series, name)
	}
	return interleave(parts, c.data)
}

// interleave makes one Dataset of one-column parts read from the same
// rows of path: component i of y_t is part i's value at t.
func interleave(parts []ssm.Dataset, path string) (ssm.Dataset, error) {
	out := ssm.Dataset{IDs: parts[0].IDs}
	d := len(parts)
	for j := range parts[0].Sequences {
		T := parts[0].Sequences[j].Len()
		seq := ssm.Sequence{Obs: d, Y: make([]float64, T*d)}
		for i, p := range parts {
			if len(p.Sequences) != len(parts[0].Sequences) || p.Sequences[j].Len() != T {
				return out, fmt.Errorf("%s: the picked columns have different numbers of rows", path)
			}
			for t, v := range p.Sequences[j].Y {
				seq.Y[t*d+i] = v
			}
		}
		out.Sequences = append(out.Sequences, seq)
	}
	return out, nil
}

// componentObserved reports whether component i of seq has an observed
// (non-NaN) value.
func componentObserved(seq ssm.Sequence, i int) bool {
	for t := range seq.Len() {
		if !math.IsNaN(seq.Y[t*seq.Obs+i]) {
			return true
		}
	}
	return false
}

// csvHeader returns the cells of the first row of the CSV file path,
// trimmed, when that row is a header (some cell is neither a number nor a
// missing marker), and nil otherwise. It reads the first megabyte, after a
// UTF-8 byte order mark or decoding UTF-16 as ssm's readers do; a file it
// cannot open is an error (the readers' own errors come later).
func csvHeader(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case len(b) >= 3 && string(b[:3]) == "\uFEFF":
		b = b[3:]
	case len(b) >= 2 && (b[0] == 0xFF && b[1] == 0xFE || b[0] == 0xFE && b[1] == 0xFF):
		big := b[0] == 0xFE
		u := make([]uint16, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			if big {
				u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
			} else {
				u = append(u, uint16(b[i+1])<<8|uint16(b[i]))
			}
		}
		b = []byte(string(utf16.Decode(u)))
	}
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	rec, err := r.Read()
	if err != nil {
		return nil, nil // no header to name the series by; the reader says what is wrong
	}
	header := false
	for i, cell := range rec {
		rec[i] = strings.TrimSpace(cell)
		if !numberOrMissing(rec[i]) {
			header = true
		}
	}
	if !header {
		return nil, nil
	}
	return rec, nil
}

// numberOrMissing reports whether a trimmed CSV cell reads as a value: a
// number (possibly with a trailing % or thousands separators) or one of
// ssm.ReadCSV's missing markers.
func numberOrMissing(cell string) bool {
	switch strings.ToLower(cell) {
	case "", "nan", "na", "null", ".", "#n/a", "n/a", "#n/a n/a", "none":
		return true
	}
	_, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSuffix(cell, "%"), ",", ""), 64)
	return err == nil
}
