package surrogate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/tmix"
)

// BenchmarkFit times a surrogate fit in u and on a base to 800 points in
// 7 dimensions (the design MSV{D: 2}'s chains use) with one worker and
// with two: the two fits and their Gaussian processes' lengths run in
// parallel (the surrogate is the same, TestFitWorkers).
//
//	go test -run '^$' -bench 'Fit/' ./sgmcmc/internal/surrogate
func BenchmarkFit(b *testing.B) {
	const p, n = 7, 800
	base := &Base{
		LogPrior: func(u []float64) float64 { return -0.5 * u[0] * u[0] },
		Constrain: func(th, u []float64) {
			copy(th, u)
			th[0] = math.Tanh(u[0])
		},
	}
	means, chols := make([]float64, p), make([]float64, p*p)
	for i := range p {
		chols[i*p+i] = 1.2
	}
	q := tmix.New([]float64{1}, [][]float64{means}, [][]float64{chols})
	rng := rand.New(rand.NewPCG(3, 4))
	s, z := make([]float64, p), make([]float64, p)
	var xs [][]float64
	var lps, lw []float64
	for range n {
		x := make([]float64, p)
		q.Draw(x, s, rng)
		lp := 0.0
		for i, v := range x {
			e := v - 0.3*x[0]*x[0]*float64(i%2)
			lp -= 0.5 * e * e
		}
		xs, lps, lw = append(xs, x), append(lps, lp), append(lw, lp-q.LogDensity(x, z))
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				if _, err := Fit(q, xs, lps, lw, base, 1, 2, w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
