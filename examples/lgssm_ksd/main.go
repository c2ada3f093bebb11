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
	"path/filepath"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() { compare.Main("lgssm_ksd", run) }

// truth is the data-generating (φ, σ, τ) of the paper's section 5.2.
var truth = []float64{0.9, 0.7, 1.0}

// start is the starting point of every chain (before a small jitter).
var start = []float64{0.5, 1.0, 0.5}

// gradients are the values of -methods.
var gradients = map[string]paper.Gradient{"full": paper.Full, "nobuf": paper.NoBuffer, "buf": paper.Buffer}

var command = paper.Command{
	Name: "lgssm_ksd",
	Usage: `Usage: go run ./examples/lgssm_ksd [flags]

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
-study scale (first argument) runs the study of wall time to a given
accuracy at T = 10^4..10^6 instead: -study scale -h for its flags.

Flags:`,
	Defaults: compare.FlagDefaults{
		Out:        filepath.Join("out", "lgssm_ksd"),
		KSDDraws:   100,
		EpsHelp:    "comma-separated step sizes per observation (h = eps/T)",
		NHelp:      "particles of the particle filter methods",
		BurnInHelp: "fraction of each chain's iterations discarded before the KSD (0 keeps all)",
	},
}

type config struct {
	paper.Flags
	Ts      []int
	methods []string
	filters []string
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := c.Define(command, stderr)
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
	if rest, ok, err := scaleArgs(args); err != nil || ok {
		if err != nil {
			return err
		}
		return runScale(rest, stdout, stderr)
	}
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	var m models.LGSSM
	u0, err := m.Params(truth[0], truth[1], truth[2])
	if err != nil {
		return err
	}
	var exps []paper.Experiment
	for ti, T := range c.Ts {
		_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(c.Seed, uint64(ti))))
		if err != nil {
			return err
		}
		exps = append(exps, c.experiment(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}))
	}
	header := fmt.Sprintf("SGLD on synthetic LGSSM (phi, sigma, tau) = (%g, %g, %g); %s\n%s\n",
		truth[0], truth[1], truth[2], c.Budget(), c.KSD("u = (atanh phi, log sigma, log tau)", "exact Kalman score"))
	return paper.Run(context.Background(), stdout, stderr, &c.Flags, header, exps)
}

// experiment is the comparison on data: every -methods gradient with every
// -filters filter, scored with the exact Kalman score.
func (c *config) experiment(m models.LGSSM, data ssm.Dataset) paper.Experiment {
	T := data.TotalLen()
	ex := paper.Experiment{
		Name: fmt.Sprintf("T%d", T), Label: fmt.Sprintf("T=%d", T),
		Model: m, Data: data, Start: start, Truth: truth,
		Score: paper.Estimators{Model: m, Data: data, Exact: true},
		Paper: paperT1000, Title: fmt.Sprintf("T = %d", T),
		Means: fmt.Sprintf("Posterior mean (sd) after burn-in at the selected eps, averaged over chains; truth (%g, %g, %g)", truth[0], truth[1], truth[2]),
		Plot:  fmt.Sprintf("SGLD on LGSSM, T = %d", T),
	}
	if T > 1000 {
		ex.Paper = paperT1e6
	}
	ex.Versus = fmt.Sprintf("Total log10 KSD, ours (T = %d) vs %s", T, ex.Paper.Title)
	for _, name := range c.methods {
		g := gradients[name]
		for _, f := range c.filters {
			e := paper.Estimators{Model: m, Data: data, PF: pf.Settings{N: c.N}, Exact: f == "kf", S: c.S, B: c.B}
			label := fmt.Sprintf("%s N=%d", g, c.N)
			if e.Exact {
				label = g.String() + " N=inf"
			}
			ex.Methods = append(ex.Methods, e.Method(g, label))
		}
	}
	return ex
}
