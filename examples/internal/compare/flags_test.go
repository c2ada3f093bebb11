package compare

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

var testDefaults = FlagDefaults{Out: "out/x", KSDDraws: 7, EpsHelp: "eps help", NHelp: "N help", BurnInHelp: "burn-in help"}

func parseCommon(args ...string) (*CommonFlags, error) {
	var c CommonFlags
	fs := NewFlagSet("x", "Usage: x", io.Discard)
	c.Register(fs, testDefaults)
	if err := c.Parse(fs, args); err != nil {
		return nil, err
	}
	return &c, c.Check()
}

// TestCommonFlags checks the defaults, the help texts taken from
// FlagDefaults, -eps parsing, Check and the Settings the flags give.
func TestCommonFlags(t *testing.T) {
	c, err := parseCommon()
	if err != nil {
		t.Fatal(err)
	}
	want := CommonFlags{Runtime: time.Second, Chains: 5, Eps: []float64{1, 0.1, 0.01, 0.001}, N: 1000, S: 40, B: 10,
		BurnIn: 0.5, KSDDraws: 7, Seed: 1, Out: "out/x", eps: "1,0.1,0.01,0.001"}
	if c.Runtime != want.Runtime || c.Iters != 0 || c.Chains != want.Chains || !slices.Equal(c.Eps, want.Eps) ||
		c.N != want.N || c.S != want.S || c.B != want.B || c.BurnIn != want.BurnIn || c.KSDDraws != want.KSDDraws ||
		c.Seed != want.Seed || c.Out != want.Out || c.Concurrency != 0 {
		t.Errorf("defaults %+v, want %+v", *c, want)
	}
	var help bytes.Buffer
	fs := NewFlagSet("x", "Usage: x", &help)
	c.Register(fs, testDefaults)
	fs.Usage()
	for _, s := range []string{"Usage: x\n", "eps help", "N help", "burn-in help", `(default "out/x")`, "(default 7)"} {
		if !strings.Contains(help.String(), s) {
			t.Errorf("usage lacks %q:\n%s", s, help.String())
		}
	}

	c, err = parseCommon("-eps", "0.5, 0.05", "-burnin", "0", "-time", "0", "-iters", "3", "-concurrency", "2")
	if err != nil {
		t.Fatal(err)
	}
	s := c.Settings()
	if !slices.Equal(s.Eps, []float64{0.5, 0.05}) || s.BurnIn >= 0 || s.Runtime != 0 || s.Iterations != 3 ||
		s.Chains != 5 || s.Concurrency != 2 || s.KSDDraws != 7 {
		t.Errorf("Settings() = %+v", s)
	}
	if s := (&CommonFlags{BurnIn: 0.3}).Settings(); s.BurnIn != 0.3 {
		t.Errorf("BurnIn 0.3 gives Settings.BurnIn %v", s.BurnIn)
	}

	for _, args := range [][]string{
		{"extra"}, {"-eps", "x"}, {"-eps", "0.1,-1"}, {"-time", "0"}, {"-time", "-1s"}, {"-iters", "-1"},
		{"-chains", "0"}, {"-S", "0"}, {"-B", "-1"}, {"-burnin", "1"}, {"-burnin", "-0.1"}, {"-bogus"},
	} {
		if _, err := parseCommon(args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// TestJitteredInit checks the starts against draws made independently
// from the same generator, and that they do not depend on the call order.
func TestJitteredInit(t *testing.T) {
	start := []float64{1, -2, 3}
	init := JitteredInit(start, 4, 0.1, rand.New(rand.NewPCG(3, 4)))
	ref := rand.New(rand.NewPCG(3, 4))
	want := make([][]float64, 4)
	for c := range want {
		for _, s := range start {
			want[c] = append(want[c], s+0.1*ref.NormFloat64())
		}
	}
	for _, c := range []int{3, 0, 2, 1, 3} {
		u := make([]float64, 3)
		if err := init(c, u); err != nil {
			t.Fatal(err)
		}
		for j := range u {
			if math.Abs(u[j]-want[c][j]) > 1e-15 || u[j] == start[j] {
				t.Errorf("chain %d: u = %v, want %v", c, u, want[c])
				break
			}
		}
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.txt")
	if err := WriteFile(path, func(w io.Writer) error { _, err := io.WriteString(w, "hello"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello" {
		t.Errorf("file holds %q (%v)", b, err)
	}
	bad := errors.New("bad")
	if err := WriteFile(path, func(io.Writer) error { return bad }); !errors.Is(err, bad) {
		t.Errorf("got %v, want the writer's error", err)
	}
	if err := WriteFile(filepath.Join(path, "x"), func(io.Writer) error { return nil }); err == nil {
		t.Error("creating a file below a file succeeded")
	}
}

func TestProposalFlag(t *testing.T) {
	for _, c := range []struct {
		arg      string
		model    ssm.Model
		guided   bool // the returned SVM's Guided
		proposal pf.Proposal
	}{
		{"auto", models.SVM{}, false, pf.Auto},
		{"guided", models.SVM{}, true, pf.Auto},
		{"bootstrap", models.SVM{}, false, pf.Bootstrap},
		{"guided", models.GARCH{}, false, pf.Auto},
		{"bootstrap", models.GARCH{}, false, pf.Bootstrap},
	} {
		var p ProposalFlag
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		p.Register(fs, "auto")
		if err := fs.Parse([]string{"-proposal", c.arg}); err != nil {
			t.Fatal(err)
		}
		if err := p.Check(); err != nil {
			t.Fatal(err)
		}
		m, prop := p.Apply(c.model)
		if prop != c.proposal {
			t.Errorf("%s on %T: proposal %v, want %v", c.arg, c.model, prop, c.proposal)
		}
		if s, ok := m.(models.SVM); ok && s.Guided != c.guided {
			t.Errorf("%s on the SVM: Guided %v, want %v", c.arg, s.Guided, c.guided)
		}
		if _, ok := m.(models.SVM); ok != (c.model == ssm.Model(models.SVM{})) {
			t.Errorf("%s: model type changed to %T", c.arg, m)
		}
	}
	var p ProposalFlag
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	p.Register(fs, "auto")
	fs.Parse([]string{"-proposal", "apf"})
	if err := p.Check(); err == nil || !strings.Contains(err.Error(), `"apf"`) {
		t.Errorf("-proposal apf: error %v", err)
	}
}
