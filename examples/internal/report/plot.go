package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

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
// parameter, stacked vertically, with one line per chain. chains[c] is the
// row-major K_c×len(names) block of chain c; iters[c][k], when iters is
// non-nil, is the iteration of draw k and labels the x axis (the draw index
// is used otherwise).
func TracePNG(path string, names []string, chains [][]float64, iters [][]int) error {
	dim := len(names)
	if err := checkBlocks(names, chains); err != nil {
		return err
	}
	if iters != nil && len(iters) != len(chains) {
		return fmt.Errorf("report: %d iteration lists for %d chains", len(iters), len(chains))
	}
	plots := make([][]*plot.Plot, dim)
	for j, name := range names {
		p := plot.New()
		p.Y.Label.Text = name
		if j == dim-1 {
			p.X.Label.Text = "iteration"
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
				p.Legend.Add(fmt.Sprintf("chain %d", c), l)
			}
		}
		if j == 0 {
			// Headroom above the lines for the legend.
			p.Legend.Top = true
			p.Legend.TextStyle.Font.Size = vg.Points(8)
			p.Y.Max += 0.6 * (p.Y.Max - p.Y.Min)
		}
		plots[j] = []*plot.Plot{p}
	}
	return savePanels(path, plots, 8*vg.Inch, vg.Length(dim)*2*vg.Inch)
}

// DensityPNG writes a density plot to path (a PNG file): one panel per
// parameter, side by side, each with a normalised histogram of the pooled
// draws and a Gaussian kernel density estimate of each chain (bandwidth by
// Silverman's rule, 0.9·min(sd, IQR/1.34)·n^(−1/5)); the legend is in the
// last panel. chains is laid out as for TracePNG.
func DensityPNG(path string, names []string, chains [][]float64) error {
	dim := len(names)
	if err := checkBlocks(names, chains); err != nil {
		return err
	}
	plots := [][]*plot.Plot{make([]*plot.Plot, dim)}
	for j, name := range names {
		p := plot.New()
		p.X.Label.Text = name
		if j == 0 {
			p.Y.Label.Text = "density"
		}
		cols := Columns(chains, dim, j)
		var pooled []float64
		for _, col := range cols {
			pooled = append(pooled, col...)
		}
		if len(pooled) == 0 || !allFinite(pooled) {
			return fmt.Errorf("report: no finite draws of %s to plot", name)
		}
		h, err := plotter.NewHist(plotter.Values(pooled), 40)
		if err != nil {
			return fmt.Errorf("report: histogram of %s: %w", name, err)
		}
		h.Normalize(1)
		h.LineStyle.Width = 0
		h.FillColor = color.Gray{Y: 210}
		p.Add(h)
		lo, hi := slices.Min(pooled), slices.Max(pooled)
		for c, col := range cols {
			if len(col) < 2 {
				continue
			}
			l, err := plotter.NewLine(kde(col, lo, hi, 200))
			if err != nil {
				return fmt.Errorf("report: density of %s, chain %d: %w", name, c, err)
			}
			l.Color = plotutil.Color(c)
			l.Width = vg.Points(1)
			p.Add(l)
			if j == dim-1 {
				p.Legend.Add(fmt.Sprintf("chain %d", c), l)
			}
		}
		p.Legend.Top = true
		p.Legend.TextStyle.Font.Size = vg.Points(8)
		plots[0][j] = p
	}
	return savePanels(path, plots, vg.Length(dim)*3*vg.Inch, 3*vg.Inch)
}

// kde evaluates a Gaussian kernel density estimate of x at m points
// spanning [lo, hi] widened by three bandwidths.
func kde(x []float64, lo, hi float64, m int) plotter.XYs {
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
	lo, hi = lo-3*bw, hi+3*bw
	norm := 1 / (float64(len(s)) * bw * math.Sqrt(2*math.Pi))
	xy := make(plotter.XYs, m)
	for i := range xy {
		t := lo + (hi-lo)*float64(i)/float64(m-1)
		sum := 0.0
		// Only draws within 6 bandwidths matter; s is sorted.
		k0, _ := slices.BinarySearch(s, t-6*bw)
		for _, v := range s[k0:] {
			if v > t+6*bw {
				break
			}
			z := (t - v) / bw
			sum += math.Exp(-0.5 * z * z)
		}
		xy[i] = plotter.XY{X: t, Y: sum * norm}
	}
	return xy
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

// savePanels draws a grid of plots on one canvas of the given size and
// writes it to path as PNG, creating the directory if needed.
func savePanels(path string, plots [][]*plot.Plot, width, height vg.Length) error {
	img := vgimg.New(width, height)
	dc := draw.New(img)
	t := draw.Tiles{
		Rows: len(plots), Cols: len(plots[0]),
		PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4,
	}
	canvases := plot.Align(plots, t, dc)
	for r := range plots {
		for c, p := range plots[r] {
			p.Draw(canvases[r][c])
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
