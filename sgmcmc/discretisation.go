package sgmcmc

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// discretisation models the difference r = ℓ_refined − ℓ between a
// model's finer log-likelihood (ssm.RefinedScorer) and the chains' exact
// scorer near the mode as a quadratic in the whitened coordinates
// z = L⁻¹(u − u*): r ≈ r(u*) + Σ_k a_k z_k + ½ b_k z_k², with
// a_k = [r(z = e_k) − r(−e_k)]/2 and b_k = r(e_k) + r(−e_k) − 2r(0)
// (both scorers at 2p + 1 points). The chains' target is the exact
// scorer's posterior times exp(Σ_k a_k z_k + ½ b_k z_k²): the finer
// scorer's, to second order along each axis, at the coarse one's cost (a
// control variate for the discretisation). A curvature |b_k| > 0.5 is not
// applied (the Posterior warns), and a positive one is held at its value
// at |z_k| = quadTrust beyond it (fitted at ± one sd, it would lift the
// tail farther out). What it did is reported through its
// DiscretisationReport (Preparation.Discretisation); the rest is the
// chains' machinery, saved with a checkpoint's preparation.
type discretisation struct {
	// Mode and Chol are the centre uc and the row-major lower L of the
	// correction, z = L⁻¹(u − uc): the preparation's mode u* and L (the
	// adaptation may change Preparation's).
	Mode []float64 `json:"mode"`
	Chol []float64 `json:"chol"`
	// Tilt and Curve are a and b.
	Tilt  []float64 `json:"tilt"`
	Curve []float64 `json:"curve"`
	// Cross, when set, is the full curvature B (p×p, row-major) of a
	// correction a·z + ½ zᵀBz (+ Cubic) fitted by least squares to a
	// Coarse model's design (3 + 4p + p(p−1) whitened points out to 3 sds
	// along the axes); Curve is then B's diagonal, for the record, and B
	// is applied as it is (it was validated).
	Cross []float64 `json:"cross,omitempty"`
	// Cubic, when set with Cross, adds Σ_k d_k z_k³ to the correction
	// (fitted with it on points out to 3 sds along the axes).
	Cubic []float64 `json:"cubic,omitempty"`
	// TargetChol, when set, is the lower Cholesky factor (row-major) of
	// the covariance of the chains' target's Gaussian approximation,
	// N(u* + shift, C Cᵀ), C = L diag((1 − b_k)^(−1/2)), at which the
	// first importance-sampling proposal is centred.
	TargetChol []float64 `json:"target_chol,omitempty"`
	DiscretisationReport
}

// DiscretisationReport says what the correction towards a model's finer
// scorer did, for a model whose exact scorer is exact only up to a
// discretisation (ssm.RefinedScorer, such as GARCH's quadrature filter): the
// chains sample the exact scorer's posterior times a quadratic (and, at a
// coarser level, cubic) correction fitted to the difference of the two
// log-likelihoods near the mode, which moves the target to the finer
// scorer's posterior (see the package documentation).
type DiscretisationReport struct {
	// Level is the number of ssm.Coarsener steps from the user's model
	// to the chains' (0 with Coarse means 1, as written before levels).
	Level int `json:"level,omitempty"`
	// Shift is how far the correction moves the posterior mean of each u
	// coordinate, in its posterior sds, for a Gaussian posterior. Above
	// 1 sd the Posterior warns: the correction then rests on a quadratic
	// model of a large difference.
	Shift []float64 `json:"shift"`
	// Coarse reports that the chains use one of the model's coarser
	// discretisations (ssm.Coarsener; Level says which): the coarsest
	// whose fitted correction holds.
	Coarse bool `json:"coarse,omitempty"`
	// Residual checks the correction after sampling, when it moves a mean
	// by more than 0.1 sd or is Coarse: evenly thinned draws (Draws) are
	// importance-weighted from the chains' target to the finer scorer's
	// posterior, and Residual is how far that moves each natural
	// parameter's mean, in its posterior sds, with ResidualSE its
	// delta-method standard error; ResidualSD is the ratio of each
	// weighted sd to the chains' and ResidualSDSE its standard error. The
	// Posterior warns when a mean moves by more than 0.1 sd or an sd by
	// more than 10%, beyond the 95% band of the check's own Monte Carlo
	// error. Nil when not checked.
	Residual     []float64 `json:"residual,omitempty"`
	ResidualSE   []float64 `json:"residual_se,omitempty"`
	ResidualSD   []float64 `json:"residual_sd,omitempty"`
	ResidualSDSE []float64 `json:"residual_sd_se,omitempty"`
	// Draws is the number of draws the check weighed (12, or 24 when
	// the first 12 left a residual above 0.1 sd or an SE above 0.05 sd).
	Draws int `json:"draws,omitempty"`
}

