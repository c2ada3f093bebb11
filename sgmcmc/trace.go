package sgmcmc

import (
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/mat"
)

// Trace is an in-memory Recorder keeping every kept draw of every chain. Its
// memory grows with the run; use CSVRecorder for long runs. After a resume it
// holds only the draws made after the checkpoint.
type Trace struct {
	// Transform, when set, also stores natural parameters: it maps u to
	// NaturalDim values, dst first.
	Transform  func(dst, u []float64)
	NaturalDim int
	// KeepGrads stores the gradient estimate of each draw (for KSD; NaN
	// for a draw whose step used none).
	KeepGrads bool

	// Chains is filled by the run, one per chain.
	Chains []TraceChain
}

// TraceChain holds the draws of one chain, row-major: draw i is
// U[i*Dim:(i+1)*Dim].
type TraceChain struct {
	Dim, NaturalDim int
	U               []float64
	Natural         []float64 // nil without Transform
	Grad            []float64 // nil without KeepGrads
	LogPost         []float64
	Iter            []int
	Elapsed         []time.Duration
}

// Init allocates one TraceChain per chain, discarding earlier draws.
func (t *Trace) Init(info Info) error {
	if t.Transform != nil && t.NaturalDim <= 0 {
		return fmt.Errorf("%w: Trace with a Transform needs NaturalDim > 0", ErrSettings)
	}
	t.Chains = make([]TraceChain, info.Chains)
	for c := range t.Chains {
		t.Chains[c].Dim = info.Dim
		if t.Transform != nil {
			t.Chains[c].NaturalDim = t.NaturalDim
		}
	}
	return nil
}

// Record appends a copy of d (nothing for a discarded draw).
func (t *Trace) Record(d *Draw) error {
	if d.Discarded {
		return nil
	}
	c := &t.Chains[d.Chain]
	c.U = append(c.U, d.U...)
	if t.Transform != nil {
		n := len(c.Natural)
		c.Natural = append(c.Natural, make([]float64, t.NaturalDim)...)
		t.Transform(c.Natural[n:], d.U)
	}
	if t.KeepGrads {
		if d.Grad == nil { // a step without a gradient: NaN, not zero
			n := len(c.Grad)
			c.Grad = append(c.Grad, d.U...)
			for i := n; i < len(c.Grad); i++ {
				c.Grad[i] = math.NaN()
			}
		} else {
			c.Grad = append(c.Grad, d.Grad...)
		}
	}
	c.LogPost = append(c.LogPost, d.LogPost)
	c.Iter = append(c.Iter, d.Iter)
	c.Elapsed = append(c.Elapsed, d.Elapsed)
	return nil
}

// Done does nothing.
func (t *Trace) Done(*Result) error { return nil }

// Len returns the number of draws.
func (c *TraceChain) Len() int { return len(c.Iter) }

// Row returns draw i of u (a view).
func (c *TraceChain) Row(i int) []float64 { return c.U[i*c.Dim : (i+1)*c.Dim : (i+1)*c.Dim] }

// Draws returns the draws of u as a Len×Dim matrix sharing the storage, or nil
// when there are none.
func (c *TraceChain) Draws() *mat.Dense { return dense(c.Len(), c.Dim, c.U) }

// Grads returns the gradient estimates as a Len×Dim matrix sharing the
// storage, or nil when there are none or they were not kept.
func (c *TraceChain) Grads() *mat.Dense { return dense(c.Len(), c.Dim, c.Grad) }

// NaturalDraws returns the natural parameters as a Len×NaturalDim matrix
// sharing the storage, or nil when there are none.
func (c *TraceChain) NaturalDraws() *mat.Dense { return dense(c.Len(), c.NaturalDim, c.Natural) }

// Column returns a copy of component j of u across the draws.
func (c *TraceChain) Column(j int) []float64 {
	x := make([]float64, c.Len())
	for i := range x {
		x[i] = c.U[i*c.Dim+j]
	}
	return x
}

func dense(r, k int, x []float64) *mat.Dense {
	if r == 0 || k == 0 || len(x) != r*k {
		return nil
	}
	return mat.NewDense(r, k, x)
}
