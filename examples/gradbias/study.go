package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// modelSpec is one model of the study: the data-generating parameters of the
// paper's section 5.2 (also the point where gradients are evaluated) and the
// natural parameter whose gradient is reported.
type modelSpec struct {
	Name   string    // "lgssm", "svm" or "garch"
	Param  string    // reported parameter: "phi" or "beta"
	Model  ssm.Model // the model family
	U      []float64 // data-generating parameters in u
	Buffer int       // the paper's moderate buffer of Figures 3 and 4
	// Deriv maps ∇_u log p(y | u) to the derivative with respect to Param
	// (the other natural parameters of the paper's parameterisation held
	// fixed).
	Deriv func(g []float64) float64
	// Exact reports that the model has an exact (Kalman) scorer: the N = ∞
	// curves and an exact ground truth.
	Exact bool
}

// simulator is the Simulate method the three models share.
type simulator interface {
	Simulate(T int, u []float64, rng *rand.Rand) ([]float64, ssm.Sequence, error)
}

// newSpec returns the study settings of a model by name.
func newSpec(name string) (modelSpec, error) {
	switch name {
	case "lgssm":
		// Section 5.2: φ = 0.9, σ = 0.7, τ = 1.
		m := models.LGSSM{}
		u, err := m.Params(0.9, 0.7, 1)
		if err != nil {
			return modelSpec{}, err
		}
		return modelSpec{Name: name, Param: "phi", Model: m, U: u, Buffer: 8, Deriv: phiDeriv(u), Exact: true}, nil
	case "svm":
		// Section 5.2: φ = 0.9, σ = 0.5, τ = 0.5.
		m := models.SVM{}
		u, err := m.Params(0.9, 0.5, 0.5)
		if err != nil {
			return modelSpec{}, err
		}
		return modelSpec{Name: name, Param: "phi", Model: m, U: u, Buffer: 16, Deriv: phiDeriv(u)}, nil
	case "garch":
		// Section 5.2: α = 0.1, β = 0.8, γ = 0.05, τ = 0.3.
		m := models.GARCH{}
		u, err := m.FromABG(0.1, 0.8, 0.05, 0.3)
		if err != nil {
			return modelSpec{}, err
		}
		theta := make([]float64, 4)
		m.Constrain(theta, u)
		du := garchDUDBeta(theta)
		deriv := func(g []float64) float64 {
			return g[0]*du[0] + g[1]*du[1] + g[2]*du[2] + g[3]*du[3]
		}
		return modelSpec{Name: name, Param: "beta", Model: m, U: u, Buffer: 8, Deriv: deriv}, nil
	}
	return modelSpec{}, fmt.Errorf("unknown model %q (want lgssm, svm or garch)", name)
}

// phiDeriv returns the map from ∇_u to ∂/∂φ for u_1 = atanh φ: dφ/du_1 = 1 − φ².
func phiDeriv(u []float64) func(g []float64) float64 {
	phi := math.Tanh(u[0])
	return func(g []float64) float64 { return g[0] / (1 - phi*phi) }
}

// garchDUDBeta returns ∂u/∂β at the natural parameters θ = (μ, φ, λ, τ) of
// models.GARCH, with α, γ and τ held fixed (the paper's GARCH β). With
// μ = α/(1−β−γ), φ = β+γ, λ = β/(β+γ) and u = (u_μ, logit φ, logit λ,
// log τ), dμ/du_μ = μ(1 − (μ/2)⁴):
//
//	∂u_1/∂β = 1/(μ(1 − (μ/2)⁴)) · μ/(1−φ) = 1/((1 − (μ/2)⁴)(1−φ)),
//	∂u_2/∂β = 1/(φ(1−φ)),
//	∂u_3/∂β = 1/(λ(1−λ)) · (1−λ)/φ = 1/β,
//	∂u_4/∂β = 0.
func garchDUDBeta(theta []float64) [4]float64 {
	mu, phi, lambda := theta[0], theta[1], theta[2]
	return [4]float64{1 / ((1 - math.Pow(mu/2, 4)) * (1 - phi)), 1 / (phi * (1 - phi)), 1 / (phi * lambda), 0}
}

