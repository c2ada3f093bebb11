package main

import (
	"fmt"
	"math"
)

// A StudentT model maps natural parameters to u and binds a kernel that
// evaluates densities on blocks of particles.
func ExampleStudentT() {
	m := NewStudentT(5)
	u, err := m.FromNatural(0.9, 0.5, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	k, _ := m.Bind(u)
	x := []float64{0, 1, 3} // three particles
	logw := make([]float64, 3)
	k.AddLogEmission(logw, []float64{0}, x)
	for i, lw := range logw {
		fmt.Printf("x = %v: p(y = 0 | x) = %.4f\n", x[i], math.Exp(lw))
	}
	// Output:
	// x = 0: p(y = 0 | x) = 0.3796
	// x = 1: p(y = 0 | x) = 0.2197
	// x = 3: p(y = 0 | x) = 0.0173
}
