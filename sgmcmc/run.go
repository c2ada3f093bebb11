package sgmcmc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
)

// Settings configures Run. Zero values are the documented defaults.
type Settings struct {
	// Iterations is the number of iterations (gradient evaluations) per
	// chain; 0 means no limit, and then Runtime must be set.
	Iterations int
	// Runtime is the compute-time budget of each chain: a chain stops
	// before an iteration once it has run this long (the paper compares
	// samplers at equal compute time). Only the time the chain itself runs
	// counts, so the budget is fair when Concurrency < Chains; it is carried
	// across a resume. 0 means no limit.
	Runtime time.Duration
	// BurnIn is the number of initial iterations whose draws are not
	// recorded; Thin keeps every Thin-th draw after it (0 means 1). The
	// draws kept are those of iterations k ≥ BurnIn with (k − BurnIn) a
	// multiple of Thin.
	BurnIn, Thin int
	// Schedule gives the step sizes (required).
	Schedule Schedule
	// Chains is the number of chains (0 means 1) and Concurrency the
	// number run at once (0 means GOMAXPROCS). The output does not depend
	// on Concurrency or GOMAXPROCS.
	Chains, Concurrency int
	// Seed seeds the generators: chain c draws from
	// rand.New(rand.NewPCG(Seed, uint64(c))).
	Seed uint64
	// NonFinite selects what a NaN or infinite gradient or parameter does.
	NonFinite OnNonFinite
	// Recorder observes the kept draws; nil records nothing. Combine
	// several with Multi.
	Recorder Recorder
	// RecordAll passes every iteration to the Recorder, burn-in and
	// thinned-out ones too, with Draw.Discarded set for those, so progress
	// can be shown from the first iteration. Trace and CSVRecorder keep
	// only the kept draws either way.
	RecordAll bool

	// Checkpoint is the path of the checkpoint file; "" disables
	// checkpointing. The file is replaced atomically (temporary file in
	// the same directory, fsync, rename, fsync of the directory) at the
	// start, whenever the running chains reach a multiple of
	// CheckpointEvery iterations (0 means 1000), and at the end, but never
	// after a cancellation or a recorder failure, whose state is not a
	// clean cut. Chains wait for each other at each multiple.
	Checkpoint      string
	CheckpointEvery int
	// Resume continues from the Checkpoint file when it exists (a fresh
	// run starts otherwise). The chains continue bit-for-bit as the
	// uninterrupted run: init is not called; estimators and methods come
	// from the factories and get their checkpointed state; a Resumer
	// recorder discards what it wrote after the checkpoint. Chains,
	// Seed, BurnIn, Thin and the dimension must match the checkpoint;
	// Iterations and Runtime may be raised to extend a run. The Schedule
	// must be the same for the continuation to be exact.
	Resume bool
	// Fingerprint identifies what else determines the run (model, data,
	// estimator settings), for callers to set: a checkpoint written with
	// another Fingerprint is refused on resume.
	Fingerprint string
}

// ChainResult reports one chain.
type ChainResult struct {
	Status Status
	// Err is the error that stopped the chain (a *NonFiniteError or a
	// *ChainError), nil for limits and cancellation.
	Err        error
	Iterations int           // iterations done: U is u_Iterations
	Kept       int           // draws passed to the Recorder, including before a resume
	Skipped    int           // iterations rejected under Skip
	Elapsed    time.Duration // compute time of the chain, including before a resume
	// U is the final parameter: after a non-finite stop, the last finite one.
	U []float64
}

// Result reports a run.
type Result struct {
	// Status is the most severe of the chains' (see Status).
	Status  Status
	Chains  []ChainResult
	Runtime time.Duration // wall-clock time of this call
	Resumed bool          // whether the run continued from a checkpoint
}

// Run samples Settings.Chains chains of dimension dim. For chain c it calls
// newEst(c) and newMethod(c) once (estimators and methods are never shared
// between goroutines) and init(c, u) to fill the starting point u_0, which
// must be finite. Chains run in parallel, Concurrency at a time.
//
// The returned Result is non-nil whenever the run started; the error joins the
// chains' errors (errors.Is works with ErrNonFinite and context.Canceled), the
// context's error and any recorder or checkpoint error. Other chains go on
// when one stops on a non-finite value or an estimator error; cancellation or a
// recorder error stops them all.
func Run(ctx context.Context, newEst func(chain int) Estimator, newMethod func(chain int) Method,
	init func(chain int, u []float64) error, dim int, s Settings) (*Result, error) {
	// Run is the driver; each phase is a runner method in run_phases.go
	// and the iterations are chain.run's.
	wall := time.Now()
	r, err := newRunner(newEst, newMethod, init, dim, s)
	if err != nil {
		return nil, err
	}
	if err := r.newChains(); err != nil {
		return nil, err
	}
	if err := r.startRecorder(); err != nil {
		return nil, err
	}
	// ckErr is a failure of the run rather than of a chain.
	var ckErr error
	if r.s.Checkpoint != "" && r.ck == nil {
		ckErr = r.checkpoint()
	}
	// The chains run under rctx, which a recorder error cancels.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.rec.cancel = cancel
	if ckErr == nil {
		ckErr = r.sample(rctx)
	}
	return r.finish(ctx, ckErr, wall)
}

