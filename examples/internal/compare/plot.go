package compare

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotMSE draws the MSE trace of natural parameter p for every method at
// its selected step size (log scale) against compute time and saves it as
// a PNG file. It needs a Result computed with Settings.Truth.
func PlotMSE(path string, r *Result, p int, title string) error {
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "compute time per chain (s)"
	pl.Y.Label.Text = fmt.Sprintf("MSE of posterior mean of %s", r.Names[p])
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pl.Legend.Top = false // curves fall from the top left
	lines := 0
	for i := range r.Methods {
		g := r.Methods[i].Selected()
		if g.MSE == nil {
			return fmt.Errorf("compare: no MSE trace (Settings.Truth unset)")
		}
		var xy plotter.XYs
		for t, v := range g.MSE[p] {
			if v > 0 && !math.IsInf(v, 0) {
				xy = append(xy, plotter.XY{X: g.Times[t], Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if err := addLine(pl, i, fmt.Sprintf("%s (eps=%g)", r.Methods[i].Name, g.Eps), xy); err != nil {
			return err
		}
		lines++
	}
	if lines == 0 {
		return fmt.Errorf("compare: nothing to plot for %s", r.Names[p])
	}
	return pl.Save(8*vg.Inch, 5*vg.Inch, path)
}

// PlotTrace draws natural parameter p of the first successful chain of every
// method at its selected step size against compute time and saves it as a
// PNG file.
func PlotTrace(path string, r *Result, p int, title string) error {
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "compute time (s)"
	pl.Y.Label.Text = r.Names[p]
	pl.Legend.Top = true
	for i := range r.Methods {
		g := r.Methods[i].Selected()
		for k := range g.Chains {
			c := &g.Chains[k]
			if c.Err != nil || c.Len() == 0 {
				continue
			}
			xy := make(plotter.XYs, c.Len())
			for j := range xy {
				xy[j] = plotter.XY{X: c.Time(j), Y: c.Natural(j)[p]}
			}
			if err := addLine(pl, i, fmt.Sprintf("%s (eps=%g)", r.Methods[i].Name, g.Eps), xy); err != nil {
				return err
			}
			break
		}
	}
	return pl.Save(8*vg.Inch, 5*vg.Inch, path)
}

func addLine(pl *plot.Plot, i int, name string, xy plotter.XYs) error {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i / 7)
	l.Width = vg.Points(1.2)
	pl.Add(l)
	pl.Legend.Add(name, l)
	return nil
}