// Discretisation reports the correction the chains apply towards a
// model's finer scorer, for a model whose exact scorer is exact only up to
// a discretisation (ssm.RefinedScorer); nil when there is none.
func (p *Preparation) Discretisation() *DiscretisationReport {
	if p.dc == nil {
		return nil
	}
	return &p.dc.DiscretisationReport
}

// valid reports whether d is nil or has the dimensions of p parameters
// with finite entries (a checkpoint's, read back).
func (d *discretisation) valid(p int) bool {
	if d == nil {
		return true
	}
	for _, v := range [][]float64{d.Mode, d.Tilt, d.Curve, d.Shift} {
		if len(v) != p || fmath.FirstNonFinite(v) >= 0 {
			return false
		}
	}
	if len(d.Chol) != p*p || fmath.FirstNonFinite(d.Chol) >= 0 {
		return false
	}
	for _, v := range [][]float64{d.Cross, d.TargetChol} {
		if v != nil && (len(v) != p*p || fmath.FirstNonFinite(v) >= 0) {
			return false
		}
	}
	if d.Cubic != nil && (len(d.Cubic) != p || fmath.FirstNonFinite(d.Cubic) >= 0) {
		return false
	}
	for i := range p {
		if !(d.Chol[i*p+i] > 0) {
			return false
		}
	}
	return true
}

// discretisationMaxCurve is the largest |b_k| of the discretisation
// correction that is applied (a larger one would change a posterior sd by
// more than 1/√(1 − 0.5) = 1.41 on a quadratic model measured at ± one
// sd, TestAppliedCurve); beyond it the correction applies the tilt only
// and the Posterior warns.
const discretisationMaxCurve = 0.5

// discretisationMaxShift is the correction's mean shift (posterior sds)
// above which the Posterior warns: the cubic remainder of the quadratic
// model, about a tenth of the linear term over ± two sds on the S&P 500
// GARCH (measured with the σ² node filter, when it was the default),
// then exceeds 0.1 sd.
const discretisationMaxShift = 1.0

// discretisationMaxResidual is the Residual (posterior sds), and
// discretisationMaxSDRatio the ResidualSD's distance from 1, beyond which
// the Posterior warns when the shift is also beyond discretisationBand
// standard errors of the check (a 95% band): smaller bounds warn of
// corrections that do no harm, a narrower band of the check's own noise
// (TestResidualWarning).
const (
	discretisationMaxResidual = 0.1
	discretisationMaxSDRatio  = 0.1
	discretisationBand        = 1.96
)

// residualWarning returns the warning for a discretisation check whose
// weights move a mean or an sd beyond the bounds ("" for none), ending
// with the cure hint.
func residualWarning(dc *discretisation, names []string, hint string) string {
	// Every parameter beyond the limits, the largest first: the first in
	// the model's order hid a larger one (ρ at −1.11 ± 0.28 sd behind
	// φ₁'s −0.40 ± 0.20 on a simulated MSV fit).
	var means, sds []string
	for _, k := range byAbs(dc.Residual, 0) {
		if r := dc.Residual[k]; math.Abs(r) > discretisationMaxResidual && math.Abs(r) > discretisationBand*dc.ResidualSE[k] {
			means = append(means, fmt.Sprintf("%s by %.2f ± %.2f", names[k], r, dc.ResidualSE[k]))
		}
	}
	for _, k := range byAbs(dc.ResidualSD, 1) {
		if r := dc.ResidualSD[k]; math.Abs(r-1) > discretisationMaxSDRatio && math.Abs(r-1) > discretisationBand*dc.ResidualSDSE[k] {
			sds = append(sds, fmt.Sprintf("%s by a factor %.2f ± %.2f", names[k], r, dc.ResidualSDSE[k]))
		}
	}
	if len(means) == 0 && len(sds) == 0 {
		return ""
	}
	var moved []string
	if len(means) > 0 {
		moved = append(moved, "move the mean of "+strings.Join(means, ", ")+" posterior sd")
	}
	if len(sds) > 0 {
		moved = append(moved, "change the sd of "+strings.Join(sds, ", "))
	}
	return fmt.Sprintf("the discretisation correction falls short: importance weights to the model's finer scorer at %d draws %s; %s",
		dc.Draws, strings.Join(moved, " and "), hint)
}

