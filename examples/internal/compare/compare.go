package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// ErrSettings marks invalid Settings or methods.
var ErrSettings = errors.New("compare: invalid settings")

// Method is one gradient estimator under comparison.
type Method struct {
	// Name labels the method in tables, plots and JSON.
	Name string
	// New returns the estimator of chain c (one per chain: estimators
	// own particle filter workspaces).
	New func(chain int) (sgmcmc.Estimator, error)
}

// Settings configures Run. Fields without a stated default are required.
type Settings struct {
	// Model gives the parameter names and the map to natural parameters.
	Model ssm.Model
	// Eps is the grid of step sizes per observation; h = Eps[i] / Obs.
	Eps []float64
	// Obs is the number of training observations T.
	Obs int
	// Runtime is each chain's compute-time budget and Iterations its
	// iteration limit; at least one must be positive. With Runtime zero the
	// whole comparison is deterministic.
	Runtime    time.Duration
	Iterations int
	// Chains per method and step size (0 means 5) and Concurrency, the
	// number run at once (0 means GOMAXPROCS).
	Chains, Concurrency int
	// Seed seeds every generator.
	Seed uint64
	// Init fills the starting point of chain c.
	Init func(chain int, u []float64) error
	// BurnIn is the fraction of each chain's iterations discarded before
	// the KSD, in [0, 1); 0 means 0.5. Use a negative value for none.
	BurnIn float64
	// KSDDraws is the number of draws per chain scored for the KSD (0
	// means 100).
	KSDDraws int
	// NewScore returns a reference estimator of ∇_u log π(u | y), the
	// score the KSD uses. Each scoring worker calls it once.
	NewScore func() (sgmcmc.Estimator, error)
	// Workers is the number of goroutines scoring draws (0 means
	// GOMAXPROCS). Results do not depend on it.
	Workers int
	// Truth, when non-nil, holds the data-generating natural parameters
	// and enables the MSE traces, on TracePoints times (0 means 60).
	Truth       []float64
	TracePoints int
	// Store is the number of draws kept per chain (0 means 4096).
	Store int
	// Progress receives one line per method and step size, and periodic
	// sampler progress on long runs; nil is silent.
	Progress io.Writer
	// Prefix starts every progress line (e.g. "T=1000").
	Prefix string
}

// Result is the outcome of Run.
type Result struct {
	Names   []string // natural parameter names
	Obs     int
	Runtime time.Duration
	Methods []MethodResult
}

// MethodResult holds one method's runs over the step-size grid.
type MethodResult struct {
	Name string
	Grid []GridPoint
	// Best indexes Grid: the selected step size.
	Best int
}

// Selected returns the grid point of the selected step size.
func (m *MethodResult) Selected() *GridPoint { return &m.Grid[m.Best] }

// GridPoint holds the chains of one method at one step size.
type GridPoint struct {
	Eps, H float64
	Chains []Chain
	// LogKSD[d] summarises log10 KSD_d over the successful chains; the
	// last entry is the total.
	LogKSD []MeanSD
	Failed int
	// Times and MSE[p][j] form the MSE trace of natural parameter p
	// (nil without Settings.Truth).
	Times []float64
	MSE   [][]float64
}

// MeanIter returns the mean number of iterations per chain.
func (g *GridPoint) MeanIter() float64 {
	s := 0.0
	for i := range g.Chains {
		s += float64(g.Chains[i].Iterations)
	}
	return s / float64(len(g.Chains))
}

// Chain summarises one chain.
type Chain struct {
	Iterations int
	Seconds    float64
	Err        error
	// LogKSD[d] = log10 KSD_d; the last entry is log10 of the total.
	LogKSD []float64
	// KSDDraws is the number of draws scored.
	KSDDraws int
	// Mean and SD of the natural parameters over the draws after burn-in.
	Mean, SD []float64

	dim    int
	burnIt int
	u      []float64 // stored draws, row-major
	nat    []float64 // natural parameters of the stored draws
	iter   []int
	secs   []float64
}

// Len returns the number of stored draws.
func (c *Chain) Len() int { return len(c.iter) }

// Natural returns stored draw i in natural parameters (a view).
func (c *Chain) Natural(i int) []float64 {
	p := len(c.nat) / len(c.iter)
	return c.nat[i*p : (i+1)*p]
}

// Time returns the elapsed compute time of stored draw i, in seconds.
func (c *Chain) Time(i int) float64 { return c.secs[i] }

