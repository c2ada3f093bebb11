package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"

	"github.com/pbsgmcmc/pbsgmcmc/ksd"
)

// Param summarises the pooled posterior draws of one scalar parameter.
type Param struct {
	Name          string
	Mean, SD      float64
	Q05, Q50, Q95 float64 // 5, 50 and 95% quantiles of the pooled draws
	ESS           float64 // effective sample size of the mean (ksd.ESS)
	Rhat          float64 // rank-normalised split R-hat (ksd.RankRhat)
}

// Table is a posterior summary, one Param per parameter in model order.
type Table []Param

// Summarize summarises draws of len(names) parameters from several chains:
// chains[c] is the row-major K_c×len(names) block of chain c's draws (as
// sgmcmc.TraceChain.Natural). Chains with no draws are ignored. It returns
// an error when names is empty, a block's length is not a multiple of
// len(names), or there are no draws at all.
func Summarize(names []string, chains [][]float64) (Table, error) {
	dim := len(names)
	if dim == 0 {
		return nil, errors.New("report: no parameter names")
	}
	var used [][]float64
	nMin := math.MaxInt
	for c, x := range chains {
		if len(x)%dim != 0 {
			return nil, fmt.Errorf("report: chain %d holds %d values, not a multiple of %d parameters", c, len(x), dim)
		}
		if len(x) == 0 {
			continue
		}
		used = append(used, x)
		nMin = min(nMin, len(x)/dim)
	}
	if len(used) == 0 {
		return nil, errors.New("report: no draws to summarise")
	}
	t := make(Table, dim)
	for j, name := range names {
		cols := Columns(used, dim, j)
		var pooled []float64
		for _, col := range cols {
			pooled = append(pooled, col...)
		}
		mean, sd := stat.MeanStdDev(pooled, nil)
		if len(pooled) < 2 {
			sd = math.NaN()
		}
		slices.Sort(pooled)
		q := func(p float64) float64 { return quantile7(p, pooled) }
		for c := range cols {
			cols[c] = cols[c][:nMin]
		}
		t[j] = Param{
			Name: name, Mean: mean, SD: sd,
			Q05: q(0.05), Q50: q(0.5), Q95: q(0.95),
			ESS: ksd.ESS(cols), Rhat: ksd.RankRhat(cols),
		}
	}
	return t, nil
}

// quantile7 returns the p-quantile of the sorted x by linear interpolation
// between order statistics (type 7): x[h] at h = (n−1)p, interpolated.
func quantile7(p float64, x []float64) float64 {
	n := len(x)
	if n == 0 || math.IsNaN(x[n-1]) || math.IsNaN(x[0]) {
		return math.NaN()
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return x[n-1]
	}
	return x[lo] + (h-float64(lo))*(x[lo+1]-x[lo])
}

// Columns returns, for each chain (a row-major K_c×dim block), a copy of
// component j across its draws: the per-chain series the diagnostics of
// package ksd take.
func Columns(chains [][]float64, dim, j int) [][]float64 {
	if j < 0 || j >= dim {
		panic(fmt.Sprintf("report: column %d out of range [0,%d)", j, dim))
	}
	out := make([][]float64, len(chains))
	for c, x := range chains {
		col := make([]float64, len(x)/dim)
		for i := range col {
			col[i] = x[i*dim+j]
		}
		out[c] = col
	}
	return out
}

// MaxRhat returns the largest R-hat in the table (NaN if any is NaN).
func (t Table) MaxRhat() float64 {
	m := math.Inf(-1)
	for _, p := range t {
		if math.IsNaN(p.Rhat) {
			return math.NaN()
		}
		m = math.Max(m, p.Rhat)
	}
	return m
}

// MinESS returns the smallest ESS in the table (NaN if any is NaN).
func (t Table) MinESS() float64 {
	m := math.Inf(1)
	for _, p := range t {
		if math.IsNaN(p.ESS) {
			return math.NaN()
		}
		m = math.Min(m, p.ESS)
	}
	return m
}

// WriteText writes t to w as an aligned text table with a header line,
// one row per parameter.
func (t Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "param\tmean\tsd\tq05\tq50\tq95\tESS\tR-hat\t")
	for _, p := range t {
		fmt.Fprintf(tw, "%s\t%.4g\t%.3g\t%.4g\t%.4g\t%.4g\t%.0f\t%.3f\t\n",
			p.Name, p.Mean, p.SD, p.Q05, p.Q50, p.Q95, p.ESS, p.Rhat)
	}
	return tw.Flush()
}

// String returns the text table of WriteText.
func (t Table) String() string {
	var b strings.Builder
	t.WriteText(&b)
	return b.String()
}

// MarshalJSON encodes t as an object keyed by parameter name, in table
// order:
//
//	{"phi": {"mean": .., "sd": .., "q05": .., "q50": .., "q95": .., "ess": .., "rhat": ..}, ...}
//
// Non-finite numbers, which JSON cannot hold, are written as null.
func (t Table) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range t {
		if i > 0 {
			b.WriteByte(',')
		}
		name, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		b.Write(name)
		b.WriteString(":{")
		for k, f := range []struct {
			key string
			v   float64
		}{{"mean", p.Mean}, {"sd", p.SD}, {"q05", p.Q05}, {"q50", p.Q50}, {"q95", p.Q95}, {"ess", p.ESS}, {"rhat", p.Rhat}} {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(f.key))
			b.WriteByte(':')
			b.WriteString(JSONFloat(f.v))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// JSONFloat formats v as a JSON number in the shortest form that reads
// back exactly, or as null when v is NaN or infinite.
func JSONFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
