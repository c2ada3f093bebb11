package ssmtest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// SamplerZ is the number of Monte Carlo standard errors a moment of
// SamplerMoments or ProposalMoments may stray from zero before CheckSampler
// or CheckProposal report it: a correct sampler exceeds it with probability
// about 6e-7 per moment (normal approximation), and a fixed seed makes the
// verdict reproducible.
const SamplerZ = 5

// WeightTol is the tolerance of CheckProposal on the incremental weight of
// Propose against log p(y|x) + log p(x|prev) − log q(x|prev, y), relative
// to max(1, |terms|).
const WeightTol = 1e-8

// seFloor is an absolute floor on a moment's standard error: it absorbs the
// finite-difference rounding of coordinates that do not enter a density.
const seFloor = 1e-6

// Moment is a Monte Carlo average whose expectation is zero when a sampler
// draws from the density it is checked against.
type Moment struct {
	Name     string  // what is averaged, e.g. "emission: score u[2] (tau)"
	Mean, SE float64 // the average over the draws and its standard error
}

// Z returns Mean / max(SE, 1e-6), the distance from zero in standard
// errors.
func (m Moment) Z() float64 { return m.Mean / math.Max(m.SE, seFloor) }

func (m Moment) String() string {
	return fmt.Sprintf("%s: mean %.4g ± %.2g (z = %.1f)", m.Name, m.Mean, m.SE, m.Z())
}

// piece is one sampler under check: n draws, each a vector of length dim
// (a state row or an observation), and the log density of draw j's
// conditional law, evaluated at z in place of the draw, under a kernel.
type piece struct {
	what     string
	n, dim   int
	draw     func(j int) []float64
	prev     func(j int) []float64 // for completion: nil for an observation, returns nil for x_0
	complete bool                  // re-derive the deterministic part of z (a state row)
	logAt    func(k ssm.Kernel, j int, z []float64) float64
}

// eval returns the log density of draw j, with component c moved by dz
// (c < 0: none), under k.
func (p piece) eval(k ssm.Kernel, j, c int, dz float64, z []float64) float64 {
	copy(z, p.draw(j))
	if c >= 0 {
		z[c] += dz
	}
	if p.complete {
		complete1(k, z, p.prev(j))
	}
	return p.logAt(k, j, z)
}

// moments returns, for each coordinate u_i, the averages over the draws of
// the score s_j = ∂/∂u_i log f_u(draw j) and of the information term
// s_j² + ∂²/∂u_i² log f_u(draw j), by central differences in u with step
// h = 1e-3·max(1, |u_i|); and for each component c of the draws the
// average of ∂/∂z_c log f_u(z) at the draw (Stein's identity), by central
// differences with step 1e-4·max(1, |z_c|).
func moments(m ssm.Model, u []float64, p piece) ([]Moment, error) {
	names := m.ParamNames()
	n := p.n
	nf := float64(n)
	mean := func(v []float64) Moment {
		var s, s2 float64
		for _, x := range v {
			s, s2 = s+x, s2+x*x
		}
		return Moment{Mean: s / nf, SE: math.Sqrt(math.Max(s2/nf-(s/nf)*(s/nf), 0) / (nf - 1))}
	}
	f0, fp, fm := make([]float64, n), make([]float64, n), make([]float64, n)
	z := make([]float64, p.dim)
	k, err := m.Bind(u)
	if err != nil {
		return nil, fmt.Errorf("ssmtest: Bind at u = %v: %w", u, err)
	}
	for j := range f0 {
		f0[j] = p.eval(k, j, -1, 0, z)
	}
	v := append([]float64(nil), u...)
	var out []Moment
	for i := range u {
		h := 1e-3 * math.Max(1, math.Abs(u[i]))
		for _, c := range []struct {
			d   float64
			dst []float64
		}{{h, fp}, {-h, fm}} {
			v[i] = u[i] + c.d
			kv, err := m.Bind(v)
			if err != nil {
				return nil, fmt.Errorf("ssmtest: Bind at u = %v: %w", v, err)
			}
			for j := range c.dst {
				c.dst[j] = p.eval(kv, j, -1, 0, z)
			}
		}
		v[i] = u[i]
		for j := range f0 {
			sj := (fp[j] - fm[j]) / (2 * h)
			fp[j], fm[j] = sj, sj*sj+(fp[j]-2*f0[j]+fm[j])/(h*h)
		}
		name := fmt.Sprintf("u[%d]", i)
		if i < len(names) {
			name += " (" + names[i] + ")"
		}
		s, b := mean(fp), mean(fm)
		s.Name, b.Name = p.what+": score "+name, p.what+": score² + curvature "+name
		out = append(out, s, b)
	}
	for c := 0; c < p.dim; c++ {
		for j := range fp {
			h := 1e-4 * math.Max(1, math.Abs(p.draw(j)[c]))
			fp[j] = (p.eval(k, j, c, h, z) - p.eval(k, j, c, -h, z)) / (2 * h)
		}
		st := mean(fp)
		st.Name = fmt.Sprintf("%s: Stein d/dz[%d] log density", p.what, c)
		out = append(out, st)
	}
	return out, nil
}

