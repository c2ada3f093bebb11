package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/paper"
)

// group is one parameter group of the report: the coordinates of u (and of
// the natural parameters, which have the same layout) it holds, and those
// whose posterior means are averaged for the means table.
type group struct {
	Name   string `json:"name"`
	Coords []int  `json:"coords"`
	mean   []int
}

// grouping reports a comparison on models.LGSSMd{D: d} by the paper's
// groups: phi (the d² entries of A), sigma and tau (d entries each).
type grouping struct {
	groups []group
	full   *compare.Result // the per-coordinate result, set by reduce
}

func newGrouping(d int) *grouping {
	seq := func(from, n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = from + i
		}
		return s
	}
	diag := make([]int, d)
	for i := range diag {
		diag[i] = i*d + i
	}
	d2 := d * d
	return &grouping{groups: []group{
		{Name: "phi", Coords: seq(0, d2), mean: diag},
		{Name: "sigma", Coords: seq(d2, d), mean: seq(d2, d)},
		{Name: "tau", Coords: seq(d2+d, d), mean: seq(d2+d, d)},
	}}
}

// reduce is the experiment's paper.Experiment.Reduce: it keeps res (for
// after) and returns it by group. A group's KSD is the sum of its
// coordinates' KSD_j (ksd.Result.Group, the paper's formula), so the groups
// add up to the total the step size was chosen by; its posterior mean (sd)
// is the average over A's diagonal, or over the group, of the coordinates'
// means (sds); its MSE trace the average of its coordinates' (the mean
// squared error over the entries of A, as the paper's MSE of φ).
func (g *grouping) reduce(res *compare.Result) (*compare.Result, error) {
	g.full = res
	out := &compare.Result{Obs: res.Obs, Runtime: res.Runtime}
	for _, gr := range g.groups {
		out.Names = append(out.Names, gr.Name)
	}
	for _, m := range res.Methods {
		om := compare.MethodResult{Name: m.Name, Best: m.Best}
		for j := range m.Grid {
			om.Grid = append(om.Grid, g.reducePoint(&m.Grid[j]))
		}
		out.Methods = append(out.Methods, om)
	}
	return out, nil
}

func (g *grouping) reducePoint(p *compare.GridPoint) compare.GridPoint {
	q := compare.GridPoint{Eps: p.Eps, H: p.H, Failed: p.Failed, Times: p.Times}
	for i := range p.Chains {
		c := &p.Chains[i]
		oc := compare.Chain{Iterations: c.Iterations, Seconds: c.Seconds, Err: c.Err, KSDDraws: c.KSDDraws}
		if c.LogKSD != nil {
			oc.LogKSD = append(g.logKSD(c.LogKSD, 1), c.LogKSD[len(c.LogKSD)-1])
		}
		for _, gr := range g.groups {
			oc.Mean = append(oc.Mean, average(c.Mean, gr.mean))
			oc.SD = append(oc.SD, average(c.SD, gr.mean))
		}
		q.Chains = append(q.Chains, oc)
	}
	q.LogKSD = summarise(q.Chains, len(g.groups)+1)
	if p.MSE != nil {
		for _, gr := range g.groups {
			mse := make([]float64, len(p.Times))
			for t := range mse {
				for _, j := range gr.Coords {
					mse[t] += p.MSE[j][t]
				}
				mse[t] /= float64(len(gr.Coords))
			}
			q.MSE = append(q.MSE, mse)
		}
	}
	return q
}

// logKSD returns log10 of every group's KSD from the coordinates'
// log10 KSD_j: log10 (Σ_j KSD_j^r)^(1/r) over the group's coordinates, the
// sum for r = 1 and the within-group joint KSD √(Σ_j KSD_j²) for r = 2.
func (g *grouping) logKSD(perCoord []float64, r float64) []float64 {
	out := make([]float64, len(g.groups))
	for k, gr := range g.groups {
		s := 0.0
		for _, j := range gr.Coords {
			s += math.Pow(10, r*perCoord[j])
		}
		out[k] = math.Log10(s) / r
	}
	return out
}

func average(v []float64, idx []int) float64 {
	s := 0.0
	for _, j := range idx {
		s += v[j]
	}
	return s / float64(len(idx))
}

// summarise returns the mean (sd) over the successful chains of each of
// the n columns of their LogKSD (NaN when no chain succeeded).
func summarise(chains []compare.Chain, n int) []compare.MeanSD {
	cols := make([][]float64, n)
	for i := range chains {
		if c := &chains[i]; c.Err == nil && c.LogKSD != nil {
			for j, v := range c.LogKSD {
				cols[j] = append(cols[j], v)
			}
		}
	}
	out := make([]compare.MeanSD, n)
	for j, v := range cols {
		out[j].Mean, out[j].SD = stat.MeanStdDev(v, nil)
	}
	return out
}

// after is the experiment's paper.Experiment.After: the within-group joint
// KSD table (block), closer to the statistic of the paper's reference code.
func (g *grouping) after(_ context.Context, res *compare.Result) (paper.Extra, error) {
	b := &blockKSD{Groups: g.groups, Summary: res.Summary()}
	for _, m := range g.full.Methods {
		p := m.Selected()
		var chains []compare.Chain
		for i := range p.Chains {
			c := &p.Chains[i]
			oc := compare.Chain{Err: c.Err}
			if c.LogKSD != nil {
				oc.LogKSD = g.logKSD(c.LogKSD, 2)
				total := 0.0
				for _, v := range oc.LogKSD {
					total += math.Pow(10, v)
				}
				oc.LogKSD = append(oc.LogKSD, math.Log10(total))
			}
			chains = append(chains, oc)
		}
		row := blockRow{Method: m.Name, Eps: compare.Num(p.Eps)}
		for _, v := range summarise(chains, len(g.groups)+1) {
			row.LogKSD = append(row.LogKSD, [2]compare.Num{compare.Num(v.Mean), compare.Num(v.SD)})
			row.text = append(row.text, v.String())
		}
		b.Block = append(b.Block, row)
	}
	return b, nil
}

// blockKSD is the command's paper.Extra: the grouped summary and the
// within-group joint KSD at each method's selected step size.
type blockKSD struct {
	Groups  []group         `json:"groups"`
	Summary compare.Summary `json:"summary"`
	Block   []blockRow      `json:"block_log10_ksd"`
}

// blockRow holds one method's log10 √(Σ_{j∈g} KSD_j²) per group g and
// log10 of their sum, [mean, sd] over chains.
type blockRow struct {
	Method string           `json:"method"`
	Eps    compare.Num      `json:"eps"`
	LogKSD [][2]compare.Num `json:"log10_ksd"`
	text   []string
}

// WriteText implements paper.Extra.
func (b *blockKSD) WriteText(w io.Writer) error {
	fmt.Fprintln(w, "\nWithin-group joint KSD: log10 sqrt(sum over the group of KSD_j^2), total = log10 of the groups' sum,")
	fmt.Fprintln(w, "mean (sd) over chains at the selected eps (the per-variable statistic of the paper's reference code,")
	fmt.Fprintln(w, "except that the kernel is on all of u)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "method\teps")
	for _, gr := range b.Groups {
		fmt.Fprintf(tw, "\t%s", gr.Name)
	}
	fmt.Fprintln(tw, "\ttotal")
	for _, r := range b.Block {
		fmt.Fprintf(tw, "%s\t%g", r.Method, float64(r.Eps))
		for _, s := range r.text {
			fmt.Fprintf(tw, "\t%s", s)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteJSON implements paper.Extra.
func (b *blockKSD) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(b)
}
