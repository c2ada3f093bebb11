package sgmcmc

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// tilt is a known function of u_0 − m:
// c·e + ½d·e² + A·tanh(e/h) (A = 0: a quadratic).
type tilt struct{ c, d, m, A, h float64 }

// at returns the tilt and its derivative at u_0.
func (t tilt) at(u0 float64) (float64, float64) {
	e := u0 - t.m
	v, g := t.c*e+0.5*t.d*e*e, t.c+t.d*e
	if t.A != 0 {
		th := math.Tanh(e / t.h)
		v += t.A * th
		g += t.A / t.h * (1 - th*th)
	}
	return v, g
}

// tiltedLGSSM is the LGSSM whose "finer" log-likelihood differs from the
// exact one by the tilt, once per sequence.
type tiltedLGSSM struct {
	models.LGSSM
	tilt
}

func (m tiltedLGSSM) RefinedLogLik(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	ll, err := m.ExactScore(nil, u, seq, w)
	v, _ := m.at(u[0])
	return ll + v, err
}

// priorTiltedLGSSM is the LGSSM with the same tilt in its log prior: the
// refined target of tiltedLGSSM, with no discretisation to correct.
type priorTiltedLGSSM struct {
	models.LGSSM
	tilt
}

func (m priorTiltedLGSSM) LogPrior(grad, u []float64) float64 {
	lp := m.LGSSM.LogPrior(grad, u)
	v, g := m.at(u[0])
	if grad != nil {
		grad[0] += g
	}
	return lp + v
}

