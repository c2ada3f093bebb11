// Command synthetic reproduces the paper's appendix Tables 7 and 8: SGLD on
// synthetic stochastic volatility (SVM) and GARCH data with the full-data
// particle filter gradient (Full), subsequences without a buffer (No
// Buffer) and buffered subsequences (Buffer), all run for the same compute
// time and compared by the kernel Stein discrepancy, whose score is the
// full-sequence particle filter gradient.
//
// Run go run ./examples/synthetic -h for the flags; see README.md.
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
		fmt.Fprintln(os.Stderr, "synthetic:", err)
		os.Exit(1)
	}
}

// experiment is one model of the comparison.
type experiment struct {
	name  string
	model ssm.Model
	truth []float64 // natural parameters generating the data
	start []float64 // natural parameters every chain starts from (plus jitter)
	paper compare.PaperTable
}

func experiments() map[string]experiment {
	return map[string]experiment{
		// Section 5.2 of the paper: (φ, σ, τ) = (0.9, 0.5, 0.5).
		"svm": {name: "svm", model: models.SVM{}, truth: []float64{0.9, 0.5, 0.5}, start: []float64{0.5, 1, 1}, paper: paperSVM},
		// (α, β, γ, τ) = (0.1, 0.8, 0.05, 0.3), i.e. μ = α/(1−β−γ) = 2/3,
		// φ = β+γ = 0.85, λ = β/(β+γ) = 16/17.
		"garch": {name: "garch", model: models.GARCH{}, truth: []float64{0.1 / 0.15, 0.85, 0.8 / 0.85, 0.3}, start: []float64{1, 0.7, 0.8, 0.5}, paper: paperGARCH},
	}
}

