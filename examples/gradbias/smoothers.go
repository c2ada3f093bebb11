package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// smootherByName maps the -smoothers names to the library's smoothers.
var smootherByName = map[string]pf.Smoother{
	"ancestral":    pf.Ancestral,
	"paris":        pf.PaRIS,
	"forward-only": pf.ForwardOnly,
	"shrinkage":    pf.Shrinkage,
}

// smootherRef is the N = ∞ reference of one model in the smoother study:
// the full-data gradient g and the exact buffered estimator ĝ(S, B) of
// every window (Kalman smoother for the LGSSM, grid filter for the SVM).
type smootherRef struct {
	S, B    int
	G       float64 // g = ∇ log p(y_1:T) in the reported parameter
	Method  string  // "kalman" or "grid"
	BufBias float64 // E_p[ĝ(S, B)(w_p)] − g over every start position: the buffering bias (II)
	SubVar  float64 // E_p[(ĝ(S, B)(w_p) − g)²]: the subsequence draw's share of the MSE
	PFTruth truth   // the figure study's ground truth (Kalman, or the mean of full-sequence PF runs)
}

// smootherRow is one (model, smoother, N) result. Particle quantities are
// measured against the same window's exact ĝ(S, B); "SG" quantities
// against g, for one stochastic gradient (a uniformly drawn window and one
// filter run). Each value has its Monte Carlo standard error over the
// windows (SE).
type smootherRow struct {
	Model    string
	Smoother pf.Smoother
	N        int
	Windows  int // windows evaluated
	Reps     int // filter runs per window

	PBias, PBiasSE float64 // E[g^PF(w) − ĝ(w)]: particle bias (III)
	Var, VarSE     float64 // E_w Var_PF[g^PF(w)]: particle variance
	PMSE, PMSESE   float64 // E[(g^PF(w) − ĝ(w))²]: particle MSE
	SGMSE, SGMSESE float64 // E[(g^PF(w) − g)²]: MSE of one stochastic gradient
	// Sec is the mean CPU seconds of one gradient (one window, one run)
	// on the worker's own thread, which the machine's load does not
	// inflate; Wall is the median wall-clock seconds.
	Sec, Wall float64
}

// Bias is the total bias E[g^PF] − g: the exact buffering bias plus the
// estimated particle bias (same SE).
func (r smootherRow) Bias(ref smootherRef) float64 { return ref.BufBias + r.PBias }

// smootherBuffer is the study's B for a model.
func smootherBuffer(o options, sp modelSpec) int {
	if o.SmB >= 0 {
		return o.SmB
	}
	return sp.Buffer
}

// smootherPositions returns n start positions out of m, evenly spaced from
// a uniformly random offset (systematic sampling: each position is chosen
// with probability about n/m).
func smootherPositions(m, n int, rng *rand.Rand) []int {
	if n <= 0 || n >= m {
		ps := make([]int, m)
		for i := range ps {
			ps[i] = i
		}
		return ps
	}
	step := float64(m) / float64(n)
	off := rng.Float64() * step
	ps := make([]int, n)
	for i := range ps {
		ps[i] = min(m-1, int(off+float64(i)*step))
	}
	return ps
}

