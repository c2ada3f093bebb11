package sgmcmc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// simulated returns 300 observations of the linear Gaussian state space
// model x_t = φx_{t−1} + σε_t, y_t = x_t + τη_t at φ = 0.9, σ = 0.5,
// τ = 1, and the states x_0..x_300 (a fixed seed: the same series every
// time). Real data come from ssm.ReadCSVFile.
func simulated() (ssm.Sequence, []float64) {
	m := models.LGSSM{}
	u, err := m.Params(0.9, 0.5, 1)
	if err != nil {
		panic(err)
	}
	x, y, err := m.Simulate(300, u, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		panic(err)
	}
	return y, x
}

// quick keeps the examples to a second or two: 2 chains of 200 sampling
// iterations. Leave Iterations and Chains at 0 in real use: Fit then
// samples until every bulk and tail ESS reaches 400.
var quick = sgmcmc.FitSettings{Seed: 1, Chains: 2, Iterations: 200, KSDDraws: -1}

// Fit a state space model to a series and read the posterior of its
// parameters. Every zero field of FitSettings has a working default, and a
// fixed Seed gives the same draws on every run. post.WriteText(os.Stdout)
// prints the full table (mean, sd, quantiles, bulk and tail ESS, R-hat,
// MCSE); post.Warnings says what to check.
func ExampleFit() {
	y, _ := simulated()
	post, err := sgmcmc.Fit(context.Background(), models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{y}}, quick)
	if err != nil {
		fmt.Println(err)
		return
	}
	truth := []float64{0.9, 0.5, 1}
	for i, r := range post.Summary() {
		fmt.Printf("%-5s posterior mean %.1f (simulated at %.1f)\n", r.Name, r.Mean, truth[i])
	}
	fmt.Println("kept draws:", post.Draws())
	// Output:
	// phi   posterior mean 0.9 (simulated at 0.9)
	// sigma posterior mean 0.5 (simulated at 0.5)
	// tau   posterior mean 1.0 (simulated at 1.0)
	// kept draws: 400
}

// The smoothed states of a fitted model, integrated over the posterior:
// per time, the mean, sd and 5/50/95% quantiles of x_t given all the data.
// (For the SVM and GARCH, SmoothedVol holds the volatility too.)
func ExamplePosterior_States() {
	y, x := simulated()
	ctx := context.Background()
	post, err := sgmcmc.Fit(ctx, models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{y}}, quick)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := post.States(ctx, sgmcmc.StateSettings{Draws: 100, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := st.Smoothed[0] // the first (here the only) state component
	covered := 0
	for i := range b.Len() {
		if t := st.First + i; b.Q05[i] <= x[t] && x[t] <= b.Q95[i] {
			covered++
		}
	}
	fmt.Printf("states t = %d..%d over %d posterior draws\n", st.First, st.First+st.Len()-1, st.Draws)
	fmt.Printf("the 90%% bands cover the simulated x_t at %.1f of the times\n", float64(covered)/float64(b.Len()))
	// Output:
	// states t = 0..300 over 100 posterior draws
	// the 90% bands cover the simulated x_t at 0.9 of the times
}

// Forecast the next five observations after the end of the fitted series:
// the posterior predictive law of y_{T+h}.
func ExamplePosterior_Forecast() {
	y, _ := simulated()
	ctx := context.Background()
	post, err := sgmcmc.Fit(ctx, models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{y}}, quick)
	if err != nil {
		fmt.Println(err)
		return
	}
	fc, err := post.Forecast(ctx, 5, sgmcmc.StateSettings{Draws: 100, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	yb := fc.Obs[0] // observation component 0; fc.Volatility for the SVM and GARCH
	for h := 1; h <= fc.Horizon; h++ {
		fmt.Printf("y[T+%d]: sd %.1f\n", h, yb.SD[h-1])
	}
	// Output:
	// y[T+1]: sd 1.2
	// y[T+2]: sd 1.3
	// y[T+3]: sd 1.3
	// y[T+4]: sd 1.3
	// y[T+5]: sd 1.4
}

// Score held-out observations: fit all but the last 50 rows, then compute
// the log predictive density of those 50 under the posterior. A model with
// a higher score predicts the held-out rows better; fit each candidate to
// the same rows and compare.
func ExamplePosterior_PredictiveScore() {
	y, _ := simulated()
	T := y.Len()
	fitted := ssm.Sequence{Obs: 1, Y: y.Y[:T-50]}
	heldOut := ssm.Sequence{Obs: 1, Y: y.Y[T-50:]}
	ctx := context.Background()
	post, err := sgmcmc.Fit(ctx, models.LGSSM{}, ssm.Dataset{Sequences: []ssm.Sequence{fitted}}, quick)
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, err := post.PredictiveScore(ctx, heldOut, sgmcmc.StateSettings{Draws: 100, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("log predictive score of the last 50 rows: %.0f nats (%.1f per row)\n", sc.LogScore, sc.LogScore/50)
	fmt.Println("standard error below 1 nat:", sc.SE < 1 && !math.IsNaN(sc.SE))
	// Output:
	// log predictive score of the last 50 rows: -77 nats (-1.5 per row)
	// standard error below 1 nat: true
}
