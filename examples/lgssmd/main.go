// Command lgssmd reproduces the paper's appendix table "KSD results for
// Synthetic LGSSM in higher dimensions" and its figure (MSE of φ for
// d = 5 and d = 10): SGLD on synthetic d-dimensional linear Gaussian state
// space model data (models.LGSSMd with A = 0.9 I, σ = 0.7, τ = 1 in every
// coordinate, T = 1000) with subsequences without a buffer (S = 40, B = 0)
// and buffered subsequences (S = 40, B = 10), each with a particle filter
// (N = 1000) and with the Kalman smoother (N = ∞), all run for the same
// compute time, compared by the kernel Stein discrepancy against the exact
// (Kalman) posterior score and reported per parameter group (A, σ, τ).
//
// Run go run ./examples/lgssmd -h for the flags; see README.md.
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

func main() { compare.Main("lgssmd", run) }

// truth is the data-generating (φ, σ, τ) of the paper's appendix: A = φ I,
// σ_i = σ and τ_i = τ.
var truth = [3]float64{0.9, 0.7, 1.0}

// start is the starting point of every chain (before a small jitter), as
// in lgssm_ksd: A = 0.5 I, σ_i = 1, τ_i = 0.5.
var start = [3]float64{0.5, 1.0, 0.5}

// gradients are the values of -methods.
var gradients = map[string]paper.Gradient{"nobuf": paper.NoBuffer, "buf": paper.Buffer}

var command = paper.Command{
	Name: "lgssmd",
	Usage: `Usage: go run ./examples/lgssmd [flags]

The paper's appendix table "KSD results for Synthetic LGSSM in higher
dimensions": SGLD on synthetic d-dimensional LGSSM data (A = 0.9 I,
sigma = 0.7, tau = 1 in every coordinate; A is a full d x d matrix to
estimate, sigma and tau diagonal) with No Buffer (S, B = 0) and Buffer (S, B)
gradients, each with a particle filter (N particles, locally optimal
proposal) and with the Kalman smoother (N = inf), run for the same compute
time per chain. The SGLD step is h = eps / T; each method's eps is chosen
from the grid by the smallest mean log10 KSD, computed on the unconstrained
u = (A, log sigma, log tau) with the exact Kalman posterior score and
reported per group phi (the d^2 entries of A), sigma and tau (d entries
each). Prints the grid search, our table, the paper's and a comparison;
writes results_d*.json and MSE traces mse_d*_{phi,sigma,tau}.png to -out.

Defaults take about 1.5 minutes; -time 15s (README.md's run) about 11
minutes, -time 1m about 45. The Kalman methods fail at eps >= 0.01 (A
leaves the stable region); -eps 0.003 suits them.

Flags:`,
	Defaults: compare.FlagDefaults{
		Out:        filepath.Join("out", "lgssmd"),
		KSDDraws:   100,
		EpsHelp:    "comma-separated step sizes per observation (h = eps/T)",
		NHelp:      "particles of the particle filter methods",
		BurnInHelp: "fraction of each chain's iterations discarded before the KSD (0 keeps all)",
	},
}

type config struct {
	paper.Flags
	dims    []int
	T       int
	methods []string
	filters []string
}

