package main

import "github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"

// paperTables is the paper's appendix table "KSD results for Synthetic
// LGSSM in higher dimensions" (T = 1000), one PaperTable per dimension:
// log10 KSD for φ, σ, τ and in total, mean (sd) over chains. The paper's
// totals are the log10 of the sum of the three groups' KSD (10^1.78 +
// 10^1.97 + 10^1.44 = 10^2.26 for the first row, printed 2.28: the means of
// logs are over chains).
var paperTables = map[int]compare.PaperTable{
	5: {
		Title:   "Paper, appendix table (LGSSM in higher dimensions, d = 5)",
		Columns: []string{"phi", "sigma", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("No Buffer N=1000", 1.78, 0.04, 1.97, 0.26, 1.44, 0.45, 2.28, 0.20),
			compare.Row("No Buffer N=inf", 1.74, 0.01, 2.09, 0.02, 1.64, 0.02, 2.35, 0.01),
			compare.Row("Buffer N=1000", 1.18, 0.17, 1.74, 0.25, 1.44, 0.03, 2.01, 0.13),
			compare.Row("Buffer N=inf", 0.84, 0.03, 1.97, 0.03, 1.40, 0.05, 2.10, 0.03),
		},
	},
	10: {
		Title:   "Paper, appendix table (LGSSM in higher dimensions, d = 10)",
		Columns: []string{"phi", "sigma", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("No Buffer N=1000", 1.84, 0.01, 2.40, 0.06, 2.26, 0.13, 2.71, 0.06),
			compare.Row("No Buffer N=inf", 1.79, 0.01, 2.13, 0.04, 2.12, 0.01, 2.52, 0.02),
			compare.Row("Buffer N=1000", 1.60, 0.13, 2.37, 0.04, 2.20, 0.04, 2.64, 0.04),
			compare.Row("Buffer N=inf", 1.04, 0.06, 2.08, 0.04, 2.07, 0.01, 2.39, 0.02),
		},
	},
}
