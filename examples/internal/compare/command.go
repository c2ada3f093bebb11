package compare

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// JitteredInit returns a Settings.Init starting chain c at start plus
// independent N(0, sd²) noise on every coordinate. The noise is drawn from
// rng now, chain after chain, so the starts do not depend on the order the
// chains run in.
func JitteredInit(start []float64, chains int, sd float64, rng *rand.Rand) func(chain int, u []float64) error {
	inits := make([][]float64, chains)
	for i := range inits {
		inits[i] = make([]float64, len(start))
		for j := range start {
			inits[i][j] = start[j] + sd*rng.NormFloat64()
		}
	}
	return func(ch int, u []float64) error { copy(u, inits[ch]); return nil }
}

// WriteReport writes, each after a blank line and a heading, the step-size
// search, the table at the selected step sizes (chains per method), the
// paper's table, the comparison with it (heading versus) and the posterior
// means (heading means).
func WriteReport(w io.Writer, r *Result, chains int, paper PaperTable, versus, means string) error {
	fmt.Fprintf(w, "\nStep-size search: log10 KSD total, mean (sd) over chains; * = selected\n")
	if err := r.WriteGrid(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nOurs: log10 KSD at the selected eps, mean (sd) over %d chains\n", chains)
	if err := r.WriteTable(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", paper.Title)
	if err := paper.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", versus)
	if err := WriteVersus(w, r, paper); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", means)
	return r.WriteMeans(w)
}

// WriteFile creates the file path and fills it with write.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ExitCode is the process exit status for the error a command's run
// returned: 0 for nil and for flag.ErrHelp (-h and -help print the usage
// and succeed, as in the other examples), 1 otherwise.
func ExitCode(err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 1
}

// Main runs a comparison command: run(os.Args[1:], os.Stdout, os.Stderr),
// then exits with ExitCode, printing any other error as "name: error".
func Main(name string, run func(args []string, stdout, stderr io.Writer) error) {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	code := ExitCode(err)
	if code != 0 {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	}
	os.Exit(code)
}