// Sample returns up to k evenly spaced stored draws of u after burn-in
// (copies).
func (c *Chain) Sample(k int) [][]float64 {
	idx := c.afterBurnIn()
	pick := evenly(len(idx), k)
	out := make([][]float64, len(pick))
	for i, j := range pick {
		out[i] = slices.Clone(c.u[idx[j]*c.dim : (idx[j]+1)*c.dim])
	}
	return out
}

func (c *Chain) afterBurnIn() []int {
	var idx []int
	for i, it := range c.iter {
		if it >= c.burnIt {
			idx = append(idx, i)
		}
	}
	return idx
}

// MeanSD is a mean and a sample standard deviation over chains.
type MeanSD struct{ Mean, SD float64 }

// String formats m as the paper's tables do: "0.64 (0.17)".
func (m MeanSD) String() string {
	switch {
	case math.IsNaN(m.Mean):
		return "–"
	case math.IsNaN(m.SD):
		return fmt.Sprintf("%.2f (–)", m.Mean)
	}
	return fmt.Sprintf("%.2f (%.2f)", m.Mean, m.SD)
}

// Run runs every method at every step size of the grid and scores the
// chains. It stops early only on a cancelled context or invalid settings;
// failed chains are recorded in the result.
func Run(ctx context.Context, methods []Method, s Settings) (*Result, error) {
	if err := s.defaults(methods); err != nil {
		return nil, err
	}
	names := s.Model.ParamNames()
	res := &Result{Names: names, Obs: s.Obs, Runtime: s.Runtime}
	scorers := make([]sgmcmc.Estimator, s.Workers)
	for w := range scorers {
		sc, err := s.NewScore()
		if err != nil {
			return nil, fmt.Errorf("compare: score estimator: %w", err)
		}
		scorers[w] = sc
	}
	for mi, m := range methods {
		mr := MethodResult{Name: m.Name}
		for ei, eps := range s.Eps {
			t0 := time.Now()
			seed := mix(s.Seed, uint64(mi), uint64(ei))
			g, err := s.runOne(ctx, m, eps, seed, scorers)
			if err != nil {
				return nil, fmt.Errorf("compare: %s, eps = %g: %w", m.Name, eps, err)
			}
			mr.Grid = append(mr.Grid, *g)
			if s.Progress != nil {
				fmt.Fprintf(s.Progress, "%s%-18s eps=%-6g %7.0f iters/chain  log10 KSD %s  failed %d/%d  [%.1fs]\n",
					s.Prefix, m.Name, eps, g.MeanIter(), g.LogKSD[len(g.LogKSD)-1], g.Failed, len(g.Chains), time.Since(t0).Seconds())
			}
		}
		mr.Best = best(mr.Grid)
		res.Methods = append(res.Methods, mr)
	}
	return res, nil
}

func (s *Settings) defaults(methods []Method) error {
	switch {
	case len(methods) == 0:
		return fmt.Errorf("%w: no methods", ErrSettings)
	case s.Model == nil || s.Init == nil || s.NewScore == nil:
		return fmt.Errorf("%w: Model, Init and NewScore are required", ErrSettings)
	case len(s.Eps) == 0:
		return fmt.Errorf("%w: empty step-size grid", ErrSettings)
	case s.Obs < 1:
		return fmt.Errorf("%w: Obs = %d", ErrSettings, s.Obs)
	case s.Runtime <= 0 && s.Iterations <= 0:
		return fmt.Errorf("%w: neither Runtime nor Iterations is positive", ErrSettings)
	case s.BurnIn >= 1:
		return fmt.Errorf("%w: BurnIn = %g must be below 1", ErrSettings, s.BurnIn)
	case s.Chains < 0 || s.KSDDraws < 0 || s.Workers < 0 || s.Store < 0 || s.TracePoints < 0:
		return fmt.Errorf("%w: negative count", ErrSettings)
	case s.Truth != nil && len(s.Truth) != len(s.Model.ParamNames()):
		return fmt.Errorf("%w: %d true values for %d parameters", ErrSettings, len(s.Truth), len(s.Model.ParamNames()))
	}
	for _, e := range s.Eps {
		if !(e > 0) || math.IsInf(e, 1) {
			return fmt.Errorf("%w: step size %g must be positive and finite", ErrSettings, e)
		}
	}
	for _, m := range methods {
		if m.New == nil {
			return fmt.Errorf("%w: method %q has no estimator", ErrSettings, m.Name)
		}
	}
	if s.Chains == 0 {
		s.Chains = 5
	}
	switch {
	case s.BurnIn == 0:
		s.BurnIn = 0.5
	case s.BurnIn < 0:
		s.BurnIn = 0
	}
	if s.KSDDraws == 0 {
		s.KSDDraws = 100
	}
	if s.Workers == 0 {
		s.Workers = runtimeProcs()
	}
	if s.Store == 0 {
		s.Store = 4096
	}
	s.Store = max(s.Store, 2*s.KSDDraws, 4)
	if s.TracePoints == 0 {
		s.TracePoints = 60
	}
	return nil
}

