// Command realdata follows the protocol of the paper's Table 3 (SGLD on
// exchange-rate log-returns) on the bundled DAX returns: the series is cut
// into segments treated as independent sequences, the first segments are
// the training set and the rest the test set, and SGLD with four gradient
// estimators (Full, Weekly = one random segment, No Buffer, Buffer) runs for
// the same compute time per chain. It reports the kernel Stein discrepancy
// (full-data particle filter scores), the held-out predictive
// log-likelihood and trace plots.
//
// Run go run ./examples/realdata -h for the flags; see README.md.
package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() { compare.Main("realdata", run) }

type experiment struct {
	name  string
	model ssm.Model
	start []float64 // natural parameters every chain starts from (plus jitter)
	paper compare.PaperTable
}

func experiments() map[string]experiment {
	return map[string]experiment{
		// The paper starts at φ = 0.9 (σ = 1.73, τ = 0.1 for minute data);
		// σ and τ are set to the scale of daily returns in percent.
		"svm": {name: "svm", model: models.SVM{}, start: []float64{0.9, 0.5, 1}, paper: paperSVM},
		// The paper's logit φ = 1.7 and logit λ = 2.7; μ near the variance
		// of the data.
		"garch": {name: "garch", model: models.GARCH{}, start: []float64{1, 0.85, 0.937, 0.3}, paper: paperGARCH},
	}
}

var command = paper.Command{
	Name: "realdata",
	Usage: `Usage: go run ./examples/realdata [flags]

The paper's Table 3 protocol on the bundled DAX daily log-returns: the
series is cut into -segments consecutive segments of (nearly) equal length,
treated as independent sequences (a stand-in for the paper's weekly
segments); the first -train fraction of them is the training set, the rest
the test set. SGLD with Full (all training segments), Weekly (one random
segment, full filter), No Buffer (S, B = 0) and Buffer (S, B) particle
filter gradients (N particles) runs for the same compute time per chain.
The SGLD step is h = eps / T_train (eps is the step size per observation);
each method's eps is chosen from the grid by the smallest mean log10 KSD,
computed on the unconstrained parameters with full-data particle filter
scores (-ksdN particles). Held-out fit: for -preddraws posterior draws per
chain, the particle filter (-predN particles) estimates log p(y_test | theta)
summed over test segments; we report the mean of these estimates over draws
("E log p") and the log of the mean likelihood ("log E p"), both per test
observation. Writes results_<model>.json and trace_<model>_<param>.png.

Longer runs: -time 1m -ksddraws 200. Defaults take 3-5 minutes.

Flags:`,
	Defaults: compare.FlagDefaults{
		Out:        filepath.Join("out", "realdata"),
		KSDDraws:   15,
		EpsHelp:    "comma-separated step sizes per observation (h = eps/T_train)",
		NHelp:      "particles of the gradient estimators",
		BurnInHelp: "fraction of each chain's iterations discarded (0 keeps all)",
	},
	Proposal: true,
	Models:   []string{"svm", "garch"},
}

type config struct {
	paper.Flags
	data      string
	segments  int
	train     float64
	ksdN      int
	predDraws int
	predN     int
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := c.Define(command, stderr)
	fs.StringVar(&c.data, "data", filepath.Join("testdata", "dax_returns.csv"), "CSV file with one column of returns")
	fs.IntVar(&c.segments, "segments", 26, "number of segments the series is cut into")
	fs.Float64Var(&c.train, "train", 0.8, "fraction of segments (the first ones) used for training")
	fs.IntVar(&c.ksdN, "ksdN", 1000, "particles of the full-data filter giving the KSD scores")
	fs.IntVar(&c.predDraws, "preddraws", 10, "posterior draws per chain for the predictive log-likelihood")
	fs.IntVar(&c.predN, "predN", 1000, "particles of the predictive log-likelihood filter")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case c.segments < 2:
		return nil, fmt.Errorf("-segments = %d must be at least 2", c.segments)
	case !(c.train > 0 && c.train < 1):
		return nil, fmt.Errorf("-train = %g must be in (0, 1)", c.train)
	case c.N < 1 || c.ksdN < 1 || c.predN < 1:
		return nil, fmt.Errorf("-N, -ksdN and -predN must be at least 1")
	case c.KSDDraws < 2 || c.predDraws < 1:
		return nil, fmt.Errorf("-ksddraws must be at least 2 and -preddraws at least 1")
	}
	return c, nil
}

