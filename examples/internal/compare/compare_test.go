package compare

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestStore checks the doubling thinning: at most cap draws, evenly spaced
// by a power-of-two stride, covering the run to its end.
func TestStore(t *testing.T) {
	const cap, n = 64, 10000
	s := newStore(2, 1, cap)
	if err := s.Init(sgmcmc.Info{}); err != nil {
		t.Fatal(err)
	}
	u := []float64{0}
	for k := range n {
		u[0] = float64(k)
		for c := range 2 {
			if err := s.Record(&sgmcmc.Draw{Chain: c, Iter: k, U: u, Elapsed: time.Duration(k)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for c := range 2 {
		st := &s.chains[c]
		if len(st.iter) > cap || len(st.iter) < cap/2 {
			t.Errorf("chain %d keeps %d draws, want in [%d, %d]", c, len(st.iter), cap/2, cap)
		}
		for i, it := range st.iter {
			if it != i*st.stride || st.u[i] != float64(it) {
				t.Fatalf("draw %d: iteration %d, value %v, stride %d", i, it, st.u[i], st.stride)
			}
		}
		if last := st.iter[len(st.iter)-1]; last < n-st.stride {
			t.Errorf("last kept iteration %d, run ended at %d (stride %d)", last, n-1, st.stride)
		}
	}
}

func TestEvenly(t *testing.T) {
	for _, c := range []struct {
		n, k int
		want []int
	}{
		{5, 10, []int{0, 1, 2, 3, 4}},
		{10, 4, []int{0, 3, 6, 9}},
		{10, 1, []int{9}},
	} {
		got := evenly(c.n, c.k)
		if len(got) != len(c.want) {
			t.Fatalf("evenly(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("evenly(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
				break
			}
		}
	}
}

func TestMeanSD(t *testing.T) {
	m := meanSD([]float64{1, 2, 3, 4})
	if m.Mean != 2.5 || math.Abs(m.SD-math.Sqrt(5.0/3)) > 1e-15 {
		t.Errorf("meanSD = %+v", m)
	}
	if s := (MeanSD{0.644, 0.171}).String(); s != "0.64 (0.17)" {
		t.Errorf("String = %q", s)
	}
}

// offset adds a constant to the exact gradient, shifting the stationary law
// of SGLD by about offset/curvature: a deliberately biased estimator.
type offset struct {
	e     sgmcmc.Estimator
	shift float64
}

func (o offset) Grad(ctx context.Context, g, u []float64, rng *rand.Rand) (float64, error) {
	lp, err := o.e.Grad(ctx, g, u, rng)
	g[0] += o.shift
	return lp, err
}

// TestRun compares the exact-gradient SGLD with a biased one on an LGSSM
// with T = 500. The exact method's posterior mean of φ must be within a few
// posterior sd of the truth; the biased one (its gradient in atanh φ
// shifted by a constant worth about 3 posterior sd) must be visibly shifted
// and have the larger KSD, which is what KSD is for.
func TestRun(t *testing.T) {
	var m models.LGSSM
	u0, _ := m.Params(0.9, 0.7, 1)
	_, y, err := m.Simulate(500, u0, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{y}}
	exact := func() (sgmcmc.Estimator, error) { return FullGradient(m, data, pf.Settings{}, true) }
	// Posterior sd of atanh φ ≈ 0.1 at T = 500, precision ≈ 100: a shift of
	// 30 moves the mean by ≈ 0.3 in atanh φ, about 3 sd.
	methods := []Method{
		{Name: "exact", New: func(int) (sgmcmc.Estimator, error) { return exact() }},
		{Name: "biased", New: func(int) (sgmcmc.Estimator, error) {
			e, err := exact()
			return offset{e, 30}, err
		}},
	}
	var progress bytes.Buffer
	res, err := Run(context.Background(), methods, Settings{
		Model: m, Eps: []float64{0.1, 0.01}, Obs: 500, Iterations: 6000, Chains: 2, Seed: 1,
		Init:     func(_ int, u []float64) error { copy(u, u0); return nil },
		KSDDraws: 200, NewScore: exact, Truth: []float64{0.9, 0.7, 1}, TracePoints: 10,
		Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(progress.String(), "\n"); n != 4 {
		t.Errorf("%d progress lines, want 4", n)
	}
	ex, bi := res.Methods[0].Selected(), res.Methods[1].Selected()
	for _, c := range ex.Chains {
		if c.Err != nil || c.Iterations != 6000 || c.KSDDraws != 200 {
			t.Fatalf("exact chain: %+v", c)
		}
		if d := math.Abs(c.Mean[0] - 0.9); d > 5*c.SD[0] {
			t.Errorf("exact chain: mean of phi %.4f (sd %.4f), truth 0.9", c.Mean[0], c.SD[0])
		}
	}
	for k := range ex.Chains {
		t.Logf("chain %d: phi mean exact %.4f (sd %.4f) biased %.4f; log10 KSD_phi exact %.3f biased %.3f",
			k, ex.Chains[k].Mean[0], ex.Chains[k].SD[0], bi.Chains[k].Mean[0], ex.Chains[k].LogKSD[0], bi.Chains[k].LogKSD[0])
		if bi.Chains[k].Mean[0] <= ex.Chains[k].Mean[0]+ex.Chains[k].SD[0] {
			t.Errorf("chain %d: biased mean of phi %.4f not above exact %.4f + sd %.4f", k, bi.Chains[k].Mean[0], ex.Chains[k].Mean[0], ex.Chains[k].SD[0])
		}
		if bi.Chains[k].LogKSD[0] <= ex.Chains[k].LogKSD[0] {
			t.Errorf("chain %d: biased log10 KSD_phi %.3f not above exact %.3f", k, bi.Chains[k].LogKSD[0], ex.Chains[k].LogKSD[0])
		}
	}
	// The chains start at the truth, so the MSE trace of φ only has to stay
	// finite and end below (5 posterior sd)².
	mse := ex.MSE[0]
	if last := mse[len(mse)-1]; !(last >= 0) || last > 25*ex.Chains[0].SD[0]*ex.Chains[0].SD[0] {
		t.Errorf("final MSE of phi %v", last)
	}
	var tab bytes.Buffer
	if err := res.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "exact") || !strings.Contains(tab.String(), "biased") {
		t.Errorf("table:\n%s", tab.String())
	}
}

// TestFullGradient checks the multi-sequence full-data gradient against
// the sum of single-sequence exact gradients plus the prior gradient.
func TestFullGradient(t *testing.T) {
	var m models.LGSSM
	u, _ := m.Params(0.8, 0.5, 0.9)
	rng := rand.New(rand.NewPCG(1, 1))
	var data ssm.Dataset
	for _, T := range []int{30, 50, 40} {
		_, y, _ := m.Simulate(T, u, rng)
		data.Sequences = append(data.Sequences, y)
	}
	e, err := FullGradient(m, data, pf.Settings{}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 3)
	lp, err := e.Grad(context.Background(), got, u, rng)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 3)
	wantLP := m.LogPrior(want, u)
	for _, y := range data.Sequences {
		ll, err := m.ExactScore(want, u, y, ssm.Full(y.Len()))
		if err != nil {
			t.Fatal(err)
		}
		wantLP += ll
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-9*(1+math.Abs(want[i])) {
			t.Errorf("grad[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if math.Abs(lp-wantLP) > 1e-9*math.Abs(wantLP) {
		t.Errorf("log posterior %v, want %v", lp, wantLP)
	}
	// One sequence: the gradient package's own Full estimator.
	e1, err := FullGradient(m, ssm.Dataset{Sequences: data.Sequences[:1]}, pf.Settings{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e1.(*gradient.Estimator); !ok {
		t.Errorf("single sequence: %T, want *gradient.Estimator", e1)
	}
}

func TestSettingsErrors(t *testing.T) {
	var m models.LGSSM
	ok := Settings{Model: m, Eps: []float64{0.1}, Obs: 10, Iterations: 1,
		Init:     func(int, []float64) error { return nil },
		NewScore: func() (sgmcmc.Estimator, error) { return nil, nil }}
	meth := []Method{{Name: "x", New: func(int) (sgmcmc.Estimator, error) { return nil, nil }}}
	for name, mod := range map[string]func(*Settings){
		"no budget": func(s *Settings) { s.Iterations = 0 },
		"bad eps":   func(s *Settings) { s.Eps = []float64{0} },
		"burn-in":   func(s *Settings) { s.BurnIn = 1 },
		"truth":     func(s *Settings) { s.Truth = []float64{1} },
		"no model":  func(s *Settings) { s.Model = nil },
	} {
		s := ok
		mod(&s)
		if _, err := Run(context.Background(), meth, s); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Run(context.Background(), nil, ok); err == nil {
		t.Error("no methods: no error")
	}
}
