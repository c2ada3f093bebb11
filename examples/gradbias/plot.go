package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
)

// The paper's colours for Figure 4, and a palette for particle counts.
var (
	methodColor = map[string]color.Color{
		"no buffer":  color.RGBA{R: 230, G: 120, B: 0, A: 255},
		"buffer":     color.RGBA{R: 30, G: 90, B: 200, A: 255},
		"buffer B=T": color.RGBA{R: 180, G: 30, B: 40, A: 255},
		"full":       color.RGBA{R: 30, G: 140, B: 60, A: 255},
	}
	nPalette = []color.Color{
		color.RGBA{R: 230, G: 120, B: 0, A: 255},
		color.RGBA{R: 30, G: 90, B: 200, A: 255},
		color.RGBA{R: 30, G: 140, B: 60, A: 255},
		color.RGBA{R: 140, G: 60, B: 170, A: 255},
		color.RGBA{R: 120, G: 120, B: 120, A: 255},
	}
	black = color.RGBA{A: 255}
)

// errPoints are the points of a curve with asymmetric error bars, in the
// form plotter.NewYErrorBars takes.
type errPoints struct {
	x, y, lo, hi []float64
}

func (e errPoints) Len() int                        { return len(e.x) }
func (e errPoints) XY(i int) (float64, float64)     { return e.x[i], e.y[i] }
func (e errPoints) YError(i int) (float64, float64) { return e.y[i] - e.lo[i], e.hi[i] - e.y[i] }

// series is one curve ready to draw: |bias| with its 95% interval.
type series struct {
	label  string
	col    color.Color
	dashed bool
	x      []float64
	abs    []float64 // |bias|
	hw     []float64 // 95% half-width
}

// panelData is one panel: a model's curves in one figure.
type panelData struct {
	title, xlabel string
	logX          bool
	xticks        []float64 // nil: default ticks
	truthHW       float64   // 95% half-width of a Monte Carlo ground truth (0: exact)
	series        []series
	ylabel        string // "" means |bias|
	// tight puts the bottom of the y axis at half the smallest interval
	// end instead of 10^-3 of the largest (for MSE curves, all positive).
	tight bool
}

