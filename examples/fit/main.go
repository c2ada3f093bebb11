// Command fit fits a state space model to a series with particle buffered
// stochastic gradient MCMC (sgmcmc.Fit) and reports the posterior.
//
// With no flags it fits the stochastic volatility model to the bundled DAX
// daily log-returns (testdata/dax_returns.csv, T = 1859): buffered
// subsequences S = 40, B = 40 filtered by the deterministic grid filter
// (models with a scalar state; GARCH and vector states use N = 1000
// particles, B = 10), second-order control-variate gradients around the
// posterior mode, SGLD with an adapted metric and the injected noise
// corrected for the gradient noise, 4 chains. It prints per natural parameter the posterior mean, sd, 5/50/95%
// quantiles, bulk and tail ESS, R-hat and MCSE, the KSD, and every warning
// (R-hat > 1.01, ESS < 400, stopped chains, interrupts). Ctrl-C (SIGINT) or
// SIGTERM stops the chains and prints the summary of the draws so far.
// Outputs in -out: trace.csv, trace.png, density.png.
// Run "go run ./examples/fit -h" for the flags.
package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
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
	kalman, json, quiet                   bool
	set                                   sgmcmc.FitSettings
	st                                    stateOpts // -states, -forecast (states.go)
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
	fs.StringVar(&c.data, "data", filepath.Join("testdata", "dax_returns.csv"), "CSV file with the observations, one column")
	fs.StringVar(&c.id, "id", "", "name of the id column of a CSV holding several sequences (long format)")
	fs.StringVar(&c.col, "col", "", "the column of a many-column CSV to fit: its header name or its 1-based index (e.g. -col return for date,return)")
	c.proposal.Register(fs, "guided")
	fs.BoolVar(&c.kalman, "kalman", false, "exact (Kalman) gradients instead of a particle filter (lgssm only)")
	fs.StringVar(&c.checkpoint, "checkpoint", "", "checkpoint file: resume from it when it exists, keep it up to date otherwise")
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
	case c.kalman && c.model != "lgssm":
		return nil, fmt.Errorf("-kalman needs -model lgssm (the Kalman filter is exact only for the linear Gaussian model)")
	}
	return c, nil
}

// loadData reads the data set and checks that every sequence fits S + 2B.
func loadData(c *config) (ssm.Dataset, error) {
	var data ssm.Dataset
	switch {
	case strings.HasSuffix(c.data, ".bin"):
		if c.id != "" || c.col != "" {
			return data, fmt.Errorf("-id and -col apply to CSV files, not to the binary %s", c.data)
		}
		// Memory-mapped little-endian float64 values: nothing is read
		// until a window needs it, so T = 10^8 starts in milliseconds.
		m, err := ssm.OpenBinary(c.data, 1)
		if err != nil {
			return data, err
		}
		data = ssm.Dataset{Sequences: []ssm.Sequence{m.Seq()}}
	case c.col != "":
		if c.id != "" {
			return data, fmt.Errorf("-col and -id cannot be combined")
		}
		seq, err := readColumn(c.data, c.col)
		if err != nil {
			return data, err
		}
		data = ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	case c.id == "":
		seq, err := ssm.ReadCSVFile(c.data)
		if err != nil {
			return data, err
		}
		data = ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	default:
		f, err := os.Open(c.data)
		if err != nil {
			return data, err
		}
		defer f.Close()
		if data, err = ssm.ReadCSVDataset(f, c.id); err != nil {
			return data, fmt.Errorf("%s: %w", c.data, err)
		}
	}
	if err := data.Validate(1); err != nil {
		return data, fmt.Errorf("%s: the models are univariate: %w", c.data, err)
	}
	B := max(c.set.B, 0)
	for j, seq := range data.Sequences {
		if !seq.Observed(0, seq.Len()) {
			return data, fmt.Errorf("%s: sequence %d has no observed values (every cell is missing)", c.data, j)
		}
		if need := c.set.S + 2*B; need > seq.Len() {
			return data, fmt.Errorf("S + 2B = %d + 2·%d = %d exceeds the length %d of sequence %d in %s (lower -S or -B)",
				c.set.S, B, need, seq.Len(), j, c.data)
		}
	}
	return data, nil
}

