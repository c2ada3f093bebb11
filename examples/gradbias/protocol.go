package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// protocolStarts are the two window starts of -study protocol.
var protocolStarts = []bool{false, true}

func startName(fixed bool) string {
	if fixed {
		return "fixed N(0,10)"
	}
	return "stationary"
}

// protocolPlan lists the configs of -study protocol: per model and window
// start (the stationary law at θ, ours; the fixed N(0, 10), the authors'),
// g(S0, B, N) for B = 0 (No Buffer) and the model's moderate buffer, for
// every N of -N and N = ∞ (Kalman or grid), and the full-data gradient
// g(T, T, ∞) under that start.
func protocolPlan(o options, st *study) []config {
	var cfgs []config
	for _, name := range o.Models {
		for _, fixed := range protocolStarts {
			for _, B := range []int{0, st.Specs[name].Buffer} {
				for _, N := range append(slices.Clone(o.Ns), 0) {
					cfgs = append(cfgs, config{Model: name, S: o.S, B: B, N: N, Fixed: fixed})
				}
			}
			cfgs = append(cfgs, config{Model: name, S: st.T, N: 0, Full: true, Fixed: fixed})
		}
	}
	return cfgs
}

// protocolHeader is the header of protocol.csv.
var protocolHeader = []string{"model", "param", "start", "S", "B", "N", "estimate", "truth", "truth_method", "pf_truth", "pf_truth_se",
	"bias", "se", "halfwidth95", "reps", "windows_per_rep", "sec_per_grad"}

// runProtocol is -study protocol: the bias of No Buffer (and buffered)
// gradients with every window started from the stationary law at θ or
// from the authors' fixed N(0, 10), against the figure study's ground
// truth g (stationary start of the whole sequence).
func runProtocol(o options, st *study, stdout, stderr io.Writer, start time.Time) error {
	cfgs := protocolPlan(o, st)
	fmt.Fprintf(stderr, "gradbias: protocol study, %d models, %d settings x %d replications, T = %d, %d workers\n",
		len(o.Models), len(cfgs), o.Reps, o.T, o.Workers)
	res, pfTruths, err := st.compute(context.Background(), cfgs, o.Reps, stderr)
	if err != nil {
		return err
	}
	// The reference g is the N = ∞ full-data gradient with the stationary
	// start: the Kalman smoother for the LGSSM (the figure study's truth),
	// the grid filter for the SVM (deterministic; the figure study's
	// full-sequence particle filter truth is kept beside it).
	truths := map[string]truth{}
	for _, name := range o.Models {
		i := slices.Index(cfgs, config{Model: name, S: st.T, Full: true})
		truths[name] = truth{Value: res[i].Mean, Method: "grid"}
		if st.Specs[name].Exact {
			truths[name] = truth{Value: res[i].Mean, Method: "kalman"}
		}
	}
	g := csvNum
	err = writeCSV(filepath.Join(o.Out, "protocol.csv"), protocolHeader, func(w *csv.Writer) {
		for i, c := range cfgs {
			r, t, pt := res[i], truths[c.Model], pfTruths[c.Model]
			n := strconv.Itoa(c.N)
			if c.N == 0 {
				n = "inf"
			}
			B := c.B
			if c.Full {
				B = st.T
			}
			w.Write([]string{c.Model, st.Specs[c.Model].Param, startName(c.Fixed), strconv.Itoa(c.S), strconv.Itoa(B), n,
				g(r.Mean), g(t.Value), t.Method, g(pt.Value), g(pt.SE), g(r.Mean - t.Value), g(r.SE), g(r.HalfWidth),
				strconv.Itoa(r.Reps), g(r.Windows), g(r.SecPerGrad)})
		}
	})
	if err != nil {
		return err
	}
	printProtocol(stdout, o, st, cfgs, res, truths, pfTruths)
	fmt.Fprintf(stdout, "\nwrote %s (%.0f s)\n", o.Out, time.Since(start).Seconds())
	return nil
}

// printProtocol prints per model the reference g, the figure study's
// ground truth, the full-data gradient under the fixed start, and the bias
// ± SE of g(S0, B, N) per start and B.
func printProtocol(out io.Writer, o options, st *study, cfgs []config, res []result, truths, pfTruths map[string]truth) {
	fmt.Fprintf(out, "gradbias -study protocol: T = %d, S = %d, %d replications (each over every window), seed %d; full-data scale; ± is one standard error\n",
		o.T, o.S, o.Reps, o.Seed)
	for _, name := range o.Models {
		t, pt := truths[name], pfTruths[name]
		fmt.Fprintf(out, "\n%s d/d%s: g = %.4f (%s, stationary start)", name, st.Specs[name].Param, t.Value, t.Method)
		if pt.Method != "kalman" {
			fmt.Fprintf(out, "; full-sequence PF ground truth %.4f ± %.4f (%d runs, N = %d)", pt.Value, pt.SE, pt.Runs, pt.N)
		}
		fmt.Fprintln(out)
		i := slices.Index(cfgs, config{Model: name, S: st.T, Full: true, Fixed: true})
		fmt.Fprintf(out, "  full-data gradient with x_0 ~ N(0, 10) (N = inf): %.4f (minus g: %.4g)\n", res[i].Mean, res[i].Mean-t.Value)
		fmt.Fprintf(out, "  bias of g(%d, B, N) − g\n  %-14s %3s", o.S, "start", "B")
		Ns := append(slices.Clone(o.Ns), 0)
		for _, N := range Ns {
			label := "N=" + strconv.Itoa(N)
			if N == 0 {
				label = "N=inf"
			}
			fmt.Fprintf(out, " %22s", label)
		}
		fmt.Fprintln(out)
		for _, fixed := range protocolStarts {
			for _, B := range []int{0, st.Specs[name].Buffer} {
				fmt.Fprintf(out, "  %-14s %3d", startName(fixed), B)
				for _, N := range Ns {
					i := slices.Index(cfgs, config{Model: name, S: o.S, B: B, N: N, Fixed: fixed})
					r := res[i]
					if r.Reps == 0 {
						fmt.Fprintf(out, " %22s", fmt.Sprintf("%.4g (exact)", r.Mean-t.Value))
					} else {
						fmt.Fprintf(out, " %22s", fmt.Sprintf("%.3g ± %.2g", r.Mean-t.Value, r.SE))
					}
				}
				fmt.Fprintln(out)
			}
		}
	}
}
