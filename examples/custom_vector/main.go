// Command custom_vector shows how to bring your own model with a vector
// state and still get the fast path: two count series whose
// log-intensities follow a correlated bivariate AR(1) (model.go), a model
// the library does not ship. Its kernel implements, besides ssm.Kernel,
// ssm.LinearGaussian and ssm.EmissionCurvature, so sgmcmc.Fit scores it
// by Laplace importance sampling (no particle filter) with pseudo-marginal
// full-data chains. main_test.go checks the model against finite
// differences and the capabilities against the kernel's own densities
// (package ssm/ssmtest); this program simulates data from known
// parameters, fits them with one sgmcmc.Fit call and prints the
// posterior beside the true values.
//
// Copy model.go and this file into your own module, change the
// emission (any log-concave one in x keeps the Laplace path well posed)
// and its derivatives, run the checks of main_test.go, and the fit runs
// as it does for the library's own multivariate stochastic volatility
// model. Nothing here imports the examples' internal packages.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "custom_vector:", err)
		os.Exit(1)
	}
}

// defaultTruth is the simulation's parameters: phi1, phi2, sigma1,
// sigma2, rho, c1, c2 (mean counts about e^{c_i}: 2.7 and 1.6).
const defaultTruth = "0.95,0.9,0.2,0.3,0.6,1,0.5"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("custom_vector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./examples/custom_vector [flags]

Simulates T rows of two count series whose log-intensities follow a
correlated bivariate AR(1) (model.go), fits the 7 parameters with
sgmcmc.Fit and prints the posterior summary next to the true values. The
data use rand.NewPCG(seed, 2^32).

Flags:
`)
		fs.PrintDefaults()
	}
	T := fs.Int("T", 2000, "number of rows to simulate")
	params := fs.String("params", defaultTruth, "true phi1,phi2,sigma1,sigma2,rho,c1,c2")
	write := fs.String("write", "", "write the simulated counts to this CSV file (header y1,y2), e.g. for another sampler, and stop without fitting")
	// The fit's flags (-iters -chains -seed -time -q ...), with these
	// defaults; sgmcmc.Fit checks their values.
	set := sgmcmc.FitSettings{Seed: 1, Progress: stderr}
	set.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	truth, err := parseParams(*params)
	if err != nil {
		return err
	}
	if *T < 2 {
		return fmt.Errorf("need -T >= 2 (got %d)", *T)
	}

	// Simulate data from the model at the true parameters.
	m := NewCounts()
	uTrue, err := m.FromNatural(truth...)
	if err != nil {
		return err
	}
	k, err := m.Bind(uTrue)
	if err != nil {
		return err
	}
	_, y := ssm.Simulate(k, m.Dims(), *T, rand.New(rand.NewPCG(set.Seed, 1<<32)))
	if *write != "" {
		return writeCounts(*write, y)
	}

	// One call: model + data -> posterior.
	post, err := sgmcmc.Fit(ctx, m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, set)
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "Two Poisson count series with a correlated bivariate AR(1) log-intensity, T = %d simulated rows, true (%s) = (%s)\n\n",
		*T, strings.Join(m.ParamNames(), ", "), *params)
	if err := post.WriteText(stdout); err != nil {
		return err
	}
	inside := 0
	for j, p := range post.Summary() {
		if p.Q05 <= truth[j] && truth[j] <= p.Q95 {
			inside++
		}
	}
	fmt.Fprintf(stdout, "\n%d of %d true values inside the 90%% posterior intervals (%.1f s)\n", inside, len(truth), post.Total.Seconds())
	for _, w := range post.Warnings {
		fmt.Fprintln(stdout, "warning:", w)
	}
	return nil
}

// writeCounts writes the two count series as a CSV with header y1,y2.
func writeCounts(path string, y ssm.Sequence) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "y1,y2")
	for t := range y.Len() {
		fmt.Fprintf(w, "%g,%g\n", y.Y[2*t], y.Y[2*t+1])
	}
	return w.Flush()
}

// parseParams reads the 7 comma-separated natural parameters.
func parseParams(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	if len(parts) != nParams {
		return nil, fmt.Errorf("-params %q: want %d comma-separated values (phi1,phi2,sigma1,sigma2,rho,c1,c2), got %d", s, nParams, len(parts))
	}
	out := make([]float64, nParams)
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("-params: value %d (%q) is not a number", i+1, p)
		}
		out[i] = v
	}
	return out, nil
}
