package ssm

import "math/rand/v2"

// Simulate draws x_0..x_T and y_1..y_T from a bound model. x is returned
// as a (T+1)×State row-major block (row 0 is x_0), y as a Sequence of
// length T.
func Simulate(k Kernel, d Dims, T int, rng *rand.Rand) (x []float64, y Sequence) {
	x = make([]float64, (T+1)*d.State)
	y = Sequence{Obs: d.Obs, Y: make([]float64, T*d.Obs)}
	k.SampleInitial(x[:d.State], rng)
	for t := 1; t <= T; t++ {
		cur, prev := x[t*d.State:(t+1)*d.State], x[(t-1)*d.State:t*d.State]
		k.SampleTransition(cur, prev, rng)
		k.SampleEmission(y.At(t-1), cur, rng)
	}
	return x, y
}
