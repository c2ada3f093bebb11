// Command fit fits a state space model to a series with particle buffered
// stochastic gradient MCMC (sgmcmc.Fit) and reports the posterior.
//
// With no flags it fits the stochastic volatility model to the bundled DAX
// daily log-returns (testdata/dax_returns.csv, T = 1859) with Fit's
// defaults, 4 chains: a particle warm-up, then the deterministic grid
// filter (the LGSSM's Kalman filter and GARCH's quadrature filter for those models),
// Newton steps to the mode, and the cheapest of three planned runs
// (control-variate SGLD for long series, Metropolis–Hastings chains on
// full-data scores for short ones such as DAX). It prints per natural
// parameter the posterior mean, sd, 5/50/95%
// quantiles, bulk and tail ESS, R-hat and MCSE, the KSD, and every warning
// (R-hat > 1.01, ESS < 400, stopped chains, interrupts). Ctrl-C (SIGINT) or
// SIGTERM stops the chains and prints the summary of the draws so far.
// Outputs in -out: trace.csv, trace.png, density.png.
// Run "go run ./examples/fit -h" for the flags.
//
// Exit codes: 0 success, 1 error, 2 bad flags, 130 interrupted by SIGINT,
// 143 by SIGTERM. One run at a time uses an -out directory (and a
// -checkpoint path): each holds a lock file with the owner's PID.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() { os.Exit(command(os.Args[1:], os.Stdout, os.Stderr)) }

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2 // bad flags: reported before any work
	// An interrupt exits with 128 + the signal's number, as a shell
	// reports a process the signal ended: 130 for SIGINT, 143 for SIGTERM.
	exitSIGINT  = 130
	exitSIGTERM = 143
)

const exitCodesHelp = `
Exit codes: 0 success; 1 error; 2 bad flags (reported before any work);
130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM: during the sampling the
summary of the draws so far is printed first; before it, one line says so.
A second interrupt ends the command at once.
`

// command runs the command with the first SIGINT or SIGTERM cancelling the
// fit (the second one, with the default handling restored, ends the
// process), prints its error, and returns the exit code.
func command(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got atomic.Value
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			signal.Stop(sigs)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := run(ctx, args, stdout, stderr)
	sig, _ := got.Load().(os.Signal)
	return exitCode(err, sig, stderr)
}

// exitCode prints err (none for -h) and returns the exit code for it and
// the signal that interrupted the run, if any.
func exitCode(err error, sig os.Signal, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "fit:", err)
		if sig == syscall.SIGTERM {
			return exitSIGTERM
		}
		return exitSIGINT
	case errors.As(err, &usage):
		if !usage.printed {
			fmt.Fprintln(stderr, "fit:", err)
		}
		return exitUsage
	}
	fmt.Fprintln(stderr, "fit:", err)
	return exitError
}

// errInterrupted is wrapped by the error of a run a signal (a cancelled
// context) stopped.
var errInterrupted = errors.New("interrupted")

// usageError is a bad command line: exit code 2. printed marks an error
// the flag package has printed already.
type usageError struct {
	error
	printed bool
}

func (e usageError) Unwrap() error { return e.error }

func badFlag(format string, a ...any) error { return usageError{error: fmt.Errorf(format, a...)} }

