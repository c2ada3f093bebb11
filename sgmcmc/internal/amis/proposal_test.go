package amis

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestThinnedDraws: a refit of the independence proposal reads about
// RefitDraws = 1200 of the chains' draws (ExpectedHold is quadratic in
// them): 2399 draws are all kept, 2400 are thinned by 2 to 1200.
func TestThinnedDraws(t *testing.T) {
	for _, c := range []struct{ n, want int }{{2399, 2399}, {2400, 1200}, {12000, 1200}} {
		us, lps := make([][]float64, 1), make([][]float64, 1)
		us[0], lps[0] = make([]float64, c.n), make([]float64, c.n)
		if xs, _ := ThinnedDraws(us, lps, 1); len(xs) != c.want {
			t.Errorf("%d draws thinned to %d, want %d (RefitDraws %d)", c.n, len(xs), c.want, RefitDraws)
		}
	}
}

// normalPoints returns n draws of N(0, sd² I) in p dimensions around
// centres chosen at random, and the log density of N(0, I) around them
// (equally weighted) at each.
func normalPoints(n, p int, sd float64, centres [][]float64, seed uint64) (xs [][]float64, lps, lw []float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		c := centres[rng.IntN(len(centres))]
		x := make([]float64, p)
		for j := range x {
			x[j] = c[j] + sd*rng.NormFloat64()
		}
		l := math.Inf(-1)
		for _, m := range centres {
			s := 0.0
			for j := range x {
				s += (x[j] - m[j]) * (x[j] - m[j])
			}
			l = logAdd(l, -0.5*s/(sd*sd))
		}
		xs, lps, lw = append(xs, x), append(lps, l), append(lw, 0)
	}
	return xs, lps, lw
}

func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	m := math.Max(a, b)
	return m + math.Log(math.Exp(a-m)+math.Exp(b-m))
}

// TestBestProposalComponents: BestProposal fits mixtures of up to
// Components = 4 Student-t's. On a posterior of four well-separated
// modes in a row, 6 sds apart (400 equally weighted draws), it chooses
// four components, with a holding time of 1.37, below GoodHold = 1.6;
// with Components = 3 it would choose three at 2.0, with 2 two at 2.2
// (a component spread over two modes). More components cost EM fits and
// cross-validated holding times (quadratic in the points).
func TestBestProposalComponents(t *testing.T) {
	centres := [][]float64{{-9, 0}, {-3, 0}, {3, 0}, {9, 0}}
	xs, lps, lw := normalPoints(400, 2, 1, centres, 3)
	q, k, scale, _, hold := BestProposal(xs, lps, lw, make([]float64, 2), nil, 2)
	t.Logf("%d components at scale %g: holding time %.3f", k, scale, hold)
	if q == nil || k != 4 || !(hold < GoodHold) {
		t.Errorf("%d components, holding time %.3g: want 4 (Components %d) and below %g", k, hold, Components, GoodHold)
	}
}

// TestBestProposalDefensive: BestProposal's defensive component (weight
// Defensive = 0.1, scale DefensiveScale = 4 times the points' sd) covers
// the tails the points missed. Fitted to chains' draws 0.3 times as wide
// as the posterior N(0, I) in two dimensions (400 points), the
// proposal's expected holding time, measured on 2000 draws of the
// posterior, is 3.8; without the defensive part (Defensive = 0) it would
// be 8.0, with DefensiveScale = 2 5.8. Its price is the share Defensive
// of the proposals spent away from where the points are.
func TestBestProposalDefensive(t *testing.T) {
	xs, _, lw := normalPoints(400, 2, 0.3, [][]float64{{0, 0}}, 5)
	lps := make([]float64, len(xs))
	for i, x := range xs {
		lps[i] = -0.5 * (x[0]*x[0] + x[1]*x[1])
	}
	z := make([]float64, 2)
	q, _, scale, _, _ := BestProposal(xs, lps, lw, z, nil, 1)
	if q == nil {
		t.Fatal("no proposal")
	}
	ys, lpy, lwy := normalPoints(2000, 2, 1, [][]float64{{0, 0}}, 7)
	hold := ExpectedHold(q, ys, lpy, lwy, z)
	t.Logf("scale %g: holding time %.3f on the posterior's draws", scale, hold)
	if !(hold < 4.6) {
		t.Errorf("holding time %.3g on the posterior's draws, want below 4.6 (Defensive %g, DefensiveScale %g)", hold, Defensive, DefensiveScale)
	}
}

