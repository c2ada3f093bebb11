package sgmcmc

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/ksd"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
)

// estimator returns a fresh estimator of the chosen kind, with the
// discretisation correction when there is one.
func (f *fit) estimator() (Estimator, error) {
	if f.pseudoMarginal() {
		f.laplace.startAt(f.prep.Mode, f.data)
		return newPMLaplace(f.laplace, f.data, f.dim), nil
	}
	est, err := f.baseEstimator()
	if err != nil || f.prep.dc == nil {
		return est, err
	}
	return newDiscretised(est, f.prep.dc), nil
}

// baseEstimator returns a fresh estimator of the chosen kind.
func (f *fit) baseEstimator() (Estimator, error) {
	if f.prep.Gradient == FullGradient {
		set := f.gset
		set.Sampling = gradient.Full
		set.Choice = gradient.AllSequences
		return f.newEstimator(set), nil
	}
	if f.prep.Gradient != ControlVariateGradient {
		return &corrected{est: f.newEstimator(f.gset), c: f.prep.Correction}, nil
	}
	cv, err := f.newCV(f.newEstimator(f.cvset))
	if err != nil {
		return nil, err
	}
	return cv, nil
}

// corrected is the plain estimator plus a constant bias correction c
// (Preparation.Correction).
type corrected struct {
	est *gradient.Estimator
	c   []float64
}

func (e *corrected) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	lp, err := e.est.Grad(ctx, grad, u, rng)
	for i, v := range e.c {
		grad[i] += v
	}
	return lp, err
}

// adaptWindows is the number of adaptation windows.
const adaptWindows = 3

// windowLen is the default length of an adaptation window at step h: ten
// autocorrelation times sgldIATs(10, h) of the preconditioned chain, at
// least 300 and at most 3000 iterations.
func windowLen(h float64) int {
	return min(3000, max(300, int(math.Ceil(sgldIATs(10, h)))))
}

