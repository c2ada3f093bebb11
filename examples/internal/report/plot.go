package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// maxLinePoints bounds the points drawn per chain in a trace panel: longer
// chains are drawn at a stride, which a picture a few hundred pixels wide
// cannot tell apart and which keeps the file small.
const maxLinePoints = 2000

// TracePNG writes a trace plot to path (a PNG file): one panel per
// parameter, stacked vertically, with one line per chain; the chains'
// legend is a row above the panels and the iteration axis is labelled on
// the bottom panel only. chains[c] is the row-major K_c×len(names) block of
// chain c; iters[c][k], when iters is non-nil, is the iteration of draw k
// and labels the x axis (the draw index is used otherwise).
func TracePNG(path string, names []string, chains [][]float64, iters [][]int) error {
	dim := len(names)
	if err := checkBlocks(names, chains); err != nil {
		return err
	}
	if iters != nil && len(iters) != len(chains) {
		return fmt.Errorf("report: %d iteration lists for %d chains", len(iters), len(chains))
	}
	var legend []LegendEntry
	plots := make([][]*plot.Plot, dim)
	for j, name := range names {
		p := plot.New()
		p.Y.Label.Text = name
		p.Y.Tick.Marker = Ticks{}
		if j == dim-1 {
			p.X.Label.Text = "iteration"
			p.X.Tick.Marker = Ticks{}
		} else {
			p.X.Tick.Marker = Ticks{Unlabelled: true}
		}
		for c, col := range Columns(chains, dim, j) {
			if len(col) == 0 {
				continue
			}
			stride := (len(col) + maxLinePoints - 1) / maxLinePoints
			xy := make(plotter.XYs, 0, len(col)/stride+1)
			for k := 0; k < len(col); k += stride {
				x := float64(k)
				if iters != nil {
					if len(iters[c]) != len(col) {
						return fmt.Errorf("report: chain %d has %d draws but %d iterations", c, len(col), len(iters[c]))
					}
					x = float64(iters[c][k])
				}
				xy = append(xy, plotter.XY{X: x, Y: col[k]})
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return fmt.Errorf("report: trace of %s, chain %d: %w", name, c, err)
			}
			l.Color = plotutil.Color(c)
			l.Width = vg.Points(0.6)
			p.Add(l)
			if j == 0 {
				legend = append(legend, LegendEntry{Label: fmt.Sprintf("chain %d", c), Thumbs: []plot.Thumbnailer{l}})
			}
		}
		plots[j] = []*plot.Plot{p}
	}
	// Every panel spans the same iterations.
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for _, row := range plots {
		xmin, xmax = math.Min(xmin, row[0].X.Min), math.Max(xmax, row[0].X.Max)
	}
	for _, row := range plots {
		row[0].X.Min, row[0].X.Max = xmin, xmax
	}
	f := Figure{Legend: legend, Panels: plots, Width: 8 * vg.Inch, Height: vg.Length(dim)*1.8*vg.Inch + 0.3*vg.Inch}
	return f.Save(path)
}

// Support is the range a parameter can take, such as [-1, 1] for an AR
// coefficient or [0, ∞) for a standard deviation: density curves are not
// drawn outside it, and a kernel density estimate is reflected at a finite
// bound so that it does not lose mass there.
type Support struct{ Lo, Hi float64 }