// config is one estimator g^PF(S, B, N) whose expectation over the random
// subsequence the study estimates. N = 0 means N = ∞ (the Kalman smoother).
type config struct {
	Model string
	S, B  int
	N     int
	Full  bool // the full-data estimator g^PF(T, T, N): one window, the whole sequence
	// Smoother is the particle filter's additive-statistic accumulator
	// (zero value: ancestral paths, the paper's Algorithm 1).
	Smoother pf.Smoother
	// Fixed starts every window from the fixed, parameter-free state
	// prior x ~ N(0, fixedVar) (the authors' code) instead of the
	// stationary law ν_0 at θ; the initial-state score is then 0.
	Fixed bool
}

// key is what an estimator depends on: the model, N, the smoother and the
// window's starting law.
func (c config) key() estKey {
	return estKey{Model: c.Model, N: c.N, Smoother: c.Smoother, Fixed: c.Fixed}
}

// String names the config; it also seeds the config's random streams, so
// the names of the default smoother and start are unchanged from the
// figure runs.
func (c config) String() string {
	s := fmt.Sprintf("%s/S%d/B%d/N%d", c.Model, c.S, c.B, c.N)
	if c.Full {
		s = fmt.Sprintf("%s/full/N%d", c.Model, c.N)
	}
	if c.Smoother != pf.Ancestral {
		s += "/" + c.Smoother.String()
	}
	if c.Fixed {
		s += "/fixed"
	}
	return s
}

// result is the estimate of E[g^PF] for one config (in the reported
// parameter), from Reps independent replications.
type result struct {
	Mean       float64 // mean over replications of the estimate of E[g^PF]
	HalfWidth  float64 // 95% Student t half-width of Mean over the replications (0 when exact)
	SE         float64 // standard error of Mean over the replications (0 when exact)
	Reps       int     // replications (0: computed exactly by enumerating every window)
	Windows    float64 // windows evaluated per replication (average)
	SecPerGrad float64 // wall-clock seconds of one estimator evaluation (one window)
	// CondRMS is the root mean square over subsequences S of the
	// per-subsequence bias E[g(S) | S] − g*(S) against the fully buffered
	// target g*(S) (B = T): computed for N = ∞ only, NaN otherwise.
	CondRMS float64
}

// truth is the full-data gradient of the reported parameter.
type truth struct {
	Value, SE float64 // SE = 0 for the exact (Kalman) value
	Method    string
	N, Runs   int
}

// study holds the inputs shared by every worker. It is read-only once built.
type study struct {
	T       int
	Seed    uint64
	Workers int
	TruthN  int
	Runs    int // full-sequence runs averaged for the ground truth
	Stride  int // spacing of the start positions a replication evaluates (1: all)
	Specs   map[string]modelSpec
	Data    map[string]ssm.Dataset
}

// windowsOf lists every buffered subsequence of a config in the order of
// gradient.Subsequencer.Enumerate (start position 0, 1, ...), each drawn
// with the same probability, with its own copy of the weights.
func windowsOf(c config, T int) ([]ssm.Window, error) {
	q := gradient.Subsequencer{S: c.S, B: c.B, Sampling: gradient.Uniform}
	if c.Full {
		q = gradient.Subsequencer{Sampling: gradient.Full}
	}
	if err := q.Check(T); err != nil {
		return nil, err
	}
	var ws []ssm.Window
	q.Enumerate(T, func(w ssm.Window, prob float64) {
		if w.Weights != nil {
			w.Weights = append([]float64(nil), w.Weights...)
		}
		ws = append(ws, w)
	})
	return ws, nil
}

// stride returns the spacing k of the start positions one replication
// evaluates: every k-th of the n positions from a random offset (k = 1: all
// of them, the exact expectation over the subsequence draw).
func (st *study) stride(c config, n int) int {
	if c.Full {
		return 1
	}
	return max(1, min(st.Stride, n))
}

