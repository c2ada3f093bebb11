package main

import "github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"

// The paper's appendix Tables 4 (T = 10^3) and 5 (T = 10^6): log10 KSD for
// φ, σ, τ and in total, mean (sd) over chains. Their totals are Table 2.
// KF is N = ∞ (Kalman), PF is N = 1000; the Gibbs rows are omitted.
var (
	paperT1000 = compare.PaperTable{
		Title:   "Paper, Table 4 (T = 10^3; totals = Table 2)",
		Columns: []string{"phi", "sigma", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("Full N=1000", 0.38, 0.26, 0.10, 0.16, 0.44, 0.19, 0.85, 0.08),
			compare.Row("Full N=inf", 0.01, 0.57, 0.07, 0.09, 0.20, 0.28, 0.64, 0.17),
			compare.Row("No Buffer N=1000", 1.55, 0.03, -0.04, 0.13, 0.10, 0.26, 1.58, 0.03),
			compare.Row("No Buffer N=inf", 1.53, 0.03, -0.08, 0.07, -0.04, 0.16, 1.55, 0.03),
			compare.Row("Buffer N=1000", 0.27, 0.46, 0.09, 0.13, -0.11, 0.53, 0.68, 0.25),
			compare.Row("Buffer N=inf", 0.18, 0.27, 0.02, 0.07, 0.04, 0.44, 0.61, 0.21),
		},
	}
	paperT1e6 = compare.PaperTable{
		Title:   "Paper, Table 5 (T = 10^6; totals = Table 2)",
		Columns: []string{"phi", "sigma", "tau", "total"},
		Rows: []compare.PaperRow{
			compare.Row("Full N=1000", 4.77, 0.39, 4.11, 0.57, 3.55, 0.95, 4.92, 0.40),
			compare.Row("Full N=inf", 4.51, 0.48, 4.21, 0.50, 3.65, 0.55, 4.85, 0.36),
			compare.Row("No Buffer N=1000", 4.64, 0.13, 3.19, 0.35, 3.12, 0.45, 4.68, 0.10),
			compare.Row("No Buffer N=inf", 4.64, 0.14, 3.25, 0.21, 2.83, 0.61, 4.68, 0.11),
			compare.Row("Buffer N=1000", 3.26, 0.17, 1.70, 0.38, 2.87, 0.33, 3.43, 0.19),
			compare.Row("Buffer N=inf", 3.04, 0.39, 1.57, 0.50, 2.68, 0.20, 3.25, 0.29),
		},
	}
)
