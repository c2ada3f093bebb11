package sgmcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

// The phases of Run, one method each so that every step of a run can be
// read on its own: newRunner validates and loads the checkpoint,
// newChains builds the chains, startRecorder opens the recorder, sample
// runs the chains in rounds between checkpoints, and finish gathers the
// result. The iterations themselves are chain.run's (run.go).

// runner is one call of Run: its settings with defaults filled in, the
// factories, the checkpoint it resumes from (nil for a fresh run), the
// chains and the recorder they share.
type runner struct {
	s         Settings
	dim       int
	newEst    func(chain int) Estimator
	newMethod func(chain int) Method
	init      func(chain int, u []float64) error
	ck        *checkpointData
	chains    []*chain
	rec       *lockedRecorder
}

// newRunner validates the arguments and the settings and, when resuming,
// reads the checkpoint and checks that it belongs to this run. Stale
// temporary files of a crashed checkpoint write are removed first.
func newRunner(newEst func(chain int) Estimator, newMethod func(chain int) Method,
	init func(chain int, u []float64) error, dim int, s Settings) (*runner, error) {
	if newEst == nil || newMethod == nil || init == nil {
		return nil, fmt.Errorf("%w: newEst, newMethod and init must be non-nil", ErrSettings)
	}
	r := &runner{s: s, dim: dim, newEst: newEst, newMethod: newMethod, init: init}
	if err := r.s.normalize(dim); err != nil {
		return nil, err
	}
	if r.s.Checkpoint != "" {
		removeStaleTemps(r.s.Checkpoint)
	}
	if r.s.Resume && r.s.Checkpoint != "" {
		ck, err := readCheckpoint(r.s.Checkpoint)
		if err != nil {
			return nil, err
		}
		if ck != nil {
			if err := ck.matches(dim, &r.s); err != nil {
				return nil, err
			}
		}
		r.ck = ck
	}
	return r, nil
}

// newChains builds chain c with the generator rand.NewPCG(Seed, c), its
// own estimator and method, and a starting point from init (fresh run) or
// from its checkpointed state (resume).
func (r *runner) newChains() error {
	r.chains = make([]*chain, r.s.Chains)
	for c := range r.chains {
		pcg := rand.NewPCG(r.s.Seed, uint64(c))
		est, m := r.newEst(c), r.newMethod(c)
		if est == nil || m == nil {
			return fmt.Errorf("%w: newEst or newMethod returned nil for chain %d", ErrSettings, c)
		}
		u := make([]float64, r.dim)
		if r.ck == nil {
			if err := r.init(c, u); err != nil {
				return fmt.Errorf("sgmcmc: init of chain %d: %w", c, err)
			}
			if i := fmath.FirstNonFinite(u); i >= 0 {
				return fmt.Errorf("%w: init of chain %d gave u[%d] = %v", ErrSettings, c, i, u[i])
			}
		}
		smp := NewSampler(est, m, u, r.s.Schedule, rand.New(pcg))
		smp.chain = c
		ch := &chain{s: smp, pcg: pcg}
		if r.ck != nil {
			if err := ch.restore(&r.ck.State[c]); err != nil {
				return fmt.Errorf("%w: chain %d: %w", ErrCheckpoint, c, err)
			}
		}
		r.chains[c] = ch
	}
	return nil
}

// startRecorder wraps the recorder (none: one that records nothing) for
// the chains to share and calls its Init, or its Resume with the
// checkpointed recorder state when resuming.
func (r *runner) startRecorder() error {
	info := Info{Chains: r.s.Chains, Dim: r.dim, Iterations: r.s.Iterations, Runtime: r.s.Runtime,
		BurnIn: r.s.BurnIn, Thin: r.s.Thin, Start: make([]int, r.s.Chains)}
	for c, ch := range r.chains {
		info.Start[c] = ch.s.k
	}
	r.rec = &lockedRecorder{r: r.s.Recorder}
	if r.rec.r == nil {
		r.rec.r = nopRecorder{}
	}
	var err error
	if rs, ok := r.rec.r.(Resumer); ok && r.ck != nil {
		err = rs.Resume(info, r.ck.Recorder)
	} else {
		err = r.rec.r.Init(info)
	}
	if err != nil {
		return fmt.Errorf("sgmcmc: recorder: %w", err)
	}
	return nil
}

// checkpoint writes the chains' and the recorder's state to the
// checkpoint file.
func (r *runner) checkpoint() error {
	return writeCheckpoint(r.s.Checkpoint, r.dim, &r.s, r.chains, r.rec)
}

// sample runs the chains in rounds until every one has stopped: a round
// takes each running chain to the next multiple of CheckpointEvery (to
// its end without a checkpoint file) and is followed by a checkpoint.
// Cancellation of ctx (the caller's, or a recorder error's) ends the run
// without one. It returns the checkpoint error that ends the run, if any;
// the chains' own ends are in their results.
func (r *runner) sample(ctx context.Context) error {
	sem := make(chan struct{}, r.s.Concurrency)
	for {
		r.round(ctx, sem)
		if ctx.Err() != nil {
			return nil
		}
		if r.s.Checkpoint != "" {
			if err := r.checkpoint(); err != nil {
				return err
			}
		}
		running := false
		for _, ch := range r.chains {
			running = running || ch.res.Status == Running
		}
		if !running {
			return nil
		}
	}
}

// round runs every running chain, at most cap(sem) at a time, to its next
// checkpoint or its end, and waits for them.
func (r *runner) round(ctx context.Context, sem chan struct{}) {
	var wg sync.WaitGroup
	for _, ch := range r.chains {
		if ch.res.Status != Running {
			continue
		}
		target := math.MaxInt
		if r.s.Checkpoint != "" {
			target = (ch.s.k/r.s.CheckpointEvery + 1) * r.s.CheckpointEvery
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ch.run(ctx, target, &r.s, r.rec)
		}()
	}
	wg.Wait()
}

// finish gathers the chains' results (a chain still Running was
// canceled), joins their errors with the context's and ckErr (which makes
// the run a Failure), and calls the recorder's Done.
func (r *runner) finish(ctx context.Context, ckErr error, wall time.Time) (*Result, error) {
	var errs []error
	res := &Result{Chains: make([]ChainResult, r.s.Chains), Resumed: r.ck != nil}
	for c, ch := range r.chains {
		cr := ch.res
		if cr.Status == Running {
			cr.Status = Canceled
		}
		cr.Iterations = ch.s.k
		cr.U = append([]float64(nil), ch.s.u...)
		res.Chains[c] = cr
		res.Status = max(res.Status, cr.Status)
		if cr.Err != nil {
			errs = append(errs, cr.Err)
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if ckErr != nil {
		errs = append(errs, ckErr)
		res.Status = Failure
	}
	res.Runtime = time.Since(wall)
	if err := r.rec.r.Done(res); err != nil {
		errs = append(errs, fmt.Errorf("sgmcmc: recorder: %w", err))
		res.Status = Failure
	}
	return res, errors.Join(errs...)
}
