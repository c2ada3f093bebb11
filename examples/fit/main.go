// Command fit fits a state space model to a series with particle buffered
// stochastic gradient MCMC (sgmcmc.Fit) and reports the posterior.
//
// With no flags it fits the stochastic volatility model to the bundled DAX
// daily log-returns (testdata/dax_returns.csv, T = 1859) with Fit's
// defaults, 4 chains: a particle warm-up, then the deterministic grid
// filter (the LGSSM's Kalman filter and GARCH's σ² nodes for those models),
// Newton steps to the mode, and the cheapest of three planned runs
// (control-variate SGLD for long series, Metropolis–Hastings chains on
// full-data scores for short ones such as DAX). It prints per natural
// parameter the posterior mean, sd, 5/50/95%
// quantiles, bulk and tail ESS, R-hat and MCSE, the KSD, and every warning
// (R-hat > 1.01, ESS < 400, stopped chains, interrupts). Ctrl-C (SIGINT) or
// SIGTERM stops the chains and prints the summary of the draws so far.
// Outputs in -out: trace.csv, trace.png, density.png.
// Run "go run ./examples/fit -h" for the flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "fit:", err)
		os.Exit(1)
	}
}

type config struct {
	model, data, id, col, out, checkpoint string
	proposal                              compare.ProposalFlag
	kalman, json, quiet, returns, demean  bool
	nodes                                 int
	scale                                 float64
	set                                   sgmcmc.FitSettings
	st                                    stateOpts // -states, -forecast (states.go)
	notes                                 []string  // what loadData did to the data unasked
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{set: sgmcmc.FitSettings{S: 40, N: 1000, WarmUp: 300, Thin: 1, Chains: 4, Seed: 1, Progress: stderr}}
	fs := flag.NewFlagSet("fit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: go run ./examples/fit [flags]\n\nFits a state space model by sgmcmc.Fit and prints the posterior (see examples/fit/README.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	c.set.RegisterFlags(fs) // -S -B -N -Ncv -filter -gradient -step -warmup -adapt -iters -time -thin -chains -seed -ksd -q
	fs.StringVar(&c.model, "model", "svm", "model: lgssm, svm or garch")
	fs.StringVar(&c.data, "data", filepath.Join("testdata", "dax_returns.csv"), "observations: a CSV file (one column, or pick one with -col; empty cells, NaN, NA, null, '.' and #N/A are missing values) or a .bin file in ssm.WriteBinary's format (memory-mapped; examples/simulate writes one)")
	fs.StringVar(&c.id, "id", "", "name of the id column of a CSV holding several sequences (long format; with -col, the value column of a panel such as ticker,date,close,volume)")
	fs.BoolVar(&c.returns, "returns", false, "fit the percent log returns 100·(log y_t − log y_{t−1}) of the data: prices or index levels (a missing price makes both returns that use it missing)")
	fs.Float64Var(&c.scale, "scale", 1, "multiply the data by this (after -returns): 100 turns returns in fractions into the percent the default priors expect; parameters, states and forecasts are then in the scaled units")
	fs.BoolVar(&c.demean, "demean", false, "subtract each sequence's mean (after -returns and -scale): the LGSSM's state is an AR(1) about 0 with no intercept, so data about a level (a temperature, a rate) are fitted as deviations from it; without it the level is fitted as persistence (phi near 1)")
	fs.StringVar(&c.col, "col", "", "the column of a many-column CSV to fit: its header name or its 1-based index (e.g. -col return for date,return; with -id, of each sequence)")
	c.proposal.Register(fs, "guided")
	fs.BoolVar(&c.kalman, "kalman", false, "exact (Kalman) gradients with the tiled Fisher-scoring preparation (lgssm only; -filter auto already uses the Kalman scorer)")
	fs.IntVar(&c.nodes, "nodes", 0, "garch: sigma² nodes of the exact scorer (0: 64, or 32 or 24 where the fit finds that correctable; 128 costs about 3.2 times 64); the fit corrects the chains towards 4 times the nodes (256 for 64; for the coarser 32 and 24, Richardson's extrapolation from 32 and 64) and warns when that correction is large")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "checkpoint file: resume from it when it exists, keep it up to date otherwise; the sampling is then one planned segment (no proposal refit, no extensions), so the draws differ from a run without it; the summary covers every draw of the run, and a finished run's is printed again (FILE, FILE.prep and FILE.draws hold the state)")
	fs.StringVar(&c.out, "out", filepath.Join("out", "fit"), "output directory")
	fs.BoolVar(&c.json, "json", false, "print one JSON object to stdout instead of the text report")
	c.st.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only)", fs.Arg(0))
	}
	if err := c.proposal.Check(); err != nil {
		return nil, err
	}
	// sgmcmc.Fit checks the settings' values.
	c.set.Exact, c.set.Checkpoint, c.quiet = c.kalman, c.checkpoint, c.set.Progress == nil
	switch {
	case c.model != "lgssm" && c.model != "svm" && c.model != "garch":
		return nil, fmt.Errorf("unknown model %q (want lgssm, svm or garch)", c.model)
	case c.nodes != 0 && c.model != "garch":
		return nil, fmt.Errorf("-nodes needs -model garch")
	case c.kalman && c.model != "lgssm":
		return nil, fmt.Errorf("-kalman needs -model lgssm (the Kalman filter is exact only for the linear Gaussian model)")
	case strings.HasSuffix(c.data, ".bin") && (c.id != "" || c.col != ""):
		return nil, fmt.Errorf("-id and -col apply to CSV files, not to the binary %s", c.data)
	}
	return c, nil
}

