// Command gridref computes independent reference posteriors for the
// models of examples/fit on a data file, to check what examples/fit
// reports. Its posteriors use no particle gradient and no sampler from the
// library: only the models' priors and transforms (models.SVM,
// models.LGSSM, models.GARCH) and a likelihood computed here.
//
//   - -model svm (default): the likelihood by a grid (hidden Markov model)
//     filter, see gridLogLik; it converges quickly in G (on the S&P 500
//     series G = 300 and 400 agree to 0.03 nats at the mode, G = 200 is
//     0.14 nats off).
//   - -model lgssm: the exact Kalman log-likelihood (models.LGSSM.Kalman);
//     -simulate T -write FILE first simulates T observations at φ = 0.9,
//     σ = 0.7, τ = 1 (with -seed) and fits them.
//   - -model garch: the likelihood by a grid filter on σ_t² (see
//     garchGridLogLik) at G and 2G cells (default G = 100), combined by
//     Richardson extrapolation (the error is second order in the cell
//     width); -gcheck G1,G2,... prints the log-likelihood at the mode for
//     those G, and -qcheck N (with -quad K and -proposal FILE) the grid's
//     minus the K-point quadrature filter's at N of the file's draws: the
//     sd of that difference over the posterior bounds how far the
//     quadrature likelihood's posterior means are from the grid's. (A pseudo-marginal particle filter likelihood, garchLogLik,
//     was tried first: its log-likelihood sd on the DAX returns is about 4
//     nats at N = 500..2000; it is kept as an independent check.)
//
// The posterior in the unconstrained u is located by Newton's method with
// finite-difference derivatives and sampled by self-normalised importance sampling from a multivariate t_5
// centred at the mode with 1.5 times the Laplace covariance, the draws
// spread over GOMAXPROCS goroutines. Where the posterior is skewed (GARCH's
// μ near its bound on long series) -adapt K first runs K rounds of
// -nadapt draws, each moving the t_5 to the previous round's weighted mean
// and 1.3² times its weighted covariance (adaptive importance sampling);
// only the final round's draws enter the estimates. -mcmc N instead
// reports 4 random-walk Metropolis chains of N iterations on the same
// likelihood (started at importance draws, proposal covariance from them),
// for posteriors whose tails defeat importance sampling (the LGSSM on the
// S&P 500 returns: a curved ridge along φσ²). It prints the mode, the Laplace sds, the
// importance ESS and the posterior mean, sd and 5/50/95% quantiles (weighted)
// of each natural parameter, or with -json one JSON object. README.md lists
// the references and the commands that made them.
//
//	go run ./examples/fit/gridref            # SVM on the DAX returns, about a minute
//	go run ./examples/fit/gridref -model svm -data testdata/sp500_returns.csv -json
//	go run ./examples/fit/gridref -model lgssm -simulate 2000 -write sim.csv
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gridref:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	start := time.Now()
	fs := flag.NewFlagSet("gridref", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "svm", "model: svm (grid filter), lgssm (Kalman filter) or garch (grid filter on sigma², Richardson-extrapolated)")
	data := fs.String("data", "", "CSV file with one column of observations (default testdata/dax_returns.csv, for lgssm testdata/lgssm_sim.csv)")
	g := fs.Int("G", 0, "svm: grid points for the log-volatility (default 300); garch: cells for sigma², the likelihood extrapolates from G and 2G (default 100)")
	n := fs.Int("n", 3000, "importance samples")
	seed := fs.Uint64("seed", 1, "random seed (importance draws, particle filters, -simulate)")
	scores := fs.Int("scores", 0, "svm: if positive, also compare particle filter scores at the mode with the grid's: this many full-sequence replications (ten times as many buffered ones)")
	np := fs.Int("N", 0, "particles for -scores (default 1000)")
	quadLik := fs.Int("quad", 0, "garch: instead of the grid, the likelihood of models.GARCH's quadrature filter with this many points (e.g. 14, within 0.004 nats of a 512-node σ² filter on the S&P 500 returns); a pass costs a fraction of the grid's on long series")
	qcheck := fs.Int("qcheck", 0, "garch with -quad K and -proposal FILE: at this many draws of FILE (evenly spaced rows), print the grid log-likelihood (Richardson from -G and 2G cells) minus the K-point quadrature filter's, and their mean and sd over the draws, then stop (no importance sample)")
	gcheck := fs.String("gcheck", "", "garch: comma-separated grid sizes at which to print the log-likelihood at the mode")
	startAt := fs.String("start", "", "comma-separated natural parameters at which Newton starts (default: the model's start from the data)")
	newtonIters := fs.Int("newton", 0, "at most this many Newton iterations (default 40; garch 12)")
	adapt := fs.Int("adapt", 0, "adaptation rounds before the final importance sample: each draws -nadapt points and moves the proposal to their weighted mean and covariance")
	nadapt := fs.Int("nadapt", 0, "draws per adaptation round (default n/4)")
	proposal := fs.String("proposal", "", "CSV of posterior draws (natural parameters, columns named as the model's, e.g. a fit's trace.csv): the final importance sample's t_5 sits at their mean and 1.3² times their covariance in u (after any -adapt rounds, which it replaces)")
	mcmc := fs.Int("mcmc", 0, "if positive, the posterior from 4 random-walk Metropolis chains of this many iterations (the second halves kept), started at importance draws, proposal covariance 2.38²/d times the importance sample's")
	jsonOut := fs.Bool("json", false, "print one JSON object to stdout instead of the text report")
	simT := fs.Int("simulate", 0, "lgssm: if positive, simulate this many observations at phi = 0.9, sigma = 0.7, tau = 1 (with -seed), write them to -write and fit them")
	write := fs.String("write", "", "file for -simulate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *g == 0 {
		*g = 300
		if *model == "garch" {
			*g = 100
		}
	}
	if *g < 20 || *n < 10 {
		return fmt.Errorf("-G = %d and -n = %d are too small", *g, *n)
	}
	if *newtonIters < 0 || *adapt < 0 || *nadapt < 0 || (*nadapt > 0 && *nadapt < 10) {
		return fmt.Errorf("-newton = %d, -adapt = %d must not be negative and -nadapt = %d at least 10", *newtonIters, *adapt, *nadapt)
	}
	if *nadapt == 0 {
		*nadapt = max(*n/4, 10)
	}
	if *proposal != "" && *adapt > 0 {
		return errors.New("-proposal replaces the -adapt rounds: give one of them")
	}
	if *mcmc < 0 || (*mcmc > 0 && *mcmc < 100) {
		return fmt.Errorf("-mcmc = %d: want 0 or at least 100 iterations", *mcmc)
	}
	if *scores < 0 || *scores == 1 || *np < 0 {
		return fmt.Errorf("-scores = %d must be 0 or at least 2 and -N = %d positive", *scores, *np)
	}
	if *scores > 0 && *model != "svm" {
		return errors.New("-scores is for -model svm")
	}
	if *simT < 0 || (*simT > 0) != (*write != "") || (*simT > 0 && *model != "lgssm") {
		return errors.New("-simulate T (T > 0) needs -write FILE and -model lgssm, and -write needs -simulate")
	}
	if *quadLik != 0 && (*model != "garch" || *quadLik < 3 || *quadLik > 32) {
		return fmt.Errorf("-quad = %d: want 3 to 32 points, with -model garch", *quadLik)
	}
	if *qcheck < 0 || *qcheck > 0 && (*quadLik == 0 || *proposal == "") {
		return fmt.Errorf("-qcheck = %d: want a positive number of draws, with -model garch, -quad and -proposal", *qcheck)
	}
	if *gcheck != "" && *model != "garch" {
		return errors.New("-gcheck is for -model garch")
	}
	if *data == "" {
		*data = filepath.Join("testdata", "dax_returns.csv")
		if *model == "lgssm" {
			*data = filepath.Join("testdata", "lgssm_sim.csv")
		}
	}
	var seq ssm.Sequence
	var err error
	if *simT > 0 {
		*data = *write
		seq, err = simulateLGSSM(*write, *simT, *seed)
	} else {
		seq, err = ssm.ReadCSVFile(*data)
	}
	if err != nil {
		return err
	}
	if seq.Obs != 1 {
		return fmt.Errorf("%s: want one column, got %d", *data, seq.Obs)
	}

	var (
		m      paramModel
		ll     logLikFunc
		u0     []float64
		method string
		h      = 0.02 // finite-difference step in u for the mode
		modeLL logLikFunc
		iters  = 40
	)
	switch *model {
	case "svm":
		sm := models.SVM{}
		m, method = sm, fmt.Sprintf("grid filter, G = %d", *g)
		ll = func(u []float64, _ uint64) float64 {
			var th [3]float64
			sm.Constrain(th[:], u)
			if !(math.Abs(th[0]) < 1) {
				return math.Inf(-1)
			}
			return gridLogLik(seq.Y, th[0], th[1], th[2], *g)
		}
		u0, err = sm.Params(0.9, 0.3, 1)
	case "lgssm":
		lm := models.LGSSM{}
		m, method = lm, "Kalman filter"
		ll = func(u []float64, _ uint64) float64 { return kalmanLogLik(seq, u) }
		u0 = make([]float64, 3)
		err = lm.Start(u0, ssm.Dataset{Sequences: []ssm.Sequence{seq}})
	case "garch":
		gm := models.GARCH{}
		m, method = gm, fmt.Sprintf("grid filter on sigma², G = %d and %d, Richardson-extrapolated", *g, 2**g)
		ll = func(u []float64, _ uint64) float64 { return garchRichardson(seq.Y, u, *g) }
		// The mode and the Laplace covariance only shape the importance
		// proposal: a quarter of the cost, G/2 and G. (On the DAX data
		// the iterations stall at the mode after about 8 Newton steps on
		// finite-difference noise.)
		modeLL = func(u []float64, _ uint64) float64 { return garchRichardson(seq.Y, u, *g/2) }
		method += fmt.Sprintf(" (mode and Laplace covariance from G = %d and %d)", *g/2, *g)
		iters = 12
		if *quadLik > 0 {
			// RefinedLogLik: values only, so every rule size to 32
			// (Points, which also scores, stops at 24).
			qm := models.GARCH{Refine: *quadLik}
			method = fmt.Sprintf("quadrature filter on log sigma² (%d points: models.GARCH{Refine: %d}.RefinedLogLik)", *quadLik, *quadLik)
			ll = func(u []float64, _ uint64) float64 {
				l, err := qm.RefinedLogLik(u, seq, ssm.Full(seq.Len()))
				if err != nil {
					return math.Inf(-1)
				}
				return l
			}
			modeLL = ll
		}
		u0 = make([]float64, 4)
		err = gm.Start(u0, ssm.Dataset{Sequences: []ssm.Sequence{seq}})
	default:
		return fmt.Errorf("-model %q: want svm, lgssm or garch", *model)
	}
	if err != nil {
		return err
	}
	if *qcheck > 0 {
		us, err := readDraws(m, *proposal)
		if err != nil {
			return err
		}
		return garchQCheck(stdout, seq.Y, us, *qcheck, *g, *quadLik)
	}
	names := m.ParamNames()
	d := len(names)
	if *startAt != "" {
		parts := strings.Split(*startAt, ",")
		th := make([]float64, len(parts))
		for i, v := range parts {
			if th[i], err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return fmt.Errorf("-start %q: %v", *startAt, err)
			}
		}
		if len(th) != d {
			return fmt.Errorf("-start %q: %d values, want %d (%s)", *startAt, len(th), d, strings.Join(names, ", "))
		}
		if err := m.Unconstrain(u0, th); err != nil {
			return fmt.Errorf("-start %q: %v", *startAt, err)
		}
	}
	logpost := func(u []float64, k uint64) float64 {
		lp := m.LogPrior(nil, u)
		if math.IsInf(lp, -1) || math.IsNaN(lp) {
			return math.Inf(-1)
		}
		return ll(u, k) + lp
	}
	if modeLL == nil {
		modeLL = ll
	}
	if *newtonIters > 0 {
		iters = *newtonIters
	}
	// With adaptation the Laplace covariance only seeds the first round:
	// an indefinite Hessian (finite-difference noise along a flat
	// direction) is floored at 1 (sd ≤ 1 in u) instead of failing.
	floor := 0.0
	if *adapt > 0 {
		floor = 1
	}
	mode, cov, err := newtonMode(func(u []float64) float64 { return modeLL(u, 0) + m.LogPrior(nil, u) }, u0, h, iters, floor)
	if err != nil {
		return err
	}
	th := make([]float64, d)
	m.Constrain(th, mode)
	lsd := make([]float64, d)
	for i := range lsd {
		lsd[i] = math.Sqrt(cov.At(i, i))
	}
	if !*jsonOut {
		fmt.Fprintf(stdout, "%s on %s (T = %d), %s\n", strings.ToUpper(*model), *data, seq.Len(), method)
		fmt.Fprint(stdout, "mode:")
		for i, name := range names {
			fmt.Fprintf(stdout, " %s %.4f", name, th[i])
		}
		fmt.Fprintf(stdout, " (log posterior %.2f)\n", logpost(mode, 0))
		fmt.Fprintf(stdout, "Laplace sd in u: %.4f\n", lsd)
	}
	if *gcheck != "" {
		w := stdout
		if *jsonOut {
			w = stderr
		}
		if err := garchGCheck(w, seq.Y, mode, *gcheck); err != nil {
			return err
		}
	}
	if *scores > 0 {
		nn := *np
		if nn == 0 {
			nn = 1000
		}
		if err := scoreCheck(stdout, seq, mode, *g, *scores, nn, *seed); err != nil {
			return err
		}
	}
	// Importance sampling from t_5(mode, 1.5² Σ), or after -adapt rounds
	// from t_5 at the last round's weighted mean and 1.3² times its
	// weighted covariance, or from t_5 at the mean and 1.3² times the
	// covariance of -proposal's draws.
	centre, scale, roundESS := mode, 1.5, []float64{}
	for r := range *adapt {
		is, err := importanceSample(m, logpost, centre, cov, scale, 5, *nadapt, *seed+uint64(r+1)<<40)
		if err != nil {
			return fmt.Errorf("adaptation round %d: %v", r+1, err)
		}
		roundESS = append(roundESS, is.ESS)
		w := stdout
		if *jsonOut {
			w = stderr // progress; the JSON carries adapt_ess
		}
		fmt.Fprintf(w, "adaptation round %d: %d draws, ESS %.1f\n", r+1, *nadapt, is.ESS)
		if centre, cov, err = weightedMoments(is); err != nil {
			return fmt.Errorf("adaptation round %d: %v", r+1, err)
		}
		scale = 1.3
	}
	if *proposal != "" {
		if centre, cov, err = drawsProposal(m, *proposal); err != nil {
			return err
		}
		scale = 1.3
	}
	is, err := importanceSample(m, logpost, centre, cov, scale, 5, *n, *seed)
	if err != nil {
		return err
	}
	params := make([]paramSummary, d)
	for j, name := range names {
		params[j] = summarise(name, is.Theta, j, is.W)
	}
	var rw *rwmResult
	if *mcmc > 0 {
		if rw, err = mcmcPosterior(m, logpost, is, *mcmc, *seed); err != nil {
			return err
		}
		isParams := params
		params = rw.summary(m, names)
		if !*jsonOut {
			fmt.Fprintf(stdout, "importance sampling (%d draws, ESS %.0f), for comparison:\n", *n, is.ESS)
			for _, p := range isParams {
				fmt.Fprintf(stdout, "%-6s mean %.4f sd %.4f q05 %.4f q95 %.4f\n", p.Name, p.Mean, p.SD, p.Q05, p.Q95)
			}
			fmt.Fprintf(stdout, "random-walk Metropolis: 4 chains × %d iterations, acceptance %.2f, R-hat in u %.4f, ESS in u %.0f\n",
				*mcmc, rw.Accept, rw.Rhat, rw.ESS)
		}
	}
	elapsed := time.Since(start)
	if *jsonOut {
		out := struct {
			Model     string         `json:"model"`
			Data      string         `json:"data"`
			T         int            `json:"T"`
			Method    string         `json:"method"`
			Params    []paramSummary `json:"params"`
			Mode      []float64      `json:"mode"`
			LaplaceSD []float64      `json:"laplace_sd"`
			ESS       float64        `json:"ess"`
			Draws     int            `json:"draws"`
			AdaptESS  []float64      `json:"adapt_ess,omitempty"`
			MCMC      *mcmcJSON      `json:"mcmc,omitempty"`
			Seconds   float64        `json:"seconds"`
			Command   string         `json:"command"`
		}{*model, filepath.ToSlash(*data), seq.Len(), method, params, th, lsd, is.ESS, *n, roundESS, rw.json(*mcmc), elapsed.Seconds(),
			"go run ./examples/fit/gridref " + strings.Join(args, " ")}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if rw != nil {
		fmt.Fprintln(stdout, "posterior (random-walk Metropolis):")
		for _, p := range params {
			fmt.Fprintf(stdout, "%-6s mean %.4f sd %.4f q05 %.4f q50 %.4f q95 %.4f\n", p.Name, p.Mean, p.SD, p.Q05, p.Q50, p.Q95)
		}
		fmt.Fprintf(stdout, "time %.1f s\n", elapsed.Seconds())
		return nil
	}
	fmt.Fprintf(stdout, "importance sampling: %d draws, ESS %.0f\n", *n, is.ESS)
	for j, p := range params {
		var mu, mu2 float64
		for k, w := range is.W {
			mu += w * is.U[k][j]
			mu2 += w * is.U[k][j] * is.U[k][j]
		}
		fmt.Fprintf(stdout, "%-6s mean %.4f sd %.4f q05 %.4f q50 %.4f q95 %.4f   (u: mean %.4f sd %.4f)\n", p.Name, p.Mean, p.SD, p.Q05, p.Q50, p.Q95, mu, math.Sqrt(mu2-mu*mu))
	}
	fmt.Fprintf(stdout, "time %.1f s\n", elapsed.Seconds())
	return nil
}

// parallelFor calls f(0..n-1) on GOMAXPROCS goroutines.
func parallelFor(n int, f func(int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				f(k)
			}
		})
	}
	wg.Wait()
}