type config struct {
	model, data, id, col, out, checkpoint string
	cols                                  string   // -cols (msv): the columns, comma-separated
	series                                []string // msv: the name of each component of y_t (header names, else y1, y2, …)
	proposal                              compare.ProposalFlag
	kalman, json, quiet, returns, demean  bool
	allowOutliers                         bool
	nodes, points                         int
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
		fmt.Fprint(fs.Output(), exitCodesHelp)
	}
	c.set.RegisterFlags(fs) // -S -B -N -Ncv -filter -gradient -step -warmup -adapt -iters -time -thin -chains -seed -ksd -q
	fs.StringVar(&c.model, "model", "svm", "model: lgssm, svm, garch or msv (multivariate stochastic volatility: every column of the CSV, or those of -cols, is one series)")
	fs.StringVar(&c.data, "data", filepath.Join("testdata", "dax_returns.csv"), "observations: a CSV file (one column, or pick one with -col; empty cells, NaN, NA, null, '.' and #N/A are missing values) or a .bin file in ssm.WriteBinary's format (memory-mapped; examples/simulate writes one)")
	fs.StringVar(&c.id, "id", "", "name of the id column of a CSV holding several sequences (long format; with -col, the value column of a panel such as ticker,date,close,volume)")
	fs.BoolVar(&c.returns, "returns", false, "fit the percent log returns 100·(log y_t − log y_{t−1}) of the data: prices or index levels (a missing price makes both returns that use it missing)")
	fs.Float64Var(&c.scale, "scale", 1, "multiply the data by this (after -returns): 100 turns returns in fractions into the percent the default priors expect; parameters, states and forecasts are then in the scaled units")
	fs.BoolVar(&c.demean, "demean", false, "subtract each sequence's mean (after -returns and -scale): the LGSSM's state is an AR(1) about 0 with no intercept, so data about a level (a temperature, a rate) are fitted as deviations from it; without it the level is fitted as persistence (phi near 1)")
	fs.StringVar(&c.col, "col", "", "the column of a many-column CSV to fit: its header name or its 1-based index (e.g. -col return for date,return; with -id, of each sequence)")
	fs.StringVar(&c.cols, "cols", "", "msv: the columns of the CSV to fit as the series, comma-separated header names or 1-based indices (e.g. -cols dax,cac or -cols 2,3 for date,dax,cac; default: every column)")
	c.proposal.Register(fs, "guided")
	fs.BoolVar(&c.kalman, "kalman", false, "exact (Kalman) gradients with the tiled Fisher-scoring preparation (lgssm only; -filter auto already uses the Kalman scorer)")
	fs.IntVar(&c.points, "points", 0, "garch: points of the quadrature filter's rule (0: 10, or 7 where the fit finds that correctable; 3 to 24), refined by 4 for the correction; raise it when a warning says the discretisation correction falls short")
	fs.IntVar(&c.nodes, "nodes", 0, "garch: 0 for the default exact scorer, a quadrature filter on log sigma² (10 points, or 7 where the fit finds that correctable, corrected towards 14); 16 to 1024 for a filter on that many fixed sigma² nodes instead (about 5 times slower at 64 nodes, corrected towards 4 times the nodes); the fit warns when the correction is large")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "checkpoint file: resume from it when it exists, keep it up to date otherwise; the fit samples exactly as without it (the same draws); the summary covers every draw of the run, and a finished run's is printed again (FILE, FILE.prep and FILE.draws hold the state, each with a checksum: a damaged one is refused by name; FILE.lock marks it in use)")
	fs.StringVar(&c.out, "out", filepath.Join("out", "fit"), "output directory (created; "+lockName+" in it marks it in use: one run per directory)")
	fs.BoolVar(&c.allowOutliers, "allow-outliers", false, "fit values beyond 10⁶ robust sds (scaled median absolute deviations) from the median, which are otherwise an error naming the first")
	fs.BoolVar(&c.json, "json", false, "print one JSON object to stdout instead of the text report")
	c.st.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{error: err, printed: true} // by fs, with the usage
	}
	if fs.NArg() > 0 {
		return nil, badFlag("unexpected argument %q (flags only)", fs.Arg(0))
	}
	if err := c.proposal.Check(); err != nil {
		return nil, usageError{error: err}
	}
	// The values sgmcmc.Fit would refuse, named by their flags.
	if err := c.set.CheckFlags(); err != nil {
		return nil, usageError{error: err}
	}
	c.set.Exact, c.set.Checkpoint, c.quiet = c.kalman, c.checkpoint, c.set.Progress == nil
	switch {
	case c.model != "lgssm" && c.model != "svm" && c.model != "garch" && c.model != "msv":
		return nil, badFlag("unknown model %q (want lgssm, svm, garch or msv)", c.model)
	case c.cols != "" && c.model != "msv":
		return nil, badFlag("-cols needs -model msv (the other models fit one column: pick it with -col)")
	case c.cols != "" && c.col != "":
		return nil, badFlag("-col and -cols: give one (-cols for the series of -model msv)")
	case c.model == "msv" && strings.HasSuffix(c.data, ".bin"):
		return nil, badFlag("-model msv reads its series from the columns of a CSV file, not from the binary %s (which does not record them)", c.data)
	case c.nodes != 0 && (c.nodes < 16 || c.nodes > 1024):
		return nil, badFlag("-nodes = %d: want 0 (the quadrature filter) or 16 to 1024", c.nodes)
	case c.nodes != 0 && c.model != "garch":
		return nil, badFlag("-nodes needs -model garch")
	case c.points != 0 && (c.points < 3 || c.points > 24):
		return nil, badFlag("-points = %d: want 0 (10 points) or 3 to 24", c.points)
	case c.points != 0 && c.model != "garch":
		return nil, badFlag("-points needs -model garch")
	case c.points != 0 && c.nodes != 0:
		return nil, badFlag("-points and -nodes choose two different filters: set one")
	case c.kalman && c.model != "lgssm":
		return nil, badFlag("-kalman needs -model lgssm (the Kalman filter is exact only for the linear Gaussian model)")
	case strings.HasSuffix(c.data, ".bin") && (c.id != "" || c.col != "" || c.cols != ""):
		return nil, badFlag("-id and -col apply to CSV files, not to the binary %s", c.data)
	case c.data == "":
		return nil, badFlag("-data is empty (want a CSV or .bin file)")
	case c.out == "":
		return nil, badFlag("-out is empty (want a directory)")
	case c.scale == 0 || math.IsNaN(c.scale) || math.IsInf(c.scale, 0):
		return nil, badFlag("-scale = %v: want a finite, non-zero factor", c.scale)
	}
	if c.col != "" {
		if _, err := ssm.ParseCSVColumn(c.col); err != nil {
			return nil, badFlag("-col %q: %s", c.col, strings.TrimPrefix(err.Error(), "ssm: "))
		}
	}
	if c.cols != "" {
		if _, err := parseCols(c.cols); err != nil {
			return nil, usageError{error: err}
		}
	}
	switch o := &c.st; {
	case o.forecast < 0:
		return nil, badFlag("-forecast = %d is negative (want a horizon H ≥ 1, or 0: none)", o.forecast)
	case o.holdout < 0:
		return nil, badFlag("-holdout = %d is negative (want the number of held-out rows, or 0: none)", o.holdout)
	case o.draws < 1:
		return nil, badFlag("-state-draws = %d: want at least 1", o.draws)
	}
	return c, nil
}

