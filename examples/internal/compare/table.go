package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable writes one row per method at its selected step size: the step
// size, mean iterations per chain, log10 KSD per parameter and in total as
// mean (sd) over chains, and the number of failed chains.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "method\teps\titers\t%s\ttotal\tfailed\n", strings.Join(r.Names, "\t"))
	for i := range r.Methods {
		m := &r.Methods[i]
		g := m.Selected()
		fmt.Fprintf(tw, "%s\t%g\t%.0f", m.Name, g.Eps, g.MeanIter())
		for _, v := range g.LogKSD {
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintf(tw, "\t%d/%d\n", g.Failed, len(g.Chains))
	}
	return tw.Flush()
}

// WriteGrid writes the step-size search: mean (sd) log10 KSD in total for
// every method and step size, failed chains in brackets, the selected one
// marked with '*'.
func (r *Result) WriteGrid(w io.Writer) error {
	if len(r.Methods) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "method")
	for _, g := range r.Methods[0].Grid {
		fmt.Fprintf(tw, "\teps=%g", g.Eps)
	}
	fmt.Fprintln(tw)
	for i := range r.Methods {
		m := &r.Methods[i]
		fmt.Fprint(tw, m.Name)
		for j := range m.Grid {
			g := &m.Grid[j]
			mark := ""
			if j == m.Best {
				mark = "*"
			}
			fail := ""
			if g.Failed > 0 {
				fail = fmt.Sprintf(" [%d failed]", g.Failed)
			}
			fmt.Fprintf(tw, "\t%s%s%s", g.LogKSD[len(g.LogKSD)-1], fail, mark)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// PaperTable is a table of log10 KSD copied from the paper.
type PaperTable struct {
	Title   string
	Columns []string // parameter columns, then "total"
	Rows    []PaperRow
}

// PaperRow is one row of a PaperTable; Method matches our Method.Name.
type PaperRow struct {
	Method string
	Values []MeanSD
}

// Write writes the table.
func (p PaperTable) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "method\t%s\n", strings.Join(p.Columns, "\t"))
	for _, r := range p.Rows {
		fmt.Fprint(tw, r.Method)
		for _, v := range r.Values {
			fmt.Fprintf(tw, "\t%s", v)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// WriteVersus writes, for every method of the paper's table, our total
// log10 KSD next to the paper's (rows matched by name) and the ranks of
// both among the methods present in both.
func WriteVersus(w io.Writer, r *Result, p PaperTable) error {
	type row struct {
		name        string
		ours, paper MeanSD
	}
	var rows []row
	for _, pr := range p.Rows {
		for i := range r.Methods {
			if r.Methods[i].Name == pr.Method {
				g := r.Methods[i].Selected()
				rows = append(rows, row{pr.Method, g.LogKSD[len(g.LogKSD)-1], pr.Values[len(pr.Values)-1]})
			}
		}
	}
	rank := func(get func(row) float64) []int {
		rk := make([]int, len(rows))
		for i := range rows {
			rk[i] = 1
			for j := range rows {
				if get(rows[j]) < get(rows[i]) || math.IsNaN(get(rows[i])) && !math.IsNaN(get(rows[j])) {
					rk[i]++
				}
			}
		}
		return rk
	}
	ro := rank(func(x row) float64 { return x.ours.Mean })
	rp := rank(func(x row) float64 { return x.paper.Mean })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "method\tours log10 KSD\trank\tpaper log10 KSD\trank")
	for i, x := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\n", x.name, x.ours, ro[i], x.paper, rp[i])
	}
	return tw.Flush()
}

// Num is a float64 that encodes NaN and ±Inf as JSON null.
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler (null is NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = Num(math.NaN())
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	*n = Num(f)
	return err
}

// Summary is the JSON form of a Result.
type Summary struct {
	Obs            int             `json:"obs"`
	RuntimeSeconds Num             `json:"runtime_seconds"`
	Names          []string        `json:"names"`
	Methods        []MethodSummary `json:"methods"`
}

// MethodSummary is one method in a Summary.
type MethodSummary struct {
	Name    string        `json:"name"`
	BestEps Num           `json:"best_eps"`
	Best    int           `json:"best"`
	Grid    []GridSummary `json:"grid"`
}

// GridSummary is one step size of a method in a Summary. LogKSD holds
// [mean, sd] pairs per parameter and, last, for the total.
type GridSummary struct {
	Eps      Num            `json:"eps"`
	H        Num            `json:"h"`
	Failed   int            `json:"failed"`
	MeanIter Num            `json:"mean_iterations"`
	LogKSD   [][2]Num       `json:"log10_ksd"`
	Chains   []ChainSummary `json:"chains"`
}

// ChainSummary is one chain in a Summary.
type ChainSummary struct {
	Iterations int    `json:"iterations"`
	Seconds    Num    `json:"seconds"`
	Error      string `json:"error,omitempty"`
	LogKSD     []Num  `json:"log10_ksd"`
	KSDDraws   int    `json:"ksd_draws"`
	Mean       []Num  `json:"mean"`
	SD         []Num  `json:"sd"`
}

// Summary returns the JSON-ready summary of r.
func (r *Result) Summary() Summary {
	s := Summary{Obs: r.Obs, RuntimeSeconds: Num(r.Runtime.Seconds()), Names: r.Names}
	nums := func(v []float64) []Num {
		out := make([]Num, len(v))
		for i, x := range v {
			out[i] = Num(x)
		}
		return out
	}
	for i := range r.Methods {
		m := &r.Methods[i]
		ms := MethodSummary{Name: m.Name, BestEps: Num(m.Selected().Eps), Best: m.Best}
		for j := range m.Grid {
			g := &m.Grid[j]
			gs := GridSummary{Eps: Num(g.Eps), H: Num(g.H), Failed: g.Failed, MeanIter: Num(g.MeanIter())}
			for _, v := range g.LogKSD {
				gs.LogKSD = append(gs.LogKSD, [2]Num{Num(v.Mean), Num(v.SD)})
			}
			for k := range g.Chains {
				c := &g.Chains[k]
				cs := ChainSummary{Iterations: c.Iterations, Seconds: Num(c.Seconds), LogKSD: nums(c.LogKSD),
					KSDDraws: c.KSDDraws, Mean: nums(c.Mean), SD: nums(c.SD)}
				if c.Err != nil {
					cs.Error = c.Err.Error()
				}
				gs.Chains = append(gs.Chains, cs)
			}
			ms.Grid = append(ms.Grid, gs)
		}
		s.Methods = append(s.Methods, ms)
	}
	return s
}

// WriteJSON writes r.Summary() as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.Summary())
}