func (s *Settings) normalize(dim int) error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrSettings}, a...)...)
	}
	switch {
	case dim <= 0:
		return bad("dimension %d must be positive", dim)
	case s.Schedule == nil:
		return bad("Schedule is required")
	case s.Iterations < 0:
		return bad("Iterations %d is negative", s.Iterations)
	case s.Runtime < 0:
		return bad("Runtime %v is negative", s.Runtime)
	case s.Iterations == 0 && s.Runtime == 0:
		return bad("Iterations or Runtime must be set")
	case s.BurnIn < 0:
		return bad("BurnIn %d is negative", s.BurnIn)
	case s.Thin < 0:
		return bad("Thin %d is negative", s.Thin)
	case s.Chains < 0:
		return bad("Chains %d is negative", s.Chains)
	case s.Concurrency < 0:
		return bad("Concurrency %d is negative", s.Concurrency)
	case s.CheckpointEvery < 0:
		return bad("CheckpointEvery %d is negative", s.CheckpointEvery)
	case s.NonFinite != Stop && s.NonFinite != Skip:
		return bad("unknown NonFinite %d", s.NonFinite)
	}
	if s.Thin == 0 {
		s.Thin = 1
	}
	if s.Chains == 0 {
		s.Chains = 1
	}
	if s.Concurrency == 0 {
		s.Concurrency = runtime.GOMAXPROCS(0)
	}
	if s.CheckpointEvery == 0 {
		s.CheckpointEvery = 1000
	}
	return nil
}

// chain is the runner's per-chain state.
type chain struct {
	s    *Sampler
	pcg  *rand.PCG // kept to checkpoint the generator of s.rng
	res  ChainResult
	draw Draw // reused so that recording allocates nothing
}

// run advances the chain until it stops or reaches iteration target. The
// loop checks the limits and the cancellation before each iteration;
// step does the iteration.
func (ch *chain) run(ctx context.Context, target int, st *Settings, rec *lockedRecorder) {
	t0 := time.Now()
	defer func() { ch.res.Elapsed += time.Since(t0) }()
	defer ch.recoverPanic()
	s, r := ch.s, &ch.res
	done := ctx.Done()
	for {
		if st.Iterations > 0 && s.k >= st.Iterations {
			r.Status = IterationLimit
			return
		}
		if s.k >= target {
			return // a checkpoint: the chain only pauses
		}
		select {
		case <-done:
			r.Status = Canceled
			return
		default:
		}
		if st.Runtime > 0 && r.Elapsed+time.Since(t0) >= st.Runtime {
			r.Status = RuntimeLimit
			return
		}
		if !ch.step(ctx, st, rec, t0) {
			return
		}
	}
}

// recoverPanic, deferred by run, turns a panic in an estimator or a
// method (a dimension mismatch, a typed nil) into a Failure of this chain
// with an error naming it, instead of killing the process from a
// goroutine the caller cannot recover in.
func (ch *chain) recoverPanic() {
	if p := recover(); p != nil {
		ch.res.Status = Failure
		ch.res.Err = &ChainError{Chain: ch.s.chain, Iter: ch.s.k, Err: fmt.Errorf("%w: panic: %v", ErrPanic, p)}
	}
}

// step does iteration s.k: the gradient at u_k, the draw's record and the
// move to u_{k+1}. It reports false when the chain stops, with its Status
// and Err set.
func (ch *chain) step(ctx context.Context, st *Settings, rec *lockedRecorder, t0 time.Time) bool {
	s, r := ch.s, &ch.res
	if err := s.evaluate(ctx); err != nil {
		if _, ok := err.(*NonFiniteError); ok {
			return ch.nonFinite(err, st)
		}
		if ctx.Err() != nil {
			// The estimator gave up because of the cancellation.
			r.Status = Canceled
			return false
		}
		r.Status, r.Err = Failure, err
		return false
	}
	if !ch.record(st, rec, t0) {
		return false
	}
	if err := s.move(); err != nil {
		return ch.nonFinite(err, st)
	}
	s.k++
	return true
}

// nonFinite handles a non-finite gradient or parameter: under Skip the
// iteration counts as skipped and the chain goes on (true); under Stop
// the chain stops with Status NonFinite and Err err.
func (ch *chain) nonFinite(err error, st *Settings) bool {
	if st.NonFinite == Skip {
		ch.res.Skipped++
		ch.s.k++
		return true
	}
	ch.res.Status, ch.res.Err = NonFinite, err
	return false
}

// record passes the draw of iteration s.k to the recorder when it is kept,
// or marked Discarded under RecordAll, reusing ch.draw so that nothing is
// allocated. It reports false when the recorder failed, which stops the
// chain with Status Failure.
func (ch *chain) record(st *Settings, rec *lockedRecorder, t0 time.Time) bool {
	s, r := ch.s, &ch.res
	kept := s.k >= st.BurnIn && (s.k-st.BurnIn)%st.Thin == 0
	if !kept && !st.RecordAll {
		return true
	}
	d := &ch.draw
	*d = Draw{Chain: s.chain, Iter: s.k, U: s.u, Grad: s.Grad(), LogPost: s.logPost,
		StepSize: s.h, Elapsed: r.Elapsed + time.Since(t0), Discarded: !kept}
	if err := rec.record(d); err != nil {
		r.Status = Failure
		r.Err = &ChainError{Chain: s.chain, Iter: s.k, Err: fmt.Errorf("recorder: %w", err)}
		return false
	}
	if kept {
		r.Kept++
	}
	return true
}

// lockedRecorder serialises the chains' calls and aborts the run on error.
type lockedRecorder struct {
	mu     sync.Mutex
	r      Recorder
	cancel context.CancelFunc
}

func (l *lockedRecorder) record(d *Draw) error {
	l.mu.Lock()
	err := l.r.Record(d)
	l.mu.Unlock()
	if err != nil {
		l.cancel()
	}
	return err
}

type nopRecorder struct{}

func (nopRecorder) Init(Info) error    { return nil }
func (nopRecorder) Record(*Draw) error { return nil }
func (nopRecorder) Done(*Result) error { return nil }
