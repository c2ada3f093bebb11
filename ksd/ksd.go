package ksd

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"gonum.org/v1/gonum/mat"
)

// Statistic selects the estimator of the squared discrepancy.
type Statistic int

const (
	// V is the V-statistic (1/K²) Σ_{k,k'} k0^d(θ_k, θ_k'), diagonal included: the
	// paper's definition. It is never negative but is biased upwards by O(1/K).
	V Statistic = iota
	// U is the U-statistic (1/(K(K−1))) Σ_{k≠k'} k0^d(θ_k, θ_k'), unbiased for
	// KSD_d² on independent draws. It can be negative; see Result.PerDim.
	U
	// Linear is the linear-time estimate of ComputeLinear (Liu et al. 2016).
	Linear
)

// String returns "V", "U" or "Linear".
func (s Statistic) String() string {
	switch s {
	case V:
		return "V"
	case U:
		return "U"
	case Linear:
		return "Linear"
	}
	return fmt.Sprintf("Statistic(%d)", int(s))
}

// Settings configures Compute. The zero value (or a nil *Settings) is the paper's
// choice: IMQ{C: 1, Beta: −0.5}, V-statistic, all CPUs.
type Settings struct {
	// Kernel is the IMQ base kernel; the zero value IMQ{} means DefaultIMQ().
	Kernel IMQ
	// Statistic is V (zero value) or U.
	Statistic Statistic
	// Workers is the number of goroutines; <= 0 means runtime.GOMAXPROCS(0).
	// The result is bitwise identical for every value: rows are cut into a
	// partition that depends only on K, and the partial sums of its blocks are
	// added in block order.
	Workers int
}

// Result holds a KSD estimate for every coordinate of θ.
//
// The paper reports KSD = Σ_d √(KSD_d²), a sum of per-coordinate discrepancies,
// and tabulates the terms for single parameters. The KSD of a group of
// coordinates (one parameter of several components, as in the paper's
// appendix tables) is therefore Σ_{d ∈ group} PerDim[d]: see Group. Note that the
// base kernel always measures ‖x − y‖ over all columns; for a kernel restricted
// to a group, pass only that group's columns to Compute.
type Result struct {
	Statistic Statistic
	N, Dim    int // samples used (K) and coordinates (d)

	// Squared[d] is the estimate of KSD_d², signed: U and Linear estimates can be
	// negative when the samples fit the target well.
	Squared []float64
	// PerDim[d] = √Squared[d], or NaN where Squared[d] < 0 (a negative estimate
	// has no root; inspect Squared instead).
	PerDim []float64
	// KSD = Σ_d PerDim[d], the paper's reported value; NaN if any PerDim is NaN.
	KSD float64
	// StdErr[d] is the standard error of Squared[d] for the Linear statistic
	// (an average of independent pair terms); nil for V and U.
	StdErr []float64
}

// Group returns Σ_{d ∈ cols} PerDim[d], the paper's KSD of a group of
// coordinates. It panics if a column index is out of range.
func (r *Result) Group(cols ...int) float64 {
	s := 0.0
	for _, c := range cols {
		if c < 0 || c >= r.Dim {
			panic("ksd: column index out of range")
		}
		s += r.PerDim[c]
	}
	return s
}

// Joint returns √(Σ_d Squared[d]), the usual KSD of Gorham and Mackey (2017)
// and Liu et al. (2016), whose Stein kernel is the sum of the per-coordinate
// kernels. It is NaN if the sum is negative.
func (r *Result) Joint() float64 {
	s := 0.0
	for _, v := range r.Squared {
		s += v
	}
	return root(s)
}

