package sgmcmc

// The random streams of Fit and of the Posterior's methods. Every
// generator is rand.NewPCG(seed, stream) with the user's Seed (or the
// Seed mixed with one of the seed constants below) and a stream that
// separates what it drives, so that the same Seed gives the same draws
// and no two parts share random numbers. The values are fixed: changing
// one changes the draws. An offset "+ i" or "| i" numbers the
// generators of one stream (points, passes, chains, rounds); those
// counts stay far below the distance to the next stream.
const (
	// spreadStream + seg drives the spread check after sampling segment
	// seg (tailcheck.go's proposal draws, under spreadSeedXor), and
	// spreadFinalStream the check on the final draws.
	spreadStream      = 0
	spreadFinalStream = 1 << 20

	// gridStream drives the grid filter's range (pf.GridFor).
	gridStream = 1 << 39
	// warmUpStream drives the Adam warm-up that looks for the mode.
	warmUpStream = 1 << 40
	// anchorStream + n drives the preparation's n-th tiling pass (Newton,
	// line search, anchor, Jacobian): each pass takes the next stream.
	anchorStream = 1 << 41
	// noiseStream drives the gradient-noise probe points u* + Lz and,
	// + i, the probes at them (the first noiseFirstProbes, then the
	// rest); tailNoiseStream the probes on the 0.99 contour (tailNoise).
	noiseStream     = 1 << 42
	tailNoiseStream = noiseStream + 1<<30
	// adaptStartStream + c drives chain c's start, drawn from N(u*, LLᵀ),
	// of the adaptation windows.
	adaptStartStream = 1 << 43
	// ksdStream + i drives the tiled score (particle filters), or the
	// pseudo-marginal sweep's score, at the i-th draw the KSD weighs.
	ksdStream = 1 << 44
	// adaptNoiseStream + win<<20 drives the noise probes at the chains'
	// points after adaptation window win.
	adaptNoiseStream = 1 << 45
	// surrogateStream drives the shuffle of the surrogate's
	// cross-validation folds.
	surrogateStream = 1 << 46
	// isDrawStream + r drives importance-sampling round r's draws from
	// its proposal, and isStartStream the chains' starts resampled from
	// the weighted points.
	isDrawStream  = 1 << 47
	isStartStream = isDrawStream + 1<<20
	// isLogPostStream + r<<24 + i drives the log posterior of round r's
	// i-th point.
	isLogPostStream = 1 << 48
	// (win+1)·isRetryOffset is added to isDrawStream and isStartStream
	// (and, shifted left by 27, to isLogPostStream) for the importance
	// sampling retried after adaptation window win (retryIS).
	isRetryOffset = 1 << 16

	// predictiveScoreStream | i, forecastStream | d and loglikStream | i
	// drive the Posterior's PredictiveScore (draw d), Forecast (draw d)
	// and LogLik (particle filter i), passed to package internal/states
	// as its Streams; States seeds its workers with block<<32 | d there.
	loglikStream          = 1 << 60
	predictiveScoreStream = 1 << 61
	forecastStream        = 1 << 62

	// exactStream is the stream of evaluations whose filter is
	// deterministic (exact scorers), which draw nothing.
	exactStream = 0
)

// Seed constants: streams of their own under a Seed mixed with one of
// these (an odd 64-bit constant).
const (
	// probeSeedXor: Seed ^ probeSeedXor drives the gradient-noise
	// probes' estimates, stream + k for the first of probe k's pair and
	// stream + k + probeSecond for the second.
	probeSeedXor = 0x5851F42D4C957F2D
	probeSecond  = 1 << 32
	// laplaceSeed: Seed ^ laplaceSeed seeds pf.Laplace's paths (their
	// streams are the windows' bounds, Start<<32 | End; the finer scorer
	// uses the complement), so that they share no generator with the
	// streams above or the probes'.
	laplaceSeed = 0xD1B54A32D192ED03
	// spreadSeedXor: Seed ^ spreadSeedXor drives the spread check's
	// proposal draws (tailcheck.go).
	spreadSeedXor = 0x2545F4914F6CDD1D
	// adaptSeedStride: adaptation window win's chains run Run with Seed
	// Seed + (win+1)·adaptSeedStride.
	adaptSeedStride = 0x9E3779B97F4A7C15
	// segmentSeedStride: sampling segment seg's chains run Run with Seed
	// Seed + seg·segmentSeedStride. Run gives chain c the generator
	// rand.NewPCG(Seed, c) (run_phases.go).
	segmentSeedStride = 0x6A09E667F3BCC909
	// surFitSeed, surFitStream: the fixed generator of the surrogate's
	// normalising draws (the fit is deterministic, whatever Seed).
	surFitSeed   = 1
	surFitStream = 2
)
