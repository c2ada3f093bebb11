package sgmcmc

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
	"gonum.org/v1/gonum/mat"
)

// Precond is SGLD with a constant dense preconditioner M = L Lᵀ and a
// correction of the injected noise for the gradient noise and for the
// discretisation:
//
//	u ← u + h M ĝ + L ζ,  ζ ~ N(0, (2h − h²) I − h² W),
//
// where W = Lᵀ V L is the covariance V of the gradient noise seen in the
// coordinates z = L⁻¹(u − u*). Choose L so that the posterior is close to
// N(u*, L Lᵀ) (the inverse Hessian at the mode): then z has a nearly
// standard normal posterior, the update is z ← (1 − h) z + h Lᵀξ + ζ
// for gradient noise ξ, and its stationary variance is exactly 1 when
// Var(h Lᵀξ + ζ) = 2h − h². That is the noise correction of Ahn, Korattikara
// and Welling (2012) and of CALIBRATION.md: the gradient noise supplies part
// of the diffusion instead of adding to it, so the draws are neither
// widened by the subsampling noise nor by the Euler step (plain SGLD
// inflates the variance by (1 + hλ(W)/2)/(1 − h/2)). Errors in L only
// change the result at second order in h.
//
// h is dimensionless here (a fraction of the posterior scale): h = 0.1
// gives a lag-1 autocorrelation of about 0.9. The injected covariance must
// be positive semi-definite, which needs h(1 + λ_max(W)) ≤ 2; for a larger
// h, Step clips the negative eigenvalues at zero and counts the step in
// Clipped, so the caller can report it (Fit chooses h so that it never
// happens).
type Precond struct {
	// L is the lower-triangular Cholesky factor of M, row-major dim×dim.
	L []float64
	// W is the gradient-noise covariance in the z coordinates, row-major
	// dim×dim; nil means no gradient noise (exact gradients).
	W []float64
	// MaxDrift, when positive, bounds the length of the drift h Lᵀĝ in
	// the z coordinates (posterior sds): a longer one is shortened and
	// counted in Limited. It guards against the rare huge gradient
	// estimate far out in the tails (a filter at extreme parameters) and
	// is inactive in the bulk, where the drift is about h|z| plus noise.
	MaxDrift float64
	// Clipped counts steps whose injected covariance had to be clipped;
	// Limited counts drifts shortened by MaxDrift.
	Clipped, Limited int

	dim    int
	h      float64   // step size of the cached factor
	r      []float64 // dim×dim factor of the injected covariance, L·(its square root)
	g, xi  []float64
	factor *mat.Dense
}

// Init implements Method.
func (p *Precond) Init(dim int) {
	if len(p.L) != dim*dim || p.W != nil && len(p.W) != dim*dim {
		panic(fmt.Sprintf("sgmcmc: Precond needs L and W of %d×%d (have %d and %d elements)", dim, dim, len(p.L), len(p.W)))
	}
	p.dim, p.h = dim, 0
	p.r = make([]float64, dim*dim)
	p.g = make([]float64, dim)
	p.xi = make([]float64, dim)
}

// Step implements Method.
func (p *Precond) Step(u, grad []float64, h float64, rng *rand.Rand) {
	checkLen(u, grad)
	n := p.dim
	if h != p.h {
		p.prepare(h)
	}
	// g = Lᵀ ĝ, then u += h L g.
	for j := 0; j < n; j++ {
		s := 0.0
		for i := j; i < n; i++ {
			s += p.L[i*n+j] * grad[i]
		}
		p.g[j] = s
	}
	if p.MaxDrift > 0 {
		if d := h * math.Sqrt(dotSelf(p.g)); d > p.MaxDrift {
			for j := range p.g {
				p.g[j] *= p.MaxDrift / d
			}
			p.Limited++
		}
	}
	for i := range p.xi {
		p.xi[i] = rng.NormFloat64()
	}
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j <= i; j++ {
			s += p.L[i*n+j] * p.g[j]
		}
		d := 0.0
		for j := 0; j < n; j++ {
			d += p.r[i*n+j] * p.xi[j]
		}
		u[i] += h*s + d
	}
}

// prepare computes r = L Q √Λ for the eigendecomposition Q Λ Qᵀ of the
// injected covariance (2h − h²)I − h²W, clipping negative eigenvalues.
func (p *Precond) prepare(h float64) {
	n := p.dim
	c := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := 0.0
			if p.W != nil {
				v = -h * h * 0.5 * (p.W[i*n+j] + p.W[j*n+i])
			}
			if i == j {
				v += 2*h - h*h
			}
			c.SetSym(i, j, v)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		panic("sgmcmc: Precond: eigendecomposition of the injected covariance failed")
	}
	vals := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	clipped := false
	for k, v := range vals {
		if v < 0 || math.IsNaN(v) {
			vals[k], clipped = 0, true
		}
	}
	if clipped {
		p.Clipped++
	}
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			s := 0.0
			for j := 0; j <= i; j++ {
				s += p.L[i*n+j] * q.At(j, k)
			}
			p.r[i*n+k] = s * math.Sqrt(vals[k])
		}
	}
	if !clipped {
		p.h = h
	}
}

// MarshalBinary returns the counts: L, W and MaxDrift are configuration.
func (p *Precond) MarshalBinary() ([]byte, error) {
	return fmath.AppendFloats(nil, float64(p.Clipped), float64(p.Limited)), nil
}

// UnmarshalBinary restores the counts.
func (p *Precond) UnmarshalBinary(b []byte) error {
	if err := expectFloats("Precond", b, 2); err != nil {
		return err
	}
	var v [2]float64
	fmath.ReadFloats(v[:], b)
	p.Clipped, p.Limited = int(v[0]), int(v[1])
	return nil
}

func dotSelf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}
