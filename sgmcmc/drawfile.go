package sgmcmc

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"strings"
	"time"
)

// drawFile makes Fit's in-memory Trace survive a checkpointed run's
// interruption. Every kept draw goes to the Trace and is appended to a
// file next to the checkpoint (Checkpoint+".draws"); Snapshot syncs the
// file and records its length in the checkpoint, and Resume truncates the
// file to that length and replays its draws into the Trace. A resumed
// Fit therefore summarises every draw of the run, not only those made
// after the last checkpoint (before, a run interrupted at iteration 1500
// of 2500 and resumed reported 1000 draws per chain), and a Fit resuming
// a finished run returns its Posterior again instead of nothing.
//
// The file starts with a header line (drawsHeader): the SHA-256 of the
// fit's fingerprint and the CRC-32C of the line before it. A record is
// chain, iteration and elapsed nanoseconds (as float64), the log
// posterior and u: 4 + dim little-endian float64s, then the CRC-32C of
// those bytes as a little-endian uint64. Resume refuses a file whose
// header or any record up to the checkpointed length fails its check,
// by name (a damaged file used to be replayed into the Trace as draws).
type drawFile struct {
	t    *Trace
	path string
	dim  int
	fp   string // the fit's fingerprint

	f   *os.File
	w   *bufio.Writer
	n   int64 // bytes written (and durable after Snapshot up to it)
	row []byte
}

// drawsMagic starts the header line of a draw file.
const drawsMagic = "pbsgmcmc/sgmcmc draws v2 "

// drawsHeader returns the header line of the draw file of a fit with
// fingerprint fp: drawsMagic, the hex SHA-256 of fp, a space, the hex
// CRC-32C of what precedes it, and a newline (99 bytes).
func drawsHeader(fp string) []byte {
	sum := sha256.Sum256([]byte(fp))
	b := append([]byte(drawsMagic), hex.EncodeToString(sum[:])...)
	return append(b, fmt.Sprintf(" %08x\n", crc32.Checksum(b, crcTable))...)
}

// newDrawFile returns the recorder of t's draws in path for dim
// parameters of the fit with fingerprint fp; the checkpoint's path is
// path without ".draws".
func newDrawFile(t *Trace, path string, dim int, fp string) *drawFile {
	return &drawFile{t: t, path: path, dim: dim, fp: fp, row: make([]byte, 8*(5+dim))}
}

// damaged is the error of a draw file that fails its checks.
func (d *drawFile) damaged(why string) error {
	return damaged(d.path, strings.TrimSuffix(d.path, ".draws"), why)
}

// Init implements Recorder: a fresh file and Trace.
func (d *drawFile) Init(info Info) error {
	if err := d.check(info); err != nil {
		return err
	}
	f, err := os.Create(d.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	d.open(f, 0)
	h := drawsHeader(d.fp)
	if _, err := d.w.Write(h); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	d.n = int64(len(h))
	return d.t.Init(info)
}

func (d *drawFile) check(info Info) error {
	if info.Dim != d.dim {
		return fmt.Errorf("%w: draws file for %d parameters, run has %d", ErrSettings, d.dim, info.Dim)
	}
	return nil
}

func (d *drawFile) open(f *os.File, n int64) {
	d.close()
	d.f, d.n = f, n
	d.w = bufio.NewWriterSize(f, 64<<10)
}

// Record implements Recorder.
func (d *drawFile) Record(dr *Draw) error {
	if err := d.t.Record(dr); err != nil || dr.Discarded {
		return err
	}
	b := d.row
	put := func(i int, v float64) { binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v)) }
	put(0, float64(dr.Chain))
	put(1, float64(dr.Iter))
	put(2, float64(dr.Elapsed))
	put(3, dr.LogPost)
	for i, v := range dr.U {
		put(4+i, v)
	}
	k := len(b) - 8
	binary.LittleEndian.PutUint64(b[k:], uint64(crc32.Checksum(b[:k], crcTable)))
	if _, err := d.w.Write(b); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	d.n += int64(len(b))
	return nil
}

