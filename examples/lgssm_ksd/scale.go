package main

// The scale study (-study scale): wall time to a given accuracy of the
// buffered and the full-sequence particle gradients at T = 10^4 .. 10^6,
// against an exact (Kalman) posterior reference. See README.md, "At scale".

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

const scaleUsage = `Usage: go run ./examples/lgssm_ksd -study scale [flags]

Wall time to the same accuracy for SGLD with the buffered particle gradient
(Buffer: S, B, N particles), the full-sequence particle gradient (Full:
S = T, N particles) and, optionally, the same two with exact Kalman windows
(N = inf), on LGSSM data (phi 0.9, sigma 0.7, tau 1) at each -T. The
reference is the exact posterior from the Kalman likelihood (Laplace:
Newton on the exact score, covariance from finite differences of it). Every
chain starts at (phi, sigma, tau) = (0.5, 1, 0.5) and runs for the -budget
of its T; its error at time t is max over u = (atanh phi, log sigma, log tau)
of |running mean - exact mean| / exact sd, the running mean being the mean of
the second half of the draws so far. Each method runs at every step size
h = eps/T of -eps (after the largest, only if that made at least 20
iterations) and the one reaching the first -levels soonest is selected (the
smallest error at the budget when none does). Prints the reference, the
grid, the table (time to each level, error at the budget, cost per
iteration) and writes scale.png and scale_traces.csv to -out. Defaults take
about 8 minutes on 2 cores.

Flags:`

// scaleMethods are the values of -methods in -study scale.
var scaleMethods = map[string]struct {
	g     paper.Gradient
	exact bool
}{
	"buf": {paper.Buffer, false}, "full": {paper.Full, false},
	"bufkf": {paper.Buffer, true}, "fullkf": {paper.Full, true},
}

type scaleConfig struct {
	Ts      []int
	budgets []time.Duration
	methods []string
	eps     []float64
	levels  []float64
	N, S, B int
	seed    uint64
	out     string
}

// scaleArgs reports whether args ask for -study scale and returns the
// other arguments; any other -study value is an error.
func scaleArgs(args []string) ([]string, bool, error) {
	if len(args) == 0 {
		return args, false, nil
	}
	switch a := args[0]; {
	case a == "-study" || a == "--study":
		if len(args) < 2 || args[1] != "scale" {
			return nil, false, errors.New("-study: the only study is scale")
		}
		return args[2:], true, nil
	case strings.HasPrefix(a, "-study=") || strings.HasPrefix(a, "--study="):
		if a[strings.IndexByte(a, '=')+1:] != "scale" {
			return nil, false, errors.New("-study: the only study is scale")
		}
		return args[1:], true, nil
	}
	return args, false, nil
}

func parseScale(args []string, stderr io.Writer) (*scaleConfig, error) {
	c := &scaleConfig{}
	fs := compare.NewFlagSet("lgssm_ksd -study scale", scaleUsage, stderr)
	Ts := fs.String("T", "10000,100000,1000000", "comma-separated sequence lengths")
	budgets := fs.String("budget", "8s,15s,30s", "compute time per chain, one per -T (or one for all)")
	methods := fs.String("methods", "buf,full,bufkf", "methods: buf (Buffer N), full (Full N), bufkf, fullkf (N = inf)")
	eps := fs.String("eps", "1,0.1,0.01", "step sizes per observation, h = eps/T; the fastest to the first level is selected")
	levels := fs.String("levels", "0.5,0.1", "accuracy levels, in exact posterior sds")
	fs.IntVar(&c.N, "N", 1000, "particles of buf and full")
	fs.IntVar(&c.S, "S", 40, "subsequence length of buf and bufkf")
	fs.IntVar(&c.B, "B", 10, "buffer length of buf and bufkf")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the data and the chains")
	fs.StringVar(&c.out, "out", filepath.Join("out", "lgssm_ksd"), "output directory")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.Ts, err = compare.ParseInts(*Ts); err != nil {
		return nil, fmt.Errorf("-T: %w", err)
	}
	if c.methods, err = compare.ParseSet(*methods, "buf", "full", "bufkf", "fullkf"); err != nil {
		return nil, fmt.Errorf("-methods: %w", err)
	}
	if c.eps, err = compare.ParseFloats(*eps); err != nil {
		return nil, fmt.Errorf("-eps: %w", err)
	}
	slices.Sort(c.eps)
	slices.Reverse(c.eps) // largest first
	if c.levels, err = compare.ParseFloats(*levels); err != nil {
		return nil, fmt.Errorf("-levels: %w", err)
	}
	for _, b := range strings.Split(*budgets, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(b))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("-budget: %q is not a positive duration", b)
		}
		c.budgets = append(c.budgets, d)
	}
	switch {
	case len(c.budgets) == 1:
		c.budgets = slices.Repeat(c.budgets, len(c.Ts))
	case len(c.budgets) != len(c.Ts):
		return nil, fmt.Errorf("-budget: %d durations for %d lengths", len(c.budgets), len(c.Ts))
	}
	if c.N < 1 || c.S < 1 || c.B < 0 {
		return nil, fmt.Errorf("need N >= 1, S >= 1, B >= 0")
	}
	for _, T := range c.Ts {
		if c.S+2*c.B > T {
			return nil, fmt.Errorf("S + 2B = %d exceeds T = %d", c.S+2*c.B, T)
		}
	}
	return c, nil
}