// DensityPNG writes a density plot to path (a PNG file): one panel per
// parameter, side by side, each with a normalised histogram of the pooled
// draws and a Gaussian kernel density estimate of each chain (bandwidth by
// Silverman's rule, 0.9·min(sd, IQR/1.34)·n^(−1/5)); the chains' legend is
// a row above the panels. chains is laid out as for TracePNG. support, if
// given, holds one Support per parameter; the curves are then reflected at
// finite bounds and clipped to them. Without it the curves span the range
// of the draws, which lies inside any parameter's support.
func DensityPNG(path string, names []string, chains [][]float64, support ...Support) error {
	dim := len(names)
	if err := checkBlocks(names, chains); err != nil {
		return err
	}
	if len(support) != 0 && len(support) != dim {
		return fmt.Errorf("report: %d supports for %d parameters", len(support), dim)
	}
	var legend []LegendEntry
	plots := [][]*plot.Plot{make([]*plot.Plot, dim)}
	for j, name := range names {
		p := plot.New()
		p.X.Label.Text = name
		p.Y.Label.Text = "density"
		p.X.Tick.Marker = Ticks{}
		p.Y.Tick.Marker = Ticks{}
		cols := Columns(chains, dim, j)
		var pooled []float64
		for _, col := range cols {
			pooled = append(pooled, col...)
		}
		if len(pooled) == 0 || !allFinite(pooled) {
			return fmt.Errorf("report: no finite draws of %s to plot", name)
		}
		sup := Support{Lo: math.Inf(-1), Hi: math.Inf(1)}
		if len(support) > 0 {
			sup = support[j]
		}
		lo, hi := slices.Min(pooled), slices.Max(pooled)
		if lo < sup.Lo || hi > sup.Hi {
			return fmt.Errorf("report: draws of %s in [%g, %g], outside its support [%g, %g]", name, lo, hi, sup.Lo, sup.Hi)
		}
		h, err := plotter.NewHist(plotter.Values(pooled), 40)
		if err != nil {
			return fmt.Errorf("report: histogram of %s: %w", name, err)
		}
		h.Normalize(1)
		h.LineStyle.Width = 0
		h.FillColor = color.Gray{Y: 210}
		p.Add(h)
		for c, col := range cols {
			if len(col) < 2 {
				continue
			}
			l, err := plotter.NewLine(kde(col, lo, hi, 200, sup, len(support) > 0))
			if err != nil {
				return fmt.Errorf("report: density of %s, chain %d: %w", name, c, err)
			}
			l.Color = plotutil.Color(c)
			l.Width = vg.Points(1)
			p.Add(l)
			if j == 0 {
				legend = append(legend, LegendEntry{Label: fmt.Sprintf("chain %d", c), Thumbs: []plot.Thumbnailer{l}})
			}
		}
		p.Y.Min = 0
		plots[0][j] = p
	}
	f := Figure{Legend: legend, Panels: plots, Width: vg.Length(dim) * 3 * vg.Inch, Height: 3.3 * vg.Inch}
	return f.Save(path)
}

// kde evaluates a Gaussian kernel density estimate of x at m points. With
// a known support (bounded), it spans [lo, hi] widened by three bandwidths
// and clipped to the support, and reflects the kernels at its finite
// bounds; otherwise it spans [lo, hi], the range of the draws.
func kde(x []float64, lo, hi float64, m int, sup Support, bounded bool) plotter.XYs {
	s := slices.Clone(x)
	slices.Sort(s)
	sd := stat.StdDev(s, nil)
	iqr := (quantile7(0.75, s) - quantile7(0.25, s)) / 1.34
	spread := sd
	if iqr > 0 {
		spread = math.Min(sd, iqr)
	}
	bw := 0.9 * spread * math.Pow(float64(len(s)), -0.2)
	if !(bw > 0) {
		bw = 1e-3 * math.Max(math.Abs(s[0]), 1) // constant draws: a narrow spike
	}
	if bounded {
		lo, hi = math.Max(lo-3*bw, sup.Lo), math.Min(hi+3*bw, sup.Hi)
	}
	if !(hi > lo) {
		lo, hi = lo-bw, hi+bw
	}
	norm := 1 / (float64(len(s)) * bw * math.Sqrt(2*math.Pi))
	// sum adds the kernels at t of the draws within 6 bandwidths (s is sorted).
	sum := func(t float64) float64 {
		k0, _ := slices.BinarySearch(s, t-6*bw)
		acc := 0.0
		for _, v := range s[k0:] {
			if v > t+6*bw {
				break
			}
			z := (t - v) / bw
			acc += math.Exp(-0.5 * z * z)
		}
		return acc
	}
	xy := make(plotter.XYs, m)
	for i := range xy {
		t := lo + (hi-lo)*float64(i)/float64(m-1)
		d := sum(t)
		if bounded && !math.IsInf(sup.Lo, 0) {
			d += sum(2*sup.Lo - t) // the draws mirrored at the lower bound
		}
		if bounded && !math.IsInf(sup.Hi, 0) {
			d += sum(2*sup.Hi - t)
		}
		xy[i] = plotter.XY{X: t, Y: d * norm}
	}
	return xy
}

// Ticks is a plot.Ticker that places ticks as plot.DefaultTicks does but
// writes every label of an axis with the same number of decimals (0.98,
// 0.99, 1.00 rather than 0.98, 0.99, 1), the fewest that tell them apart
// exactly. Unlabelled keeps the tick marks and drops the labels, for a
// panel whose axis is labelled on a neighbour.
type Ticks struct{ Unlabelled bool }