func parse(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := c.Define(command, stderr)
	dims := fs.String("d", "5,10", "comma-separated state dimensions (the paper: 5,10)")
	fs.IntVar(&c.T, "T", 1000, "sequence length")
	methods := fs.String("methods", "nobuf,buf", "methods to run: nobuf and/or buf")
	filters := fs.String("filters", "pf,kf", "gradient filters: pf (N particles) and/or kf (Kalman, N = inf)")
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	var err error
	if c.dims, err = compare.ParseInts(*dims); err != nil {
		return nil, fmt.Errorf("-d: %w", err)
	}
	if c.methods, err = compare.ParseSet(*methods, "nobuf", "buf"); err != nil {
		return nil, fmt.Errorf("-methods: %w", err)
	}
	if c.filters, err = compare.ParseSet(*filters, "pf", "kf"); err != nil {
		return nil, fmt.Errorf("-filters: %w", err)
	}
	for _, d := range c.dims {
		if d < 1 {
			return nil, fmt.Errorf("-d: dimension %d must be at least 1", d)
		}
	}
	switch {
	case c.N < 1:
		return nil, fmt.Errorf("-N = %d must be at least 1", c.N)
	case c.KSDDraws < 2:
		return nil, fmt.Errorf("-ksddraws = %d must be at least 2", c.KSDDraws)
	case c.S+2*c.B > c.T:
		return nil, fmt.Errorf("S + 2B = %d exceeds the sequence length T = %d", c.S+2*c.B, c.T)
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	var exps []paper.Experiment
	for k, d := range c.dims {
		ex, err := c.experiment(d, uint64(k))
		if err != nil {
			return fmt.Errorf("d=%d: %w", d, err)
		}
		exps = append(exps, ex)
	}
	header := fmt.Sprintf("SGLD on synthetic d-dimensional LGSSM, T = %d, A = %g I, sigma = %g, tau = %g; %s\n%s\n",
		c.T, truth[0], truth[1], truth[2], c.Budget(),
		c.KSD("u = (A, log sigma, log tau)", "exact Kalman score; groups: phi = the d^2 entries of A, sigma, tau = d entries each"))
	return paper.Run(context.Background(), stdout, stderr, &c.Flags, header, exps)
}

// experiment simulates T observations of the d-dimensional model (PCG
// stream stream) and returns the comparison of every -methods gradient
// with every -filters filter on them, reported by parameter group.
func (c *config) experiment(d int, stream uint64) (paper.Experiment, error) {
	m := models.LGSSMd{D: d}
	u0 := make([]float64, m.Dims().Param)
	tr := natural(d, truth)
	if err := m.Unconstrain(u0, tr); err != nil {
		return paper.Experiment{}, err
	}
	_, y, err := m.Simulate(c.T, u0, rand.New(rand.NewPCG(c.Seed, stream)))
	if err != nil {
		return paper.Experiment{}, err
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	g := newGrouping(d)
	ex := paper.Experiment{
		Name: fmt.Sprintf("d%d", d), Label: fmt.Sprintf("d=%d", d),
		Model: m, Data: data, Start: natural(d, start), Truth: tr,
		Score: paper.Estimators{Model: m, Data: data, Exact: true},
		Paper: paperTables[d], Title: fmt.Sprintf("d = %d, T = %d (%d parameters)", d, c.T, m.Dims().Param),
		Versus: fmt.Sprintf("Total log10 KSD, ours (d = %d) vs the paper", d),
		Means: fmt.Sprintf("Posterior mean (sd) after burn-in at the selected eps, averaged over chains and over A's diagonal "+
			"(phi) or the d entries (sigma, tau); truth (%g, %g, %g)", truth[0], truth[1], truth[2]),
		Plot:   fmt.Sprintf("SGLD on %d-dimensional LGSSM, T = %d", d, c.T),
		Reduce: g.reduce, After: g.after,
	}
	if ex.Paper.Title == "" {
		ex.Paper = compare.PaperTable{Title: fmt.Sprintf("Paper: no table for d = %d", d), Columns: []string{"phi", "sigma", "tau", "total"}}
	}
	est := paper.Estimators{Model: m, Data: data, PF: pf.Settings{N: c.N}, S: c.S, B: c.B}
	for _, name := range c.methods {
		ex.Methods = append(ex.Methods, est.Filtered(gradients[name], c.filters...)...)
	}
	return ex, nil
}

// natural returns the natural parameters (A = p[0] I, σ_i = p[1],
// τ_i = p[2]) of the d-dimensional model.
func natural(d int, p [3]float64) []float64 {
	theta := make([]float64, d*d+2*d)
	for i := range d {
		theta[i*d+i] = p[0]
		theta[d*d+i] = p[1]
		theta[d*d+d+i] = p[2]
	}
	return theta
}
