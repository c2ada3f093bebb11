package gradient

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// Averaging Σ_{t∈S} w_t a_t over every subsequence with its probability
// must give Σ_t a_t exactly (unbiasedness of the weights), for arbitrary a.
func TestSubsequencerUnbiased(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, T := range []int{1, 7, 40, 101} {
		a := make([]float64, T)
		want := 0.0
		for i := range a {
			a[i] = rng.NormFloat64()
			want += a[i]
		}
		for _, q := range []Subsequencer{
			{S: 1, B: 0, Sampling: Uniform}, {S: min(5, T), B: 3, Sampling: Uniform},
			{S: T, B: 2, Sampling: Uniform}, {S: min(6, T), B: 1, Sampling: Strict},
			{S: min(40, T), B: 10, Sampling: Strict}, {Sampling: Full},
			// S > T: the whole sequence, once, weight 1.
			{S: T + 3, B: 2, Sampling: Uniform}, {S: 2*T + 1, B: 0, Sampling: Strict},
		} {
			if err := q.Check(T); err != nil {
				t.Fatal(err)
			}
			got, probSum := 0.0, 0.0
			q.Enumerate(T, func(w ssm.Window, p float64) {
				if err := w.Validate(T); err != nil {
					t.Fatalf("%+v T=%d: %v", q, T, err)
				}
				if w.Start != max(0, w.KeepStart-q.B) && q.Sampling != Full {
					t.Fatalf("buffer start %d for kept start %d, B=%d", w.Start, w.KeepStart, q.B)
				}
				probSum += p
				for t := w.KeepStart; t < w.KeepEnd; t++ {
					got += p * w.Weight(t) * a[t]
				}
			})
			if q.S > T && q.Sampling != Full {
				n := 0
				q.Enumerate(T, func(w ssm.Window, p float64) {
					n++
					if w.Start != 0 || w.End != T || w.KeepStart != 0 || w.KeepEnd != T || p != 1 || w.Weight(0) != 1 {
						t.Errorf("%+v T=%d: window %+v with probability %v, want the whole sequence, weight 1, probability 1", q, T, w, p)
					}
				})
				if n != 1 {
					t.Errorf("%+v T=%d: %d windows, want 1", q, T, n)
				}
			}
			if math.Abs(probSum-1) > 1e-12 || math.Abs(got-want) > 1e-10*(1+math.Abs(want)) {
				t.Errorf("%+v T=%d: Σ p = %v, E[Σ w a] = %v, want %v", q, T, probSum, got, want)
			}
		}
	}
}

// Uniform weights are (T−S+1)/cover(t): check a hand-computed case.
func TestSubsequencerUniformWeights(t *testing.T) {
	q := Subsequencer{S: 3, Sampling: Uniform}
	// T = 5: starts 0,1,2; cover(t) = 1,2,3,2,1.
	want := []float64{3, 1.5, 1, 1.5, 3}
	seen := map[int]bool{}
	q.Enumerate(5, func(w ssm.Window, _ float64) {
		for i := w.KeepStart; i < w.KeepEnd; i++ {
			if got := w.Weight(i); got != want[i] {
				t.Errorf("window %d: weight of t=%d is %v, want %v", w.KeepStart, i, got, want[i])
			}
			seen[i] = true
		}
	})
	if len(seen) != 5 {
		t.Fatalf("not every time covered: %v", seen)
	}
}

func TestSubsequencerDrawFrequencies(t *testing.T) {
	// Draw frequencies of each start are uniform within 4 binomial SEs.
	q := Subsequencer{S: 4, B: 2, Sampling: Uniform}
	const T, n = 10, 70000
	rng := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, T-q.S+1)
	var w ssm.Window
	for i := 0; i < n; i++ {
		q.Draw(&w, T, rng)
		counts[w.KeepStart]++
	}
	p := 1 / float64(len(counts))
	se := math.Sqrt(n * p * (1 - p))
	for s, c := range counts {
		if math.Abs(float64(c)-n*p) > 4*se {
			t.Errorf("start %d drawn %d times, want %v ± %v", s, c, n*p, 4*se)
		}
	}
}

func TestSubsequencerErrors(t *testing.T) {
	for _, c := range []struct {
		q Subsequencer
		T int
	}{
		{Subsequencer{S: 0, B: 0}, 10},
		{Subsequencer{S: 3, B: -1}, 10},
		{Subsequencer{S: 3, Sampling: Sampling(9)}, 10},
		{Subsequencer{Sampling: Full}, 0},
	} {
		if err := c.q.Check(c.T); !errors.Is(err, ErrSubsequence) {
			t.Errorf("%+v T=%d: err = %v, want ErrSubsequence", c.q, c.T, err)
		}
	}
}