// TestDiscretisationCheck: a linear tilt c·u_0 of the log-likelihood moves
// a Gaussian posterior's mean by Σ c e_0, i.e. by c·Σ_i0/sd_i posterior sds
// in coordinate i; checkDiscretisation must report exactly that (the tilt
// is linear, so the central differences are exact), and the Posterior
// must warn when it exceeds 1 sd and not otherwise.
func TestDiscretisationCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	data := lgssmSimInternal(t)
	for _, c := range []float64{1, 60} {
		m := tiltedLGSSM{tilt: tilt{c: c}}
		f, err := newFit(m, data, FitSettings{Seed: 1, Gradient: FullGradient, Iterations: 200, KSDDraws: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		l, p := f.prep.Chol, f.dim
		if f.prep.dc == nil {
			t.Fatalf("c = %v: no discretisation correction", c)
		}
		got := f.prep.dc.Shift
		if len(got) != p {
			t.Fatalf("c = %v: DiscretisationShift %v", c, got)
		}
		for i := range p {
			var sii, si0 float64
			for j := 0; j <= i; j++ {
				sii += l[i*p+j] * l[i*p+j]
			}
			for j := 0; j <= min(i, 0); j++ {
				si0 += l[i*p+j] * l[j]
			}
			want := c * si0 / math.Sqrt(sii)
			if math.Abs(got[i]-want) > 1e-6*(1+math.Abs(want)) {
				t.Errorf("c = %v: shift[%d] = %.8g, want %.8g", c, i, got[i], want)
			}
		}
		post, err := f.sample(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(post.Warnings, " "), "exact only up to its discretisation")
		_, mx := argMaxAbs(got)
		t.Logf("c = %v: shift %.3f sd, warned %v", c, got, warned)
		if warned != (mx > discretisationMaxShift) {
			t.Errorf("c = %v: largest shift %.3f sd, warning %v: %q", c, mx, warned, post.Warnings)
		}
	}
}

// TestDiscretisationGARCHDAX: the models' own RefinedScorer and Coarsener
// (GARCH) on the DAX returns: the fit prepares on the coarser 7-point
// quadrature rule, corrected towards the 14-point rule by less than 0.5
// sd, samples it, and keeps the user's model for the Posterior.
func TestDiscretisationGARCHDAX(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	f, err := newFit(models.GARCH{}, daxInternal(t), FitSettings{Seed: 1, Gradient: FullGradient})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	// On DAX the fit samples GARCH's 7-point rule (level 1): its
	// correction moves the target by less than 0.5 sd (0.14 in λ); the
	// chains' model scores as GARCH at 7 points.
	dc := f.prep.dc
	_, mx := argMaxAbs(dc.Shift)
	t.Logf("GARCH on DAX: coarse %v, level %d, shift %.4f sd, model %+v", dc.Coarse, dc.Level, dc.Shift, f.model)
	seq := f.data.Sequences[0]
	got, err := f.model.(ssm.ExactScorer).ExactScore(nil, dc.Mode, seq, ssm.Full(seq.Len()))
	want, err2 := models.GARCH{Points: 7}.ExactScore(nil, dc.Mode, seq, ssm.Full(seq.Len()))
	if !dc.Coarse || dc.Level != 1 || len(dc.Shift) != 4 || mx > coarseMaxShift || err != nil || err2 != nil || got != want || f.user != (models.GARCH{}) {
		t.Errorf("GARCH on DAX: coarse %v, level %d, discretisation shift %v, chains' model %+v (log-likelihood %v, %v; 7 points' %v): want level 1 (7 points) with 4 shifts below %v sd",
			dc.Coarse, dc.Level, dc.Shift, f.model, got, err, want, coarseMaxShift)
	}
	// A fall-back to particle filters drops the correction and the
	// coarser model: both belong to the exact scorer.
	if !f.toParticles(context.Background(), errors.New("boom"), "adaptation") || f.prep.dc != nil || f.model != f.user {
		t.Errorf("after toParticles: correction %+v, chains' model %+v; want none and the user's", f.prep.dc, f.model)
	}
}

// coarseLGSSM is tiltedLGSSM with a coarser discretisation on offer: the
// same finer log-likelihood, an exact scorer off by bias.
type coarseLGSSM struct {
	tiltedLGSSM
	bias tilt
	// deeper, when set, is the bias of a coarser level still, which the
	// coarser model offers (coarsenedLGSSM.Coarsen).
	deeper *tilt
}

func (m coarseLGSSM) Coarsen() (ssm.Model, bool) { return coarsenedLGSSM(m), true }

// coarsenedLGSSM is coarseLGSSM's coarser model: its exact scorer carries
// the bias once per full window (the chains' full-data scores; its value
// and gradient are wrong on partial windows, which the test's fits do
// not use after the preparation).
type coarsenedLGSSM coarseLGSSM

// Coarsen implements ssm.Coarsener: the level with bias deeper, when set.
func (m coarsenedLGSSM) Coarsen() (ssm.Model, bool) {
	if m.deeper == nil {
		return nil, false
	}
	return coarsenedLGSSM{tiltedLGSSM: m.tiltedLGSSM, bias: *m.deeper}, true
}

func (m coarsenedLGSSM) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	ll, err := m.LGSSM.ExactScore(grad, u, seq, w)
	v, g := m.bias.at(u[0])
	if grad != nil {
		grad[0] += g
	}
	return ll + v, err
}

func (m coarsenedLGSSM) RefinedLogLik(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	return m.tiltedLGSSM.RefinedLogLik(u, seq, w)
}

