package ssm_test

import (
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func TestCSVDateOrder(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     ssm.DateOrder
		col      string
	}{
		{"ISO, oldest first", "Date,Close\n2024-01-02,1\n2024-01-03,2\n2024-01-05,3\n", ssm.DatesAscending, "Date"},
		{"Investing.com, newest first", "\uFEFF\"Date\",\"Price\"\n\"01/05/2024\",\"3\"\n\"01/03/2024\",\"2\"\n\"01/02/2024\",\"1\"\n", ssm.DatesDescending, "Date"},
		{"MarketWatch, newest first", "date,close\n\"Jan 05, 2024\",3\n\"Jan 03, 2024\",2\n", ssm.DatesDescending, "date"},
		{"timestamps, second column", "close,Timestamp\n1,2024-01-02 09:30:00\n2,2024-01-02 09:31:00\n", ssm.DatesAscending, "Timestamp"},
		{"day.month.year", "Datum,x,DATE\n1,1,31.01.2024\n2,2,01.02.2024\n", ssm.DatesAscending, "DATE"},
		{"a tie", "date,y\n2024-01-02,1\n2024-01-02,2\n", ssm.DatesUnknown, "date"},
		{"out of order (a panel)", "date,id,y\n2024-01-02,a,1\n2024-01-03,a,2\n2024-01-02,b,3\n", ssm.DatesUnknown, "date"},
		{"unparseable", "date,y\n2024-01-02,1\nyesterday,2\n", ssm.DatesUnknown, "date"},
		{"mixed layouts", "date,y\n2024-01-02,1\n01/03/2024,2\n", ssm.DatesUnknown, "date"},
		{"no date column", "close\n1\n2\n", ssm.DatesUnknown, ""},
		{"one row", "date,y\n2024-01-02,1\n", ssm.DatesUnknown, "date"},
		{"empty", "", ssm.DatesUnknown, ""},
	} {
		got, col, err := ssm.CSVDateOrder(strings.NewReader(c.in))
		if err != nil || got != c.want || col != c.col {
			t.Errorf("%s: %v, %q, %v; want %v, %q", c.name, got, col, err, c.want, c.col)
		}
	}
	if _, _, err := ssm.CSVDateOrder(strings.NewReader("date,y\n\"2024-01-02,1\n")); err == nil {
		t.Error("malformed CSV: no error")
	}
}

func TestReversed(t *testing.T) {
	in := ssm.Sequence{Obs: 2, Y: []float64{1, 2, 3, 4, 5, 6}}
	out := ssm.Reversed(in)
	want := []float64{5, 6, 3, 4, 1, 2}
	for i := range want {
		if out.Y[i] != want[i] {
			t.Fatalf("Reversed: %v, want %v", out.Y, want)
		}
	}
	if in.Y[0] != 1 || out.Obs != 2 {
		t.Errorf("input changed or Obs lost: %v, %d", in.Y, out.Obs)
	}
}

// A byte order mark before a quoted first cell (Excel's "CSV UTF-8" of a
// quoted download) used to be a CSV syntax error in every reader.
func TestBOMQuotedHeader(t *testing.T) {
	in := "\uFEFF\"Date\",\"Price\"\n\"01/05/2024\",\"3.5\"\n\"01/04/2024\",\"2\"\n"
	s, err := ssm.CSVColumn{Name: "Price"}.Read(strings.NewReader(in))
	if err != nil || len(s.Y) != 2 || s.Y[0] != 3.5 || s.Y[1] != 2 {
		t.Errorf("CSVColumn: %v, %v", s.Y, err)
	}
	s, err = ssm.ReadCSV(strings.NewReader("\uFEFF\"Price\"\n\"3.5\"\n"))
	if err != nil || len(s.Y) != 1 || s.Y[0] != 3.5 {
		t.Errorf("ReadCSV: %v, %v", s.Y, err)
	}
	d, err := ssm.CSVDataset{IDColumn: "id", Column: ssm.CSVColumn{Name: "Price"}}.Read(strings.NewReader("\uFEFF\"id\",\"Price\"\n\"a\",\"1\"\n"))
	if err != nil || len(d.Sequences) != 1 || d.Sequences[0].Y[0] != 1 {
		t.Errorf("CSVDataset: %+v, %v", d, err)
	}
}

// In long format the dates are compared within each id.
func TestCSVDatasetDateOrder(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     ssm.DateOrder
	}{
		{"panel, newest first", "Date,Ticker,Close\n2024-01-03,A,1\n2024-01-03,B,2\n2024-01-02,A,3\n2024-01-02,B,4\n2023-12-29,C,5\n", ssm.DatesDescending},
		{"panel, oldest first, grouped by id", "date,id,y\n2024-01-02,a,1\n2024-01-03,a,2\n2024-01-02,b,3\n2024-01-04,b,4\n", ssm.DatesAscending},
		{"ids disagree", "date,id,y\n2024-01-02,a,1\n2024-01-03,a,2\n2024-01-04,b,3\n2024-01-02,b,4\n", ssm.DatesUnknown},
		{"no id column", "date,y\n2024-01-02,1\n2024-01-03,2\n", ssm.DatesUnknown},
	} {
		id := "id"
		if strings.HasPrefix(c.in, "Date,Ticker") {
			id = "Ticker"
		}
		got, _, err := ssm.CSVDatasetDateOrder(strings.NewReader(c.in), id)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}
