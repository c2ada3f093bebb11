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
// SVM) on the DAX returns and MSV{D: 2} on the DAX and CAC 40 returns,
// there also where its posterior lies ("daxcac-ridge"); each with plain
// importance sampling over the whole series (Plain, Whole: what Fit
// uses), the resampling sweep (Whole) and plain importance sampling in
// blocks (Plain, the lag chosen per call). The ESS is the smallest over
// the sweep and the blocks.
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
	// Where the pair's chains go (φ 0.62, 0.50; σ 0.73, 0.72; ρ 0.998):
	// little persistence, the Gaussian model far from p(x | y).
	u3, err := m2.Params([]float64{0.62, 0.5}, []float64{0.73, 0.72}, []float64{0.998}, []float64{0.82, 0.92})
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
		{"msv2/daxcac-ridge", m2, u3, daxcac},
	} {
		k, err := c.model.Bind(c.u)
		if err != nil {
			b.Fatal(err)
		}
		for _, paths := range []int{32, 128} {
			for _, mode := range []string{"plain", "sweep", "blocks"} {
				b.Run(fmt.Sprintf("%s/M=%d/%s", c.name, paths, mode), func(b *testing.B) {
					const reps = 30
					g := make([]float64, len(c.u))
					var s, s2, ess float64
					runs := 0
					for b.Loop() {
						s, s2, ess = 0, 0, 0
						for r := range reps {
							l := pf.Laplace{Paths: paths, Seed: uint64(r), Plain: mode != "sweep", Whole: mode != "blocks"}
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
}

// BenchmarkLaplaceScore times one pf.Laplace score (M = 64, with its
// gradient) of a whole simulated series against the model's Kalman score
// where it has one: LGSSMd{D: d} on 2,000 rows (A = 0.7 I plus 0.1 on the
// superdiagonal, σ_i = 0.5, τ_i = 0.4; the series of
// sgmcmc.BenchmarkFitLaplace) for d = 2, 3, 5, MSV{D: 2} on 2,000 rows
// (the parameters of testdata/msv_sim2.csv) and MSV{D: 5} on 5,000 rows;
// and the log-likelihood alone with M = 128, the plain estimate and the
// resampling sweep the pseudo-marginal chains evaluate.
func BenchmarkLaplaceScore(b *testing.B) {
	type job struct {
		name  string
		model ssm.Model
		u     []float64
		seq   ssm.Sequence
	}
	var jobs []job
	for _, d := range []int{2, 3, 5} {
		lg := models.LGSSMd{D: d}
		A, sig, tau := make([]float64, d*d), make([]float64, d), make([]float64, d)
		for i := range d {
			A[i*d+i], sig[i], tau[i] = 0.7, 0.5, 0.4
			if i+1 < d {
				A[i*d+i+1] = 0.1
			}
		}
		u, err := lg.Params(A, sig, tau)
		if err != nil {
			b.Fatal(err)
		}
		_, y, err := lg.Simulate(2000, u, rand.New(rand.NewPCG(3, uint64(d))))
		if err != nil {
			b.Fatal(err)
		}
		jobs = append(jobs, job{fmt.Sprintf("lgssmd%d/T=2000", d), lg, u, y})
	}
	m2 := models.MSV{D: 2}
	u2, err := m2.Params([]float64{0.95, 0.9}, []float64{0.2, 0.3}, []float64{0.5}, []float64{1, 0.8})
	if err != nil {
		b.Fatal(err)
	}
	_, y2, err := m2.Simulate(2000, u2, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		b.Fatal(err)
	}
	jobs = append(jobs, job{"msv2/T=2000", m2, u2, y2})
	m5 := models.MSV{D: 5}
	u5, err := m5.Params([]float64{0.95, 0.9, 0.93, 0.92, 0.9}, []float64{0.2, 0.3, 0.25, 0.2, 0.3},
		[]float64{0.5, 0.3, 0.2, 0.1, 0.4, 0.3, 0.2, 0.3, 0.2, 0.4}, []float64{1, 0.8, 0.9, 1.1, 0.7})
	if err != nil {
		b.Fatal(err)
	}
	_, y5, err := m5.Simulate(5000, u5, rand.New(rand.NewPCG(1, 5)))
	if err != nil {
		b.Fatal(err)
	}
	jobs = append(jobs, job{"msv5/T=5000", m5, u5, y5})
	for _, j := range jobs {
		k, err := j.model.Bind(j.u)
		if err != nil {
			b.Fatal(err)
		}
		g := make([]float64, len(j.u))
		w := ssm.Full(j.seq.Len())
		b.Run(j.name+"/laplace", func(b *testing.B) {
			l := pf.Laplace{Paths: 64, Plain: true, Whole: true} // as Fit scores
			for b.Loop() {
				if _, err := l.Score(g, k, j.model.Dims(), j.seq, w); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(j.name+"/laplace/loglik/M=128", func(b *testing.B) {
			l := pf.Laplace{Paths: 128, Plain: true, Whole: true} // the chains' log posteriors
			for b.Loop() {
				if _, err := l.Score(nil, k, j.model.Dims(), j.seq, w); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The resampling sweep with a fresh seed per call, as the
		// pseudo-marginal chains evaluate it: from the prior mean's path,
		// from the mode at u (pf.Laplace.Start), and at parameters moved
		// 0.05 in each coordinate of u (−, 0, + in turn) from the mode at
		// u, to convergence and with StartSteps 2 (the chains start every
		// sweep from the mode at the preparation's u*, two steps).
		shifted := append([]float64(nil), j.u...)
		for i := range shifted {
			shifted[i] += 0.05 * float64(i%3-1)
		}
		ks, err := j.model.Bind(shifted)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name  string
			start bool
			k     ssm.Kernel
			steps int
		}{
			{"", false, k, 0},
			{"/start", true, k, 0},
			{"/start/shifted", true, ks, 0},
			{"/start/shifted/steps=2", true, ks, 2},
		} {
			l := pf.Laplace{Paths: 128, Whole: true, StartSteps: c.steps}
			if c.start {
				if _, err := l.Score(nil, k, j.model.Dims(), j.seq, w); err != nil {
					b.Fatal(err)
				}
				l.Start = l.LastMode()
			}
			b.Run(j.name+"/laplace/sweep/M=128"+c.name, func(b *testing.B) {
				for b.Loop() {
					l.Seed++
					if _, err := l.Score(nil, c.k, j.model.Dims(), j.seq, w); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if ex, ok := j.model.(ssm.ExactScorer); ok {
			b.Run(j.name+"/kalman", func(b *testing.B) {
				for b.Loop() {
					if _, err := ex.ExactScore(g, j.u, j.seq, w); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