// loadData reads the data set and checks that every sequence has an
// observed value.
// The mapping of a .bin file lives as long as the process.
func loadData(c *config) (ssm.Dataset, error) {
	data, _, err := ssm.DataFile{Path: c.data, ID: c.id, Column: c.col}.Open()
	if err != nil {
		return data, err
	}
	if err := data.Validate(1); err != nil {
		return data, fmt.Errorf("%s: the models are univariate (pick a column with -col; a decimal comma, 0,5, makes two columns): %w", c.data, err)
	}
	if !strings.HasSuffix(c.data, ".bin") {
		// Investing.com, Nasdaq.com and MarketWatch list the newest day
		// first; GARCH is not time-reversible (the DAX returns backwards
		// moved its posterior means of mu and tau by 1.2 and 1.5 sds).
		order, name, err := ssm.CSVFileDateOrder(c.data, c.id)
		if err != nil {
			return data, err
		}
		if order == ssm.DatesDescending {
			for j, seq := range data.Sequences {
				data.Sequences[j] = ssm.Reversed(seq)
			}
			c.notes = append(c.notes, fmt.Sprintf("the %s column of %s runs newest first: its rows are fitted oldest first", name, c.data))
		}
	}
	for j, seq := range data.Sequences { // new slices: a mapped .bin file is only read
		if c.returns {
			if seq, err = ssm.LogReturns(seq, 100); err != nil {
				return data, fmt.Errorf("%s: %s: -returns: %w", c.data, seqName(data, j), err)
			}
		}
		if c.scale != 1 {
			if seq, err = ssm.Scaled(seq, c.scale); err != nil {
				return data, fmt.Errorf("-scale: %w", err)
			}
		}
		if c.demean {
			seq, _ = ssm.Demeaned(seq)
		}
		data.Sequences[j] = seq
	}
	// A sequence shorter than S is one whole window (gradient.Subsequencer).
	for j, seq := range data.Sequences {
		if !seq.Observed(0, seq.Len()) {
			return data, fmt.Errorf("%s: %s has no observed values (every cell is missing)", c.data, seqName(data, j))
		}
	}
	return data, nil
}

// seqName names sequence j of data: by its id (-id), else by its index.
func seqName(data ssm.Dataset, j int) string {
	if j < len(data.IDs) {
		return fmt.Sprintf("sequence %d (id %q)", j, data.IDs[j])
	}
	return fmt.Sprintf("sequence %d", j)
}

