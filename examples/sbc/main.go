// Command sbc runs simulation-based calibration (Talts, Betancourt,
// Simpson, Vehtari and Gelman 2018, "Validating Bayesian inference
// algorithms with simulation-based calibration", arXiv:1804.06788) of
// sgmcmc.Fit on a shipped model:
//
//	go run ./examples/sbc -model svm|lgssm|garch|msv -T N -reps R -seed S [-json] [-out DIR]
//
// Replication r (0-based) draws θ from the model's default prior, simulates a
// series of length T at θ with the model's Simulate, fits it with sgmcmc.Fit
// at its defaults (silent; -chains sets Chains, 0 meaning Fit's 4) and
// records, for each parameter, the rank of the true θ_i among L thinned
// posterior draws of θ_i (the number of draws below it, 0..L). If Fit is
// calibrated, the posterior averaged over the prior's data is the prior, so
// each parameter's ranks are uniform on 0..L over the replications.
//
// Randomness: replication r uses its own generator,
// rand.New(rand.NewPCG(S, r)) from math/rand/v2, for θ, for the series, for
// the fit's Seed (its next Uint64) and for the coin that splits ties in the
// ranks (improbable with continuous draws); the global source is never used.
// The same -seed, -T, -reps and -chains give the same ranks (up to the parts of
// a fit that its documentation says depend on the clock: sampling
// extensions after a minute of sampling).
//
// Prior: θ is drawn from the marginals of the model's default prior
// (models.DefaultSVMPrior and the others) themselves, reading their
// parameters (a truncated Beta, GARCH's φ and λ, by rejection from the
// untruncated Beta, which is exactly the truncated law), and u = u(θ) by
// the prior's transforms. There is no truncation of the prior for SBC.
// The fitted model carries the same prior, as an explicit Prior field
// (models.SVM{Prior: models.DefaultSVMPrior()}): the density is the same as
// that of the nil default, but a model with a prior of its own skips the
// data check that stops a fit under the default prior when the series'
// sd lies outside [0.1, 10] (models.CheckData). That check is a guard
// for users' data; in SBC it would drop the replications whose θ makes
// such a series (a persistent, volatile log-volatility, say), and ranks
// over the rest are not uniform even for an exact sampler. The program
// reports how many series the check would have stopped.
//
// Thinning: a fit returns several thousand draws per chain that are
// autocorrelated. The chains' kept draws are pooled (chain after chain) and
// L are taken evenly spaced over the pool, draw ⌊(j+½)·n/L⌋ for j =
// 0..L−1 of the n pooled draws. Fit runs until every parameter's bulk and
// tail ESS reaches 400 (or warns), so with L = 99 consecutive kept draws
// are n/L ≥ 4 autocorrelation times (n/ESS) apart and nearly independent,
// which SBC needs (correlated draws make the histogram ∪-shaped). A
// replication whose smallest bulk or tail ESS is below L is still ranked
// but counted as under-thinned and reported.
//
// Failures: a replication whose simulation or fit returns an error is
// counted and reported with its error, never dropped silently; one whose fit
// returns warnings is ranked and counted as warned, and the warnings are
// tallied.
//
// An interrupt (SIGINT) stops the run: the replication under way is
// discarded (a fit cut short returns its draws so far with a warning, which
// would not be the posterior) and the report covers the ones before it.
//
// Output: per parameter a text histogram of the ranks in -bins bins (which
// must divide the L+1 ranks), with the 99% band of a bin's count under
// uniformity (Binomial(R, 1/B)), Pearson's χ² statistic of the bin counts
// against uniform counts and its p-value (χ² law with B−1 degrees of
// freedom, distuv.ChiSquared), and the mean of rank/L with its z-score
// against ½ (z > 0: the truth tends to lie above the draws, i.e. the
// posterior is too low). -json prints instead
//
//	{"params": {"phi": {"p": …, "ranks": […], …}, …}, "failed": …, "warned": …, …}
//
// The PNG of the histograms is written to DIR/sbc_<model>.png and the JSON
// to DIR/sbc_<model>.json (-out "" skips both). Per-replication lines go to stderr (-q silences them).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "sbc:", err)
		os.Exit(2)
	}
}

// simulator is what the shipped scalar-observation models have in common.
type simulator interface {
	ssm.Model
	Simulate(T int, u []float64, rng *rand.Rand) ([]float64, ssm.Sequence, error)
}

// setup is one model as SBC uses it: the model the fit gets (with the
// default prior as an explicit Prior), the same model with a nil Prior
// (for the data check the fit would otherwise make), and the prior.
type setup struct {
	fit, bare simulator
	prior     models.Independent
}

