package sgmcmc

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Info describes a run to its Recorder.
type Info struct {
	Chains, Dim  int
	Iterations   int           // per chain; 0 when only Runtime limits the run
	Runtime      time.Duration // per chain; 0 when unlimited
	BurnIn, Thin int           // Thin ≥ 1
	// Start holds the iteration each chain starts from: 0, or the
	// checkpointed iteration when the run resumes.
	Start []int
}

// Draw is one kept state of a chain. Its slices are views valid only during
// Recorder.Record: copy anything you keep.
type Draw struct {
	Chain int
	Iter  int       // k: U is u_k
	U     []float64 // unconstrained parameter u_k
	Grad  []float64 // gradient estimate ĝ(u_k) used for the step from u_k; nil when the step used none (FullGradient's independence proposals)
	// LogPost is the estimator's log-posterior estimate at u_k (NaN if
	// unknown).
	LogPost  float64
	StepSize float64       // h_k
	Elapsed  time.Duration // time the chain has run so far (excluding waits and time before a resume)
	// Discarded marks an iteration that is not a kept draw (burn-in or
	// thinned out); only Settings.RecordAll passes such draws, so
	// recorders that predate it see kept draws only.
	Discarded bool
}

// Recorder observes a run in the manner of gonum's optimize.Recorder.
//
// Run calls Init once, Record for every kept draw and Done once at the end
// (also after an error, when Init succeeded). Calls are serialised: never two at
// a time. Draws of one chain arrive in iteration order; draws of different
// chains interleave in an unspecified order. An error from any call aborts the
// run.
type Recorder interface {
	Init(info Info) error
	Record(d *Draw) error
	Done(r *Result) error
}

// Resumer is a Recorder whose output survives a crash, such as CSVRecorder.
//
// At each checkpoint, after every draw up to it has been recorded, Run calls
// Snapshot, which must make the output so far durable and return what Resume
// needs to continue it. When a run resumes, Run calls Resume instead of Init
// with the bytes of the last checkpoint; the Resumer discards whatever it
// wrote after that checkpoint. Recorders that are not Resumers get Init on
// resume and see only the draws made after the checkpoint.
type Resumer interface {
	Recorder
	Snapshot() ([]byte, error)
	Resume(info Info, state []byte) error
}

// Multi returns a Recorder calling each of rs in order. It is a Resumer,
// resuming the members that are Resumers and calling Init on the others.
func Multi(rs ...Recorder) Recorder { return multi(rs) }

type multi []Recorder

func (m multi) Init(info Info) error {
	for _, r := range m {
		if err := r.Init(info); err != nil {
			return err
		}
	}
	return nil
}

func (m multi) Record(d *Draw) error {
	for _, r := range m {
		if err := r.Record(d); err != nil {
			return err
		}
	}
	return nil
}