var modelNamed = map[string]ssm.Model{"lgssm": models.LGSSM{}, "svm": models.SVM{}, "garch": models.GARCH{}}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	data, err := loadData(c)
	if err != nil {
		return err
	}
	for _, n := range c.notes {
		fmt.Fprintln(stderr, "fit: "+n)
	}
	if data, err = c.st.split(data); err != nil { // -holdout
		return err
	}
	base := modelNamed[c.model]
	if c.nodes != 0 {
		base = models.GARCH{Nodes: c.nodes}
	}
	m, proposal := c.proposal.Apply(base)
	c.set.Proposal = proposal
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	names := m.ParamNames()
	csvFile, err := os.OpenFile(filepath.Join(c.out, "trace.csv"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer csvFile.Close()
	csvRec := sgmcmc.NewCSVRecorder(csvFile, names)
	csvRec.Transform = func(dst, u []float64) { m.Constrain(dst, u) }
	c.set.Recorder = csvRec
	post, err := sgmcmc.Fit(ctx, m, data, c.set)
	if errors.Is(err, sgmcmc.ErrFinished) {
		// Killed after its last checkpoint: trace.csv is complete.
		fmt.Fprintf(stderr, "fit: %v; its summary: go run ./examples/merge %s\n", err, filepath.Join(c.out, "trace.csv"))
		return nil
	}
	if err != nil {
		return err
	}
	if err := csvFile.Close(); err != nil {
		return err
	}
	if err := errors.Join(report.TracePNG(filepath.Join(c.out, "trace.png"), names, post.Natural, nil),
		report.DensityPNG(filepath.Join(c.out, "density.png"), names, post.Natural)); err != nil {
		return err
	}
	if err := c.st.compute(ctx, c, data, post, stderr); err != nil {
		return err
	}
	if c.json {
		return writeJSON(stdout, c, post)
	}
	if err := writeText(stdout, c, data, post); err != nil {
		return err
	}
	return c.st.writeText(stdout)
}

func describe(c *config, post *sgmcmc.Posterior) string {
	pr := post.Preparation
	g := fmt.Sprintf("%v gradients, buffered subsequences S = %d, B = %d", pr.Gradient, pr.S, pr.B)
	if pr.Gradient == sgmcmc.FullGradient {
		g = "full-data scores"
	}
	if c.kalman {
		return g + ", exact Kalman"
	}
	if pr.Exact {
		scorer := map[string]string{"lgssm": " (Kalman filter)", "garch": " (filter on σ² nodes)"}[c.model]
		return g + ", the model's exact scorer" + scorer
	}
	if pr.Grid.Nodes > 0 {
		return g + fmt.Sprintf(", grid filter with %d nodes (spacing %.3g)", pr.Grid.Nodes, pr.Grid.Spacing())
	}
	return g + fmt.Sprintf(", N = %d particles (%s proposal)", c.set.N, c.proposal.String())
}

func writeText(w io.Writer, c *config, data ssm.Dataset, post *sgmcmc.Posterior) error {
	method := "preconditioned SGLD"
	if post.Preparation.Gradient == sgmcmc.FullGradient {
		method = "Metropolis–Hastings (Langevin and independence proposals)"
	}
	fmt.Fprintf(w, "%s fitted to %s (T = %d) by %s, %s\n", strings.ToUpper(c.model), c.data, data.TotalLen(), method, describe(c, post))
	chains := "chains"
	if len(post.U) == 1 {
		chains = "chain"
	}
	fmt.Fprintf(w, "posterior of the natural parameters (%d %s, %d kept draws):\n\n", len(post.U), chains, post.Draws())
	if err := post.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return post.WriteDiagnostics(w)
}

// writeJSON prints the report as one JSON object: the model and data,
// sgmcmc.PosteriorReport's fields, and the forecast and holdout members.
func writeJSON(w io.Writer, c *config, post *sgmcmc.Posterior) error {
	return json.NewEncoder(w).Encode(struct {
		Model string `json:"model"`
		Data  string `json:"data"`
		sgmcmc.PosteriorReport
		Forecast *forecastJSON `json:"forecast,omitempty"`
		Holdout  *holdoutJSON  `json:"holdout,omitempty"`
	}{c.model, c.data, post.Report(), c.st.forecastJSON(), c.st.holdoutJSON()})
}