// runOne runs the chains of one method at one step size and scores them.
func (s *Settings) runOne(ctx context.Context, m Method, eps float64, seed uint64, scorers []sgmcmc.Estimator) (*GridPoint, error) {
	dim := s.Model.Dims().Param
	ests := make([]sgmcmc.Estimator, s.Chains)
	for c := range ests {
		e, err := m.New(c)
		if err != nil {
			return nil, err
		}
		ests[c] = e
	}
	rec := newStore(s.Chains, dim, s.Store)
	var r sgmcmc.Recorder = rec
	if s.Progress != nil && (s.Runtime > 20*time.Second || s.Iterations > 1e6) {
		r = sgmcmc.Multi(rec, &sgmcmc.Printer{W: s.Progress, Interval: 15 * time.Second, Names: s.Model.ParamNames(),
			Transform: func(dst, u []float64) { s.Model.Constrain(dst, u) }})
	}
	h := eps / float64(s.Obs)
	out, err := sgmcmc.Run(ctx,
		func(c int) sgmcmc.Estimator { return ests[c] },
		func(int) sgmcmc.Method { return &sgmcmc.SGLD{} },
		s.Init, dim, sgmcmc.Settings{
			Iterations: s.Iterations, Runtime: s.Runtime, Schedule: sgmcmc.Constant(h),
			Chains: s.Chains, Concurrency: s.Concurrency, Seed: seed, Recorder: r,
		})
	if out == nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	g := &GridPoint{Eps: eps, H: h, Chains: make([]Chain, s.Chains)}
	p := len(s.Model.ParamNames())
	for c := range g.Chains {
		cr := out.Chains[c]
		ch := &g.Chains[c]
		*ch = Chain{Iterations: cr.Iterations, Seconds: cr.Elapsed.Seconds(), Err: cr.Err, dim: dim}
		st := &rec.chains[c]
		ch.u, ch.iter, ch.secs = st.u, st.iter, st.secs
		ch.nat = make([]float64, len(st.iter)*p)
		for i := range st.iter {
			s.Model.Constrain(ch.nat[i*p:(i+1)*p], ch.u[i*dim:(i+1)*dim])
		}
		ch.burnIt = int(s.BurnIn * float64(cr.Iterations))
		if cr.Err == nil && len(st.iter) == 0 {
			ch.Err = errors.New("compare: no draws recorded")
		}
		ch.Mean, ch.SD = ch.moments(p)
	}
	if err := s.score(ctx, g, seed, scorers); err != nil {
		return nil, err
	}
	g.summarise(dim)
	if s.Truth != nil {
		g.trace(s.Truth, s.TracePoints)
	}
	return g, nil
}

// moments returns the mean and sd of the natural parameters after burn-in.
func (c *Chain) moments(p int) (mean, sd []float64) {
	mean, sd = make([]float64, p), make([]float64, p)
	idx := c.afterBurnIn()
	for j := range p {
		var m, m2 float64
		for _, i := range idx {
			m += c.nat[i*p+j]
		}
		m /= float64(len(idx))
		for _, i := range idx {
			d := c.nat[i*p+j] - m
			m2 += d * d
		}
		mean[j], sd[j] = m, math.Sqrt(m2/float64(len(idx)-1))
	}
	return mean, sd
}

