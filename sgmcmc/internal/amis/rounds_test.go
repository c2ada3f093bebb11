package amis

import (
	"context"
	"math/rand/v2"
	"testing"
)

// gaussAdapt runs Adapt on the standard normal in two dimensions from a
// Laplace approximation centred at mode with scale sd.
// It also returns the number of log posteriors Adapt asked for.
func gaussAdapt(t *testing.T, mode, sd float64) (*Result, int) {
	t.Helper()
	evals := 0
	res, err := Adapt(context.Background(), Config{
		Mode: []float64{mode, 0}, Chol: []float64{sd, 0, 0, sd}, Seed: 1, Chains: 4,
		DrawStream: 1, LogPostStream: 2, StartStream: 3,
		LogPosteriors: func(_ context.Context, xs [][]float64, _ uint64) ([]float64, error) {
			lp := make([]float64, len(xs))
			evals += len(xs)
			for i, x := range xs {
				lp[i] = -0.5 * (x[0]*x[0] + x[1]*x[1])
			}
			return lp, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, evals
}

// TestAdaptRounds: the importance-sampling rounds end at MinRounds = 4
// when a proposal measures a holding time of at most GoodHold = 1.6
// (the Laplace approximation of a Gaussian is exact: its proposals hold
// about 1.2), go on while none does (a Laplace approximation 20 times
// too narrow: five rounds), up to MaxRounds = 8 (a mode 7 sds off, 0.3
// times as wide: holding time 8 after eight rounds); and Adapt gives up (nil)
// when the chosen proposal's ESS is below MinEfficiency of its draws (a
// mode 40 sds off, 0.3 times as wide: with MinEfficiency 0 it would
// return a proposal of holding time 16), after all eight rounds, as one of
// its first three kept 2.5% of its draws. A log posterior with noise of sd 10 keeps
// about 1 of 64 in every round, so its rounds give up after
// GiveUpRounds = 3 (GiveUpEfficiency).
func TestAdaptRounds(t *testing.T) {
	n := Draws(2)
	good, _ := gaussAdapt(t, 0, 1)
	if good == nil || good.Evals != MinRounds*n || good.Hold > GoodHold {
		t.Fatalf("exact Laplace approximation: %+v, want %d log posteriors and a holding time within %g", good, MinRounds*n, GoodHold)
	}
	t.Logf("exact Laplace approximation: holding time %.3f after %d rounds", good.Hold, good.Evals/n)
	narrow, _ := gaussAdapt(t, 0, 0.05)
	if narrow == nil || narrow.Evals <= MinRounds*n || narrow.Evals > MaxRounds*n {
		t.Fatalf("narrow Laplace approximation: %+v, want more than %d rounds, at most %d", narrow, MinRounds, MaxRounds)
	}
	t.Logf("narrow Laplace approximation: holding time %.3f after %d rounds", narrow.Hold, narrow.Evals/n)
	if worst, _ := gaussAdapt(t, 7, 0.3); worst == nil || worst.Evals != MaxRounds*n || worst.Hold <= GoodHold {
		t.Errorf("7 sds off, 0.3 wide: %+v, want %d rounds and a holding time above %g", worst, MaxRounds, GoodHold)
	}
	if far, evals := gaussAdapt(t, 40, 0.3); far != nil || evals != MaxRounds*n {
		t.Errorf("a mode 40 sds off: proposal %+v after %d log posteriors, want none (its ESS is below MinEfficiency %g of its draws) after %d", far, evals, MinEfficiency, MaxRounds*n)
	}
	// A log posterior with noise of sd 10 at every point: every round's
	// ESS is about 1 of 64, so the rounds give up after three.
	evals := 0
	noisy, err := Adapt(context.Background(), Config{
		Mode: []float64{0, 0}, Chol: []float64{1, 0, 0, 1}, Seed: 1, Chains: 4,
		DrawStream: 1, LogPostStream: 2, StartStream: 3,
		LogPosteriors: func(_ context.Context, xs [][]float64, stream uint64) ([]float64, error) {
			rng := rand.New(rand.NewPCG(9, stream))
			lp := make([]float64, len(xs))
			evals += len(xs)
			for i, x := range xs {
				lp[i] = -0.5*(x[0]*x[0]+x[1]*x[1]) + 10*rng.NormFloat64()
			}
			return lp, nil
		},
	})
	if err != nil || noisy != nil || evals != GiveUpRounds*n {
		t.Errorf("noise of sd 10: %+v, %v after %d log posteriors, want no proposal after %d", noisy, err, evals, GiveUpRounds*n)
	}
	for _, c := range []struct {
		r    int
		ess  float64
		want bool
	}{
		{1, 0, false}, {2, GiveUpEfficiency*float64(n) - 0.01, true}, {2, GiveUpEfficiency * float64(n), false}, {7, 1, true},
	} {
		if got := hopeless(c.r, c.ess, n); got != c.want {
			t.Errorf("hopeless(%d, %g, %d) = %v, want %v", c.r, c.ess, n, got, c.want)
		}
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
