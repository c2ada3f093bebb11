package sgmcmc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// slowLGSSM is the scalar LGSSM whose exact scorer takes 10 ms
// longer per window: a stand-in for an expensive model.
type slowLGSSM struct{ models.LGSSM }

func (m slowLGSSM) ExactScore(grad, u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	time.Sleep(10 * time.Millisecond)
	return m.LGSSM.ExactScore(grad, u, seq, w)
}

// TestFitBudgetStopsPreparation: MaxTime bounds the preparation as well
// as the sampling. A model whose scorer is slow spends a 300 ms budget
// within its preparation, and Fit returns the budget's error at the
// deadline (0.30 s), not when the preparation ends (6.0 s when the
// budget was checked only then). The test allows 3 s past the deadline
// for a loaded machine.
func TestFitBudgetStopsPreparation(t *testing.T) {
	if testing.Short() {
		t.Skip("a fit")
	}
	data := lgssmSim(t)
	const budget = 300 * time.Millisecond
	start := time.Now()
	_, err := sgmcmc.Fit(context.Background(), slowLGSSM{}, data, sgmcmc.FitSettings{Seed: 1, KSDDraws: -1, MaxTime: budget})
	took := time.Since(start)
	t.Logf("%v budget: returned after %v: %v", budget, took, err)
	if err == nil || !strings.Contains(err.Error(), "the time budget (MaxTime 300ms) was spent by the preparation") {
		t.Fatalf("err = %v, want the budget's error", err)
	}
	if took > budget+3*time.Second {
		t.Errorf("returned %v after a %v budget", took, budget)
	}
}