// Row returns a PaperRow from alternating means and standard deviations.
func Row(method string, meanSD ...float64) PaperRow {
	if len(meanSD)%2 != 0 {
		panic("compare: Row needs mean, sd pairs")
	}
	r := PaperRow{Method: method, Values: make([]MeanSD, len(meanSD)/2)}
	for i := range r.Values {
		r.Values[i] = MeanSD{Mean: meanSD[2*i], SD: meanSD[2*i+1]}
	}
	return r
}

// WriteMeans writes each method's posterior mean (sd) of the natural
// parameters at its selected step size, averaged over successful chains.
func (r *Result) WriteMeans(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "method\t%s\n", strings.Join(r.Names, "\t"))
	for i := range r.Methods {
		g := r.Methods[i].Selected()
		fmt.Fprint(tw, r.Methods[i].Name)
		for p := range r.Names {
			var mean, sd float64
			n := 0
			for k := range g.Chains {
				if c := &g.Chains[k]; c.Err == nil && !math.IsNaN(c.Mean[p]) {
					mean += c.Mean[p]
					if !math.IsNaN(c.SD[p]) {
						sd += c.SD[p]
					}
					n++
				}
			}
			if n == 0 {
				fmt.Fprint(tw, "\t–")
				continue
			}
			fmt.Fprintf(tw, "\t%.3f (%.3f)", mean/float64(n), sd/float64(n))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