// adapt runs adaptWindows windows of the sampler from draws of N(u*, L Lᵀ) and,
// after each, replaces the metric L Lᵀ by the covariance of the window's
// draws, as Stan adapts its metric during warm-up. The first L comes from
// the empirical Fisher information, which is not the Hessian when the
// model is misspecified (heavy-tailed returns under the SVM make it
// overstate the information about σ and τ several times), and the chains
// would mix that much slower. The noise correction W = Lᵀ V L and the step
// follow each new metric. The second window also measures the
// autocorrelation time that sets the default number of iterations.
// FullGradient's chains are adapted by importance sampling instead
// (adaptIS), unless it fails to find a usable proposal.
func (f *fit) adapt(ctx context.Context) error {
	pr := &f.prep
	p, chains := f.dim, f.s.Chains
	if pr.Gradient == FullGradient {
		res, err := f.adaptIS(ctx)
		if err != nil {
			return err
		}
		if res != nil {
			f.useIS(res)
			return nil
		}
		f.log("importance sampling too poor for independence proposals: adaptation windows instead")
	}
	starts := make([][]float64, chains)
	for c := range starts {
		rng := rand.New(rand.NewPCG(f.s.Seed, adaptStartStream+uint64(c)))
		z := make([]float64, p)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		starts[c] = linalg.LMul(pr.Mode, pr.Chol, z)
	}
	total := 0
	for win := 0; win < adaptWindows; win++ {
		h := pr.StepSize
		n := f.s.AdaptWindow
		if n == 0 {
			n = windowLen(h)
		}
		trace := &Trace{}
		recs := []Recorder{trace}
		if f.s.Progress != nil {
			names := f.model.ParamNames()
			pt := &Printer{W: f.s.Progress, Interval: 2 * time.Second, Names: names,
				Transform: func(dst, u []float64) { f.model.Constrain(dst, u) }}
			if !f.s.Verbose {
				pt.Label = fmt.Sprintf("adapting the sampler (window %d of %d)", win+1, adaptWindows)
			}
			recs = append(recs, pt)
		}
		f.log("adaptation window %d: %d chains × %d iterations, step %.3g", win+1, chains, n, h)
		var setupErr error
		newEst, newMethod, acceptance, _ := f.chainFactories(f.noiseW(), &setupErr)
		res, err := Run(ctx, newEst, newMethod,
			func(c int, u []float64) error { copy(u, starts[c]); return nil },
			p, Settings{Iterations: n, Schedule: Constant(h), Chains: chains, Concurrency: f.s.Workers,
				Seed: f.s.Seed + uint64(win+1)*adaptSeedStride, NonFinite: Skip, Recorder: Multi(recs...)})
		if setupErr != nil {
			return setupErr
		}
		if err != nil {
			return fmt.Errorf("sgmcmc: adaptation window %d: %w", win+1, err)
		}
		for c := range starts {
			starts[c] = res.Chains[c].U
		}
		total += n
		skip := 0
		if win == 0 {
			skip = n / 4 // transient from the starting draws
		}
		cov, cols, mean := pooledCov(trace, p, skip)
		if cov == nil {
			return fmt.Errorf("sgmcmc: adaptation window %d kept too few draws", win+1)
		}
		if win == adaptWindows-1 {
			ess := math.Inf(1)
			for _, c := range cols {
				ess = math.Min(ess, ksd.BulkESS(c))
			}
			draws := float64(len(cols[0]) * len(cols[0][0]))
			pr.IAT = draws / math.Max(ess, 1)
		}
		if err := f.updateMetric(cov); err != nil {
			return err
		}
		acc, ind := acceptance().rates()
		if !math.IsNaN(acc) {
			f.tuneMALA(acc, ind)
			f.tuneIndependence(ind)
		}
		// The noise where the chains are, not only near u*: the
		// control-variate noise grows with the distance from u*, and a W
		// measured too close would inject too much noise.
		var points [][]float64
		for _, ch := range trace.Chains {
			k := ch.Len()
			for i := 0; i < f.s.NoiseProbes/len(trace.Chains)+1; i++ {
				j := k/2 + i*(k-k/2)/(f.s.NoiseProbes/len(trace.Chains)+1)
				points = append(points, ch.U[j*p:(j+1)*p])
			}
		}
		if pr.Gradient != FullGradient { // no noise to measure
			if err := f.noiseAt(ctx, points, adaptNoiseStream+uint64(win)<<20); err != nil {
				return err
			}
			f.setStep()
			lp, lc := f.lambdas()
			f.log("noise where the chains are: λ_max(W) plain %.3g, control variate %.3g; step %.3g", lp, lc, pr.StepSize)
		}
		if win == adaptWindows-1 {
			pr.IAT *= h / pr.StepSize
		}
		if pr.Gradient == FullGradient && retryWorth(acc) {
			if ok, err := f.retryIS(ctx, mean, total, win); ok || err != nil {
				return err
			}
		}
	}
	pr.starts, pr.AdaptIterations = starts, total
	pr.ShiftSD = linalg.MaxAbs(linalg.LTrans(pr.Chol, pr.AnchorSE))
	return nil
}

// retryIS runs the importance-sampling adaptation again after
// adaptation window win (total iterations per chain so far), its first
// proposal centred at the window's mean with the metric the window
// adapted: where the first rounds, centred at the preparation's mode,
// found no usable proposal because that mode was far from the
// posterior's mass (MSV{D: 2} on DAX and CAC 40, whose Newton steps on a
// rough likelihood estimate stopped 3 sds from a fixed point). When it
// succeeds (ok) the chains run on its independence proposals from its
// starts; else the windows go on.
func (f *fit) retryIS(ctx context.Context, mean []float64, total, win int) (ok bool, err error) {
	pr := &f.prep
	f.log("importance sampling again, from adaptation window %d's draws", win+1)
	res, err := f.adaptISFrom(ctx, mean, slices.Clone(pr.Chol), uint64(win+1)*isRetryOffset)
	if err != nil || res == nil {
		return false, err
	}
	f.useIS(res)
	pr.AdaptIterations += total
	return true, nil
}

// retryMinAccept is the local steps' acceptance rate in an adaptation
// window below which retryIS is not tried after it: chains that rarely
// moved leave a mean and metric that say little about the posterior. On
// MSV{D: 2} on DAX and CAC 40 the first window accepted 22% of its
// random-walk steps and the importance sampling from it succeeded; on
// MSV{D: 5} (T = 5,000) the first window accepted 3%, and the first
// round from it kept an ESS of 1 of 625.
const retryMinAccept = 0.1