// streamID names the random stream of replication rep of a job, so results
// do not depend on the order, the number of workers or the other configs.
func streamID(key string, rep int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s#%d", key, rep)
	return h.Sum64()
}

type job struct {
	cfg   int    // index into the config list; -1 for a ground-truth run
	model string // ground-truth runs only
	rep   int
	cost  float64 // particle-steps, for the progress line
}

// estKey identifies an estimator: N = 0 is N = ∞ (the Kalman smoother
// for the LGSSM with the stationary start, a pf.GridFilter otherwise).
type estKey struct {
	Model    string
	N        int
	Smoother pf.Smoother
	Fixed    bool
}

// worker owns one estimator per estKey: estimators are not safe for
// concurrent use.
type worker struct {
	st   *study
	ests map[estKey]*gradient.Estimator
	grad []float64
}

func newWorker(st *study) *worker {
	return &worker{st: st, ests: map[estKey]*gradient.Estimator{}}
}

func (w *worker) estimator(key estKey) (*gradient.Estimator, error) {
	if e, ok := w.ests[key]; ok {
		return e, nil
	}
	sp := w.st.Specs[key.Model]
	var m ssm.Model = sp.Model
	if key.Fixed {
		fm, err := newFixedStart(sp.Model, fixedVar)
		if err != nil {
			return nil, err
		}
		m = fm
	}
	s := gradient.Settings{Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}}
	switch {
	case key.N == 0 && sp.Exact && !key.Fixed:
		s.Exact = true
	case key.N == 0:
		g, err := gridFor(m, sp.U, w.st.Data[key.Model], streamID("grid/"+key.Model, b2i(key.Fixed)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key.Model, err)
		}
		s.Grid = g
	default:
		s.PF = pf.Settings{N: key.N, Smoother: key.Smoother}
		if key.Fixed {
			s.PF.Initial = fixedInitial(fixedVar)
		}
	}
	e, err := gradient.New(m, w.st.Data[key.Model], s)
	if err != nil {
		return nil, err
	}
	w.ests[key] = e
	return e, nil
}

