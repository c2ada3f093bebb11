package fmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// refLog is log x in 200-bit arithmetic, independent of math.Log: x =
// 2^e·m, log m = 2 atanh((m−1)/(m+1)) by its series, plus e·ln2 with ln2 =
// 2 atanh(1/3).
func refLog(x float64) float64 {
	const prec = 200
	m, e := math.Frexp(x)                     // x = m·2^e, m ∈ [½, 1)
	atanh2 := func(z *big.Float) *big.Float { // 2 atanh z = 2 Σ z^(2k+1)/(2k+1)
		z2 := new(big.Float).SetPrec(prec).Mul(z, z)
		term := new(big.Float).SetPrec(prec).Set(z)
		sum := new(big.Float).SetPrec(prec)
		for k := 0; k < 70; k++ { // |z| ≤ 1/3: 9^−70 is far below 2^−200
			t := new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(2*k+1)))
			sum.Add(sum, t)
			term.Mul(term, z2)
		}
		return sum.Mul(sum, new(big.Float).SetPrec(prec).SetInt64(2))
	}
	bm := new(big.Float).SetPrec(prec).SetFloat64(m)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	z := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(bm, one), new(big.Float).SetPrec(prec).Add(bm, one))
	ln2 := atanh2(new(big.Float).SetPrec(prec).Quo(one, new(big.Float).SetPrec(prec).SetInt64(3)))
	r := atanh2(z)
	r.Add(r, new(big.Float).SetPrec(prec).Mul(ln2, new(big.Float).SetPrec(prec).SetInt64(int64(e))))
	f, _ := r.Float64()
	return f
}

func TestLogAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xs := []float64{1, 2, 0.5, math.E, 1 + 1.0/256, 1 - 1e-12, 0x1p-1022, math.MaxFloat64, 3, 1e-300, 1e300}
	for j := 0; j < logSize; j++ { // cell edges and centres
		xs = append(xs, 1+float64(j)/logSize, 1+(float64(j)+0.5)/logSize, math.Nextafter(1+float64(j+1)/logSize, 0))
	}
	n := 3000
	if testing.Short() {
		n = 500
	}
	for range n {
		xs = append(xs, math.Exp((rng.Float64()*2-1)*700), rng.Float64()*4, math.Exp(rng.NormFloat64()))
	}
	worstAbs, worstRel := 0.0, 0.0
	for _, x := range xs {
		want := refLog(x)
		got := LogCore(x)
		d := math.Abs(got - want)
		worstAbs = math.Max(worstAbs, d)
		if math.Abs(want) >= 1 {
			worstRel = math.Max(worstRel, d/math.Abs(want))
		}
		if d > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("LogCore(%v) = %v, want %v (error %.3g)", x, got, want, d)
		}
		if Log(x) != got {
			t.Errorf("Log(%v) = %v differs from LogCore %v", x, Log(x), got)
		}
	}
	t.Logf("largest absolute error %.3g, largest relative error where |log x| ≥ 1: %.3g", worstAbs, worstRel)
}

func TestLogEdges(t *testing.T) {
	for _, x := range []float64{0, -1, math.Inf(1), math.Inf(-1), math.NaN(), 1e-310, math.SmallestNonzeroFloat64} {
		want, got := math.Log(x), Log(x)
		if !(got == want || math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("Log(%v) = %v, want %v", x, got, want)
		}
	}
}

func BenchmarkLog(b *testing.B) {
	xs := make([]float64, 1024)
	for i := range xs {
		xs[i] = 0.1 + float64(i)
	}
	b.Run("fmath", func(b *testing.B) {
		s := 0.0
		for i := 0; i < b.N; i++ {
			s += Log(xs[i&1023])
		}
		sink = s
	})
	b.Run("math", func(b *testing.B) {
		s := 0.0
		for i := 0; i < b.N; i++ {
			s += math.Log(xs[i&1023])
		}
		sink = s
	})
}
