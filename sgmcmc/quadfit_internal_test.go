package sgmcmc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc/internal/linalg"
)

// TestQuadDesign: 3 + 4p + p(p−1) distinct points within linalg.QuadFar, more
// than the 1 + 2p + p(p+1)/2 coefficients of a quadratic with cubes.
func TestQuadDesign(t *testing.T) {
	for p := 1; p <= 5; p++ {
		zs := linalg.QuadDesign(p)
		if want := 3 + 4*p + p*(p-1); len(zs) != want || len(zs) <= len(linalg.QuadFeatures(zs[0])) {
			t.Errorf("p = %d: %d points, want %d (more than %d coefficients)", p, len(zs), want, len(linalg.QuadFeatures(zs[0])))
		}
		seen := map[[5]float64]bool{}
		for _, z := range zs {
			var key [5]float64
			copy(key[:], z)
			if seen[key] || math.Sqrt(linalg.Dot(z, z)) > linalg.QuadFar+1e-12 {
				t.Errorf("p = %d: point %v repeated or beyond radius %v", p, z, linalg.QuadFar)
			}
			seen[key] = true
		}
	}
}

// quadAt is c + a·z + ½ zᵀBz + Σ d_k z_k³ (d nil: none).
func quadAt(c float64, a, b, d, z []float64) float64 {
	p := len(z)
	v := c + linalg.Dot(a, z)
	for k, dk := range d {
		v += dk * z[k] * z[k] * z[k]
	}
	for i := range p {
		for j := range p {
			v += 0.5 * z[i] * b[i*p+j] * z[j]
		}
	}
	return v
}

// TestFitQuad: an exact quadratic with cubes along the axes is recovered
// to rounding with no leave-one-out error; with a mixed cubic term added,
// the leave-one-out error from the hat matrix equals that of refitting
// without each point in turn.
func TestFitQuad(t *testing.T) {
	const p = 4
	a := []float64{0.3, -1.2, 2.1, 0.4}
	b := []float64{
		-0.5, 0.1, 0.2, 0,
		0.1, -0.2, -0.1, 0.05,
		0.2, -0.1, -0.6, -0.1,
		0, 0.05, -0.1, 0.3,
	}
	d := []float64{0.02, -0.05, 0, 0.1}
	zs := linalg.QuadDesign(p)
	r := make([]float64, len(zs))
	for i, z := range zs {
		r[i] = quadAt(7, a, b, d, z)
	}
	q, err := linalg.FitQuad(zs, r)
	if err != nil {
		t.Fatal(err)
	}
	for k := range p {
		if math.Abs(q.A[k]-a[k]) > 1e-10 {
			t.Errorf("a[%d] = %v, want %v", k, q.A[k], a[k])
		}
	}
	for k := range b {
		if math.Abs(q.B[k]-b[k]) > 1e-10 {
			t.Errorf("B[%d] = %v, want %v", k, q.B[k], b[k])
		}
	}
	for k := range d {
		if math.Abs(q.D[k]-d[k]) > 1e-10 {
			t.Errorf("d[%d] = %v, want %v", k, q.D[k], d[k])
		}
	}
	if math.Abs(q.C-7) > 1e-10 || q.LOO > 1e-10 {
		t.Errorf("c = %v (want 7), leave-one-out error %v (want 0)", q.C, q.LOO)
	}
	// A mixed cubic term: the hat-matrix shortcut against brute force.
	for i, z := range zs {
		r[i] += 0.2*z[2]*z[2]*z[1] - 0.1*z[0]*z[1]*z[3]
	}
	if q, err = linalg.FitQuad(zs, r); err != nil {
		t.Fatal(err)
	}
	ss := 0.0
	for i := range zs {
		var zo [][]float64
		var ro []float64
		for j := range zs {
			if j != i {
				zo, ro = append(zo, zs[j]), append(ro, r[j])
			}
		}
		qo, err := linalg.FitQuad(zo, ro)
		if err != nil {
			t.Fatal(err)
		}
		e := r[i] - quadAt(qo.C, qo.A, qo.B, qo.D, zs[i])
		ss += e * e
	}
	brute := math.Sqrt(ss / float64(len(zs)))
	if brute < 0.01 || math.Abs(q.LOO-brute) > 1e-9*brute {
		t.Errorf("leave-one-out error %v, refitting without each point %v", q.LOO, brute)
	}
	// Too few points, or a non-finite difference, is an error.
	if _, err := linalg.FitQuad(zs[:10], r[:10]); err == nil {
		t.Error("10 points for 19 coefficients: no error")
	}
	r[3] = math.NaN()
	if _, err := linalg.FitQuad(zs, r); err == nil {
		t.Error("NaN difference: no error")
	}
}