// byAbs returns the indices of v ordered by |v_k − c|, largest first.
func byAbs(v []float64, c float64) []int {
	idx := make([]int, len(v))
	for k := range idx {
		idx[k] = k
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(math.Abs(v[b]-c), math.Abs(v[a]-c)) })
	return idx
}

// checkDiscretisation sets the preparation's correction when the
// estimators use the model's exact scorer and it is an ssm.RefinedScorer:
// for the model as given, both discretisations' full-data
// log-likelihoods at u* and u* ± L e_k, on the workers (a diagonal
// quadratic). A coarser model on trial (tryCoarser) is judged by
// chooseCoarse on a full quadratic design instead, which keeps it (or a
// coarser one still) or sends the chains back to the model as given:
// retry then reports that its preparation must run. (The diagonal
// measurement had to be repeated around the corrected mode's prediction,
// 0.36 sd away in GARCH's λ on DAX, for a residual of −0.01 ± 0.02 sd
// instead of −0.10 ± 0.09; the design, reaching 3 sds, left 0.03 ±
// 0.02 sd measured once around u*. These were measured with the σ² node
// filter, when it was GARCH's default.)
func (f *fit) checkDiscretisation(ctx context.Context) (retry bool, err error) {
	ex, ok := f.model.(ssm.ExactScorer)
	rs, ok2 := f.model.(ssm.RefinedScorer)
	l, u0 := f.prep.Chol, f.prep.Mode
	if !ok || !ok2 || !f.gset.Exact || l == nil || f.pseudoMarginal() { // pmLaplace's target is exact
		return false, nil
	}
	if f.trial {
		f.trial = false
		return f.chooseCoarse(ctx, rs, u0, l)
	}
	dc, err := f.measureDiscretisation(ctx, ex, rs, u0, l)
	if err != nil {
		return false, err
	}
	f.prep.dc = dc
	f.log("discretisation correction (the model's finer scorer at the mode and ± one sd): tilt %.3f, curvature %.3f per whitened axis; it moves the posterior mean by %.2f posterior sds (per coordinate of u)", dc.Tilt, dc.Curve, dc.Shift)
	return false, nil
}

// measureDiscretisation measures the correction around the mode uc:
// both scorers' full-data log-likelihoods at uc and uc ± L e_k, on the
// workers.
func (f *fit) measureDiscretisation(ctx context.Context, ex ssm.ExactScorer, rs ssm.RefinedScorer, uc, l []float64) (*discretisation, error) {
	p := f.dim
	pts := make([][]float64, 2*p+1)
	for k := range p {
		z := make([]float64, p)
		z[k] = 1
		pts[2*k] = linalg.LMul(uc, l, z)
		z[k] = -1
		pts[2*k+1] = linalg.LMul(uc, l, z)
	}
	pts[2*p] = uc
	fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
	if err != nil {
		return nil, err
	}
	base, err := f.fullLogLiks(ctx, pts, exactLogLik(ex))
	if err != nil {
		return nil, err
	}
	return newDiscretisation(pts, fine, base, uc, l)
}

// coarseMaxShift is the largest mean shift (posterior sds) of a coarser
// model's discretisation correction for which Fit samples with it: a
// larger one leaves more of the posterior to the quadratic's
// extrapolation and to the check after sampling (TestCoarseLevelValid).
const coarseMaxShift = 0.5

