// Command gradbias reproduces the stochastic gradient bias study of the paper
// (section 5.2, Figures 2, 3 and 4): the bias
//
//	E[g^PF(S, B, N)] − g,   g = ∇ log p(y_{1:T} | θ),
//
// of the buffered particle stochastic gradient, the expectation taken over
// the random subsequence and the particle filter, for the LGSSM (∂/∂φ), the
// SVM (∂/∂φ) and the GARCH model (∂/∂β), on T = 256 simulated observations
// at the data-generating parameters. The ground truth g is exact (Kalman)
// for the LGSSM and a large-N full-sequence particle filter average for the
// SVM and GARCH; the LGSSM also gets the N = ∞ (Kalman) curves.
//
// Run from the repository root:
//
//	go run ./examples/gradbias            # default: a few minutes on 2 cores
//	go run ./examples/gradbias -h         # flags
//
// It writes curves.csv, truth.csv, data_MODEL.csv and the figures
// fig2_vary_B.png, fig3_vary_S.png, fig4_vary_N.png and (for the LGSSM)
// lgssm_per_subsequence.png, the exact per-subsequence RMS bias, into -out; it prints
// the main numbers to stdout and its progress to stderr.
//
// Two further studies (issue 12, point 4) take the LGSSM and the SVM:
//
//	go run ./examples/gradbias -study smoothers   # ancestral vs PaRIS vs forward-only O(N²) per unit time
//	go run ./examples/gradbias -study protocol    # No Buffer from the stationary law vs the authors' N(0, 10)
package main

import (
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gradbias:", err)
		os.Exit(1)
	}
}

