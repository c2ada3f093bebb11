package ssm_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func ExampleReadCSV() {
	const data = `return,volume
0.52, 1.1
NA,   0.9
-1.25,
`
	s, err := ssm.ReadCSV(strings.NewReader(data))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("T =", s.Len(), "obs =", s.Obs)
	for t := range s.Len() {
		fmt.Println(s.At(t))
	}

	// Malformed input names the line and column.
	_, err = ssm.ReadCSV(strings.NewReader("y\n0.5\nabc\n"))
	var pe *ssm.ParseError
	fmt.Println(err)
	fmt.Println(errors.As(err, &pe), pe.Line, pe.Column, errors.Is(err, ssm.ErrData))
	// Output:
	// T = 3 obs = 2
	// [0.52 1.1]
	// [NaN 0.9]
	// [-1.25 NaN]
	// ssm: csv line 3, column 1: non-numeric cell "abc"
	// true 3 1 true
}

func ExampleReadCSVDataset() {
	// Two weekly segments; rows need not be contiguous.
	const data = `week,y
w1,0.1
w2,-0.4
w1,0.3
w2,NA
w2,0.2
`
	d, err := ssm.ReadCSVDataset(strings.NewReader(data), "week")
	if err != nil {
		log.Fatal(err)
	}
	for i, s := range d.Sequences {
		fmt.Println(d.IDs[i], s.Len(), s.Y)
	}
	fmt.Println("total", d.TotalLen())
	// Output:
	// w1 2 [0.1 0.3]
	// w2 3 [-0.4 NaN 0.2]
	// total 5
}

func ExampleOpenBinary() {
	dir, err := os.MkdirTemp("", "ssm-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "y.f64")

	// Write a 3×2 sequence as raw little-endian float64.
	var buf bytes.Buffer
	s := ssm.Sequence{Obs: 2, Y: []float64{1, 2, 3, 4, 5, 6}}
	if err := ssm.WriteBinary(&buf, s); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		log.Fatal(err)
	}

	// Map it: nothing is read until a value is touched.
	m, err := ssm.OpenBinary(path, 2)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	y := m.Seq()
	fmt.Println(y.Len(), y.At(2), y.CheckFinite())
	// Output:
	// 3 [5 6] <nil>
}

// A price download (here with Yahoo Finance's "null" for a holiday) becomes
// the percent log returns that the SVM and GARCH describe; the missing
// price makes both returns that use it missing.
func ExampleLogReturns() {
	prices, err := ssm.CSVColumn{Name: "Close"}.Read(strings.NewReader(
		"Date,Close\n2024-01-02,100\n2024-01-03,101\n2024-01-04,null\n2024-01-05,99.5\n2024-01-08,100.5\n"))
	if err != nil {
		log.Fatal(err)
	}
	r, err := ssm.LogReturns(prices, 100)
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range r.Y {
		fmt.Printf("%.4f\n", v)
	}
	// Output:
	// 0.9950
	// NaN
	// NaN
	// 1.0000
}
