package sgmcmc

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

func zeroInit(int, []float64) error { return nil }

// noisy2 returns a 2-D correlated Gaussian estimator with gradient noise, so
// that the estimator also consumes random numbers.
func noisy2(int) Estimator {
	return &gauss{Mu: []float64{1, -1}, P: []float64{2, 0.5, 0.5, 1}, Noise: 0.3}
}

func sgld(int) Method { return &SGLD{} }

// TestReproducible checks that the traces (u, gradients, iterations) are
// bit-identical for Concurrency 1 and 3 and GOMAXPROCS 1 and 2.
func TestReproducible(t *testing.T) {
	run := func(procs, conc int) *Trace {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		tr := &Trace{KeepGrads: true}
		_, err := Run(context.Background(), noisy2, func(int) Method { return &SGHMC{} }, zeroInit, 2,
			Settings{Iterations: 3000, BurnIn: 10, Thin: 3, Schedule: Constant(0.05), Chains: 4, Concurrency: conc, Seed: 42, Recorder: tr})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	ref := run(1, 1)
	for _, pc := range [][2]int{{2, 1}, {2, 2}, {2, 3}, {1, 3}, {2, 0}} {
		got := run(pc[0], pc[1])
		for c := range ref.Chains {
			a, b := &ref.Chains[c], &got.Chains[c]
			if !equalBits(a.U, b.U) || !equalBits(a.Grad, b.Grad) || len(a.Iter) != len(b.Iter) {
				t.Fatalf("GOMAXPROCS %d, Concurrency %d: chain %d differs", pc[0], pc[1], c)
			}
		}
	}
	// Different chains must differ (each has its own stream).
	if equalBits(ref.Chains[0].U, ref.Chains[1].U) {
		t.Error("chains 0 and 1 are identical")
	}
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestBurnInThin checks the exact iterations of the kept draws and that each
// draw carries the gradient evaluated at its own u.
func TestBurnInThin(t *testing.T) {
	const iters, burn, thin = 1000, 100, 7
	tr := &Trace{KeepGrads: true}
	res, err := Run(context.Background(), func(int) Estimator { return std1() }, sgld, zeroInit, 1,
		Settings{Iterations: iters, BurnIn: burn, Thin: thin, Schedule: Constant(0.1), Chains: 2, Recorder: tr})
	if err != nil {
		t.Fatal(err)
	}
	want := (iters - burn + thin - 1) / thin // 129
	for c, ch := range tr.Chains {
		if ch.Len() != want || res.Chains[c].Kept != want || res.Chains[c].Iterations != iters {
			t.Fatalf("chain %d: %d draws (Kept %d, Iterations %d), want %d and %d", c, ch.Len(), res.Chains[c].Kept, res.Chains[c].Iterations, want, iters)
		}
		for i, k := range ch.Iter {
			if k != burn+i*thin {
				t.Fatalf("draw %d has iteration %d, want %d", i, k, burn+i*thin)
			}
			if ch.Grad[i] != -ch.U[i] { // exact gradient of N(0, 1) at the draw
				t.Fatalf("draw %d: gradient %v at u = %v", i, ch.Grad[i], ch.U[i])
			}
		}
	}
}

// sleepy sleeps in every gradient evaluation.
type sleepy struct {
	gauss
	d time.Duration
}

func (s *sleepy) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	time.Sleep(s.d)
	return s.gauss.Grad(ctx, grad, u, rng)
}

// TestRuntimeBudget checks that every chain stops on its budget: each
// iteration sleeps ≥ 1 ms, so a 30 ms budget allows at most 30 iterations and
// the chain must stop with RuntimeLimit after at least 30 ms.
func TestRuntimeBudget(t *testing.T) {
	const budget = 30 * time.Millisecond
	res, err := Run(context.Background(), func(int) Estimator { return &sleepy{*std1(), time.Millisecond} }, sgld, zeroInit, 1,
		Settings{Runtime: budget, Schedule: Constant(0.1), Chains: 3, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != RuntimeLimit {
		t.Fatalf("status %v", res.Status)
	}
	for c, ch := range res.Chains {
		if ch.Status != RuntimeLimit || ch.Elapsed < budget || ch.Iterations < 1 || ch.Iterations > 30 {
			t.Errorf("chain %d: %v after %d iterations in %v", c, ch.Status, ch.Iterations, ch.Elapsed)
		}
	}
}

// TestCancel cancels the context inside the 100th gradient evaluation: the
// chain finishes that iteration and stops before the next one.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	est := EstimatorFunc(func(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
		n++
		if n == 100 {
			cancel()
		}
		grad[0] = -u[0]
		return math.NaN(), nil
	})
	tr := &Trace{}
	res, err := Run(ctx, func(int) Estimator { return est }, sgld, zeroInit, 1,
		Settings{Iterations: 1_000_000, Schedule: Constant(0.1), Recorder: tr})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if res.Status != Canceled || res.Chains[0].Iterations != 100 || tr.Chains[0].Len() != 100 {
		t.Fatalf("status %v after %d iterations, %d draws; want Canceled after 100", res.Status, res.Chains[0].Iterations, tr.Chains[0].Len())
	}
}