// split cuts y into n consecutive segments whose lengths differ by at most
// one, returning the first k as the training set and the rest as the test
// set.
func split(y ssm.Sequence, n int, frac float64) (train, test ssm.Dataset, err error) {
	T := y.Len()
	if n > T {
		return train, test, fmt.Errorf("%d segments for %d observations", n, T)
	}
	k := int(math.Round(frac * float64(n)))
	if k < 1 || k >= n {
		return train, test, fmt.Errorf("-train = %g of %d segments leaves an empty training or test set", frac, n)
	}
	for i := range n {
		a, b := i*T/n, (i+1)*T/n
		seg := ssm.Sequence{Obs: y.Obs, Y: y.Y[a*y.Obs : b*y.Obs]}
		id := fmt.Sprintf("%d", i+1)
		if i < k {
			train.Sequences = append(train.Sequences, seg)
			train.IDs = append(train.IDs, id)
		} else {
			test.Sequences = append(test.Sequences, seg)
			test.IDs = append(test.IDs, id)
		}
	}
	return train, test, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	y, err := ssm.ReadCSVFile(c.data)
	if err != nil {
		return err
	}
	if y.Obs != 1 {
		return fmt.Errorf("%s: %d columns, want one column of returns", c.data, y.Obs)
	}
	train, test, err := split(y, c.segments, c.train)
	if err != nil {
		return err
	}
	shortest := y.Len()
	for _, s := range train.Sequences {
		shortest = min(shortest, s.Len())
	}
	if c.S+2*c.B > shortest {
		return fmt.Errorf("S + 2B = %d exceeds the shortest segment (%d observations)", c.S+2*c.B, shortest)
	}
	all := experiments()
	var exps []paper.Experiment
	for k, name := range c.Models {
		exps = append(exps, c.experiment(all[name], train, test, uint64(k)))
	}
	header := fmt.Sprintf("%s: %d observations in %d segments of %d-%d; training %d segments (%d obs), test %d segments (%d obs)\n",
		c.data, y.Len(), c.segments, shortest, (y.Len()+c.segments-1)/c.segments,
		len(train.Sequences), train.TotalLen(), len(test.Sequences), test.TotalLen())
	header += fmt.Sprintf("%d chains per method and step size, %v per chain; %s\n", c.Chains, c.Runtime,
		c.KSD("the unconstrained parameters", fmt.Sprintf("full-data PF scores (N = %d)", c.ksdN)))
	return paper.Run(context.Background(), stdout, stderr, &c.Flags, header, exps)
}

// experiment is the comparison of Full, Weekly, No Buffer and Buffer on the
// training segments, followed by the held-out predictive fit on the test
// segments; stream is its index among the -models.
func (c *config) experiment(ex experiment, train, test ssm.Dataset, stream uint64) paper.Experiment {
	m, prop := c.Proposal.Apply(ex.model)
	est := paper.Estimators{Model: m, Data: train, PF: pf.Settings{N: c.N, Proposal: prop}, S: c.S, B: c.B}
	return paper.Experiment{
		Name: ex.name, Label: ex.name,
		Model: m, Data: train, Start: ex.start,
		Methods: est.Methods(paper.Full, paper.Weekly, paper.NoBuffer, paper.Buffer),
		Score:   paper.Estimators{Model: m, Data: train, PF: pf.Settings{N: c.ksdN, Proposal: prop}},
		Paper:   ex.paper, Title: ex.name,
		Versus: "Total log10 KSD, ours (DAX) vs the paper (EUR-USD; different data, compare orderings only)",
		Means:  "Posterior mean (sd) after burn-in at the selected eps, averaged over chains",
		Plot:   fmt.Sprintf("SGLD on DAX returns, %s: first chain at the selected eps", ex.name),
		After: func(ctx context.Context, res *compare.Result) (paper.Extra, error) {
			rows, err := predictive(ctx, m, prop, test, res, c, stream)
			return heldOut{res: res, rows: rows, obs: test.TotalLen(), n: c.predN}, err
		},
	}
}