// scaleRun is one chain of the study.
type scaleRun struct {
	T       int
	Method  string // a key of scaleMethods
	Label   string // e.g. "Buffer N=1000"
	Eps     float64
	Iters   int
	Seconds float64
	Fail    error // why the chain stopped early (non-finite value, filter collapse); nil otherwise
	Times   []float64
	Err     [][]float64 // Err[j][d]: |running mean - mean| / sd of coordinate d at Times[j]
}

// maxErr returns the error of record j: the largest over coordinates.
func (r *scaleRun) maxErr(j int) float64 { return slices.Max(r.Err[j]) }

func (r *scaleRun) maxErrs() []float64 {
	out := make([]float64, len(r.Err))
	for j := range out {
		out[j] = r.maxErr(j)
	}
	return out
}

func runScale(args []string, stdout, stderr io.Writer) error {
	c, err := parseScale(args, stderr)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	var m models.LGSSM
	u0, err := m.Params(truth[0], truth[1], truth[2])
	if err != nil {
		return err
	}
	us, err := m.Params(start[0], start[1], start[2])
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Scale study: SGLD on LGSSM (phi, sigma, tau) = (%g, %g, %g), start (%g, %g, %g), one chain per T and method\n",
		truth[0], truth[1], truth[2], start[0], start[1], start[2])
	fmt.Fprintf(stdout, "Error = max over u = (atanh phi, log sigma, log tau) of |mean of the last half of the draws - exact mean| / exact sd\n")
	var runs []*scaleRun
	for ti, T := range c.Ts {
		t0 := time.Now()
		_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(c.seed, uint64(ti))))
		if err != nil {
			return err
		}
		data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
		ref, err := exactReference(ctx, m, data)
		if err != nil {
			return fmt.Errorf("T = %d: %w", T, err)
		}
		shift := make([]float64, len(ref.Mean))
		for d := range shift {
			shift[d] = (ref.Mean[d] - ref.Mode[d]) / ref.SD[d]
		}
		fmt.Fprintf(stdout, "\nT = %d: exact posterior (%d Newton steps, %.1fs): u mean %s = mode + %s sd, sd %s; phi %.4f sigma %.4f tau %.4f\n",
			T, ref.Newton, time.Since(t0).Seconds(), fmtVec(ref.Mean, "%.5f"), fmtVec(shift, "%.3f"), fmtVec(ref.SD, "%.5f"),
			math.Tanh(ref.Mean[0]), math.Exp(ref.Mean[1]), math.Exp(ref.Mean[2]))
		for mi, name := range c.methods {
			grid, best, err := c.runMethod(ctx, m, data, ref, name, us, c.budgets[ti], mix3(c.seed, ti, mi))
			if err != nil {
				return fmt.Errorf("T = %d, %s: %w", T, name, err)
			}
			for i, r := range grid {
				mark := ""
				if i == best {
					mark = " (selected)"
				}
				if r.Fail != nil {
					fmt.Fprintf(stdout, "  %-13s eps=%-5g failed after %d iterations: %v\n", r.Label, r.Eps, r.Iters, r.Fail)
					continue
				}
				t, ok := timeTo(r.Times, r.maxErrs(), c.levels[0])
				reach := ">budget"
				if ok {
					reach = fmt.Sprintf("%.3gs", t)
				}
				fmt.Fprintf(stdout, "  %-13s eps=%-5g %9d iterations in %5.1fs: t(%g sd) %-8s error at budget %.3g sd%s\n",
					r.Label, r.Eps, r.Iters, r.Seconds, c.levels[0], reach, r.final(), mark)
			}
			runs = append(runs, grid[best])
		}
	}
	fmt.Fprintln(stdout)
	if err := writeScaleTable(stdout, runs, c.levels); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	fmt.Fprint(stdout, crossover(runs, c.Ts, c.levels))
	if err := compare.WriteFile(filepath.Join(c.out, "scale_traces.csv"), func(w io.Writer) error { return writeTraces(w, runs) }); err != nil {
		return err
	}
	if err := plotScale(filepath.Join(c.out, "scale.png"), runs, c.Ts, c.levels); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nOutputs in %s (scale.png, scale_traces.csv)\n", c.out)
	return nil
}

