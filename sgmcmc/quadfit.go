package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
	"gonum.org/v1/gonum/mat"
)

// A coarser model (ssm.Coarsener) is judged on one design of points
// around the preparation's mode u*, in whitened coordinates
// z = L⁻¹(u − u*) (quadDesign): the finer scorer once per point, and
// every coarser level's exact scorer (GARCH offers two: 32 nodes, then
// 24, both refined by Richardson's extrapolation from 32 and 64). For each level
// the difference r = ℓ_refined − ℓ_level is fitted by a quadratic with
// cubes along the axes, c + a·z + ½ zᵀBz + Σ d_k z_k³ (least squares;
// fitQuad), whose leave-one-out errors say how well it represents r out
// to 3 sds. On the DAX returns r varies by 0.41 nats (sd over 119
// posterior draws) at 32 nodes; a quadratic fitted within 1.5 sds leaves
// 0.02–0.04 nats and mean shifts from the 128-node posterior of at most
// 0.004 posterior sds (offline), where the diagonal quadratic of
// measureDiscretisation leaves 0.06 nats and 0.03 sd. The design's
// leave-one-out error is 0.019 nats.
//
// 16 nodes (a pass of 19 ms against 48 at 32) were tried as a second
// level and left out: on DAX r varies by 1.8 nats there and a quadratic
// within 1.5 sds leaves 0.06–0.11 nats near the mode, but it misses r by
// up to 0.72 nats at ±3 sds (1.5 on a simulated series), and with or
// without the cubes the corrected 16-node chains narrowed μ's posterior
// sd by 11–17% on a simulated series (T = 2000) while the DAX fits came
// out right in 33–48 s. At 10 nodes the coarse filter itself has
// spurious modes far out (three of six DAX fits broke).

// quadRadius is the whitened radius of quadDesign's points for the
// quadratic, and quadFar that of its points along the axes for the
// cubes, so that the fit and its leave-one-out check reach the
// posterior's tails.
const (
	quadRadius = 1.5
	quadFar    = 3.0
)

// quadTrust is the whitened radius beyond which a fitted correction's
// curved part is held at its value on the sphere (discretised): the fit
// rests on points within quadFar, and farther out its curvature need not
// hold, where a positive one could lift the coarse model's tail (16-node
// GARCH chains ran to φ far below its posterior without it).
const quadTrust = 4.0

// quadMaxLOO is the largest root-mean-square leave-one-out error (nats)
// of a level's fit for which the chains sample that level (GARCH on DAX:
// 0.019 at 32 nodes; 0.158 at 16, and 0.233 on a simulated series where
// 16 nodes narrowed μ). A residual of this sd over the posterior moves a
// mean by at most as many posterior sds (its covariance with z), which
// the check after sampling then measures.
const quadMaxLOO = 0.15

// quadMaxLOODeep is quadMaxLOO for a deeper level, which only buys
// speed: GARCH at 24 nodes fits to 0.033 nats on DAX, and the draws
// checked after sampling left the means within 0.09 sd of the finer
// scorer's posterior over eight seeds; on a simulated series (T = 2000)
// it fitted to 0.082 nats and left μ's mean 0.14 ± 0.03 sd off (32
// nodes there: 0.038 nats, 0.02 sd).
const quadMaxLOODeep = 0.05

// coarseMaxTilt is the largest whitened slope |a_k| (nats per posterior
// sd) of a deeper level's correction: the fit then carries the level's
// posterior less than about this many sds to the target's.
const coarseMaxTilt = 3.0

// maxCoarseLevels bounds the coarser levels chooseCoarse measures (a
// model whose Coarsen never says no must not loop).
const maxCoarseLevels = 4

