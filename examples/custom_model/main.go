// Command custom_model shows how to bring your own state space model: an
// AR(1) latent process observed with Student-t noise (model.go), which the
// library does not ship, is checked against finite differences in
// main_test.go (package ssm/ssmtest) and fitted here with buffered PF-SGLD
// on data simulated from known parameters, whose values the printed
// posterior summary is compared with.
//
// Copy model.go, change the densities and their scores, run the checks of
// main_test.go, and the whole library (particle filters, buffered gradient
// estimators, samplers, diagnostics) works with your model.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "custom_model:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("custom_model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./examples/custom_model [flags]

Simulates T observations from an AR(1) process observed with Student-t noise
(nu = 5), fits (phi, sigma, tau) with buffered PF-SGLD and prints the
posterior summary next to the true values. The SGLD step is h = eps / T
(-eps is the step size per observation). Chain c starts at u = 0 (phi = 0,
sigma = tau = 1) and uses rand.NewPCG(seed, c); the data use
rand.NewPCG(seed, 2^32). Writes trace.csv, trace.png and density.png to -out.

Flags:
`)
		fs.PrintDefaults()
	}
	T := fs.Int("T", 2000, "number of observations to simulate")
	phi := fs.Float64("phi", 0.95, "true phi")
	sigma := fs.Float64("sigma", 0.3, "true sigma")
	tau := fs.Float64("tau", 0.5, "true tau")
	S := fs.Int("S", 40, "subsequence length")
	B := fs.Int("B", 10, "buffer length")
	N := fs.Int("N", 300, "particles")
	eps := fs.Float64("eps", 0.1, "step size per observation (h = eps / T)")
	warmup := fs.Int("warmup", 200, "Adam warm-up iterations (learning rate 0.02), discarded")
	iters := fs.Int("iters", 8000, "SGLD iterations per chain after the warm-up")
	burnin := fs.Int("burnin", 1000, "SGLD iterations discarded after the warm-up")
	chains := fs.Int("chains", 4, "chains")
	seed := fs.Uint64("seed", 1, "random seed")
	out := fs.String("out", filepath.Join("out", "custom_model"), "output directory")
	quiet := fs.Bool("q", false, "no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case *N < 1 || *S < 1 || *B < 0:
		return fmt.Errorf("need -N >= 1, -S >= 1 and -B >= 0 (got %d, %d, %d)", *N, *S, *B)
	case *T < *S+2**B:
		return fmt.Errorf("-T = %d is shorter than S + 2B = %d", *T, *S+2**B)
	case *iters <= *burnin || *warmup < 0 || *chains < 1 || !(*eps > 0):
		return fmt.Errorf("need -iters > -burnin >= 0, -warmup >= 0, -chains >= 1 and -eps > 0")
	}
	progress := stderr
	if *quiet {
		progress = nil
	}

	// Simulate data from the model at the true parameters.
	m := StudentT{Nu: 5}
	uTrue, err := m.Params(*phi, *sigma, *tau)
	if err != nil {
		return err
	}
	_, y, err := m.Simulate(*T, uTrue, rand.New(rand.NewPCG(*seed, 1<<32)))
	if err != nil {
		return err
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}

	// The library's buffered gradient estimator works with any ssm.Model.
	set := gradient.Settings{Subsequencer: gradient.Subsequencer{S: *S, B: *B}, PF: pf.Settings{N: *N}}
	if _, err := gradient.New(m, data, set); err != nil {
		return err
	}
	newEst := func(int) sgmcmc.Estimator {
		e, _ := gradient.New(m, data, set) // validated above
		return e
	}
	// An Adam warm-up climbs from u = 0 towards the posterior, then SGLD
	// samples: one method switching at iteration warmup.
	newMethod := func(int) sgmcmc.Method {
		return &sgmcmc.WarmStart{Steps: *warmup, Optimizer: &sgmcmc.Adam{}, Sampler: &sgmcmc.SGLD{}}
	}
	h := *eps / float64(*T)
	names := m.ParamNames()
	natural := func(dst, u []float64) { m.Constrain(dst, u) }

	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(*out, "trace.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	csvRec := sgmcmc.NewCSVRecorder(f, names)
	csvRec.Transform = natural
	trace := &sgmcmc.Trace{Transform: natural, NaturalDim: 3}
	rec := sgmcmc.Multi(trace, csvRec, &sgmcmc.Printer{W: progress, Interval: 2 * time.Second, Names: names, Transform: natural})
	res, err := sgmcmc.Run(context.Background(), newEst, newMethod, func(int, []float64) error { return nil }, 3, sgmcmc.Settings{
		Iterations: *warmup + *iters,
		BurnIn:     *warmup + *burnin,
		Schedule:   sgmcmc.Phased{Steps: *warmup, First: sgmcmc.Constant(0.02), Then: sgmcmc.Constant(h)},
		Chains:     *chains,
		Seed:       *seed,
		Recorder:   rec,
	})
	if err != nil {
		return fmt.Errorf("sampling: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	draws := make([][]float64, len(trace.Chains))
	iterLists := make([][]int, len(trace.Chains))
	for c, ch := range trace.Chains {
		draws[c], iterLists[c] = ch.Natural, ch.Iter
	}
	table, err := report.Summarize(names, draws)
	if err != nil {
		return err
	}
	if err := report.TracePNG(filepath.Join(*out, "trace.png"), names, draws, iterLists); err != nil {
		return err
	}
	if err := report.DensityPNG(filepath.Join(*out, "density.png"), names, draws); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "AR(1) with Student-t (nu = 5) noise, T = %d simulated observations\n", *T)
	fmt.Fprintf(stdout, "buffered PF-SGLD: S = %d, B = %d, N = %d, h = %.3g/%d, %d chains x %d iterations (%.1f s)\n\n",
		*S, *B, *N, *eps, *T, *chains, *warmup+*iters, res.Runtime.Seconds())
	truth := []float64{*phi, *sigma, *tau}
	fmt.Fprintf(stdout, "%6s %8s %8s %8s %8s %8s %6s %6s\n", "param", "true", "mean", "sd", "q05", "q95", "ESS", "R-hat")
	for j, p := range table {
		fmt.Fprintf(stdout, "%6s %8.4g %8.4g %8.3g %8.4g %8.4g %6.0f %6.3f\n", p.Name, truth[j], p.Mean, p.SD, p.Q05, p.Q95, p.ESS, p.Rhat)
	}
	inside := 0
	for j, p := range table {
		if p.Q05 <= truth[j] && truth[j] <= p.Q95 {
			inside++
		}
	}
	fmt.Fprintf(stdout, "\n%d of 3 true values inside the 90%% posterior intervals; wrote %s\n", inside, *out)
	if math.IsNaN(table.MaxRhat()) {
		return errors.New("R-hat is NaN: a chain did not move")
	}
	return nil
}
