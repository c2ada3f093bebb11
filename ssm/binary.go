package ssm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// The binary sequence format is the simplest one that can be memory-mapped:
// the T×Obs values, row-major, each an IEEE 754 float64 in little-endian
// byte order, and nothing else (no header). It is what NumPy writes with
// y.astype("<f8").tofile(path). The observation dimension is not stored, so
// the reader supplies it; the file size must be a positive multiple of
// 8·Obs bytes.

// ErrBigEndian is returned by OpenBinary on a big-endian host, where the
// little-endian file cannot be aliased as []float64 (use ReadBinary).
var ErrBigEndian = errors.New("ssm: OpenBinary needs a little-endian host; use ReadBinary")

// WriteBinary writes s to w in the binary sequence format (row-major
// little-endian float64, no header). NaN (missing) is written as is. It
// refuses an invalid sequence or one holding ±Inf before writing anything.
func WriteBinary(w io.Writer, s Sequence) error {
	if err := s.Validate(0); err != nil {
		return err
	}
	if err := s.CheckFinite(); err != nil {
		return err
	}
	var buf [8 * 1024]byte
	y := s.Y
	for len(y) > 0 {
		n := min(len(y), len(buf)/8)
		for i, v := range y[:n] {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
		}
		if _, err := w.Write(buf[:8*n]); err != nil {
			return err
		}
		y = y[n:]
	}
	return nil
}

// ReadBinary reads a whole binary sequence with obs components per step
// from r into memory. It works on any host. Values are not checked for
// ±Inf (see Sequence.CheckFinite). A total size that is zero or not a
// multiple of 8·obs, or obs <= 0, is an error wrapping ErrData.
func ReadBinary(r io.Reader, obs int) (Sequence, error) {
	return readBinary(r, obs, 0)
}

// readBinary is ReadBinary with a capacity hint in values.
func readBinary(r io.Reader, obs, hint int) (Sequence, error) {
	if obs <= 0 {
		return Sequence{}, fmt.Errorf("%w: observation dimension %d must be positive", ErrData, obs)
	}
	y := make([]float64, 0, hint)
	var buf [64 * 1024]byte
	var size int64
	for {
		// ReadFull fills buf unless the input ends, so a partial value can
		// only be at the end.
		n, err := io.ReadFull(r, buf[:])
		size += int64(n)
		for i := 0; i+8 <= n; i += 8 {
			y = append(y, math.Float64frombits(binary.LittleEndian.Uint64(buf[i:])))
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return Sequence{}, err
		}
	}
	if err := checkBinarySize(size, obs); err != nil {
		return Sequence{}, err
	}
	return Sequence{Obs: obs, Y: y}, nil
}

// MappedSequence is a binary sequence file mapped read-only into memory
// (see OpenBinary). The operating system pages the values in as they are
// read, so sequences far larger than memory can be used.
//
// The Sequence returned by Seq aliases the mapping: it must not be used
// after Close, and the file must not be truncated while it is mapped (an
// access beyond the new end faults). The mapping is not released by the
// garbage collector, because Seq's slice does not keep the MappedSequence
// reachable; call Close when done. Seq may be called concurrently; Close
// must not run concurrently with any use.
type MappedSequence struct {
	seq  Sequence
	data []byte // the mapping; nil when the values were read into memory
}

// Seq returns the sequence. After Close it is the zero Sequence.
func (m *MappedSequence) Seq() Sequence { return m.seq }

// Close releases the mapping. Closing twice is a no-op.
func (m *MappedSequence) Close() error {
	m.seq = Sequence{}
	if m.data == nil {
		return nil
	}
	data := m.data
	m.data = nil
	return unmap(data)
}

// OpenBinary maps the named binary sequence file read-only, with obs
// components per time step (the format is documented at WriteBinary:
// row-major little-endian float64, no header). On Unix systems the file is
// memory-mapped and nothing is read at open, so opening costs O(1)
// whatever the size; elsewhere it is read into memory. Values are
// therefore not validated: call Seq().CheckFinite() to scan them once.
//
// obs <= 0, an empty file, or a size that is not a multiple of 8·obs gives
// an error wrapping ErrData; a file that cannot be opened gives the
// *os.PathError. On a big-endian host it returns ErrBigEndian.
func OpenBinary(path string, obs int) (*MappedSequence, error) {
	if obs <= 0 {
		return nil, fmt.Errorf("%w: observation dimension %d must be positive", ErrData, obs)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, ErrBigEndian
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrData, path)
	}
	if err := checkBinarySize(fi.Size(), obs); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Size() > math.MaxInt {
		return nil, fmt.Errorf("ssm: %s: %d bytes do not fit in this platform's address space", path, fi.Size())
	}
	return mapFile(f, path, int(fi.Size()), obs)
}

func checkBinarySize(size int64, obs int) error {
	if size == 0 {
		return fmt.Errorf("%w: empty binary sequence (length 0)", ErrData)
	}
	if size%(8*int64(obs)) != 0 {
		return sizeError(size, obs)
	}
	return nil
}

func sizeError(size int64, obs int) error {
	return fmt.Errorf("%w: binary sequence of %d bytes is not a whole number of rows of %d float64 (%d bytes)", ErrData, size, obs, 8*obs)
}
