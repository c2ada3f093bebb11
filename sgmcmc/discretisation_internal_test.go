package sgmcmc

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// tiltedLGSSM is the LGSSM whose "finer" log-likelihood differs from the
// exact one by c·u_0 per sequence: a known linear tilt.
type tiltedLGSSM struct {
	models.LGSSM
	c float64
}

func (m tiltedLGSSM) RefinedLogLik(u []float64, seq ssm.Sequence, w ssm.Window) (float64, error) {
	ll, err := m.ExactScore(nil, u, seq, w)
	return ll + m.c*u[0], err
}

// TestDiscretisationCheck: a linear tilt c·u_0 of the log-likelihood moves
// a Gaussian posterior's mean by Σ c e_0, i.e. by c·Σ_i0/sd_i posterior sds
// in coordinate i; checkDiscretisation must report exactly that (the tilt
// is linear, so the central differences are exact), and the Posterior
// must warn when it exceeds 0.2 sd and not otherwise. The models' own
// RefinedScorer (GARCH at 128 nodes) is checked on the DAX returns: there
// its shift stays below 0.05 sd.
func TestDiscretisationCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	seq, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "lgssm_sim.csv"))
	if err != nil {
		t.Fatal(err)
	}
	data := ssm.Dataset{Sequences: []ssm.Sequence{seq}}
	for _, c := range []float64{1, 60} {
		m := tiltedLGSSM{c: c}
		f, err := newFit(m, data, FitSettings{Seed: 1, Gradient: FullGradient, Iterations: 200, KSDDraws: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		l, p := f.prep.Chol, f.dim
		got := f.prep.DiscretisationShift
		if len(got) != p {
			t.Fatalf("c = %v: DiscretisationShift %v", c, got)
		}
		for i := range p {
			var sii, si0 float64
			for j := 0; j <= i; j++ {
				sii += l[i*p+j] * l[i*p+j]
			}
			for j := 0; j <= min(i, 0); j++ {
				si0 += l[i*p+j] * l[j]
			}
			want := c * si0 / math.Sqrt(sii)
			if math.Abs(got[i]-want) > 1e-6*(1+math.Abs(want)) {
				t.Errorf("c = %v: shift[%d] = %.8g, want %.8g", c, i, got[i], want)
			}
		}
		post, err := f.sample(context.Background(), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(post.Warnings, " "), "exact only up to its discretisation")
		_, mx := argMaxAbs(got)
		t.Logf("c = %v: shift %.3f sd, warned %v", c, got, warned)
		if warned != (mx > 0.2) {
			t.Errorf("c = %v: largest shift %.3f sd, warning %v: %q", c, mx, warned, post.Warnings)
		}
	}
	dax, err := ssm.ReadCSVFile(filepath.Join("..", "testdata", "dax_returns.csv"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFit(models.GARCH{}, ssm.Dataset{Sequences: []ssm.Sequence{dax}}, FitSettings{Seed: 1, Gradient: FullGradient})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, mx := argMaxAbs(f.prep.DiscretisationShift)
	t.Logf("GARCH on DAX: shift %.4f sd", f.prep.DiscretisationShift)
	if len(f.prep.DiscretisationShift) != 4 || mx > 0.05 {
		t.Errorf("GARCH on DAX: discretisation shift %v, want 4 values below 0.05 sd", f.prep.DiscretisationShift)
	}
}
