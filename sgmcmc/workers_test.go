package sgmcmc_test

import (
	"context"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// TestSameDrawsAnyWorkers: the same seed gives bit-identical draws with
// 1, 2 or 3 workers (what GOMAXPROCS sets by default): no sum, pass count
// or plan may depend on how many goroutines share the work.
func TestSameDrawsAnyWorkers(t *testing.T) {
	data := lgssmSim(t)
	var first *sgmcmc.Posterior
	for _, w := range []int{1, 2, 3} {
		post, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, data, sgmcmc.FitSettings{Seed: 4, Workers: w, KSDDraws: -1, Iterations: 200, Chains: 2})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = post
			continue
		}
		a, b := first.Summary(), post.Summary()
		for i := range a {
			if a[i].Mean != b[i].Mean || a[i].SD != b[i].SD || a[i].Q05 != b[i].Q05 {
				t.Errorf("%d workers: %s mean %v sd %v, with 1 worker %v and %v", w, b[i].Name, b[i].Mean, b[i].SD, a[i].Mean, a[i].SD)
			}
		}
	}
}