func modelSetup(name string) (setup, error) {
	switch name {
	case "svm":
		p := models.DefaultSVMPrior()
		return setup{fit: models.SVM{Prior: p}, bare: models.SVM{}, prior: p}, nil
	case "lgssm":
		p := models.DefaultLGSSMPrior()
		return setup{fit: models.LGSSM{Prior: p}, bare: models.LGSSM{}, prior: p}, nil
	case "garch":
		p := models.DefaultGARCHPrior()
		return setup{fit: models.GARCH{Prior: p}, bare: models.GARCH{}, prior: p}, nil
	case "msv":
		// Two series: their prior is independent in the natural
		// parameters (ρ ~ Uniform(−1, 1)); for D > 2 the LKJ prior is
		// independent in the partial correlations, not in R's entries
		// that the fit reports.
		p := models.DefaultMSVPrior(2)
		return setup{fit: models.MSV{D: 2, Prior: p}, bare: models.MSV{D: 2}, prior: p}, nil
	}
	return setup{}, fmt.Errorf("unknown model %q (want svm, lgssm, garch or msv)", name)
}

type options struct {
	model       string
	T, reps     int
	seed        uint64
	json, quiet bool
	out         string
	L, bins     int
	chains      int
}

// repResult is what one replication gave.
type repResult struct {
	Rep      int       `json:"rep"`
	Theta    []float64 `json:"theta"`
	Ranks    []int     `json:"ranks,omitempty"`
	MinESS   float64   `json:"min_ess,omitempty"` // smallest bulk or tail ESS over the parameters
	Draws    int       `json:"draws,omitempty"`   // pooled kept draws
	Warnings []string  `json:"warnings,omitempty"`
	Err      string    `json:"error,omitempty"`
	Seconds  float64   `json:"seconds"`
	Scale    string    `json:"scale_check,omitempty"` // the default-prior data check's error, when it has one
}

// paramReport is one parameter's result. Nil pointers are NaN (no ranks).
type paramReport struct {
	P        *float64 `json:"p"`
	Chi2     *float64 `json:"chi2"`
	Ranks    []int    `json:"ranks"`
	Counts   []int    `json:"counts"`
	MeanRank *float64 `json:"mean_rank"` // mean of rank/L
	Z        *float64 `json:"z"`         // (mean_rank − ½)/sd under uniformity
}

