package sgmcmc_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
)

// Sample N(2, 0.5²) with SGLD on four parallel chains, using a noisy gradient
// estimator, and summarise the in-memory trace.
func ExampleRun() {
	const mu, s2 = 2.0, 0.25
	est := sgmcmc.EstimatorFunc(func(_ context.Context, grad, u []float64, rng *rand.Rand) (float64, error) {
		grad[0] = -(u[0]-mu)/s2 + 0.1*rng.NormFloat64() // exact gradient plus noise
		return -(u[0] - mu) * (u[0] - mu) / (2 * s2), nil
	})
	tr := &sgmcmc.Trace{}
	res, err := sgmcmc.Run(context.Background(),
		func(int) sgmcmc.Estimator { return est },
		func(int) sgmcmc.Method { return &sgmcmc.SGLD{} },
		func(_ int, u []float64) error { u[0] = 0; return nil },
		1, sgmcmc.Settings{Iterations: 50000, BurnIn: 1000, Thin: 10, Schedule: sgmcmc.Constant(0.01), Chains: 4, Seed: 1, Recorder: tr})
	if err != nil {
		fmt.Println(err)
		return
	}
	var n, sum, sq float64
	for _, ch := range tr.Chains {
		for _, u := range ch.U {
			n++
			sum += u
			sq += u * u
		}
	}
	mean := sum / n
	fmt.Printf("status %v, %d draws per chain\n", res.Status, tr.Chains[0].Len())
	fmt.Printf("mean %.1f, sd %.1f\n", mean, math.Sqrt(sq/n-mean*mean))
	// Output:
	// status IterationLimit, 4900 draws per chain
	// mean 2.0, sd 0.5
}

// Find the mode with Adam, then take a few SGLD steps from it with the
// step-by-step Sampler.
func ExampleSampler() {
	est := sgmcmc.EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		grad[0], grad[1] = -(u[0] - 1), -4*(u[1]+3) // N((1, −3), diag(1, 1/4))
		return 0, nil
	})
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	opt := sgmcmc.NewSampler(est, &sgmcmc.Adam{}, []float64{0, 0}, sgmcmc.Constant(0.05), rng)
	for opt.Iter() < 2000 {
		if err := opt.Step(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Printf("mode %.3f\n", opt.U())
	smp := sgmcmc.NewSampler(est, &sgmcmc.SGLD{}, opt.U(), sgmcmc.Constant(1e-3), rng)
	for smp.Iter() < 10 {
		if err := smp.Step(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("iterations:", smp.Iter())
	// Output:
	// mode [1.000 -3.000]
	// iterations: 10
}

// A warm start: 300 Adam steps climb from u = 40 to the mode of a N(3, 1)
// target, then SGLD samples; the burn-in drops the Adam iterates.
func ExampleWarmStart() {
	target := sgmcmc.EstimatorFunc(func(_ context.Context, grad, u []float64, _ *rand.Rand) (float64, error) {
		grad[0] = -(u[0] - 3)
		return -0.5 * (u[0] - 3) * (u[0] - 3), nil
	})
	const warm = 300
	trace := &sgmcmc.Trace{}
	_, err := sgmcmc.Run(context.Background(),
		func(int) sgmcmc.Estimator { return target },
		func(int) sgmcmc.Method {
			return &sgmcmc.WarmStart{Steps: warm, Optimizer: &sgmcmc.Adam{}, Sampler: &sgmcmc.SGLD{}}
		},
		func(_ int, u []float64) error { u[0] = 40; return nil }, 1,
		sgmcmc.Settings{Iterations: warm + 200000, BurnIn: warm, Seed: 1, Recorder: trace,
			Schedule: sgmcmc.Phased{Steps: warm, First: sgmcmc.Constant(0.5), Then: sgmcmc.Constant(0.05)}})
	if err != nil {
		panic(err)
	}
	u := trace.Chains[0].U
	mean := 0.0
	for _, v := range u {
		mean += v / float64(len(u))
	}
	fmt.Printf("%d draws, mean %.1f\n", len(u), mean)
	// Output:
	// 200000 draws, mean 3.0
}
