package gradient_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// benchModel simulates T observations with the paper's data-generating
// parameters (section 5.2).
func benchModel(b *testing.B, name string, T int) (ssm.Model, []float64, ssm.Sequence) {
	b.Helper()
	rng := rand.New(rand.NewPCG(42, uint64(T)))
	var (
		m   ssm.Model
		u   []float64
		y   ssm.Sequence
		err error
	)
	switch name {
	case "lgssm":
		l := models.LGSSM{}
		u, _ = l.Params(0.9, 0.7, 1.0)
		_, y, err = l.Simulate(T, u, rng)
		m = l
	case "svm":
		s := models.SVM{}
		u, _ = s.Params(0.9, 0.5, 0.5)
		_, y, err = s.Simulate(T, u, rng)
		m = s
	case "garch":
		g := models.GARCH{}
		u, err = g.FromABG(0.1, 0.8, 0.05, 0.3)
		if err == nil {
			_, y, err = g.Simulate(T, u, rng)
		}
		m = g
	}
	if err != nil {
		b.Fatal(err)
	}
	return m, u, y
}

func runGradientBench(b *testing.B, m ssm.Model, u []float64, y ssm.Sequence, s gradient.Settings) {
	e, err := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, s)
	if err != nil {
		b.Fatal(err)
	}
	g := make([]float64, len(u))
	rng := rand.New(rand.NewPCG(1, 2))
	if _, err := e.Grad(ctx, g, u, rng); err != nil { // warm the workspace
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Grad(ctx, g, u, rng); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGradient measures one evaluation of g^PF(S, B, N) plus the prior
// gradient, single goroutine, on the paper's models.
func BenchmarkGradient(b *testing.B) {
	sub := gradient.Subsequencer{S: 40, B: 10}
	for _, name := range []string{"lgssm", "svm", "garch"} {
		b.Run(name, func(b *testing.B) {
			m, u, y := benchModel(b, name, 1000)
			for _, n := range []int{100, 1000, 10000} {
				b.Run(fmt.Sprintf("S=40/B=10/N=%d", n), func(b *testing.B) {
					runGradientBench(b, m, u, y, gradient.Settings{Subsequencer: sub, PF: pf.Settings{N: n}})
				})
			}
			b.Run("full/T=1000/N=1000", func(b *testing.B) {
				runGradientBench(b, m, u, y, gradient.Settings{Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, PF: pf.Settings{N: 1000}})
			})
			if name == "lgssm" {
				b.Run("kalman/S=40/B=10", func(b *testing.B) {
					runGradientBench(b, m, u, y, gradient.Settings{Subsequencer: sub, Exact: true})
				})
			}
			if name != "garch" {
				for _, sm := range []struct {
					name string
					s    pf.Smoother
				}{{"paris", pf.PaRIS}, {"poyiadjis", pf.ForwardOnly}} {
					b.Run("S=40/B=10/N=1000/"+sm.name, func(b *testing.B) {
						runGradientBench(b, m, u, y, gradient.Settings{Subsequencer: sub, PF: pf.Settings{N: 1000, Smoother: sm.s}})
					})
				}
			}
			if name == "svm" {
				// The opt-in Laplace proposal (models.SVM{Guided: true}).
				b.Run("S=40/B=10/N=1000/guided", func(b *testing.B) {
					runGradientBench(b, models.SVM{Guided: true}, u, y, gradient.Settings{Subsequencer: sub, PF: pf.Settings{N: 1000}})
				})
				for _, T := range []int{1000, 1000000} {
					b.Run(fmt.Sprintf("S=40/B=10/N=1000/T=%d", T), func(b *testing.B) {
						m, u, y := benchModel(b, name, T)
						runGradientBench(b, m, u, y, gradient.Settings{Subsequencer: sub, PF: pf.Settings{N: 1000}})
					})
				}
			}
		})
	}
}

// BenchmarkSGLDIteration is one iteration of buffered PF-SGLD on the SVM
// (S = 40, B = 10, N = 1000) through sgmcmc.Sampler; compare it with
// BenchmarkGradient/svm/S=40/B=10/N=1000 for the sampler's overhead.
func BenchmarkSGLDIteration(b *testing.B) {
	m, u, y := benchModel(b, "svm", 1000)
	e, err := gradient.New(m, ssm.Dataset{Sequences: []ssm.Sequence{y}}, gradient.Settings{Subsequencer: gradient.Subsequencer{S: 40, B: 10}, PF: pf.Settings{N: 1000}})
	if err != nil {
		b.Fatal(err)
	}
	s := sgmcmc.NewSampler(e, &sgmcmc.SGLD{}, u, sgmcmc.Constant(1e-6), rand.New(rand.NewPCG(1, 2)))
	if err := s.Step(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Step(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
