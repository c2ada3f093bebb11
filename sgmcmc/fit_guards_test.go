package sgmcmc_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/internal/longtest"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestFitRejectsBadData: ±Inf (which memory-mapped data bring unchecked)
// and sequences with nothing observed are errors naming the place, before
// any work.
func TestFitRejectsBadData(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		y    []float64
		want string
	}{
		{[]float64{0.1, -0.2, math.Inf(-1), 0.3}, "sequence 0: ssm: invalid data: observation 2, component 0 is -Inf"},
		{[]float64{nan, nan, nan}, "sequence 0 has no observed values"},
	} {
		data := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: c.y}}}
		_, err := sgmcmc.Fit(context.Background(), models.SVM{}, data, sgmcmc.FitSettings{})
		if !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want ssm.ErrData containing %q", c.y, err, c.want)
		}
	}
}

// TestFitAbsurdCounts: counts that would exhaust memory are refused at
// once with an error naming them (Iterations = MaxInt and NoiseProbes =
// 10⁹ hung, deaf to a cancelled context).
func TestFitAbsurdCounts(t *testing.T) {
	data := lgssmSim(t)
	for name, set := range map[string]sgmcmc.FitSettings{
		"Iterations":  {Iterations: math.MaxInt},
		"NoiseProbes": {NoiseProbes: 1e9},
		"Chains":      {Chains: 1e6},
	} {
		_, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, data, set)
		if !errors.Is(err, sgmcmc.ErrSettings) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want ErrSettings naming it", name, err)
		}
	}
}

// TestFitShortSequence: a sequence shorter than S is one whole window and
// the other sequences keep S and B. Fit used to cut S and B to the
// shortest sequence: a 300-step LGSSM series plus one of a single
// observation ran with S = 1, B = 0 everywhere and gave φ 0.667 ± 0.265
// against 0.907 ± 0.031 for the 300 steps alone, without a warning. One
// more observation moves the posterior by a small fraction of its sd, so
// the two fits must agree to 0.25 sd in every mean and ×[0.85, 1.15] in
// every sd. The cheap chains stop at 2,000 iterations instead of 10,000
// (MinIterations): an ESS of several thousand leaves Monte Carlo errors of
// about 0.02 sd each.
func TestFitShortSequence(t *testing.T) {
	longtest.Skip(t, "two fits")
	t.Parallel() // a whole fit: it shares the cores with the other long fits
	y := lgssmSim(t).Sequences[0].Y
	ctx := context.Background()
	set := sgmcmc.FitSettings{Seed: 1, KSDDraws: -1, MinIterations: 2000}
	alone, err := sgmcmc.Fit(ctx, models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y[:300]}}}, set)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := sgmcmc.Fit(ctx, models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y[:300]}, {Obs: 1, Y: y[300:301]}}}, set)
	if err != nil {
		t.Fatal(err)
	}
	if pr := mixed.Preparation; pr.S != 40 {
		t.Errorf("S = %d with a one-step sequence, want 40", pr.S)
	}
	for i, a := range alone.Summary() {
		m := mixed.Summary()[i]
		z, r := (m.Mean-a.Mean)/a.SD, m.SD/a.SD
		t.Logf("%s: 300 steps %.4f ± %.4f, with a one-step sequence %.4f ± %.4f (z %.2f, sd ratio %.2f; ESS %.0f, %.0f)", a.Name, a.Mean, a.SD, m.Mean, m.SD, z, r, a.BulkESS, m.BulkESS)
		if math.Abs(z) > 0.25 || r < 0.85 || r > 1.15 {
			t.Errorf("%s: z %.2f, sd ratio %.2f", a.Name, z, r)
		}
	}
	if len(mixed.Warnings) > 0 {
		t.Errorf("warnings %q", mixed.Warnings)
	}
}

// TestFitDataWarnings: Fit reports what the model's ssm.DataChecker says
// of the data, first among the warnings (only examples/fit used to print
// them: a library user heard nothing), and stops at its error before any
// work: an LGSSM series in fractions under the default priors (which
// used to fit for minutes to a posterior reflecting the prior), while the
// same series with a prior of one's own fits, and a gross outlier is only
// a warning.
func TestFitDataWarnings(t *testing.T) {
	sim := lgssmSim(t).Sequences[0].Y
	y := slices.Clone(sim)
	for i := range y {
		y[i] *= 0.01
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y}}}
	var progress strings.Builder
	set := sgmcmc.FitSettings{Exact: true, Seed: 1, KSDDraws: -1, Iterations: 20, Chains: 2, Progress: &progress, Verbose: true}
	post, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, data, set)
	if post != nil || !errors.Is(err, ssm.ErrData) || !strings.Contains(err.Error(), "the data's sd is 0.0") ||
		!strings.Contains(err.Error(), "multiply by 100") {
		t.Fatalf("fractions under the default prior: posterior %v, error %v; want ErrData naming the sd and the cure", post != nil, err)
	}
	if strings.Contains(progress.String(), "warm-up") {
		t.Errorf("the fit did work before it stopped:\n%s", progress.String())
	}
	own := models.LGSSM{Prior: models.DefaultLGSSMPrior()}
	if _, err := sgmcmc.Fit(context.Background(), own, data, set); err != nil {
		t.Errorf("the same data under a prior of one's own: %v", err)
	}

	y = slices.Clone(sim)
	y[7] = 1e4
	data = ssm.Dataset{Sequences: []ssm.Sequence{{Obs: 1, Y: y}}}
	progress.Reset()
	post, err = sgmcmc.Fit(context.Background(), models.LGSSM{}, data, set)
	if err != nil {
		t.Fatal(err)
	}
	want, err := models.LGSSM{}.CheckData(data)
	if err != nil || len(want) != 1 || !strings.HasPrefix(want[0], "observation 7 (counting from 0) is 10000") {
		t.Fatalf("CheckData: %q, %v", want, err)
	}
	if len(post.Warnings) == 0 || post.Warnings[0] != want[0] {
		t.Errorf("warnings %q, want %q first", post.Warnings, want[0])
	}
	if !strings.Contains(progress.String(), "fit: warning: "+want[0]) {
		t.Errorf("the progress log does not carry the data warning")
	}
}

