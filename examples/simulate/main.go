// Command simulate writes a simulated series of a shipped model as CSV or
// as the binary sequence format (memory-mapped by examples/fit for long
// series), e.g.
//
//	go run ./examples/simulate -model svm -T 1000000 -params 0.97,0.2,1 -out /tmp/svm1e6.bin
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(1)
	}
}

// simulator is what the shipped scalar-observation models have in common.
type simulator interface {
	ssm.Model
	Simulate(T int, u []float64, rng *rand.Rand) ([]float64, ssm.Sequence, error)
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "svm", "model: lgssm, svm or garch")
	T := fs.Int("T", 1000, "number of observations")
	params := fs.String("params", "0.97,0.2,1", "natural parameters, comma-separated, in the model's order (svm, lgssm: phi,sigma,tau; garch: mu,phi,lambda,tau)")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "output file: .bin for the binary format, anything else CSV (one column 'y')")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var m simulator
	switch *model {
	case "svm":
		m = models.SVM{}
	case "lgssm":
		m = models.LGSSM{}
	case "garch":
		m = models.GARCH{}
	default:
		return fmt.Errorf("unknown model %q (want lgssm, svm or garch)", *model)
	}
	switch {
	case *T < 1:
		return fmt.Errorf("-T = %d must be positive", *T)
	case *out == "":
		return errors.New("-out is required")
	}
	var theta []float64
	for _, f := range strings.Split(*params, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("-params: %q is not a number", f)
		}
		theta = append(theta, v)
	}
	if names := m.ParamNames(); len(theta) != len(names) {
		return fmt.Errorf("-params has %d values; %s needs %d (%s)", len(theta), *model, len(names), strings.Join(names, ","))
	}
	u := make([]float64, len(theta))
	if err := m.Unconstrain(u, theta); err != nil {
		return err
	}
	_, y, err := m.Simulate(*T, u, rand.New(rand.NewPCG(*seed, 0x5eed)))
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if strings.HasSuffix(*out, ".bin") {
		err = ssm.WriteBinary(w, y)
	} else {
		err = ssm.WriteCSV(w, y)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