func mix3(seed uint64, i, j int) uint64 {
	z := seed + 0x9e3779b97f4a7c15*uint64(1+i*1009+j*17)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	return z ^ (z >> 31)
}

func fmtVec(v []float64, f string) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf(f, x)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// minGridIters: a chain with fewer iterations at the largest step size
// is still in its transient, which a smaller step only slows, so the rest
// of the grid is skipped.
const minGridIters = 20

// runMethod runs method name at every step size of the grid (largest
// first; see minGridIters) and returns the runs with the index of the
// selected one: among the chains that did not fail, the one reaching the
// first accuracy level soonest or, when none reaches it, the one with the
// smallest error at the budget.
func (c *scaleConfig) runMethod(ctx context.Context, m models.LGSSM, data ssm.Dataset, ref *reference, name string, u0 []float64, budget time.Duration, seed uint64) ([]*scaleRun, int, error) {
	sm := scaleMethods[name]
	e := paper.Estimators{Model: m, Data: data, PF: pf.Settings{N: c.N}, Exact: sm.exact, S: c.S, B: c.B}
	T := data.TotalLen()
	label := fmt.Sprintf("%s N=%d", sm.g, c.N)
	if sm.exact {
		label = sm.g.String() + " N=inf"
	}
	var runs []*scaleRun
	best := -1
	for _, eps := range c.eps {
		est, err := e.Method(sm.g, name).New(0)
		if err != nil {
			return nil, 0, err
		}
		rec := &cumTrace{}
		out, err := sgmcmc.Run(ctx, func(int) sgmcmc.Estimator { return est }, func(int) sgmcmc.Method { return &sgmcmc.SGLD{} },
			func(_ int, u []float64) error { copy(u, u0); return nil }, len(u0),
			sgmcmc.Settings{Runtime: budget, Schedule: sgmcmc.Constant(eps / float64(T)), Seed: seed, Recorder: rec})
		if out == nil || ctx.Err() != nil {
			return nil, 0, errors.Join(err, ctx.Err())
		}
		ch := out.Chains[0]
		r := &scaleRun{T: T, Method: name, Label: label, Eps: eps, Iters: ch.Iterations, Seconds: ch.Elapsed.Seconds(), Fail: ch.Err}
		if r.Fail == nil && len(rec.n) == 0 {
			r.Fail = errors.New("no draws")
		}
		if r.Fail == nil {
			r.Times, r.Err = rec.errors(ref)
			if best < 0 || r.better(runs[best], c.levels[0]) {
				best = len(runs)
			}
		}
		runs = append(runs, r)
		if ch.Iterations < minGridIters {
			break
		}
	}
	if best < 0 {
		return nil, 0, fmt.Errorf("every step size failed (first: %v)", runs[0].Fail)
	}
	return runs, best, nil
}

// better reports whether r reaches level sooner than o or, when neither
// does, ends with a smaller error.
func (r *scaleRun) better(o *scaleRun, level float64) bool {
	tr, okr := timeTo(r.Times, r.maxErrs(), level)
	to, oko := timeTo(o.Times, o.maxErrs(), level)
	switch {
	case okr && oko:
		return tr < to
	case okr != oko:
		return okr
	}
	return r.final() < o.final()
}

// final returns the error at the end of the run (NaN for a failed run).
func (r *scaleRun) final() float64 {
	if len(r.Err) == 0 {
		return math.NaN()
	}
	return r.maxErr(len(r.Err) - 1)
}

