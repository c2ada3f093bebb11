package states

import (
	"math"
	"slices"
	"sync"
)

// Band is sgmcmc.Band's layout (the two convert into each other): mean,
// sd and 5/50/95% quantiles, one entry per time.
type Band struct {
	Mean, SD, Q05, Q50, Q95 []float64
}

func newBand(n int) Band {
	b := make([]float64, 5*n)
	return Band{Mean: b[:n:n], SD: b[n : 2*n : 2*n], Q05: b[2*n : 3*n : 3*n], Q50: b[3*n : 4*n : 4*n], Q95: b[4*n:]}
}

func (b *Band) appendBand(o Band) {
	b.Mean = append(b.Mean, o.Mean...)
	b.SD = append(b.SD, o.SD...)
	b.Q05 = append(b.Q05, o.Q05...)
	b.Q50 = append(b.Q50, o.Q50...)
	b.Q95 = append(b.Q95, o.Q95...)
}

// pool holds, per quantity and time, the D·M pooled draws (float32: the
// summaries need far less than their precision, and the pool is the
// memory that grows with D) or, on the exact path, D (mean, variance)
// pairs.
type pool struct {
	n, per int // times, values per time (D·M, or 2D)
	v      []float32
	g      []float64
}

func newPool(n, per int, gauss bool) *pool {
	p := &pool{n: n, per: per}
	if gauss {
		p.g = make([]float64, n*per)
	} else {
		p.v = make([]float32, n*per)
	}
	return p
}

// summarise computes the band of every time, in parallel over times.
func (p *pool) summarise(workers int) Band {
	b := newBand(p.n)
	var wg sync.WaitGroup
	chunk := (p.n + workers - 1) / workers
	for lo := 0; lo < p.n; lo += chunk {
		hi := min(lo+chunk, p.n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if p.g != nil {
					mixtureSummary(&b, i, p.g[i*p.per:(i+1)*p.per])
				} else {
					sampleSummary(&b, i, p.v[i*p.per:(i+1)*p.per])
				}
			}
		}()
	}
	wg.Wait()
	return b
}

// sampleSummary sets entry i of b from pooled draws (sorted in place):
// mean, sd (divisor n−1) and type-7 quantiles.
func sampleSummary(b *Band, i int, v []float32) {
	slices.Sort(v)
	n := len(v)
	m := 0.0
	for _, x := range v {
		m += float64(x)
	}
	m /= float64(n)
	ss := 0.0
	for _, x := range v {
		d := float64(x) - m
		ss += d * d
	}
	sd := math.NaN()
	if n > 1 {
		sd = math.Sqrt(ss / float64(n-1))
	}
	q := func(p float64) float64 {
		h := float64(n-1) * p
		lo := int(math.Floor(h))
		if lo >= n-1 {
			return float64(v[n-1])
		}
		return float64(v[lo]) + (h-float64(lo))*(float64(v[lo+1])-float64(v[lo]))
	}
	b.Mean[i], b.SD[i], b.Q05[i], b.Q50[i], b.Q95[i] = m, sd, q(0.05), q(0.5), q(0.95)
}

// mixtureSummary sets entry i of b for the equal-weight mixture of the
// Gaussians N(g[2d], g[2d+1]).
func mixtureSummary(b *Band, i int, g []float64) {
	D := len(g) / 2
	m, s2 := 0.0, 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for d := range D {
		md, vd := g[2*d], g[2*d+1]
		m += md
		s2 += vd + md*md
		sd := math.Sqrt(vd)
		lo, hi = math.Min(lo, md-9*sd), math.Max(hi, md+9*sd)
	}
	m /= float64(D)
	v := math.Max(s2/float64(D)-m*m, 0)
	b.Mean[i], b.SD[i] = m, math.Sqrt(v)
	b.Q05[i] = mixtureQuantile(g, 0.05, lo, hi)
	b.Q50[i] = mixtureQuantile(g, 0.5, lo, hi)
	b.Q95[i] = mixtureQuantile(g, 0.95, lo, hi)
}

// mixtureQuantile solves F(q) = p for F(q) = (1/D) Σ_d Φ((q − m_d)/s_d) by
// Newton steps kept inside a bisection bracket [lo, hi].
func mixtureQuantile(g []float64, p, lo, hi float64) float64 {
	D := float64(len(g) / 2)
	cdf := func(q float64) (float64, float64) {
		f, df := 0.0, 0.0
		for d := 0; d < len(g); d += 2 {
			sd := math.Sqrt(g[d+1])
			z := (q - g[d]) / sd
			f += 0.5 * math.Erfc(-z/math.Sqrt2)
			df += math.Exp(-0.5*z*z) / (sd * math.Sqrt(2*math.Pi))
		}
		return f/D - p, df / D
	}
	q := 0.5 * (lo + hi)
	for range 100 {
		f, df := cdf(q)
		if f > 0 {
			hi = q
		} else {
			lo = q
		}
		next := q - f/df
		if !(next > lo && next < hi) || df == 0 {
			next = 0.5 * (lo + hi)
		}
		if math.Abs(next-q) <= 1e-12*math.Max(1, math.Abs(q)) || hi-lo <= 1e-12*math.Max(1, math.Abs(q)) {
			return next
		}
		q = next
	}
	return q
}
