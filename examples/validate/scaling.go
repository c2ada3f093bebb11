package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// The scaling page answers the library's claim, how the cost of a
// calibrated posterior grows with the length of the series, for every
// shipped scalar model: each model is simulated at every length and fitted
// with the defaults, and the page reports the wall time per effective draw
// (the whole examples/fit process over the smallest bulk or tail ESS) and
// whether the 90% intervals cover the truth.

// scalingModel is one model of the scaling page: its examples/fit name and
// the natural parameters its series are simulated from.
type scalingModel struct {
	Name   string
	Title  string
	Params []float64
}

var scalingModels = []scalingModel{
	{Name: "svm", Title: "SVM", Params: []float64{0.97, 0.2, 1}},
	{Name: "lgssm", Title: "LGSSM", Params: []float64{0.9, 0.7, 1}},
	// GARCH at its DAX posterior mean, rounded.
	{Name: "garch", Title: "GARCH(1,1) with noise", Params: []float64{1.1, 0.99, 0.27, 0.64}},
}

// scalingLengths are the series lengths: a short series, the S&P 500's,
// the USD/CHF series' and 10⁶.
var scalingLengths = []int{2000, 17000, 62000, 1000000}

// scalingName is a case's name, e.g. "garch-62k".
func scalingName(model string, T int) string {
	switch {
	case T >= 1000000 && T%1000000 == 0:
		return fmt.Sprintf("%s-%dM", model, T/1000000)
	case T%1000 == 0:
		return fmt.Sprintf("%s-%dk", model, T/1000)
	}
	return fmt.Sprintf("%s-%d", model, T)
}

// scalingCases returns a case per model and length: simulate (binary
// format, memory-mapped by the fit), then fit with the defaults and a
// time budget.
func scalingCases(budget time.Duration) []testCase {
	var cs []testCase
	for _, m := range scalingModels {
		for _, T := range scalingLengths {
			name := scalingName(m.Name, T)
			params := joinParams(m.Params)
			file := name + ".bin"
			sim := []string{"-model", m.Name, "-T", strconv.Itoa(T), "-params", params}
			cs = append(cs, testCase{
				Name:  name,
				Title: fmt.Sprintf("%s, simulated, T = %s", m.Title, thousands(T)),
				T:     T,
				Setup: func(tmp string, bin binaries) error {
					return runQuiet(bin.simulate, append(sim, "-out", filepath.Join(tmp, file))...)
				},
				SetupCmd: "go run ./examples/simulate " + strings.Join(sim, " ") + " -out /tmp/" + file,
				Args:     []string{"-model", m.Name, "-data", "TMP/" + file, "-time", budget.String()},
				Truth:    m.Params,
				RefNote:  "the simulation's parameters",
			})
		}
	}
	return cs
}

