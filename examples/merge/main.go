// Command merge summarises the trace files of several fits as one
// posterior: the chains of fits run on different machines (one job per
// seed, see examples/merge/README.md).
//
//	go run ./examples/merge [-json] [-warmup-drop N] out/a/trace.csv out/b/trace.csv ...
//
// Each file is a trace.csv written by examples/fit (sgmcmc.CSVRecorder):
// header chain,iter,time,<parameters>, one row per kept draw. Every (file,
// chain) pair is a separate chain. The files must have the same parameter
// columns. It prints per parameter what examples/fit prints (mean, sd, 5/50/95%
// quantiles, bulk and tail ESS, rank-normalised R-hat, MCSE) over all the
// chains, computed by sgmcmc.SummarizeDraws (the code that summarises Fit's
// posterior), and Fit's warnings: R-hat > 1.01, bulk or tail ESS < 400.
package main

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "merge:", err)
		os.Exit(1)
	}
}

// chain is the draws of one chain of one file.
type chain struct {
	id    int       // the file's chain column
	iters []int     // iteration of each draw
	x     []float64 // draws, row-major
}

// trace is one trace file.
type trace struct {
	path   string
	names  []string
	chains []*chain // by chain id
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: go run ./examples/merge [-json] [-warmup-drop N] trace.csv ...\n\n"+
			"Summarises the trace.csv files of several examples/fit runs as one posterior, each (file, chain)\n"+
			"pair a chain (see examples/merge/README.md).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print one JSON object to stdout instead of the text report")
	drop := fs.Int("warmup-drop", 0, "draws dropped from the start of every chain")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no trace files given")
	}
	if *drop < 0 {
		return fmt.Errorf("-warmup-drop %d: want 0 or more draws", *drop)
	}
	var traces []*trace
	seen := map[string]bool{}
	for _, path := range fs.Args() {
		if abs, err := filepath.Abs(path); err == nil {
			if seen[abs] {
				return fmt.Errorf("%s is given twice", path)
			}
			seen[abs] = true
		}
		t, err := readTrace(path)
		if err != nil {
			return err
		}
		if len(traces) > 0 && !slices.Equal(t.names, traces[0].names) {
			return fmt.Errorf("%s: parameter columns %s differ from %s's %s",
				path, strings.Join(t.names, ","), traces[0].path, strings.Join(traces[0].names, ","))
		}
		traces = append(traces, t)
	}
	names := traces[0].names
	d := len(names)
	var notes []string
	var draws [][]float64
	for _, t := range traces {
		for _, c := range t.chains {
			n := len(c.iters)
			k := min(*drop, n)
			c.iters, c.x = c.iters[k:], c.x[k*d:]
			if len(c.iters) == 0 {
				notes = append(notes, fmt.Sprintf("%s chain %d: all %d draws dropped by -warmup-drop", t.path, c.id, n))
				continue
			}
			draws = append(draws, c.x)
		}
	}
	if len(draws) == 0 {
		return fmt.Errorf("-warmup-drop %d leaves no draws", *drop)
	}
	if err := checkDistinct(traces); err != nil {
		return err
	}
	s, err := sgmcmc.SummarizeDraws(names, draws)
	if err != nil {
		return err
	}
	warnings := append(notes, s.Warnings...)
	if *asJSON {
		return writeJSON(stdout, traces, s, *drop, warnings)
	}
	return writeText(stdout, traces, s, *drop, warnings)
}

