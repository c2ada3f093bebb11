package sgmcmc

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/surrogate"
)

// JSONFloat is a float64 that encoding/json writes in the shortest form
// that reads back exactly (strconv 'g', -1), and as null when it is NaN or
// ±Inf, which JSON cannot hold (encoding/json refuses a plain float64
// holding them). A null decodes as no change to the value.
type JSONFloat float64

// MarshalJSON implements json.Marshaler.
func (v JSONFloat) MarshalJSON() ([]byte, error) {
	if f := float64(v); !math.IsNaN(f) && !math.IsInf(f, 0) {
		return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
	}
	return []byte("null"), nil
}

// ParamJSON is a ParamSummary ready for encoding/json: snake_case names,
// and null for an undefined diagnostic (the ESS or R-hat of too few draws).
type ParamJSON struct {
	Name    string    `json:"name"`
	Mean    JSONFloat `json:"mean"`
	SD      JSONFloat `json:"sd"`
	Q05     JSONFloat `json:"q05"`
	Q50     JSONFloat `json:"q50"`
	Q95     JSONFloat `json:"q95"`
	BulkESS JSONFloat `json:"bulk_ess"`
	TailESS JSONFloat `json:"tail_ess"`
	Rhat    JSONFloat `json:"rhat"`
	MCSE    JSONFloat `json:"mcse"`
}

// JSON returns the row as a ParamJSON.
func (s ParamSummary) JSON() ParamJSON {
	return ParamJSON{s.Name, JSONFloat(s.Mean), JSONFloat(s.SD), JSONFloat(s.Q05), JSONFloat(s.Q50),
		JSONFloat(s.Q95), JSONFloat(s.BulkESS), JSONFloat(s.TailESS), JSONFloat(s.Rhat), JSONFloat(s.MCSE)}
}

// PosteriorReport is the summary of a Posterior with its diagnostics and
// the figures of its run, ready for encoding/json (Posterior.Report). A
// program adds its own members by embedding it in a struct without a tag:
// encoding/json then writes these fields in place, in this order.
type PosteriorReport struct {
	Gradient   string      `json:"gradient"`    // the estimator the chains used
	Method     string      `json:"method"`      // Posterior.Method: the chains' kernel
	Filter     string      `json:"filter"`      // Preparation.Path: the filter and why
	Params     []ParamJSON `json:"params"`      // Posterior.Summary
	KSD        JSONFloat   `json:"ksd"`         // Posterior.KSD.KSD, null when not computed
	Step       float64     `json:"step"`        // Preparation.StepSize (posterior scale)
	NoiseRatio []float64   `json:"noise_ratio"` // Preparation.NoiseRatio (null with full-data scores)
	// Accept and AcceptIndependent are the Metropolis–Hastings acceptance
	// rates with full-data scores (FullGradient), absent otherwise: of
	// the Langevin and the independence proposals, or, when the chains
	// used surrogate transitions (Method says which), of the random-walk
	// steps and the surrogate transitions.
	Accept            float64  `json:"accept,omitempty"`
	AcceptIndependent float64  `json:"accept_independent,omitempty"`
	Iters             int      `json:"iters"`       // sampling iterations per chain
	AdaptIters        int      `json:"adapt_iters"` // adaptation iterations per chain (Posterior.BurnIn)
	Seconds           float64  `json:"seconds"`     // wall-clock time of the whole fit
	Chains            int      `json:"chains"`
	Kept              int      `json:"kept"`     // kept draws over all chains
	Warnings          []string `json:"warnings"` // Posterior.Warnings, [] when there are none
	// Discretisation is Preparation.Discretisation(): what the
	// correction towards a model's finer scorer did, absent when there is
	// none.
	Discretisation *DiscretisationReport `json:"discretisation,omitempty"`
}

// Report returns the posterior's summary, diagnostics and run figures as
// a PosteriorReport.
func (p *Posterior) Report() PosteriorReport {
	r := PosteriorReport{
		Gradient: p.Preparation.Gradient.String(), Method: p.Method(), Filter: p.Preparation.Path, KSD: JSONFloat(math.NaN()),
		Step: p.Preparation.StepSize, NoiseRatio: p.Preparation.NoiseRatio(),
		Accept: p.Preparation.Accept, AcceptIndependent: p.Preparation.AcceptIndependent,
		Iters: p.Iterations, AdaptIters: p.BurnIn, Seconds: p.Total.Seconds(),
		Chains: len(p.U), Kept: p.Draws(), Warnings: p.Warnings,
		Discretisation: p.Preparation.Discretisation(),
	}
	for _, s := range p.Summary() {
		r.Params = append(r.Params, s.JSON())
	}
	if p.KSD != nil {
		r.KSD = JSONFloat(p.KSD.KSD)
	}
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r
}