// tryCoarser puts the chains on trial on the model's coarser
// discretisation (ssm.Coarsener, with an exact and a finer scorer) when
// they use the model's exact scorer: the preparation then runs at the
// coarser model's cost (GARCH: 7 quadrature points, refined towards 14;
// a pass over the S&P 500 returns takes 80 ms against 139 ms at the
// default 10 points, go test -run '^$' -bench GARCHQuad -benchtime 5x
// ./models), and checkDiscretisation keeps it or
// goes back to the model as given. The check after sampling always runs
// for a coarser model.
func (f *fit) tryCoarser() {
	cs, ok := f.model.(ssm.Coarsener)
	if !ok || !f.gset.Exact {
		return
	}
	coarse, ok := cs.Coarsen()
	if !ok {
		return
	}
	_, ok = coarse.(ssm.ExactScorer)
	if _, ok2 := coarse.(ssm.RefinedScorer); !ok || !ok2 {
		return
	}
	f.model, f.trial = coarse, true
	f.log("preparing at the model's coarser discretisation first (kept when its correction towards its finer scorer is small)")
}

// exactLogLik returns ex's log-likelihood alone.
func exactLogLik(ex ssm.ExactScorer) func([]float64, ssm.Sequence, ssm.Window) (float64, error) {
	return func(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
		return ex.ExactScore(nil, u, seq, w)
	}
}

