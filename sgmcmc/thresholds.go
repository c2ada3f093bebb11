package sgmcmc

// The convergence thresholds of Fit and its Posterior (Vehtari, Gelman,
// Simpson, Carpenter and Bürkner 2021): a parameter whose rank-normalised
// R-hat (ksd.RankRhat) exceeds maxRhat, or whose bulk or tail ESS is
// below minESS, is warned about (Posterior.summarize); Fit extends the
// sampling while the smallest ESS is below TargetESS (default minESS) or
// the largest R-hat above maxRhat (sample).
const (
	maxRhat = 1.01
	minESS  = 400
)

// maxAnchorShift is the largest mean shift (in posterior sds) that the
// control variate's anchor error may cause (Preparation.ShiftSD): beyond
// it AutoGradient does not choose the control variate, and a fit that
// uses it anyway (Gradient set, or PrepObs) warns.
const maxAnchorShift = 0.25
