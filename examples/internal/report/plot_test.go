package report

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestKDESupport checks the density curves against a bounded support:
// draws of a parameter piled against its upper bound 1 (1 − |N(0, 0.01²)|)
// give a reflected estimate that stays inside [−1, 1], still integrates
// to about 1, and is highest at the bound; without a support the curve
// spans exactly the range of the draws.
func TestKDESupport(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 4000)
	for i := range x {
		x[i] = 1 - math.Abs(0.01*rng.NormFloat64())
	}
	lo, hi := slices.Min(x), slices.Max(x)
	xy := kde(x, lo, hi, 400, Support{Lo: -1, Hi: 1}, true)
	area := 0.0
	for i := 1; i < len(xy); i++ {
		area += 0.5 * (xy[i].Y + xy[i-1].Y) * (xy[i].X - xy[i-1].X)
	}
	if last := xy[len(xy)-1]; last.X != 1 || xy[0].X < -1 {
		t.Errorf("curve spans [%v, %v], want it to end at the bound 1", xy[0].X, last.X)
	}
	if math.Abs(area-1) > 0.02 {
		t.Errorf("reflected KDE integrates to %v", area)
	}
	if peak := slices.MaxFunc(xy, func(a, b plotter.XY) int { return cmpFloat(a.Y, b.Y) }); peak.X < 0.995 {
		t.Errorf("reflected KDE peaks at %v, want at the bound", peak.X)
	}
	free := kde(x, lo, hi, 100, Support{}, false)
	if free[0].X != lo || free[len(free)-1].X != hi {
		t.Errorf("unbounded curve spans [%v, %v], want the draws' [%v, %v]", free[0].X, free[len(free)-1].X, lo, hi)
	}
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

func TestTickLabels(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want string
	}{
		{[]float64{0.98, 0.99, 1}, "0.98 0.99 1.00"},
		{[]float64{0.7, 0.8, 0.9, 1, 1.1}, "0.7 0.8 0.9 1.0 1.1"},
		{[]float64{0, 5, 10}, "0 5 10"},
		{[]float64{-0.5, 0, 0.5}, "-0.5 0.0 0.5"},
		{[]float64{0.0012, 0.0016, 0.002}, "0.0012 0.0016 0.0020"},
		{[]float64{1e6, 2e6}, "1e+06 2e+06"},
		{[]float64{3}, "3"},
	} {
		if got := strings.Join(TickLabels(c.in), " "); got != c.want {
			t.Errorf("TickLabels(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	// Unlabelled ticks keep their marks but no text.
	for _, tk := range (Ticks{Unlabelled: true}).Ticks(0, 100) {
		if strings.TrimSpace(tk.Label) != "" {
			t.Errorf("unlabelled tick %v has label %q", tk.Value, tk.Label)
		}
	}
}

func TestDensitySupportErrors(t *testing.T) {
	dir := t.TempDir()
	names := []string{"phi", "sigma"}
	chains := [][]float64{{0.9, 0.2, 0.95, 0.3, 0.97, 0.25}}
	if err := DensityPNG(filepath.Join(dir, "a.png"), names, chains, Support{Lo: -1, Hi: 1}); err == nil {
		t.Error("one support for two parameters accepted")
	}
	if err := DensityPNG(filepath.Join(dir, "b.png"), names, chains, Support{Lo: -1, Hi: 0.96}, Support{Lo: 0, Hi: math.Inf(1)}); err == nil {
		t.Error("draws outside the support accepted")
	}
	if err := DensityPNG(filepath.Join(dir, "c.png"), names, chains, Support{Lo: -1, Hi: 1}, Support{Lo: 0, Hi: math.Inf(1)}); err != nil {
		t.Error(err)
	}
}