// drawFigures writes the PNG figures of the computed curves.
func drawFigures(o options, st *study, curves []curve, cfgs []config, res []result, truths map[string]truth) error {
	nColor := func(N int) color.Color {
		if N == 0 {
			return black
		}
		i := slices.Index(o.Ns, N)
		return nPalette[i%len(nPalette)]
	}
	mk := func(cv curve, xs func(p curvePoint) float64) series {
		s := series{label: cv.label()}
		for _, p := range cv.Pts {
			r := res[p.Cfg]
			s.x = append(s.x, xs(p))
			s.abs = append(s.abs, math.Abs(r.Mean-truths[cv.Model].Value))
			s.hw = append(s.hw, r.HalfWidth)
		}
		return s
	}
	atX := func(p curvePoint) float64 { return p.X }
	// rms is the per-subsequence RMS bias of a curve (no error bar).
	rms := func(cv curve) series {
		s := series{label: cv.label(), col: nColor(cv.N)}
		for _, p := range cv.Pts {
			s.x = append(s.x, p.X)
			s.abs = append(s.abs, res[p.Cfg].CondRMS)
			s.hw = append(s.hw, 0)
		}
		return s
	}
	title := func(name string) string {
		return fmt.Sprintf("%s, d/d%s", map[string]string{"lgssm": "LGSSM", "svm": "SVM", "garch": "GARCH"}[name], st.Specs[name].Param)
	}
	truthHW := func(name string) float64 { return 1.96 * truths[name].SE }
	for _, fig := range o.Figs {
		var rows [][]panelData
		switch fig {
		case 2:
			var row []panelData
			for _, name := range o.Models {
				pd := panelData{title: title(name) + fmt.Sprintf(", S = %d", o.S), xlabel: "buffer size B", truthHW: truthHW(name)}
				for _, cv := range curves {
					if cv.Figure == 2 && cv.Model == name {
						s := mk(cv, atX)
						s.col = nColor(cv.N)
						pd.series = append(pd.series, s)
					}
				}
				row = append(row, pd)
			}
			rows = append(rows, row)
		case 3:
			var row []panelData
			for _, name := range o.Models {
				pd := panelData{title: title(name) + fmt.Sprintf(", B = 0 / %d", st.Specs[name].Buffer),
					xlabel: "subsequence size S", logX: true, xticks: intsToFloats(o.Ss), truthHW: truthHW(name)}
				for _, cv := range curves {
					if cv.Figure == 3 && cv.Model == name {
						s := mk(cv, atX)
						s.col = nColor(cv.N)
						s.dashed = cv.Method == "no buffer"
						pd.series = append(pd.series, s)
					}
				}
				row = append(row, pd)
			}
			rows = append(rows, row)
		case 4:
			var top, bottom []panelData
			for _, name := range o.Models {
				t := panelData{title: title(name) + fmt.Sprintf(", S = %d, B = %d", o.S, st.Specs[name].Buffer),
					xlabel: "particles N", logX: true, xticks: intsToFloats(o.N4), truthHW: truthHW(name)}
				b := panelData{title: title(name), xlabel: "seconds per gradient", logX: true, truthHW: truthHW(name)}
				for _, cv := range curves {
					if cv.Figure == 4 && cv.Model == name {
						s := mk(cv, atX)
						s.label = methodLabel(cv.Method)
						s.col = methodColor[cv.Method]
						t.series = append(t.series, s)
						sb := mk(cv, func(p curvePoint) float64 { return res[p.Cfg].SecPerGrad })
						sb.label = s.label
						sb.col = s.col
						b.series = append(b.series, sb)
					}
				}
				top = append(top, t)
				bottom = append(bottom, b)
			}
			rows = append(rows, top, bottom)
		}
		name := map[int]string{2: "fig2_vary_B.png", 3: "fig3_vary_S.png", 4: "fig4_vary_N.png"}[fig]
		if err := drawGrid(filepath.Join(o.Out, name), rows); err != nil {
			return fmt.Errorf("figure %d: %w", fig, err)
		}
	}
	// The LGSSM's exact (N = ∞) per-subsequence RMS bias, the quantity the
	// paper's bound controls, against B and against S.
	var row []panelData
	for _, fig := range o.Figs {
		if fig == 4 || !slices.Contains(o.Models, "lgssm") {
			continue
		}
		pd := panelData{title: fmt.Sprintf("LGSSM d/dphi, N=inf, per-subsequence RMS bias, S = %d", o.S), xlabel: "buffer size B"}
		if fig == 3 {
			pd = panelData{title: fmt.Sprintf("LGSSM d/dphi, N=inf, per-subsequence RMS bias, B = 0 / %d", st.Specs["lgssm"].Buffer),
				xlabel: "subsequence size S", logX: true, xticks: intsToFloats(o.Ss)}
		}
		for _, cv := range curves {
			if cv.Figure == fig && cv.Model == "lgssm" && !math.IsNaN(res[cv.Pts[0].Cfg].CondRMS) {
				s := rms(cv)
				s.dashed = cv.Method == "no buffer"
				pd.series = append(pd.series, s)
			}
		}
		if len(pd.series) > 0 {
			row = append(row, pd)
		}
	}
	if len(row) > 0 {
		if err := drawGrid(filepath.Join(o.Out, "lgssm_per_subsequence.png"), [][]panelData{row}); err != nil {
			return fmt.Errorf("per-subsequence figure: %w", err)
		}
	}
	return nil
}

