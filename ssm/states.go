package ssm

// State indexing used by the state capabilities below and by the particle
// smoothers (pf.States): state t is x_t, the state observed at row t−1 of a
// Sequence (y_t in the paper's 1-based time), and state 0 is x_0, the state
// before the first observation. Over a Window the state before row Start,
// state Start, is drawn from ν_0; the states reported for a window are
// t = KeepStart..KeepEnd (KeepEnd−KeepStart+1 of them, both ends included).

// StateMoments receives exact marginal moments of the states over a window
// (see StateSmoother). Each slice the caller does not want is nil; the
// others have the lengths given below, with n = KeepEnd−KeepStart+1 states
// and entry (i, c) of an n×State block at index i·State+c for state
// KeepStart+i and state component c.
type StateMoments struct {
	// FilterMean and FilterVar are E[x_t,c | y_Start..y_t] and its
	// variance (the filtering law; n×State).
	FilterMean, FilterVar []float64
	// SmoothMean and SmoothVar are E[x_t,c | y_Start..y_End−1] and its
	// variance (the smoothing law given the whole window; n×State).
	SmoothMean, SmoothVar []float64
	// LogPred has one entry per filtered row t ∈ [Start, End):
	// log p(y_t | y_Start..y_t−1), the one-step-ahead predictive density (0
	// for a row that is entirely missing). They sum to the window's
	// log-likelihood.
	LogPred []float64
}

// StateSmoother is an optional Model capability: exact filtered and smoothed
// marginal state moments (the Kalman filter and Rauch–Tung–Striebel
// smoother for linear Gaussian models, whose marginals are Gaussian with
// these moments).
type StateSmoother interface {
	// SmoothStates fills the non-nil slices of out for observation rows
	// [w.Start, w.End) of seq at parameters u, the state before w.Start
	// distributed as ν_0, and returns log p(y_Start..y_End−1 | u). w.Weights
	// are ignored. Invalid parameters give a *ParamError; a malformed
	// sequence or window ErrData or ErrWindow; a slice of the wrong length
	// panics.
	SmoothStates(u []float64, seq Sequence, w Window, out StateMoments) (float64, error)
}

// Volatility is an optional Kernel capability of volatility models: the
// volatility implied by one state row x at the kernel's parameters, e.g.
// τ·e^{x_t/2} for the stochastic volatility model (the sd of y_t given x_t)
// and σ_t for GARCH (the conditional sd of the latent return x_t). Summaries
// of states (filtered, smoothed, forecast) report it when the kernel has it.
type Volatility interface {
	Volatility(x []float64) float64
}