// quadDesign returns the whitened points at which a full quadratic in p
// dimensions is fitted: the centre, ±r e_k, ±r(e_j + e_k)/√2 (j < k),
// ±(r/2)(1, …, 1)/√p (r = quadRadius) and ±quadFar e_k: 3 + 4p + p(p−1)
// distinct points for the 1 + 2p + p(p+1)/2 coefficients with the cubes
// (GARCH: 31 for 19), so that p(p−1)/2 + 2 residuals are left to
// cross-validate the fit, and the fit without any one point is still
// determined.
func quadDesign(p int) [][]float64 {
	zs := [][]float64{make([]float64, p)}
	add := func(idx []int, v float64) {
		for _, s := range []float64{1, -1} {
			z := make([]float64, p)
			for _, k := range idx {
				z[k] = s * v
			}
			zs = append(zs, z)
		}
	}
	for k := range p {
		add([]int{k}, quadRadius)
	}
	for j := range p {
		for k := j + 1; k < p; k++ {
			add([]int{j, k}, quadRadius/math.Sqrt2)
		}
	}
	all := make([]int, p)
	for k := range all {
		all[k] = k
	}
	add(all, quadRadius/(2*math.Sqrt(float64(p))))
	for k := range p {
		add([]int{k}, quadFar)
	}
	return zs
}

// quadFeatures returns (1, z_1, …, z_p, z_j z_k for j ≤ k, z_k³).
func quadFeatures(z []float64) []float64 {
	x := append([]float64{1}, z...)
	for j := range z {
		for k := j; k < len(z); k++ {
			x = append(x, z[j]*z[k])
		}
	}
	for _, v := range z {
		x = append(x, v*v*v)
	}
	return x
}

// quadFit is a quadratic c + a·z + ½ zᵀBz (B p×p row-major) and the root
// mean square of its leave-one-out errors at the points it was fitted to.
type quadFit struct {
	c       float64
	a, b, d []float64 // d: the cubes' coefficients
	loo     float64
}

// fitQuad fits a quadratic to r at the whitened points zs by least
// squares. The leave-one-out error at point i is e_i/(1 − h_ii), h the
// hat matrix.
func fitQuad(zs [][]float64, r []float64) (*quadFit, error) {
	if i := firstNonFinite(r); i >= 0 {
		return nil, fmt.Errorf("the log-likelihoods' difference at design point %d is %v", i, r[i])
	}
	p := len(zs[0])
	k := len(quadFeatures(zs[0]))
	n := len(zs)
	if n <= k {
		return nil, fmt.Errorf("%d design points for %d coefficients", n, k)
	}
	x := mat.NewDense(n, k, nil)
	for i, z := range zs {
		x.SetRow(i, quadFeatures(z))
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return nil, errors.New("singular design")
	}
	var xty, beta mat.VecDense
	xty.MulVec(x.T(), mat.NewVecDense(n, r))
	if err := ch.SolveVecTo(&beta, &xty); err != nil {
		return nil, err
	}
	q := &quadFit{c: beta.AtVec(0), a: make([]float64, p), b: make([]float64, p*p), d: make([]float64, p)}
	for j := range p {
		q.a[j] = beta.AtVec(1 + j)
	}
	i := 1 + p
	for j := range p {
		for l := j; l < p; l++ {
			v := beta.AtVec(i)
			if j == l {
				q.b[j*p+j] = 2 * v
			} else {
				q.b[j*p+l], q.b[l*p+j] = v, v
			}
			i++
		}
	}
	for j := range p {
		q.d[j] = beta.AtVec(i + j)
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, err
	}
	ss, m := 0.0, 0
	var hx mat.VecDense
	for i := range n {
		xi := x.RowView(i)
		hx.MulVec(&inv, xi)
		h := mat.Dot(xi, &hx)
		if h > 1-1e-9 {
			continue
		}
		e := (r[i] - mat.Dot(xi, &beta)) / (1 - h)
		ss += e * e
		m++
	}
	if m == 0 {
		return nil, errors.New("no point to cross-validate the fit")
	}
	q.loo = math.Sqrt(ss / float64(m))
	return q, nil
}