// failAt returns an estimator of N(0, 1) that gives a NaN gradient at the
// listed calls (0-based).
func failAt(calls ...int) Estimator {
	n := 0
	return EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		grad[0] = -u[0]
		for _, c := range calls {
			if n == c {
				grad[0] = math.NaN()
			}
		}
		n++
		return 0, nil
	})
}

// TestNonFiniteStop: chain 1 gets a NaN gradient at iteration 37. It stops
// with a *NonFiniteError naming chain 1 and iteration 37 and keeps draws 0..36;
// chain 0 is unaffected.
func TestNonFiniteStop(t *testing.T) {
	tr := &Trace{}
	res, err := Run(context.Background(), func(c int) Estimator {
		if c == 1 {
			return failAt(37)
		}
		return std1()
	}, sgld, zeroInit, 1, Settings{Iterations: 200, Schedule: Constant(0.1), Chains: 2, Recorder: tr})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNonFinite) || nf.Chain != 1 || nf.Iter != 37 || nf.Param {
		t.Fatalf("error %v", err)
	}
	if res.Status != NonFinite || res.Chains[0].Status != IterationLimit || res.Chains[1].Status != NonFinite {
		t.Fatalf("statuses %v, %v, %v", res.Status, res.Chains[0].Status, res.Chains[1].Status)
	}
	if got := tr.Chains[1].Iter; len(got) != 37 || got[36] != 36 || res.Chains[1].Iterations != 37 {
		t.Fatalf("chain 1 kept %d draws, iterations %d", len(got), res.Chains[1].Iterations)
	}
	if tr.Chains[0].Len() != 200 || fmath.FirstNonFinite(res.Chains[1].U) >= 0 {
		t.Fatal("chain 0 truncated or chain 1 final u not finite")
	}
	t.Log(err)
}

// TestNonFiniteParam: a gradient of 1e308 makes u overflow at iteration 5.
func TestNonFiniteParam(t *testing.T) {
	n := 0
	est := EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		grad[0] = -u[0]
		if n == 5 {
			grad[0] = math.MaxFloat64
		}
		n++
		return 0, nil
	})
	tr := &Trace{}
	res, err := Run(context.Background(), func(int) Estimator { return est }, func(int) Method { return &SGD{} }, zeroInit, 1,
		Settings{Iterations: 10, Schedule: Constant(10), Recorder: tr})
	var nf *NonFiniteError
	if !errors.As(err, &nf) || !nf.Param || nf.Iter != 5 {
		t.Fatalf("error %v", err)
	}
	if tr.Chains[0].Len() != 6 || res.Chains[0].U[0] != tr.Chains[0].U[5] {
		t.Fatalf("%d draws, final u %v", tr.Chains[0].Len(), res.Chains[0].U)
	}
}

// TestNonFiniteSkip: NaN gradients at iterations 5, 10 and 15 are rejected and
// counted; those iterations record no draw and leave u unchanged.
func TestNonFiniteSkip(t *testing.T) {
	tr := &Trace{}
	res, err := Run(context.Background(), func(int) Estimator { return failAt(5, 10, 15) }, sgld,
		func(_ int, u []float64) error { u[0] = 1; return nil }, 1,
		Settings{Iterations: 50, Schedule: Constant(0.1), NonFinite: Skip, Recorder: tr})
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Chains[0]
	if ch.Status != IterationLimit || ch.Skipped != 3 || ch.Iterations != 50 || ch.Kept != 47 || tr.Chains[0].Len() != 47 {
		t.Fatalf("%+v, %d draws", ch, tr.Chains[0].Len())
	}
	// Iteration 5 records no draw.
	it := tr.Chains[0].Iter
	if it[4] != 4 || it[5] != 6 {
		t.Fatalf("iterations %v", it[:8])
	}
}

