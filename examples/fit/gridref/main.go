// Command gridref computes an independent reference posterior for the
// stochastic volatility model on a data file (by default the bundled DAX
// returns), to check what examples/fit reports. Its posterior uses no
// particle filter and no gradient from the library: only the model's prior
// (models.SVM).
//
// The likelihood is computed by a grid (hidden Markov model) filter: the
// log-volatility x_t lives on G points spanning ±8 stationary sds, the
// transition N(φx, σ²) and the initial law N(0, σ²/(1−φ²)) are integrated
// over the grid cells exactly (normal CDF differences), and the forward
// recursion gives log p(y_{1:T} | θ); it converges quickly in G (G = 200
// and 400 agree to 0.02 nats on the DAX data). The posterior in u =
// (atanh φ, log σ, log τ) is then located by Newton's method with
// finite-difference derivatives and sampled by self-normalised importance
// sampling from a multivariate t_5 centred at the mode with 1.5 times the
// Laplace covariance. It prints the mode, the Laplace sds, the importance
// ESS and the posterior mean and sd of each parameter.
//
//	go run ./examples/fit/gridref            # about a minute
//	go run ./examples/fit/gridref -G 200 -n 500
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "gridref:", err)
		os.Exit(1)
	}
}

// gridLogLik returns log p(y | φ, σ, τ) of the SVM by a forward filter on
// a grid of g points.
func gridLogLik(y []float64, phi, sigma, tau float64, g int) float64 {
	sd := sigma / math.Sqrt(1-phi*phi)
	lo, hi := -8*sd, 8*sd
	dx := (hi - lo) / float64(g-1)
	x := make([]float64, g)
	for i := range x {
		x[i] = lo + dx*float64(i)
	}
	cdf := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	p := make([]float64, g)
	for i := range p {
		p[i] = cdf((x[i]+dx/2)/sd) - cdf((x[i]-dx/2)/sd)
	}
	// Transition rows: the mass of N(φx_i, σ²) in each cell, within 8σ.
	band := int(math.Ceil(8*sigma/dx)) + 1
	type row struct {
		j0 int
		w  []float64
	}
	rows := make([]row, g)
	for i := range rows {
		m := phi * x[i]
		c := int(math.Round((m - lo) / dx))
		j0, j1 := max(0, c-band), min(g-1, c+band)
		w := make([]float64, 0, max(j1-j0+1, 0))
		for j := j0; j <= j1; j++ {
			w = append(w, cdf((x[j]+dx/2-m)/sigma)-cdf((x[j]-dx/2-m)/sigma))
		}
		rows[i] = row{j0, w}
	}
	q := make([]float64, g)
	ll := 0.0
	for _, yt := range y {
		clear(q)
		for i, pi := range p {
			if pi < 1e-300 {
				continue
			}
			r := rows[i]
			qq := q[r.j0 : r.j0+len(r.w)]
			for k, w := range r.w {
				qq[k] += pi * w
			}
		}
		if math.IsNaN(yt) {
			copy(p, q)
			continue
		}
		s := 0.0
		for j := range q {
			v := tau * tau * math.Exp(x[j])
			q[j] *= math.Exp(-0.5*yt*yt/v) / math.Sqrt(2*math.Pi*v)
			s += q[j]
		}
		ll += math.Log(s)
		for j := range q {
			p[j] = q[j] / s
		}
	}
	return ll
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gridref", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", filepath.Join("testdata", "dax_returns.csv"), "CSV file with one column of observations")
	g := fs.Int("G", 300, "grid points for the log-volatility")
	n := fs.Int("n", 3000, "importance samples")
	seed := fs.Uint64("seed", 1, "random seed")
	scores := fs.Int("scores", 0, "if positive, also compare particle filter scores at the mode with the grid's: this many full-sequence replications (ten times as many buffered ones)")
	np := fs.Int("N", 1000, "particles for -scores")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *g < 20 || *n < 10 {
		return fmt.Errorf("-G = %d and -n = %d are too small", *g, *n)
	}
	if *scores < 0 || *scores == 1 || *np < 1 {
		return fmt.Errorf("-scores = %d must be 0 or at least 2 and -N = %d at least 1", *scores, *np)
	}
	seq, err := ssm.ReadCSVFile(*data)
	if err != nil {
		return err
	}
	if seq.Obs != 1 {
		return fmt.Errorf("%s: want one column, got %d", *data, seq.Obs)
	}
	m := models.SVM{}
	const d = 3
	th := make([]float64, d)
	logpost := func(u []float64) float64 {
		m.Constrain(th, u)
		if !(math.Abs(th[0]) < 1) {
			return math.Inf(-1)
		}
		return gridLogLik(seq.Y, th[0], th[1], th[2], *g) + m.LogPrior(nil, u)
	}
	mode, err := m.Params(0.9, 0.3, 1)
	if err != nil {
		return err
	}
	var cov mat.SymDense
	for it := 0; it < 30; it++ {
		H, grad := negHessian(logpost, mode, 0.02)
		var ch mat.Cholesky
		if !ch.Factorize(H) {
			return fmt.Errorf("the Hessian at %v is not negative definite", mode)
		}
		ch.InverseTo(&cov)
		var step mat.VecDense
		step.MulVec(&cov, mat.NewVecDense(d, grad))
		for i := range mode {
			mode[i] += step.AtVec(i)
		}
		if mat.Norm(&step, 2) < 1e-8 {
			break
		}
	}
	m.Constrain(th, mode)
	fmt.Fprintf(stdout, "SVM on %s (T = %d), grid filter with G = %d\n", *data, seq.Len(), *g)
	fmt.Fprintf(stdout, "mode: phi %.4f sigma %.4f tau %.4f (log posterior %.2f)\n", th[0], th[1], th[2], logpost(mode))
	fmt.Fprintf(stdout, "Laplace sd in u: %.4f %.4f %.4f\n", math.Sqrt(cov.At(0, 0)), math.Sqrt(cov.At(1, 1)), math.Sqrt(cov.At(2, 2)))
	if *scores > 0 {
		if err := scoreCheck(stdout, seq, mode, *g, *scores, *np, *seed); err != nil {
			return err
		}
	}

	// Importance sampling from t_ν(mode, 1.5² Σ).
	var L mat.Cholesky
	sc := mat.NewSymDense(d, nil)
	sc.ScaleSym(1.5*1.5, &cov)
	if !L.Factorize(sc) {
		return errors.New("proposal covariance not positive definite")
	}
	var low mat.TriDense
	L.LTo(&low)
	const nu = 5
	rng := rand.New(rand.NewPCG(*seed, 0))
	logw := make([]float64, *n)
	us := make([][d]float64, *n)
	thetas := make([][d]float64, *n)
	u := make([]float64, d)
	for k := range *n {
		z := [d]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		chi := 0.0
		for range nu {
			v := rng.NormFloat64()
			chi += v * v
		}
		s := math.Sqrt(nu / chi)
		q := 0.0
		for i := range d {
			v := 0.0
			for j := 0; j <= i; j++ {
				v += low.At(i, j) * z[j]
			}
			u[i] = mode[i] + s*v
			q += z[i] * z[i] * s * s
		}
		// log t density up to a constant (the same for every draw).
		logw[k] = logpost(u) + 0.5*(nu+d)*math.Log1p(q/nu)
		m.Constrain(th, u)
		copy(us[k][:], u)
		copy(thetas[k][:], th)
	}
	mx := math.Inf(-1)
	for _, v := range logw {
		mx = math.Max(mx, v)
	}
	sw, sw2 := 0.0, 0.0
	for k, v := range logw {
		logw[k] = math.Exp(v - mx)
		sw += logw[k]
		sw2 += logw[k] * logw[k]
	}
	fmt.Fprintf(stdout, "importance sampling: %d draws, ESS %.0f\n", *n, sw*sw/sw2)
	for j, name := range m.ParamNames() {
		var mean, m2, mu, mu2 float64
		for k, w := range logw {
			w /= sw
			mean += w * thetas[k][j]
			m2 += w * thetas[k][j] * thetas[k][j]
			mu += w * us[k][j]
			mu2 += w * us[k][j] * us[k][j]
		}
		fmt.Fprintf(stdout, "%-6s mean %.4f sd %.4f   (u: mean %.4f sd %.4f)\n", name, mean, math.Sqrt(m2-mean*mean), mu, math.Sqrt(mu2-mu*mu))
	}
	return nil
}

// negHessian returns minus the Hessian of f at x by central differences of
// step h, and the gradient.
func negHessian(f func([]float64) float64, x []float64, h float64) (*mat.SymDense, []float64) {
	d := len(x)
	H := mat.NewSymDense(d, nil)
	grad := make([]float64, d)
	f0 := f(x)
	at := func(i, j int, si, sj float64) float64 {
		u := append([]float64(nil), x...)
		u[i] += si * h
		u[j] += sj * h
		return f(u)
	}
	for i := range d {
		fp, fm := at(i, i, 0.5, 0.5), at(i, i, -0.5, -0.5) // ±h along i
		H.SetSym(i, i, -(fp-2*f0+fm)/(h*h))
		grad[i] = (fp - fm) / (2 * h)
		for j := i + 1; j < d; j++ {
			v := (at(i, j, 1, 1) - at(i, j, 1, -1) - at(i, j, -1, 1) + at(i, j, -1, -1)) / (4 * h * h)
			H.SetSym(i, j, -v)
		}
	}
	return H, grad
}