// report is the whole run, as -json prints it.
type report struct {
	Model        string                 `json:"model"`
	T            int                    `json:"T"`
	Reps         int                    `json:"reps"`
	Seed         uint64                 `json:"seed"`
	L            int                    `json:"L"`
	Bins         int                    `json:"bins"`
	Completed    int                    `json:"completed"` // replications that were ranked
	Failed       int                    `json:"failed"`
	Warned       int                    `json:"warned"`
	UnderThinned int                    `json:"under_thinned"` // ranked with min ESS < L
	ScaleChecked int                    `json:"scale_checked"` // series the default-prior data check would stop
	Interrupted  bool                   `json:"interrupted,omitempty"`
	Seconds      float64                `json:"seconds"`
	Params       map[string]paramReport `json:"params"`
	Names        []string               `json:"names"`
	Failures     []repResult            `json:"failures"`
	WarningKinds map[string]int         `json:"warning_kinds"` // warned replications per kind of warning (numbers as #)
	Replications []repResult            `json:"replications"`
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("sbc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.model, "model", "svm", "model: svm, lgssm, garch or msv (two series)")
	fs.IntVar(&o.T, "T", 500, "length of each simulated series")
	fs.IntVar(&o.reps, "reps", 100, "number of replications")
	fs.Uint64Var(&o.seed, "seed", 1, "seed; replication r uses rand.NewPCG(seed, r)")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON instead of text")
	fs.BoolVar(&o.quiet, "q", false, "no per-replication lines on stderr")
	fs.StringVar(&o.out, "out", "out/sbc", "directory for sbc_<model>.png and sbc_<model>.json (\"\": none)")
	fs.IntVar(&o.L, "L", 99, "thinned posterior draws per replication (ranks 0..L)")
	fs.IntVar(&o.bins, "bins", 10, "histogram bins for the chi-square test (must divide L+1)")
	fs.IntVar(&o.chains, "chains", 0, "chains per fit (0: Fit's default)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sbc -model svm|lgssm|garch|msv -T N -reps R -seed S [-json] [-out DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	switch {
	case o.T <= 0:
		return o, fmt.Errorf("-T %d: the series length must be positive", o.T)
	case o.reps <= 0:
		return o, fmt.Errorf("-reps %d: the number of replications must be positive", o.reps)
	case o.L <= 0:
		return o, fmt.Errorf("-L %d: the number of thinned draws must be positive", o.L)
	case o.bins < 2 || (o.L+1)%o.bins != 0:
		return o, fmt.Errorf("-bins %d: need at least 2 bins that divide the L+1 = %d possible ranks", o.bins, o.L+1)
	case o.chains < 0:
		return o, fmt.Errorf("-chains %d: must be non-negative", o.chains)
	}
	if _, err := modelSetup(o.model); err != nil {
		return o, err
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	rep, err := sbc(ctx, o, stderr)
	if err != nil {
		return err
	}
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
		path := filepath.Join(o.out, "sbc_"+o.model+".png")
		if err := writePNG(path, rep); err != nil {
			return err
		}
		js, err := json.MarshalIndent(rep, "", " ")
		if err != nil {
			return err
		}
		jpath := filepath.Join(o.out, "sbc_"+o.model+".json")
		if err := os.WriteFile(jpath, append(js, '\n'), 0o644); err != nil {
			return err
		}
		if !o.quiet {
			fmt.Fprintln(stderr, "sbc: wrote", path, "and", jpath)
		}
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", " ")
		return enc.Encode(rep)
	}
	return writeText(stdout, rep)
}

// testFitSettings, nil outside tests, lets the end-to-end test shorten the
// fits (it checks the output's structure, not the calibration).
var testFitSettings func(*sgmcmc.FitSettings)

// replicate runs replication r and times it.
func replicate(ctx context.Context, o options, s setup, r int) repResult {
	start := time.Now()
	res := replicateUntimed(ctx, o, s, r)
	res.Seconds = time.Since(start).Seconds()
	return res
}

func replicateUntimed(ctx context.Context, o options, s setup, r int) repResult {
	res := repResult{Rep: r}
	rng := rand.New(rand.NewPCG(o.seed, uint64(r)))
	theta, u, err := drawPrior(s.prior, rng)
	if err != nil {
		res.Err = "prior: " + err.Error()
		return res
	}
	res.Theta = theta
	_, y, err := s.fit.Simulate(o.T, u, rng)
	if err != nil {
		res.Err = "simulate: " + err.Error()
		return res
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	if _, err := models.CheckData(s.bare, data); err != nil {
		res.Scale = err.Error()
	}
	set := sgmcmc.FitSettings{Seed: rng.Uint64(), Chains: o.chains}
	if testFitSettings != nil {
		testFitSettings(&set)
	}
	post, err := sgmcmc.Fit(ctx, s.fit, data, set)
	if err != nil {
		res.Err = "fit: " + err.Error()
		return res
	}
	res.Warnings = post.Warnings
	res.MinESS = math.Inf(1)
	for _, ps := range post.Summary() {
		res.MinESS = math.Min(res.MinESS, math.Min(ps.BulkESS, ps.TailESS))
	}
	k := len(post.Names)
	var pooled []float64
	for _, c := range post.Natural {
		pooled = append(pooled, c...)
	}
	res.Draws = len(pooled) / k
	idx, err := thinIndices(res.Draws, o.L)
	if err != nil {
		res.Err = "thin: " + err.Error()
		return res
	}
	res.Ranks = make([]int, k)
	draws := make([]float64, o.L)
	for i := range k {
		for j, d := range idx {
			draws[j] = pooled[d*k+i]
		}
		res.Ranks[i] = rank(theta[i], draws, rng)
	}
	return res
}

// sbc runs the replications and summarises them.
func sbc(ctx context.Context, o options, stderr io.Writer) (*report, error) {
	s, err := modelSetup(o.model)
	if err != nil {
		return nil, err
	}
	names := s.fit.ParamNames()
	rep := &report{Model: o.model, T: o.T, Reps: o.reps, Seed: o.seed, L: o.L, Bins: o.bins,
		Names: names, Params: map[string]paramReport{}, WarningKinds: map[string]int{}}
	start := time.Now()
	ranks := make([][]int, len(names))
	for r := range o.reps {
		if ctx.Err() != nil {
			rep.Interrupted = true
			rep.Reps = r
			break
		}
		res := replicate(ctx, o, s, r)
		if ctx.Err() != nil { // interrupted: a fit cut short is neither ranked nor a failure
			rep.Interrupted = true
			rep.Reps = r
			break
		}
		rep.Replications = append(rep.Replications, res)
		if res.Scale != "" {
			rep.ScaleChecked++
		}
		status := "ok"
		switch {
		case res.Err != "":
			rep.Failed++
			rep.Failures = append(rep.Failures, res)
			status = "FAILED: " + res.Err
		default:
			rep.Completed++
			for i, rk := range res.Ranks {
				ranks[i] = append(ranks[i], rk)
			}
			if res.MinESS < float64(o.L) {
				rep.UnderThinned++
				status += fmt.Sprintf(", under-thinned (min ESS %.0f < L)", res.MinESS)
			}
			if len(res.Warnings) > 0 {
				rep.Warned++
				status += fmt.Sprintf(", %d warnings", len(res.Warnings))
				seen := map[string]bool{}
				for _, w := range res.Warnings {
					kind := warningKind(w)
					if !seen[kind] {
						seen[kind] = true
						rep.WarningKinds[kind]++
					}
				}
			}
		}
		if !o.quiet {
			fmt.Fprintf(stderr, "sbc: %s rep %d/%d, theta %s: %.1f s, ranks %v, %s\n",
				o.model, r+1, o.reps, fmtTheta(res.Theta), res.Seconds, res.Ranks, status)
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	for i, name := range names {
		pr := paramReport{Ranks: ranks[i]}
		if pr.Ranks == nil {
			pr.Ranks = []int{}
		}
		counts, err := binCounts(pr.Ranks, o.L, o.bins)
		if err != nil {
			return nil, err
		}
		pr.Counts = counts
		stat, p := chiSquare(counts)
		m, z := meanRank(pr.Ranks, o.L)
		pr.Chi2, pr.P, pr.MeanRank, pr.Z = num(stat), num(p), num(m), num(z)
		rep.Params[name] = pr
	}
	if rep.Failures == nil {
		rep.Failures = []repResult{}
	}
	return rep, nil
}

// num returns &v, or nil for NaN (which JSON cannot hold).
func num(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func fmtTheta(theta []float64) string {
	s := make([]string, len(theta))
	for i, v := range theta {
		s[i] = fmt.Sprintf("%.4g", v)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

var numberRE = regexp.MustCompile(`[-+]?[0-9][0-9.,]*(e[-+]?[0-9]+)?`)

// warningKind is a warning with its numbers replaced by #, so that
// warnings of one kind are tallied together.
func warningKind(w string) string {
	k := numberRE.ReplaceAllString(w, "#")
	if len(k) > 160 {
		k = k[:160] + "…"
	}
	return k
}

func fmtNum(p *float64, format string) string {
	if p == nil {
		return "NaN"
	}
	return fmt.Sprintf(format, *p)
}

// writeText writes the report as text.
func writeText(w io.Writer, rep *report) error {
	fmt.Fprintf(w, "SBC of sgmcmc.Fit: model %s, T = %d, %d replications (seed %d), rank of the truth among L = %d thinned draws, %d bins\n",
		rep.Model, rep.T, rep.Reps, rep.Seed, rep.L, rep.Bins)
	if rep.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED after %d replications\n", rep.Reps)
	}
	fmt.Fprintf(w, "ranked %d, failed %d, warned %d (ranked, with warnings), under-thinned %d (min ESS < L); %d series would be stopped by the default-prior data check (skipped: explicit prior)\n",
		rep.Completed, rep.Failed, rep.Warned, rep.UnderThinned, rep.ScaleChecked)
	var secs []float64
	for _, r := range rep.Replications {
		secs = append(secs, r.Seconds)
	}
	if len(secs) > 0 {
		slices.Sort(secs)
		fmt.Fprintf(w, "wall time %.1f s; per replication median %.1f s, max %.1f s\n", rep.Seconds, secs[len(secs)/2], secs[len(secs)-1])
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "failed: rep %d, theta %s: %s\n", f.Rep, fmtTheta(f.Theta), f.Err)
	}
	kinds := make([]string, 0, len(rep.WarningKinds))
	for k := range rep.WarningKinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if c := rep.WarningKinds[b] - rep.WarningKinds[a]; c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	for _, k := range kinds {
		fmt.Fprintf(w, "warning in %d replications: %s\n", rep.WarningKinds[k], k)
	}
	fmt.Fprintln(w)
	for _, name := range rep.Names {
		pr := rep.Params[name]
		stat, p := math.NaN(), math.NaN()
		if pr.Chi2 != nil {
			stat, p = *pr.Chi2, *pr.P
		}
		writeHistogram(w, name, pr.Counts, rep.L, stat, p)
		fmt.Fprintf(w, "  mean rank/L %s (z = %s against 0.5; z > 0: truth above the draws)\n\n", fmtNum(pr.MeanRank, "%.3f"), fmtNum(pr.Z, "%+.2f"))
	}
	fmt.Fprintln(w, "| param | chi2 | p | mean rank/L | z |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, name := range rep.Names {
		pr := rep.Params[name]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, fmtNum(pr.Chi2, "%.2f"), fmtNum(pr.P, "%.3g"), fmtNum(pr.MeanRank, "%.3f"), fmtNum(pr.Z, "%+.2f"))
	}
	return nil
}
