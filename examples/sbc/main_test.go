package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

func TestThinIndices(t *testing.T) {
	idx, err := thinIndices(1000, 99)
	if err != nil {
		t.Fatal(err)
	}
	if len(idx) != 99 || idx[0] != 5 || idx[98] != 994 {
		t.Fatalf("thinIndices(1000, 99) = %v…%v (len %d), want 5…994", idx[:3], idx[len(idx)-3:], len(idx))
	}
	for j := 1; j < len(idx); j++ {
		if d := idx[j] - idx[j-1]; d != 10 && d != 11 {
			t.Fatalf("gap %d between indices %d and %d, want 10 or 11 (1000/99 = 10.1)", d, j-1, j)
		}
	}
	if idx, err := thinIndices(99, 99); err != nil || !slices.Equal(idx, func() []int {
		s := make([]int, 99)
		for i := range s {
			s[i] = i
		}
		return s
	}()) {
		t.Fatalf("thinIndices(99, 99) = %v, %v: want every draw", idx, err)
	}
	for _, c := range [][2]int{{98, 99}, {10, 0}, {0, 5}} {
		if _, err := thinIndices(c[0], c[1]); err == nil {
			t.Errorf("thinIndices(%d, %d): no error", c[0], c[1])
		}
	}
}

func TestRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	draws := make([]float64, 99)
	for i := range draws {
		draws[i] = float64(i) // 0..98, shuffled below: the rank does not depend on order
	}
	rng.Shuffle(len(draws), func(i, j int) { draws[i], draws[j] = draws[j], draws[i] })
	for _, c := range []struct {
		truth float64
		want  int
	}{{-1, 0}, {0.5, 1}, {49.5, 50}, {98.5, 99}, {1e9, 99}} {
		if got := rank(c.truth, draws, rng); got != c.want {
			t.Errorf("rank(%g) = %d, want %d", c.truth, got, c.want)
		}
	}
	// A tie counts as below with probability ½: truth 10 among 0..98 has
	// rank 10 or 11, each about half of the time.
	n11 := 0
	const n = 4000
	for range n {
		switch r := rank(10, draws, rng); r {
		case 11:
			n11++
		case 10:
		default:
			t.Fatalf("rank of a tie = %d, want 10 or 11", r)
		}
	}
	// Binomial(4000, ½): sd 31.6; 5 sd.
	if math.Abs(float64(n11)-n/2) > 5*math.Sqrt(n)/2 {
		t.Errorf("ties counted below %d times of %d, want about half", n11, n)
	}
}

func TestBinCounts(t *testing.T) {
	c, err := binCounts([]int{0, 9, 10, 99, 55, 50}, 99, 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 1, 0, 0, 0, 2, 0, 0, 0, 1}; !slices.Equal(c, want) {
		t.Errorf("binCounts = %v, want %v", c, want)
	}
	if _, err := binCounts([]int{1}, 99, 7); err == nil {
		t.Error("7 bins for 100 ranks: no error")
	}
	if _, err := binCounts([]int{100}, 99, 10); err == nil {
		t.Error("rank 100 with L = 99: no error")
	}
}

func TestChiSquare(t *testing.T) {
	// Equal counts: statistic 0, p = 1.
	if s, p := chiSquare([]int{7, 7, 7, 7}); s != 0 || p != 1 {
		t.Errorf("equal counts: chi2 %g, p %g; want 0, 1", s, p)
	}
	// A known quantile: the 0.95 quantile of chi2 with 9 df is 16.919.
	// Counts (10+d_i) with sum d_i = 0 and sum d_i² = 169.19 are not
	// integers, so test the survival function where the statistic is exact:
	// counts {20,0,10,...,10} over 10 bins of expectation 10 give 20.
	s, p := chiSquare([]int{20, 0, 10, 10, 10, 10, 10, 10, 10, 10})
	if s != 20 {
		t.Errorf("chi2 = %g, want 20", s)
	}
	if want := (distuv.ChiSquared{K: 9}).Survival(20); math.Abs(p-want) > 1e-15 || math.Abs(p-0.01791) > 1e-4 {
		t.Errorf("p = %g, want %g (0.0179)", p, want)
	}
	if p := (distuv.ChiSquared{K: 9}).Survival(16.919); math.Abs(p-0.05) > 1e-4 {
		t.Errorf("chi2_9 survival at 16.919 = %g, want 0.05", p)
	}

	// Uniform ranks 0..99 for 100 replications from a fixed generator:
	// under uniformity p is uniform, so p < 0.001 has probability 0.001.
	rng := rand.New(rand.NewPCG(3, 4))
	uni := make([]int, 100)
	for i := range uni {
		uni[i] = rng.IntN(100)
	}
	c, _ := binCounts(uni, 99, 10)
	if _, p := chiSquare(c); p < 1e-3 {
		t.Errorf("uniform ranks %v: p = %g, want not tiny", c, p)
	}
	// Ranks from the posterior's lower half only (a posterior shifted up by
	// about its sd): 100 ranks in 5 of 10 bins, chi2 = 100, p ≈ 1.6e-17.
	biased := make([]int, 100)
	for i := range biased {
		biased[i] = rng.IntN(50)
	}
	c, _ = binCounts(biased, 99, 10)
	if s, p := chiSquare(c); p >= 1e-6 {
		t.Errorf("biased ranks %v: chi2 %g, p = %g, want < 1e-6", c, s, p)
	}
	// The ∪ shape of an overdispersed-truth (too narrow) posterior: half the
	// ranks at the extremes.
	narrow := make([]int, 100)
	for i := range narrow {
		narrow[i] = rng.IntN(100)
		if i%2 == 0 {
			narrow[i] = 99 * (i / 2 % 2) // 0 or 99
		}
	}
	c, _ = binCounts(narrow, 99, 10)
	if s, p := chiSquare(c); p >= 1e-6 {
		t.Errorf("∪-shaped ranks %v: chi2 %g, p = %g, want < 1e-6", c, s, p)
	}
	if m, z := meanRank(narrow, 99); math.Abs(z) > 4 {
		t.Errorf("∪-shaped ranks: mean %g, z %g: symmetric, want |z| small", m, z)
	}
	if _, z := meanRank(biased, 99); z > -8 {
		t.Errorf("ranks in the lower half: z = %g, want strongly negative", z)
	}
}

