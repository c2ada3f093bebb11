package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// BenchmarkStartup measures what the command does before Fit's preparation
// at T = 10⁶ and 10⁷: read (CSV) or map (binary) the data, validate them
// (shape, every value finite, something observed, S + 2B fits) and compute
// the data warnings (mean, sd, scale checks). Issue 12's targets: 10⁶ CSV
// rows in a few seconds, a binary file in milliseconds plus a streamed
// scan.
func BenchmarkStartup(b *testing.B) {
	for _, T := range []int{1_000_000, 10_000_000} {
		y := make([]float64, T)
		r := rand.New(rand.NewPCG(uint64(T), 1))
		for i := range y {
			y[i] = r.NormFloat64()
		}
		dir := b.TempDir()
		bin := filepath.Join(dir, "y.bin")
		f, err := os.Create(bin)
		if err != nil {
			b.Fatal(err)
		}
		if err := ssm.WriteBinary(f, ssm.Sequence{Obs: 1, Y: y}); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		files := []string{bin}
		if T <= 1_000_000 { // a 10⁷-row CSV is 190 MB: binary is the format for that
			csv := filepath.Join(dir, "y.csv")
			f, err := os.Create(csv)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			w.WriteString("y\n")
			for _, v := range y {
				w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
				w.WriteByte('\n')
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			files = append(files, csv)
		}
		for _, path := range files {
			b.Run(fmt.Sprintf("%s/T=%d", filepath.Ext(path)[1:], T), func(b *testing.B) {
				c, err := parseFlags([]string{"-data", path}, os.Stderr)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					data, err := loadData(c)
					if err != nil {
						b.Fatal(err)
					}
					if w := dataWarnings(c.model, data); len(w) != 0 {
						b.Fatal(w)
					}
				}
			})
		}
	}
}