func (m multi) Done(res *Result) error {
	var first error
	for _, r := range m {
		if err := r.Done(res); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Snapshot concatenates the members' snapshots, each prefixed with its length.
func (m multi) Snapshot() ([]byte, error) {
	var b []byte
	for _, r := range m {
		var s []byte
		if rs, ok := r.(Resumer); ok {
			var err error
			if s, err = rs.Snapshot(); err != nil {
				return nil, err
			}
		}
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// Resume resumes the members from their snapshots, in order. Trailing
// members without state (not Resumers, e.g. a progress Printer) may be
// added or dropped between the runs: a member past the snapshot's entries
// is initialised when it is not a Resumer, and entries past the members
// must be empty (sgmcmc.Fit's progress lines come last, and a resumed fit
// may print them or not).
func (m multi) Resume(info Info, state []byte) error {
	next := func() ([]byte, error) {
		n, w := binary.Uvarint(state)
		if w <= 0 || uint64(len(state)-w) < n {
			return nil, fmt.Errorf("%w: corrupt Multi recorder state", ErrCheckpoint)
		}
		s := state[w : w+int(n)]
		state = state[w+int(n):]
		return s, nil
	}
	for i, r := range m {
		rs, ok := r.(Resumer)
		if len(state) == 0 {
			if ok {
				return fmt.Errorf("%w: the Multi recorder state has no entry for member %d (%T): the checkpoint was written with other recorders", ErrCheckpoint, i, r)
			}
			if err := r.Init(info); err != nil {
				return err
			}
			continue
		}
		s, err := next()
		if err != nil {
			return err
		}
		if ok {
			if err := rs.Resume(info, s); err != nil {
				return err
			}
		} else if err := r.Init(info); err != nil {
			return err
		}
	}
	for len(state) > 0 {
		s, err := next()
		if err != nil {
			return err
		}
		if len(s) > 0 {
			return fmt.Errorf("%w: the Multi recorder state has an entry for a member this run does not have: the checkpoint was written with other recorders", ErrCheckpoint)
		}
	}
	return nil
}

// Printer is a Recorder writing progress lines to W: the iteration of the
// chain that reported, the overall rate in iterations per second, an estimated
// time to completion and the current parameters. It is silent when W is nil.
// It reports at kept draws, so a long burn-in or a large Thin make it sparse.
type Printer struct {
	W        io.Writer
	Interval time.Duration // minimum time between lines; 0 means 1 s
	// Names label the printed parameters: the natural ones when Transform
	// is set (len(Names) is then its output length), u otherwise. Nil means
	// u0, u1, ...
	Names []string
	// Transform maps u to natural parameters, dst first; nil prints u.
	Transform func(dst, u []float64)
	// Label, when set, makes the lines plain: "fit: Label: 45% · ETA 6s",
	// without parameters, and no summary lines at the end.
	Label string

	info  Info
	start time.Time
	last  time.Time
	iters []int // latest iteration seen per chain
	buf   []float64
	line  []byte
}

// Init starts the clock.
func (p *Printer) Init(info Info) error {
	p.info = info
	p.start = time.Now()
	p.last = p.start
	p.iters = make([]int, info.Chains)
	for c := range p.iters {
		p.iters[c] = -1
		if c < len(info.Start) {
			p.iters[c] = info.Start[c] - 1
		}
	}
	n := info.Dim
	if p.Transform != nil {
		if len(p.Names) == 0 {
			return fmt.Errorf("%w: Printer with a Transform needs Names", ErrSettings)
		}
		n = len(p.Names)
	} else if p.Names != nil && len(p.Names) != info.Dim {
		return fmt.Errorf("%w: Printer has %d names for %d parameters", ErrSettings, len(p.Names), info.Dim)
	}
	p.buf = make([]float64, n)
	return nil
}

// Record prints a line when Interval has passed since the last one.
func (p *Printer) Record(d *Draw) error {
	p.iters[d.Chain] = d.Iter
	if p.W == nil {
		return nil
	}
	interval := p.Interval
	if interval == 0 {
		interval = time.Second
	}
	now := time.Now()
	if now.Sub(p.last) < interval {
		return nil
	}
	p.last = now
	done, left := 0, 0
	for c, k := range p.iters {
		start := 0
		if c < len(p.info.Start) {
			start = p.info.Start[c]
		}
		done += k + 1 - start
		if p.info.Iterations > 0 {
			left += max(p.info.Iterations-k-1, 0)
		}
	}
	rate := float64(done) / now.Sub(p.start).Seconds()
	if p.Label != "" {
		return p.plain(done, left, rate, d)
	}
	p.line = fmt.Appendf(p.line[:0], "sgmcmc: chain %d iter %d", d.Chain, d.Iter)
	if p.info.Iterations > 0 {
		p.line = fmt.Appendf(p.line, "/%d", p.info.Iterations)
	}
	p.line = fmt.Appendf(p.line, "  %.4g it/s", rate)
	eta := time.Duration(-1)
	if p.info.Iterations > 0 && rate > 0 {
		eta = time.Duration(float64(left) / rate * float64(time.Second))
	}
	if p.info.Runtime > 0 {
		if r := p.info.Runtime - d.Elapsed; eta < 0 || r < eta {
			eta = max(r, 0)
		}
	}
	if eta >= 0 {
		p.line = fmt.Appendf(p.line, "  ETA %v", eta.Round(time.Second))
	}
	x := d.U
	if p.Transform != nil {
		p.Transform(p.buf, d.U)
		x = p.buf
	}
	for i, v := range x {
		p.line = append(p.line, ' ', ' ')
		if p.Names != nil {
			p.line = append(p.line, p.Names[i]...)
		} else {
			p.line = fmt.Appendf(p.line, "u%d", i)
		}
		p.line = fmt.Appendf(p.line, "=%.4g", v)
	}
	p.line = append(p.line, '\n')
	_, err := p.W.Write(p.line)
	return err
}

// plain writes a plain progress line: the share of the iterations done
// and the time left.
func (p *Printer) plain(done, left int, rate float64, d *Draw) error {
	p.line = fmt.Appendf(p.line[:0], "fit: %s", p.Label)
	if done+left > 0 && p.info.Iterations > 0 {
		p.line = fmt.Appendf(p.line, ": %.0f%%", 100*float64(done)/float64(done+left))
		if rate > 0 {
			eta := time.Duration(float64(left) / rate * float64(time.Second))
			if p.info.Runtime > 0 {
				eta = min(eta, max(p.info.Runtime-d.Elapsed, 0))
			}
			p.line = fmt.Appendf(p.line, " · ETA %v", eta.Round(time.Second))
		}
	}
	p.line = append(p.line, '\n')
	_, err := p.W.Write(p.line)
	return err
}

// Done prints one summary line per chain (none with a Label).
func (p *Printer) Done(r *Result) error {
	if p.W == nil || p.Label != "" {
		return nil
	}
	var b strings.Builder
	for c, ch := range r.Chains {
		rate := math.NaN()
		if s := ch.Elapsed.Seconds(); s > 0 {
			rate = float64(ch.Iterations) / s
		}
		fmt.Fprintf(&b, "sgmcmc: chain %d %v after %d iterations, %d kept, %d skipped, %v (%.4g it/s)\n",
			c, ch.Status, ch.Iterations, ch.Kept, ch.Skipped, ch.Elapsed.Round(time.Millisecond), rate)
	}
	_, err := io.WriteString(p.W, b.String())
	return err
}
