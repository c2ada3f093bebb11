package sgmcmc

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
)

// diagGauss is the cheapest useful estimator: the exact gradient of N(0, I).
type diagGauss struct{}

func (diagGauss) Grad(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
	for i, v := range u {
		grad[i] = -v
	}
	return 0, nil
}

// BenchmarkSGLDStep measures one Sampler.Step (estimator, finiteness checks
// and the SGLD update, whose cost is dominated by dim normal draws).
func BenchmarkSGLDStep(b *testing.B) {
	for _, dim := range []int{1, 4, 16} {
		b.Run("dim="+strconv.Itoa(dim), func(b *testing.B) {
			smp := NewSampler(diagGauss{}, &SGLD{}, make([]float64, dim), Constant(0.01), rand.New(rand.NewPCG(1, 2)))
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := smp.Step(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunIteration measures one iteration inside Run (one chain, every
// draw passed to a Recorder), i.e. the runner's overhead per iteration on top
// of BenchmarkSGLDStep. Run's set-up is amortised over b.N iterations.
func BenchmarkRunIteration(b *testing.B) {
	const dim = 4
	b.ReportAllocs()
	_, err := Run(context.Background(), func(int) Estimator { return diagGauss{} }, sgld, zeroInit, dim,
		Settings{Iterations: b.N, Schedule: Constant(0.01), Recorder: nopRecorder{}})
	if err != nil {
		b.Fatal(err)
	}
}