// TestBestProposalHighDim: above HighDim parameters BestProposal fits a
// single t (maxComponents): the four modes of TestBestProposalComponents
// in 13 dimensions (the other 11 coordinates standard normal; 800
// draws) get one component, which in two dimensions get four. It judges
// candidates on at most HoldPoints points per fold, spread evenly
// (evenly): with 4,000 draws of N(0, I) in 13 dimensions its single t
// (ν = 5, with the defensive part), at scale 1, holds an independence
// chain for 1.62 steps: under 2.
func TestBestProposalHighDim(t *testing.T) {
	if maxComponents(HighDim) != Components || maxComponents(HighDim+1) != 1 {
		t.Fatalf("maxComponents: %d at HighDim, %d above; want %d and 1", maxComponents(HighDim), maxComponents(HighDim+1), Components)
	}
	p := HighDim + 1
	centres := make([][]float64, 4)
	for i, c := range []float64{-9, -3, 3, 9} {
		centres[i] = make([]float64, p)
		centres[i][0] = c
	}
	xs, lps, lw := normalPoints(800, p, 1, centres, 3)
	if _, k, _, _, _ := BestProposal(xs, lps, lw, make([]float64, p), nil, 2); k != 1 {
		t.Errorf("four modes in %d dimensions: %d components, want 1", p, k)
	}
	xs, lps, lw = normalPoints(4000, p, 1, [][]float64{make([]float64, p)}, 4)
	q, k, scale, _, hold := BestProposal(xs, lps, lw, make([]float64, p), nil, 2)
	t.Logf("N(0, I) in %d dimensions, 4000 draws: %d component at scale %g, holding time %.3f", p, k, scale, hold)
	if q == nil || scale != 1 || !(hold < 2) {
		t.Errorf("N(0, I): scale %g, holding time %.3g, want 1 and below 2", scale, hold)
	}
	for _, c := range []struct{ n, m int }{{5, 10}, {10, 10}, {2000, HoldPoints}, {7, 3}} {
		idx := evenly(c.n, c.m)
		if len(idx) != min(c.n, c.m) || idx[0] != 0 || idx[len(idx)-1] >= c.n {
			t.Errorf("evenly(%d, %d) = %v", c.n, c.m, idx)
			continue
		}
		for i := 1; i < len(idx); i++ {
			if idx[i] <= idx[i-1] || c.n <= c.m && idx[i] != i {
				t.Errorf("evenly(%d, %d) = %v: not increasing, or not all indices", c.n, c.m, idx)
				break
			}
		}
	}
}

// TestBestProposalWorkers: the candidates fitted on several goroutines
// give the choice one worker makes, bit for bit (the same seed must give
// the same draws whatever Workers).
func TestBestProposalWorkers(t *testing.T) {
	xs, lps, lw := normalPoints(300, 3, 1, [][]float64{{-4, 0, 1}, {0, 0, 0}, {3, 2, 0}}, 7)
	q1, k1, s1, d1, h1 := BestProposal(xs, lps, lw, make([]float64, 3), nil, 1)
	for _, w := range []int{2, 3, 8} {
		q, k, s, d, h := BestProposal(xs, lps, lw, make([]float64, 3), nil, w)
		if k != k1 || s != s1 || d != d1 || h != h1 {
			t.Fatalf("workers %d: %d components, scale %g, defensive %g, hold %v; one worker: %d, %g, %g, %v", w, k, s, d, h, k1, s1, d1, h1)
		}
		z := make([]float64, 3)
		for _, x := range xs[:50] {
			if a, b := q.LogDensity(x, z), q1.LogDensity(x, z); a != b {
				t.Fatalf("workers %d: log density %v, one worker's %v", w, a, b)
			}
		}
	}
	t.Logf("%d components at scale %g, holding time %.3f", k1, s1, h1)
}