// readTrace reads a trace.csv: header chain,iter,time,<names>, then one
// row per draw, each chain's rows in increasing iteration order (rows of
// different chains may interleave).
func readTrace(path string) (*trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	head, err := r.Read()
	head = slices.Clone(head) // ReuseRecord: the next Read overwrites it
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file (no header)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i := range head {
		head[i] = strings.TrimSpace(head[i])
	}
	if len(head) < 4 || head[0] != "chain" || head[1] != "iter" || head[2] != "time" {
		return nil, fmt.Errorf("%s: header %q: want chain,iter,time and the parameters (a trace.csv of examples/fit)", path, strings.Join(head, ","))
	}
	t := &trace{path: path, names: head[3:]}
	for i, name := range t.names {
		if name == "" || slices.Contains(t.names[:i], name) {
			return nil, fmt.Errorf("%s: header %q: parameter column %d is empty or repeated", path, strings.Join(head, ","), i+4)
		}
	}
	byID := map[int]*chain{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(head) {
			return nil, fmt.Errorf("%s:%d: %d cells, want %d (%s)", path, line, len(rec), len(head), strings.Join(head, ","))
		}
		cell := func(j int) string { return strings.TrimSpace(rec[j]) }
		bad := func(j int, what string) error {
			return fmt.Errorf("%s:%d: %s %q is not %s", path, line, head[j], rec[j], what)
		}
		id, err := strconv.Atoi(cell(0))
		if err != nil || id < 0 {
			return nil, bad(0, "a chain index")
		}
		it, err := strconv.Atoi(cell(1))
		if err != nil || it < 0 {
			return nil, bad(1, "an iteration")
		}
		if _, err := strconv.ParseFloat(cell(2), 64); err != nil {
			return nil, bad(2, "a time in seconds")
		}
		c := byID[id]
		if c == nil {
			c = &chain{id: id}
			byID[id] = c
			t.chains = append(t.chains, c)
		}
		if k := len(c.iters); k > 0 && it <= c.iters[k-1] {
			return nil, fmt.Errorf("%s:%d: chain %d iteration %d follows iteration %d: the rows are out of order (two runs in one file?)",
				path, line, id, it, c.iters[k-1])
		}
		c.iters = append(c.iters, it)
		for j := 3; j < len(rec); j++ {
			v, err := strconv.ParseFloat(cell(j), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, bad(j, "a finite number")
			}
			c.x = append(c.x, v)
		}
	}
	if len(t.chains) == 0 {
		return nil, fmt.Errorf("%s: no draws (only the header)", path)
	}
	slices.SortFunc(t.chains, func(a, b *chain) int { return a.id - b.id })
	return t, nil
}

// checkDistinct refuses chains with identical draws in different files:
// fits with the same seed on the same data make the same chains, and
// counting them twice would double their ESS.
func checkDistinct(traces []*trace) error {
	type ref struct {
		t *trace
		c *chain
	}
	var seen []ref
	for _, t := range traces {
		for _, c := range t.chains {
			for _, o := range seen {
				if o.t != t && len(c.x) > 0 && slices.Equal(c.x, o.c.x) {
					return fmt.Errorf("%s chain %d and %s chain %d have identical draws (the same -seed on the same data gives the same chains): rerun one fit with another seed",
						o.t.path, o.c.id, t.path, c.id)
				}
			}
			seen = append(seen, ref{t, c})
		}
	}
	return nil
}

// chainList describes a file's chains: "0 (2756 draws), 1 (2756 draws)".
func chainList(t *trace) string {
	var parts []string
	for _, c := range t.chains {
		parts = append(parts, fmt.Sprintf("%d (%d draws)", c.id, len(c.iters)))
	}
	return strings.Join(parts, ", ")
}

func writeText(w io.Writer, traces []*trace, s *sgmcmc.DrawSummary, drop int, warnings []string) error {
	files := "files"
	if len(traces) == 1 {
		files = "file"
	}
	fmt.Fprintf(w, "%d chains from %d %s, %d draws", s.Chains, len(traces), files, s.Draws)
	if drop > 0 {
		fmt.Fprintf(w, " after dropping the first %d of each chain", drop)
	}
	fmt.Fprintln(w, ":")
	for _, t := range traces {
		fmt.Fprintf(w, "  %s: chains %s\n", t.path, chainList(t))
	}
	if s.MinDraws*s.Chains != s.Draws {
		fmt.Fprintf(w, "chains of unequal length: ESS, R-hat and MCSE use the first %d draws of each\n", s.MinDraws)
	}
	fmt.Fprintln(w)
	if err := s.WriteText(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, warn := range warnings {
		fmt.Fprintln(w, "warning:", warn)
	}
	return nil
}

type jsonFile struct {
	Path   string `json:"path"`
	Chains []int  `json:"chains"` // chain index
	Draws  []int  `json:"draws"`  // draws of each chain, after -warmup-drop
}

func writeJSON(w io.Writer, traces []*trace, s *sgmcmc.DrawSummary, drop int, warnings []string) error {
	var params []sgmcmc.ParamJSON
	for _, r := range s.Params {
		params = append(params, r.JSON())
	}
	var files []jsonFile
	for _, t := range traces {
		jf := jsonFile{Path: t.path}
		for _, c := range t.chains {
			jf.Chains = append(jf.Chains, c.id)
			jf.Draws = append(jf.Draws, len(c.iters))
		}
		files = append(files, jf)
	}
	if warnings == nil {
		warnings = []string{}
	}
	return json.NewEncoder(w).Encode(struct {
		Files      []jsonFile         `json:"files"`
		Chains     int                `json:"chains"`
		Kept       int                `json:"kept"`
		MinDraws   int                `json:"min_draws"`
		WarmupDrop int                `json:"warmup_drop"`
		Params     []sgmcmc.ParamJSON `json:"params"`
		Warnings   []string           `json:"warnings"`
	}{files, s.Chains, s.Draws, s.MinDraws, drop, params, warnings})
}