func TestMeanRank(t *testing.T) {
	// Every rank 0..L once: mean exactly ½, z = 0.
	all := make([]int, 100)
	for i := range all {
		all[i] = i
	}
	if m, z := meanRank(all, 99); math.Abs(m-0.5) > 1e-12 || math.Abs(z) > 1e-9 {
		t.Errorf("meanRank(0..99) = %g, z %g; want 0.5, 0", m, z)
	}
	// The variance used for z is that of a uniform rank on 0..L: check
	// it against the empirical variance of 0..99 (population).
	v := 0.0
	for _, r := range all {
		d := float64(r)/99 - 0.5
		v += d * d
	}
	v /= 100
	want := (100.0*100 - 1) / (12 * 99 * 99)
	if math.Abs(v-want) > 1e-12 {
		t.Errorf("variance of rank/L: %g, formula %g", v, want)
	}
}

func TestBinomialBand(t *testing.T) {
	lo, hi := binomialBand(100, 10)
	b := distuv.Binomial{N: 100, P: 0.1}
	if !(b.CDF(float64(lo-1)) < 0.005 && b.CDF(float64(lo)) >= 0.005) {
		t.Errorf("lo = %d: CDF(lo-1) %g, CDF(lo) %g", lo, b.CDF(float64(lo-1)), b.CDF(float64(lo)))
	}
	if !(b.CDF(float64(hi-1)) < 0.995 && b.CDF(float64(hi)) >= 0.995) {
		t.Errorf("hi = %d: CDF(hi-1) %g, CDF(hi) %g", hi, b.CDF(float64(hi-1)), b.CDF(float64(hi)))
	}
	if lo != 3 || hi != 18 {
		t.Errorf("99%% band of Binomial(100, 0.1) = [%d, %d], want [3, 18]", lo, hi)
	}
}

// TestDrawPrior checks that the draws of each coordinate of u follow the
// density the fit uses: the marginal of u_i, exp(log p_i(v(u)) + log|dv/du|)
// from the model's own prior (Marginal.LogDensity and Transform.Forward),
// integrated numerically to a CDF, against the empirical CDF of 4000
// draws (Kolmogorov–Smirnov; D > 1.95/√n has probability 0.001 under the
// null). The numerical integral must also be 1: the truncated Betas of
// GARCH are normalised over their truncation.
func TestDrawPrior(t *testing.T) {
	for _, name := range []string{"svm", "lgssm", "garch", "msv"} {
		s, err := modelSetup(name)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(11, 12))
		const n = 4000
		draws := make([][]float64, len(s.prior.Marginals))
		for range n {
			theta, u, err := drawPrior(s.prior, rng)
			if err != nil {
				t.Fatal(err)
			}
			for i := range u {
				if v, _, _, _ := s.prior.Transforms[i].Forward(u[i]); math.Abs(v-theta[i]) > 1e-9*math.Max(1, math.Abs(v)) {
					t.Fatalf("%s: u %v does not map to theta %v", name, u, theta)
				}
				draws[i] = append(draws[i], u[i])
			}
		}
		for i, m := range s.prior.Marginals {
			const lo, hi, k = -25.0, 25.0, 200001
			h := (hi - lo) / (k - 1)
			cdf := make([]float64, k)
			prev := 0.0
			for j := range k {
				u := lo + float64(j)*h
				v, _, logJ, _ := s.prior.Transforms[i].Forward(u)
				lp, _ := m.LogDensity(v)
				d := math.Exp(lp + logJ)
				if math.IsNaN(d) {
					d = 0
				}
				if j > 0 {
					cdf[j] = cdf[j-1] + 0.5*h*(prev+d)
				}
				prev = d
			}
			if total := cdf[k-1]; math.Abs(total-1) > 1e-4 {
				t.Errorf("%s %s: prior density of u integrates to %g", name, s.fit.ParamNames()[i], total)
			}
			x := slices.Clone(draws[i])
			sort.Float64s(x)
			D := 0.0
			for j, u := range x {
				g := int(math.Round((u - lo) / h))
				g = min(max(g, 0), k-1)
				F := cdf[g]
				D = math.Max(D, math.Max(math.Abs(F-float64(j)/n), math.Abs(F-float64(j+1)/n)))
			}
			if crit := 1.95 / math.Sqrt(n); D > crit {
				t.Errorf("%s %s: KS distance %.4f between the draws and the fit's prior, above %.4f", name, s.fit.ParamNames()[i], D, crit)
			}
		}
	}
}