// prepareOutputs checks and makes, before any work, the places the run
// writes to: the -out directory (created; locked), the directory of
// -checkpoint (created; the path locked) and that of -states (created).
// A path that cannot be one (a parent that is a file, no permission) is
// an error naming its flag. release frees the locks.
func prepareOutputs(c *config, stderr io.Writer) (_ func(), err error) {
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if err := makeDir("-out", c.out); err != nil {
		return nil, err
	}
	r, err := acquireLock(filepath.Join(c.out, lockName), "-out", c.out, stderr)
	if err != nil {
		return nil, err
	}
	releases = append(releases, r)
	for _, p := range []struct{ flag, path string }{{"-checkpoint", c.checkpoint}, {"-states", c.st.file}} {
		if p.path == "" {
			continue
		}
		if st, err := os.Stat(p.path); err == nil && st.IsDir() {
			return nil, fmt.Errorf("%s %s is a directory: want a file path", p.flag, p.path)
		}
		if err := makeDir(p.flag, filepath.Dir(p.path)); err != nil {
			return nil, err
		}
		if err := probeWritable(p.flag, p.path); err != nil {
			return nil, err
		}
	}
	if c.checkpoint != "" {
		r, err := acquireLock(c.checkpoint+".lock", "-checkpoint", c.checkpoint, stderr)
		if err != nil {
			return nil, err
		}
		releases = append(releases, r)
	}
	return release, nil
}