type config struct {
	models      []string
	T           int
	runtime     time.Duration
	iters       int
	chains      int
	eps         []float64
	N, S, B     int
	ksdN        int
	burnin      float64
	ksdDraws    int
	seed        uint64
	out         string
	concurrency int
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("synthetic", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: go run ./examples/synthetic [flags]

Appendix Tables 7 and 8 of the paper: SGLD on synthetic SVM data
(phi, sigma, tau) = (0.9, 0.5, 0.5) and GARCH data (alpha, beta, gamma, tau)
= (0.1, 0.8, 0.05, 0.3), T observations, with Full (S = T), No Buffer (S,
B = 0) and Buffer (S, B) particle filter gradients (N particles), each run
for the same compute time per chain. The SGLD step is h = eps / T (eps is
the step size per observation); each method's eps is chosen from the grid
by the smallest mean log10 KSD, computed on the unconstrained parameters
(SVM: atanh phi, log sigma, log tau; GARCH: logit(mu/2), logit phi,
logit lambda, log tau) with full-sequence particle filter scores (-ksdN
particles). Prints the grid search, our tables next to the paper's, and
writes results_<model>.json and MSE traces mse_<model>_<param>.png to -out.

Longer runs: -time 1m -ksddraws 200. Defaults take 3-5 minutes.

Flags:`)
		fs.PrintDefaults()
	}
	c := &config{}
	ms := fs.String("models", "svm,garch", "models: svm and/or garch")
	fs.IntVar(&c.T, "T", 1000, "sequence length")
	fs.DurationVar(&c.runtime, "time", time.Second, "compute time per chain (the equal-time budget); 0 with -iters for a fixed iteration count")
	fs.IntVar(&c.iters, "iters", 0, "iteration limit per chain (0: none)")
	fs.IntVar(&c.chains, "chains", 5, "chains per method and step size")
	eps := fs.String("eps", "1,0.1,0.01,0.001", "comma-separated step sizes per observation (h = eps/T)")
	fs.IntVar(&c.N, "N", 1000, "particles of the gradient estimators")
	fs.IntVar(&c.S, "S", 40, "subsequence length")
	fs.IntVar(&c.B, "B", 10, "buffer length of the Buffer method")
	fs.IntVar(&c.ksdN, "ksdN", 1000, "particles of the full-sequence filter giving the KSD scores")
	fs.Float64Var(&c.burnin, "burnin", 0.5, "fraction of each chain's iterations discarded before the KSD (0 keeps all)")
	fs.IntVar(&c.ksdDraws, "ksddraws", 25, "draws per chain scored for the KSD")
	seed := fs.Uint64("seed", 1, "random seed")
	fs.StringVar(&c.out, "out", filepath.Join("out", "synthetic"), "output directory")
	fs.IntVar(&c.concurrency, "concurrency", 0, "chains run at once (0: GOMAXPROCS)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c.seed = *seed
	var err error
	if c.models, err = compare.ParseSet(*ms, "svm", "garch"); err != nil {
		return nil, fmt.Errorf("-models: %w", err)
	}
	if c.eps, err = compare.ParseFloats(*eps); err != nil {
		return nil, fmt.Errorf("-eps: %w", err)
	}
	switch {
	case c.runtime < 0 || c.iters < 0:
		return nil, fmt.Errorf("-time and -iters must not be negative")
	case c.runtime == 0 && c.iters == 0:
		return nil, fmt.Errorf("set -time or -iters")
	case c.chains < 1:
		return nil, fmt.Errorf("-chains = %d must be at least 1", c.chains)
	case c.N < 1 || c.ksdN < 1:
		return nil, fmt.Errorf("-N = %d and -ksdN = %d must be at least 1", c.N, c.ksdN)
	case c.S < 1 || c.B < 0:
		return nil, fmt.Errorf("-S = %d must be positive and -B = %d non-negative", c.S, c.B)
	case c.S+2*c.B > c.T:
		return nil, fmt.Errorf("S + 2B = %d exceeds the sequence length T = %d", c.S+2*c.B, c.T)
	case c.burnin < 0 || c.burnin >= 1:
		return nil, fmt.Errorf("-burnin = %g must be in [0, 1)", c.burnin)
	case c.ksdDraws < 2:
		return nil, fmt.Errorf("-ksddraws = %d must be at least 2", c.ksdDraws)
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
	fmt.Fprintf(stdout, "SGLD on synthetic data, T = %d; %d chains per method and step size, %v per chain", c.T, c.chains, c.runtime)
	if c.iters > 0 {
		fmt.Fprintf(stdout, ", at most %d iterations", c.iters)
	}
	fmt.Fprintf(stdout, "\nKSD: IMQ(1, -1/2) V-statistic on the unconstrained parameters, %d draws per chain after %g burn-in, full-sequence PF scores (N = %d).\n",
		c.ksdDraws, c.burnin, c.ksdN)
	all := experiments()
	for k, name := range c.models {
		if err := runModel(stdout, stderr, c, all[name], uint64(k)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	fmt.Fprintf(stdout, "\nOutputs in %s\n", c.out)
	return nil
}

func runModel(stdout, stderr io.Writer, c *config, ex experiment, stream uint64) error {
	m := ex.model
	p := m.Dims().Param
	u0, uStart := make([]float64, p), make([]float64, p)
	if err := m.Unconstrain(u0, ex.truth); err != nil {
		return err
	}
	if err := m.Unconstrain(uStart, ex.start); err != nil {
		return err
	}
	k, err := m.Bind(u0)
	if err != nil {
		return err
	}
	_, y := ssm.Simulate(k, m.Dims(), c.T, rand.New(rand.NewPCG(c.seed, stream)))
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	pfs := pf.Settings{N: c.N}
	methods := []compare.Method{
		{Name: "Full", New: func(int) (sgmcmc.Estimator, error) { return compare.FullGradient(m, data, pfs, false) }},
		{Name: "No Buffer", New: func(int) (sgmcmc.Estimator, error) {
			return gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: c.S}, PF: pfs})
		}},
		{Name: "Buffer", New: func(int) (sgmcmc.Estimator, error) {
			return gradient.New(m, data, gradient.Settings{Subsequencer: gradient.Subsequencer{S: c.S, B: c.B}, PF: pfs})
		}},
	}
	jitter := rand.New(rand.NewPCG(c.seed, 1000+stream))
	inits := make([][]float64, c.chains)
	for i := range inits {
		inits[i] = make([]float64, p)
		for j := range inits[i] {
			inits[i][j] = uStart[j] + 0.1*jitter.NormFloat64()
		}
	}
	burn := c.burnin
	if burn == 0 {
		burn = -1
	}
	set := compare.Settings{
		Model: m, Eps: c.eps, Obs: c.T, Runtime: c.runtime, Iterations: c.iters,
		Chains: c.chains, Concurrency: c.concurrency, Seed: c.seed + stream<<20,
		Init:     func(ch int, u []float64) error { copy(u, inits[ch]); return nil },
		BurnIn:   burn,
		KSDDraws: c.ksdDraws,
		NewScore: func() (sgmcmc.Estimator, error) {
			return compare.FullGradient(m, data, pf.Settings{N: c.ksdN}, false)
		},
		Truth: ex.truth, Progress: stderr, Prefix: ex.name + " ",
	}
	t0 := time.Now()
	res, err := compare.Run(context.Background(), methods, set)
	if err != nil {
		return err
	}
	w := stdout
	fmt.Fprintf(w, "\n=== %s, T = %d (%.0f s); truth %v ===\n\nStep-size search: log10 KSD total, mean (sd) over chains; * = selected\n",
		ex.name, c.T, time.Since(t0).Seconds(), ex.truth)
	if err := res.WriteGrid(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nOurs: log10 KSD at the selected eps, mean (sd) over %d chains\n", c.chains)
	if err := res.WriteTable(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", ex.paper.Title)
	if err := ex.paper.Write(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTotal log10 KSD, ours vs the paper\n")
	if err := compare.WriteVersus(w, res, ex.paper); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nPosterior mean (sd) after burn-in at the selected eps, averaged over chains\n")
	if err := res.WriteMeans(w); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(c.out, fmt.Sprintf("results_%s.json", ex.name)))
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
	for j, name := range res.Names {
		path := filepath.Join(c.out, fmt.Sprintf("mse_%s_%s.png", ex.name, name))
		if err := compare.PlotMSE(path, res, j, fmt.Sprintf("SGLD on synthetic %s, T = %d", ex.name, c.T)); err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
	}
	return nil
}