// cumTrace is an sgmcmc.Recorder keeping the cumulative sum of the draws
// at iteration counts growing geometrically (by 2%), and at the last draw:
// enough to evaluate the mean of the last half of the draws at any record.
type cumTrace struct {
	acc  []float64
	n    []int     // draws summed at each record
	secs []float64 // elapsed time at each record
	sum  []float64 // cumulative sums, row-major
	next int
	last struct {
		n    int
		secs float64
	}
}

func (c *cumTrace) Init(sgmcmc.Info) error { return nil }

func (c *cumTrace) Record(d *sgmcmc.Draw) error {
	if c.acc == nil {
		c.acc = make([]float64, len(d.U))
	}
	for i, v := range d.U {
		c.acc[i] += v
	}
	n := d.Iter + 1
	c.last.n, c.last.secs = n, d.Elapsed.Seconds()
	if n >= c.next {
		c.add()
		c.next = max(n+1, int(1.02*float64(n)))
	}
	return nil
}

func (c *cumTrace) add() {
	c.n = append(c.n, c.last.n)
	c.secs = append(c.secs, c.last.secs)
	c.sum = append(c.sum, c.acc...)
}

func (c *cumTrace) Done(*sgmcmc.Result) error {
	if k := len(c.n); c.last.n > 0 && (k == 0 || c.n[k-1] != c.last.n) {
		c.add()
	}
	return nil
}

// errors returns, at every record, the standardised error of the mean of
// the draws after the record nearest below half the draws so far.
func (c *cumTrace) errors(ref *reference) (times []float64, errs [][]float64) {
	dim := len(ref.Mean)
	mean := make([]float64, dim)
	for j, n := range c.n {
		h := 0 // the record (index+1) whose count is the largest <= n/2; 0 = none
		for h < j && c.n[h] <= n/2 {
			h++
		}
		var lo []float64
		nlo := 0
		if h > 0 {
			lo, nlo = c.sum[(h-1)*dim:h*dim], c.n[h-1]
		}
		hi := c.sum[j*dim : (j+1)*dim]
		for d := range mean {
			s := hi[d]
			if lo != nil {
				s -= lo[d]
			}
			mean[d] = s / float64(n-nlo)
		}
		times = append(times, c.secs[j])
		errs = append(errs, ref.standardise(mean))
	}
	return times, errs
}

// timeTo returns the first time from which errs stays at or below level
// until the end of the trace, and false if the last error is above it.
func timeTo(times, errs []float64, level float64) (float64, bool) {
	for j := len(errs) - 1; j >= 0; j-- {
		if errs[j] > level || math.IsNaN(errs[j]) {
			if j == len(errs)-1 {
				return math.NaN(), false
			}
			return times[j+1], true
		}
	}
	if len(times) == 0 {
		return math.NaN(), false
	}
	return times[0], true
}

// reference is the exact posterior of u: Mode, Mean (the mode with the
// first-order skewness correction), SD and Cov (Laplace).
type reference struct {
	Mode, Mean, SD []float64
	Cov            *mat.SymDense
	Newton         int
}

func (r *reference) standardise(u []float64) []float64 {
	out := make([]float64, len(u))
	for d := range u {
		out[d] = math.Abs(u[d]-r.Mean[d]) / r.SD[d]
	}
	return out
}