// gaussianTimes returns the mean z* and the lower Cholesky factor of the
// covariance of N(0, I) · exp(a·z + ½ zᵀBz): (I − B)⁻¹a and (I − B)⁻¹,
// or an error when I − B is not positive definite.
func gaussianTimes(a, b []float64) (mean, chol []float64, err error) {
	p := len(a)
	h := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			v := -0.5 * (b[i*p+j] + b[j*p+i])
			if i == j {
				v++
			}
			h.SetSym(i, j, v)
		}
	}
	if chol, err = cholInverse(h); err != nil {
		return nil, nil, fmt.Errorf("the corrected target is not proper (I − B): %w", err)
	}
	// (I − B)⁻¹a = C Cᵀ a.
	return lMul(make([]float64, p), chol, lTrans(chol, a)), chol, nil
}

// lowerMul returns the product of two lower triangular p×p matrices
// (row-major).
func lowerMul(a, b []float64, p int) []float64 {
	out := make([]float64, p*p)
	for i := range p {
		for j := 0; j <= i; j++ {
			s := 0.0
			for k := j; k <= i; k++ {
				s += a[i*p+k] * b[k*p+j]
			}
			out[i*p+j] = s
		}
	}
	return out
}

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
	zs := quadDesign(p)
	pts := make([][]float64, len(zs))
	for i, z := range zs {
		pts[i] = lMul(u0, l, z)
	}
	fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
	if err != nil {
		return false, err
	}
	fits := make([]*quadFit, len(levels))
	for i, m := range levels {
		base, err := f.fullLogLiks(ctx, pts, exactLogLik(m.(ssm.ExactScorer)))
		if err != nil {
			return false, err
		}
		r := make([]float64, len(pts))
		for j := range r {
			r[j] = fine[j] - base[j]
		}
		if fits[i], err = fitQuad(zs, r); err != nil {
			return false, fmt.Errorf("sgmcmc: discretisation check: %w", err)
		}
	}
	q0 := fits[0]
	zs0, c0, err := gaussianTimes(q0.a, q0.b)
	var shift []float64
	mx := math.Inf(1)
	if err == nil {
		shift = lMul(make([]float64, p), l, zs0)
		for i, sd := range cholSD(l, p) {
			shift[i] /= sd
		}
		_, mx = argMaxAbs(shift)
	}
	if err != nil || mx > coarseMaxShift || q0.loo > quadMaxLOO || maxEigen(q0.b, p) > discretisationMaxCurve {
		f.log("the model's coarser discretisation is not used: its correction would move a mean by %.2f posterior sds (at most %.1f), its quadratic's leave-one-out error is %.3f nats (at most %.2f) or its largest curvature %.3f (at most %.1f); preparing the model as given",
			mx, coarseMaxShift, q0.loo, quadMaxLOO, maxEigen(q0.b, p), discretisationMaxCurve)
		f.model = f.user
		return true, nil
	}
	choose := 0
	for i := len(fits) - 1; i > 0; i-- {
		q := fits[i]
		if q.loo <= quadMaxLOODeep && maxAbs(q.a) <= coarseMaxTilt && maxEigen(q.b, p) <= discretisationMaxCurve {
			choose = i
			break
		}
		f.log("coarsening level %d not used: leave-one-out error %.3f nats (at most %.2f), slopes %.3f (at most %.1f), largest curvature %.3f", i+1, q.loo, quadMaxLOODeep, q.a, coarseMaxTilt, maxEigen(q.b, p))
	}
	q := fits[choose]
	curve := make([]float64, p)
	for k := range p {
		curve[k] = q.b[k*p+k]
	}
	f.model = levels[choose]
	f.prep.Discretisation = &Discretisation{Mode: slices.Clone(u0), Chol: slices.Clone(l), Tilt: q.a, Curve: curve, Cross: q.b, Cubic: q.d,
		Shift: shift, TargetChol: lowerMul(l, c0, p), Coarse: true, Level: choose + 1}
	f.log("sampling at the model's coarser discretisation (level %d of %d) with a quadratic-and-cubes correction towards its finer scorer (%d points; leave-one-out error %.3f nats): tilt %.3f per whitened axis; the target's mean is %.2f posterior sds from the mode",
		choose+1, len(levels), len(zs), q.loo, q.a, shift)
	return false, nil
}