// TestCoarser: a model offering a coarser discretisation (ssm.Coarsener)
// is sampled at it when that one's correction towards the finer scorer
// is below 0.5 sd, and the chains then sample the finer scorer's
// posterior through the coarse model and its own correction. The finer
// scorer is tilted by 0.3 z + ½(−0.2) z² along the first whitened axis,
// the coarse one by a linear bias: with bias 0.4 the coarse
// correction's slope is −0.1 (shift 0.08 sd), and the result must match
// a direct fit of the tilted posterior within 4 Monte Carlo SEs and
// ×[0.88, 1.14] in sd (chains on the coarse model with the fine model's
// correction would be 0.33 sd off); with bias −2 (slope 2.3) the model
// is kept as given. With a second, coarser level offered whose bias
// 2.5 e − ½·0.1 e² leaves the correction −2.2 z − ½·0.1 z² (exactly
// quadratic, so its leave-one-out error vanishes), the chains sample
// that level (2) and must match the direct fit alike, its posterior 2.2
// sds off the target before the correction; when that level's bias also
// carries 0.065·tanh(e/(0.4 sd)), its fit's leave-one-out error is 0.091
// nats, within quadMaxLOO but above quadMaxLOODeep, and the chains
// sample level 1. (The bias is concave: a
// convex one, ½·0.3 e² as first written, makes that level's posterior
// improper as φ → −1, where the LGSSM's likelihood stays bounded while
// the bias grows, and chains with random-walk steps wandered there.)
func TestCoarser(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	data := lgssmSimInternal(t)
	const sd0, m0 = 0.0729, 1.562
	tl := tilt{c: 0.3 / sd0, d: -0.2 / (sd0 * sd0), m: m0}
	set := FitSettings{Seed: 5, KSDDraws: -1, Gradient: FullGradient, MinIterations: -1}
	deeper := tilt{c: 2.5 / sd0, d: -0.1 / (sd0 * sd0), m: m0}
	wiggly := deeper
	wiggly.A, wiggly.h = 0.065, 0.4*sd0
	for _, c := range []struct {
		name   string
		bias   float64
		deeper *tilt
		level  int // 0: the model as given
	}{{"small correction", 0.4, nil, 1}, {"large correction", -2, nil, 0}, {"two levels", 0.4, &deeper, 2}, {"two levels, the deeper not polynomial", 0.4, &wiggly, 1}} {
		// The coarse model's correction has slope 0.3 − bias along the
		// first whitened axis.
		m := coarseLGSSM{tiltedLGSSM: tiltedLGSSM{tilt: tl}, bias: tilt{c: c.bias / sd0, m: m0}, deeper: c.deeper}
		pa, err := Fit(context.Background(), m, data, set)
		if err != nil {
			t.Fatal(err)
		}
		dc := pa.Preparation.dc
		t.Logf("%s: coarse %v, level %d, shift %.3f, residual %.3f ± %.3f", c.name, dc.Coarse, dc.Level, dc.Shift, dc.Residual, dc.ResidualSE)
		if dc.Coarse != (c.level > 0) || dc.Coarse && dc.Level != c.level || pa.model != ssm.Model(m) {
			t.Errorf("%s: coarse %v at level %d, want level %d; the Posterior's model %T", c.name, dc.Coarse, dc.Level, c.level, pa.model)
		}
		if c.level == 0 {
			continue
		}
		pb, err := Fit(context.Background(), priorTiltedLGSSM{tilt: tl}, data, set)
		if err != nil {
			t.Fatal(err)
		}
		if len(pa.Warnings)+len(pb.Warnings) > 0 {
			t.Errorf("%s: warnings %q, %q", c.name, pa.Warnings, pb.Warnings)
		}
		for i, a := range pa.Summary() {
			b := pb.Summary()[i]
			z := (a.Mean - b.Mean) / math.Hypot(a.MCSE, b.MCSE)
			ratio := a.SD / b.SD
			t.Logf("%s %s: coarse and corrected %.5f ± %.5f, tilted prior %.5f ± %.5f: z %.2f, sd ratio %.3f", c.name, a.Name, a.Mean, a.SD, b.Mean, b.SD, z, ratio)
			if math.Abs(z) > 4 || ratio < 0.88 || ratio > 1.14 || math.Abs(dc.Residual[i]) > 1e-6 {
				t.Errorf("%s %s: z %.2f, sd ratio %.3f, residual %.3g", c.name, a.Name, z, ratio, dc.Residual[i])
			}
		}
	}
}

