package pf_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// BenchmarkLogLikSpread measures what a pseudo-marginal sampler would
// rest on: the spread (sd over 30 independent runs, metric "sd-loglik")
// of the particle filter's log-likelihood estimate over a whole real
// series, near its posterior mode, with its cost per run (ns/op is one
// run). The SVM on the DAX returns (T = 1,859; φ 0.94, σ 0.27, τ 0.87)
// with the bootstrap and the guided proposal, and MSV{D: 2} on the DAX
// and CAC 40 returns (the same φ, σ and τ for both, ρ 0.9; bootstrap,
// the kernel has no guided proposal). A pseudo-marginal chain mixes well
// when the sd is about 1.
func BenchmarkLogLikSpread(b *testing.B) {
	daxcac, err := ssm.ReadCSVFile("../testdata/dax_cac_returns.csv")
	if err != nil {
		b.Fatal(err)
	}
	dax := ssm.Sequence{Obs: 1, Y: make([]float64, daxcac.Len())}
	for t := range dax.Y {
		dax.Y[t] = daxcac.Y[2*t]
	}
	svmU, _ := models.SVM{}.Params(0.94, 0.27, 0.87)
	msv := models.MSV{D: 2}
	msvU, err := msv.Params([]float64{0.94, 0.94}, []float64{0.27, 0.27}, []float64{0.9}, []float64{0.87, 0.87})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		model ssm.Model
		u     []float64
		seq   ssm.Sequence
		prop  pf.Proposal
	}{
		{"svm/dax/bootstrap", models.SVM{}, svmU, dax, pf.Bootstrap},
		{"svm/dax/guided", models.SVM{Guided: true}, svmU, dax, pf.Guided},
		{"msv2/daxcac/bootstrap", msv, msvU, daxcac, pf.Bootstrap},
	} {
		k, err := c.model.Bind(c.u)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/N=%d", c.name, n), func(b *testing.B) {
				f := mustNew(b, pf.Settings{N: n, Proposal: c.prop})
				const reps = 30
				var s, s2 float64
				runs := 0
				for b.Loop() {
					s, s2 = 0, 0
					for r := range reps {
						res, err := f.Run(context.Background(), k, c.model.Dims(), c.seq, ssm.Full(c.seq.Len()), nil, nil, rand.New(rand.NewPCG(uint64(r), 7)))
						if err != nil {
							b.Fatal(err)
						}
						s += res.LogLik
						s2 += res.LogLik * res.LogLik
					}
					runs += reps
				}
				mean := s / reps
				b.ReportMetric(math.Sqrt((s2-reps*mean*mean)/(reps-1)), "sd-loglik")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/run")
			})
		}
	}
}

// BenchmarkLaplaceSpread is BenchmarkLogLikSpread's measurement for
// Laplace importance sampling (pf.Laplace) at M = 32 and 128 paths: the
// sd over 30 seeds of the log-likelihood estimate ("sd-loglik"), its
// importance weights' mean ESS ("ess"), and the cost of one run with the
// score ("ns/run"), for the same series and parameters: MSV{D: 1} (the
// SVM) on the DAX returns and MSV{D: 2} on the DAX and CAC 40 returns.
func BenchmarkLaplaceSpread(b *testing.B) {
	daxcac, err := ssm.ReadCSVFile("../testdata/dax_cac_returns.csv")
	if err != nil {
		b.Fatal(err)
	}
	dax := ssm.Sequence{Obs: 1, Y: make([]float64, daxcac.Len())}
	for t := range dax.Y {
		dax.Y[t] = daxcac.Y[2*t]
	}
	m1, m2 := models.MSV{D: 1}, models.MSV{D: 2}
	u1, err := m1.Params([]float64{0.94}, []float64{0.27}, nil, []float64{0.87})
	if err != nil {
		b.Fatal(err)
	}
	u2, err := m2.Params([]float64{0.94, 0.94}, []float64{0.27, 0.27}, []float64{0.9}, []float64{0.87, 0.87})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		model ssm.Model
		u     []float64
		seq   ssm.Sequence
	}{
		{"msv1/dax", m1, u1, dax},
		{"msv2/daxcac", m2, u2, daxcac},
	} {
		k, err := c.model.Bind(c.u)
		if err != nil {
			b.Fatal(err)
		}
		for _, paths := range []int{32, 128} {
			b.Run(fmt.Sprintf("%s/M=%d", c.name, paths), func(b *testing.B) {
				const reps = 30
				g := make([]float64, len(c.u))
				var s, s2, ess float64
				runs := 0
				for b.Loop() {
					s, s2, ess = 0, 0, 0
					for r := range reps {
						l := pf.Laplace{Paths: paths, Seed: uint64(r)}
						ll, err := l.Score(g, k, c.model.Dims(), c.seq, ssm.Full(c.seq.Len()))
						if err != nil {
							b.Fatal(err)
						}
						s += ll
						s2 += ll * ll
						ess += l.ESS / reps
					}
					runs += reps
				}
				mean := s / reps
				b.ReportMetric(math.Sqrt((s2-reps*mean*mean)/(reps-1)), "sd-loglik")
				b.ReportMetric(ess, "ess")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs), "ns/run")
			})
		}
	}
}
