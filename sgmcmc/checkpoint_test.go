package sgmcmc

import (
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// counting is a stateful estimator: its gradient depends on how many calls it
// has served, so a resume is exact only if its state is checkpointed.
type counting struct {
	gauss
	n    uint64
	slow time.Duration
}

func (e *counting) Grad(ctx context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
	if e.slow > 0 {
		time.Sleep(e.slow)
	}
	lp, err := e.gauss.Grad(ctx, grad, u, rng)
	grad[0] += 1e-3 * float64(e.n%7)
	e.n++
	return lp, err
}

func (e *counting) MarshalBinary() ([]byte, error) {
	return binary.LittleEndian.AppendUint64(nil, e.n), nil
}

func (e *counting) UnmarshalBinary(b []byte) error {
	if len(b) != 8 {
		return errors.New("bad counting state")
	}
	e.n = binary.LittleEndian.Uint64(b)
	return nil
}

const (
	ckIters = 4000
	ckEvery = 200
)

// ckRun runs the checkpointed test configuration in dir: two chains (SGHMC
// and PSGLD, both with state), a stateful noisy estimator and a CSV file
// recorded through Multi beside a Trace (which is not a Resumer).
func ckRun(dir string, iters int, resume bool, slow time.Duration) (*Result, error) {
	f, err := os.OpenFile(filepath.Join(dir, "trace.csv"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Run(context.Background(),
		func(int) Estimator {
			return &counting{gauss: gauss{Mu: []float64{1, -1}, P: []float64{2, 0.5, 0.5, 1}, Noise: 0.3}, slow: slow}
		},
		func(c int) Method {
			if c == 0 {
				return &SGHMC{Friction: 2}
			}
			return &PSGLD{}
		},
		func(c int, u []float64) error { u[0], u[1] = float64(c), -float64(c); return nil },
		2, Settings{Iterations: iters, BurnIn: 100, Thin: 1, Schedule: Polynomial{A: 0.05, B: 10, C: 0.3}, Chains: 2, Seed: 11,
			Recorder: Multi(NewCSVRecorder(f, []string{"a", "b"}), &Trace{}), Checkpoint: filepath.Join(dir, "ck.json"), CheckpointEvery: ckEvery, Resume: resume})
}

// TestHelperProcess is the subprocess of TestKillResume; it does nothing in a
// normal test run.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("SGMCMC_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	if _, err := ckRun(dir, ckIters, false, 100*time.Microsecond); err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

// csvByChain reads a CSV trace and returns its header and, per chain, the rows
// without the time column (the only column that depends on the clock).
func csvByChain(t *testing.T, path string) ([]string, map[string][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, r := range recs[1:] {
		out[r[0]] = append(out[r[0]], strings.Join(append([]string{r[0], r[1]}, r[3:]...), ","))
	}
	return recs[0], out
}

// csvOffset decodes the CSV offset from the Multi recorder state of ck: a
// uvarint length, then the CSVRecorder's 8-byte offset.
func csvOffset(t *testing.T, ck *checkpointData) int64 {
	n, w := binary.Uvarint(ck.Recorder)
	if n != 8 || w != 1 {
		t.Fatalf("unexpected recorder state %x", ck.Recorder)
	}
	return int64(binary.LittleEndian.Uint64(ck.Recorder[1:]))
}

// TestKillResume runs the checkpointed configuration in a subprocess, kills it
// with SIGKILL between checkpoints once a few exist and rows beyond the last
// checkpoint are on disk, resumes it in this process, and compares the final
// state and the CSV with an uninterrupted run: final u bit-identical, every
// row identical except the time column, no row lost or duplicated.
func TestKillResume(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	refDir, dir := t.TempDir(), t.TempDir()
	ref, err := ckRun(refDir, ckIters, false, 0)
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SGMCMC_HELPER_DIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ckPath, csvPath := filepath.Join(dir, "ck.json"), filepath.Join(dir, "trace.csv")
	deadline := time.Now().Add(60 * time.Second)
	var killedAt int
	var offset, size int64
	for {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("helper made no progress")
		}
		select {
		case err := <-exited:
			t.Fatalf("helper exited (%v) before it was killed", err)
		default:
		}
		time.Sleep(time.Millisecond)
		ck, err := readCheckpoint(ckPath)
		if err != nil || ck == nil || ck.State[0].Iter < 5*ckEvery {
			continue
		}
		fi, err := os.Stat(csvPath)
		offset = csvOffset(t, ck)
		if err != nil || fi.Size() < offset+200 {
			continue
		}
		if err := cmd.Process.Kill(); err != nil { // SIGKILL
			t.Fatal(err)
		}
		killedAt, size = ck.State[0].Iter, fi.Size()
		break
	}
	if err := <-exited; err == nil {
		t.Fatal("helper finished normally; the kill came too late")
	}
	ck, err := readCheckpoint(ckPath)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(csvPath)
	t.Logf("killed after checkpoint at iteration %d (last checkpoint: %d); CSV had %d bytes at the kill check, %d now, checkpoint offset %d",
		killedAt, ck.State[0].Iter, size, fi.Size(), csvOffset(t, ck))
	if ck.State[0].Iter >= ckIters {
		t.Fatal("the helper had finished")
	}

	res, err := ckRun(dir, ckIters, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("run did not resume")
	}
	for c := range ref.Chains {
		a, b := ref.Chains[c], res.Chains[c]
		if !equalBits(a.U, b.U) || a.Iterations != b.Iterations || a.Kept != b.Kept || b.Status != IterationLimit {
			t.Errorf("chain %d: resumed %+v, uninterrupted %+v", c, b, a)
		}
	}
	h1, rows1 := csvByChain(t, filepath.Join(refDir, "trace.csv"))
	h2, rows2 := csvByChain(t, csvPath)
	if !slices.Equal(h1, h2) {
		t.Fatalf("headers %q and %q", h1, h2)
	}
	for c, r1 := range rows1 {
		r2 := rows2[c]
		if len(r1) != ckIters-100 || len(r2) != len(r1) {
			t.Fatalf("chain %s: %d rows resumed, %d uninterrupted, want %d", c, len(r2), len(r1), ckIters-100)
		}
		for i := range r1 {
			if r1[i] != r2[i] {
				t.Fatalf("chain %s row %d: resumed %q, uninterrupted %q", c, i, r2[i], r1[i])
			}
		}
	}
	if len(rows2) != 2 {
		t.Fatalf("%d chains in the resumed CSV", len(rows2))
	}
}

// TestResumeExtend stops a run at 600 iterations, resumes it with Iterations
// raised to 1400, and compares with a run of 1400 iterations. It also checks
// that resuming a finished run does nothing and that a mismatched resume fails.
func TestResumeExtend(t *testing.T) {
	refDir, dir := t.TempDir(), t.TempDir()
	ref, err := ckRun(refDir, 1400, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ckRun(dir, 600, false, 0); err != nil {
		t.Fatal(err)
	}
	again, err := ckRun(dir, 600, true, 0)
	if err != nil || !again.Resumed || again.Chains[0].Iterations != 600 || again.Chains[0].Status != IterationLimit {
		t.Fatalf("resuming a finished run: %v, %+v", err, again)
	}
	res, err := ckRun(dir, 1400, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	for c := range ref.Chains {
		if !equalBits(ref.Chains[c].U, res.Chains[c].U) || res.Chains[c].Kept != ref.Chains[c].Kept {
			t.Errorf("chain %d: extended run differs", c)
		}
	}
	_, rows1 := csvByChain(t, filepath.Join(refDir, "trace.csv"))
	_, rows2 := csvByChain(t, filepath.Join(dir, "trace.csv"))
	for c := range rows1 {
		if !slices.Equal(rows1[c], rows2[c]) {
			t.Errorf("chain %s: CSV rows differ", c)
		}
	}

	// A different seed must not resume this checkpoint.
	f, _ := os.OpenFile(filepath.Join(dir, "trace.csv"), os.O_RDWR, 0)
	defer f.Close()
	_, err = Run(context.Background(), noisy2, sgld, zeroInit, 2, Settings{Iterations: 10, Schedule: Constant(0.1), Chains: 2, Seed: 12,
		BurnIn: 100, Checkpoint: filepath.Join(dir, "ck.json"), Resume: true, Recorder: NewCSVRecorder(f, nil)})
	if !errors.Is(err, ErrCheckpoint) {
		t.Errorf("mismatched resume: %v", err)
	}
}

// Damaged or edited checkpoints are refused with an error naming the cause,
// and so is a checkpoint of a run with another fingerprint; stale temporary
// files of a crashed write are removed.
func TestCheckpointDamage(t *testing.T) {
	dir := t.TempDir()
	if _, err := ckRun(dir, 400, false, 0); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ck.json")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stale := path + ".tmp123"
	os.WriteFile(stale, []byte("torn"), 0o644)
	flip := slices.Clone(orig)
	flip[len(flip)/3] ^= 0x04
	edit := func(old, new string) []byte {
		s := strings.Replace(string(orig), old, new, 1)
		if s == string(orig) {
			t.Fatalf("%q not in the checkpoint", old)
		}
		return []byte(s)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"bit flip", flip, "checksum"},
		{"iteration -5", edit(`"Iter":400`, `"Iter":-5`), "checksum"},
		{"iteration 99999", edit(`"Iter":400`, `"Iter":99999`), "checksum"},
		{"truncated", orig[:len(orig)/2], "damaged"},
	} {
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ckRun(dir, 800, true, 0)
		if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrCheckpoint mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file %s was not removed", stale)
	}
	// A valid checkpoint from a run with another fingerprint.
	os.WriteFile(path, orig, 0o644)
	_, err = Run(context.Background(), func(int) Estimator {
		return &counting{gauss: gauss{Mu: []float64{1, -1}, P: []float64{2, 0.5, 0.5, 1}}}
	},
		func(int) Method { return &SGLD{} }, func(int, []float64) error { return nil }, 2,
		Settings{Iterations: 800, BurnIn: 100, Thin: 1, Schedule: Constant(0.01), Chains: 2, Seed: 11,
			Checkpoint: path, Resume: true, Fingerprint: "N=500"})
	if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "fingerprint") {
		t.Errorf("other fingerprint: error %v, want ErrCheckpoint naming the fingerprint", err)
	}
}