// TestDiscretisationCorrection: the chains of a model whose finer scorer
// differs by a known tilt in u_0 must sample the tilted posterior as far
// as a quadratic along the whitened axes can represent it, and the check
// after sampling must measure what is left. Each case is compared with a
// fit of the model with that tilt in its prior and no correction (the
// finer scorer's posterior, sampled directly).
//
//   - "quadratic": a tilt c·e + ½d·e², e = u_0 − m, exactly quadratic
//     along the first whitened axis (L is lower triangular). It moves φ's
//     mean by 1.1/(1 + 0.4) ≈ 0.8 sd and shrinks its sd by 1/√1.4 ≈ 0.85;
//     the corrected chains must match the direct fit within 4 Monte Carlo
//     SEs of the means and ×[0.88, 1.14] (4 SEs at ESS ≈ 500) of the sds,
//     which a fit without the correction fails (z 7.8 for σ), and the
//     residual must vanish (the weights are constant).
//   - "tanh": A·tanh(e/h) with h a quarter of u_0's sd, nearly a step,
//     which the quadratic (fitted at ± one sd) turns into a slope of A:
//     the residual check must find the difference between the corrected
//     chains' means and the direct fit's, within 4 SEs (its own and the
//     two fits' Monte Carlo errors; it is 0.3–0.9 sd there) at all 24
//     draws, and the Posterior must warn.
func TestDiscretisationCorrection(t *testing.T) {
	longtest.Skip(t, "statistical test")
	t.Parallel() // a whole fit: it shares the cores with the other long fits
	data := lgssmSimInternal(t)
	// u_0's posterior sd and mode on these data (L_00 and u*_0 of the
	// untilted fit).
	const sd0, m0 = 0.0729, 1.562
	for _, c := range []struct {
		name string
		tilt tilt
	}{
		{"quadratic", tilt{c: 1.1 / sd0, d: -0.4 / (sd0 * sd0), m: m0}},
		{"tanh", tilt{m: m0, A: 1.5, h: sd0 / 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// 2,000 iterations per chain instead of the cheap chains'
			// 10,000 (cheapIters): an ESS of about 5,000 puts the sd
			// ratios' tolerance at 9 standard errors.
			set := FitSettings{Seed: 3, KSDDraws: -1, MinIterations: 2000}
			pa, err := Fit(context.Background(), tiltedLGSSM{tilt: c.tilt}, data, set)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := Fit(context.Background(), priorTiltedLGSSM{tilt: c.tilt}, data, set)
			if err != nil {
				t.Fatal(err)
			}
			dc := pa.Preparation.dc
			if dc == nil || dc.Residual == nil {
				t.Fatalf("%s: discretisation correction %+v", c.name, dc)
			}
			t.Logf("%s: tilt %.4f, curvature %.4f, shift %.3f sd, residual %.3f ± %.3f sd (%d draws)", c.name, dc.Tilt, dc.Curve, dc.Shift, dc.Residual, dc.ResidualSE, dc.Draws)
			// The check weighs 12 draws, and all 24 when those leave a
			// residual above 0.1 sd (tanh) or an SE above 0.05 sd.
			if want := map[string]int{"quadratic": 12, "tanh": 24}[c.name]; dc.Draws != want {
				t.Errorf("%s: residual checked at %d draws, want %d", c.name, dc.Draws, want)
			}
			if len(pb.Warnings) > 0 {
				t.Errorf("%s: warnings of the direct fit: %q", c.name, pb.Warnings)
			}
			for i, a := range pa.Summary() {
				b := pb.Summary()[i]
				z := (a.Mean - b.Mean) / math.Hypot(a.MCSE, b.MCSE)
				ratio := a.SD / b.SD
				t.Logf("%s %s: corrected %.5f ± %.5f, tilted prior %.5f ± %.5f: z %.2f, sd ratio %.3f (ESS %.0f, %.0f)", c.name, a.Name, a.Mean, a.SD, b.Mean, b.SD, z, ratio, a.BulkESS, b.BulkESS)
				switch c.name {
				case "quadratic":
					if math.Abs(z) > 4 || ratio < 0.88 || ratio > 1.14 {
						t.Errorf("%s %s: z %.2f, sd ratio %.3f", c.name, a.Name, z, ratio)
					}
					if math.Abs(dc.Residual[i]) > 1e-6 {
						t.Errorf("%s %s: residual %.3g, want 0", c.name, a.Name, dc.Residual[i])
					}
				case "tanh":
					want := (b.Mean - a.Mean) / a.SD
					se := math.Hypot(dc.ResidualSE[i], math.Hypot(a.MCSE, b.MCSE)/a.SD)
					t.Logf("%s %s: residual %.3f ± %.3f, chains differ by %.3f sd", c.name, a.Name, dc.Residual[i], dc.ResidualSE[i], want)
					if math.Abs(dc.Residual[i]-want) > 4*se {
						t.Errorf("%s %s: residual %.3f, the fits differ by %.3f sd (SE %.3f)", c.name, a.Name, dc.Residual[i], want, se)
					}
				}
			}
			warned := strings.Contains(strings.Join(pa.Warnings, " "), "correction falls short")
			if (c.name == "quadratic" && len(pa.Warnings) > 0) || (c.name == "tanh" && !warned) {
				t.Errorf("%s: warnings: %q", c.name, pa.Warnings)
			}
		})
	}
}

