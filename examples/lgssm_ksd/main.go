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
	"flag"
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

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lgssm_ksd:", err)
		os.Exit(1)
	}
}

// truth is the data-generating (φ, σ, τ) of the paper's section 5.2.
var truth = []float64{0.9, 0.7, 1.0}

// start is the starting point of every chain (before a small jitter).
var start = []float64{0.5, 1.0, 0.5}

type config struct {
	Ts          []int
	runtime     time.Duration
	iters       int
	chains      int
	eps         []float64
	N, S, B     int
	methods     []string
	filters     []string
	burnin      float64
	ksdDraws    int
	seed        uint64
	out         string
	concurrency int
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("lgssm_ksd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: go run ./examples/lgssm_ksd [flags]

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

Flags:`)
		fs.PrintDefaults()
	}
	c := &config{}
	Ts := fs.String("T", "1000,10000", "comma-separated sequence lengths (the paper: 1000,1000000)")
	fs.DurationVar(&c.runtime, "time", time.Second, "compute time per chain (the equal-time budget); 0 with -iters for a fixed iteration count")
	fs.IntVar(&c.iters, "iters", 0, "iteration limit per chain (0: none)")
	fs.IntVar(&c.chains, "chains", 5, "chains per method and step size")
	eps := fs.String("eps", "1,0.1,0.01,0.001", "comma-separated step sizes per observation (h = eps/T)")
	fs.IntVar(&c.N, "N", 1000, "particles of the particle filter methods")
	fs.IntVar(&c.S, "S", 40, "subsequence length")
	fs.IntVar(&c.B, "B", 10, "buffer length of the Buffer method")
	methods := fs.String("methods", "full,nobuf,buf", "methods to run: any of full, nobuf, buf")
	filters := fs.String("filters", "pf,kf", "gradient filters: pf (N particles) and/or kf (Kalman, N = inf)")
	fs.Float64Var(&c.burnin, "burnin", 0.5, "fraction of each chain's iterations discarded before the KSD (0 keeps all)")
	fs.IntVar(&c.ksdDraws, "ksddraws", 100, "draws per chain scored for the KSD")
	seed := fs.Uint64("seed", 1, "random seed")
	fs.StringVar(&c.out, "out", filepath.Join("out", "lgssm_ksd"), "output directory")
	fs.IntVar(&c.concurrency, "concurrency", 0, "chains run at once (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.seed = *seed
	var err error
	if c.Ts, err = compare.ParseInts(*Ts); err != nil {
		return nil, fmt.Errorf("-T: %w", err)
	}
	if c.eps, err = compare.ParseFloats(*eps); err != nil {
		return nil, fmt.Errorf("-eps: %w", err)
	}
	if c.methods, err = compare.ParseSet(*methods, "full", "nobuf", "buf"); err != nil {
		return nil, fmt.Errorf("-methods: %w", err)
	}
	if c.filters, err = compare.ParseSet(*filters, "pf", "kf"); err != nil {
		return nil, fmt.Errorf("-filters: %w", err)
	}
	switch {
	case c.runtime < 0 || c.iters < 0:
		return nil, fmt.Errorf("-time and -iters must not be negative")
	case c.runtime == 0 && c.iters == 0:
		return nil, fmt.Errorf("set -time or -iters")
	case c.chains < 1:
		return nil, fmt.Errorf("-chains = %d must be at least 1", c.chains)
	case c.N < 1:
		return nil, fmt.Errorf("-N = %d must be at least 1", c.N)
	case c.S < 1 || c.B < 0:
		return nil, fmt.Errorf("-S = %d must be positive and -B = %d non-negative", c.S, c.B)
	case c.burnin < 0 || c.burnin >= 1:
		return nil, fmt.Errorf("-burnin = %g must be in [0, 1)", c.burnin)
	case c.ksdDraws < 2:
		return nil, fmt.Errorf("-ksddraws = %d must be at least 2", c.ksdDraws)
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
	if err := os.MkdirAll(c.out, 0o755); err != nil {
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
		truth[0], truth[1], truth[2], c.chains, c.runtime)
	if c.iters > 0 {
		fmt.Fprintf(stdout, ", at most %d iterations", c.iters)
	}
	fmt.Fprintf(stdout, "\nKSD: IMQ(1, -1/2) V-statistic on u = (atanh phi, log sigma, log tau), %d draws per chain after %g burn-in, exact Kalman score.\n",
		c.ksdDraws, c.burnin)
	for ti, T := range c.Ts {
		_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(c.seed, uint64(ti))))
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
		jitter := rand.New(rand.NewPCG(c.seed, 1000+uint64(ti)))
		inits := make([][]float64, c.chains)
		for i := range inits {
			inits[i] = make([]float64, len(uStart))
			for j := range uStart {
				inits[i][j] = uStart[j] + 0.1*jitter.NormFloat64()
			}
		}
		set := compare.Settings{
			Model: m, Eps: c.eps, Obs: T, Runtime: c.runtime, Iterations: c.iters,
			Chains: c.chains, Concurrency: c.concurrency, Seed: c.seed + uint64(ti)<<20,
			Init:     func(ch int, u []float64) error { copy(u, inits[ch]); return nil },
			BurnIn:   burn(c.burnin),
			KSDDraws: c.ksdDraws,
			NewScore: func() (sgmcmc.Estimator, error) { return compare.FullGradient(m, data, pf.Settings{}, true) },
			Truth:    truth, Progress: stderr, Prefix: fmt.Sprintf("T=%d ", T),
		}
		t0 := time.Now()
		res, err := compare.Run(ctx, methods, set)
		if err != nil {
			return err
		}
		if err := report(stdout, res, c, T, time.Since(t0)); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\nOutputs in %s\n", c.out)
	return nil
}

// burn maps the flag (0 keeps everything) to compare's convention.
func burn(b float64) float64 {
	if b == 0 {
		return -1
	}
	return b
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
	fmt.Fprintf(w, "\n=== T = %d (%.0f s) ===\n\nStep-size search: log10 KSD total, mean (sd) over chains; * = selected\n", T, took.Seconds())
	if err := res.WriteGrid(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nOurs: log10 KSD at the selected eps, mean (sd) over %d chains\n", c.chains)
	if err := res.WriteTable(w); err != nil {
		return err
	}
	paper := paperT1000
	if T > 1000 {
		paper = paperT1e6
	}
	fmt.Fprintf(w, "\n%s\n", paper.Title)
	if err := paper.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTotal log10 KSD, ours (T = %d) vs %s\n", T, paper.Title)
	if err := compare.WriteVersus(w, res, paper); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPosterior mean (sd) after burn-in at the selected eps, averaged over chains; truth (%g, %g, %g)\n", truth[0], truth[1], truth[2])
	if err := res.WriteMeans(w); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(c.out, fmt.Sprintf("results_T%d.json", T)))
	if err != nil {
		return err
	}
	if err := res.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for p, name := range res.Names {
		path := filepath.Join(c.out, fmt.Sprintf("mse_T%d_%s.png", T, name))
		if err := compare.PlotMSE(path, res, p, fmt.Sprintf("SGLD on LGSSM, T = %d", T)); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}
