package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"text/tabwriter"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// predRow is the held-out fit of one method, per test observation.
type predRow struct {
	Method string `json:"method"`
	Draws  int    `json:"draws"`
	Failed int    `json:"failed_draws"`
	// MeanLogLik is the average over draws of log p̂(y_test | θ) / n.
	MeanLogLik compare.Num `json:"mean_loglik_per_obs"`
	// SDChains is the sd over chains of each chain's MeanLogLik.
	SDChains compare.Num `json:"sd_over_chains"`
	// LogMeanLik is log((1/M) Σ p̂(y_test | θ_m)) / n, the Monte Carlo
	// posterior predictive density.
	LogMeanLik compare.Num `json:"log_mean_lik_per_obs"`
}

// predictive estimates, for c.predDraws posterior draws per chain of every
// method at its selected step size, log p(y_test | θ) with a bootstrap or
// guided particle filter (the proposal of the gradients, -proposal), summed
// over the independent test segments.
func predictive(ctx context.Context, m ssm.Model, prop pf.Proposal, test ssm.Dataset, res *compare.Result, c *config, stream uint64) ([]predRow, error) {
	f, err := pf.New(pf.Settings{N: c.predN, Proposal: prop})
	if err != nil {
		return nil, err
	}
	n := float64(test.TotalLen())
	var rows []predRow
	for mi := range res.Methods {
		rng := rand.New(rand.NewPCG(c.Seed, 2000+100*stream+uint64(mi)))
		g := res.Methods[mi].Selected()
		row := predRow{Method: res.Methods[mi].Name}
		var all, chainMeans []float64
		for k := range g.Chains {
			ch := &g.Chains[k]
			if ch.Err != nil {
				continue
			}
			var lls []float64
			for _, u := range ch.Sample(c.predDraws) {
				ll, err := testLogLik(ctx, f, m, test, u, rng)
				if err != nil {
					if ctx.Err() != nil {
						return nil, ctx.Err()
					}
					row.Failed++
					continue
				}
				lls = append(lls, ll)
			}
			if len(lls) > 0 {
				chainMeans = append(chainMeans, mean(lls)/n)
				all = append(all, lls...)
			}
		}
		row.Draws = len(all)
		row.MeanLogLik, row.SDChains, row.LogMeanLik = compare.Num(math.NaN()), compare.Num(math.NaN()), compare.Num(math.NaN())
		if len(all) > 0 {
			row.MeanLogLik = compare.Num(mean(all) / n)
			row.LogMeanLik = compare.Num((logSumExp(all) - math.Log(float64(len(all)))) / n)
		}
		if len(chainMeans) > 1 {
			mu := mean(chainMeans)
			s := 0.0
			for _, v := range chainMeans {
				s += (v - mu) * (v - mu)
			}
			row.SDChains = compare.Num(math.Sqrt(s / float64(len(chainMeans)-1)))
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func testLogLik(ctx context.Context, f *pf.Filter, m ssm.Model, test ssm.Dataset, u []float64, rng *rand.Rand) (float64, error) {
	k, err := m.Bind(u)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, seq := range test.Sequences {
		r, err := f.Run(ctx, k, m.Dims(), seq, ssm.Full(seq.Len()), nil, nil, rng)
		if err != nil {
			return 0, err
		}
		total += r.LogLik
	}
	return total, nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func logSumExp(v []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = max(mx, x)
	}
	s := 0.0
	for _, x := range v {
		s += math.Exp(x - mx)
	}
	return mx + math.Log(s)
}

// heldOut is the held-out fit of every method: a paper.Extra.
type heldOut struct {
	res  *compare.Result
	rows []predRow
	obs  int // test observations
	n    int // particles of the filter
}

// WriteText writes the table of the held-out fit.
func (h heldOut) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nHeld-out predictive log-likelihood per test observation (%d obs), PF N = %d\n", h.obs, h.n)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tdraws\tE log p (sd over chains)\tlog E p")
	for _, r := range h.rows {
		fmt.Fprintf(tw, "%s\t%d\t%.4f (%.4f)\t%.4f\n", r.Method, r.Draws, r.MeanLogLik, r.SDChains, r.LogMeanLik)
	}
	return tw.Flush()
}

// output is the JSON file written per model.
type output struct {
	KSD        compare.Summary `json:"ksd"`
	Predictive []predRow       `json:"predictive"`
}

// WriteJSON writes the comparison's summary and the held-out fit.
func (h heldOut) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(output{KSD: h.res.Summary(), Predictive: h.rows})
}
