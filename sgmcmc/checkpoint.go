package sgmcmc

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

const checkpointFormat = "pbsgmcmc/sgmcmc checkpoint v2"

// checksumPrefix starts the last line of a checkpoint file: the SHA-256 of
// everything before it, so a damaged or edited file is refused.
const checksumPrefix = "sha256 "

// checkpointData is the JSON content of a checkpoint file. Floating-point
// state is stored as little-endian bytes (base64 in JSON) so it is bit-exact.
type checkpointData struct {
	Format       string
	Dim, Chains  int
	Seed         uint64
	BurnIn, Thin int
	Fingerprint  string `json:",omitempty"`
	State        []chainState
	Recorder     []byte `json:",omitempty"`
}

type chainState struct {
	Iter           int
	Elapsed        time.Duration
	Status         Status
	Kept, Skipped  int
	U              []byte
	RNG            []byte
	Method         []byte          `json:",omitempty"`
	Estimator      []byte          `json:",omitempty"`
	NonFiniteError *NonFiniteError `json:",omitempty"`
	Err            string          `json:",omitempty"`
}

func (d *checkpointData) matches(dim int, s *Settings) error {
	if d.Fingerprint != s.Fingerprint {
		return fmt.Errorf("%w: written by a run with other settings or data (fingerprint %q, this run %q)",
			ErrCheckpoint, d.Fingerprint, s.Fingerprint)
	}
	for c, st := range d.State {
		if st.Iter < 0 || st.Kept < 0 || st.Skipped < 0 || st.Elapsed < 0 {
			return fmt.Errorf("%w: chain %d has iteration %d, %d kept, %d skipped, elapsed %v", ErrCheckpoint, c, st.Iter, st.Kept, st.Skipped, st.Elapsed)
		}
	}
	if d.Dim != dim || d.Chains != s.Chains || d.Seed != s.Seed || d.BurnIn != s.BurnIn || d.Thin != s.Thin || len(d.State) != d.Chains {
		return fmt.Errorf("%w: written by a run with dim %d, %d chains, seed %d, burn-in %d, thin %d; "+
			"this run has dim %d, %d chains, seed %d, burn-in %d, thin %d",
			ErrCheckpoint, d.Dim, d.Chains, d.Seed, d.BurnIn, d.Thin, dim, s.Chains, s.Seed, s.BurnIn, s.Thin)
	}
	return nil
}

func (ch *chain) state() (chainState, error) {
	s := ch.s
	st := chainState{Iter: s.k, Elapsed: ch.res.Elapsed, Status: ch.res.Status,
		Kept: ch.res.Kept, Skipped: ch.res.Skipped, U: fmath.AppendFloats(nil, s.u...)}
	var err error
	if st.RNG, err = ch.pcg.MarshalBinary(); err != nil {
		return st, err
	}
	mm, ok := s.m.(encoding.BinaryMarshaler)
	if !ok {
		return st, fmt.Errorf("%w: the method of chain %d (%T) does not implement encoding.BinaryMarshaler", ErrCheckpoint, s.chain, s.m)
	}
	if st.Method, err = mm.MarshalBinary(); err != nil {
		return st, err
	}
	if em, ok := s.est.(encoding.BinaryMarshaler); ok {
		if st.Estimator, err = em.MarshalBinary(); err != nil {
			return st, err
		}
	}
	if ch.res.Err != nil {
		var nf *NonFiniteError
		if errors.As(ch.res.Err, &nf) {
			st.NonFiniteError = nf
		} else {
			st.Err = ch.res.Err.Error()
		}
	}
	return st, nil
}

func (ch *chain) restore(st *chainState) error {
	s := ch.s
	if len(st.U) != 8*len(s.u) {
		return errors.New("parameter has the wrong length")
	}
	fmath.ReadFloats(s.u, st.U)
	if i := fmath.FirstNonFinite(s.u); i >= 0 {
		return fmt.Errorf("checkpointed u[%d] = %v", i, s.u[i])
	}
	if err := ch.pcg.UnmarshalBinary(st.RNG); err != nil {
		return err
	}
	mu, ok := s.m.(encoding.BinaryUnmarshaler)
	if !ok {
		return fmt.Errorf("the method (%T) does not implement encoding.BinaryUnmarshaler", s.m)
	}
	if err := mu.UnmarshalBinary(st.Method); err != nil {
		return err
	}
	if st.Estimator != nil {
		eu, ok := s.est.(encoding.BinaryUnmarshaler)
		if !ok {
			return fmt.Errorf("the checkpoint has estimator state but the estimator (%T) does not implement encoding.BinaryUnmarshaler", s.est)
		}
		if err := eu.UnmarshalBinary(st.Estimator); err != nil {
			return err
		}
	}
	s.k = st.Iter
	ch.res = ChainResult{Elapsed: st.Elapsed, Kept: st.Kept, Skipped: st.Skipped}
	if st.Status.terminal() {
		ch.res.Status = st.Status
		switch {
		case st.NonFiniteError != nil:
			ch.res.Err = st.NonFiniteError
		case st.Err != "":
			ch.res.Err = errors.New(st.Err)
		}
	}
	return nil
}

// writeCheckpoint atomically replaces path with the state of all chains, which
// must not be running.
func writeCheckpoint(path string, dim int, s *Settings, chains []*chain, rec *lockedRecorder) error {
	d := checkpointData{Format: checkpointFormat, Dim: dim, Chains: len(chains), Seed: s.Seed,
		BurnIn: s.BurnIn, Thin: s.Thin, Fingerprint: s.Fingerprint, State: make([]chainState, len(chains))}
	for c, ch := range chains {
		var err error
		if d.State[c], err = ch.state(); err != nil {
			return err
		}
	}
	if rs, ok := rec.r.(Resumer); ok {
		rec.mu.Lock()
		b, err := rs.Snapshot()
		rec.mu.Unlock()
		if err != nil {
			return fmt.Errorf("%w: recorder snapshot: %w", ErrCheckpoint, err)
		}
		d.Recorder = b
	}
	b, err := json.Marshal(&d)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	if err := atomicWrite(path, seal(b)); err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}

// atomicWrite writes b to a temporary file in the directory of path, syncs it,
// renames it over path and syncs the directory, so that path always holds
// either the old or the new content, even after a crash.
func atomicWrite(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, fs.ErrInvalid) {
		// Some platforms cannot sync directories; the rename is still atomic.
		return err
	}
	return nil
}

// readCheckpoint returns nil, nil when path does not exist.
func readCheckpoint(path string) (*checkpointData, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	body, why := unseal(b)
	if why != "" {
		return nil, damaged(path, path, why)
	}
	var d checkpointData
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, damaged(path, path, err.Error())
	}
	if d.Format != checkpointFormat {
		return nil, fmt.Errorf("%w: %s is not a checkpoint (format %q): %s", ErrCheckpoint, path, d.Format, cure(path, path))
	}
	return &d, nil
}

// removeStaleTemps deletes the temporary files a crash in atomicWrite can
// leave next to path (only one run may use a checkpoint path at a time).
func removeStaleTemps(path string) {
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), globEscape(filepath.Base(path))+".tmp*"))
	for _, m := range matches {
		os.Remove(m)
	}
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
