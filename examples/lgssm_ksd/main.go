// Command lgssm_ksd reproduces Table 2 (and appendix Tables 4 and 5) of the
// paper: SGLD on synthetic linear Gaussian state space model data with the
// full-data gradient (S = T), subsequences without a buffer (S = 40, B = 0)
// and buffered subsequences (S = 40, B = 10), each with a particle filter
// (N = 1000) and with the Kalman smoother (N = ∞), all run for the same
// compute time, compared by the kernel Stein discrepancy against the exact
// (Kalman) posterior score.
//
// Run go run ./examples/lgssm_ksd -h for the flags; see README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() { compare.Main("lgssm_ksd", run) }

// truth is the data-generating (φ, σ, τ) of the paper's section 5.2.
var truth = []float64{0.9, 0.7, 1.0}

// start is the starting point of every chain (before a small jitter).
var start = []float64{0.5, 1.0, 0.5}

type config struct {
	compare.CommonFlags
	Ts      []int
	methods []string
	filters []string
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := compare.NewFlagSet("lgssm_ksd", `Usage: go run ./examples/lgssm_ksd [flags]

Table 2 of the paper: SGLD on synthetic LGSSM data (phi = 0.9, sigma = 0.7,
tau = 1) with Full (S = T), No Buffer (S, B = 0) and Buffer (S, B) gradients,
each with a particle filter (N particles) and with the Kalman smoother
(N = inf), run for the same compute time per chain. The SGLD step is
h = eps / T (eps is the step size per observation); each method's eps is
chosen from the grid by the smallest mean log10 KSD, computed on the
unconstrained u = (atanh phi, log sigma, log tau) with the exact Kalman
posterior score. Prints the grid search, our table, the paper's and a
comparison; writes results_T*.json and MSE traces mse_T*_*.png to -out.

Paper sizes (hours): -T 1000,1000000 -time 10m. Defaults take about 3 minutes.

Flags:`, stderr)
	c := &config{}
	c.Register(fs, compare.FlagDefaults{
		Out:        filepath.Join("out", "lgssm_ksd"),
		KSDDraws:   100,
		EpsHelp:    "comma-separated step sizes per observation (h = eps/T)",
		NHelp:      "particles of the particle filter methods",
		BurnInHelp: "fraction of each chain's iterations discarded before the KSD (0 keeps all)",
	})
	Ts := fs.String("T", "1000,10000", "comma-separated sequence lengths (the paper: 1000,1000000)")
	methods := fs.String("methods", "full,nobuf,buf", "methods to run: any of full, nobuf, buf")
	filters := fs.String("filters", "pf,kf", "gradient filters: pf (N particles) and/or kf (Kalman, N = inf)")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	var err error
	if c.Ts, err = compare.ParseInts(*Ts); err != nil {
		return nil, fmt.Errorf("-T: %w", err)
	}
	if c.methods, err = compare.ParseSet(*methods, "full", "nobuf", "buf"); err != nil {
		return nil, fmt.Errorf("-methods: %w", err)
	}
	if c.filters, err = compare.ParseSet(*filters, "pf", "kf"); err != nil {
		return nil, fmt.Errorf("-filters: %w", err)
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	switch {
	case c.N < 1:
		return nil, fmt.Errorf("-N = %d must be at least 1", c.N)
	case c.KSDDraws < 2:
		return nil, fmt.Errorf("-ksddraws = %d must be at least 2", c.KSDDraws)
	}
	for _, T := range c.Ts {
		if c.S+2*c.B > T {
			return nil, fmt.Errorf("S + 2B = %d exceeds the sequence length T = %d", c.S+2*c.B, T)
		}
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	var m models.LGSSM
	u0, err := m.Params(truth[0], truth[1], truth[2])
	if err != nil {
		return err
	}
	uStart, err := m.Params(start[0], start[1], start[2])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "SGLD on synthetic LGSSM (phi, sigma, tau) = (%g, %g, %g); %d chains per method and step size, %v per chain",
		truth[0], truth[1], truth[2], c.Chains, c.Runtime)
	if c.Iters > 0 {
		fmt.Fprintf(stdout, ", at most %d iterations", c.Iters)
	}
	fmt.Fprintf(stdout, "\nKSD: IMQ(1, -1/2) V-statistic on u = (atanh phi, log sigma, log tau), %d draws per chain after %g burn-in, exact Kalman score.\n",
		c.KSDDraws, c.BurnIn)
	for ti, T := range c.Ts {
		_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(c.Seed, uint64(ti))))
		if err != nil {
			return err
		}
		data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
		var methods []compare.Method
		for _, name := range c.methods {
			for _, f := range c.filters {
				methods = append(methods, method(m, data, c, name, f))
			}
		}
		set := c.Settings()
		set.Model, set.Obs, set.Seed = m, T, c.Seed+uint64(ti)<<20
		set.Init = compare.JitteredInit(uStart, c.Chains, 0.1, rand.New(rand.NewPCG(c.Seed, 1000+uint64(ti))))
		set.NewScore = func() (sgmcmc.Estimator, error) { return compare.FullGradient(m, data, pf.Settings{}, true) }
		set.Truth, set.Progress, set.Prefix = truth, stderr, fmt.Sprintf("T=%d ", T)
		t0 := time.Now()
		res, err := compare.Run(ctx, methods, set)
		if err != nil {
			return err
		}
		if err := report(stdout, res, c, T, time.Since(t0)); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nOutputs in %s\n", c.Out)
	return nil
}

var longName = map[string]string{"full": "Full", "nobuf": "No Buffer", "buf": "Buffer"}

func method(m models.LGSSM, data ssm.Dataset, c *config, name, filter string) compare.Method {
	set := gradient.Settings{PF: pf.Settings{N: c.N}, Exact: filter == "kf"}
	switch name {
	case "full":
		set.Sampling = gradient.Full
	case "nobuf":
		set.S = c.S
	case "buf":
		set.S, set.B = c.S, c.B
	}
	label := fmt.Sprintf("%s N=%d", longName[name], c.N)
	if filter == "kf" {
		label = longName[name] + " N=inf"
	}
	return compare.Method{Name: label, New: func(int) (sgmcmc.Estimator, error) {
		if name == "full" {
			return compare.FullGradient(m, data, set.PF, set.Exact)
		}
		return gradient.New(m, data, set)
	}}
}

func report(w io.Writer, res *compare.Result, c *config, T int, took time.Duration) error {
	fmt.Fprintf(w, "\n=== T = %d (%.0f s) ===\n", T, took.Seconds())
	paper := paperT1000
	if T > 1000 {
		paper = paperT1e6
	}
	versus := fmt.Sprintf("Total log10 KSD, ours (T = %d) vs %s", T, paper.Title)
	means := fmt.Sprintf("Posterior mean (sd) after burn-in at the selected eps, averaged over chains; truth (%g, %g, %g)", truth[0], truth[1], truth[2])
	if err := compare.WriteReport(w, res, c.Chains, paper, versus, means); err != nil {
		return err
	}
	if err := compare.WriteFile(filepath.Join(c.Out, fmt.Sprintf("results_T%d.json", T)), res.WriteJSON); err != nil {
		return err
	}
	for p, name := range res.Names {
		path := filepath.Join(c.Out, fmt.Sprintf("mse_T%d_%s.png", T, name))
		if err := compare.PlotMSE(path, res, p, fmt.Sprintf("SGLD on LGSSM, T = %d", T)); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}