// retryWorth reports whether an adaptation window whose local steps were
// accepted at rate acc (NaN: unknown) is worth retrying the importance
// sampling from.
func retryWorth(acc float64) bool { return acc >= retryMinAccept }

// pooledCov returns the covariance (row-major) of the draws of all chains
// after the first skip of each, per coordinate the per-chain columns, and
// the mean.
func pooledCov(t *Trace, p, skip int) ([]float64, [][][]float64, []float64) {
	cols := make([][][]float64, p)
	mean := make([]float64, p)
	n := 0
	for _, ch := range t.Chains {
		k := ch.Len()
		if k-skip < 4 {
			return nil, nil, nil
		}
		for j := range p {
			col := make([]float64, k-skip)
			for i := skip; i < k; i++ {
				col[i-skip] = ch.U[i*p+j]
				mean[j] += ch.U[i*p+j]
			}
			cols[j] = append(cols[j], col)
		}
		n += k - skip
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	cov := make([]float64, p*p)
	for _, ch := range t.Chains {
		for i := skip; i < ch.Len(); i++ {
			x := ch.U[i*p : (i+1)*p]
			for a := range p {
				for b := range p {
					cov[a*p+b] += (x[a] - mean[a]) * (x[b] - mean[b]) / float64(n-1)
				}
			}
		}
	}
	return cov, cols, mean
}

// updateMetric replaces L by L C, where C Cᵀ is the covariance cov seen in
// the current coordinates z = L⁻¹u, with its eigenvalues clipped to
// [0.02, 50] (a window too short to see a direction does not collapse it),
// then resets the step for the new W.
func (f *fit) updateMetric(cov []float64) error {
	pr := &f.prep
	p := f.dim
	l := mat.NewTriDense(p, mat.Lower, nil)
	for i := range p {
		for j := 0; j <= i; j++ {
			l.SetTri(i, j, pr.Chol[i*p+j])
		}
	}
	// S_z = L⁻¹ Σ L⁻ᵀ.
	var a, sz mat.Dense
	if err := a.Solve(l, mat.NewDense(p, p, cov)); err != nil {
		return fmt.Errorf("sgmcmc: metric update: %w", err)
	}
	if err := sz.Solve(l, a.T()); err != nil {
		return fmt.Errorf("sgmcmc: metric update: %w", err)
	}
	sym := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			sym.SetSym(i, j, 0.5*(sz.At(i, j)+sz.At(j, i)))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, true) {
		return fmt.Errorf("sgmcmc: metric update: eigendecomposition failed")
	}
	vals := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	clipped := mat.NewSymDense(p, nil)
	for i := range p {
		for j := i; j < p; j++ {
			v := 0.0
			for k, lam := range vals {
				if math.IsNaN(lam) {
					return fmt.Errorf("sgmcmc: metric update: the draws' covariance is not finite")
				}
				v += q.At(i, k) * q.At(j, k) * math.Min(50, math.Max(0.02, lam))
			}
			clipped.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(clipped) {
		return fmt.Errorf("sgmcmc: metric update: covariance not positive definite")
	}
	var c mat.TriDense
	ch.LTo(&c)
	var lc mat.TriDense
	lc.MulTri(l, &c)
	for i := range p {
		for j := 0; j <= i; j++ {
			pr.Chol[i*p+j] = lc.At(i, j)
		}
	}
	f.setStep()
	f.log("metric adapted: posterior sds in u %v; step %.3g", fmtSD(pr.Chol, p), pr.StepSize)
	return nil
}

func fmtSD(l []float64, p int) string { return fmt.Sprintf("%.3g", cholSD(l, p)) }

// cholSD returns the marginal sds √(LLᵀ)_ii of the covariance LLᵀ (L lower
// triangular, row-major p×p).
func cholSD(l []float64, p int) []float64 {
	sd := make([]float64, p)
	for i := range p {
		for j := 0; j <= i; j++ {
			sd[i] += l[i*p+j] * l[i*p+j]
		}
		sd[i] = math.Sqrt(sd[i])
	}
	return sd
}
