package pf_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// benchModel binds m at the natural parameters (φ, σ, τ) and simulates
// 1000 observations.
func benchModel(b *testing.B, m interface {
	ssm.Model
	Params(phi, sigma, tau float64) ([]float64, error)
}, phi, sigma, tau float64) (ssm.Kernel, ssm.Dims, ssm.Sequence) {
	b.Helper()
	u, err := m.Params(phi, sigma, tau)
	if err != nil {
		b.Fatal(err)
	}
	k, err := m.Bind(u)
	if err != nil {
		b.Fatal(err)
	}
	d := m.Dims()
	_, seq := ssm.Simulate(k, d, 1000, rand.New(rand.NewPCG(1, 1)))
	return k, d, seq
}

// benchRun times Run after one warm-up Run (which sizes the buffers).
func benchRun(b *testing.B, s pf.Settings, k ssm.Kernel, d ssm.Dims, seq ssm.Sequence, w ssm.Window) {
	f := mustNew(b, s)
	h := pf.Score(k, d)
	stat := make([]float64, d.Param)
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	if _, err := f.Run(ctx, k, d, seq, w, h, stat, rng); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.Run(ctx, k, d, seq, w, h, stat, rng); err != nil {
			b.Fatal(err)
		}
	}
}

// The paper's gradient window: S = 40 kept rows with B = 10 buffer rows
// on each side.
var benchWindow = ssm.Window{Start: 400, End: 460, KeepStart: 410, KeepEnd: 450}

// BenchmarkFilter times the paper's configuration: the SVM (φ 0.9, σ 0.5,
// τ 0.5) bootstrap filter with ancestral accumulation of the score over a
// window of W = 60 rows keeping the middle 40.
func BenchmarkFilter(b *testing.B) {
	k, d, seq := benchModel(b, models.SVM{}, 0.9, 0.5, 0.5)
	w := benchWindow
	b.Run(fmt.Sprintf("svm/N=1000/W=%d", w.End-w.Start), func(b *testing.B) {
		benchRun(b, pf.Settings{N: 1000}, k, d, seq, w)
	})
	// The control-variate chains' filter with FitSettings.CVParticles:
	// the forward-only smoother (N² pairs per row) with sorted resampling.
	for _, n := range []int{50, 100, 200} {
		b.Run(fmt.Sprintf("svm/forward-only/sorted/N=%d/W=%d", n, w.End-w.Start), func(b *testing.B) {
			benchRun(b, pf.Settings{N: n, Smoother: pf.ForwardOnly, Sorted: true}, k, d, seq, w)
		})
	}
}

// BenchmarkSmoothers times every smoother on the LGSSM (guided and
// bootstrap) and the SVM over the same window, N = 1000.
func BenchmarkSmoothers(b *testing.B) {
	lk, ld, lseq := benchModel(b, models.LGSSM{}, 0.9, 0.7, 1)
	sk, sd, sseq := benchModel(b, models.SVM{}, 0.9, 0.5, 0.5)
	for _, sm := range []pf.Smoother{pf.Ancestral, pf.Shrinkage, pf.ForwardOnly, pf.PaRIS} {
		for _, prop := range []pf.Proposal{pf.Guided, pf.Bootstrap} {
			b.Run(fmt.Sprintf("lgssm/%v/%v/N=1000", sm, prop), func(b *testing.B) {
				benchRun(b, pf.Settings{N: 1000, Smoother: sm, Proposal: prop}, lk, ld, lseq, benchWindow)
			})
		}
		b.Run(fmt.Sprintf("svm/%v/N=1000", sm), func(b *testing.B) {
			benchRun(b, pf.Settings{N: 1000, Smoother: sm}, sk, sd, sseq, benchWindow)
		})
	}
}