// smoothers runs the smoother comparison: for every model, smoother and
// N, SmReps independent filter runs on each of SmWindows windows of
// g^PF(S0, B, N), compared with the exact ĝ(S0, B) of the same window and
// with g.
func (st *study) smoothers(ctx context.Context, o options, progress io.Writer) ([]smootherRow, map[string]smootherRef, error) {
	// The figure study's ground truth (Kalman for the LGSSM, full-sequence
	// particle filters for the SVM), for the cross-check of the grid.
	_, truths, err := st.compute(ctx, nil, 2, progress)
	if err != nil {
		return nil, nil, err
	}
	type cell struct {
		cfg  config
		wins []ssm.Window // the evaluated windows
		refs []float64    // their exact ĝ(S, B)
		vals []float64    // Windows × Reps estimates
		secs []float64    // their wall-clock seconds
		cpu  []float64    // per window: thread CPU seconds per run (NaN: not measured)
	}
	refs := map[string]smootherRef{}
	var cells []*cell
	ex := newWorker(st)
	for _, name := range o.Models {
		sp := st.Specs[name]
		B := smootherBuffer(o, sp)
		ws, err := windowsOf(config{S: o.S, B: B}, st.T)
		if err != nil {
			return nil, nil, err
		}
		exact := estKey{Model: name}
		g, _, err := ex.eval(ctx, exact, ssm.Full(st.T), nil)
		if err != nil {
			return nil, nil, err
		}
		ref := smootherRef{S: o.S, B: B, G: g, Method: "grid", PFTruth: truths[name]}
		if sp.Exact {
			ref.Method = "kalman"
		}
		all := make([]float64, len(ws))
		for p, w := range ws {
			if all[p], _, err = ex.eval(ctx, exact, w, nil); err != nil {
				return nil, nil, err
			}
			ref.BufBias += (all[p] - g) / float64(len(ws))
			ref.SubVar += (all[p] - g) * (all[p] - g) / float64(len(ws))
		}
		refs[name] = ref
		pos := smootherPositions(len(ws), o.SmWindows, rand.New(rand.NewPCG(st.Seed, streamID("smoothers/"+name, 0))))
		for _, sm := range o.Smoothers {
			for _, N := range o.NSm {
				if sm == pf.ForwardOnly && N > o.FOMax {
					continue
				}
				c := &cell{cfg: config{Model: name, S: o.S, B: B, N: N, Smoother: sm}}
				for _, p := range pos {
					c.wins = append(c.wins, ws[p])
					c.refs = append(c.refs, all[p])
				}
				c.vals = make([]float64, len(pos)*o.SmReps)
				c.secs = make([]float64, len(pos)*o.SmReps)
				c.cpu = make([]float64, len(pos))
				for i := range c.cpu {
					c.cpu[i] = math.NaN()
				}
				cells = append(cells, c)
			}
		}
	}
	if len(cells) == 0 {
		return nil, nil, fmt.Errorf("-study smoothers: no setting to run (every N of -Nsm is above -fomax = %d for %v)", o.FOMax, o.Smoothers)
	}
	// One job per (cell, window), the most expensive first; each has its
	// own random stream, so the results do not depend on the workers.
	type job struct{ cell, win int }
	var jobs []job
	cost := func(j job) float64 {
		c := cells[j.cell].cfg
		f := 1.0
		switch c.Smoother {
		case pf.ForwardOnly:
			f = float64(c.N)
		case pf.PaRIS:
			f = 10
		}
		return float64(o.SmReps*(c.S+2*c.B)*c.N) * f
	}
	for ci, c := range cells {
		for i := range c.wins {
			jobs = append(jobs, job{ci, i})
		}
	}
	sort.SliceStable(jobs, func(a, b int) bool { return cost(jobs[a]) > cost(jobs[b]) })
	err = st.pool(ctx, len(jobs), func(i int) float64 { return cost(jobs[i]) }, func(ctx context.Context, w *worker, i int) error {
		c := cells[jobs[i].cell]
		win := jobs[i].win
		rng := rand.New(rand.NewPCG(st.Seed, streamID(fmt.Sprintf("%v/w%d", c.cfg, c.wins[win].KeepStart), 0)))
		if _, err := w.estimator(c.cfg.key()); err != nil { // built outside the timing
			return err
		}
		cpu0, ok := threadCPU()
		for r := range o.SmReps {
			v, s, err := w.eval(ctx, c.cfg.key(), c.wins[win], rng)
			if err != nil {
				return err
			}
			c.vals[win*o.SmReps+r], c.secs[win*o.SmReps+r] = v, s
		}
		if cpu1, _ := threadCPU(); ok {
			c.cpu[win] = (cpu1 - cpu0) / float64(o.SmReps)
		}
		return nil
	}, progress)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]smootherRow, len(cells))
	for ci, c := range cells {
		n, R := len(c.wins), o.SmReps
		g := refs[c.cfg.Model].G
		dbar, s2, mse, sg := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		for i := range n {
			d := make([]float64, R)
			for r := range R {
				v := c.vals[i*R+r]
				d[r] = v - c.refs[i]
				mse[i] += d[r] * d[r] / float64(R)
				// (g^PF − g)² − (ĝ − g)²: its mean plus SubVar is the SG MSE,
				// with the window-to-window spread of ĝ computed exactly.
				sg[i] += ((v-g)*(v-g) - (c.refs[i]-g)*(c.refs[i]-g)) / float64(R)
			}
			m, sd := meanSD(d)
			dbar[i], s2[i] = m, sd*sd
		}
		row := smootherRow{Model: c.cfg.Model, Smoother: c.cfg.Smoother, N: c.cfg.N, Windows: n, Reps: R}
		row.PBias, row.PBiasSE = meanSE(dbar)
		row.Var, row.VarSE = meanSE(s2)
		row.PMSE, row.PMSESE = meanSE(mse)
		row.SGMSE, row.SGMSESE = meanSE(sg)
		row.SGMSE += refs[c.cfg.Model].SubVar
		secs := slices.Clone(c.secs)
		slices.Sort(secs)
		row.Wall = secs[len(secs)/2]
		row.Sec, _ = meanSD(c.cpu)
		if math.IsNaN(row.Sec) { // no thread CPU clock: the median wall-clock time
			row.Sec = row.Wall
		}
		rows[ci] = row
	}
	return rows, refs, nil
}

