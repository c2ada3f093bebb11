// Command simulate writes a simulated series of a shipped model as CSV or
// as the binary sequence format (memory-mapped by examples/fit for long
// series), e.g.
//
//	go run ./examples/simulate -model svm -T 1000000 -params 0.97,0.2,1 -out /tmp/svm1e6.bin
//
// The multivariate stochastic volatility model (models.MSV) of -D series
// writes a CSV with a header y1,y2,… that examples/fit -model msv reads,
// one column per series:
//
//	go run ./examples/simulate -model msv -D 2 -T 2000 -params 0.95,0.9,0.2,0.3,0.5,1,0.8 -out /tmp/msv.csv
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
	model := fs.String("model", "svm", "model: lgssm, svm, garch or msv (multivariate stochastic volatility of -D series)")
	T := fs.Int("T", 1000, "number of observations")
	params := fs.String("params", "", "natural parameters, comma-separated, in the model's order (svm, lgssm: phi,sigma,tau, default 0.97,0.2,1; garch: mu,phi,lambda,tau, no default; msv: phi1..phiD,sigma1..sigmaD, the correlations rho (D = 2) or rho12,rho13,…,rho23,…, tau1..tauD, default 0.95 for every phi, 0.2 for every sigma, 0.5 for every correlation, 1 for every tau)")
	D := fs.Int("D", 2, "msv: number of series")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", "", "output file: .bin for the binary format, anything else CSV (one column; msv: a header y1,y2,… and one column per series)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dSet := false
	fs.Visit(func(f *flag.Flag) { dSet = dSet || f.Name == "D" })
	var m simulator
	switch *model {
	case "svm":
		m = models.SVM{}
	case "lgssm":
		m = models.LGSSM{}
	case "garch":
		m = models.GARCH{}
	case "msv":
		if *D < 1 || *D > 100 {
			return fmt.Errorf("-D = %d: want 1 to 100 series", *D)
		}
		m = models.MSV{D: *D}
	default:
		return fmt.Errorf("unknown model %q (want lgssm, svm, garch or msv)", *model)
	}
	switch {
	case dSet && *model != "msv":
		return fmt.Errorf("-D needs -model msv (the %s model has one series)", *model)
	case *T < 1:
		return fmt.Errorf("-T = %d must be positive", *T)
	case *out == "":
		return errors.New("-out is required")
	case *model == "msv" && strings.HasSuffix(*out, ".bin"):
		return fmt.Errorf("-out %s: msv writes a CSV (examples/fit -model msv reads its series from the columns of a CSV)", *out)
	}
	if *params == "" {
		*params = defaultParams(*model, *D)
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
		return fmt.Errorf("-params: %w", err)
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
	switch {
	case strings.HasSuffix(*out, ".bin"):
		err = ssm.WriteBinary(w, y)
	case *model == "msv":
		head := make([]string, y.Obs)
		for i := range head {
			head[i] = fmt.Sprintf("y%d", i+1)
		}
		if _, err = fmt.Fprintln(w, strings.Join(head, ",")); err == nil {
			err = ssm.WriteCSV(w, y)
		}
	default:
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

// defaultParams is the -params of a run that gives none: 0.97,0.2,1 for
// the scalar models (GARCH's four parameters must be given), and for msv a
// persistent volatility in every series (φ 0.95, σ 0.2, τ 1) with
// correlations 0.5 (an equicorrelation matrix, positive definite for any D).
func defaultParams(model string, d int) string {
	if model == "msv" {
		var p []string
		for range d {
			p = append(p, "0.95")
		}
		for range d {
			p = append(p, "0.2")
		}
		for range d * (d - 1) / 2 {
			p = append(p, "0.5")
		}
		for range d {
			p = append(p, "1")
		}
		return strings.Join(p, ",")
	}
	return "0.97,0.2,1"
}
