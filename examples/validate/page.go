package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// summaryColumns is the header of the summary table (stdout and page).
const summaryColumns = "| case | T | wall | max \\|mean − ref\\|/ref sd | sd ratio | R-hat ≤ | ESS ≥ | warnings | result |\n" +
	"|---|---:|---:|---:|---:|---:|---:|---:|---|\n"

// summaryRow is one case's line of the summary table.
func summaryRow(r result) string {
	if r.Error != "" {
		return fmt.Sprintf("| %s | %s | %s | | | | | | error: %s |\n", r.Title, thousands(r.T), wall(secs(r.Wall)), mdEscape(r.Error))
	}
	s := r.Summary
	ratio := ratioRange(s.MinSDRatio, s.MaxSDRatio)
	z := fmt.Sprintf("%.2f", s.MaxAbsZ)
	if s.Truth {
		ratio = "—"
		z = fmt.Sprintf("%.2f (truth, in posterior sds)", s.MaxAbsZ)
	}
	verdict := "ok"
	if s.Truth {
		verdict = fmt.Sprintf("ok: %d of %d 90%% intervals cover the truth", s.Covered, s.N)
	}
	if len(r.Problems) > 0 {
		verdict = "outside: " + strings.Join(r.Problems, "; ")
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %.3f | %.0f | %d | %s |\n",
		r.Title, thousands(r.T), wall(secs(r.Wall)), z, ratio, s.MaxRhat, s.MinESS, len(r.Warnings), verdict)
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// thousands formats n with thousands separators (17055 → 17,055).
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeTable prints the summary table to w.
func writeTable(w io.Writer, results []result) {
	io.WriteString(w, summaryColumns)
	for _, r := range results {
		io.WriteString(w, summaryRow(r))
	}
}

// writePage writes the validation page.
func writePage(path string, results []result, long bool, total time.Duration) error {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# Validation\n\n")
	p("This page is written by one command, from the repository root:\n\n")
	p("```sh\ngo run ./examples/validate          # the cases below that are not marked slow\ngo run ./examples/validate -long    # all of them\n```\n\n")
	p("Each case runs [examples/fit](../examples/fit/README.md) with the command shown (plus `-json -q`), with its\n")
	p("default seed, and compares the posterior with a reference computed without this library's\n")
	p("samplers or gradients: [examples/fit/gridref](../examples/fit/gridref/README.md) integrates the likelihood\n")
	p("exactly (Kalman filter), on a fine grid (the SVM's log-volatility, GARCH's σ² on DAX) or by GARCH's\n")
	p("quadrature filter at 14 points (on the S&P 500 returns), and samples the\n")
	p("posterior by importance sampling or random-walk Metropolis; for the bivariate SV, Stan's NUTS samples\n")
	p("the parameters and the latent path jointly. A simulated series without a reference is compared with\n")
	p("the parameters it was simulated from instead. Everything but the wall times is the same on every run of\n")
	p("the same code: the fits' seeds are fixed.\n\n")
	p("A case passes when every posterior mean is within %.2f reference sds of the reference's, every sd is\n", maxAbsZ)
	p("within a factor [%.2f, %.2f] of the reference's (the tolerances of the repository's tests against the\n", minSDRatio, maxSDRatio)
	p("same references), R-hat ≤ %.2f, the smallest bulk or tail ESS ≥ %d (the targets `sgmcmc.Fit`\n", maxRhat, minESS)
	p("samples to) and the fit printed no warning; for a simulated series, every 90%% interval must cover the\n")
	p("value simulated from. The command exits with status 1 when a case fails.\n\n")
	p("Calibration over many simulated data sets (simulation-based calibration: rank histograms of the\n")
	p("truth among the posterior draws) is on a page of its own: [sbc.md](sbc.md).\n\n")
	p("Wall times: the whole `examples/fit` process (reading the data, the fit, the KSD, the plots) on a\n")
	p("%s; the fits use every core.", hostLine())
	if c := commit(); c != "" {
		p(" Code: commit %s.", c)
	}
	p("\n\n## Summary\n\n")
	p("%d cases in %s.\n\n", len(results), wall(total))
	b.WriteString(summaryColumns)
	for _, r := range results {
		b.WriteString(summaryRow(r))
	}
	p("\nmax |mean − ref|/ref sd: the largest distance of a posterior mean from the reference's, in reference\n")
	p("sds (for a simulated series: from the true value, in posterior sds). sd ratio: posterior sd / reference\n")
	p("sd, smallest–largest over the parameters. ESS: the smallest bulk or tail effective sample size.\n")
	if !long {
		var skipped []string
		for _, c := range cases {
			if c.Long && !slices.ContainsFunc(results, func(r result) bool { return r.Case == c.Name }) {
				skipped = append(skipped, fmt.Sprintf("%s (`%s`)", c.Title, command(c)))
			}
		}
		if len(skipped) > 0 {
			p("\nNot run here (slow; `-long` adds them): %s.\n", strings.Join(skipped, "; "))
		}
	}
	p("\n## Cases\n")
	for _, r := range results {
		p("\n### %s\n\n", r.Title)
		p("```sh\n")
		if r.Setup != "" {
			p("%s\n", r.Setup)
		}
		p("%s\n```\n\n", r.Command)
		if strings.HasPrefix(r.Ref, "truth") {
			p("Reference: %s (%s).\n\n", r.RefNote, strings.TrimPrefix(r.Ref, "truth "))
		} else {
			p("Reference: [%s](../%s): %s.\n\n", filepath.Base(r.Ref), filepath.ToSlash(r.Ref), r.RefNote)
		}
		if r.Error != "" {
			p("**The fit failed:** %s\n", r.Error)
			continue
		}
		p("T = %s, wall time %s, %s, %d chains, %d kept draws", thousands(r.T), wall(secs(r.Wall)), gradientName(r.Gradient), r.Chains, r.Kept)
		if r.KSD != nil {
			p(", KSD %.3g", *r.KSD)
		}
		p(".\n\n")
		if r.Summary.Truth {
			p("| param | mean | sd | q05 | q95 | truth | (mean − truth)/sd | covered | R-hat | bulk ESS | tail ESS |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
			for _, x := range r.Rows {
				cov := "yes"
				if !x.Covers {
					cov = "no"
				}
				p("| %s | %.5g | %.3g | %.5g | %.5g | %g | %.2f | %s | %.3f | %.0f | %.0f |\n",
					x.Name, x.Mean, x.SD, x.Q05, x.Q95, x.Truth, x.Z, cov, x.Rhat, x.BulkESS, x.TailESS)
			}
		} else {
			p("| param | mean | sd | ref mean | ref sd | (mean − ref)/ref sd | sd ratio | R-hat | bulk ESS | tail ESS |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			for _, x := range r.Rows {
				p("| %s | %.5g | %.3g | %.5g | %.3g | %.2f | %.2f | %.3f | %.0f | %.0f |\n",
					x.Name, x.Mean, x.SD, x.RefMean, x.RefSD, x.Z, x.SDRatio, x.Rhat, x.BulkESS, x.TailESS)
			}
		}
		if len(r.Warnings) == 0 {
			p("\nNo warnings.\n")
		} else {
			p("\nWarnings:\n\n")
			for _, w := range r.Warnings {
				p("- %s\n", w)
			}
		}
		if len(r.Problems) > 0 {
			p("\nOutside the tolerances: %s.\n", strings.Join(r.Problems, "; "))
		}
		for _, f := range r.Figures {
			p("\n![%s](%s)\n", strings.TrimSuffix(filepath.Base(f), ".png"), f)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// gradientName says in words which path the fit took.
func gradientName(g string) string {
	switch g {
	case "full":
		return "exact Metropolis–Hastings chains on full-data log posteriors"
	case "control-variate":
		return "SGLD with control-variate gradients"
	case "plain":
		return "SGLD with buffered particle gradients"
	case "":
		return "gradient not reported"
	}
	return "gradient " + g
}

// commit is the short hash of HEAD, or "" outside a git checkout.
func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