// ksdNaNOK maps the documented NaN of Result.KSD (a negative estimate)
// to 0 for the overflow check, keeping ±Inf.
func ksdNaNOK(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func root(v float64) float64 {
	if v < 0 {
		return math.NaN()
	}
	return math.Sqrt(v)
}

func newResult(stat Statistic, n, dim int, sq []float64) *Result {
	r := &Result{Statistic: stat, N: n, Dim: dim, Squared: sq, PerDim: make([]float64, dim)}
	for d, v := range sq {
		r.PerDim[d] = root(v)
		r.KSD += r.PerDim[d]
	}
	return r
}

// nBlocks is the number of row blocks of the pair sum; it must not depend on the
// number of workers, so that the summation order is fixed.
const nBlocks = 64

// Compute returns the kernel Stein discrepancy between the empirical
// distribution of the K rows of x and the target whose score ∇log p at row k is
// row k of score. x and score are K×dim, row-major. The scores may be exact or
// stochastic estimates (as in the paper, which uses full-data particle filter
// gradients). It takes O(K² dim) time and O(dim) memory per block.
//
// Errors wrap ErrShape (lengths inconsistent with dim), ErrTooFew (K = 0, or K < 2
// for U), ErrKernel, ErrNonFinite (a *NonFiniteError naming the entry), or
// ErrOverflow (finite inputs, such as scores of 1e200, whose Stein kernel
// overflows float64).
func Compute(x, score []float64, dim int, s *Settings) (*Result, error) {
	var set Settings
	if s != nil {
		set = *s
	}
	k := set.Kernel
	if k == (IMQ{}) {
		k = DefaultIMQ()
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if set.Statistic != V && set.Statistic != U {
		return nil, fmt.Errorf("ksd: Compute supports V and U statistics, got %v", set.Statistic)
	}
	n, err := checkInput(x, score, dim)
	if err != nil {
		return nil, err
	}
	if set.Statistic == U && n < 2 {
		return nil, fmt.Errorf("%w: U-statistic needs K >= 2, got %d", ErrTooFew, n)
	}
	st := newStein(k)
	off := offDiagonal(x, score, dim, n, &st, set.Workers)
	sq := make([]float64, dim)
	fn := float64(n)
	if set.Statistic == V {
		diag := make([]float64, dim)
		for i := range n {
			st.addDiag(diag, score[i*dim:(i+1)*dim])
		}
		for d := range sq {
			sq[d] = (diag[d] + 2*off[d]) / (fn * fn)
		}
	} else {
		for d := range sq {
			sq[d] = 2 * off[d] / (fn * (fn - 1))
		}
	}
	r := newResult(set.Statistic, n, dim, sq)
	// KSD is NaN by design when some U estimate is negative; only the
	// estimates themselves (and an infinite KSD) signal overflow.
	if err := checkOverflow(append(sq, ksdNaNOK(r.KSD)), x, score, dim); err != nil {
		return nil, err
	}
	return r, nil
}

// ComputeDense is Compute for samples and scores held as K×d matrices.
func ComputeDense(x, score mat.Matrix, s *Settings) (*Result, error) {
	r, c := x.Dims()
	rs, cs := score.Dims()
	if r != rs || c != cs {
		return nil, fmt.Errorf("%w: x is %d×%d, score is %d×%d", ErrShape, r, c, rs, cs)
	}
	return Compute(rowMajor(x), rowMajor(score), c, s)
}

// rowMajor returns the elements of m row by row, without copying a compact *mat.Dense.
func rowMajor(m mat.Matrix) []float64 {
	r, c := m.Dims()
	if d, ok := m.(*mat.Dense); ok {
		raw := d.RawMatrix()
		if raw.Stride == c {
			return raw.Data[:r*c]
		}
	}
	out := make([]float64, r*c)
	for i := range r {
		for j := range c {
			out[i*c+j] = m.At(i, j)
		}
	}
	return out
}

// ComputeLinear returns the linear-time estimate of Liu et al. (2016),
//
//	KSD_d² ≈ (1/P) Σ_{p<P} k0^d(θ_{2p}, θ_{2p+1}),  P = ⌊K/2⌋,
//
// the average of the Stein kernel over consecutive disjoint pairs. For
// independent draws it is unbiased for the population KSD_d² (like U, and
// unlike V), with variance O(1/K) instead of O(1/K²) near the target: use it when
// K is too large for the O(K²) sum. For a correlated chain, thin first so that
// the two members of a pair are nearly independent. Result.StdErr holds the
// standard error of each Squared[d] (NaN if P < 2). Errors are as for Compute,
// with K >= 2 required. The zero IMQ{} means DefaultIMQ().
func ComputeLinear(x, score []float64, dim int, k IMQ) (*Result, error) {
	if k == (IMQ{}) {
		k = DefaultIMQ()
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	n, err := checkInput(x, score, dim)
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: linear estimate needs K >= 2, got %d", ErrTooFew, n)
	}
	st := newStein(k)
	p := n / 2
	// Welford's update per coordinate: one pass, stable.
	mean := make([]float64, dim)
	m2 := make([]float64, dim)
	term := make([]float64, dim)
	diff := make([]float64, dim)
	for i := range p {
		a, b := 2*i*dim, (2*i+1)*dim
		clear(term)
		st.addRow(term, diff, x[a:a+dim], score[a:a+dim], x[b:b+dim], score[b:b+dim])
		for d, t := range term {
			delta := t - mean[d]
			mean[d] += delta / float64(i+1)
			m2[d] += delta * (t - mean[d])
		}
	}
	r := newResult(Linear, n, dim, mean)
	r.StdErr = make([]float64, dim)
	for d := range r.StdErr {
		if p < 2 {
			r.StdErr[d] = math.NaN()
			continue
		}
		r.StdErr[d] = math.Sqrt(m2[d] / float64(p-1) / float64(p))
	}
	vals := append(append([]float64(nil), mean...), ksdNaNOK(r.KSD))
	if p >= 2 {
		vals = append(vals, r.StdErr...)
	}
	if err := checkOverflow(vals, x, score, dim); err != nil {
		return nil, err
	}
	return r, nil
}

// checkInput validates shapes and finiteness and returns K.
func checkInput(x, score []float64, dim int) (int, error) {
	if dim <= 0 {
		return 0, fmt.Errorf("%w: dim = %d, must be > 0", ErrShape, dim)
	}
	if len(x) != len(score) {
		return 0, fmt.Errorf("%w: len(x) = %d, len(score) = %d", ErrShape, len(x), len(score))
	}
	if len(x)%dim != 0 {
		return 0, fmt.Errorf("%w: len(x) = %d is not a multiple of dim = %d", ErrShape, len(x), dim)
	}
	n := len(x) / dim
	if n == 0 {
		return 0, fmt.Errorf("%w: no samples", ErrTooFew)
	}
	for _, in := range [...]struct {
		name string
		v    []float64
	}{{"x", x}, {"score", score}} {
		for i, v := range in.v {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, &NonFiniteError{Input: in.name, Row: i / dim, Col: i % dim, Value: v}
			}
		}
	}
	return n, nil
}

// offDiagonal returns Σ_{i<j} k0^d(x_i, x_j) for each d. Rows are cut into
// nBlocks contiguous blocks (a partition fixed by n alone); workers take blocks
// dynamically and store each block's sum in its own slot, and the slots are
// added in order, so the result does not depend on the number of workers.
func offDiagonal(x, score []float64, dim, n int, st *stein, workers int) []float64 {
	nb := min(nBlocks, n)
	size := (n + nb - 1) / nb
	nb = (n + size - 1) / size
	sums := make([]float64, nb*dim)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, nb)

	var next atomic.Int64
	work := func() {
		row := make([]float64, dim)
		diff := make([]float64, dim)
		for {
			b := int(next.Add(1)) - 1
			if b >= nb {
				return
			}
			acc := sums[b*dim : (b+1)*dim]
			for i := b * size; i < min((b+1)*size, n); i++ {
				clear(row)
				xi, si := x[i*dim:(i+1)*dim], score[i*dim:(i+1)*dim]
				st.addRow(row, diff, xi, si, x[(i+1)*dim:n*dim], score[(i+1)*dim:n*dim])
				for d, v := range row {
					acc[d] += v
				}
			}
		}
	}
	if workers == 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(work)
		}
		wg.Wait()
	}

	total := make([]float64, dim)
	for b := range nb {
		for d := range total {
			total[d] += sums[b*dim+d]
		}
	}
	return total
}
