package tmix

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distmv"
)

// testMixture is a two-component Student-t mixture in two dimensions.
func testMixture() *Mixture {
	return New([]float64{0.3, 0.7},
		[][]float64{{-1, 0.5}, {2, -1}},
		[][]float64{{1, 0, 0.4, 0.8}, {0.5, 0, -0.3, 1.5}})
}

// TestTMixtureDensity checks Mixture.LogDensity against gonum's
// multivariate Student-t (differences of log densities, which is what the
// importance weights and the Metropolis–Hastings ratios use) and
// Mixture.Draw against the mixture's exact mean and covariance
// (a t with ν = 5 and scale Σ has covariance 5/3 Σ), within 4 standard
// errors.
func TestTMixtureDensity(t *testing.T) {
	q := testMixture()
	exact := func(x []float64) float64 {
		s := 0.0
		for k := range q.Weight {
			l := q.Chol[k]
			sigma := mat.NewSymDense(2, []float64{l[0] * l[0], l[0] * l[2], l[0] * l[2], l[2]*l[2] + l[3]*l[3]})
			d, ok := distmv.NewStudentsT(q.Center[k], sigma, Nu, nil)
			if !ok {
				t.Fatal("gonum Student-t")
			}
			s += q.Weight[k] * math.Exp(d.LogProb(x))
		}
		return math.Log(s)
	}
	z := make([]float64, 2)
	pts := [][]float64{{0, 0}, {-1, 0.5}, {2, -1}, {5, 5}, {-7, 3}}
	for _, x := range pts[1:] {
		got := q.LogDensity(x, z) - q.LogDensity(pts[0], z)
		want := exact(x) - exact(pts[0])
		if math.Abs(got-want) > 1e-10 {
			t.Errorf("log q(%v) − log q(0) = %.12f, gonum %.12f", x, got, want)
		}
	}
	// Moments of draws.
	const n = 400000
	rng := rand.New(rand.NewPCG(3, 4))
	s := make([]float64, 2)
	x := make([]float64, 2)
	var m [2]float64
	var m2 [3]float64 // x0², x1², x0·x1
	var m4 [3]float64
	for range n {
		q.Draw(x, s, rng)
		m[0] += x[0]
		m[1] += x[1]
		v := [3]float64{x[0] * x[0], x[1] * x[1], x[0] * x[1]}
		for i := range v {
			m2[i] += v[i]
			m4[i] += v[i] * v[i]
		}
	}
	var wantM [2]float64
	var wantM2 [3]float64
	for k, w := range q.Weight {
		c, l := q.Center[k], q.Chol[k]
		s00, s01, s11 := l[0]*l[0], l[0]*l[2], l[2]*l[2]+l[3]*l[3]
		f := Nu / (Nu - 2)
		wantM[0] += w * c[0]
		wantM[1] += w * c[1]
		wantM2[0] += w * (f*s00 + c[0]*c[0])
		wantM2[1] += w * (f*s11 + c[1]*c[1])
		wantM2[2] += w * (f*s01 + c[0]*c[1])
	}
	for i := range m {
		mean := m[i] / n
		se := math.Sqrt((m2[i]/n - mean*mean) / n)
		if math.Abs(mean-wantM[i]) > 4*se {
			t.Errorf("draw: E x%d = %.4f, exact %.4f (SE %.4f)", i, mean, wantM[i], se)
		}
	}
	for i := range m2 {
		mean := m2[i] / n
		se := math.Sqrt((m4[i]/n - mean*mean) / n)
		t.Logf("draw: second moment %d: %.4f ± %.4f, exact %.4f", i, mean, se, wantM2[i])
		if math.Abs(mean-wantM2[i]) > 4*se {
			t.Errorf("draw: second moment %d = %.4f, exact %.4f (SE %.4f)", i, mean, wantM2[i], se)
		}
	}
}

// TestFitMixture fits two components to equally weighted draws of a known
// two-component Gaussian mixture (the model weighted EM fits) and checks
// the weights and centres within 4 standard errors.
func TestFitMixture(t *testing.T) {
	q := testMixture() // its weights, centres and scales, as Gaussians
	const n = 4000
	rng := rand.New(rand.NewPCG(5, 6))
	xs := make([][]float64, n)
	for i := range xs {
		k := 0
		if rng.Float64() >= q.Weight[0] {
			k = 1
		}
		a, b := rng.NormFloat64(), rng.NormFloat64()
		l, c := q.Chol[k], q.Center[k]
		xs[i] = []float64{c[0] + l[0]*a, c[1] + l[2]*a + l[3]*b}
	}
	fit := Fit(xs, make([]float64, n), 2)
	if fit == nil {
		t.Fatal("Fit failed")
	}
	// Match the fitted components to the true ones by their first centre
	// coordinate.
	order := []int{0, 1}
	if fit.Center[0][0] > fit.Center[1][0] {
		order = []int{1, 0}
	}
	for k, j := range order {
		w := fit.Weight[j]
		seW := math.Sqrt(q.Weight[k] * (1 - q.Weight[k]) / n)
		t.Logf("component %d: weight %.4f (exact %.2f ± %.4f), centre %.3f (exact %v)", k, w, q.Weight[k], seW, fit.Center[j], q.Center[k])
		if math.Abs(w-q.Weight[k]) > 4*seW {
			t.Errorf("component %d: weight %.4f, exact %.2f (SE %.4f)", k, w, q.Weight[k], seW)
		}
		for a := range 2 {
			l := q.Chol[k]
			v := []float64{l[0] * l[0], l[2]*l[2] + l[3]*l[3]}[a]
			se := math.Sqrt(v / (q.Weight[k] * n))
			if math.Abs(fit.Center[j][a]-q.Center[k][a]) > 4*se {
				t.Errorf("component %d: centre[%d] %.4f, exact %.2f (SE %.4f)", k, a, fit.Center[j][a], q.Center[k][a], se)
			}
		}
	}
}