// options are the command-line settings.
type options struct {
	Models    []string
	T         int
	Reps      int
	Ns        []int // Figures 2 and 3
	N4        []int // Figure 4
	Bs        []int // Figure 2
	Ss        []int // Figure 3
	S         int   // subsequence length of Figures 2 and 4
	TruthN    int
	TruthRuns int
	Stride    int
	Figs      []int
	Seed      uint64
	Workers   int
	Out       string

	// Study is the mode: "figures" (Figures 2-4), "smoothers" (the
	// smoother comparison) or "protocol" (the No Buffer window start).
	Study string
	// The smoother comparison (-study smoothers).
	Smoothers []pf.Smoother
	NSm       []int // particle counts
	FOMax     int   // largest N of the O(N²) forward-only smoother
	SmWindows int   // windows evaluated (evenly spaced from a random offset); 0: all
	SmReps    int   // replications per window
	SmB       int   // buffer; -1: the model's moderate buffer (8 LGSSM, 16 SVM)
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("gradbias", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o                               options
		modelsF, nF, n4F, bF, sF, figsF string
	)
	fs.StringVar(&modelsF, "models", "lgssm,svm,garch", "comma-separated models: lgssm, svm, garch")
	fs.IntVar(&o.T, "T", 256, "length of the simulated sequence (the paper: 256)")
	fs.IntVar(&o.Reps, "reps", 5, "replications per estimator, >= 2; each averages over every subsequence start (see -stride), which removes the window-to-window spread that dominates a single draw (the paper used 1000 single draws); error bars are 95% Student t intervals over them")
	fs.StringVar(&nF, "N", "100,1000", "particle counts of Figures 2 and 3 (the paper: 100,1000,10000)")
	fs.StringVar(&n4F, "N4", "100,300,1000", "particle counts of Figure 4 (the x axis)")
	fs.StringVar(&bF, "B", "0,1,2,3,4,6,8,12,16", "buffer sizes of Figure 2")
	fs.StringVar(&sF, "S", "1,2,4,8,16,32,64", "subsequence lengths of Figure 3")
	fs.IntVar(&o.S, "S0", 16, "subsequence length of Figures 2 and 4")
	fs.IntVar(&o.TruthN, "truthN", 200000, "particles of each full-sequence run giving the SVM and GARCH ground truth (the paper: 10^7)")
	fs.IntVar(&o.TruthRuns, "truthruns", 4, "full-sequence runs averaged for the SVM and GARCH ground truth, >= 2")
	fs.IntVar(&o.Stride, "stride", 1, "a replication evaluates every stride-th subsequence start from a random offset (1: all starts, the exact expectation over the subsequence draw; larger is cheaper and noisier)")
	fs.StringVar(&figsF, "figs", "2,3,4", "figures to compute: any of 2, 3, 4")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed: the data of model M use stream fnv(\"data/M\"), every replication its own stream")
	fs.IntVar(&o.Workers, "workers", runtime.GOMAXPROCS(0), "goroutines (results do not depend on it)")
	fs.StringVar(&o.Out, "out", filepath.Join("out", "gradbias"), "output directory (created)")
	var smF, nsmF string
	fs.StringVar(&o.Study, "study", "figures", "figures: Figures 2-4; smoothers: ancestral vs PaRIS vs forward-only O(N^2) (bias, variance, MSE, seconds per gradient at S0 and -Bsm); protocol: No Buffer bias with windows started from the stationary law vs the authors' fixed N(0, 10) (-models lgssm,svm only for the last two)")
	fs.StringVar(&smF, "smoothers", "ancestral,paris,forward-only", "-study smoothers: smoothers to compare (ancestral, paris, forward-only, shrinkage)")
	fs.StringVar(&nsmF, "Nsm", "30,100,300,1000,3000", "-study smoothers: particle counts")
	fs.IntVar(&o.FOMax, "fomax", 300, "-study smoothers: largest N run with the O(N^2) forward-only smoother")
	fs.IntVar(&o.SmWindows, "smwin", 0, "-study smoothers: windows per setting, evenly spaced over the start positions from a random offset (0: every start position; the end windows weigh up to T-S+1 times their terms and dominate the variance, so a subset is a lottery)")
	fs.IntVar(&o.SmReps, "smreps", 2, "-study smoothers: independent filter runs per window, >= 2")
	fs.IntVar(&o.SmB, "Bsm", -1, "-study smoothers: buffer B (-1: 8 for the LGSSM, 16 for the SVM, the paper's moderate buffers)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: go run ./examples/gradbias [flags]

Bias of the buffered particle stochastic gradient g^PF(S, B, N) against the
full-data gradient (paper section 5.2, Figures 2-4) for the LGSSM (d/dphi), SVM
(d/dphi) and GARCH (d/dbeta with alpha, gamma, tau fixed), T = 256 simulated
observations, evaluated at the data-generating parameters. Figure 2 varies B
(S = S0), Figure 3 varies S (B = 0 and B = 8 for LGSSM/GARCH, 16 for SVM),
Figure 4 varies N for No Buffer g(S0,0,N), Buffer g(S0,B,N), Buffer B = T
g(S0,T,N) and Full g(T,T,N), against N and against seconds per gradient.
Gradients are on the full-data scale (weights 1/Pr(t in S)).

Writes curves.csv, truth.csv, data_<model>.csv and fig2_vary_B.png,
fig3_vary_S.png, fig4_vary_N.png (and lgssm_per_subsequence.png: the exact
N = inf per-subsequence RMS bias) into -out; progress goes to stderr.

-study smoothers (LGSSM, SVM) compares the ancestral (Algorithm 1), PaRIS
and forward-only O(N^2) smoothers on g(S0, B, N) with B = -Bsm: particle
bias, variance and MSE against the exact g(S, B) of each window (Kalman;
grid filter for the SVM), the MSE of one stochastic gradient against g,
and CPU seconds per gradient; writes smoothers.csv and
smoothers_mse_time.png.

-study protocol (LGSSM, SVM) measures the bias of g(S0, B, N) for B = 0
and the moderate buffer with every window started from the stationary law
at theta (this library) or from the fixed N(0, 10) of the authors' code,
for the -N counts and N = inf; writes protocol.csv.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch o.Study {
	case "figures":
	case "smoothers", "protocol":
		if !set["models"] {
			modelsF = "lgssm,svm"
		}
	default:
		return o, fmt.Errorf("-study: unknown study %q (want figures, smoothers or protocol)", o.Study)
	}
	o.Models = splitList(modelsF)
	if len(o.Models) == 0 {
		return o, errors.New("-models: no model given")
	}
	for _, m := range o.Models {
		if m != "lgssm" && m != "svm" && m != "garch" {
			return o, fmt.Errorf("-models: unknown model %q (want lgssm, svm or garch)", m)
		}
		if m == "garch" && o.Study != "figures" {
			return o, fmt.Errorf("-study %s: GARCH has no transition density (backward smoothers, grid filter) and a two-component state: use lgssm and svm", o.Study)
		}
	}
	for _, name := range splitList(smF) {
		sm, ok := smootherByName[name]
		if !ok {
			return o, fmt.Errorf("-smoothers: unknown smoother %q (want ancestral, paris, forward-only or shrinkage)", name)
		}
		if !slices.Contains(o.Smoothers, sm) {
			o.Smoothers = append(o.Smoothers, sm)
		}
	}
	if len(o.Smoothers) == 0 {
		return o, errors.New("-smoothers: empty list")
	}
	if o.NSm, err = intList("-Nsm", nsmF, 1); err != nil {
		return o, err
	}
	switch {
	case o.SmWindows == 1 || o.SmWindows < 0:
		return o, fmt.Errorf("-smwin = %d: need at least 2 windows (0: all)", o.SmWindows)
	case o.SmReps < 2:
		return o, fmt.Errorf("-smreps = %d: need at least 2 runs per window for a variance", o.SmReps)
	case o.SmB < -1:
		return o, fmt.Errorf("-Bsm = %d: want a buffer >= 0, or -1 for the model's", o.SmB)
	case o.FOMax < 1:
		return o, fmt.Errorf("-fomax = %d: must be at least 1", o.FOMax)
	}
	if o.Ns, err = intList("-N", nF, 1); err != nil {
		return o, err
	}
	if o.N4, err = intList("-N4", n4F, 1); err != nil {
		return o, err
	}
	if o.Bs, err = intList("-B", bF, 0); err != nil {
		return o, err
	}
	if o.Ss, err = intList("-S", sF, 1); err != nil {
		return o, err
	}
	if o.Figs, err = intList("-figs", figsF, 2); err != nil {
		return o, err
	}
	for _, f := range o.Figs {
		if f > 4 {
			return o, fmt.Errorf("-figs: unknown figure %d (want 2, 3 or 4)", f)
		}
	}
	switch {
	case o.T < 2:
		return o, fmt.Errorf("-T = %d: need at least 2 observations", o.T)
	case o.Reps < 2:
		return o, fmt.Errorf("-reps = %d: need at least 2 replications for an error bar", o.Reps)
	case o.TruthRuns < 2:
		return o, fmt.Errorf("-truthruns = %d: need at least 2 runs for an error bar", o.TruthRuns)
	case o.TruthN < 1:
		return o, fmt.Errorf("-truthN = %d: need at least 1 particle", o.TruthN)
	case o.S < 1 || o.S > o.T:
		return o, fmt.Errorf("-S0 = %d: subsequence length must be in [1, T = %d]", o.S, o.T)
	case o.Stride < 1:
		return o, fmt.Errorf("-stride = %d: must be at least 1", o.Stride)
	case o.Out == "":
		return o, errors.New("-out: empty directory name")
	}
	for _, s := range o.Ss {
		if s > o.T && slices.Contains(o.Figs, 3) && o.Study == "figures" {
			return o, fmt.Errorf("-S: subsequence length %d exceeds T = %d", s, o.T)
		}
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func intList(name, s string, least int) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an integer", name, f)
		}
		if v < least {
			return nil, fmt.Errorf("%s: %d is below %d", name, v, least)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", name)
	}
	slices.Sort(out)
	return out, nil
}

// curve is one line of a figure: points that share a model and an
// estimator family, each point an estimator config.
type curve struct {
	Figure int
	Model  string
	Method string // "" (Figure 2), "no buffer", "buffer", "buffer B=T", "full"
	N      int    // 0 means ∞ (Kalman)
	Pts    []curvePoint
}

type curvePoint struct {
	X   float64
	Cfg int // index into the config list
}

// label is the legend text of a curve.
func (c curve) label() string {
	n := "N=" + strconv.Itoa(c.N)
	if c.N == 0 {
		n = "N=inf"
	}
	switch {
	case c.Method == "":
		return n
	case c.Figure == 4:
		return methodLabel(c.Method)
	}
	return methodLabel(c.Method) + " " + n
}

func methodLabel(m string) string {
	switch m {
	case "no buffer":
		return "No Buffer"
	case "buffer":
		return "Buffer"
	case "buffer B=T":
		return "Buffer B=T"
	case "full":
		return "Full"
	}
	return m
}

// plan lists the curves of the requested figures and the distinct configs
// they need.
func plan(o options, specs map[string]modelSpec) ([]curve, []config) {
	var (
		curves []curve
		cfgs   []config
		index  = map[config]int{}
	)
	add := func(c config) int {
		if i, ok := index[c]; ok {
			return i
		}
		index[c] = len(cfgs)
		cfgs = append(cfgs, c)
		return len(cfgs) - 1
	}
	for _, name := range o.Models {
		sp := specs[name]
		ns := o.Ns
		if sp.Exact {
			ns = append(slices.Clone(ns), 0)
		}
		for _, fig := range o.Figs {
			switch fig {
			case 2:
				for _, N := range ns {
					cv := curve{Figure: 2, Model: name, N: N}
					for _, B := range o.Bs {
						cv.Pts = append(cv.Pts, curvePoint{X: float64(B), Cfg: add(config{Model: name, S: o.S, B: B, N: N})})
					}
					curves = append(curves, cv)
				}
			case 3:
				for _, N := range ns {
					for _, B := range []int{0, sp.Buffer} {
						cv := curve{Figure: 3, Model: name, N: N, Method: "buffer"}
						if B == 0 {
							cv.Method = "no buffer"
						}
						for _, S := range o.Ss {
							cv.Pts = append(cv.Pts, curvePoint{X: float64(S), Cfg: add(config{Model: name, S: S, B: B, N: N})})
						}
						curves = append(curves, cv)
					}
				}
			case 4:
				for _, m := range []string{"no buffer", "buffer", "buffer B=T", "full"} {
					cv := curve{Figure: 4, Model: name, Method: m}
					for _, N := range o.N4 {
						c := config{Model: name, S: o.S, N: N}
						switch m {
						case "buffer":
							c.B = sp.Buffer
						case "buffer B=T":
							c.B = o.T
						case "full":
							c = config{Model: name, S: o.T, N: N, Full: true}
						}
						cv.Pts = append(cv.Pts, curvePoint{X: float64(N), Cfg: add(c)})
					}
					curves = append(curves, cv)
				}
			}
		}
	}
	return curves, cfgs
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	st, err := newStudy(o)
	if err != nil {
		return err
	}
	for _, name := range o.Models {
		if err := writeData(filepath.Join(o.Out, "data_"+name+".csv"), st.Data[name].Sequences[0]); err != nil {
			return err
		}
	}
	switch o.Study {
	case "smoothers":
		return runSmoothers(o, st, stdout, stderr, start)
	case "protocol":
		return runProtocol(o, st, stdout, stderr, start)
	}
	curves, cfgs := plan(o, st.Specs)
	fmt.Fprintf(stderr, "gradbias: %d models, %d estimator settings x %d replications, T = %d, %d workers\n",
		len(o.Models), len(cfgs), o.Reps, o.T, o.Workers)
	results, truths, err := st.compute(context.Background(), cfgs, o.Reps, stderr)
	if err != nil {
		return err
	}
	if err := writeCurves(filepath.Join(o.Out, "curves.csv"), o, st, curves, cfgs, results, truths); err != nil {
		return err
	}
	if err := writeTruth(filepath.Join(o.Out, "truth.csv"), o.Models, st, truths); err != nil {
		return err
	}
	if err := drawFigures(o, st, curves, cfgs, results, truths); err != nil {
		return err
	}
	printSummary(stdout, o, st, curves, cfgs, results, truths)
	fmt.Fprintf(stdout, "\nwrote %s (%.0f s)\n", o.Out, time.Since(start).Seconds())
	return nil
}

// newStudy simulates the data of every model of o (stream
// fnv("data/MODEL") of the seed) and returns the study over them.
func newStudy(o options) (*study, error) {
	st := &study{
		T: o.T, Seed: o.Seed, Workers: o.Workers, TruthN: o.TruthN, Runs: o.TruthRuns, Stride: o.Stride,
		Specs: map[string]modelSpec{}, Data: map[string]ssm.Dataset{},
	}
	for _, name := range o.Models {
		sp, err := newSpec(name)
		if err != nil {
			return nil, err
		}
		rng := rand.New(rand.NewPCG(o.Seed, streamID("data/"+name, 0)))
		_, y, err := sp.Model.(simulator).Simulate(o.T, sp.U, rng)
		if err != nil {
			return nil, fmt.Errorf("simulating %s: %w", name, err)
		}
		st.Specs[name] = sp
		st.Data[name] = ssm.Dataset{Sequences: []ssm.Sequence{y}}
	}
	return st, nil
}

func writeData(path string, y ssm.Sequence) error {
	var b strings.Builder
	b.WriteString("y\n")
	for t := range y.Len() {
		b.WriteString(strconv.FormatFloat(y.At(t)[0], 'g', -1, 64))
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// writeCSV writes a CSV file: the header, then the records fill writes.
func writeCSV(path string, header []string, fill func(w *csv.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(header)
	fill(w)
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// csvNum formats a number of a CSV output.
func csvNum(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// curvesHeader is the header of curves.csv.
var curvesHeader = []string{"figure", "model", "param", "curve", "method", "S", "B", "N", "x",
	"estimate", "truth", "truth_se", "bias", "halfwidth95", "reps", "windows_per_rep", "sec_per_grad", "cond_rms"}

func writeCurves(path string, o options, st *study, curves []curve, cfgs []config, res []result, truths map[string]truth) error {
	g := csvNum
	return writeCSV(path, curvesHeader, func(w *csv.Writer) {
		for _, cv := range curves {
			tr := truths[cv.Model]
			for _, p := range cv.Pts {
				c, r := cfgs[p.Cfg], res[p.Cfg]
				S, B := c.S, c.B
				if c.Full {
					S, B = o.T, 0
				}
				n, cond := strconv.Itoa(c.N), ""
				if c.N == 0 {
					n = "inf"
				}
				if !math.IsNaN(r.CondRMS) {
					cond = g(r.CondRMS)
				}
				w.Write([]string{strconv.Itoa(cv.Figure), cv.Model, st.Specs[cv.Model].Param, cv.label(), cv.Method,
					strconv.Itoa(S), strconv.Itoa(B), n, g(p.X),
					g(r.Mean), g(tr.Value), g(tr.SE), g(r.Mean - tr.Value), g(r.HalfWidth),
					strconv.Itoa(r.Reps), g(r.Windows), g(r.SecPerGrad), cond})
			}
		}
	})
}

func writeTruth(path string, names []string, st *study, truths map[string]truth) error {
	return writeCSV(path, []string{"model", "param", "value", "se", "method", "N", "runs"}, func(w *csv.Writer) {
		for _, name := range names {
			t := truths[name]
			w.Write([]string{name, st.Specs[name].Param, strconv.FormatFloat(t.Value, 'g', 10, 64),
				strconv.FormatFloat(t.SE, 'g', 6, 64), t.Method, strconv.Itoa(t.N), strconv.Itoa(t.Runs)})
		}
	})
}

// printSummary prints the ground truth and the Figure 2 and 4 numbers.
func printSummary(out io.Writer, o options, st *study, curves []curve, cfgs []config, res []result, truths map[string]truth) {
	fmt.Fprintf(out, "gradbias: T = %d, %d replications, seed %d; gradients on the full-data scale\n\n", o.T, o.Reps, o.Seed)
	fmt.Fprintln(out, "ground truth g (full-data gradient):")
	for _, name := range o.Models {
		t := truths[name]
		if t.Method == "kalman" {
			fmt.Fprintf(out, "  %-6s d/d%-5s = %10.4f  (Kalman, exact)\n", name, st.Specs[name].Param, t.Value)
		} else {
			fmt.Fprintf(out, "  %-6s d/d%-5s = %10.4f ± %.4f  (mean of %d full-sequence PF runs, N = %d; ± 1.96 SE)\n",
				name, st.Specs[name].Param, t.Value, 1.96*t.SE, t.Runs, t.N)
		}
	}
	pm := func(r result, tr truth) string {
		if r.Reps == 0 {
			return fmt.Sprintf("%9.3f (exact)", r.Mean-tr.Value)
		}
		return fmt.Sprintf("%9.3f ± %-6.3f", r.Mean-tr.Value, r.HalfWidth)
	}
	for _, fig := range []int{2, 4} {
		if !slices.Contains(o.Figs, fig) {
			continue
		}
		if fig == 2 {
			fmt.Fprintf(out, "\nFigure 2: bias E[g(%d, B, N)] − g ± 95%% half-width\n", o.S)
		} else {
			fmt.Fprintf(out, "\nFigure 4: bias ± 95%% half-width [seconds per gradient]\n")
		}
		for _, name := range o.Models {
			var cs []curve
			for _, cv := range curves {
				if cv.Figure == fig && cv.Model == name {
					cs = append(cs, cv)
				}
			}
			if len(cs) == 0 {
				continue
			}
			fmt.Fprintf(out, "  %s d/d%s\n    %-6s", name, st.Specs[name].Param, map[int]string{2: "B", 4: "N"}[fig])
			for _, cv := range cs {
				fmt.Fprintf(out, " %-26s", cv.label())
			}
			fmt.Fprintln(out)
			for i, p := range cs[0].Pts {
				fmt.Fprintf(out, "    %-6g", p.X)
				for _, cv := range cs {
					r := res[cv.Pts[i].Cfg]
					s := pm(r, truths[name])
					if fig == 4 {
						s += fmt.Sprintf(" [%.2g]", r.SecPerGrad)
					}
					fmt.Fprintf(out, " %-26s", s)
				}
				fmt.Fprintln(out)
			}
		}
	}
}
