package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pbsgmcmc/pbsgmcmc/models"
)

// Simulate a stochastic volatility series and compare its summary
// statistics with the stationary values.
func ExampleSVM_Simulate() {
	m := models.SVM{}
	phi, sigma, tau := 0.95, 0.3, 0.8
	u, err := m.Params(phi, sigma, tau)
	if err != nil {
		fmt.Println(err)
		return
	}
	x, y, err := m.Simulate(100000, u, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	var sx2, sy2 float64
	for t := 1; t < len(x); t++ {
		sx2 += x[t] * x[t]
		sy2 += y.Y[t-1] * y.Y[t-1]
	}
	T := float64(y.Len())
	v := sigma * sigma / (1 - phi*phi)
	fmt.Printf("T = %d\n", y.Len())
	fmt.Printf("var(x): %.2f (stationary %.2f)\n", sx2/T, v)
	fmt.Printf("E[y²]:  %.2f (stationary %.2f)\n", sy2/T, tau*tau*math.Exp(v/2))

	// Invalid parameters are errors naming the parameter.
	_, err = m.Params(1.2, sigma, tau)
	fmt.Println(err)
	// Output:
	// T = 100000
	// var(x): 0.92 (stationary 0.92)
	// E[y²]:  0.99 (stationary 1.02)
	// ssm: invalid parameter phi = 1.2: must lie in (-1, 1)
}
