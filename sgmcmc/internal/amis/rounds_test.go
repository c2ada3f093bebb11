package amis

import (
	"context"
	"testing"
)

// gaussAdapt runs Adapt on the standard normal in two dimensions from a
// Laplace approximation centred at mode with scale sd.
func gaussAdapt(t *testing.T, mode, sd float64) *Result {
	t.Helper()
	res, err := Adapt(context.Background(), Config{
		Mode: []float64{mode, 0}, Chol: []float64{sd, 0, 0, sd}, Seed: 1, Chains: 4,
		DrawStream: 1, LogPostStream: 2, StartStream: 3,
		LogPosteriors: func(_ context.Context, xs [][]float64, _ uint64) ([]float64, error) {
			lp := make([]float64, len(xs))
			for i, x := range xs {
				lp[i] = -0.5 * (x[0]*x[0] + x[1]*x[1])
			}
			return lp, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestAdaptRounds: the importance-sampling rounds end at MinRounds = 4
// when a proposal measures a holding time of at most GoodHold = 1.6
// (the Laplace approximation of a Gaussian is exact: its proposals hold
// about 1.2), go on while none does (a Laplace approximation 20 times
// too narrow: five rounds), up to MaxRounds = 8 (a mode 7 sds off, 0.3
// times as wide: holding time 8 after eight rounds); and Adapt gives up (nil)
// when the chosen proposal's ESS is below MinEfficiency of its draws (a
// mode 40 sds off, 0.3 times as wide: with MinEfficiency 0 it would
// return a proposal of holding time 16).
func TestAdaptRounds(t *testing.T) {
	n := Draws(2)
	good := gaussAdapt(t, 0, 1)
	if good == nil || good.Evals != MinRounds*n || good.Hold > GoodHold {
		t.Fatalf("exact Laplace approximation: %+v, want %d log posteriors and a holding time within %g", good, MinRounds*n, GoodHold)
	}
	t.Logf("exact Laplace approximation: holding time %.3f after %d rounds", good.Hold, good.Evals/n)
	narrow := gaussAdapt(t, 0, 0.05)
	if narrow == nil || narrow.Evals <= MinRounds*n || narrow.Evals > MaxRounds*n {
		t.Fatalf("narrow Laplace approximation: %+v, want more than %d rounds, at most %d", narrow, MinRounds, MaxRounds)
	}
	t.Logf("narrow Laplace approximation: holding time %.3f after %d rounds", narrow.Hold, narrow.Evals/n)
	if worst := gaussAdapt(t, 7, 0.3); worst == nil || worst.Evals != MaxRounds*n || worst.Hold <= GoodHold {
		t.Errorf("7 sds off, 0.3 wide: %+v, want %d rounds and a holding time above %g", worst, MaxRounds, GoodHold)
	}
	if far := gaussAdapt(t, 40, 0.3); far != nil {
		t.Errorf("a mode 40 sds off: proposal with holding time %.3g, want none (its ESS is below MinEfficiency %g of its draws)", far.Hold, MinEfficiency)
	}
	for _, c := range []struct {
		r    int
		hold float64
		want bool
	}{
		{2, 1.0, false}, {3, 1.6, true}, {3, 1.61, false}, {6, 5, false}, {7, 5, true},
	} {
		if got := roundsDone(c.r, c.hold); got != c.want {
			t.Errorf("roundsDone(%d, %g) = %v, want %v", c.r, c.hold, got, c.want)
		}
	}
}