// score computes every successful chain's KSD, chains spread over workers.
func (s *Settings) score(ctx context.Context, g *GridPoint, seed uint64, scorers []sgmcmc.Estimator) error {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := range scorers {
		wg.Add(1)
		go func(sc sgmcmc.Estimator) {
			defer wg.Done()
			for c := range next {
				ch := &g.Chains[c]
				rng := rand.New(rand.NewPCG(seed, 1<<32+uint64(c)))
				if err := ch.ksd(ctx, sc, s.KSDDraws, rng); err != nil && ch.Err == nil {
					ch.Err = err
				}
			}
		}(scorers[w])
	}
	for c := range g.Chains {
		if g.Chains[c].Err == nil {
			next <- c
		}
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

// ksd scores up to k evenly spaced draws after burn-in.
func (c *Chain) ksd(ctx context.Context, sc sgmcmc.Estimator, k int, rng *rand.Rand) error {
	x := c.Sample(k)
	d := c.dim
	xs := make([]float64, 0, len(x)*d)
	score := make([]float64, len(x)*d)
	for i, u := range x {
		xs = append(xs, u...)
		if _, err := sc.Grad(ctx, score[i*d:(i+1)*d], u, rng); err != nil {
			return fmt.Errorf("compare: score at draw %d: %w", i, err)
		}
	}
	r, err := ksd.Compute(xs, score, d, &ksd.Settings{Workers: 1})
	if err != nil {
		return err
	}
	c.KSDDraws = len(x)
	c.LogKSD = make([]float64, d+1)
	for j, v := range r.PerDim {
		c.LogKSD[j] = math.Log10(v)
	}
	c.LogKSD[d] = math.Log10(r.KSD)
	return nil
}

func (g *GridPoint) summarise(dim int) {
	g.LogKSD = make([]MeanSD, dim+1)
	for j := range g.LogKSD {
		var v []float64
		for i := range g.Chains {
			if g.Chains[i].Err == nil {
				v = append(v, g.Chains[i].LogKSD[j])
			}
		}
		g.LogKSD[j] = meanSD(v)
	}
	g.Failed = 0
	for i := range g.Chains {
		if g.Chains[i].Err != nil {
			g.Failed++
		}
	}
}

// trace computes the MSE of the running posterior-mean estimate.
func (g *GridPoint) trace(truth []float64, points int) {
	tmax := 0.0
	for i := range g.Chains {
		if c := &g.Chains[i]; c.Err == nil && c.Len() > 0 {
			tmax = max(tmax, c.secs[c.Len()-1])
		}
	}
	p := len(truth)
	g.Times = make([]float64, points)
	g.MSE = make([][]float64, p)
	for j := range g.MSE {
		g.MSE[j] = make([]float64, points)
	}
	mean := make([]float64, p)
	for t := range points {
		at := tmax * float64(t+1) / float64(points)
		g.Times[t] = at
		sum := make([]float64, p)
		n := 0
		for i := range g.Chains {
			c := &g.Chains[i]
			if c.Err != nil {
				continue
			}
			m, _ := slices.BinarySearchFunc(c.secs, at, func(a, b float64) int {
				if a <= b {
					return -1
				}
				return 1
			})
			if m == 0 {
				continue
			}
			clear(mean)
			for k := m / 2; k < m; k++ {
				for j := range p {
					mean[j] += c.nat[k*p+j]
				}
			}
			for j := range p {
				d := mean[j]/float64(m-m/2) - truth[j]
				sum[j] += d * d
			}
			n++
		}
		for j := range p {
			g.MSE[j][t] = sum[j] / float64(n) // NaN when no chain has a draw yet
		}
	}
}

// best returns the grid index with the fewest failures and then the
// smallest mean log10 KSD.
func best(grid []GridPoint) int {
	b := 0
	for i := 1; i < len(grid); i++ {
		gi, gb := &grid[i], &grid[b]
		ki, kb := gi.LogKSD[len(gi.LogKSD)-1].Mean, gb.LogKSD[len(gb.LogKSD)-1].Mean
		switch {
		case gi.Failed < gb.Failed:
			b = i
		case gi.Failed == gb.Failed && (ki < kb || math.IsNaN(kb) && !math.IsNaN(ki)):
			b = i
		}
	}
	return b
}

func meanSD(v []float64) MeanSD {
	if len(v) == 0 {
		return MeanSD{math.NaN(), math.NaN()}
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) == 1 {
		return MeanSD{m, math.NaN()}
	}
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return MeanSD{m, math.Sqrt(s / float64(len(v)-1))}
}

// evenly returns up to k indices evenly spaced over [0, n), first and last
// included.
func evenly(n, k int) []int {
	if n <= k {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	idx := make([]int, k)
	if k == 1 {
		idx[0] = n - 1
		return idx
	}
	for i := range idx {
		idx[i] = int(math.Round(float64(i) * float64(n-1) / float64(k-1)))
	}
	return idx
}

// mix derives a seed for run (i, j) from the user's seed (splitmix64).
func mix(seed, i, j uint64) uint64 {
	z := seed + 0x9e3779b97f4a7c15*(1+i*1000003+j*7919)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
