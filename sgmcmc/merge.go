package sgmcmc

import (
	"errors"
	"fmt"
	"io"
)

// DrawSummary is the summary Fit gives its posterior, computed from draws
// made elsewhere: the trace files of several fits run on different machines
// (examples/merge), or the chains of any sampler.
type DrawSummary struct {
	Params []ParamSummary // one row per parameter, as Posterior.Summary
	// Warnings are Fit's convergence warnings: R-hat above 1.01, bulk or
	// tail ESS below 400, chains too short for ESS and R-hat.
	Warnings []string
	Chains   int // chains with draws
	Draws    int // draws over all chains
	// MinDraws is the length of the shortest chain: ESS, R-hat and MCSE
	// use the first MinDraws draws of every chain.
	MinDraws int
}

// SummarizeDraws summarises draws of len(names) parameters from several
// chains with the code that summarises Fit's posterior, so that it gives the
// same numbers and warnings as Posterior.Summary and Posterior.Warnings for
// the same draws. chains[c] holds the draws of chain c row-major, laid out
// as Posterior.Natural: draw i is chains[c][i*len(names):(i+1)*len(names)].
//
// Mean, sd and the 5/50/95% quantiles pool every draw; bulk and tail ESS,
// the rank-normalised split R-hat and MCSE use the first MinDraws draws of
// every chain, as Fit does when its chains stop at different iterations.
// Chains without draws are ignored, as Fit ignores them. A non-finite draw
// makes the diagnostics of its parameter NaN. It returns an error when names
// is empty, a chain's length is not a multiple of len(names), or there are
// no draws.
func SummarizeDraws(names []string, chains [][]float64) (*DrawSummary, error) {
	d := len(names)
	if d == 0 {
		return nil, errors.New("sgmcmc: SummarizeDraws: no parameter names")
	}
	s := &DrawSummary{}
	var used [][]float64
	for c, x := range chains {
		if len(x)%d != 0 {
			return nil, fmt.Errorf("sgmcmc: SummarizeDraws: chain %d holds %d values, not a multiple of %d parameters", c, len(x), d)
		}
		if len(x) == 0 {
			continue
		}
		n := len(x) / d
		if len(used) == 0 || n < s.MinDraws {
			s.MinDraws = n
		}
		s.Draws += n
		used = append(used, x)
	}
	if len(used) == 0 {
		return nil, errors.New("sgmcmc: SummarizeDraws: no draws")
	}
	p := &Posterior{Names: names, Natural: used}
	p.summarize()
	s.Params, s.Warnings, s.Chains = p.summary, p.Warnings, len(used)
	return s, nil
}

// WriteText writes the summary table in the format of Posterior.WriteText.
func (s *DrawSummary) WriteText(w io.Writer) error {
	return (&Posterior{summary: s.Params}).WriteText(w)
}