// SamplerMoments checks the kernel's samplers against its log densities at
// u with n draws of each. For a density f_u of a draw Z, the score,
// information and Stein identities
//
//	E_u[∂_i log f_u(Z)] = 0,   E_u[(∂_i log f_u(Z))² + ∂_i² log f_u(Z)] = 0,   E_u[∂/∂z_c log f_u(Z)] = 0
//
// hold when Z ~ f_u, for every coordinate u_i and component z_c (the last
// for a density on all of R vanishing at ±∞); the derivatives are central
// differences of the log densities (not AddScore). They are averaged over
//
//   - n draws of SampleInitial (one block), f = LogInitial;
//   - n draws of SampleTransition (one block) from the rows of a path
//     simulated by ssm.Simulate, f = LogTransitions;
//   - the n observations of that path given its states, f = AddLogEmission.
//
// When the kernel is an [ssm.StateCompleter], the deterministic part of a
// moved state row is re-derived (so its Stein moments are 0), as in
// ScorePath. A sampler that draws from another law than its density
// shifts some of these moments away from zero unless the two laws agree
// in the mean of every parameter score and of the gradient in z (a wrong
// law that no parameter and no shift can express, such as the wrong shape
// of a fixed-shape noise, can escape). The error is non-nil only when the
// model cannot be bound.
func SamplerMoments(m ssm.Model, u []float64, n int, rng *rand.Rand) ([]Moment, error) {
	d := m.Dims()
	if len(u) != d.Param || n < 2 {
		panic(fmt.Sprintf("ssmtest: SamplerMoments with %d parameters for %d and n = %d", len(u), d.Param, n))
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, fmt.Errorf("ssmtest: Bind at u = %v: %w", u, err)
	}
	s := d.State
	x0 := make([]float64, n*s)
	k.SampleInitial(x0, rng)
	path, y := ssm.Simulate(k, d, n, rng)
	prev := func(j int) []float64 { return path[j*s : (j+1)*s] }
	x1 := make([]float64, n*s)
	k.SampleTransition(x1, path[:n*s], rng)
	var out []Moment
	for _, p := range []piece{
		{what: "initial", n: n, dim: s, complete: true,
			draw: func(j int) []float64 { return x0[j*s : (j+1)*s] },
			prev: func(int) []float64 { return nil },
			logAt: func(k ssm.Kernel, _ int, z []float64) float64 {
				return k.LogInitial(z)
			}},
		{what: "transition", n: n, dim: s, complete: true, prev: prev,
			draw: func(j int) []float64 { return x1[j*s : (j+1)*s] },
			logAt: func(k ssm.Kernel, j int, z []float64) float64 {
				var lt [1]float64
				k.LogTransitions(lt[:], z, prev(j))
				return lt[0]
			}},
		{what: "emission", n: n, dim: d.Obs,
			draw: func(j int) []float64 { return y.At(j) },
			logAt: func(k ssm.Kernel, j int, z []float64) float64 {
				var lw [1]float64
				k.AddLogEmission(lw[:], z, path[(j+1)*s:(j+2)*s])
				return lw[0]
			}},
	} {
		ms, err := moments(m, u, p)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// complete1 re-derives the deterministic part of row x from prev under k.
func complete1(k ssm.Kernel, x, prev []float64) {
	if c, ok := k.(ssm.StateCompleter); ok {
		c.Complete(x, prev)
	}
}

// proposalBlock is the number of rows per Propose call in ProposalMoments,
// so that a proposal's block code is exercised.
const proposalBlock = 7

// ProposalMoments checks the kernel's [ssm.Proposer] at u. From the rows of
// a path and data of length n simulated by ssm.Simulate (every fifth
// observation set missing), it draws x_j ~ Propose(prev_j, y_j), in blocks
// of 7 rows sharing one y, and returns the score and information moments
// and Stein moments of LogProposal (as SamplerMoments), and the largest error of the weight
// Propose added,
//
//	|Δlogw_j − [log p(y_j|x_j) + log p(x_j|prev_j) − log q(x_j|prev_j, y_j)]| / max(1, |terms|),
//
// which is zero up to rounding for a correct proposal. The error is
// non-nil when the kernel is not a Proposer or the model cannot be bound.
func ProposalMoments(m ssm.Model, u []float64, n int, rng *rand.Rand) (ms []Moment, weightErr float64, err error) {
	d := m.Dims()
	if len(u) != d.Param || n < 2 {
		panic(fmt.Sprintf("ssmtest: ProposalMoments with %d parameters for %d and n = %d", len(u), d.Param, n))
	}
	k, err := m.Bind(u)
	if err != nil {
		return nil, math.Inf(1), fmt.Errorf("ssmtest: Bind at u = %v: %w", u, err)
	}
	if _, ok := k.(ssm.Proposer); !ok {
		return nil, math.Inf(1), fmt.Errorf("ssmtest: the kernel of %T is not an ssm.Proposer", m)
	}
	s := d.State
	path, y := ssm.Simulate(k, d, n, rng)
	yj := func(j int) []float64 { return y.At(j - j%proposalBlock) }
	for j := 4; j < n; j += 5 {
		for c := range y.At(j) {
			y.At(j)[c] = math.NaN()
		}
	}
	prev := path[:n*s]
	x := make([]float64, n*s)
	logw := make([]float64, n)
	for lo := 0; lo < n; lo += proposalBlock {
		hi := min(lo+proposalBlock, n)
		k.(ssm.Proposer).Propose(x[lo*s:hi*s], logw[lo:hi], prev[lo*s:hi*s], yj(lo), rng)
	}
	var lt, le [1]float64
	for j := range logw {
		xr, pr, yr := x[j*s:(j+1)*s], prev[j*s:(j+1)*s], yj(j)
		k.LogTransitions(lt[:], xr, pr)
		le[0] = 0
		k.AddLogEmission(le[:], yr, xr)
		lq := k.(ssm.Proposer).LogProposal(xr, pr, yr)
		want := le[0] + lt[0] - lq
		scale := math.Max(1, math.Max(math.Abs(le[0]), math.Max(math.Abs(lt[0]), math.Abs(lq))))
		e := math.Abs(logw[j]-want) / scale
		if math.IsNaN(e) {
			e = math.Inf(1)
		}
		weightErr = math.Max(weightErr, e)
	}
	ms, err = moments(m, u, piece{what: "proposal", n: n, dim: s, complete: true,
		draw: func(j int) []float64 { return x[j*s : (j+1)*s] },
		prev: func(j int) []float64 { return prev[j*s : (j+1)*s] },
		logAt: func(k ssm.Kernel, j int, z []float64) float64 {
			return k.(ssm.Proposer).LogProposal(z, prev[j*s:(j+1)*s], yj(j))
		}})
	return ms, weightErr, err
}

// ErrSampler is wrapped by the errors of CheckSampler and CheckProposal when
// draws disagree with the densities.
var ErrSampler = errors.New("ssmtest: draws disagree with the log density")

// failing reports the moments beyond SamplerZ.
func failing(ms []Moment) error {
	var bad []string
	for _, mo := range ms {
		if !(math.Abs(mo.Z()) <= SamplerZ) {
			bad = append(bad, mo.String())
		}
	}
	if bad == nil {
		return nil
	}
	return fmt.Errorf("%w: %d of %d moments beyond %d standard errors:\n%s", ErrSampler, len(bad), len(ms), SamplerZ, strings.Join(bad, "\n"))
}

// CheckSampler runs SamplerMoments and returns an error wrapping
// ErrSampler, listing the moments more than SamplerZ standard errors from
// zero, or nil. n = 4000 takes milliseconds for a scalar model.
func CheckSampler(m ssm.Model, u []float64, n int, rng *rand.Rand) error {
	ms, err := SamplerMoments(m, u, n, rng)
	if err != nil {
		return err
	}
	return failing(ms)
}

// CheckProposal runs ProposalMoments and returns an error wrapping
// ErrSampler when a moment is more than SamplerZ standard errors from zero
// or the weight error exceeds WeightTol, or nil.
func CheckProposal(m ssm.Model, u []float64, n int, rng *rand.Rand) error {
	ms, we, err := ProposalMoments(m, u, n, rng)
	if err != nil {
		return err
	}
	if we > WeightTol {
		return fmt.Errorf("%w: Propose's weight differs from log p(y|x) + log p(x|prev) − log q(x|prev, y) by %.3g (relative)", ErrSampler, we)
	}
	return failing(ms)
}

// Simulator runs CheckSampler with n draws and, when the kernel at u is an
// [ssm.Proposer], CheckProposal, reporting failures through tb.
func Simulator(tb testing.TB, m ssm.Model, u []float64, n int, rng *rand.Rand) {
	tb.Helper()
	if err := CheckSampler(m, u, n, rng); err != nil {
		tb.Errorf("samplers at u = %v: %v", u, err)
	}
	k, err := m.Bind(u)
	if err != nil {
		tb.Errorf("Bind at u = %v: %v", u, err)
		return
	}
	if _, ok := k.(ssm.Proposer); ok {
		if err := CheckProposal(m, u, n, rng); err != nil {
			tb.Errorf("proposal at u = %v: %v", u, err)
		}
	}
}
