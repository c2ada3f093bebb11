package ssm

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// dateHeaders are the header names (compared without case and
// surrounding whitespace) that CSVDateOrder takes for a date column.
var dateHeaders = []string{"date", "datetime", "time", "timestamp", "day"}

// dateLayouts are the layouts CSVDateOrder tries, the first that parses
// the first date being used for every row: ISO dates and times, the US
// month/day/year of Investing.com, Nasdaq.com and Excel, day.month.year,
// "Jan 02, 2006" (MarketWatch, WSJ) and compact yyyymmdd.
var dateLayouts = []string{
	"2006-01-02", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05",
	"01/02/2006", "1/2/2006", "02.01.2006", "Jan 02, 2006", "Jan 2, 2006", "20060102", "2006/01/02",
}

// DateOrder is the order of a CSV file's rows in time.
type DateOrder int

const (
	// DatesUnknown: no date column, a date that does not parse in the
	// first one's layout, repeated dates or dates out of order (a panel
	// sorted by id).
	DatesUnknown DateOrder = iota
	// DatesAscending: oldest first, the order the filters need.
	DatesAscending
	// DatesDescending: newest first (Investing.com, Nasdaq.com and
	// MarketWatch downloads): the rows must be reversed (Reversed)
	// before a fit, or a model that is not time-reversible (GARCH) fits
	// the series backwards.
	DatesDescending
)

// CSVDateOrder reads the CSV r and returns the order of its date column,
// the first column whose header is one of date, datetime, time, timestamp
// or day (any case), and that column's header: DatesAscending when every
// date is later than the one before, DatesDescending when every one is
// earlier, DatesUnknown otherwise (no header or date column, an empty or
// unparseable cell, ties). It reads the whole input; only a CSV syntax
// error or a read error is an error.
func CSVDateOrder(r io.Reader) (DateOrder, string, error) {
	return csvDateOrder(r, "")
}

// CSVDatasetDateOrder is CSVDateOrder for a file in long format with the
// id column idColumn (CSVDataset): the dates are compared within each id,
// and the order is that of every id with two rows or more.
func CSVDatasetDateOrder(r io.Reader, idColumn string) (DateOrder, string, error) {
	return csvDateOrder(r, idColumn)
}

// dateRun is the order of one sequence's dates so far.
type dateRun struct {
	prev     time.Time
	rows     int
	up, down bool
}

func csvDateOrder(r io.Reader, idName string) (DateOrder, string, error) {
	cr := newCSVReader(r)
	rec, err := cr.Read()
	if err == io.EOF {
		return DatesUnknown, "", nil
	}
	if err != nil {
		return DatesUnknown, "", convertCSVError(err)
	}
	col, name, idCol := -1, "", -1
	for i, cell := range rec {
		cell = strings.TrimSpace(cell)
		if idName != "" && cell == idName && idCol < 0 {
			idCol = i
			continue
		}
		if col < 0 && slices.ContainsFunc(dateHeaders, func(h string) bool { return strings.EqualFold(cell, h) }) {
			col, name = i, cell
		}
	}
	if col < 0 || idName != "" && idCol < 0 {
		return DatesUnknown, name, nil
	}
	layout := ""
	runs := map[string]*dateRun{}
	for {
		rec, err = cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return DatesUnknown, name, convertCSVError(err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line
		}
		if col >= len(rec) || idCol >= len(rec) {
			return DatesUnknown, name, nil
		}
		cell := strings.TrimSpace(rec[col])
		if layout == "" {
			for _, l := range dateLayouts {
				if _, err := time.Parse(l, cell); err == nil {
					layout = l
					break
				}
			}
			if layout == "" {
				return DatesUnknown, name, nil
			}
		}
		d, err := time.Parse(layout, cell)
		if err != nil {
			return DatesUnknown, name, nil
		}
		id := ""
		if idCol >= 0 {
			id = strings.TrimSpace(rec[idCol])
		}
		run := runs[id]
		if run == nil {
			run = &dateRun{up: true, down: true}
			runs[id] = run
		}
		if run.rows > 0 {
			run.up = run.up && d.After(run.prev)
			run.down = run.down && d.Before(run.prev)
		}
		run.prev = d
		run.rows++
	}
	up, down, long := true, true, false
	for _, run := range runs {
		if run.rows < 2 {
			continue
		}
		long = true
		up, down = up && run.up, down && run.down
	}
	switch {
	case !long:
		return DatesUnknown, name, nil
	case up:
		return DatesAscending, name, nil
	case down:
		return DatesDescending, name, nil
	}
	return DatesUnknown, name, nil
}

// CSVFileDateOrder opens the named file and reads it with CSVDateOrder,
// or with CSVDatasetDateOrder when idColumn is not empty.
func CSVFileDateOrder(path, idColumn string) (DateOrder, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return DatesUnknown, "", err
	}
	defer f.Close()
	o, name, err := csvDateOrder(f, idColumn)
	if err != nil {
		return DatesUnknown, name, fmt.Errorf("%s: %w", path, err)
	}
	return o, name, nil
}

// Reversed returns a copy of s with its rows in reverse order (the
// components of a row keep theirs): a newest-first download, oldest
// first. The input is only read.
func Reversed(s Sequence) Sequence {
	d := max(s.Obs, 1)
	T := len(s.Y) / d
	y := make([]float64, len(s.Y))
	for t := range T {
		copy(y[(T-1-t)*d:(T-t)*d], s.Y[t*d:(t+1)*d])
	}
	s.Y = y
	return s
}
