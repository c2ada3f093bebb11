package sgmcmc

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// A coarser model (ssm.Coarsener) is judged on one design of points
// around the preparation's mode u*, in whitened coordinates
// z = L⁻¹(u − u*) (linalg.QuadDesign): the finer scorer once per point, and
// every coarser level's exact scorer (GARCH's default quadrature filter
// offers one: its 7-point rule, refined towards 14 points; the σ² node
// filter, when it was GARCH's default, offered two: 32 nodes, then 24,
// both refined by Richardson's extrapolation from 32 and 64). For each level
// the difference r = ℓ_refined − ℓ_level is fitted by a quadratic with
// cubes along the axes, c + a·z + ½ zᵀBz + Σ d_k z_k³ (least squares;
// linalg.FitQuad), whose leave-one-out errors say how well it represents r out
// to 3 sds. At GARCH's 7 quadrature points on the DAX returns the design's
// leave-one-out error is 0.016 nats (31 points; go run ./examples/fit
// -model garch -v). The rest of this paragraph was measured with the σ²
// node filter (GARCH{Nodes: n}) when it was the default: on the DAX returns r
// varied by 0.41 nats (sd over 119 posterior draws) at 32 nodes; a
// quadratic fitted within 1.5 sds left 0.02–0.04 nats and mean shifts
// from the 128-node posterior of at most 0.004 posterior sds (offline),
// where the diagonal quadratic of measureDiscretisation left 0.06 nats
// and 0.03 sd. The design's leave-one-out error was 0.019 nats.
//
// With the σ² node filter, 16 nodes (a pass of 19 ms against 48 at 32)
// were tried as a second level and left out: on DAX r varied by 1.8 nats
// there and a quadratic within 1.5 sds left 0.06–0.11 nats near the
// mode, but it missed r by up to 0.72 nats at ±3 sds (1.5 on a simulated
// series), and with or without the cubes the corrected 16-node chains
// narrowed μ's posterior sd by 11–17% on a simulated series (T = 2000)
// while the DAX fits came out right in 33–48 s. At 10 nodes the coarse
// filter itself had spurious modes far out (three of six DAX fits
// broke).

// quadTrust is the whitened radius beyond which a fitted correction's
// curved part is held at its value on the sphere (discretised): the fit
// rests on points within linalg.QuadFar, and farther out its curvature need not
// hold, where a positive one could lift the coarse model's tail (16-node
// GARCH chains, on the σ² node filter, ran to φ far below its posterior
// without it).
const quadTrust = 4.0

// quadMaxLOO is the largest root-mean-square leave-one-out error (nats)
// of a level's fit for which the chains sample that level (GARCH on DAX:
// 0.016 at the default's 7 quadrature points, go run ./examples/fit
// -model garch -v; measured with the σ² node filter, 0.019 at 32 nodes,
// 0.158 at 16, and 0.233 on a simulated series where 16 nodes narrowed
// μ). A residual of this sd over the posterior moves a mean by at most as
// many posterior sds (its covariance with z), which the check after
// sampling then measures.
const quadMaxLOO = 0.15

// quadMaxLOODeep is quadMaxLOO for a deeper level, which only buys
// speed. GARCH's quadrature filter has no deeper level (its 7-point rule
// is not coarsened again); the bound was set on the σ² node filter, whose
// default had one: GARCH at 24 nodes fitted to 0.033 nats on DAX, and the
// draws checked after sampling left the means within 0.09 sd of the
// finer scorer's posterior over eight seeds; on a simulated series
// (T = 2000) it fitted to 0.082 nats and left μ's mean 0.14 ± 0.03 sd off
// (32 nodes there: 0.038 nats, 0.02 sd).
const quadMaxLOODeep = 0.05

// coarseMaxTilt is the largest whitened slope |a_k| (nats per posterior
// sd) of a deeper level's correction: the fit then carries the level's
// posterior less than about this many sds to the target's.
const coarseMaxTilt = 3.0

// maxCoarseLevels bounds the coarser levels chooseCoarse measures (a
// model whose Coarsen never says no must not loop).
const maxCoarseLevels = 4