// exactReference is the exact posterior of u to second order: the mode by
// Newton's method on the exact (Kalman) score with a backtracking line
// search on the exact log-posterior, the covariance the inverse of minus
// the Hessian (central differences of the score; Laplace), and the mean the
// mode plus the first-order skewness correction ½ Σ ∇ tr(Σ ∇²log π). At
// T = 10^4 the correction is about 0.1 posterior sd in log σ, and the
// result agrees with an exact MALA chain (TestExactReferenceVsMALA).
func exactReference(ctx context.Context, m models.LGSSM, data ssm.Dataset) (*reference, error) {
	est, err := compare.FullGradient(m, data, pf.Settings{}, true)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(0, 0))
	dim := m.Dims().Param
	score := func(g, u []float64) (float64, error) {
		clear(g)
		lp, err := est.Grad(ctx, g, u, rng)
		if err == nil && (math.IsNaN(lp) || math.IsInf(lp, 0)) {
			err = fmt.Errorf("log posterior %v at u = %v", lp, u)
		}
		return lp, err
	}
	u := make([]float64, dim)
	if err := m.Start(u, data); err != nil {
		return nil, err
	}
	g, gp, gm, un := make([]float64, dim), make([]float64, dim), make([]float64, dim), make([]float64, dim)
	lp, err := score(g, u)
	if err != nil {
		return nil, err
	}
	const delta = 1e-5
	hess := func(u []float64) (*mat.SymDense, error) {
		// minus the Jacobian of the score by central differences, then
		// symmetrised.
		jac := make([]float64, dim*dim)
		up := slices.Clone(u)
		for j := range dim {
			up[j] = u[j] + delta
			if _, err := score(gp, up); err != nil {
				return nil, err
			}
			up[j] = u[j] - delta
			if _, err := score(gm, up); err != nil {
				return nil, err
			}
			up[j] = u[j]
			for i := range dim {
				jac[i*dim+j] = -(gp[i] - gm[i]) / (2 * delta)
			}
		}
		h := mat.NewSymDense(dim, nil)
		for i := range dim {
			for j := i; j < dim; j++ {
				h.SetSym(i, j, 0.5*(jac[i*dim+j]+jac[j*dim+i]))
			}
		}
		return h, nil
	}
	var chol mat.Cholesky
	for it := 1; it <= 100; it++ {
		h, err := hess(u)
		if err != nil {
			return nil, err
		}
		// Newton direction; off the concave region, add λI until positive
		// definite (Levenberg).
		hd := mat.NewSymDense(dim, nil)
		for lambda := 0.0; ; lambda = max(2*lambda, 1e-3*mat.Trace(h)/float64(dim)) {
			hd.CopySym(h)
			for i := range dim {
				hd.SetSym(i, i, h.At(i, i)+lambda)
			}
			if chol.Factorize(hd) {
				break
			}
			if lambda > 1e12*math.Abs(mat.Trace(h)) {
				return nil, errors.New("no positive definite Newton system")
			}
		}
		var d mat.VecDense
		if err := chol.SolveVecTo(&d, mat.NewVecDense(dim, slices.Clone(g))); err != nil {
			return nil, err
		}
		size := math.Sqrt(mat.Dot(&d, mat.NewVecDense(dim, slices.Clone(g)))) // in posterior sds
		step := 1.0
		for ; step > 1e-6; step /= 2 {
			for i := range u {
				un[i] = u[i] + step*d.AtVec(i)
			}
			if lpn, err := score(gp, un); err == nil && lpn >= lp-1e-9*math.Abs(lp) {
				lp = lpn
				copy(u, un)
				copy(g, gp)
				break
			}
		}
		if step <= 1e-6 || size < 1e-6 {
			if !chol.Factorize(h) {
				return nil, fmt.Errorf("minus the Hessian at the mode %v is not positive definite", u)
			}
			var cov mat.SymDense
			if err := chol.InverseTo(&cov); err != nil {
				return nil, err
			}
			ref := &reference{Mode: slices.Clone(u), SD: make([]float64, dim), Cov: &cov, Newton: it}
			for i := range dim {
				ref.SD[i] = math.Sqrt(cov.At(i, i))
			}
			// The mean: the mode plus the first-order (skewness)
			// correction ½ Σ ∇ tr(Σ ∇²log π), with ∇ by central
			// differences of the Hessian a posterior sd either side.
			v := make([]float64, dim)
			for j := range dim {
				x := slices.Clone(u)
				var tr [2]float64
				for k, sgn := range []float64{1, -1} {
					x[j] = u[j] + sgn*ref.SD[j]
					hx, err := hess(x)
					if err != nil {
						return nil, err
					}
					var p mat.Dense
					p.Mul(&cov, hx)
					tr[k] = -mat.Trace(&p) // ∇²log π = −hx
				}
				v[j] = (tr[0] - tr[1]) / (2 * ref.SD[j])
			}
			ref.Mean = make([]float64, dim)
			for i := range dim {
				ref.Mean[i] = u[i]
				for j := range dim {
					ref.Mean[i] += 0.5 * cov.At(i, j) * v[j]
				}
			}
			return ref, nil
		}
	}
	return nil, fmt.Errorf("newton did not converge from %v", u)
}