// Ticks implements plot.Ticker.
func (t Ticks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	var vals []float64
	for _, tk := range ticks {
		if tk.Label != "" {
			vals = append(vals, tk.Value)
		}
	}
	labels := TickLabels(vals)
	k := 0
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		ticks[i].Label = labels[k]
		if t.Unlabelled {
			ticks[i].Label = "" // a minor mark: the neighbouring panel has the labels
		}
		k++
	}
	return ticks
}

// TickLabels formats the values of an axis's labelled ticks with one
// number of decimals, the fewest (at most 8) that give each value to
// within a millionth of the smallest gap between them; magnitudes of 10⁶
// and more, or gaps below 10⁻⁸, use %g.
func TickLabels(vals []float64) []string {
	out := make([]string, len(vals))
	gap, big := math.Inf(1), 0.0
	for i, v := range vals {
		big = math.Max(big, math.Abs(v))
		if i > 0 {
			gap = math.Min(gap, math.Abs(v-vals[i-1]))
		}
	}
	if big >= 1e6 || gap < 1e-8 {
		for i, v := range vals {
			out[i] = strconv.FormatFloat(v, 'g', 4, 64)
		}
		return out
	}
	if math.IsInf(gap, 1) {
		gap = math.Max(big, 1)
	}
	dec := 0
	for ; dec < 8; dec++ {
		ok := true
		for _, v := range vals {
			r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', dec, 64), 64)
			if math.Abs(r-v) > 1e-6*gap {
				ok = false
				break
			}
		}
		if ok {
			break
		}
	}
	for i, v := range vals {
		out[i] = strconv.FormatFloat(v, 'f', dec, 64)
		if out[i] == "-"+strconv.FormatFloat(0, 'f', dec, 64) {
			out[i] = out[i][1:]
		}
	}
	return out
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

func checkBlocks(names []string, chains [][]float64) error {
	if len(names) == 0 {
		return fmt.Errorf("report: no parameter names")
	}
	for c, x := range chains {
		if len(x)%len(names) != 0 {
			return fmt.Errorf("report: chain %d holds %d values, not a multiple of %d parameters", c, len(x), len(names))
		}
	}
	return nil
}

// LegendEntry is one item of a Figure's legend: a label and the
// thumbnails (a line, a shaded band) drawn before it.
type LegendEntry struct {
	Label  string
	Thumbs []plot.Thumbnailer
}

// Figure is a grid of panels under an optional title and an optional
// legend laid out in one row, both outside the panels so that they never
// cover data.
type Figure struct {
	Title         string
	Legend        []LegendEntry
	Panels        [][]*plot.Plot
	Width, Height vg.Length
}

// Save draws the figure and writes it to path as PNG, creating the
// directory if needed.
func (f Figure) Save(path string) error {
	img := vgimg.New(f.Width, f.Height)
	dc := draw.New(img)
	defaults := plot.New()
	pad := vg.Millimeter * 2
	top := dc.Max.Y - pad
	if f.Title != "" {
		sty := defaults.Title.TextStyle
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: top}, f.Title)
		top -= sty.Height(f.Title) + pad
	}
	if len(f.Legend) > 0 {
		sty := defaults.Legend.TextStyle
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
		thumb := defaults.Legend.ThumbnailWidth
		em := sty.Width("m")
		h := sty.Height("Mg")
		total := vg.Length(0)
		for i, e := range f.Legend {
			if i > 0 {
				total += 2 * em
			}
			total += thumb + em/2 + sty.Width(e.Label)
		}
		x := (dc.Min.X+dc.Max.X)/2 - total/2
		descent := sty.FontExtents().Descent
		for _, e := range f.Legend {
			icon := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: x, Y: top - h}, Max: vg.Point{X: x + thumb, Y: top}}}
			for _, t := range e.Thumbs {
				t.Thumbnail(&icon)
			}
			x += thumb + em/2
			dc.FillText(sty, vg.Point{X: x, Y: top - h + descent}, e.Label)
			x += sty.Width(e.Label) + 2*em
		}
		top -= h + pad
	}
	body := draw.Crop(dc, 0, 0, 0, top-dc.Max.Y)
	t := draw.Tiles{
		Rows: len(f.Panels), Cols: len(f.Panels[0]),
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 1, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4,
	}
	canvases := plot.Align(f.Panels, t, body)
	for r := range f.Panels {
		for c, p := range f.Panels[r] {
			p.Draw(canvases[r][c])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// savePanels draws a grid of plots on one canvas of the given size and
// writes it to path as PNG, creating the directory if needed.
func savePanels(path string, plots [][]*plot.Plot, width, height vg.Length) error {
	return Figure{Panels: plots, Width: width, Height: height}.Save(path)
}