// chooseCoarse decides, for a model on trial at its coarser
// discretisation (tryCoarser; the preparation ran there), at which level
// the chains sample: the deepest whose fitted quadratic is valid, or the
// model as given (retry). Level 1 (the model on trial) is valid when its
// correction moves no mean by more than coarseMaxShift, keeps the target
// proper with curvatures at most discretisationMaxCurve, and its
// leave-one-out error is at most quadMaxLOO; it also gives the target's
// Gaussian approximation (the preparation's Laplace approximation times
// its correction), which the importance sampling starts from. A deeper
// level (the model on trial coarsened again) is valid, given level 1,
// when its own fit's leave-one-out error is at most quadMaxLOODeep, its
// slopes at most coarseMaxTilt and its curvatures at most
// discretisationMaxCurve.
func (f *fit) chooseCoarse(ctx context.Context, rs ssm.RefinedScorer, u0, l []float64) (retry bool, err error) {
	p := f.dim
	levels := []ssm.Model{f.model}
	for len(levels) < maxCoarseLevels {
		cs, ok := levels[len(levels)-1].(ssm.Coarsener)
		if !ok {
			break
		}
		c, ok := cs.Coarsen()
		if !ok {
			break
		}
		if _, ok := c.(ssm.ExactScorer); !ok {
			break
		}
		levels = append(levels, c)
	}
	zs := linalg.QuadDesign(p)
	pts := make([][]float64, len(zs))
	for i, z := range zs {
		pts[i] = linalg.LMul(u0, l, z)
	}
	fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
	if err != nil {
		return false, err
	}
	fits := make([]*linalg.QuadFit, len(levels))
	for i, m := range levels {
		base, err := f.fullLogLiks(ctx, pts, exactLogLik(m.(ssm.ExactScorer)))
		if err != nil {
			return false, err
		}
		r := make([]float64, len(pts))
		for j := range r {
			r[j] = fine[j] - base[j]
		}
		if fits[i], err = linalg.FitQuad(zs, r); err != nil {
			return false, fmt.Errorf("sgmcmc: discretisation check: %w", err)
		}
	}
	q0 := fits[0]
	zs0, c0, err := linalg.GaussianTimes(q0.A, q0.B)
	var shift []float64
	mx := math.Inf(1)
	if err == nil {
		shift = linalg.LMul(make([]float64, p), l, zs0)
		for i, sd := range cholSD(l, p) {
			shift[i] /= sd
		}
		_, mx = argMaxAbs(shift)
	}
	if err != nil || !firstLevelValid(mx, q0, p) {
		f.log("the model's coarser discretisation is not used: its correction would move a mean by %.2f posterior sds (at most %.1f), its quadratic's leave-one-out error is %.3f nats (at most %.2f) or its largest curvature %.3f (at most %.1f); preparing the model as given",
			mx, coarseMaxShift, q0.LOO, quadMaxLOO, linalg.MaxEigen(q0.B, p), discretisationMaxCurve)
		f.model = f.user
		return true, nil
	}
	choose := 0
	for i := len(fits) - 1; i > 0; i-- {
		q := fits[i]
		if deeperLevelValid(q, p) {
			choose = i
			break
		}
		f.log("coarsening level %d not used: leave-one-out error %.3f nats (at most %.2f), slopes %.3f (at most %.1f), largest curvature %.3f", i+1, q.LOO, quadMaxLOODeep, q.A, coarseMaxTilt, linalg.MaxEigen(q.B, p))
	}
	q := fits[choose]
	curve := make([]float64, p)
	for k := range p {
		curve[k] = q.B[k*p+k]
	}
	f.model = levels[choose]
	f.prep.dc = &discretisation{Mode: slices.Clone(u0), Chol: slices.Clone(l), Tilt: q.A, Curve: curve, Cross: q.B, Cubic: q.D,
		TargetChol: linalg.LowerMul(l, c0, p), DiscretisationReport: DiscretisationReport{Shift: shift, Coarse: true, Level: choose + 1}}
	f.log("sampling at the model's coarser discretisation (level %d of %d) with a quadratic-and-cubes correction towards its finer scorer (%d points; leave-one-out error %.3f nats): tilt %.3f per whitened axis; the target's mean is %.2f posterior sds from the mode",
		choose+1, len(levels), len(zs), q.LOO, q.A, shift)
	return false, nil
}

// firstLevelValid reports whether the model on trial may be sampled with
// the correction q, whose Gaussian target's mean is mx posterior sds from
// the mode (see chooseCoarse).
func firstLevelValid(mx float64, q *linalg.QuadFit, p int) bool {
	return !(mx > coarseMaxShift || q.LOO > quadMaxLOO || linalg.MaxEigen(q.B, p) > discretisationMaxCurve)
}

// deeperLevelValid reports whether a deeper level may be sampled with
// the correction q (see chooseCoarse).
func deeperLevelValid(q *linalg.QuadFit, p int) bool {
	return q.LOO <= quadMaxLOODeep && linalg.MaxAbs(q.A) <= coarseMaxTilt && linalg.MaxEigen(q.B, p) <= discretisationMaxCurve
}