// lgssmSimInternal reads testdata/lgssm_sim.csv as a one-sequence data set.
func lgssmSimInternal(t *testing.T) ssm.Dataset { return testdataSet(t, "lgssm_sim.csv") }

// daxInternal reads testdata/dax_returns.csv as a one-sequence data set.
func daxInternal(t *testing.T) ssm.Dataset { return testdataSet(t, "dax_returns.csv") }

// testdataSet reads the one-column CSV testdata/name as a one-sequence
// data set.
func testdataSet(t *testing.T, name string) ssm.Dataset {
	t.Helper()
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return ssm.Dataset{Sequences: []ssm.Sequence{seq}}
}

// TestDiscretisationValid: a preparation read back from a checkpoint is
// refused (not a panic in the chains) when its correction has the wrong
// dimensions, a non-finite entry or a non-positive diagonal of L.
func TestDiscretisationValid(t *testing.T) {
	ok := func() *discretisation {
		return &discretisation{Mode: []float64{0, 1}, Chol: []float64{1, 0, 0.5, 2}, Tilt: []float64{0.1, 0}, Curve: []float64{0, -0.1}, DiscretisationReport: DiscretisationReport{Shift: []float64{0.1, 0.02}}}
	}
	var none *discretisation
	if !none.valid(2) || !ok().valid(2) {
		t.Fatal("nil or a well-formed correction refused")
	}
	for name, edit := range map[string]func(d *discretisation){
		"short mode":    func(d *discretisation) { d.Mode = d.Mode[:1] },
		"long L":        func(d *discretisation) { d.Chol = append(d.Chol, 0) },
		"NaN tilt":      func(d *discretisation) { d.Tilt[1] = math.NaN() },
		"Inf curvature": func(d *discretisation) { d.Curve[0] = math.Inf(1) },
		"zero diagonal": func(d *discretisation) { d.Chol[3] = 0 },
		"no shift":      func(d *discretisation) { d.Shift = nil },
	} {
		d := ok()
		edit(d)
		if d.valid(2) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestModelKey: the checkpoint fingerprint tells models apart by their
// settings when those print the same in every process (GARCH's Nodes, so
// that a resumed fit with other nodes does not reuse a preparation; a
// prior by value or behind a pointer), and by type alone when a function
// is inside.
func TestModelKey(t *testing.T) {
	a, b := modelKey(models.GARCH{}), modelKey(models.GARCH{Nodes: 128})
	if a == b || !strings.Contains(b, "Nodes:128") {
		t.Errorf("GARCH{} and GARCH{Nodes: 128}: keys %q and %q", a, b)
	}
	prior := models.DefaultGARCHPrior()
	p1, p2 := modelKey(models.GARCH{Prior: prior}), modelKey(models.GARCH{Prior: prior})
	if p1 != p2 {
		t.Errorf("the same model: keys %q and %q", p1, p2)
	}
	x, y, z := 1, 1, 2
	k1, k2, k3 := modelKey(ptrModel{p: &x}), modelKey(ptrModel{p: &y}), modelKey(ptrModel{p: &z})
	if k1 != k2 || k1 == k3 || !strings.Contains(k1, "p:&1") {
		t.Errorf("a model holding a pointer to 1, to another 1 and to 2: keys %q, %q and %q", k1, k2, k3)
	}
	q1, q2 := models.DefaultGARCHPrior(), models.DefaultGARCHPrior()
	q2.Marginals = slices.Clone(q2.Marginals) // not the package's own slice
	q2.Marginals[0] = models.Uniform{Lo: 0, Hi: 3}
	if modelKey(models.GARCH{Prior: &q1}) == modelKey(models.GARCH{Prior: &q2}) {
		t.Errorf("GARCH with priors by pointer that differ: the same key %q", modelKey(models.GARCH{Prior: &q1}))
	}
	if k := modelKey(fnModel{f: func() {}}); k != "sgmcmc.fnModel" {
		t.Errorf("a model holding a function: key %q, want its type alone", k)
	}
}

// fnModel is a model holding a function (no key but its type).
type fnModel struct {
	models.LGSSM
	f func()
}

// ptrModel is a model holding a pointer (printed as an address).
type ptrModel struct {
	models.LGSSM
	p *int
}

// endlessLGSSM is coarseLGSSM's coarser model that coarsens into itself
// without end: chooseCoarse measures at most maxCoarseLevels levels.
type endlessLGSSM struct{ coarsenedLGSSM }

func (m endlessLGSSM) Coarsen() (ssm.Model, bool) { return m, true }

type endlessCoarse struct{ coarseLGSSM }

func (m endlessCoarse) Coarsen() (ssm.Model, bool) {
	return endlessLGSSM{coarsenedLGSSM(m.coarseLGSSM)}, true
}

// TestCoarseLevelsBounded: a model whose coarser levels never end is
// measured at maxCoarseLevels of them, and (all being the same, with a
// small correction) sampled at the last.
func TestCoarseLevelsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	const sd0, m0 = 0.0729, 1.562
	tl := tilt{c: 0.3 / sd0, d: -0.2 / (sd0 * sd0), m: m0}
	m := endlessCoarse{coarseLGSSM{tiltedLGSSM: tiltedLGSSM{tilt: tl}, bias: tilt{c: 0.4 / sd0, m: m0}}}
	f, err := newFit(m, lgssmSimInternal(t), FitSettings{Seed: 5, Gradient: FullGradient})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if dc := f.prep.dc; dc == nil || !dc.Coarse || dc.Level != maxCoarseLevels {
		t.Errorf("discretisation %+v: want the coarser model at level %d", dc, maxCoarseLevels)
	}
}

// rowTiltedLGSSM is the LGSSM whose "finer" log-likelihood differs from
// the exact one by a(u₀ − m)(1 + y_t²/2) in every row, a difference that
// is a sum over the rows, as a discretisation error is.
type rowTiltedLGSSM struct {
	models.LGSSM
	a, m float64
}

func (r rowTiltedLGSSM) RefinedLogLik(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	ll, err := r.ExactScore(nil, u, seq, w)
	s := 0.0
	for _, y := range seq.Y[w.Start:w.End] {
		s += 1 + 0.5*y*y
	}
	return ll + r.a*(u[0]-r.m)*s, err
}

// TestDiscSubset: on data longer than 2·discObs the discretisation's
// log-likelihoods come from a subset, scaled up: the tilt of a row-wise
// difference is measured within 2% of its full-data value (the subset's
// sampling error of Σ y_t² over 10⁵ of 3·10⁵ rows is about 0.3%), and on
// shorter data the subset is the data.
func TestDiscSubset(t *testing.T) {
	const T = 300000
	data := simLGSSM(t, T, 9)
	m := rowTiltedLGSSM{a: 1e-5, m: 0.3}
	f, err := newFit(m, data, FitSettings{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sf := f.discSubset(); sf == f || sf.total > discObs*3/2 || sf.total < discObs/2 {
		t.Fatalf("discSubset: %d observations of %d, want about %d", sf.total, f.total, discObs)
	}
	u0, err := m.Params(0.9, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	sd := []float64{0.01, 0.02, 0.01}
	l := make([]float64, 9)
	for i, s := range sd {
		l[i*3+i] = s
	}
	dc, err := f.measureDiscretisation(context.Background(), m, m, u0, l)
	if err != nil {
		t.Fatal(err)
	}
	S := 0.0
	for _, y := range data.Sequences[0].Y {
		S += 1 + 0.5*y*y
	}
	want := m.a * sd[0] * S
	t.Logf("tilt %v, full-data value of the first %.4f", dc.Tilt, want)
	if math.Abs(dc.Tilt[0]-want) > 0.02*want {
		t.Errorf("tilt along u₀ %.4f, full-data value %.4f", dc.Tilt[0], want)
	}
	for k := 1; k < 3; k++ {
		if math.Abs(dc.Tilt[k]) > 1e-6 {
			t.Errorf("tilt along u_%d %.3g, want 0", k, dc.Tilt[k])
		}
	}
	short := simLGSSM(t, 2*discObs, 9)
	g, err := newFit(m, short, FitSettings{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if g.discSubset() != g {
		t.Error("discSubset took a subset of 2·discObs observations")
	}
}