// NoiseRatio returns NoiseCV[i,i] / NoisePlain[i,i] per coordinate of u:
// the factor by which the control variate reduces the variance of the
// gradient noise (nil when the noise was not measured, or with full-data
// scores, which have none: AutoGradient measures it before choosing them,
// but not where the chains are).
func (pr Preparation) NoiseRatio() []float64 {
	p := len(pr.Mode)
	if pr.Gradient == FullGradient || len(pr.NoiseCV) < p*p || len(pr.NoisePlain) < p*p {
		return nil
	}
	r := make([]float64, p)
	for i := range r {
		if pr.NoisePlain[i*p+i] == 0 {
			return nil
		}
		r[i] = pr.NoiseCV[i*p+i] / pr.NoisePlain[i*p+i]
	}
	return r
}

// Method names the transitions the chains ran: "preconditioned SGLD", or
// for full-data chains "Metropolis–Hastings (…)" with the proposals they
// used: surrogate transitions and random-walk steps, or Langevin (with
// Preparation.Walk random-walk) and independence proposals.
func (p *Posterior) Method() string {
	pr := &p.Preparation
	switch {
	case pr.Gradient != FullGradient:
		return "preconditioned SGLD"
	case p.segments.mixed():
		return fmt.Sprintf("Metropolis–Hastings (surrogate transitions and random-walk steps in %d of %d segments, Langevin and independence proposals in the others)",
			p.segments.Surrogate, p.segments.Surrogate+p.segments.Other)
	case pr.sur != nil:
		return "Metropolis–Hastings (surrogate transitions and random-walk steps)"
	case pr.Walk:
		return "Metropolis–Hastings (random-walk and independence proposals)"
	}
	return "Metropolis–Hastings (Langevin and independence proposals)"
}

// WriteDiagnostics writes what follows the summary table (WriteText) in a
// report of the fit: the KSD (when computed), the step size (SGLD's or
// the Langevin proposals'; with surrogate transitions, the random-walk
// steps' sd per coordinate), the autocorrelation time and the
// iterations, the gradient noise ratio, the acceptance rates with
// full-data scores, the times taken, and every warning on a line
// "warning: ...".
func (p *Posterior) WriteDiagnostics(w io.Writer) error {
	pr := p.Preparation
	var b strings.Builder
	if pr.Path != "" {
		fmt.Fprintf(&b, "filter: %s\n", pr.Path)
	}
	if p.KSD != nil {
		fmt.Fprintf(&b, "KSD = %.4g (in u, over %d draws, full-data scores)\n", p.KSD.KSD, p.KSD.N)
	}
	step := fmt.Sprintf("step %.3g (posterior-scale)", pr.StepSize)
	if pr.Gradient == FullGradient && pr.sur != nil {
		// The Langevin step is not used: the local steps are random walks.
		step = fmt.Sprintf("random-walk step sd %.3g per coordinate (posterior-scale)", surrogate.Walk/math.Sqrt(float64(max(p.Dim, 1))))
	}
	fmt.Fprintf(&b, "%s, autocorrelation time ≈ %.0f; %d adaptation + %s sampling iterations per chain\n",
		step, pr.IAT, p.BurnIn, p.iterationRange())
	if nr := pr.NoiseRatio(); nr != nil {
		ratio := make([]string, 0, len(nr))
		for _, x := range nr {
			ratio = append(ratio, fmt.Sprintf("%.3g", x))
		}
		fmt.Fprintf(&b, "gradient noise variance per coordinate of u, control variate / plain: [%s] (at the chains' states)\n", strings.Join(ratio, " "))
	}
	if pr.Gradient == FullGradient {
		last := ""
		if p.segments.mixed() {
			last = " (of the last segment)"
		}
		fmt.Fprintf(&b, "full-data scores, Metropolis–Hastings acceptance rates%s: %s\n", last, pr.acceptance())
	}
	if p.resumed {
		fmt.Fprintf(&b, "preparation %.1f s (in the run that wrote the checkpoint); this run: sampling %.1f s, total %.1f s\n", pr.Seconds, p.Sampling.Seconds(), p.Total.Seconds())
	} else {
		fmt.Fprintf(&b, "preparation %.1f s, sampling %.1f s, total %.1f s\n", pr.Seconds, p.Sampling.Seconds(), p.Total.Seconds())
	}
	for _, warn := range p.Warnings {
		fmt.Fprintln(&b, "warning:", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