// meanSE returns the mean of x and its standard error.
func meanSE(x []float64) (float64, float64) {
	m, sd := meanSD(x)
	return m, sd / math.Sqrt(float64(len(x)))
}

// equalTime returns the time t* at which every smoother's (seconds, MSE)
// curve of one model can be interpolated (the smallest of their largest
// times, if it is not below the largest of their smallest) and each
// smoother's MSE there, interpolated linearly in log-log; ok is false
// when the curves do not overlap in time.
func equalTime(rows []smootherRow, mse func(smootherRow) float64) (tstar float64, at map[pf.Smoother]float64, ok bool) {
	curves := map[pf.Smoother][]smootherRow{}
	for _, r := range rows {
		curves[r.Smoother] = append(curves[r.Smoother], r)
	}
	lo, hi := 0.0, math.Inf(1)
	for _, c := range curves {
		slices.SortFunc(c, func(a, b smootherRow) int { return cmpFloat(a.Sec, b.Sec) })
		lo = max(lo, c[0].Sec)
		hi = min(hi, c[len(c)-1].Sec)
	}
	if len(curves) == 0 || hi < lo {
		return 0, nil, false
	}
	at = map[pf.Smoother]float64{}
	for sm, c := range curves {
		// c[0].Sec <= hi <= c[len(c)-1].Sec, so i < len(c).
		i := sort.Search(len(c), func(i int) bool { return c[i].Sec >= hi })
		if i == 0 {
			at[sm] = mse(c[0])
			continue
		}
		a, b := c[i-1], c[i]
		f := math.Log(hi/a.Sec) / math.Log(b.Sec/a.Sec)
		at[sm] = math.Exp((1-f)*math.Log(mse(a)) + f*math.Log(mse(b)))
	}
	return hi, at, true
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// smoothersHeader is the header of smoothers.csv.
var smoothersHeader = []string{"model", "param", "smoother", "S", "B", "N", "windows", "reps_per_window",
	"truth", "truth_method", "pf_truth", "pf_truth_se", "buffer_bias", "particle_bias", "particle_bias_se", "bias", "bias_se",
	"variance", "variance_se", "particle_mse", "particle_mse_se", "sg_mse", "sg_mse_se",
	"cpu_sec_per_grad", "wall_sec_median", "particle_mse_x_sec", "sg_mse_x_sec"}

func writeSmoothers(path string, st *study, rows []smootherRow, refs map[string]smootherRef) error {
	g := csvNum
	return writeCSV(path, smoothersHeader, func(w *csv.Writer) {
		for _, r := range rows {
			ref := refs[r.Model]
			w.Write([]string{r.Model, st.Specs[r.Model].Param, r.Smoother.String(), strconv.Itoa(ref.S), strconv.Itoa(ref.B),
				strconv.Itoa(r.N), strconv.Itoa(r.Windows), strconv.Itoa(r.Reps),
				g(ref.G), ref.Method, g(ref.PFTruth.Value), g(ref.PFTruth.SE), g(ref.BufBias), g(r.PBias), g(r.PBiasSE),
				g(r.Bias(ref)), g(r.PBiasSE), g(r.Var), g(r.VarSE), g(r.PMSE), g(r.PMSESE), g(r.SGMSE), g(r.SGMSESE),
				g(r.Sec), g(r.Wall), g(r.PMSE * r.Sec), g(r.SGMSE * r.Sec)})
		}
	})
}

// printSmoothers prints the references and one table per model.
func printSmoothers(out io.Writer, o options, st *study, rows []smootherRow, refs map[string]smootherRef) {
	fmt.Fprintf(out, "gradbias -study smoothers: T = %d, S = %d, %d windows x %d runs per setting, seed %d; full-data scale; ± is one Monte Carlo standard error\n",
		o.T, o.S, rows[0].Windows, o.SmReps, o.Seed)
	for _, name := range o.Models {
		ref := refs[name]
		fmt.Fprintf(out, "\n%s d/d%s, S = %d, B = %d: g = %.4f (%s)", name, st.Specs[name].Param, ref.S, ref.B, ref.G, ref.Method)
		if t := ref.PFTruth; t.Method != "kalman" {
			fmt.Fprintf(out, "; full-sequence PF ground truth %.4f ± %.4f (%d runs, N = %d)", t.Value, t.SE, t.Runs, t.N)
		}
		fmt.Fprintf(out, "\n  exact buffering bias E[ĝ(S,B)] − g = %.4g; subsequence share of the MSE E[(ĝ(S,B) − g)²] = %.4g\n", ref.BufBias, ref.SubVar)
		fmt.Fprintf(out, "  %-13s %5s %12s %18s %18s %18s %18s %11s %18s\n", "smoother", "N", "CPU ms/grad", "particle bias", "bias vs g", "variance", "particle MSE", "MSE x s", "SG MSE")
		var mine []smootherRow
		for _, r := range rows {
			if r.Model != name {
				continue
			}
			mine = append(mine, r)
			pm := func(v, se float64) string { return fmt.Sprintf("%8.3g ± %-7.2g", v, se) }
			fmt.Fprintf(out, "  %-13s %5d %12.3g %18s %18s %18s %18s %11.3g %18s\n", r.Smoother, r.N, 1e3*r.Sec,
				pm(r.PBias, r.PBiasSE), pm(r.Bias(ref), r.PBiasSE), pm(r.Var, r.VarSE), pm(r.PMSE, r.PMSESE), r.PMSE*r.Sec, pm(r.SGMSE, r.SGMSESE))
		}
		for _, q := range []struct {
			name string
			f    func(smootherRow) float64
		}{{"particle MSE", func(r smootherRow) float64 { return r.PMSE }}, {"SG MSE", func(r smootherRow) float64 { return r.SGMSE }}} {
			t, at, ok := equalTime(mine, q.f)
			if !ok {
				fmt.Fprintf(out, "  equal time: the smoothers' time ranges do not overlap\n")
				break
			}
			fmt.Fprintf(out, "  %s at equal CPU time %.3g ms per gradient (log-log interpolation):", q.name, 1e3*t)
			for _, sm := range o.Smoothers {
				if v, ok := at[sm]; ok {
					fmt.Fprintf(out, " %v %.4g;", sm, v)
				}
			}
			fmt.Fprintln(out)
		}
	}
}

// runSmoothers is -study smoothers: the study, smoothers.csv, the table
// and smoothers_mse_time.png.
func runSmoothers(o options, st *study, stdout, stderr io.Writer, start time.Time) error {
	fmt.Fprintf(stderr, "gradbias: smoother study, %d models, smoothers %v, N %v (forward-only up to %d), %d windows (0: all) x %d runs, %d workers\n",
		len(o.Models), o.Smoothers, o.NSm, o.FOMax, o.SmWindows, o.SmReps, o.Workers)
	rows, refs, err := st.smoothers(context.Background(), o, stderr)
	if err != nil {
		return err
	}
	if err := writeSmoothers(filepath.Join(o.Out, "smoothers.csv"), st, rows, refs); err != nil {
		return err
	}
	if err := drawSmoothers(filepath.Join(o.Out, "smoothers_mse_time.png"), o, st, rows, refs); err != nil {
		return err
	}
	printSmoothers(stdout, o, st, rows, refs)
	fmt.Fprintf(stdout, "\nwrote %s (%.0f s)\n", o.Out, time.Since(start).Seconds())
	return nil
}