// makeDir creates dir (the directory of a flag's path) with its parents,
// or says why it cannot.
func makeDir(flag, dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s: %s is a file, not a directory", flag, dir)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		// MkdirAll's "not a directory" names the path it tried.
		return fmt.Errorf("%s: cannot create the directory %s: %v", flag, dir, err)
	}
	return nil
}

// probeWritable reports whether a file can be created next to path.
func probeWritable(flag, path string) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".fit-probe-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write in its directory: %v", flag, path, unwrapPath(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

var modelNamed = map[string]ssm.Model{"lgssm": models.LGSSM{}, "svm": models.SVM{}, "garch": models.GARCH{}, "msv": models.MSV{D: 1}} // msv: D from the data

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	release, err := prepareOutputs(c, stderr)
	if err != nil {
		return err
	}
	defer release()
	data, err := loadData(c)
	for _, n := range c.notes {
		fmt.Fprintln(stderr, "fit: note: "+n)
	}
	if err != nil {
		return err
	}
	if data, err = c.st.split(data); err != nil { // -holdout
		return err
	}
	small := smallDataWarning(data)
	if small != "" {
		fmt.Fprintln(stderr, "fit: warning: "+small)
	}
	base := modelNamed[c.model]
	if c.nodes != 0 || c.points != 0 {
		base = models.GARCH{Nodes: c.nodes, Points: c.points}
	}
	if c.model == "msv" {
		base = models.MSV{D: data.Sequences[0].Obs}
	}
	m, proposal := c.proposal.Apply(base)
	c.set.Proposal = proposal
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
	if err != nil && ctx.Err() != nil {
		// Cancelled before a draw was kept: one line, not the chain of
		// "context canceled" errors of every step that stopped.
		return interruptedEarly(c)
	}
	if err != nil {
		if errors.Is(err, sgmcmc.ErrCheckpoint) {
			return errors.New(strings.Replace(err.Error(), "another checkpoint path", "another -checkpoint path", 1))
		}
		if h := flagHints(err.Error()); h != "" {
			return fmt.Errorf("%w (%s)", err, h)
		}
		return err
	}
	for i, w := range post.Warnings {
		if h := flagHints(w); h != "" {
			post.Warnings[i] = w + " (" + h + ")"
		}
	}
	if small != "" {
		post.Warnings = append(post.Warnings, small)
	}
	if err := csvFile.Close(); err != nil {
		return err
	}
	if err := errors.Join(
		writeAtomic(filepath.Join(c.out, "trace.png"), func(tmp string) error { return report.TracePNG(tmp, names, post.Natural, nil) }),
		writeAtomic(filepath.Join(c.out, "density.png"), func(tmp string) error { return report.DensityPNG(tmp, names, post.Natural) })); err != nil {
		return err
	}
	wanted := c.st.file != "" || c.st.forecast > 0 || c.st.holdout > 0
	if ctx.Err() == nil {
		if err := computeStates(ctx, c, data, post, stderr); err != nil {
			if ctx.Err() == nil {
				return err
			}
			fmt.Fprintln(stderr, "fit: interrupted during -states, -forecast or -holdout: they are left out")
			c.st.states, c.st.fc, c.st.score = nil, nil, nil
		}
	} else if wanted {
		fmt.Fprintln(stderr, "fit: interrupted: -states, -forecast and -holdout are left out")
	}
	if c.json {
		err = writeJSON(stdout, c, post)
	} else if err = writeText(stdout, c, data, post); err == nil {
		err = c.st.writeText(stdout, c.series)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w during the sampling: the summary covers the %d draws kept so far", errInterrupted, post.Draws())
	}
	return nil
}

