package states

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Score has sgmcmc.Score's fields, in its order, so that the one converts
// into the other (see there for their meaning).
type Score struct {
	LogScore, SE, ESS, Pointwise float64
	PerRow, ByDraw               []float64
	Draws                        int
	Exact                        bool
}

// PredictiveScore scores held-out rows that continue the sequence: at
// each posterior draw, the one-step-ahead predictive densities of the
// held-out rows from a filter run over the last Buffer fitted rows (0:
// all) and on through the held-out ones, averaged over the draws on the
// density scale. heldOut must be valid for the model.
func (r *Run) PredictiveScore(ctx context.Context, heldOut ssm.Sequence) (*Score, error) {
	s := r.s
	T, H, O := r.seq.Len(), heldOut.Len(), r.dims.Obs
	hw := historyWindow(s.Buffer, T, 0)
	L := T - hw.Start + H // rows of the concatenated sequence
	win := ssm.Full(L)
	D := len(r.draws)
	logp := make([]float64, D*H)
	workers, err := r.newWorkers()
	if err != nil {
		return nil, err
	}
	err = r.forEach(ctx, D, func(wi, d int) error {
		w := workers[wi]
		if len(w.concat) != L*O {
			w.concat = make([]float64, L*O)
			copy(w.concat, r.seq.Y[hw.Start*O:T*O])
			copy(w.concat[(T-hw.Start)*O:], heldOut.Y)
			w.logp = make([]float64, L)
		}
		cat := ssm.Sequence{Obs: O, Y: w.concat}
		if r.exact != nil {
			if _, err := r.exact.SmoothStates(r.draws[d], cat, win, ssm.StateMoments{LogPred: w.logp}); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
		} else {
			k, err := r.bind(w, d)
			if err != nil {
				return err
			}
			w.src.Seed(s.Seed, r.streams.Score|uint64(d))
			if _, err := w.st.Run(ctx, k, r.dims, cat, win, pf.StateOutput{LogPred: w.logp}, w.rng); err != nil {
				return fmt.Errorf("posterior draw %d: %w", d, err)
			}
		}
		copy(logp[d*H:(d+1)*H], w.logp[L-H:])
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sgmcmc: predictive score: %w", err)
	}
	sc := &Score{PerRow: make([]float64, H), ByDraw: make([]float64, D), Draws: D, Exact: r.exact != nil}
	for d := range D {
		for t := range H {
			sc.ByDraw[d] += logp[d*H+t]
		}
	}
	sc.LogScore, sc.SE, sc.ESS = LogMeanExp(sc.ByDraw)
	col := make([]float64, D)
	for t := range H {
		for d := range D {
			col[d] = logp[d*H+t]
		}
		sc.PerRow[t], _, _ = LogMeanExp(col)
		sc.Pointwise += sc.PerRow[t]
	}
	return sc, nil
}

// LogMeanExp returns log((1/n)Σ e^{l_i}), the delta-method standard error
// of that log-mean (sd(e^l)/(√n·mean(e^l))) and the ESS (Σe^l)²/Σe^{2l},
// computed relative to the largest l.
func LogMeanExp(l []float64) (lme, se, ess float64) {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, v)
	}
	if math.IsInf(m, 0) || math.IsNaN(m) {
		return m, math.NaN(), 0
	}
	n := float64(len(l))
	s1, s2 := 0.0, 0.0
	for _, v := range l {
		e := math.Exp(v - m)
		s1 += e
		s2 += e * e
	}
	mean := s1 / n
	lme = m + math.Log(mean)
	ess = s1 * s1 / s2
	se = math.NaN()
	if n > 1 {
		vr := math.Max((s2-n*mean*mean)/(n-1), 0)
		se = math.Sqrt(vr/n) / mean
	}
	return lme, se, ess
}

// logLikRuns is the number of independent particle filters LogLik
// averages: each costs a pass of 4·PF.N particles, and the standard
// error falls as 1/√logLikRuns.
const logLikRuns = 8

// LogLik returns an estimate of log p(y | u) over the sequences and its
// standard error: exact (se 0) for a model with an ssm.ExactScorer
// (unless Particles); otherwise the log of the mean of logLikRuns
// independent particle-filter estimates, each unbiased for p(y | u), with
// 4·PF.N particles, and the delta-method standard error of that log-mean.
func (r *Run) LogLik(ctx context.Context, seqs []ssm.Sequence, u []float64) (ll, se float64, err error) {
	if ex, ok := r.model.(ssm.ExactScorer); ok && !r.s.Particles {
		for _, seq := range seqs {
			l, err := ex.ExactScore(nil, u, seq, ssm.Full(seq.Len()))
			if err != nil {
				return 0, 0, err
			}
			ll += l
		}
		return ll, 0, nil
	}
	lls := make([]float64, logLikRuns)
	err = r.forEach(ctx, logLikRuns, func(_, i int) error {
		k, err := r.model.Bind(u)
		if err != nil {
			return err
		}
		f, err := pf.New(pf.Settings{N: 4 * r.s.PF.N, Proposal: r.s.PF.Proposal, Resampling: r.s.PF.Resampling})
		if err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(r.s.Seed, r.streams.LogLik|uint64(i)))
		for _, seq := range seqs {
			res, err := f.Run(ctx, k, r.dims, seq, ssm.Full(seq.Len()), nil, nil, rng)
			if err != nil {
				return err
			}
			lls[i] += res.LogLik
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("sgmcmc: log-likelihood: %w", err)
	}
	ll, se, _ = LogMeanExp(lls)
	return ll, se, nil
}

// MeanU returns u(θ̄) for the mean θ̄ of the draws of the natural
// parameters (each chain d values per draw, one after another); dim is
// the length of u.
func MeanU(m ssm.Model, natural [][]float64, d, dim int) ([]float64, error) {
	theta := make([]float64, d)
	n := 0
	for _, c := range natural {
		for i := 0; i+d <= len(c); i += d {
			n++
			for j := range d {
				theta[j] += (c[i+j] - theta[j]) / float64(n)
			}
		}
	}
	if n == 0 {
		return nil, errNoDraws
	}
	u := make([]float64, dim)
	if err := m.Unconstrain(u, theta); err != nil {
		return nil, fmt.Errorf("sgmcmc: posterior mean: %w", err)
	}
	return u, nil
}