func writeScaleTable(w io.Writer, runs []*scaleRun, levels []float64) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "T\tmethod\teps\titers\ts/iter")
	for _, l := range levels {
		fmt.Fprintf(tw, "\tt(%g sd)", l)
	}
	fmt.Fprint(tw, "\tbudget\terror at budget, sd (u of phi, sigma, tau)\n")
	for _, r := range runs {
		fmt.Fprintf(tw, "%d\t%s\t%g\t%d\t%.3g", r.T, r.Label, r.Eps, r.Iters, r.Seconds/float64(r.Iters))
		errs := r.maxErrs()
		for _, l := range levels {
			if t, ok := timeTo(r.Times, errs, l); ok {
				fmt.Fprintf(tw, "\t%.3gs", t)
			} else {
				fmt.Fprint(tw, "\t>budget")
			}
		}
		fmt.Fprintf(tw, "\t%.3gs\t%s\n", r.Seconds, fmtVec(r.Err[len(r.Err)-1], "%.2f"))
	}
	return tw.Flush()
}

// crossover says, per accuracy level, at which T the buffered particle
// gradient reaches it first (or alone) against the full-sequence one.
func crossover(runs []*scaleRun, Ts []int, levels []float64) string {
	var b strings.Builder
	find := func(T int, name string) *scaleRun {
		for _, r := range runs {
			if r.T == T && r.Method == name {
				return r
			}
		}
		return nil
	}
	for _, l := range levels {
		fmt.Fprintf(&b, "Time to %g sd, Buffer vs Full (particles):", l)
		for _, T := range Ts {
			bu, fu := find(T, "buf"), find(T, "full")
			if bu == nil || fu == nil {
				continue
			}
			tb, okb := timeTo(bu.Times, bu.maxErrs(), l)
			tf, okf := timeTo(fu.Times, fu.maxErrs(), l)
			var v string
			switch {
			case okb && okf && tb < tf:
				v = fmt.Sprintf("Buffer %.2gx faster", tf/tb)
			case okb && okf:
				v = fmt.Sprintf("Full %.2gx faster", tb/tf)
			case okb:
				v = "only Buffer reaches it"
			case okf:
				v = "only Full reaches it"
			default:
				v = "neither within the budget"
			}
			fmt.Fprintf(&b, "  T=%d: %s;", T, v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func writeTraces(w io.Writer, runs []*scaleRun) error {
	if _, err := fmt.Fprintln(w, "T,method,eps,seconds,err_phi,err_sigma,err_tau"); err != nil {
		return err
	}
	for _, r := range runs {
		for j, t := range r.Times {
			e := r.Err[j]
			if _, err := fmt.Fprintf(w, "%d,%s,%g,%.6g,%.6g,%.6g,%.6g\n", r.T, r.Method, r.Eps, t, e[0], e[1], e[2]); err != nil {
				return err
			}
		}
	}
	return nil
}

// plotScale draws the error against wall time, log-log, one panel per T,
// with the accuracy levels as dotted lines.
func plotScale(path string, runs []*scaleRun, Ts []int, levels []float64) error {
	var row []*plot.Plot
	for _, T := range Ts {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("T = %d", T)
		p.X.Label.Text = "wall time (s)"
		p.Y.Label.Text = "max |mean - exact| / exact sd"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.Legend.Left, p.Legend.Top = true, false // curves fall from the top left
		tmin, tmax := math.Inf(1), 0.0
		for i, name := range []string{"buf", "full", "bufkf", "fullkf"} {
			for _, r := range runs {
				if r.T != T || r.Method != name {
					continue
				}
				var xy plotter.XYs
				for j, t := range r.Times {
					if e := r.maxErr(j); t > 0 && e > 0 {
						xy = append(xy, plotter.XY{X: t, Y: e})
						tmin, tmax = min(tmin, t), max(tmax, t)
					}
				}
				if len(xy) == 0 {
					continue
				}
				l, s, err := plotter.NewLinePoints(xy)
				if err != nil {
					return err
				}
				l.Color, s.Color = plotutil.Color(i), plotutil.Color(i)
				l.Width, s.Radius = vg.Points(1.2), vg.Points(2)
				p.Add(l)
				if len(xy) < 60 { // mark the iterations of the slow methods
					p.Add(s)
				}
				p.Legend.Add(fmt.Sprintf("%s (eps=%g)", r.Label, r.Eps), l)
			}
		}
		if tmax > 0 {
			for _, lv := range levels {
				l, err := plotter.NewLine(plotter.XYs{{X: tmin, Y: lv}, {X: tmax, Y: lv}})
				if err != nil {
					return err
				}
				l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
				p.Add(l)
			}
		}
		row = append(row, p)
	}
	return report.SavePanels(path, [][]*plot.Plot{row}, vg.Length(len(row))*5*vg.Inch, 4*vg.Inch)
}