// gridFor chooses the grid of model m at u for the data (pf.GridFor),
// from a fixed random stream so every worker gets the same grid.
func gridFor(m ssm.Model, u []float64, data ssm.Dataset, stream uint64) (pf.Grid, error) {
	k, err := m.Bind(u)
	if err != nil {
		return pf.Grid{}, err
	}
	return pf.GridFor(k, u, m.Dims(), data, rand.New(rand.NewPCG(1, stream)))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// eval returns the reported derivative of g^PF over window win and the
// seconds it took.
func (w *worker) eval(ctx context.Context, key estKey, win ssm.Window, rng *rand.Rand) (float64, float64, error) {
	e, err := w.estimator(key)
	if err != nil {
		return 0, 0, err
	}
	sp := w.st.Specs[key.Model]
	if len(w.grad) != len(sp.U) {
		w.grad = make([]float64, len(sp.U))
	}
	start := time.Now()
	if _, err := e.Fixed(ctx, w.grad, sp.U, 0, win, rng); err != nil {
		return 0, 0, fmt.Errorf("%s N=%d window [%d,%d) kept [%d,%d): %w", key.Model, key.N, win.Start, win.End, win.KeepStart, win.KeepEnd, err)
	}
	return sp.Deriv(w.grad), time.Since(start).Seconds(), nil
}

// compute runs the configs and the ground truth and returns one result per
// config and one truth per model.
//
// The subsequence is drawn uniformly from n start positions, so
// E[g^PF] = (1/n) Σ_p E_PF[g^PF(w_p)]. A replication evaluates the particle
// filter on every start position (Stride 1), each with its own random
// stream: its average is an unbiased estimate of E[g^PF] whose only noise
// is the particle noise, where a single random draw would add the far larger
// spread of g(w_p) over windows (a standard deviation of about 80 against a
// bias of about 1 for the LGSSM). With Stride k > 1 a replication averages
// every k-th position from a uniformly random offset, each weighted by its
// inverse inclusion probability k: still unbiased, cheaper, noisier. N = ∞
// configs enumerate every window exactly.
func (st *study) compute(ctx context.Context, cfgs []config, reps int, progress io.Writer) ([]result, map[string]truth, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wins := make([][]ssm.Window, len(cfgs))
	for i, c := range cfgs {
		ws, err := windowsOf(c, st.T)
		if err != nil {
			return nil, nil, fmt.Errorf("%v: %w", c, err)
		}
		wins[i] = ws
	}

	results := make([]result, len(cfgs))
	truths := make(map[string]truth)
	ex := newWorker(st)
	// Exact configs and exact truths: cheap, done here.
	for i, c := range cfgs {
		if c.N != 0 {
			continue
		}
		// The fully buffered windows (B = T) keep the same spans with the
		// same weights: their exact values are the per-subsequence targets
		// g*(S) = Σ_{t∈S} w_t E[h_t | y_{1:T}].
		full, err := windowsOf(config{S: c.S, B: st.T, Full: c.Full}, st.T)
		if err != nil {
			return nil, nil, err
		}
		sum, secs, sq := 0.0, 0.0, 0.0
		rng := rand.New(rand.NewPCG(st.Seed, streamID(c.String(), 0))) // unused by the Kalman smoother
		for p, w := range wins[i] {
			d, s, err := ex.eval(ctx, c.key(), w, rng)
			if err != nil {
				return nil, nil, err
			}
			ref, _, err := ex.eval(ctx, c.key(), full[p], rng)
			if err != nil {
				return nil, nil, err
			}
			sum += d
			secs += s
			sq += (d - ref) * (d - ref)
		}
		n := float64(len(wins[i]))
		results[i] = result{Mean: sum / n, Windows: n, SecPerGrad: secs / n, CondRMS: math.Sqrt(sq / n)}
	}
	var jobs []job
	for name, sp := range st.Specs {
		if sp.Exact {
			rng := rand.New(rand.NewPCG(st.Seed, streamID("truth/"+name, 0)))
			d, _, err := ex.eval(ctx, estKey{Model: name}, ssm.Full(st.T), rng)
			if err != nil {
				return nil, nil, err
			}
			truths[name] = truth{Value: d, Method: "kalman"}
			continue
		}
		for r := 0; r < st.Runs; r++ {
			jobs = append(jobs, job{cfg: -1, model: name, rep: r, cost: float64(st.T) * float64(st.TruthN)})
		}
	}
	for i, c := range cfgs {
		if c.N == 0 {
			continue
		}
		n := len(wins[i])
		k := st.stride(c, n)
		steps := 0
		for _, w := range wins[i] {
			steps += w.End - w.Start
		}
		for r := 0; r < reps; r++ {
			jobs = append(jobs, job{cfg: i, rep: r, cost: float64(steps) / float64(k) * float64(c.N)})
		}
	}
	// Longest first, so the pool does not end waiting on one long job.
	sortJobs(jobs)

	est := make([][]float64, len(cfgs))
	secs := make([][]float64, len(cfgs))
	calls := make([][]int, len(cfgs))
	for i := range cfgs {
		est[i] = make([]float64, reps)
		secs[i] = make([]float64, reps)
		calls[i] = make([]int, reps)
	}
	truthRuns := make(map[string][]float64)
	for name := range st.Specs {
		truthRuns[name] = make([]float64, st.Runs)
	}

	err := st.pool(ctx, len(jobs), func(i int) float64 { return jobs[i].cost }, func(ctx context.Context, w *worker, i int) error {
		return w.run(ctx, jobs[i], cfgs, wins, est, secs, calls, truthRuns)
	}, progress)
	if err != nil {
		return nil, nil, err
	}

	for name, runs := range truthRuns {
		if st.Specs[name].Exact {
			continue
		}
		m, sd := meanSD(runs)
		truths[name] = truth{Value: m, SE: sd / math.Sqrt(float64(len(runs))), Method: "pf-full", N: st.TruthN, Runs: len(runs)}
	}
	for i, c := range cfgs {
		if c.N == 0 {
			continue
		}
		m, sd := meanSD(est[i])
		q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(reps - 1)}.Quantile(0.975)
		tsec, tcalls := 0.0, 0
		for r := range reps {
			tsec += secs[i][r]
			tcalls += calls[i][r]
		}
		results[i] = result{
			CondRMS:    math.NaN(),
			Mean:       m,
			HalfWidth:  q * sd / math.Sqrt(float64(reps)),
			SE:         sd / math.Sqrt(float64(reps)),
			Reps:       reps,
			Windows:    float64(tcalls) / float64(reps),
			SecPerGrad: tsec / float64(tcalls),
		}
	}
	return results, truths, nil
}