// Snapshot implements Resumer: the file's length, once it is on disk.
func (d *drawFile) Snapshot() ([]byte, error) {
	if d.w == nil {
		return nil, fmt.Errorf("%w: draws file %s is not open", ErrCheckpoint, d.path)
	}
	if err := d.w.Flush(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	if err := d.f.Sync(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	return binary.LittleEndian.AppendUint64(nil, uint64(d.n)), nil
}

// Resume implements Resumer: the Trace gets the draws up to the
// checkpointed length, and later ones are cut from the file.
func (d *drawFile) Resume(info Info, state []byte) (err error) {
	if err := d.check(info); err != nil {
		return err
	}
	if len(state) != 8 {
		return fmt.Errorf("%w: the checkpoint holds no length of %s (written by an older version? remove the checkpoint files to fit again)", ErrCheckpoint, d.path)
	}
	n := int64(binary.LittleEndian.Uint64(state))
	rec := int64(len(d.row))
	h := drawsHeader(d.fp)
	hn := int64(len(h))
	f, err := os.OpenFile(d.path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	defer func() {
		if err != nil { // else d owns f
			f.Close()
		}
	}()
	st, err := f.Stat()
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	case n < hn || (n-hn)%rec != 0 || st.Size() < n:
		return d.damaged(fmt.Sprintf("%s has %d bytes, the checkpoint expects %d: a header of %d and records of %d", d.path, st.Size(), n, hn, rec))
	}
	if err := d.t.Init(info); err != nil {
		return err
	}
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, n), 64<<10)
	got := make([]byte, hn)
	if _, err := io.ReadFull(r, got); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	if !bytes.Equal(got, h) {
		line := got[:hn-10]
		if bytes.HasPrefix(got, []byte(drawsMagic)) && fmt.Sprintf(" %08x\n", crc32.Checksum(line, crcTable)) == string(got[hn-10:]) {
			return fmt.Errorf("%w: %s was written by a fit with other data or settings: %s", ErrCheckpoint, d.path, cure(d.path, strings.TrimSuffix(d.path, ".draws")))
		}
		return d.damaged("its header line does not match its checksum or this version's format")
	}
	u := make([]float64, d.dim)
	dr := Draw{U: u}
	k := len(d.row) - 8
	for i := range (n - hn) / rec {
		if _, err := io.ReadFull(r, d.row); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
		}
		if binary.LittleEndian.Uint64(d.row[k:]) != uint64(crc32.Checksum(d.row[:k], crcTable)) {
			return d.damaged(fmt.Sprintf("the checksum of draw record %d, at byte %d, does not match its content", i, hn+i*rec))
		}
		get := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(d.row[8*i:])) }
		c := get(0)
		if !(c >= 0 && c < float64(info.Chains) && c == math.Trunc(c)) {
			return d.damaged(fmt.Sprintf("a draw of chain %v in a run of %d chains", c, info.Chains))
		}
		dr.Chain, dr.Iter, dr.Elapsed, dr.LogPost = int(c), int(get(1)), time.Duration(get(2)), get(3)
		for i := range u {
			u[i] = get(4 + i)
		}
		if err := d.t.Record(&dr); err != nil {
			return err
		}
	}
	if err := f.Truncate(n); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	if _, err := f.Seek(n, io.SeekStart); err != nil {
		return fmt.Errorf("%w: %v", ErrCheckpoint, err)
	}
	d.open(f, n)
	return nil
}

// Done implements Recorder: the file is flushed and closed.
func (d *drawFile) Done(*Result) error { return d.close() }

// close flushes and closes the file (nothing when it is closed).
func (d *drawFile) close() error {
	if d.f == nil {
		return nil
	}
	err := d.w.Flush()
	err = errors.Join(err, d.f.Close())
	d.f, d.w = nil, nil
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCheckpoint, d.path, err)
	}
	return nil
}
