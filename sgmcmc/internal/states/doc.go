// Package states computes what sgmcmc's Posterior reports about the latent
// states: smoothed and filtered state laws, forecasts, predictive scores
// and log-likelihoods, integrated over posterior draws. It reads a model,
// a sequence, the draws of u as plain slices and resolved settings, and
// imports nothing of sgmcmc, whose public types it fills by conversion.
//
// For a thinned set of posterior draws u_1..u_D, each quantity q (a state
// component x_t,c, a volatility, a forecast y_T+h) is summarised by its
// posterior-integrated (predictive) law
//
//	p(q | y) = (1/D) Σ_d p(q | y, u_d),
//
// a mixture over the draws. Each p(q | y, u_d) is represented by M draws
// from a particle smoother, filter or simulation at u_d (pf.States), or,
// for models with an exact ssm.StateSmoother (the LGSSM), by its Gaussian
// moments; a Band reports the mixture's mean, sd and 5/50/95% quantiles:
// for draws, the pooled D·M values; for Gaussians, the mean (1/D)Σ m_d,
// the variance (1/D)Σ(v_d + m_d²) − mean², and quantiles solving
// (1/D)Σ Φ((q − m_d)/√v_d) = p.
//
// Predictive scores and log-likelihoods average densities over draws or
// filter runs on the density scale: log((1/n)Σ e^{l_i}) computed relative
// to the largest l_i (LogMeanExp), with the delta-method standard error
// sd(e^l)/(√n·mean(e^l)) and the ESS (Σe^l)²/Σe^{2l}.
package states