// fullLogLiks returns the full-data log-likelihood ll (every sequence
// one window) at each of pts, on the workers. On data more than twice as
// long as discObs it is a subset's (discSubset), scaled up.
func (f *fit) fullLogLiks(ctx context.Context, pts [][]float64, ll func([]float64, ssm.Sequence, ssm.Window) (float64, error)) ([]float64, error) {
	sf := f.discSubset()
	scale := 1.0
	if sf.scale != 0 {
		scale = sf.scale
	}
	out := make([]float64, len(pts))
	err := workerPool(len(pts), f.s.Workers, func() func(int) error {
		return func(i int) error {
			for _, seq := range sf.data.Sequences {
				if err := ctx.Err(); err != nil {
					return err
				}
				v, err := ll(pts[i], seq, ssm.Full(seq.Len()))
				if err != nil {
					return err
				}
				out[i] += scale * v
			}
			return nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: discretisation check: %w", err)
	}
	return out, nil
}

// discSubset returns the data the discretisation's log-likelihoods read:
// f's, or on data more than twice as long as discObs a subset of about
// discObs observations (blocks spread evenly, f.subset). The correction
// is a difference of two scorers' log-likelihoods, a sum over the rows of
// small differences, so a subset estimates it at a fraction of the cost
// of the 31 design points' and 12 draws' passes over the whole data (at
// T = 10⁶, 146 s of a fit whose sampling took 37 s).
func (f *fit) discSubset() *fit {
	if f.scale != 0 || f.total <= 2*discObs {
		return f
	}
	return f.subset(discObs)
}

// discObs is the size of discSubset's subset.
const discObs = 100000

// correctedMode returns the mode of −|z|²/2 + Σ_k a_k z_k + ½b_k z_k²
// (the chains' posterior N(0, I) in whitened coordinates times the
// correction), with the applied curvatures: z_k = a_k/(1 − b_k).
func correctedMode(tilt, curve []float64) []float64 {
	z := make([]float64, len(tilt))
	for k, a := range tilt {
		z[k] = a / (1 - appliedCurve(curve[k]))
	}
	return z
}

// newDiscretisation fits the correction's quadratic to r = fine − base at
// pts = (u0 + L e_1, u0 − L e_1, …, u0), centred at the mode u0 of the
// chains' posterior N(u0, L Lᵀ), for the shift of its mean.
func newDiscretisation(pts [][]float64, fine, base, u0, l []float64) (*discretisation, error) {
	p := len(u0)
	r := make([]float64, len(pts))
	for i := range r {
		r[i] = fine[i] - base[i]
	}
	if i := fmath.FirstNonFinite(r); i >= 0 {
		return nil, fmt.Errorf("sgmcmc: discretisation check: the log-likelihoods' difference at %v is %v", pts[i], r[i])
	}
	tilt, curve := make([]float64, p), make([]float64, p)
	for k := range p {
		tilt[k] = (r[2*k] - r[2*k+1]) / 2
		curve[k] = r[2*k] + r[2*k+1] - 2*r[2*p]
	}
	shift := linalg.LMul(make([]float64, p), l, correctedMode(tilt, curve))
	for i, sd := range cholSD(l, p) {
		shift[i] /= sd
	}
	return &discretisation{Mode: slices.Clone(u0), Chol: slices.Clone(l), Tilt: tilt, Curve: curve, DiscretisationReport: DiscretisationReport{Shift: shift}}, nil
}

// discretisationDraws is the number of draws at which the correction is
// checked after sampling (Discretisation.Residual).
const discretisationDraws = 24

// residualDraws returns the number K of the n draws the residual check
// weighs, min(discretisationDraws, n), and which of them (from 0 to K−1)
// it weighs first, every other one, and the rest, weighed only when
// those leave a doubt (residualDoubt).
func residualDraws(n int) (K int, half, rest []int) {
	K = min(discretisationDraws, n)
	for i := range K {
		if i%2 == 0 {
			half = append(half, i)
		} else {
			rest = append(rest, i)
		}
	}
	return K, half, rest
}

// checkResidual sets Discretisation.Residual from post's draws: both
// scorers at discretisationDraws evenly thinned draws, on the workers.
func (f *fit) checkResidual(ctx context.Context, post *Posterior) error {
	dc := f.prep.dc
	if _, v := argMaxAbs(dc.Shift); v <= 0.1 && !dc.Coarse {
		return nil
	}
	ex, ok := f.model.(ssm.ExactScorer)
	rs, ok2 := f.model.(ssm.RefinedScorer)
	if !ok || !ok2 {
		return fmt.Errorf("the model %T has no exact and finer scorer", f.model)
	}
	var us, nat []float64
	for c := range post.U {
		us, nat = append(us, post.U[c]...), append(nat, post.Natural[c]...)
	}
	p, d := f.dim, len(post.Names)
	n := len(us) / p
	K, half, rest := residualDraws(n)
	at := func(i int) int { return i * n / K } // the i-th of K evenly thinned draws
	corr := newDiscretised(nil, dc)
	logw := make([]float64, K)
	// weigh sets logw at the draws idx (of the K).
	weigh := func(idx []int) error {
		pts := make([][]float64, len(idx))
		for k, i := range idx {
			pts[k] = us[at(i)*p : (at(i)+1)*p]
		}
		fine, err := f.fullLogLiks(ctx, pts, rs.RefinedLogLik)
		if err != nil {
			return err
		}
		base, err := f.fullLogLiks(ctx, pts, exactLogLik(ex))
		if err != nil {
			return err
		}
		for k, i := range idx {
			if logw[i] = fine[k] - base[k] - corr.correction(nil, pts[k]); math.IsNaN(logw[i]) || math.IsInf(logw[i], 0) {
				return fmt.Errorf("log weight %v at draw %d", logw[i], at(i))
			}
		}
		return nil
	}
	if err := weigh(half); err != nil {
		return err
	}
	// x[k][j]: the k-th of the K draws' natural parameter j, in posterior
	// sds from its mean.
	x := make([][]float64, K)
	for k := range x {
		x[k] = make([]float64, d)
		for j, row := range post.Summary() {
			x[k][j] = (nat[at(k)*d+j] - row.Mean) / row.SD
		}
	}
	used := half
	ess := residualShift(dc, used, logw, x)
	if residualDoubt(dc) {
		if err := weigh(rest); err != nil {
			return err
		}
		used = make([]int, K)
		for i := range used {
			used[i] = i
		}
		ess = residualShift(dc, used, logw, x)
	}
	dc.Draws = len(used)
	f.log("discretisation correction checked at %d draws (importance weights to the finer scorer, ESS %.1f): it leaves the means %.3f ± %.3f posterior sds from the finer scorer's", len(used), ess, dc.Residual, dc.ResidualSE)
	return nil
}

// The residual check weighs discretisationDraws/2 draws first and all
// discretisationDraws when some |Residual| exceeds the warning's
// discretisationMaxResidual or some ResidualSE exceeds
// discretisationSureSE (residualDoubt): a mean warning always rests on
// all of them, and a clear pass on half saves their cost (GARCH: 12
// passes at 256 nodes cost 35 s of the S&P 500 fit).
const discretisationSureSE = 0.05

// residualDoubt reports whether the residual check on half the draws
// leaves a doubt that all of them must settle.
func residualDoubt(dc *discretisation) bool {
	_, r := argMaxAbs(dc.Residual)
	return r > discretisationMaxResidual || linalg.MaxAbs(dc.ResidualSE) > discretisationSureSE
}

// residualShift sets dc.Residual and dc.ResidualSE from the draws used
// (indices into logw, their log weights, and x, their standardised
// natural parameters) and returns the weights' ESS.
func residualShift(dc *discretisation, used []int, logw []float64, x [][]float64) float64 {
	K, d := len(used), len(x[0])
	lw := make([]float64, K)
	for k, i := range used {
		lw[k] = logw[i]
	}
	wts := tmix.Normalized(lw)
	s2 := 0.0
	for i, w := range wts {
		s2 += w * w
		wts[i] = w * float64(K) // mean 1
	}
	dc.Residual, dc.ResidualSE = make([]float64, d), make([]float64, d)
	dc.ResidualSD, dc.ResidualSDSE = make([]float64, d), make([]float64, d)
	for j := range d {
		xm := 0.0
		for _, i := range used {
			xm += x[i][j]
		}
		xm /= float64(K)
		// The self-normalised mean Σ w x / Σ w minus the plain mean, and
		// its delta-method variance Σ w_i²(x_i − m_w)² / K².
		mw := 0.0
		for k, i := range used {
			mw += wts[k] * x[i][j] / float64(K)
		}
		v := 0.0
		for k, i := range used {
			e := wts[k]*(x[i][j]-mw) - (x[i][j] - xm)
			v += e * e
		}
		dc.Residual[j] = mw - xm
		dc.ResidualSE[j] = math.Sqrt(v) / float64(K)
		// The sds: weighted variance vw against the plain vp, with the
		// delta-method variance of vw − vp, and r = √(vw/vp) with
		// SE(r) ≈ SE(vw − vp)/(2 vp).
		vw, vp := 0.0, 0.0
		for k, i := range used {
			vw += wts[k] * (x[i][j] - mw) * (x[i][j] - mw) / float64(K)
			vp += (x[i][j] - xm) * (x[i][j] - xm) / float64(K)
		}
		ve := 0.0
		for k, i := range used {
			e := wts[k]*((x[i][j]-mw)*(x[i][j]-mw)-vw) - ((x[i][j]-xm)*(x[i][j]-xm) - vp)
			ve += e * e
		}
		if vp > 0 {
			dc.ResidualSD[j] = math.Sqrt(vw / vp)
			dc.ResidualSDSE[j] = math.Sqrt(ve) / float64(K) / (2 * vp)
		}
	}
	return 1 / s2
}

// discretised is an estimator of the chains' target plus the
// discretisation correction a·z + ½ zᵀBz, z = L⁻¹(u − u*)
// (Discretisation; B diagonal unless Cross is set): it adds the
// correction to the log posterior and its gradient L⁻ᵀ(a + Bz) to the
// gradient.
type discretised struct {
	est         Estimator
	mode, l     []float64
	a, b        []float64 // b: B, p×p row-major
	cubic       []float64 // d, the cubes' coefficients (nil: none)
	trust       float64   // the trust radius of a full B (0: none)
	hold        float64   // the radius beyond which a diagonal B's positive b_k is held (0: none)
	z, v, gs, g []float64 // scratch
}

func newDiscretised(est Estimator, dc *discretisation) *discretised {
	p := len(dc.Mode)
	b := slices.Clone(dc.Cross)
	if b == nil {
		b = make([]float64, p*p)
		for k, v := range dc.Curve {
			b[k*p+k] = appliedCurve(v)
		}
	}
	d := &discretised{est: est, mode: dc.Mode, l: dc.Chol, a: dc.Tilt, b: b, cubic: dc.Cubic,
		z: make([]float64, p), v: make([]float64, p), gs: make([]float64, p), g: make([]float64, p)}
	if dc.Cross != nil {
		d.trust = quadTrust
	} else {
		d.hold = quadTrust
	}
	return d
}

// appliedCurve is the curvature b of the discretisation correction that
// is applied: b, or 0 when |b| > discretisationMaxCurve.
func appliedCurve(b float64) float64 {
	if math.Abs(b) > discretisationMaxCurve {
		return 0
	}
	return b
}

// correction returns the correction at u and adds its gradient to grad
// (grad nil: the value only).
func (d *discretised) correction(grad, u []float64) float64 {
	p := len(u)
	// z = L⁻¹(u − u*) by forward substitution.
	for i := range p {
		s := u[i] - d.mode[i]
		for j := range i {
			s -= d.l[i*p+j] * d.z[j]
		}
		d.z[i] = s / d.l[i*p+i]
	}
	// Beyond the trust radius R the curved part h(z) = ½zᵀBz + Σ d_k z_k³
	// is held at its value on the sphere through z, h(zc), zc = s z,
	// s = R/|z|, whose gradient is s(g − (g·ẑ)ẑ), g = ∇h(zc), ẑ = z/|z|.
	zz := 0.0
	for k := range p {
		zz += d.z[k] * d.z[k]
	}
	s := 1.0
	if d.trust > 0 && zz > d.trust*d.trust {
		s = d.trust / math.Sqrt(zz)
	}
	c, gz := 0.0, 0.0
	for k := range p {
		bz := 0.0
		for j := range p {
			bz += d.b[k*p+j] * d.z[j]
		}
		zk := s * d.z[k]
		g := s * bz // (B zc)_k
		// A diagonal B's positive curvature, fitted at ± one sd, is held
		// beyond hold along its axis, where it would lift the tail (a
		// bivariate SV fit's chains ran to ρ, φ → 1 on a curvature of
		// 0.04); a negative one only lightens the tail.
		if b := d.b[k*p+k]; d.hold > 0 && b > 0 && math.Abs(zk) > d.hold {
			zk, g = math.Copysign(d.hold, zk), 0
			c += 0.5 * b * zk * zk
		} else {
			c += 0.5 * zk * g
		}
		if d.cubic != nil {
			c += d.cubic[k] * zk * zk * zk
			g += 3 * d.cubic[k] * zk * zk
		}
		d.v[k] = g
		gz += g * d.z[k]
	}
	for k := range p {
		if s < 1 {
			d.v[k] = s * (d.v[k] - gz*d.z[k]/zz)
		}
		c += d.a[k] * d.z[k]
		d.v[k] += d.a[k]
	}
	if grad == nil {
		return c
	}
	// L⁻ᵀ v by back substitution.
	for i := p - 1; i >= 0; i-- {
		s := d.v[i]
		for j := i + 1; j < p; j++ {
			s -= d.l[j*p+i] * d.gs[j]
		}
		d.gs[i] = s / d.l[i*p+i]
		grad[i] += d.gs[i]
	}
	return c
}

func (d *discretised) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	lp, err := d.est.Grad(ctx, grad, u, rng)
	if err != nil {
		return lp, err
	}
	return lp + d.correction(grad, u), nil
}

// LogPosterior implements logDensity: the estimator's log posterior alone
// when it has one.
func (d *discretised) LogPosterior(ctx context.Context, u []float64, rng *rand.Rand) (float64, error) {
	var lp float64
	var err error
	if ld, ok := d.est.(logDensity); ok {
		lp, err = ld.LogPosterior(ctx, u, rng)
	} else {
		lp, err = d.est.Grad(ctx, d.g, u, rng)
	}
	if err != nil {
		return lp, err
	}
	return lp + d.correction(nil, u), nil
}
