package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestSmoothStates checks the exact state moments against the Kalman
// routines they are made of, used independently: the predictive
// densities sum to Kalman.LogLik, the smoothed moments are Kalman.Smooth's,
// and the filtered moments of state t are the smoothed moments of the last
// state of the window ending at row t (filtering is smoothing at the end).
func TestSmoothStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		m    interface {
			ssm.Model
			ssm.StateSmoother
		}
		u []float64
	}{
		{"lgssm", LGSSM{}, []float64{math.Atanh(0.9), math.Log(0.7), math.Log(0.5)}},
		{"lgssmd", LGSSMd{D: 2}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.m.Dims()
			u := tc.u
			if u == nil {
				var err error
				if u, err = (LGSSMd{D: 2}).Params([]float64{0.8, 0.1, -0.2, 0.5}, []float64{0.6, 0.4}, []float64{0.5, 0.7}); err != nil {
					t.Fatal(err)
				}
			}
			k, _ := tc.m.Bind(u)
			_, seq := ssm.Simulate(k, d, 60, rng)
			seq.Y[7*d.Obs] = math.NaN() // a missing component
			w := ssm.Window{Start: 5, End: 50, KeepStart: 10, KeepEnd: 40}
			n := w.KeepEnd - w.KeepStart + 1
			out := ssm.StateMoments{
				FilterMean: make([]float64, n*d.State), FilterVar: make([]float64, n*d.State),
				SmoothMean: make([]float64, n*d.State), SmoothVar: make([]float64, n*d.State),
				LogPred: make([]float64, w.End-w.Start),
			}
			ll, err := tc.m.SmoothStates(u, seq, w, out)
			if err != nil {
				t.Fatal(err)
			}
			var kal Kalman
			switch m := tc.m.(type) {
			case LGSSM:
				kal, _ = m.Kalman(u)
			case LGSSMd:
				kal, _ = m.Kalman(u)
			}
			ref, err := kal.LogLik(seq, w.Start, w.End)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, v := range out.LogPred {
				sum += v
			}
			if math.Abs(ll-ref) > 1e-9 || math.Abs(sum-ref) > 1e-9 {
				t.Errorf("log-likelihood %v, sum of LogPred %v, Kalman.LogLik %v", ll, sum, ref)
			}
			sm, err := kal.Smooth(seq, w.Start, w.End)
			if err != nil {
				t.Fatal(err)
			}
			D := d.State
			for i := range n {
				slot := w.KeepStart - w.Start + i
				for c := range D {
					if math.Abs(out.SmoothMean[i*D+c]-sm.MeanAt(slot)[c]) > 1e-12 || math.Abs(out.SmoothVar[i*D+c]-sm.CovAt(slot)[c*D+c]) > 1e-12 {
						t.Fatalf("state %d component %d: smoothed %v, %v; Kalman.Smooth %v, %v", w.KeepStart+i, c,
							out.SmoothMean[i*D+c], out.SmoothVar[i*D+c], sm.MeanAt(slot)[c], sm.CovAt(slot)[c*D+c])
					}
				}
				// Filtering law of state t = smoothing law of the last state
				// of rows [Start, t).
				st := w.KeepStart + i
				if st == w.Start {
					continue
				}
				f, err := kal.Smooth(seq, w.Start, st)
				if err != nil {
					t.Fatal(err)
				}
				last := st - w.Start
				for c := range D {
					if math.Abs(out.FilterMean[i*D+c]-f.MeanAt(last)[c]) > 1e-10 || math.Abs(out.FilterVar[i*D+c]-f.CovAt(last)[c*D+c]) > 1e-10 {
						t.Fatalf("state %d component %d: filtered %v, %v; end of window %v, %v", st, c,
							out.FilterMean[i*D+c], out.FilterVar[i*D+c], f.MeanAt(last)[c], f.CovAt(last)[c*D+c])
					}
				}
			}
		})
	}
}