// computeStates runs the -states, -forecast and -holdout computations
// (stateOpts.compute) with the files they write, the -states CSV and
// states.png, made under temporary names and renamed into place when
// both are complete (writeAtomic): a reader never sees half of one.
func computeStates(ctx context.Context, c *config, data ssm.Dataset, post *sgmcmc.Posterior, stderr io.Writer) error {
	if c.st.file == "" {
		return c.st.compute(ctx, c, data, post, stderr)
	}
	final := c.st.file
	tmpDir, err := os.MkdirTemp(c.out, ".tmp-states-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	cc := *c
	cc.out = tmpDir // states.png
	var png string
	err = writeAtomic(final, func(tmp string) error {
		c.st.file = tmp
		defer func() { c.st.file = final }()
		if err := c.st.compute(ctx, &cc, data, post, stderr); err != nil {
			return err
		}
		png = filepath.Join(tmpDir, "states.png")
		return nil
	})
	if err != nil {
		return err
	}
	// states.png, or one plot per series for msv (states1.png, …).
	pngs, err := filepath.Glob(filepath.Join(filepath.Dir(png), "states*.png"))
	if err != nil {
		return err
	}
	for _, p := range pngs {
		if err := os.Rename(p, filepath.Join(c.out, filepath.Base(p))); err != nil {
			return err
		}
	}
	return nil
}

// interruptedEarly is the error of a run interrupted before its first
// kept draw; with -checkpoint it says what the next run resumes from.
func interruptedEarly(c *config) error {
	err := fmt.Errorf("%w while preparing (no draws yet)", errInterrupted)
	if c.checkpoint == "" {
		return err
	}
	for _, p := range []string{c.checkpoint, c.checkpoint + ".prep"} {
		if _, statErr := os.Stat(p); statErr == nil {
			return fmt.Errorf("%w; the same command resumes from %s", err, p)
		}
	}
	return err
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
	if pr.Laplace {
		return g + ", Laplace importance sampling"
	}
	if pr.Exact {
		scorer := map[string]string{"lgssm": " (Kalman filter)", "garch": " (quadrature filter on log σ²)"}[c.model]
		if c.nodes != 0 {
			scorer = fmt.Sprintf(" (filter on %d σ² nodes)", c.nodes)
		}
		return g + ", the model's exact scorer" + scorer
	}
	if pr.Grid.Nodes > 0 {
		return g + fmt.Sprintf(", grid filter with %d nodes (spacing %.3g)", pr.Grid.Nodes, pr.Grid.Spacing())
	}
	proposal := c.proposal.String()
	if c.model == "msv" {
		proposal = "bootstrap" // MSV's kernel has no guided proposal
	}
	return g + fmt.Sprintf(", N = %d particles (%s proposal)", c.set.N, proposal)
}

func writeText(w io.Writer, c *config, data ssm.Dataset, post *sgmcmc.Posterior) error {
	method := post.Method()
	series := ""
	if c.model == "msv" {
		series = fmt.Sprintf(", D = %d series: %s", len(c.series), strings.Join(c.series, ", "))
	}
	fmt.Fprintf(w, "%s fitted to %s (T = %d%s) by %s, %s\n", strings.ToUpper(c.model), c.data, data.TotalLen(), series, method, describe(c, post))
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
		Model  string   `json:"model"`
		Data   string   `json:"data"`
		Series []string `json:"series,omitempty"` // msv: the column of each component of y_t
		sgmcmc.PosteriorReport
		Forecast *forecastJSON `json:"forecast,omitempty"`
		Holdout  *holdoutJSON  `json:"holdout,omitempty"`
	}{c.model, c.data, c.series, post.Report(), c.st.forecastJSON(c.series), c.st.holdoutJSON()})
}

// flagHints names this command's flags for the library calls a message
// advises (the library names its API, not one command's flags); "" when
// it advises none.
func flagHints(msg string) string {
	var hints []string
	for _, h := range [...]struct{ call, flag string }{
		{"ssm.LogReturns", "-returns"},
		{"ssm.Scaled(y, 100)", "-scale 100"},
		{"ssm.Scaled(y, 0.01)", "-scale 0.01"},
	} {
		if strings.Contains(msg, h.call) {
			hints = append(hints, h.flag)
		}
	}
	if len(hints) == 0 {
		return ""
	}
	return "with this command: " + strings.Join(hints, ", ")
}
