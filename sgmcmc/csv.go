package sgmcmc

import (
	"bufio"
	"encoding/binary"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// CSVRecorder streams kept draws to a CSV file with header
//
//	chain,iter,time,<names...>
//
// one row per draw: the chain index, the iteration k, the chain's elapsed
// time in seconds and the parameters, formatted with the shortest decimal
// representation that parses back to the same float64 (readable as-is by R's
// read.csv and pandas.read_csv). Its memory does not grow with the run.
// Rows of different chains interleave in the order the chains produced them.
//
// It is a Resumer: for crash-safe runs, give it an *os.File opened with
// os.O_RDWR|os.O_CREATE (not O_APPEND and, when resuming, not O_TRUNC); on
// resume it truncates the file to the checkpointed offset, so rows written
// after the last checkpoint are neither lost nor duplicated.
type CSVRecorder struct {
	// Transform, when set, writes natural parameters instead of u: it maps u
	// to len(names) values, dst first.
	Transform func(dst, u []float64)

	w     io.Writer
	cw    countingWriter
	bw    *bufio.Writer
	names []string
	base  int64 // file offset of the first byte this recorder wrote
	buf   []float64
	line  []byte
}

// NewCSVRecorder returns a CSVRecorder writing to w. names label the columns
// after chain, iter and time: one per component of u (or of the Transform
// output); nil means u0, u1, ...
func NewCSVRecorder(w io.Writer, names []string) *CSVRecorder {
	r := &CSVRecorder{w: w, names: names}
	r.cw.w = w
	r.bw = bufio.NewWriterSize(&r.cw, 64<<10)
	return r
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (r *CSVRecorder) setup(info Info) error {
	switch {
	case r.Transform != nil && len(r.names) == 0:
		return fmt.Errorf("%w: CSVRecorder with a Transform needs names", ErrSettings)
	case r.Transform == nil && r.names != nil && len(r.names) != info.Dim:
		return fmt.Errorf("%w: CSVRecorder has %d names for %d parameters", ErrSettings, len(r.names), info.Dim)
	case r.names == nil:
		r.names = make([]string, info.Dim)
		for i := range r.names {
			r.names[i] = "u" + strconv.Itoa(i)
		}
	}
	r.buf = make([]float64, len(r.names))
	return nil
}

// Init writes the header at the writer's current position. When the writer is
// a seekable file with a Truncate method (an *os.File), it first truncates
// the file there, so that a reused file holds only this run.
func (r *CSVRecorder) Init(info Info) error {
	if err := r.setup(info); err != nil {
		return err
	}
	r.base = 0
	if s, ok := r.w.(io.Seeker); ok {
		if off, err := s.Seek(0, io.SeekCurrent); err == nil {
			r.base = off
			if tr, ok := r.w.(interface{ Truncate(int64) error }); ok {
				if err := tr.Truncate(off); err != nil {
					return err
				}
			}
		}
	}
	r.cw.n = 0
	r.bw.Reset(&r.cw)
	cw := csv.NewWriter(r.bw)
	if err := cw.Write(append([]string{"chain", "iter", "time"}, r.names...)); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// Record writes one row (none for a discarded draw).
func (r *CSVRecorder) Record(d *Draw) error {
	if d.Discarded {
		return nil
	}
	x := d.U
	if r.Transform != nil {
		r.Transform(r.buf, d.U)
		x = r.buf
	}
	b := strconv.AppendInt(r.line[:0], int64(d.Chain), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(d.Iter), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, d.Elapsed.Seconds(), 'g', -1, 64)
	for _, v := range x {
		b = append(b, ',')
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	b = append(b, '\n')
	r.line = b
	_, err := r.bw.Write(b)
	return err
}

// Done flushes buffered rows.
func (r *CSVRecorder) Done(*Result) error { return r.bw.Flush() }

// Offset returns the file offset just past the last row written.
func (r *CSVRecorder) Offset() int64 { return r.base + r.cw.n + int64(r.bw.Buffered()) }

// Snapshot flushes buffered rows, syncs the file when the writer has a Sync
// method (as *os.File does), and returns the offset.
func (r *CSVRecorder) Snapshot() ([]byte, error) {
	if err := r.bw.Flush(); err != nil {
		return nil, err
	}
	if s, ok := r.w.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return nil, err
		}
	}
	return binary.LittleEndian.AppendUint64(nil, uint64(r.Offset())), nil
}

// Resume truncates the file to the offset of state and continues after it
// without writing a header. The writer must implement io.Seeker and
// Truncate(int64) error, as *os.File does.
func (r *CSVRecorder) Resume(info Info, state []byte) error {
	if err := r.setup(info); err != nil {
		return err
	}
	if len(state) != 8 {
		return fmt.Errorf("%w: corrupt CSVRecorder state", ErrCheckpoint)
	}
	off := int64(binary.LittleEndian.Uint64(state))
	f, ok := r.w.(interface {
		io.Seeker
		Truncate(int64) error
	})
	if !ok {
		return fmt.Errorf("%w: CSVRecorder can resume only on a writer with Seek and Truncate, such as *os.File", ErrCheckpoint)
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if size < off {
		return fmt.Errorf("%w: CSV file has %d bytes, fewer than the %d checkpointed", ErrCheckpoint, size, off)
	}
	if err := f.Truncate(off); err != nil {
		return err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	r.base, r.cw.n = off, 0
	r.bw.Reset(&r.cw)
	return nil
}
