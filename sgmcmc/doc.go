// Package sgmcmc fits the parameters of state space models: Fit takes a
// model (package models, or your own ssm.Model) and its data and returns
// the Posterior, with diagnostics and warnings; the Posterior then gives
// latent states, forecasts and held-out scores.
//
//	post, err := sgmcmc.Fit(ctx, models.SVM{}, ssm.Dataset{Sequences: []ssm.Sequence{y}}, sgmcmc.FitSettings{Seed: 1})
//	post.WriteText(os.Stdout)       // mean, sd, quantiles, bulk and tail ESS, R-hat, MCSE per parameter
//	fmt.Println(post.Warnings)      // everything worth a look; empty when the chains are fine
//	st, err := post.States(ctx, sgmcmc.StateSettings{})      // smoothed states x_t
//	fc, err := post.Forecast(ctx, 5, sgmcmc.StateSettings{}) // 5 steps ahead
//
// Every zero field of FitSettings has a working default; the ones users
// change most are Chains, MaxTime (a time budget, which warns when it
// stops the run), Seed (the same seed gives the same draws on any
// machine), Checkpoint (resume after an interrupt) and Progress (where
// progress lines go).
//
// Below Fit are the samplers it runs, usable on their own: stochastic
// gradient Markov chain Monte Carlo methods and the machinery to run them:
// step-size schedules, parallel chains, wall-clock budgets, recorders,
// progress printing and crash-safe checkpoint/resume.
//
// The samplers (Run, the Methods, Precond, the schedules, the recorders
// and checkpoints) consume a small Estimator interface (a possibly noisy
// and biased estimate ĝ(u) of the gradient of the log-posterior
// ∇_u log π(u | y), prior included) and nothing else, so every sampler can
// be tested on Gaussian targets with exact gradients. Fit, the layer above
// them, imports the module's packages gradient (the particle gradient
// estimators), ksd (diagnostics), pf (filters), ssm (models and data) and
// internal/fmath, and its own internal packages tmix, surrogate, linalg
// and states.
//
// # Step-size convention
//
// All methods are written with a step size h and the update of the paper's
// Algorithm 2 (Aicher et al., "Stochastic gradient MCMC for nonlinear state
// space models"):
//
//	SGLD:   u_{k+1} = u_k + h_k ĝ(u_k) + √(2 h_k) ξ_k,   ξ_k ~ N(0, I).
//
// This is the Euler–Maruyama discretisation with time step h of the Langevin
// diffusion du = ∇log π(u) dt + √2 dW, whose stationary law is π. Welling and
// Teh (2011) write the same update as u + (ε/2) ĝ + N(0, ε): their ε is 2h.
// For a Gaussian target N(0, s²) and exact gradients the chain is the AR(1)
// process u' = (1 − h/s²) u + √(2h) ξ with stationary variance
// 2h / (1 − (1 − h/s²)²) = s² / (1 − h/(2s²)), an O(h) bias the tests check.
//
// # Methods
//
//   - SGLD: the update above.
//   - PSGLD: RMSprop-preconditioned SGLD (Li et al. 2016),
//     V ← αV + (1−α) ĝ⊙ĝ, G = 1/(λ + √V),
//     u ← u + h G⊙ĝ + √(2h G)⊙ξ.
//     The correction term Γ_i = ∂G_ii/∂u_i is dropped, as Li et al. do in all
//     their experiments. That is harmless only when V averages over many
//     mixing times (1/(1−α) ≫ mixing time) or is dominated by gradient noise;
//     see PSGLD for the bias measured otherwise.
//   - SGHMC (Chen et al. 2014) with identity mass and friction C:
//     r ← (1 − hC) r + h ĝ + √(2Ch) ξ,  u ← u + h r,
//     i.e. their Algorithm 2 with the gradient-noise estimate B̂ = 0 and without
//     momentum resampling. In their (η, α) parameterisation η = h², α = hC.
//   - SGD and Adam (Kingma and Ba 2015): noise-free ascent on the same
//     estimator, for MAP initialisation; WarmStart runs one of them for
//     its first Steps iterations and a sampler after, with a Phased
//     schedule (learning rate, then step size), in one Run per chain.
//
// # Schedules
//
// Constant h; Polynomial h_k = A (B + k)^(−C) (Welling and Teh); Cyclical
// h_k = (h_0/2)(cos(π mod(k, L)/L) + 1) with L = ⌈K/M⌉ (Zhang et al. 2020).
// The iteration k counts from 0.
//
// # Runs
//
// Run drives several chains on goroutines. Chain c draws every random number
// (estimator and method) from rand.New(rand.NewPCG(Settings.Seed, uint64(c))),
// so its output does not depend on GOMAXPROCS or Settings.Concurrency.
// Iteration k evaluates ĝ at u_k, offers the draw (u_k, ĝ(u_k)) to the
// Recorder when k ≥ BurnIn and (k − BurnIn) is a multiple of Thin, then
// moves to u_{k+1}. A draw therefore always carries the gradient estimate
// evaluated at its own parameter value, as kernel Stein discrepancies need.
//
// Checkpoints (Settings.Checkpoint) store the whole state: u, method state,
// the PCG generator state, the iteration, elapsed time, and the byte offset of a
// CSVRecorder; they are written atomically at iteration multiples of
// CheckpointEvery when all chains reach them. Resuming (Settings.Resume) after
// a crash or kill -9 continues every chain bit-for-bit as the uninterrupted
// run and truncates the CSV file so no row is lost or duplicated.
//
// # Fit: a calibrated posterior in one call
//
// Fit is the layer above Run: it composes package gradient (the buffered
// particle gradient, its tiling into a full-data score and its control
// variate) and package ksd (diagnostics) into model + data → Posterior.
// Plain SGLD on a subsampled gradient with noise covariance V has, on a
// posterior of curvature H, the stationary variance H⁻¹(1 + hλ/2)/(1 − h/2)
// in each direction (λ an eigenvalue of the noise in posterior units), and
// V grows like T²/S for a subsequence estimator while h must shrink like
// 1/T: the longer the series, the wider the posterior. Fit removes both
// factors:
//
//  1. The control variate g(u) = ĝ_full(u*) + g_S(u) − g_S(u*) around the
//     mode u* (Baker, Fearnhead, Fox and Nemeth 2019), both g_S on the same
//     window with the same random numbers, has noise that vanishes at u*
//     up to particle noise; ĝ_full(u*) comes from tiling passes of a
//     16N-particle filter (the smoothers' bias on heavy-tailed data falls
//     slowly with N), averaged until its error moves the mean by less than
//     0.1 posterior sd. With a deterministic filter on long data, Newton
//     runs on nested subsets and then reads all the data once, at the
//     last subset's mode u0; its later steps, and the anchor, use
//     ĝ_full(u0) plus score differences on a subset, whose sampling error
//     is reported and kept below 0.1 posterior sd. With the model's exact
//     scorer the steps on all the data take the exact full-data score
//     and, as the curvature, the last subset's observed information with
//     BFGS updates (one full-data score a step instead of p + 1 and a
//     value pass), and a sequence longer than 5·10⁵ is scored in chunks on
//     the workers. On such data the discretisation correction towards a finer
//     scorer is measured on a subset of 10⁵ observations. Newton rounds that
//     keep moving to where the grid must cover an ever wider state range
//     (two in a row, each 1.5 times wider, the last step ≥ 10 sds) are a
//     log posterior rising without bound, an improper posterior (the SVM
//     with exact zeros in the data): Fit stops with ErrNoMode and the
//     data's warnings instead of sampling it. (A full pass is the
//     one O(T) step: an anchor from n of T observations would move the
//     mean by about √(T/n − 1) sds; PrepObs trades that for time.) The
//     plain estimator gets the same first-order bias
//     cancellation from a constant: g_S(u) + ĝ_full(u*) − ĝ_N(u*), with
//     ĝ_N(u*) the tiled score of its own N-particle filter. With
//     CVParticles the control variate runs its own forward-only filter
//     with sorted resampling, whose difference is continuous in u.
//  2. Precond moves u ← u + hMĝ + Lζ with M = LLᵀ an estimate of the
//     posterior covariance and ζ ~ N(0, (2h − h²)I − h²W), W = LᵀVL the
//     measured gradient noise: the noise the gradient brings is subtracted
//     from the noise injected, and −h² corrects the Euler step, so that
//     on a Gaussian posterior with M its covariance the stationary
//     covariance is exactly M whatever h and V (TestPrecondStationary).
//  3. M starts from the empirical Fisher information of the tiled windows
//     plus the prior's curvature and is adapted in three windows to the
//     covariance of the chains' draws (as Stan adapts its metric); after
//     each, V is re-measured at the chains' states, where the control
//     variate's noise (growing with |u − u*|) actually is. The step is
//     h = min(0.25, 1/(1 + κλ_max(W))), which keeps at least half of SGLD's
//     injected noise (κ > 1 only for the continuous control variate, whose
//     noise grows like |u − u*|²). W is measured with each probe's noise
//     clipped where Precond's drift bound (one posterior sd per step) would
//     clip it, so a rare extreme window does not set the step.
//  4. With a deterministic filter (grid, Kalman, a model's ExactScorer)
//     the full-data score itself competes (FullGradient): no noise, a pass
//     over the data per iteration, and the exact log posterior with it, so
//     the chains are Metropolis-adjusted and exact for any step (package
//     internal/mh):
//     90% of their steps propose independently from a mixture q of
//     multivariate Student-t (ν = 5), the others are Precond's update as a
//     Langevin proposal (step 0.7; after a sampling segment whose Langevin
//     steps were accepted under 30% of the time, the step falls by the
//     windows' rule below: LGSSMd{D: 5}'s 35 parameters accepted 6% at
//     0.7). q replaces the adaptation windows
//     (package internal/amis): adaptive importance sampling (AMIS of Cornuet and
//     others, 2012) in four to eight rounds of max(64, 25p) draws (it stops
//     from the fourth on once a proposal's expected holding time is at
//     most 1.6), the first from a t at u*
//     with 1.5 × the Laplace scale, each next one fitted to all weighted draws so
//     far (weighted EM, 1–4 components and scale, one component above 12
//     parameters, always with a defensive
//     component: a t at 4 × the weighted scale, weight 0.1)
//     to minimise the expected holding time E_π[1/α(x)] of an independence
//     chain, α(x) = E_q min(1, w(y)/w(x)), w = π/q; the chains start from
//     the weighted draws. An independence step needs the log posterior at
//     its proposal only (about half a gradient with an exact scorer; the
//     Sampler skips the gradient); the draws cost log
//     posteriors without gradients and run on all workers. Where the final
//     round's importance sampling is poor (ESS < 10% of its draws, or
//     under 2.5% in each of the first three rounds, which then end), the
//     adaptation windows of step 3 run instead, with the Langevin step
//     tuned to an acceptance rate of 0.7; independence steps accepted
//     under 2% of the time in a window drop to 10% of the steps. After
//     each window whose local steps were accepted at least 10% of the
//     time the importance sampling is tried again from the window's mean
//     and metric (retryIS), and the windows end when it succeeds (MSV on DAX and CAC 40: after the first window, whose
//     random-walk chains had found the mass 3 sds from the Newton
//     steps' end). On
//     Laplace importance sampling, whose score is not the derivative of
//     its likelihood estimate, the Langevin drift misleads: the local
//     steps are random-walk Metropolis steps of whitened sd √(2h − h²),
//     h tuned to an acceptance rate of 0.3 (Preparation.Walk; MSV on DAX
//     and CAC 40, docs/particles.md). The points where π was
//     evaluated then fit a surrogate (surrogate.go) π̃ = q·((1 − ε)
//     (e^{r_u − log Z_u} + e^{r_θ − log Z_θ})/2 + ε), ε = 0.2: r_u a
//     quadratic plus a Gaussian process for log π − log q in the
//     weighted draws' whitened u, r_θ the same for the log-likelihood
//     log π − log p in the natural parameters θ, plus the exact log prior
//     (whose Jacobian is the posterior's tail where a parameter's
//     likelihood flattens at its bound, GARCH's μ → 2), capped at the
//     largest fitted log π − log q plus 0.5 (r_u) and 2 (r_θ, whose tail
//     is the exact prior's); when its leave-one-out holding time is
//     shorter than q's, every independence step becomes a surrogate
//     transition (Liu 2001; delayed acceptance, Christen and Fox 2005):
//     20 Metropolis steps on π̃ (independence steps from q and random
//     walks) from the current point, accepted with min(1,
//     π(u')π̃(u)/(π(u)π̃(u'))), exact whatever π̃'s error, and the
//     Langevin steps give way to random-walk steps on π (10%, log
//     posteriors only): no gradient at all. The surrogate is refitted
//     with q between segments, to the rounds' points and the chains'
//     draws; from the fourth round on, a surrogate whose leave-one-out
//     holding time is at most 1.3 ends the rounds (GARCH on DAX, with
//     its σ² node filter: acceptance 0.62 → 0.86, 400 log posteriors
//     instead of 600; from
//     the third, on 300 points, the first segment mixed poorly on some
//     seeds). The
//     control variate is also
//     probed on the 0.99 contour of N(u*, M) and dropped where its noise
//     there would inject more than ten times the diffusion's variance
//     (GARCH on DAX). AutoGradient keeps the subsequence estimator of the
//     lower cost per effective draw, and the full-data score instead when
//     the whole run planned with it costs less (in counted work:
//     importance rounds and exact chains against adaptation windows and
//     SGLD at the control variate's noise on the 0.99 contour; DAX's SVM, 12 s
//     instead of 28 s). With a model's exact scorer (AutoFilter prefers it
//     to a grid: the LGSSM's Kalman filter, GARCH's quadrature filter) the mode is
//     found on the exact full-data score (every sequence one window)
//     with the observed information −J by Levenberg–Marquardt steps, each
//     accepted only where the exact log posterior increases: a tiling's
//     buffers need not forget a long-memory
//     state (GARCH on the S&P 500: φ ≈ 0.998, the tiled score's zero 1.3
//     posterior sds off) and −J is indefinite far from the mode.
//     When that exact scorer is exact only up to a discretisation
//     (ssm.RefinedScorer; GARCH's quadrature filter), the difference
//     r = ℓ_refined − ℓ is measured at u* and u* ± L e_k and modelled as
//     r ≈ Σ_k a_k z_k + ½ b_k z_k² in z = L⁻¹(u − u*); the chains then
//     sample the exact scorer's posterior times exp(Σ_k a_k z_k + ½ b_k
//     z_k²) (Preparation.Discretisation): the finer scorer's posterior to second
//     order at the coarse scorer's cost, a control variate for the
//     discretisation (GARCH's σ² node filter, GARCH{Nodes: 64},
//     corrected towards 256 nodes on the S&P 500, moved λ and τ by about
//     0.6 and 0.5 sd). A model that leaves its discretisation to the caller
//     (ssm.Coarsener; GARCH with its defaults) is prepared at its coarser
//     one first (GARCH: 7 quadrature points refined to 14), and every
//     coarser level is then measured on one design of 3 + 4p + p(p−1) points
//     around u*, out to 3 sds along the axes: r is fitted
//     by a·z + ½zᵀBz + Σ_k d_k z_k³, whose leave-one-out error says how
//     well it holds. The chains sample the coarsest level whose fit holds
//     (to 0.15 nats for the first level, 0.05 for a deeper one, which
//     only buys speed; GARCH on DAX and on the S&P 500: 7 points, 0.016
//     and 0.008 nats) when the first level's correction moves no mean by
//     more than 0.5 sd; beyond 4 whitened sds the curved part is held at
//     its value on the sphere, so that a curvature fitted near u* cannot
//     lift a far tail. Otherwise the preparation continues at
//     the model as given from the coarser mode. The first importance
//     proposal is centred at the target's Gaussian approximation, the
//     Laplace approximation times the first level's correction. After
//     sampling, a
//     correction above 0.1 sd (or a coarser model) is checked: 12 draws
//     importance-weighted to the finer scorer, 24 when those leave a
//     residual above 0.1 sd or an SE above 0.05 sd
//     (DiscretisationReport.Residual).
//  5. The number of iterations aims at TargetESS from the autocorrelation
//     measured in the last window (or, after importance sampling, 2H − 1
//     for the expected holding time H over the independence share),
//     extended while the bulk or tail ESS or R-hat falls short: two
//     extensions (three after the full-data path's short pilot segment,
//     to which the proposal is refitted), and more while the sampling so
//     far cost under 120 nominal seconds of one worker, counted, not
//     timed (at most 12 segments): a curved posterior
//     makes the measured autocorrelation optimistic (the LGSSM on the S&P
//     500 returns). An extension adds at most twice the iterations so far
//     (and then allows one more): the ESS of short chains is a noisy, low
//     estimate. The full-data path sizes its extensions by the
//     autocorrelation time its draws so far measured (their number over
//     the smallest ESS, scaled by the refitted proposal's 2H − 1 over the
//     old one's), aiming at 1.2 × TargetESS; after the pilot, no more
//     than the last segment's own autocorrelation time asks for, with
//     the draws so far counted at theirs (n draws of time τ_k each make
//     ESS (Σn)²/Σnτ): the pilot's surrogate knows the importance points
//     only and its stays in a tail weigh on the ESS of all draws long
//     after the refitted one mixes well; and no fewer than a quarter of
//     the draws so far (half when only R-hat falls short). It also goes
//     on while a
//     chain of the last segment stood at one point for 20 iterations and
//     2% of the segment or more: a point where the
//     proposals have far too little mass, a part of the posterior the
//     chains reach rarely and then stick in, which R-hat and ESS do not
//     see; when the sampling ends with such a stay the Posterior warns.
//     And cheap full-data chains run on to MinIterations (10,000) per
//     chain when that costs under 50 nominal seconds of one worker: the
//     LGSSM on the S&P 500 returns
//     (a long curved ridge to small σ and large τ) met the ESS and R-hat
//     targets after 5–10 s with sds 0.65–0.88 of the reference on half
//     of eight seeds, and gives 0.91–1.05 on all eight with the rule.
//     With a checkpoint the segments are the same (so are the draws):
//     each is checkpointed about every 20 s, its kept draws are kept in
//     Checkpoint+".draws" and, once it is done, with the preparation in
//     Checkpoint+".prep", so that a resumed fit summarises all of them.
//     A grid filter (chosen at the warm-up's end and the mode) that loses
//     more than 10⁻⁴ of the filter mass at its edges at some u during the
//     preparation (gradient.GridEdgeError) is widened to cover the grid
//     chosen at that u too, and the preparation runs again (at most three
//     times, within pf.MaxGridNodes) before the fit falls back to
//     particle filters: a short series has a wide posterior, whose noise
//     probes reach parameters where the mode's grid is too narrow (the
//     SVM on 201 DAX returns: particles and more than ten minutes before,
//     the grid widened from [−8, 8] to [−19.5, 19.5] and 6.5 s now).
//     Warnings report R-hat > 1.01, bulk or tail ESS < 400, stopped chains,
//     skipped iterations, interrupts, budgets, an imprecise anchor, a
//     fallback to particle filters, and a discretisation correction
//     that moves a mean by more than 1 sd, whose curvature exceeds 0.5 or
//     whose check after sampling moves a mean by more than 0.1 sd or an
//     sd by more than 10%, beyond the check's own 95% band, towards the
//     finer scorer's (refine the scorer).
//
// The Posterior returned by Fit also answers questions about the latent
// states, integrated over D thinned posterior draws (states.go and
// forecast.go, computed by package internal/states): States (smoothed and
// filtered laws of x_t and of the volatility, by FFBSi or fixed-lag
// particle smoothing per draw, or exact Kalman/RTS moments for an
// ssm.StateSmoother), Forecast (h-step predictive laws of x, y and the
// volatility), PredictiveScore (the log predictive score of held-out
// rows) and LogLik (the log-likelihood at a point such as MeanU()).
//
// # Where things are
//
// # Filters
//
// What scores a window decides what Fit can do (FitSettings.Filter,
// Preparation.Path). A model's exact scorer (the Kalman filter of the
// LGSSMs, GARCH's quadrature filter) and the grid filter for a scalar state are
// deterministic. A model with a vector state whose dynamics are linear
// Gaussian and whose emission has derivatives in the state
// (ssm.LinearGaussian and ssm.EmissionCurvature: models.MSV) is scored by
// Laplace importance sampling (pf.Laplace, laplace.go). The preparation
// scores it plain and whole (without the resampling sweep or blocks)
// with its random numbers fixed, which makes it deterministic and smooth
// in u: an exact scorer that is exact only up to the importance
// sampling's error. The full-data chains and their importance-sampling
// adaptation then use the resampling sweep with fresh random numbers at
// every evaluation, an unbiased estimate of the likelihood, and keep the
// current state's estimate until the chain moves (pseudomarginal.go):
// pseudo-marginal Metropolis–Hastings (Andrieu and Roberts 2009), whose
// target is the exact posterior whatever the estimate's noise. With
// AutoGradient these are the chains, whatever the length of the series
// (noise.go's fullOnly: the subsequence estimators' Fisher-identity scores
// are not the plain estimate's derivatives, and on the S&P 500 returns
// their control variate lost the posterior). Chains on subsequence
// gradients, when the user asks for them, run on the plain estimate, with
// the discretisation correction towards a finer one (four times the paths).
// Particle filters take every other model; their gradients are noisy
// and not continuous in u, so only SGLD with the plain or control-variate
// gradient applies, at small steps (docs/particles.md).
//
// The sampler engine: run.go and run_phases.go (Run, chains, budgets),
// sampler.go (one chain's Sampler), method.go (SGLD, PSGLD, SGHMC, SGD,
// Adam), precond.go (Precond), schedule.go, recorder.go, csv.go,
// drawfile.go and trace.go (recorders), checkpoint.go and ckfile.go
// (checkpoints), warmstart.go, status.go and errors.go.
//
// Fit, in the order it runs: settings.go (FitSettings and the check of its
// values), flags.go (its command-line flags), fit.go (Fit, the data's
// check, the settings' defaults, the set-up and the warm-up), prepare.go
// (the preparation: mode, anchor, Jacobian, subsets), newton.go (Newton
// and Levenberg–Marquardt steps to the mode), tiling.go (tiled full-data
// scores), grid.go (the choice of filter and the widening of grids),
// noise.go (gradient-noise probes, the choice of gradient, the planned
// cost, and the SGLD step rule h = min(0.25, 1/(1 + κλ)) with its
// autocorrelation time (2 − h)/h), adapt.go (the adaptation windows),
// isadapt.go (importance sampling for full-data chains, through package
// amis), chains.go (the chains' estimators and methods: Precond, or the
// Metropolis–Hastings kernels of package mh) and surrogate.go (when the
// chains use surrogate transitions), discretisation.go and quadfit.go (the
// discretisation correction of an exact scorer such as GARCH's quadrature filter,
// and the choice of a coarser level), sample.go (planned segments,
// extensions and the Posterior's warnings), segments.go (a checkpointed
// fit's segments), cost.go (counted work), tailcheck.go (the spread
// check), posterior.go (Posterior, its summary and KSD), prepfile.go (the
// preparation's checkpoint), laplace.go (a vector-state model scored by
// pf.Laplace), states.go and forecast.go (the public types and methods
// of latent states, forecasts, predictive scores and log-likelihoods:
// their settings' checks and defaults, and the conversion of the
// results of package internal/states), report.go (the JSON report) and
// merge.go (summaries of any chains' draws).
//
// Shared definitions: streams.go (every random stream and what it drives),
// thresholds.go (R-hat 1.01 and ESS 400), and the internal packages tmix
// (the Student-t mixtures, weighted-sample functions and independence
// chains' rates), amis (adaptive importance sampling, given a batch log
// posterior), mh (the exact Metropolis–Hastings kernels), surrogate (the
// surrogate π̃ and its transitions), linalg (small matrix functions and
// the quadratic fits of the discretisation correction) and states (latent
// states, forecasts, predictive scores and log-likelihoods integrated
// over posterior draws, from the model, a sequence, the draws as plain
// slices and resolved settings: worker pools, exact and particle draws of
// the states, mixture summaries and log-mean-exp scores).
package sgmcmc
