package pf

import (
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// blocks scores win whole (lag 0, or a window too short for blocks) or in
// blocks after lag rows, adding the score to grad once every block is
// done, and records the number of blocks in l.
func (l *Laplace) blocks(grad []float64, k ssm.Kernel, ec ssm.EmissionCurvature, seq ssm.Sequence, win ssm.Window, sep bool, lag int) (float64, error) {
	w := &l.ws
	n := win.End - win.Start
	block := laplaceBlockLags * lag
	var gb []float64 // the blocks' scores, added to grad once all are done
	if grad != nil {
		gb = w.gb
		clear(gb)
	}
	if lag == 0 || n <= 2*(block+lag) {
		ll, err := l.window(gb, k, ec, seq, win, sep)
		if err != nil {
			return 0, err
		}
		l.Blocks = 1
		addTo(grad, gb)
		return ll, nil
	}
	// Blocks [c, e) of about block rows, each after the lag rows before it:
	// log p(y_{c:e} | y_{<c}) ≈ log p̂(y_{s:e}) − log p̂(y_{s:c}), s = c − lag.
	ll, nb := 0.0, 0
	for c := win.Start; c < win.End; {
		e := c + block
		if win.End-e < block/2 {
			e = win.End
		}
		s := max(win.Start, c-lag)
		v, err := l.window(gb, k, ec, seq, subWindow(win, s, e), sep)
		if err != nil {
			return 0, err
		}
		ll += v
		if c > win.Start {
			scaleBy(gb, -1)
			v, err := l.window(gb, k, ec, seq, subWindow(win, s, c), sep)
			if err != nil {
				return 0, err
			}
			scaleBy(gb, -1)
			ll -= v
		}
		nb++
		c = e
	}
	l.Blocks = nb
	addTo(grad, gb)
	return ll, nil
}

// laplaceLagTol is the size of ρ(F)^L below which the state at a block's
// start has forgotten where it was L rows before (the blocks' lag),
// laplaceMinLag the shortest lag, and laplaceBlockLags the length K of a
// block in lags.
const (
	laplaceLagTol    = 1e-3
	laplaceMinLag    = 16
	laplaceBlockLags = 4
)

// LaplaceLag returns the lag Laplace chooses for the blocks of a kernel
// with state dimension d: the least power of two L ≥ 16 with ρ^L ≤ 10⁻³,
// ρ = ‖F⁸‖^(1/8) a bound on the spectral radius of its transition matrix
// F; 0 (whole windows) when ρ ≥ 1 or the kernel is not an
// ssm.LinearGaussian. The lag changes with θ where ρ crosses a threshold,
// and the estimate with it, by about its own Monte Carlo error: a caller
// that needs an estimate smooth in θ fixes Laplace.Lag, e.g. to this
// value at a point near the posterior.
func LaplaceLag(k ssm.Kernel, d int) int {
	lg, ok := k.(ssm.LinearGaussian)
	if !ok || d <= 0 {
		return 0
	}
	d2 := d * d
	F := make([]float64, d2)
	lg.LinearGaussian(F, make([]float64, d), make([]float64, d2), make([]float64, d), make([]float64, d2))
	return lagOf(F, d, make([]float64, d2), make([]float64, d2))
}

// lagOf is LaplaceLag for F (d×d), with scratch a and b of d² each.
func lagOf(F []float64, d int, a, b []float64) int {
	copy(a, F[:d*d])
	for range 3 { // F⁸
		matMul(b, a, a, d)
		copy(a, b[:d*d])
	}
	nrm := 0.0
	for _, v := range a[:d*d] {
		nrm += v * v
	}
	rho := math.Pow(math.Sqrt(nrm), 1.0/8)
	if !(rho < 1) {
		return 0
	}
	need := math.Log(laplaceLagTol) / math.Log(rho)
	if need > 1<<24 {
		return 0
	}
	lag := laplaceMinLag
	for float64(lag) < need {
		lag *= 2
	}
	return lag
}

// subWindow returns the part [s, e) of win with its kept span and weights.
func subWindow(win ssm.Window, s, e int) ssm.Window {
	ks, ke := min(max(win.KeepStart, s), e), max(min(win.KeepEnd, e), s)
	if ks >= ke {
		return ssm.Window{Start: s, End: e, KeepStart: s, KeepEnd: s}
	}
	sub := ssm.Window{Start: s, End: e, KeepStart: ks, KeepEnd: ke}
	if win.Weights != nil {
		sub.Weights = win.Weights[ks-win.KeepStart : ke-win.KeepStart]
	}
	return sub
}

func addTo(dst, v []float64) {
	for j := range dst {
		dst[j] += v[j]
	}
}

func scaleBy(v []float64, a float64) {
	for j := range v {
		v[j] *= a
	}
}