// cancelAt is a Recorder that cancels the fit's context when any chain
// reaches an iteration (Run's workers take the chains in an order of
// their own: the first to get there is in the first wave).
type cancelAt struct {
	iter   int
	cancel context.CancelFunc
}

func (c *cancelAt) Init(sgmcmc.Info) error { return nil }
func (c *cancelAt) Record(d *sgmcmc.Draw) error {
	if d.Iter >= c.iter {
		c.cancel()
	}
	return nil
}
func (c *cancelAt) Done(*sgmcmc.Result) error { return nil }

// TestFitGuards: settings that used to give a wrong answer, a run that
// ignored its budget or a late failure are refused at once or reported:
// an anchor filter smaller than the chains' (its particle bias moved φ by
// 5 posterior sds, R-hat ≤ 1.01); Thin beyond its bound and Iterations ×
// Thin overflowing (which read as "Iterations −4611686018427387904 is
// negative"); a checkpoint in a missing directory (which failed after the
// preparation); a 1 ns budget (a chain budget rounded to 0 meant none, and
// every planned iteration ran: now no draw, and an error that says why); an
// interrupt before some chains started
// (the summary used 2 of 4 chains with no word of the others).
func TestFitGuards(t *testing.T) {
	data := lgssmSim(t)
	ctx := context.Background()
	for name, c := range map[string]struct {
		set  sgmcmc.FitSettings
		want string
	}{
		"anchor":     {sgmcmc.FitSettings{AnchorParticles: 10}, "AnchorParticles = 10 is below the chains' N = 1000"},
		"thin":       {sgmcmc.FitSettings{Thin: 1e9}, "Thin = 1000000000 exceeds"},
		"overflow":   {sgmcmc.FitSettings{Iterations: 1 << 60, Thin: 100}, "overflows"},
		"checkpoint": {sgmcmc.FitSettings{Checkpoint: filepath.Join(t.TempDir(), "missing", "ck")}, "cannot write next to"},
	} {
		_, err := sgmcmc.Fit(ctx, models.LGSSM{}, data, c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, c.want)
		}
	}

	_, err := sgmcmc.Fit(ctx, models.LGSSM{}, data, sgmcmc.FitSettings{Exact: true, Seed: 1, KSDDraws: -1, MaxTime: time.Nanosecond})
	if err == nil || !strings.Contains(err.Error(), "the time budget (MaxTime 1ns) was spent by the preparation") {
		t.Errorf("1 ns budget: err = %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	post, err := sgmcmc.Fit(cctx, models.LGSSM{}, data, sgmcmc.FitSettings{Exact: true, Seed: 1, KSDDraws: -1, Chains: 4, Workers: 2,
		Recorder: &cancelAt{iter: 20, cancel: cancel}})
	if err != nil {
		t.Fatal(err)
	}
	// The first wave's other chain may not have recorded a draw yet.
	found := false
	for _, w := range post.Warnings {
		found = found || strings.HasPrefix(w, "chains [") && strings.HasSuffix(w, fmt.Sprintf(
			"have no draws (stopped before they started: 2 workers run the 4 chains in turn): the summary uses %d of 4 chains", len(post.U)))
	}
	if !found || len(post.U) > 2 {
		t.Errorf("interrupted in the first wave: %d chains, warnings %q", len(post.U), post.Warnings)
	}
	// The interrupt's warning counts the iterations the summary uses: the
	// chains' kept draws (it said the fewest iterations run while the
	// report said "109–150").
	lo, hi := math.MaxInt, 0
	for _, c := range post.U {
		lo, hi = min(lo, len(c)/3), max(hi, len(c)/3)
	}
	want := fmt.Sprintf("interrupted after %d iterations per chain", lo)
	if lo < hi {
		want = fmt.Sprintf("interrupted after %d–%d iterations per chain", lo, hi)
	}
	if !slices.ContainsFunc(post.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q: want one starting %q", post.Warnings, want)
	}
}
