package report_test

import (
	"fmt"
	"math/rand/v2"
	"os"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/report"
)

// Summarize pools the draws of several chains, here two chains of 500
// independent draws of two parameters, φ ~ N(0.9, 0.01²) and
// τ ~ N(1, 0.1²); the table prints as text (and encodes as JSON with
// json.Marshal).
func ExampleSummarize() {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := make([][]float64, 2)
	for c := range chains {
		for range 500 {
			chains[c] = append(chains[c], 0.9+0.01*rng.NormFloat64(), 1+0.1*rng.NormFloat64())
		}
	}
	tab, err := report.Summarize([]string{"phi", "tau"}, chains)
	if err != nil {
		fmt.Println(err)
		return
	}
	tab.WriteText(os.Stdout)
	// Output:
	// param    mean       sd     q05     q50     q95   ESS  R-hat
	//     phi  0.9003  0.00987  0.8843  0.9005  0.9164   990  0.999
	//     tau   1.004   0.0982  0.8482   1.004   1.163  1080  0.999
}
