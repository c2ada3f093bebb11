package pf_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// gapCase is the reference LGSSM (φ = 0.9, σ = 0.7, τ = 1, T = 256) with
// 100 leading missing rows (an asset that starts trading late) and a gap
// of 70 missing rows, [150, 220).
func gapCase(t testing.TB) lgssmCase {
	c := newLGSSMCase(t)
	c.seq.Y = append([]float64(nil), c.seq.Y...)
	for i := 0; i < 100; i++ {
		c.seq.Y[i] = math.NaN()
	}
	for i := 150; i < 220; i++ {
		c.seq.Y[i] = math.NaN()
	}
	return c
}

// TestLongGaps checks windows holding long runs of missing rows against
// the Kalman smoother (ExactScore with the same rows missing), for every
// smoother and both proposals, within 4 SE of 20 replications (Shrinkage,
// biased by design, only where there is no data to be biased by):
//   - a window straddling the 70-row gap (observations on both sides),
//   - a window wholly inside the gap, whose exact statistic is 0 (the
//     expected transition score under the stationary law) and whose
//     log-likelihood is exactly 0,
//   - a window at the start of the sequence inside the leading gap that
//     keeps the initial term (again exactly 0 in expectation),
//   - a window ending just after the leading gap.
func TestLongGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("long gaps filtered by particles: long test")
	}
	c := gapCase(t)
	wins := []struct {
		name string
		w    ssm.Window
	}{
		{"straddle", ssm.Window{Start: 130, End: 240, KeepStart: 140, KeepEnd: 230}},
		{"inside", ssm.Window{Start: 160, End: 210, KeepStart: 165, KeepEnd: 205}},
		{"leading", ssm.Window{Start: 0, End: 60, KeepStart: 0, KeepEnd: 50}},
		{"leadingEdge", ssm.Window{Start: 0, End: 120, KeepStart: 0, KeepEnd: 110}},
	}
	sms := []pf.Smoother{pf.Ancestral, pf.Shrinkage, pf.ForwardOnly, pf.PaRIS}
	N, Nback, R := 2000, 200, 20
	if testing.Short() { // the race run: its point is the races, not the precision
		N, Nback = 300, 100
	}
	for wi, x := range wins {
		exactLL, want := c.exact(t, x.w)
		allMissing := !c.seq.Observed(x.w.Start, x.w.End)
		if allMissing {
			// Analytic: no data, stationary start, so every expected
			// transition score (and the initial score) is zero.
			for j, v := range want {
				if math.Abs(v) > 1e-9 {
					t.Errorf("%s: Kalman statistic component %d = %v, want 0", x.name, j, v)
				}
			}
			if exactLL != 0 {
				t.Errorf("%s: Kalman log-likelihood %v, want 0", x.name, exactLL)
			}
		}
		for si, sm := range sms {
			for pi, prop := range []pf.Proposal{pf.Bootstrap, pf.Guided} {
				name := x.name + "/" + sm.String() + "/" + prop.String()
				n := N
				if sm == pf.ForwardOnly || sm == pf.PaRIS {
					n = Nback // O(N²) and O(N·Ñ) per step
				}
				s := pf.Settings{N: n, Smoother: sm, Proposal: prop}
				stats, ll := replicate(t, s, c.k, c.d, c.seq, x.w, pf.Score(c.k, c.d), R, uint64(7000+100*wi+10*si+pi))
				z := 0.0
				if sm == pf.Shrinkage && !allMissing {
					// Shrinkage (λ = 0.95) is biased towards the filter's
					// expectation by design: only check it is finite.
					for _, st := range stats {
						for j, v := range st {
							if math.IsNaN(v) || math.IsInf(v, 0) {
								t.Errorf("%s: component %d = %v", name, j, v)
							}
						}
					}
				} else {
					z = checkAgainstZ(t, name, stats, want)
				}
				if allMissing {
					for r, v := range ll {
						if v != 0 {
							t.Errorf("%s: replication %d log-likelihood %v, want 0", name, r, v)
						}
					}
				}
				t.Logf("%s: exact %.4g, max |z| = %.2f", name, want, z)
			}
		}
	}
}

// checkAgainstZ is checkAgainst, treating a component that every
// replication gets exactly right (the τ score of a window with no
// observation is exactly 0) as z = 0.
func checkAgainstZ(t *testing.T, name string, stats [][]float64, want []float64) float64 {
	t.Helper()
	maxZ := 0.0
	col := make([]float64, len(stats))
	for j := range want {
		for r := range stats {
			col[r] = stats[r][j]
		}
		mean, se := meanSE(col)
		d := mean - want[j]
		if se == 0 {
			if math.Abs(d) > 1e-12 {
				t.Errorf("%s: component %d constant %.6g, exact %.6g", name, j, mean, want[j])
			}
			continue
		}
		z := d / se
		maxZ = math.Max(maxZ, math.Abs(z))
		if math.Abs(z) > 4 {
			t.Errorf("%s: component %d mean %.5g, exact %.5g, SE %.3g (z = %.2f)", name, j, mean, want[j], se, z)
		}
	}
	return maxZ
}

// TestGapAllocs: a window of only missing rows allocates nothing after
// the first Run either.
func TestGapAllocs(t *testing.T) {
	c := gapCase(t)
	w := ssm.Window{Start: 160, End: 210, KeepStart: 165, KeepEnd: 205}
	for _, sm := range []pf.Smoother{pf.Ancestral, pf.Shrinkage, pf.ForwardOnly, pf.PaRIS} {
		f := mustNew(t, pf.Settings{N: 100, Smoother: sm, Diagnostics: true})
		h := pf.Score(c.k, c.d)
		stat := make([]float64, c.d.Param)
		rng := rand.New(rand.NewPCG(1, 1))
		run := func() {
			if _, err := f.Run(context.Background(), c.k, c.d, c.seq, w, h, stat, rng); err != nil {
				t.Fatal(err)
			}
		}
		run()
		if a := testing.AllocsPerRun(3, run); a != 0 {
			t.Errorf("%v: %v allocs per Run", sm, a)
		}
	}
}
