package fmath_test

import (
	"fmt"
	"math"

	"github.com/pbsgmcmc/pbsgmcmc/internal/fmath"
)

func ExampleExpTo() {
	x := []float64{0, 1, -800, math.Log(3)}
	fmath.ExpTo(x, x)
	fmt.Printf("%.15g %.15g %v %.15g\n", x[0], x[1], x[2], x[3])
	// Output:
	// 1 2.71828182845905 0 3
}
