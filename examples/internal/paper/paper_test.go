package paper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/examples/internal/compare"
	"github.com/pbsgmcmc/pbsgmcmc/gradient"
	"github.com/pbsgmcmc/pbsgmcmc/models"
	"github.com/pbsgmcmc/pbsgmcmc/pf"
	"github.com/pbsgmcmc/pbsgmcmc/sgmcmc"
	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// lgssmData simulates T observations of the paper's LGSSM.
func lgssmData(t *testing.T, T int) (models.LGSSM, ssm.Dataset) {
	t.Helper()
	var m models.LGSSM
	u0, err := m.Params(0.9, 0.7, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, y, err := m.Simulate(T, u0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return m, ssm.Dataset{Sequences: []ssm.Sequence{y}}
}

// grad evaluates e at u with a fixed generator.
func grad(t *testing.T, e sgmcmc.Estimator, u []float64) []float64 {
	t.Helper()
	g := make([]float64, len(u))
	if _, err := e.Grad(context.Background(), g, u, rand.New(rand.NewPCG(3, 4))); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestMethod checks every Gradient's estimator against one built directly
// from the gradient package's settings (exact Kalman scores, so equal
// settings give equal gradients under the same generator).
func TestMethod(t *testing.T) {
	m, data := lgssmData(t, 200)
	u, _ := m.Params(0.8, 0.5, 1.2)
	e := Estimators{Model: m, Data: data, Exact: true, S: 20, B: 5}
	want := map[Gradient]gradient.Settings{
		Full:     {Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, Exact: true},
		Weekly:   {Subsequencer: gradient.Subsequencer{Sampling: gradient.Full}, Exact: true},
		NoBuffer: {Subsequencer: gradient.Subsequencer{S: 20}, Exact: true},
		Buffer:   {Subsequencer: gradient.Subsequencer{S: 20, B: 5}, Exact: true},
	}
	ms := e.Methods(Full, Weekly, NoBuffer, Buffer)
	var names []string
	for i, g := range []Gradient{Full, Weekly, NoBuffer, Buffer} {
		names = append(names, ms[i].Name)
		got, err := ms[i].New(0)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := gradient.New(m, data, want[g])
		if err != nil {
			t.Fatal(err)
		}
		if a, b := grad(t, got, u), grad(t, ref, u); !slices.Equal(a, b) {
			t.Errorf("%v: gradient %v, want %v", g, a, b)
		}
	}
	if want := []string{"Full", "Weekly", "No Buffer", "Buffer"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
	if a, b := grad(t, must(ms[2].New(0)), u), grad(t, must(ms[3].New(0)), u); slices.Equal(a, b) {
		t.Errorf("No Buffer and Buffer give the same gradient %v", a)
	}
}

// TestFiltered checks the labels of Filtered and that "kf" is the exact
// scorer: its gradient is Method's with Exact set.
func TestFiltered(t *testing.T) {
	m, data := lgssmData(t, 200)
	u, _ := m.Params(0.8, 0.5, 1.2)
	e := Estimators{Model: m, Data: data, PF: pf.Settings{N: 64}, S: 20, B: 5}
	ms := e.Filtered(Buffer, "pf", "kf")
	if len(ms) != 2 || ms[0].Name != "Buffer N=64" || ms[1].Name != "Buffer N=inf" {
		t.Fatalf("methods %+v", ms)
	}
	exact := e
	exact.Exact = true
	if a, b := grad(t, must(ms[1].New(0)), u), grad(t, must(exact.Method(Buffer, "").New(0)), u); !slices.Equal(a, b) {
		t.Errorf("kf gradient %v, want the exact %v", a, b)
	}
	if a, b := grad(t, must(ms[0].New(0)), u), grad(t, must(exact.Method(Buffer, "").New(0)), u); slices.Equal(a, b) {
		t.Errorf("pf gradient equals the exact one %v", a)
	}
}

func must(e sgmcmc.Estimator, err error) sgmcmc.Estimator {
	if err != nil {
		panic(err)
	}
	return e
}

var testCommand = Command{
	Name: "x", Usage: "Usage: x",
	Defaults: compare.FlagDefaults{Out: "out/x", KSDDraws: 7, EpsHelp: "eps", NHelp: "N", BurnInHelp: "burn-in"},
	Proposal: true,
	Models:   []string{"svm", "garch"},
}

func parseFlags(cmd Command, args ...string) (*Flags, *bytes.Buffer, error) {
	var f Flags
	var help bytes.Buffer
	fs := f.Define(cmd, &help)
	own := fs.Int("own", 3, "a command's own flag")
	err := f.Parse(fs, args)
	if err == nil && *own != 3 {
		err = io.ErrUnexpectedEOF // -own is not for this test
	}
	return &f, &help, err
}

// TestFlags checks -models and -proposal: present when the Command asks
// for them, their defaults and their checks.
func TestFlags(t *testing.T) {
	f, help, err := parseFlags(testCommand)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Models, []string{"svm", "garch"}) || f.Proposal.String() != "auto" || f.KSDDraws != 7 {
		t.Errorf("defaults: models %q, proposal %q, ksddraws %d", f.Models, f.Proposal.String(), f.KSDDraws)
	}
	if f, _, err := parseFlags(testCommand, "-models", "garch", "-proposal", "guided"); err != nil ||
		!slices.Equal(f.Models, []string{"garch"}) || f.Proposal.String() != "guided" {
		t.Errorf("-models garch -proposal guided: %v, %q, %q", err, f.Models, f.Proposal.String())
	}
	help.Reset()
	fs := f.Define(testCommand, help)
	fs.Int("own", 3, "a command's own flag")
	fs.Usage()
	for _, s := range []string{"Usage: x\n", "-models", "svm and/or garch", "-proposal", "-own", "-seed"} {
		if !strings.Contains(help.String(), s) {
			t.Errorf("usage lacks %q:\n%s", s, help.String())
		}
	}
	for _, args := range [][]string{{"-models", "lgssm"}, {"-proposal", "apf"}, {"-chains", "0"}, {"-eps", "x"}, {"extra"}} {
		if _, _, err := parseFlags(testCommand, args...); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	bare := Command{Name: "y", Usage: "Usage: y", Defaults: testCommand.Defaults}
	if _, _, err := parseFlags(bare, "-models", "svm"); err == nil {
		t.Error("-models accepted without Command.Models")
	}
	if _, _, err := parseFlags(bare, "-proposal", "auto"); err == nil {
		t.Error("-proposal accepted without Command.Proposal")
	}
	f, _, _ = parseFlags(bare, "-time", "2s", "-iters", "5", "-ksddraws", "9", "-burnin", "0.25")
	if got, want := f.Budget(), "5 chains per method and step size, 2s per chain, at most 5 iterations"; got != want {
		t.Errorf("Budget() = %q, want %q", got, want)
	}
	if got, want := f.KSD("u", "exact scores"), "KSD: IMQ(1, -1/2) V-statistic on u, 9 draws per chain after 0.25 burn-in, exact scores."; got != want {
		t.Errorf("KSD() = %q, want %q", got, want)
	}
}

// extra is a test Extra.
type extra struct{ methods int }

func (e extra) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "EXTRA TEXT on %d methods\n", e.methods)
	return err
}

func (e extra) WriteJSON(w io.Writer) error {
	_, err := io.WriteString(w, `{"extra": true}`)
	return err
}

// TestRun runs two tiny experiments, one with Truth and Reduce and one with
// Extra, and checks the report, the file names and the plots.
func TestRun(t *testing.T) {
	out := t.TempDir()
	f, _, err := parseFlags(Command{Name: "x", Usage: "x", Defaults: testCommand.Defaults},
		"-time", "0", "-iters", "30", "-chains", "2", "-eps", "0.1", "-ksddraws", "5", "-out", out)
	if err != nil {
		t.Fatal(err)
	}
	m, data := lgssmData(t, 100)
	est := Estimators{Model: m, Data: data, Exact: true, S: 20, B: 5}
	base := Experiment{
		Model: m, Data: data, Methods: est.Methods(Full, Buffer), Start: []float64{0.5, 1, 0.5}, Score: est,
		Paper: compare.PaperTable{Title: "Paper table", Columns: []string{"phi", "sigma", "tau", "total"},
			Rows: []compare.PaperRow{compare.Row("Full", 1, 0.1, 1, 0.1, 1, 0.1, 2, 0.1)}},
		Versus: "VERSUS", Means: "MEANS", Plot: "plot",
	}
	syn, real := base, base
	syn.Name, syn.Label, syn.Title, syn.Note, syn.Truth = "syn", "s", "Synthetic", "; NOTE", []float64{0.9, 0.7, 1}
	syn.Reduce = func(res *compare.Result) (*compare.Result, error) {
		r := *res
		r.Names = []string{"r_phi", "r_sigma", "r_tau"}
		return &r, nil
	}
	real.Name, real.Label, real.Title = "real", "r", "Real"
	real.After = func(_ context.Context, res *compare.Result) (Extra, error) { return extra{len(res.Methods)}, nil }
	var stdout, stderr bytes.Buffer
	if err := Run(context.Background(), &stdout, &stderr, f, "HEADER\n", []Experiment{syn, real}); err != nil {
		t.Fatalf("Run: %v\n%s", err, stderr.String())
	}
	text := stdout.String()
	for _, s := range []string{"HEADER\n\n=== Synthetic (", " s); NOTE ===", "\n=== Real (", "Paper table", "VERSUS", "MEANS",
		"MEANS\n", "EXTRA TEXT on 2 methods", "Outputs in " + out} {
		if !strings.Contains(text, s) {
			t.Errorf("output lacks %q:\n%s", s, text)
		}
	}
	if !strings.HasPrefix(text, "HEADER\n") || strings.Index(text, "EXTRA TEXT") < strings.Index(text, "=== Real") {
		t.Errorf("header or extra text out of place:\n%s", text)
	}
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if !strings.HasPrefix(l, "s ") && !strings.HasPrefix(l, "r ") {
			t.Errorf("progress line %q does not start with a label", l)
		}
	}
	s := compare.ReadJSON[compare.Summary](t, filepath.Join(out, "results_syn.json"))
	if len(s.Methods) != 2 || s.Methods[1].Name != "Buffer" || s.Names[0] != "r_phi" {
		t.Errorf("results_syn.json: %+v", s)
	}
	if b, err := os.ReadFile(filepath.Join(out, "results_real.json")); err != nil || string(b) != `{"extra": true}` {
		t.Errorf("results_real.json: %q, %v", b, err)
	}
	for _, p := range []string{"phi", "sigma", "tau"} {
		compare.CheckPNG(t, filepath.Join(out, "mse_syn_r_"+p+".png"), 100) // Reduce renamed them
		compare.CheckPNG(t, filepath.Join(out, "trace_real_"+p+".png"), 100)
	}
	if _, err := os.Stat(filepath.Join(out, "mse_real_phi.png")); err == nil {
		t.Error("MSE plot without Truth")
	}
}