// TestCSVRecorder parses the output with encoding/csv and compares it with an
// in-memory Trace of the same run.
func TestCSVRecorder(t *testing.T) {
	var buf bytes.Buffer
	tr := &Trace{Transform: func(dst, u []float64) { dst[0], dst[1] = math.Exp(u[0]), u[1] }, NaturalDim: 2}
	csvr := NewCSVRecorder(&buf, []string{"sigma", "mu,x"})
	csvr.Transform = tr.Transform
	const chains, iters, burn, thin = 3, 500, 50, 4
	res, err := Run(context.Background(), noisy2, sgld, zeroInit, 2,
		Settings{Iterations: iters, BurnIn: burn, Thin: thin, Schedule: Constant(0.05), Chains: chains, Recorder: Multi(tr, csvr)})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := recs[0]; len(got) != 5 || got[0] != "chain" || got[1] != "iter" || got[2] != "time" || got[3] != "sigma" || got[4] != "mu,x" {
		t.Fatalf("header %q", got)
	}
	kept := (iters - burn + thin - 1) / thin
	if len(recs)-1 != kept*chains {
		t.Fatalf("%d rows, want %d", len(recs)-1, kept*chains)
	}
	next := make([]int, chains)
	for _, r := range recs[1:] {
		c, _ := strconv.Atoi(r[0])
		k, _ := strconv.Atoi(r[1])
		i := next[c]
		next[c]++
		ch := tr.Chains[c]
		if k != ch.Iter[i] {
			t.Fatalf("chain %d row %d: iteration %d, want %d", c, i, k, ch.Iter[i])
		}
		for j := range 2 {
			v, err := strconv.ParseFloat(r[3+j], 64)
			if err != nil || v != ch.Natural[2*i+j] {
				t.Fatalf("chain %d row %d col %d: %q, want %v", c, i, j, r[3+j], ch.Natural[2*i+j])
			}
		}
		if s, err := strconv.ParseFloat(r[2], 64); err != nil || s < 0 {
			t.Fatalf("time %q", r[2])
		}
	}
	for c := range chains {
		if next[c] != kept || res.Chains[c].Kept != kept {
			t.Fatalf("chain %d: %d rows", c, next[c])
		}
	}
}

// TestPrinter checks that the printer writes progress lines and a summary,
// and is silent without a writer.
func TestPrinter(t *testing.T) {
	var buf bytes.Buffer
	p := &Printer{W: &buf, Interval: time.Nanosecond, Names: []string{"sigma"}, Transform: func(dst, u []float64) { dst[0] = math.Exp(u[0]) }}
	silent := &Printer{}
	_, err := Run(context.Background(), func(int) Estimator { return std1() }, sgld, zeroInit, 1,
		Settings{Iterations: 20, Schedule: Constant(0.1), Recorder: Multi(p, silent)})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !bytes.Contains(buf.Bytes(), []byte("iter 19/20")) || !bytes.Contains(buf.Bytes(), []byte("sigma=")) ||
		!bytes.Contains(buf.Bytes(), []byte("ETA")) || !bytes.Contains(buf.Bytes(), []byte("IterationLimit after 20 iterations")) {
		t.Errorf("printer output:\n%s", out)
	}
}

// TestSettingsErrors checks that invalid settings are reported.
func TestSettingsErrors(t *testing.T) {
	for _, s := range []Settings{
		{Iterations: 10},        // no schedule
		{Schedule: Constant(1)}, // no limit
		{Iterations: 10, Schedule: Constant(1), Thin: -1},
		{Iterations: 10, Schedule: Constant(1), NonFinite: 7},
	} {
		if _, err := Run(context.Background(), noisy2, sgld, zeroInit, 2, s); !errors.Is(err, ErrSettings) {
			t.Errorf("%+v: error %v", s, err)
		}
	}
	// A schedule giving a non-positive step size fails the chain.
	_, err := Run(context.Background(), noisy2, sgld, zeroInit, 2, Settings{Iterations: 10, Schedule: Cyclical{}})
	if !errors.Is(err, ErrStepSize) {
		t.Errorf("error %v, want ErrStepSize", err)
	}
}

// A panicking estimator stops its own chain with an error naming it; the
// other chains finish and the process survives.
func TestRunRecoversPanic(t *testing.T) {
	newEst := func(c int) Estimator {
		return EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
			if c == 1 {
				var m map[string]int
				m["boom"]++ // nil map write
			}
			for i := range grad {
				grad[i] = -u[i]
			}
			return 0, nil
		})
	}
	res, err := Run(context.Background(), newEst, func(int) Method { return &SGLD{} },
		func(int, []float64) error { return nil }, 2, Settings{Iterations: 50, Chains: 2, Schedule: Constant(0.1)})
	if !errors.Is(err, ErrPanic) || !strings.Contains(err.Error(), "chain 1") {
		t.Fatalf("error %v, want ErrPanic naming chain 1", err)
	}
	if res.Chains[0].Status != IterationLimit || res.Chains[0].Iterations != 50 || res.Chains[1].Status != Failure {
		t.Errorf("chain statuses %v (%d iterations), %v", res.Chains[0].Status, res.Chains[0].Iterations, res.Chains[1].Status)
	}
}