// readColumn reads one column of a CSV file, chosen by header name or by
// 1-based index, through ssm.ReadCSV (same missing-value rules and errors;
// line numbers count the file's records).
func readColumn(path, col string) (ssm.Sequence, error) {
	f, err := os.Open(path)
	if err != nil {
		return ssm.Sequence{}, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return ssm.Sequence{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) == 0 {
		return ssm.Sequence{}, fmt.Errorf("%s: no rows", path)
	}
	j := -1
	if k, err := strconv.Atoi(col); err == nil {
		if k < 1 || k > len(rows[0]) {
			return ssm.Sequence{}, fmt.Errorf("%s: -col %d: the file has %d columns", path, k, len(rows[0]))
		}
		j = k - 1
	} else {
		for i, name := range rows[0] {
			if strings.TrimSpace(name) == col {
				j = i
			}
		}
		if j < 0 {
			return ssm.Sequence{}, fmt.Errorf("%s: no column named %q in the header %q", path, col, strings.Join(rows[0], ","))
		}
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	for i, row := range rows {
		if j >= len(row) {
			return ssm.Sequence{}, fmt.Errorf("%s: line %d has %d cells, no column %d", path, i+1, len(row), j+1)
		}
		w.Write([]string{row[j]}) // into a strings.Builder: cannot fail
	}
	w.Flush()
	seq, err := ssm.ReadCSV(strings.NewReader(b.String()))
	if err != nil {
		return seq, fmt.Errorf("%s, column %d: %w", path, j+1, err)
	}
	return seq, nil
}

// dataWarnings returns what the data say against the default priors: they
// are not scale-free (σ², τ² ~ InvGamma(2, 0.5); GARCH's μ ~ Uniform(0, 2)
// bounds the stationary variance), so returns belong in percent; and a
// constant series carries no information about volatility.
func dataWarnings(model string, data ssm.Dataset) []string {
	var n, s, ss float64
	distinct := map[float64]bool{}
	for _, seq := range data.Sequences {
		for _, y := range seq.Y {
			if !math.IsNaN(y) {
				n, s, ss = n+1, s+y, ss+y*y
				if len(distinct) < 2 {
					distinct[y] = true
				}
			}
		}
	}
	if len(distinct) < 2 {
		return []string{"the data are constant: they carry no information about the dynamics, and the posterior is the prior's"}
	}
	v := (ss - s*s/n) / (n - 1)
	sd := math.Sqrt(v)
	switch {
	case sd < 0.1 || sd > 10:
		return []string{fmt.Sprintf("the data's sd is %.3g, but the default priors (sigma^2, tau^2 ~ InvGamma(2, 0.5)) "+
			"assume data on a unit scale (e.g. returns in percent): rescale the data, or the posterior reflects the prior", sd)}
	case model == "garch" && v > 2:
		return []string{fmt.Sprintf("the data's variance is %.3g, but the default GARCH prior mu ~ Uniform(0, 2) bounds the "+
			"stationary variance of x_t by 2: rescale the data", v)}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	data, err := loadData(c)
	if err != nil {
		return err
	}
	if data, err = c.st.split(data); err != nil { // -holdout
		return err
	}
	var m ssm.Model = map[string]ssm.Model{"lgssm": models.LGSSM{}, "svm": models.SVM{}, "garch": models.GARCH{}}[c.model]
	m, c.set.Proposal = c.proposal.Apply(m)
	warnings := dataWarnings(c.model, data)
	for _, w := range warnings {
		fmt.Fprintln(stderr, "fit: warning:", w)
	}
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
		fmt.Fprintf(stderr, "fit: %v (trace.csv in %s)\n", err, c.out)
		return nil
	}
	if err != nil {
		return err
	}
	if err := csvFile.Close(); err != nil {
		return err
	}
	post.Warnings = append(warnings, post.Warnings...)
	if err := report.TracePNG(filepath.Join(c.out, "trace.png"), names, post.Natural, nil); err != nil {
		return err
	}
	if err := report.DensityPNG(filepath.Join(c.out, "density.png"), names, post.Natural); err != nil {
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
	if c.kalman {
		return g + ", exact Kalman"
	}
	if pr.Grid.Nodes > 0 {
		return g + fmt.Sprintf(", grid filter with %d nodes (spacing %.3g)", pr.Grid.Nodes, pr.Grid.Spacing())
	}
	return g + fmt.Sprintf(", N = %d particles (%s proposal)", c.set.N, c.proposal.String())
}

func writeText(w io.Writer, c *config, data ssm.Dataset, post *sgmcmc.Posterior) error {
	pr := post.Preparation
	fmt.Fprintf(w, "%s fitted to %s (T = %d) by preconditioned SGLD, %s\n", strings.ToUpper(c.model), c.data, data.TotalLen(), describe(c, post))
	fmt.Fprintf(w, "posterior of the natural parameters (%d chains, %d kept draws):\n\n", len(post.U), post.Draws())
	if err := post.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if post.KSD != nil {
		fmt.Fprintf(w, "KSD = %.4g (in u, over %d draws, full-data scores by tiling)\n", post.KSD.KSD, post.KSD.N)
	}
	fmt.Fprintf(w, "step %.3g (posterior-scale), autocorrelation time ≈ %.0f; %d adaptation + %d sampling iterations per chain\n",
		pr.StepSize, pr.IAT, post.BurnIn, post.Iterations)
	fmt.Fprintf(w, "gradient noise variance per coordinate of u, control variate / plain: %s (at the chains' states)\n", fmtList(noiseRatio(pr)))
	fmt.Fprintf(w, "preparation %.1f s, sampling %.1f s, total %.1f s\n", pr.Seconds, post.Sampling.Seconds(), post.Total.Seconds())
	for _, warn := range post.Warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	return nil
}

// noiseRatio returns V_cv[i,i]/V_plain[i,i], the variance reduction of the
// control variate per coordinate of u.
func noiseRatio(pr sgmcmc.Preparation) []float64 {
	p := len(pr.Mode)
	r := make([]float64, p)
	for i := range r {
		r[i] = pr.NoiseCV[i*p+i] / pr.NoisePlain[i*p+i]
	}
	return r
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.3g", x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// jsonParam is one row of the JSON summary.
type jsonParam struct {
	Name    string          `json:"name"`
	Mean    json.RawMessage `json:"mean"`
	SD      json.RawMessage `json:"sd"`
	Q05     json.RawMessage `json:"q05"`
	Q50     json.RawMessage `json:"q50"`
	Q95     json.RawMessage `json:"q95"`
	BulkESS json.RawMessage `json:"bulk_ess"`
	TailESS json.RawMessage `json:"tail_ess"`
	Rhat    json.RawMessage `json:"rhat"`
	MCSE    json.RawMessage `json:"mcse"`
}

func writeJSON(w io.Writer, c *config, post *sgmcmc.Posterior) error {
	f := func(v float64) json.RawMessage { return json.RawMessage(report.JSONFloat(v)) }
	var params []jsonParam
	for _, r := range post.Summary() {
		params = append(params, jsonParam{r.Name, f(r.Mean), f(r.SD), f(r.Q05), f(r.Q50), f(r.Q95), f(r.BulkESS), f(r.TailESS), f(r.Rhat), f(r.MCSE)})
	}
	k := math.NaN()
	if post.KSD != nil {
		k = post.KSD.KSD
	}
	warnings := post.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	return json.NewEncoder(w).Encode(struct {
		Model    string          `json:"model"`
		Data     string          `json:"data"`
		Gradient string          `json:"gradient"`
		Params   []jsonParam     `json:"params"`
		KSD      json.RawMessage `json:"ksd"`
		Step     float64         `json:"step"`
		Noise    []float64       `json:"noise_ratio"`
		Iters    int             `json:"iters"`
		Adapt    int             `json:"adapt_iters"`
		Seconds  float64         `json:"seconds"`
		Chains   int             `json:"chains"`
		Kept     int             `json:"kept"`
		Warnings []string        `json:"warnings"`
		Forecast *forecastJSON   `json:"forecast,omitempty"`
		Holdout  *holdoutJSON    `json:"holdout,omitempty"`
	}{c.model, c.data, post.Preparation.Gradient.String(), params, f(k), post.Preparation.StepSize, noiseRatio(post.Preparation), post.Iterations,
		post.BurnIn, post.Total.Seconds(), len(post.U), post.Draws(), warnings, c.st.forecastJSON(), c.st.holdoutJSON()})
}
