package main

import "github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"

// The paper's appendix Tables 9 and 10 (their totals are Table 3): log10
// KSD for SGLD on EUR-USD minute log-returns, 45 training weeks of about
// 7,000 observations each. Table 10's columns (log μ, logit λ, logit φ, τ)
// are reordered to ours (μ, φ, λ, τ). Different data from ours: only the
// ordering of the methods is comparable.
var (
	paperSVM = compare.PaperTable{
		Title:   "Paper, Table 9 (SVM on EUR-USD minute returns; totals = Table 3)",
		Columns: []string{"phi", "sigma", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("Full", 3.63, 0.30, 3.76, 0.07, 1.46, 0.38, 4.03, 0.14),
			compare.Row("Weekly", 3.86, 0.08, 2.18, 0.28, 0.67, 0.39, 3.87, 0.08),
			compare.Row("No Buffer", 4.48, 0.01, 1.84, 0.15, 1.21, 0.14, 4.48, 0.01),
			compare.Row("Buffer", 3.53, 0.11, 2.32, 0.13, 1.23, 0.05, 3.56, 0.10),
		},
	}
	paperGARCH = compare.PaperTable{
		Title:   "Paper, Table 10 (GARCH on EUR-USD minute returns; totals = Table 3; columns reordered)",
		Columns: []string{"mu (log mu)", "phi", "lambda", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("Full", 2.18, 0.67, 2.19, 0.61, 2.18, 0.07, 2.07, 0.06, 2.84, 0.30),
			compare.Row("Weekly", 2.17, 0.51, 2.31, 0.29, 2.21, 0.03, 1.85, 0.19, 2.81, 0.21),
			compare.Row("No Buffer", 1.76, 0.06, 1.31, 0.09, 1.43, 0.46, 1.58, 0.08, 2.09, 0.09),
			compare.Row("Buffer", 1.76, 0.03, 1.11, 0.07, 2.01, 0.08, 1.87, 0.07, 2.19, 0.05),
		},
	}
)