func joinParams(p []float64) string {
	s := make([]string, len(p))
	for i, v := range p {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

// defaultScalingBudget is -budget's default: each scaling fit's time
// budget.
const defaultScalingBudget = 10 * time.Minute

// scalingGrace is how long past its own time budget a fit may run before
// the runner stops it: Fit's preparation stops at the budget only between
// passes over the data, and one exact full-data pass of a long series
// takes a while (GARCH at T = 10⁶ with -time 3m0s stopped at 3 min 18 s).
const scalingGrace = 1.5

// runScaling runs the scaling cases and writes the page.
func runScaling(ctx context.Context, selected []testCase, tmp string, bin binaries, budget time.Duration, page string, stderr io.Writer) ([]result, error) {
	var results []result
	start := time.Now()
	for _, c := range selected {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		cctx, cancel := context.WithTimeout(ctx, time.Duration(scalingGrace*float64(budget)))
		res := runCase(cctx, c, tmp, bin, "", stderr)
		if res.Error != "" && cctx.Err() != nil && ctx.Err() == nil {
			res.Error = fmt.Sprintf("stopped after %s (%.1f × the fit's time budget %v): its preparation had not finished", wall(secs(res.Wall)), scalingGrace, budget)
		}
		cancel()
		os.Remove(filepath.Join(tmp, c.Name+".bin")) // 8 MB per 10⁶ observations
		results = append(results, res)
	}
	total := time.Since(start)
	if page == "" {
		return results, nil
	}
	fig := filepath.Join(filepath.Dir(page), "figures", "scaling.png")
	if err := scalingPlot(fig, results); err != nil {
		return results, err
	}
	if err := writeScalingPage(page, results, budget, total); err != nil {
		return results, err
	}
	fmt.Fprintf(stderr, "validate: wrote %s and %s\n", page, fig)
	return results, nil
}

// perESS is a result's wall seconds per effective draw (the smallest bulk
// or tail ESS), or NaN when the fit failed.
func perESS(r result) float64 {
	if r.Error != "" || !(r.Summary.MinESS > 0) {
		return math.NaN()
	}
	return r.Wall / r.Summary.MinESS
}

// scalingModelOf returns the model a scaling case belongs to.
func scalingModelOf(r result) string {
	name, _, _ := strings.Cut(r.Case, "-")
	return name
}

func writeScalingPage(path string, results []result, budget time.Duration, total time.Duration) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Cost against the length of the series\n\n")
	p("This page is written by one command, from the repository root:\n\n")
	flag := ""
	if budget != defaultScalingBudget {
		flag = " -budget " + budget.String()
	}
	p("```sh\ngo run ./examples/validate -scaling%s\n```\n\n", flag)
	p("Each model is simulated at every length with `examples/simulate` (seed 1) and fitted by\n")
	p("[examples/fit](../examples/fit/README.md) with its defaults and `-time %v` (the budget of the whole fit;\n", budget)
	p("a fit that reaches it while sampling stops with a warning, and the runner stops one whose preparation\n")
	p("is still running after %.1f times the budget). The cost of a calibrated posterior is the wall time of\n", scalingGrace)
	p("the whole `examples/fit` process divided by the smallest bulk or tail ESS over the parameters: seconds\n")
	p("per effective draw. Every 90%% interval should cover the value simulated from; a model's series share\n")
	p("their first rows (one simulation stream, seed 1), so their misses are not independent draws of the\n")
	p("interval's coverage, which simulation-based calibration over 100 series measures ([sbc.md](sbc.md)).\n\n")
	p("Wall times on a %s; the fits use every core.", hostLine())
	if c := commit(); c != "" {
		p(" Code: commit %s.", c)
	}
	p(" %d fits in %s.\n\n", len(results), wall(total))
	p("| model | T | wall | path | ESS ≥ | s per effective draw | R-hat ≤ | covered | warnings |\n")
	p("|---|---:|---:|---|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		if r.Error != "" {
			p("| %s | %s | %s | | | | | | %s |\n", scalingTitle(r), thousands(r.T), wall(secs(r.Wall)), mdEscape(r.Error))
			continue
		}
		s := r.Summary
		p("| %s | %s | %s | %s | %.0f | %.3g | %.3f | %d of %d | %d |\n", scalingTitle(r), thousands(r.T), wall(secs(r.Wall)),
			gradientName(r.Gradient), s.MinESS, perESS(r), s.MaxRhat, s.Covered, s.N, len(r.Warnings))
	}
	p("\n![seconds per effective draw against T](figures/scaling.png)\n\n")
	p("Growth between the shortest and the longest length each model finished (the slope of log cost per\n")
	p("effective draw against log T; 1 is cost proportional to T, 0 a cost that does not grow):\n\n")
	for _, m := range scalingModels {
		if g, ok := growth(results, m.Name); ok {
			p("- %s: %s\n", m.Title, g)
		}
	}
	p("\n## Warnings and failures\n\n")
	any := false
	for _, r := range results {
		if r.Error == "" && len(r.Warnings) == 0 && len(r.Problems) == 0 {
			continue
		}
		any = true
		p("### %s\n\n```sh\n%s\n%s\n```\n\n", r.Title, r.Setup, r.Command)
		if r.Error != "" {
			p("%s\n\n", r.Error)
		}
		for _, w := range r.Warnings {
			p("- %s\n", w)
		}
		if len(r.Problems) > 0 {
			p("\nOutside the targets: %s.\n\n", strings.Join(r.Problems, "; "))
		}
	}
	if !any {
		p("None.\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func scalingTitle(r result) string {
	m := scalingModelOf(r)
	for _, sm := range scalingModels {
		if sm.Name == m {
			return sm.Title
		}
	}
	return m
}

// growth describes how a model's cost per effective draw grew over the
// lengths it finished.
func growth(results []result, model string) (string, bool) {
	var pts [][2]float64
	for _, r := range results {
		if scalingModelOf(r) == model && !math.IsNaN(perESS(r)) {
			pts = append(pts, [2]float64{float64(r.T), perESS(r)})
		}
	}
	if len(pts) < 2 {
		return "", false
	}
	slices.SortFunc(pts, func(a, b [2]float64) int { return int(math.Copysign(1, a[0]-b[0])) })
	lo, hi := pts[0], pts[len(pts)-1]
	slope := math.Log(hi[1]/lo[1]) / math.Log(hi[0]/lo[0])
	return fmt.Sprintf("from T = %s to %s the cost per effective draw went from %.3g s to %.3g s (× %.3g for × %.3g in T; slope %.2f)",
		thousands(int(lo[0])), thousands(int(hi[0])), lo[1], hi[1], hi[1]/lo[1], hi[0]/lo[0], slope), true
}

// scalingPlot draws seconds per effective draw against T, log-log, one
// line per model over the lengths it finished.
func scalingPlot(path string, results []result) error {
	pl := plot.New()
	pl.Title.Text = "Cost of a calibrated posterior against the length of the series"
	pl.X.Label.Text = "T (observations)"
	pl.Y.Label.Text = "wall seconds per effective draw"
	pl.X.Scale, pl.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pl.X.Tick.Marker, pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	pl.Legend.Top, pl.Legend.Left = true, true
	drawn := 0
	for i, m := range scalingModels {
		var xy plotter.XYs
		for _, r := range results {
			if scalingModelOf(r) == m.Name && !math.IsNaN(perESS(r)) {
				xy = append(xy, plotter.XY{X: float64(r.T), Y: perESS(r)})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		pl.Add(l, pts)
		pl.Legend.Add(m.Title, l, pts)
		drawn++
	}
	if drawn == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return pl.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
