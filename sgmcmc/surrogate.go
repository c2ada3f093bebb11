package sgmcmc

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/amis"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// surBase returns the model's prior and Constrain, for the surrogate.
func (f *fit) surBase() *surrogate.Base {
	m := f.model
	return &surrogate.Base{
		LogPrior:  func(u []float64) float64 { return m.LogPrior(nil, u) },
		Constrain: func(theta, u []float64) { m.Constrain(theta, u) },
	}
}

// chooseSurrogate fits the surrogate relative to q at the points and
// returns it when its holding time is at most surrogate.Gain times q's, else
// nil.
func (f *fit) chooseSurrogate(q *tmix.Mixture, xs [][]float64, lps, lw []float64) *surrogate.Surrogate {
	s, err := surrogate.Fit(q, xs, lps, lw, f.surBase(), surFitSeed, surFitStream, f.s.Workers)
	if err != nil {
		f.log("surrogate transitions: not fitted (%v)", err)
		return nil
	}
	use := surrogateWorth(s.Hold, s.HoldProposal)
	verdict := "used"
	if !use {
		verdict = "not used"
	}
	f.log("surrogate transitions %s: a quadratic and a Gaussian process (length %.2g) on %d points; expected holding time %.2f, the proposal's %.2f",
		verdict, s.Ell, len(s.Alpha), s.Hold, s.HoldProposal)
	if !use {
		return nil
	}
	return s
}

// surrogateWorth reports whether a surrogate of holding time hold is
// worth its transitions against the proposal's holdProposal: at most
// surrogate.Gain times it.
func surrogateWorth(hold, holdProposal float64) bool {
	return hold <= surrogate.Gain*holdProposal
}

// refitSurrogate fits the surrogate again, relative to the current
// proposal, to the importance-sampling points and the chains' draws so
// far (us: per chain, row-major; lps: their log posteriors), each set
// weighing half: the draws cover π's tails in proportion, where the
// rounds' points are few.
func (f *fit) refitSurrogate(us, lps [][]float64) *surrogate.Surrogate {
	q := mixtureOf(f.prep.proposal)
	if q == nil {
		return nil
	}
	p := f.dim
	cx, clp := amis.ThinnedDraws(us, lps, p)
	xs, lp := slices.Clone(f.isPts.xs), slices.Clone(f.isPts.lps)
	lw := make([]float64, len(xs))
	share := 0.0 // the chains' draws alone: equal weights
	if len(xs) > 0 {
		norm := tmix.LogSumExp(f.isPts.lw) - math.Log(0.5)
		for i, v := range f.isPts.lw {
			lw[i] = v - norm
		}
		share = math.Log(0.5 / float64(max(len(cx), 1)))
	}
	for i := range cx {
		xs, lp, lw = append(xs, cx[i]), append(lp, clp[i]), append(lw, share)
	}
	// Interleave so that even thinning keeps both sets.
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	rng := rand.New(rand.NewPCG(f.s.Seed, surrogateStream))
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	sx, slp, slw := make([][]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for j, i := range order {
		sx[j], slp[j], slw[j] = xs[i], lp[i], lw[i]
	}
	return f.chooseSurrogate(q, sx, slp, slw)
}

// setSurrogate makes s (nil: none) the chains' surrogate. With one, every
// step is a surrogate transition: its random-walk steps on π̃ move a chain
// locally as the Langevin steps did, without the two gradients a
// Langevin step costs (GARCH on DAX, σ² node filter: 50 s instead of 77 with 10%
// Langevin steps, whose chains also stood longer in μ's tail); without
// one, isIndependence of the steps are independence steps.
func (f *fit) setSurrogate(s *surrogate.Surrogate) {
	pr := &f.prep
	pr.sur, pr.SurrogateHold, pr.Independence = s, 0, isIndependence
	if s != nil {
		pr.SurrogateHold, pr.Independence = s.Hold, 1-surrogate.WalkShare
	}
}

// independenceKind names FullGradient's non-Langevin steps.
func (pr *Preparation) independenceKind() string {
	if pr.sur != nil {
		return "surrogate transitions"
	}
	return "independence proposals"
}

// acceptance describes FullGradient's acceptance rates.
func (pr *Preparation) acceptance() string {
	local := "Langevin"
	if pr.sur != nil || pr.Walk {
		local = "random walk"
	}
	return fmt.Sprintf("%s %.2f, %s %.2f", local, pr.Accept, pr.independenceKind(), pr.AcceptIndependent)
}