func TestDrawMarginalUnknown(t *testing.T) {
	if _, err := drawMarginal(models.Flat{}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a flat (improper) prior: no error")
	}
}

func TestBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"-model", "arma"},
		{"-T", "0"},
		{"-T", "-5"},
		{"-reps", "0"},
		{"-bins", "7"},
		{"-L", "0"},
		{"-chains", "-1"},
		{"extra"},
	} {
		var out, errb bytes.Buffer
		err := run(context.Background(), append(args, "-q", "-out", ""), &out, &errb)
		if err == nil {
			t.Errorf("%v: no error", args)
			continue
		}
		if strings.Contains(err.Error(), "panic") || out.Len() > 0 {
			t.Errorf("%v: error %v, output %q", args, err, out.String())
		}
	}
}

// TestEndToEnd runs three replications of the LGSSM at T = 100 with two
// chains and checks the JSON and the PNG: the structure, not the
// calibration (three replications say nothing about uniformity). The fits
// are shortened (200 kept iterations per chain, no 10,000-iteration
// minimum, 100 warm-up iterations, no KSD): at Fit's defaults the three
// take about a minute on a loaded 2-core machine.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("fits three series (several seconds)")
	}
	testFitSettings = func(s *sgmcmc.FitSettings) {
		s.Iterations, s.MinIterations, s.WarmUp, s.KSDDraws = 200, -1, 100, -1
	}
	defer func() { testFitSettings = nil }()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	start := time.Now()
	args := []string{"-model", "lgssm", "-T", "100", "-reps", "3", "-seed", "5", "-chains", "2", "-json", "-q", "-out", dir}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	t.Logf("3 replications in %v", time.Since(start))
	var rep struct {
		Params map[string]struct {
			P      *float64 `json:"p"`
			Ranks  []int    `json:"ranks"`
			Counts []int    `json:"counts"`
		} `json:"params"`
		Reps, Completed, Failed, Warned, L, Bins int
		Failures                                 []json.RawMessage
		Replications                             []struct {
			Rep   int       `json:"rep"`
			Theta []float64 `json:"theta"`
			Ranks []int     `json:"ranks"`
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out.String())
	}
	if rep.Reps != 3 || rep.Completed+rep.Failed != 3 || len(rep.Failures) != rep.Failed || rep.L != 99 || rep.Bins != 10 {
		t.Fatalf("reps %d, completed %d, failed %d (%d listed), L %d, bins %d", rep.Reps, rep.Completed, rep.Failed, len(rep.Failures), rep.L, rep.Bins)
	}
	if rep.Failed > 0 {
		t.Errorf("%d of 3 LGSSM fits failed: %s", rep.Failed, rep.Failures[0])
	}
	names := []string{"phi", "sigma", "tau"}
	if len(rep.Params) != len(names) {
		t.Fatalf("params %v, want %v", rep.Params, names)
	}
	for i, name := range names {
		pr, ok := rep.Params[name]
		if !ok {
			t.Fatalf("no parameter %q in %v", name, rep.Params)
		}
		if len(pr.Ranks) != rep.Completed || pr.P == nil || !(*pr.P >= 0 && *pr.P <= 1) {
			t.Errorf("%s: %d ranks for %d replications, p %v", name, len(pr.Ranks), rep.Completed, pr.P)
		}
		sum := 0
		for _, c := range pr.Counts {
			sum += c
		}
		if len(pr.Counts) != 10 || sum != rep.Completed {
			t.Errorf("%s: counts %v", name, pr.Counts)
		}
		for j, r := range pr.Ranks {
			if r < 0 || r > 99 || rep.Replications[j].Ranks[i] != r {
				t.Errorf("%s: rank %d of replication %d (replication's own: %v)", name, r, j, rep.Replications[j].Ranks)
			}
		}
	}
	// Replication r's θ is a function of the seed and r alone.
	rng := rand.New(rand.NewPCG(5, 2))
	s, _ := modelSetup("lgssm")
	theta, _, _ := drawPrior(s.prior, rng)
	if !slices.Equal(theta, rep.Replications[2].Theta) {
		t.Errorf("replication 2's theta %v, want %v from rand.NewPCG(5, 2)", rep.Replications[2].Theta, theta)
	}
	for _, f := range []string{"sbc_lgssm.png", "sbc_lgssm.json"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