// pool runs do(ctx, w, i) for the n jobs i = 0..n−1, in that order, on
// st.Workers goroutines, each with its own worker (estimators are not
// safe for concurrent use), and returns the first error, after which the
// remaining jobs are skipped. cost(i) weighs job i in the progress lines
// printed to progress (nil: none) every 2 seconds.
func (st *study) pool(ctx context.Context, n int, cost func(i int) float64, do func(ctx context.Context, w *worker, i int) error, progress io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	total := 0.0
	for i := range n {
		total += cost(i)
	}
	var (
		mu       sync.Mutex
		done     float64
		ndone    int
		firstErr error
	)
	ch := make(chan int)
	var wg sync.WaitGroup
	for range max(1, st.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One OS thread per worker, so threadCPU measures its work.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			w := newWorker(st)
			for i := range ch {
				err := do(ctx, w, i)
				mu.Lock()
				done += cost(i)
				ndone++
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	stop := make(chan struct{})
	var pwg sync.WaitGroup
	if progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			start := time.Now()
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					mu.Lock()
					fmt.Fprintf(progress, "gradbias: %d/%d jobs, %.0f%% of the particle work, %s elapsed\n",
						ndone, n, 100*done/max(total, 1), time.Since(start).Round(time.Second))
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case ch <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	close(stop)
	pwg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// run does one job: a ground-truth run, or one replication of a config.
func (w *worker) run(ctx context.Context, j job, cfgs []config, wins [][]ssm.Window, est, secs [][]float64, calls [][]int, truthRuns map[string][]float64) error {
	if j.cfg < 0 {
		rng := rand.New(rand.NewPCG(w.st.Seed, streamID("truth/"+j.model, j.rep)))
		d, _, err := w.eval(ctx, estKey{Model: j.model, N: w.st.TruthN}, ssm.Full(w.st.T), rng)
		if err != nil {
			return fmt.Errorf("ground truth: %w", err)
		}
		truthRuns[j.model][j.rep] = d
		return nil
	}
	c := cfgs[j.cfg]
	ws := wins[j.cfg]
	n := len(ws)
	k := w.st.stride(c, n)
	rng := rand.New(rand.NewPCG(w.st.Seed, streamID(c.String(), j.rep)))
	sum, tsec, nc := 0.0, 0.0, 0
	for p := rng.IntN(k); p < n; p += k {
		d, s, err := w.eval(ctx, c.key(), ws[p], rng)
		if err != nil {
			return err
		}
		sum += d
		tsec += s
		nc++
	}
	// Each position is in the sample with probability 1/k.
	est[j.cfg][j.rep] = sum * float64(k) / float64(n)
	secs[j.cfg][j.rep] = tsec
	calls[j.cfg][j.rep] = nc
	return nil
}

func sortJobs(jobs []job) {
	slices.SortStableFunc(jobs, func(a, b job) int {
		switch {
		case a.cost > b.cost:
			return -1
		case a.cost < b.cost:
			return 1
		}
		return 0
	})
}

// meanSD returns the mean and the sample standard deviation of x.
func meanSD(x []float64) (float64, float64) {
	n := float64(len(x))
	m := 0.0
	for _, v := range x {
		m += v
	}
	m /= n
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	if len(x) < 2 {
		return m, math.NaN()
	}
	return m, math.Sqrt(ss / (n - 1))
}