func intsToFloats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// drawGrid draws the panels (rows × columns) into one PNG file.
func drawGrid(path string, rows [][]panelData) error {
	const panelW, panelH = 4.2 * vg.Inch, 3.4 * vg.Inch
	nr, nc := len(rows), 0
	for _, r := range rows {
		nc = max(nc, len(r))
	}
	plots := make([][]*plot.Plot, nr)
	for i, r := range rows {
		plots[i] = make([]*plot.Plot, nc)
		for j, pd := range r {
			p, err := makePanel(pd)
			if err != nil {
				return err
			}
			plots[i][j] = p
		}
	}
	img := vgimg.New(vg.Length(nc)*panelW, vg.Length(nr)*panelH)
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: nr, Cols: nc, PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// makePanel draws |bias| on a log axis with 95% error bars. Values and
// interval ends below a floor (10^-3 of the panel's largest upper end) are
// drawn on the floor: an interval reaching it contains zero or a bias
// too small to show.
func makePanel(pd panelData) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pd.title
	p.X.Label.Text = pd.xlabel
	p.Y.Label.Text = "|bias|"
	if pd.ylabel != "" {
		p.Y.Label.Text = pd.ylabel
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	if pd.logX {
		p.X.Scale = plot.LogScale{}
		if pd.xticks != nil {
			var ts []plot.Tick
			for _, x := range pd.xticks {
				ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
			}
			p.X.Tick.Marker = plot.ConstantTicks(ts)
		} else {
			p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		}
	}
	top := pd.truthHW
	for _, s := range pd.series {
		for i := range s.abs {
			top = math.Max(top, s.abs[i]+s.hw[i])
		}
	}
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	floor := top * 1e-3
	if pd.tight {
		floor = math.Inf(1)
		for _, s := range pd.series {
			for i := range s.abs {
				if lo := s.abs[i] - s.hw[i]; lo > 0 {
					floor = math.Min(floor, lo/2)
				}
				floor = math.Min(floor, s.abs[i]/2)
			}
		}
		floor = math.Max(floor, top*1e-6)
	}
	clamp := func(v float64) float64 { return math.Max(v, floor) }
	p.Y.Min, p.Y.Max = floor, top*6 // headroom for the legend
	p.Add(plotter.NewGrid())
	if pd.truthHW > 0 {
		// Biases below this level are within the ground truth's own error.
		f := plotter.NewFunction(func(float64) float64 { return math.Max(pd.truthHW, floor) })
		f.Color = color.RGBA{R: 110, G: 110, B: 110, A: 255}
		f.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(f)
		p.Legend.Add("truth 95% error", f)
	}
	for _, s := range pd.series {
		e := errPoints{}
		for i := range s.x {
			if !(s.x[i] > 0) && pd.logX {
				continue
			}
			e.x = append(e.x, s.x[i])
			e.y = append(e.y, clamp(s.abs[i]))
			e.lo = append(e.lo, clamp(s.abs[i]-s.hw[i]))
			e.hi = append(e.hi, clamp(s.abs[i]+s.hw[i]))
		}
		l, sc, err := plotter.NewLinePoints(e)
		if err != nil {
			return nil, err
		}
		l.Color = s.col
		l.Width = vg.Points(1.2)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		sc.GlyphStyle.Color = s.col
		sc.GlyphStyle.Radius = vg.Points(2)
		eb, err := plotter.NewYErrorBars(e)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Color = s.col
		eb.CapWidth = vg.Points(4)
		p.Add(l, sc, eb)
		label := s.label
		if s.dashed && !strings.HasPrefix(label, "No Buffer") {
			label += " (B=0)"
		}
		p.Legend.Add(label, l, sc)
	}
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p, nil
}

// smootherColor is the colour of a smoother's curve (the appendix figure's
// blue, red and green for the naive PF, PaRIS and Poyiadjis O(N²)).
var smootherColor = map[pf.Smoother]color.Color{
	pf.Ancestral:   methodColor["buffer"],
	pf.PaRIS:       methodColor["buffer B=T"],
	pf.ForwardOnly: methodColor["full"],
	pf.Shrinkage:   methodColor["no buffer"],
}

// drawSmoothers writes the smoother study's figure: per model (columns) the
// particle MSE E[(g^PF − ĝ(S,B))²] (top) and the MSE of one stochastic
// gradient E[(g^PF − g)²] (bottom) against the seconds per gradient, one
// line per smoother, log-log, with error bars of one standard error.
func drawSmoothers(path string, o options, st *study, rows []smootherRow, refs map[string]smootherRef) error {
	var top, bottom []panelData
	for _, name := range o.Models {
		ref := refs[name]
		title := fmt.Sprintf("%s d/d%s, S = %d, B = %d", strings.ToUpper(name), st.Specs[name].Param, ref.S, ref.B)
		t := panelData{title: title + ": particle error", xlabel: "CPU seconds per gradient", logX: true, ylabel: "MSE vs exact g(S,B) of the window (± SE)", tight: true}
		b := panelData{title: title + ": one stochastic gradient", xlabel: "CPU seconds per gradient", logX: true, ylabel: "MSE vs full-data g (± SE)", tight: true}
		for _, sm := range o.Smoothers {
			sp := series{label: sm.String(), col: smootherColor[sm]}
			sb := sp
			for _, r := range rows {
				if r.Model != name || r.Smoother != sm {
					continue
				}
				sp.x, sp.abs, sp.hw = append(sp.x, r.Sec), append(sp.abs, r.PMSE), append(sp.hw, r.PMSESE)
				sb.x, sb.abs, sb.hw = append(sb.x, r.Sec), append(sb.abs, r.SGMSE), append(sb.hw, r.SGMSESE)
			}
			if len(sp.x) > 0 {
				t.series = append(t.series, sp)
				b.series = append(b.series, sb)
			}
		}
		top = append(top, t)
		bottom = append(bottom, b)
	}
	return drawGrid(path, [][]panelData{top, bottom})
}
