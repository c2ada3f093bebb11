// Command custom_model shows how to bring your own state space model: an
// AR(1) latent process observed with Student-t noise (model.go), which the
// library does not ship, is checked against finite differences in
// main_test.go (package ssm/ssmtest) and fitted here with one call of
// sgmcmc.Fit on data simulated from known parameters, whose values the
// printed posterior summary is compared with.
//
// Copy model.go and this file into your own module, change the densities
// and their scores, run the checks of main_test.go, and the whole library
// (particle filters, buffered gradient estimators, samplers, diagnostics)
// works with your model. Nothing here imports the examples' internal
// packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"

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
		fmt.Fprintln(os.Stderr, "custom_model:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("custom_model", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./examples/custom_model [flags]

Simulates T observations from an AR(1) process observed with Student-t noise
(nu = 5), fits (phi, sigma, tau) with sgmcmc.Fit and prints the posterior
summary next to the true values. The data use rand.NewPCG(seed, 2^32).

Flags:
`)
		fs.PrintDefaults()
	}
	T := fs.Int("T", 2000, "number of observations to simulate")
	phi := fs.Float64("phi", 0.95, "true phi")
	sigma := fs.Float64("sigma", 0.3, "true sigma")
	tau := fs.Float64("tau", 0.5, "true tau")
	// The fit's flags (-S -B -N -iters -chains -seed -q ...), with these
	// defaults; sgmcmc.Fit checks their values.
	set := sgmcmc.FitSettings{S: 40, N: 300, Chains: 4, Seed: 1, Progress: stderr}
	set.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}

	// Simulate data from the model at the true parameters.
	m := NewStudentT(5)
	uTrue, err := m.FromNatural(*phi, *sigma, *tau)
	if err != nil {
		return err
	}
	k, err := m.Bind(uTrue)
	if err != nil {
		return err
	}
	if *T < 1 {
		return fmt.Errorf("need -T >= 1 (got %d)", *T)
	}
	_, y := ssm.Simulate(k, m.Dims(), *T, rand.New(rand.NewPCG(set.Seed, 1<<32)))

	// One call: model + data -> posterior.
	post, err := sgmcmc.Fit(ctx, m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, set)
	if err != nil {
		return err
	}

	fmt.Fprintf(stdout, "AR(1) with Student-t (nu = 5) noise, T = %d simulated observations, true (phi, sigma, tau) = (%g, %g, %g)\n\n",
		*T, *phi, *sigma, *tau)
	if err := post.WriteText(stdout); err != nil {
		return err
	}
	truth := []float64{*phi, *sigma, *tau}
	inside := 0
	for j, p := range post.Summary() {
		if p.Q05 <= truth[j] && truth[j] <= p.Q95 {
			inside++
		}
	}
	fmt.Fprintf(stdout, "\n%d of 3 true values inside the 90%% posterior intervals (%.1f s)\n", inside, post.Total.Seconds())
	for _, w := range post.Warnings {
		fmt.Fprintln(stdout, "warning:", w)
	}
	return nil
}
