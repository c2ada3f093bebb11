package fmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refExp is e^x computed independently in 200-bit big.Float arithmetic:
// a Taylor series at x/2^12, squared 12 times.
func refExp(x float64) float64 {
	const prec = 200
	bx := new(big.Float).SetPrec(prec).SetFloat64(x)
	// e^x = (e^{x/2^m})^{2^m} with a Taylor series for the small argument.
	const m = 12
	s := new(big.Float).SetPrec(prec).Quo(bx, new(big.Float).SetPrec(prec).SetFloat64(1<<m))
	sum := new(big.Float).SetPrec(prec).SetFloat64(1)
	term := new(big.Float).SetPrec(prec).SetFloat64(1)
	for n := 1; n < 40; n++ {
		term.Mul(term, s)
		term.Quo(term, new(big.Float).SetPrec(prec).SetFloat64(float64(n)))
		sum.Add(sum, term)
	}
	for i := 0; i < m; i++ {
		sum.Mul(sum, sum)
	}
	f, _ := sum.Float64()
	return f
}

func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	xs := []float64{0, 1, -1, 0.5 * math.Ln2, -0.5 * math.Ln2, 708, -708, 709, 1e-300, -1e-17}
	for i := 0; i < 3000; i++ {
		xs = append(xs, (rng.Float64()*2-1)*50, (rng.Float64()*2-1)*700, rng.NormFloat64())
	}
	for _, x := range xs {
		want := refExp(x)
		got := Exp(x)
		rel := math.Abs(got-want) / want
		worst = math.Max(worst, rel)
		if rel > 1e-15 {
			t.Fatalf("Exp(%v) = %v, want %v (rel %.2g)", x, got, want, rel)
		}
	}
	t.Logf("largest relative error %.3g", worst)
}

func TestExpEdges(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 710, -746, -720, 1e300, -1e300} {
		got, want := Exp(x), math.Exp(x)
		if !(got == want || (math.IsNaN(got) && math.IsNaN(want))) {
			t.Errorf("Exp(%v) = %v, want %v", x, got, want)
		}
	}
}

var sink float64

func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = -rng.Float64() * 20
	}
	b.Run("fmath", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := 0.0
			for _, x := range xs {
				s += Exp(x)
			}
			sink = s
		}
	})
	b.Run("math", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s := 0.0
			for _, x := range xs {
				s += math.Exp(x)
			}
			sink = s
		}
	})
}

func TestExpToMatchesExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	src := make([]float64, 5000)
	for i := range src {
		src[i] = (rng.Float64()*2 - 1) * 800
	}
	src = append(src, math.NaN(), math.Inf(1), math.Inf(-1))
	dst := make([]float64, len(src))
	ExpTo(dst, src)
	for i, x := range src {
		if got, want := dst[i], Exp(x); !(got == want || (math.IsNaN(got) && math.IsNaN(want))) {
			t.Fatalf("ExpTo at %v = %v, Exp = %v", x, got, want)
		}
	}
}

func BenchmarkExpTo(b *testing.B) {
	xs := make([]float64, 1000)
	dst := make([]float64, 1000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = -rng.Float64() * 20
	}
	for i := 0; i < b.N; i++ {
		ExpTo(dst, xs)
	}
}
