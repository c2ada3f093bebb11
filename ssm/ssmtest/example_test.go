package ssmtest

import (
	"fmt"
	"math/rand/v2"
)

// A model author checks the score, the transform and the prior of a model
// at a parameter value. toyLGSSM is the scalar linear Gaussian model defined
// in this package's tests; any ssm.Model works the same way.
func Example() {
	rng := rand.New(rand.NewPCG(1, 2))
	u := []float64{0.5, -0.2, 0.1} // (atanh φ, log σ, log τ)

	relErr, err := CheckScore(toyLGSSM{}, u, 50, rng)
	fmt.Println("score ok:", err == nil && relErr < ScoreTol)
	fmt.Println("transform:", CheckTransform(toyLGSSM{}, u))
	fmt.Println("prior:", CheckPrior(toyLGSSM{}, u))

	// A sign error in the score is caught.
	relErr, _ = CheckScore(toyLGSSM{scoreSignBug: true}, u, 50, rng)
	fmt.Println("buggy score ok:", relErr < ScoreTol)
	// Output:
	// score ok: true
	// transform: <nil>
	// prior: <nil>
	// buggy score ok: false
}