// TestGaussianTimes: N(0, I)·exp(a·z + ½zᵀBz) is N((I − B)⁻¹a, (I − B)⁻¹):
// its log density's gradient a + Bz − z vanishes at the mean and C Cᵀ
// inverts I − B; an improper product is an error.
func TestGaussianTimes(t *testing.T) {
	const p = 3
	a := []float64{0.5, -1, 2}
	b := []float64{-0.5, 0.2, 0.1, 0.2, 0.3, -0.1, 0.1, -0.1, -2}
	m, c, err := linalg.GaussianTimes(a, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range p {
		g := a[i] - m[i]
		for j := range p {
			g += b[i*p+j] * m[j]
		}
		if math.Abs(g) > 1e-12 {
			t.Errorf("gradient at the mean, coordinate %d: %v", i, g)
		}
	}
	// (C Cᵀ)(I − B) = I.
	for i := range p {
		for j := range p {
			v := 0.0
			for k := range p {
				cc := 0.0
				for l := range p {
					cc += c[i*p+l] * c[k*p+l]
				}
				h := -b[k*p+j]
				if k == j {
					h++
				}
				v += cc * h
			}
			if want := map[bool]float64{true: 1, false: 0}[i == j]; math.Abs(v-want) > 1e-12 {
				t.Errorf("(C Cᵀ)(I − B)[%d][%d] = %v, want %v", i, j, v, want)
			}
		}
	}
	b[4] = 1.5
	if _, _, err := linalg.GaussianTimes(a, b); err == nil {
		t.Error("curvature 1.5 along an axis: no error")
	}
}

// TestCorrectionTrust: the full correction is a·z + ½zᵀBz + Σ d_k z_k³
// within the trust radius and holds its curved part at the sphere beyond
// it;
// its gradient matches central differences of its value on both sides,
// and the value is continuous across the sphere.
func TestCorrectionTrust(t *testing.T) {
	const p = 3
	dc := &discretisation{
		Mode:  []float64{1, -2, 0.5},
		Chol:  []float64{0.5, 0, 0, 0.1, 0.3, 0, -0.2, 0.05, 0.8},
		Tilt:  []float64{0.4, -0.3, 1.2},
		Cross: []float64{0.3, 0.1, 0, 0.1, -0.4, 0.2, 0, 0.2, 0.1},
		Cubic: []float64{0.05, -0.02, 0.1},
	}
	d := newDiscretised(nil, dc)
	rng := rand.New(rand.NewPCG(1, 2))
	at := func(z []float64) []float64 { return linalg.LMul(dc.Mode, dc.Chol, z) }
	for _, radius := range []float64{0.7, 2, quadTrust - 1e-3, quadTrust + 1e-3, 6, 15} {
		z := make([]float64, p)
		for i := range z {
			z[i] = rng.NormFloat64()
		}
		sc := radius / math.Sqrt(linalg.Dot(z, z))
		for i := range z {
			z[i] *= sc
		}
		u := at(z)
		grad := make([]float64, p)
		v := d.correction(grad, u)
		// The value: the quadratic part at z, or at the sphere through z.
		zq := z
		if radius > quadTrust {
			zq = make([]float64, p)
			for i := range z {
				zq[i] = z[i] * quadTrust / radius
			}
		}
		want := linalg.Dot(dc.Tilt, z) + quadAt(0, make([]float64, p), dc.Cross, dc.Cubic, zq)
		if math.Abs(v-want) > 1e-9*(1+math.Abs(want)) {
			t.Errorf("|z| = %v: correction %v, want %v", radius, v, want)
		}
		for i := range p {
			const h = 1e-6
			up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
			up[i] += h
			dn[i] -= h
			fd := (d.correction(nil, up) - d.correction(nil, dn)) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-5*(1+math.Abs(fd)) {
				t.Errorf("|z| = %v: ∂/∂u_%d = %v, central difference %v", radius, i, grad[i], fd)
			}
		}
	}
}

// TestCorrectionHold: a diagonal correction (fitted at ± one sd) holds
// each positive curvature b_k at its value at |z_k| = quadTrust beyond
// it, and keeps a negative one and the tilt as they are: with b = (0.3,
// −0.4, 0.04) the correction at z_0 = 15 is 0.4·15 + ½·0.3·quadTrust²
// instead of 0.4·15 + ½·0.3·15², which at b = 0.04 along ρ let a
// bivariate SV fit's chains run to ρ, φ → 1. Its gradient agrees with
// central differences everywhere.
func TestCorrectionHold(t *testing.T) {
	const p = 3
	dc := &discretisation{
		Mode:  []float64{1, -2, 0.5},
		Chol:  []float64{0.5, 0, 0, 0.1, 0.3, 0, -0.2, 0.05, 0.8},
		Tilt:  []float64{0.4, -0.3, 1.2},
		Curve: []float64{0.3, -0.4, 0.04},
	}
	d := newDiscretised(nil, dc)
	rng := rand.New(rand.NewPCG(3, 4))
	at := func(z []float64) []float64 { return linalg.LMul(dc.Mode, dc.Chol, z) }
	for _, scale := range []float64{0.5, 2, 5, 15} {
		z := make([]float64, p)
		for i := range z {
			z[i] = scale * rng.NormFloat64()
		}
		if scale == 15 {
			z = []float64{15, -15, 15}
		}
		u := at(z)
		grad := make([]float64, p)
		v := d.correction(grad, u)
		want := 0.0
		for k, b := range dc.Curve {
			zk := z[k]
			if b > 0 && math.Abs(zk) > quadTrust {
				zk = math.Copysign(quadTrust, zk)
			}
			want += dc.Tilt[k]*z[k] + 0.5*b*zk*zk
		}
		if math.Abs(v-want) > 1e-9*(1+math.Abs(want)) {
			t.Errorf("z = %.3v: correction %v, want %v", z, v, want)
		}
		for i := range p {
			const h = 1e-6
			up, dn := append([]float64(nil), u...), append([]float64(nil), u...)
			up[i] += h
			dn[i] -= h
			fd := (d.correction(nil, up) - d.correction(nil, dn)) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-5*(1+math.Abs(fd)) {
				t.Errorf("z = %.3v: ∂/∂u_%d = %v, central difference %v", z, i, grad[i], fd)
			}
		}
	}
}
