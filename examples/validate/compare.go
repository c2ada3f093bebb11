package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Tolerances of a case that passes: the ones the repository's tests use
// against the same references (sgmcmc/fit_test.go, checkAgainst), and the
// convergence targets of sgmcmc.Fit.
const (
	maxAbsZ     = 0.25 // |fit mean − reference mean| / reference sd
	minSDRatio  = 0.8  // fit sd / reference sd
	maxSDRatio  = 1.25 //
	maxRhat     = 1.01
	minESS      = 400
	truthLevels = 0.90 // the central interval q05..q95 that must cover a simulation's truth
)

// fitParam is one parameter's row of examples/fit's -json output.
type fitParam struct {
	Name    string  `json:"name"`
	Mean    float64 `json:"mean"`
	SD      float64 `json:"sd"`
	Q05     float64 `json:"q05"`
	Q50     float64 `json:"q50"`
	Q95     float64 `json:"q95"`
	BulkESS float64 `json:"bulk_ess"`
	TailESS float64 `json:"tail_ess"`
	Rhat    float64 `json:"rhat"`
	MCSE    float64 `json:"mcse"`
}

// refParam is one parameter of a reference posterior (the "params" of a
// gridref JSON file).
type refParam struct {
	Name string  `json:"name"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// paramRow compares one parameter with its reference or its true value.
type paramRow struct {
	Name     string  `json:"name"`
	Mean     float64 `json:"mean"`
	SD       float64 `json:"sd"`
	Q05      float64 `json:"q05"`
	Q95      float64 `json:"q95"`
	RefMean  float64 `json:"ref_mean,omitempty"`
	RefSD    float64 `json:"ref_sd,omitempty"`
	Truth    float64 `json:"truth,omitempty"`
	Z        float64 `json:"z"`                  // (mean − ref mean)/ref sd, or (mean − truth)/sd
	SDRatio  float64 `json:"sd_ratio,omitempty"` // sd/ref sd (references only)
	Covers   bool    `json:"covers,omitempty"`   // q05 ≤ truth ≤ q95 (truths only)
	Rhat     float64 `json:"rhat"`
	BulkESS  float64 `json:"bulk_ess"`
	TailESS  float64 `json:"tail_ess"`
	hasTruth bool
}

// compareRef compares a fit's parameters with a reference posterior,
// matched by position and checked by name: the fit's own names, or
// refNames[i] for the fit's i-th parameter when refNames is not nil (a
// reference for the same parameters under another model's names).
func compareRef(fit []fitParam, ref []refParam, refNames []string) ([]paramRow, error) {
	if len(fit) != len(ref) {
		return nil, fmt.Errorf("the fit has %d parameters, the reference %d", len(fit), len(ref))
	}
	if refNames != nil && len(refNames) != len(fit) {
		return nil, fmt.Errorf("the fit has %d parameters and %d reference names", len(fit), len(refNames))
	}
	rows := make([]paramRow, len(fit))
	for i, f := range fit {
		r := ref[i]
		want := f.Name
		if refNames != nil {
			want = refNames[i]
		}
		if want != r.Name {
			return nil, fmt.Errorf("parameter %d is %q in the fit and %q in the reference", i, want, r.Name)
		}
		if !(r.SD > 0) {
			return nil, fmt.Errorf("the reference sd of %s is %v", r.Name, r.SD)
		}
		rows[i] = paramRow{Name: f.Name, Mean: f.Mean, SD: f.SD, Q05: f.Q05, Q95: f.Q95, RefMean: r.Mean, RefSD: r.SD,
			Z: (f.Mean - r.Mean) / r.SD, SDRatio: f.SD / r.SD, Rhat: f.Rhat, BulkESS: f.BulkESS, TailESS: f.TailESS}
	}
	return rows, nil
}

// compareTruth compares a fit's parameters with the values a series was
// simulated at: the distance of the mean in posterior sds and whether the
// 90% interval covers the value.
func compareTruth(fit []fitParam, truth []float64) ([]paramRow, error) {
	if len(fit) != len(truth) {
		return nil, fmt.Errorf("the fit has %d parameters, the truth %d", len(fit), len(truth))
	}
	rows := make([]paramRow, len(fit))
	for i, f := range fit {
		if !(f.SD > 0) {
			return nil, fmt.Errorf("the posterior sd of %s is %v", f.Name, f.SD)
		}
		rows[i] = paramRow{Name: f.Name, Mean: f.Mean, SD: f.SD, Q05: f.Q05, Q95: f.Q95, Truth: truth[i],
			Z: (f.Mean - truth[i]) / f.SD, Covers: f.Q05 <= truth[i] && truth[i] <= f.Q95,
			Rhat: f.Rhat, BulkESS: f.BulkESS, TailESS: f.TailESS, hasTruth: true}
	}
	return rows, nil
}

// summary condenses a case's rows into the page's one-line figures.
type summary struct {
	MaxAbsZ    float64 `json:"max_abs_z"`
	MinSDRatio float64 `json:"min_sd_ratio,omitempty"`
	MaxSDRatio float64 `json:"max_sd_ratio,omitempty"`
	Covered    int     `json:"covered,omitempty"` // parameters whose 90% interval covers the truth
	MaxRhat    float64 `json:"max_rhat"`
	MinESS     float64 `json:"min_ess"` // smallest bulk or tail ESS
	Truth      bool    `json:"truth"`
	N          int     `json:"params"`
}

func summarise(rows []paramRow) summary {
	s := summary{MinSDRatio: math.Inf(1), MinESS: math.Inf(1), N: len(rows)}
	for _, r := range rows {
		s.MaxAbsZ = math.Max(s.MaxAbsZ, math.Abs(r.Z))
		if r.hasTruth {
			s.Truth = true
			if r.Covers {
				s.Covered++
			}
		} else {
			s.MinSDRatio = math.Min(s.MinSDRatio, r.SDRatio)
			s.MaxSDRatio = math.Max(s.MaxSDRatio, r.SDRatio)
		}
		s.MaxRhat = math.Max(s.MaxRhat, r.Rhat)
		s.MinESS = math.Min(s.MinESS, math.Min(r.BulkESS, r.TailESS))
	}
	if s.Truth || len(rows) == 0 {
		s.MinSDRatio, s.MaxSDRatio = 0, 0
	}
	if len(rows) == 0 {
		s.MinESS = 0
	}
	return s
}

// problems lists what keeps a case from passing: the tests' tolerances
// against the reference (or the truth's coverage), Fit's convergence
// targets, and any warning. Nothing means it passes.
func (s summary) problems(warnings []string) []string {
	var p []string
	if s.Truth {
		if s.Covered < s.N {
			p = append(p, fmt.Sprintf("%d of %d 90%% intervals cover the truth", s.Covered, s.N))
		}
	} else {
		if s.MaxAbsZ > maxAbsZ {
			p = append(p, fmt.Sprintf("a mean %.2f reference sds away (> %.2f)", s.MaxAbsZ, maxAbsZ))
		}
		if s.MinSDRatio < minSDRatio || s.MaxSDRatio > maxSDRatio {
			p = append(p, fmt.Sprintf("sd ratios %.2f–%.2f outside [%.2f, %.2f]", s.MinSDRatio, s.MaxSDRatio, minSDRatio, maxSDRatio))
		}
	}
	if s.MaxRhat > maxRhat {
		p = append(p, fmt.Sprintf("R-hat %.3f > %.2f", s.MaxRhat, maxRhat))
	}
	if s.MinESS < minESS {
		p = append(p, fmt.Sprintf("ESS %.0f < %d", s.MinESS, minESS))
	}
	if len(warnings) > 0 {
		p = append(p, fmt.Sprintf("%d warnings", len(warnings)))
	}
	return p
}

// wall formats a wall time as the page prints it: tenths of a second below
// a minute, whole seconds above.
func wall(d time.Duration) string {
	s := d.Seconds()
	if s < 60 {
		return fmt.Sprintf("%.1f s", s)
	}
	m := int(math.Round(s))
	return fmt.Sprintf("%d min %d s", m/60, m%60)
}

// ratioRange formats the range of the sd ratios.
func ratioRange(lo, hi float64) string {
	a, b := fmt.Sprintf("%.2f", lo), fmt.Sprintf("%.2f", hi)
	if a == b {
		return a
	}
	return a + "–" + b
}

// mdEscape makes a warning safe inside a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
