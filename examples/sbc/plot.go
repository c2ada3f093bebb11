package main

import (
	"fmt"
	"image/color"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	barColor  = color.RGBA{R: 30, G: 90, B: 200, A: 255}
	bandColor = color.RGBA{R: 210, G: 210, B: 210, A: 255}
	lineColor = color.RGBA{R: 180, G: 30, B: 40, A: 255}
)

// writePNG draws one panel per parameter: the rank histogram (bars over
// the ranks each bin holds), the 99% band of a bin's count under uniform
// ranks (grey) and the expected count (red line).
func writePNG(path string, rep *report) error {
	n := len(rep.Names)
	if n == 0 {
		return fmt.Errorf("no parameters to plot")
	}
	const panelW, panelH = 3.6 * vg.Inch, 3 * vg.Inch
	plots := make([][]*plot.Plot, 1)
	plots[0] = make([]*plot.Plot, n)
	w := float64(rep.L+1) / float64(rep.Bins)
	for i, name := range rep.Names {
		pr := rep.Params[name]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s: %s, p = %s", rep.Model, name, fmtNum(pr.P, "%.3g"))
		p.X.Label.Text = fmt.Sprintf("rank of the truth among %d draws", rep.L)
		if i == 0 {
			p.Y.Label.Text = fmt.Sprintf("replications (of %d ranked)", rep.Completed)
		}
		total := 0
		top := 0
		for _, c := range pr.Counts {
			total += c
			top = max(top, c)
		}
		lo, hi := binomialBand(total, rep.Bins)
		band, err := plotter.NewPolygon(plotter.XYs{{X: 0, Y: float64(lo)}, {X: float64(rep.L + 1), Y: float64(lo)},
			{X: float64(rep.L + 1), Y: float64(hi)}, {X: 0, Y: float64(hi)}})
		if err != nil {
			return err
		}
		band.Color = bandColor
		band.LineStyle.Width = 0
		p.Add(band)
		for b, c := range pr.Counts {
			x0, x1 := float64(b)*w, float64(b+1)*w
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: 0}, {X: x1, Y: 0}, {X: x1, Y: float64(c)}, {X: x0, Y: float64(c)}})
			if err != nil {
				return err
			}
			bar.Color = color.NRGBA{R: barColor.R, G: barColor.G, B: barColor.B, A: 150}
			bar.LineStyle.Color = barColor
			bar.LineStyle.Width = vg.Points(0.8)
			p.Add(bar)
		}
		e := float64(total) / float64(rep.Bins)
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: e}, {X: float64(rep.L + 1), Y: e}})
		if err != nil {
			return err
		}
		line.Color = lineColor
		line.Width = vg.Points(1.2)
		p.Add(line)
		p.X.Min, p.X.Max = 0, float64(rep.L+1)
		p.Y.Min, p.Y.Max = 0, float64(max(top, hi))*1.1+1
		plots[0][i] = p
	}
	img := vgimg.New(panelW*vg.Length(n), panelH)
	dc := draw.New(img)
	t := draw.Tiles{Rows: 1, Cols: n, PadX: vg.Millimeter, PadY: vg.Millimeter,
		PadTop: vg.Millimeter, PadBottom: vg.Millimeter, PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter}
	canvases := plot.Align(plots, t, dc)
	for i := range n {
		plots[0][i].Draw(canvases[0][i])
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
