// Command validate fits every model of examples/fit to the bundled series
// and compares the posteriors with the references in the repository, then
// writes the validation page docs/validation.md:
//
//	go run ./examples/validate            # the quick cases, a few minutes on 2 cores
//	go run ./examples/validate -long      # adds GARCH on the S&P 500 and a simulated T = 10^6 series
//
// Each case runs the built examples/fit binary with -json, exactly as a
// user would run it (the command is printed beside the case), and compares
// its posterior with an independent reference posterior from
// examples/fit/gridref (grid-integrated or Kalman likelihoods sampled by
// importance sampling or random-walk Metropolis, none of this library's
// samplers) or, for simulated series, with the values simulated from. The
// fits use fixed seeds, so everything on the page but the wall times is the
// same on every run of the same code.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "validate:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("bad flags")

// testCase is one row of the validation table.
type testCase struct {
	Name  string // short identifier: -only, JSON and figure names
	Title string
	T     int
	// Setup prepares the data (nil: the bundled file is used as it is);
	// SetupCmd is the shell command shown for it.
	Setup    func(tmp string, bin binaries) error
	SetupCmd string
	Args     []string // examples/fit's flags; "TMP/" stands for a scratch directory
	Ref      string   // a reference posterior's JSON file, or
	Truth    []float64
	RefNote  string // what the reference is
	// RefNames are the reference's names of the fit's parameters when
	// the two models name them differently (nil: the same names).
	RefNames []string
	Long     bool // only with -long
	Figures  bool // copy trace.png and density.png to the page's figures
}

var refDir = filepath.Join("examples", "fit", "gridref")

var cases = []testCase{
	{Name: "svm-dax", Title: "SVM, DAX daily returns", T: 1859, Figures: true,
		Ref: filepath.Join(refDir, "ref_svm_dax.json"), RefNote: "grid-filter likelihood (G = 300), importance sampling"},
	{Name: "svm-dax201", Title: "SVM, first 201 DAX returns", T: 201,
		Setup: func(tmp string, _ binaries) error {
			return headRows("testdata/dax_returns.csv", 201, filepath.Join(tmp, "dax201.csv"))
		},
		SetupCmd: "head -201 testdata/dax_returns.csv > /tmp/dax201.csv",
		Args:     []string{"-data", "TMP/dax201.csv"},
		Ref:      filepath.Join(refDir, "ref_svm_dax201.json"), RefNote: "grid-filter likelihood (G = 300), adaptive importance sampling"},
	{Name: "svm-sp500", Title: "SVM, S&P 500 daily returns", T: 17055,
		Args: []string{"-data", "testdata/sp500_returns.csv"},
		Ref:  filepath.Join(refDir, "ref_svm_sp500.json"), RefNote: "grid-filter likelihood (G = 300), importance sampling"},
	{Name: "lgssm-sim", Title: "LGSSM, simulated (φ 0.9, σ 0.7, τ 1)", T: 2000,
		Args: []string{"-model", "lgssm", "-data", "testdata/lgssm_sim.csv"},
		Ref:  filepath.Join(refDir, "ref_lgssm_sim.json"), RefNote: "Kalman likelihood, importance sampling"},
	{Name: "lgssm-sp500", Title: "LGSSM, S&P 500 daily returns", T: 17055,
		Args: []string{"-model", "lgssm", "-data", "testdata/sp500_returns.csv"},
		Ref:  filepath.Join(refDir, "ref_lgssm_sp500.json"), RefNote: "Kalman likelihood, 4 random-walk Metropolis chains of 250,000"},
	{Name: "garch-dax", Title: "GARCH(1,1) with noise, DAX daily returns", T: 1859, Figures: true,
		Args: []string{"-model", "garch"},
		Ref:  filepath.Join(refDir, "ref_garch_dax.json"), RefNote: "σ² grid-filter likelihood (Richardson from G = 100, 200), importance sampling"},
	{Name: "msv-sim", Title: "Bivariate SV, simulated (φ 0.95, 0.9; σ 0.2, 0.3; ρ 0.5; τ 1, 0.8)", T: 2000,
		Args: []string{"-model", "msv", "-data", "testdata/msv_sim2.csv"},
		Ref:  filepath.Join(refDir, "ref_msv_sim2.json"), RefNote: "Stan NUTS on the same model and prior, the latent states sampled jointly"},
	{Name: "msv-daxcac", Title: "Bivariate SV, DAX and CAC 40 daily returns", T: 1859, Long: true,
		Args: []string{"-model", "msv", "-data", "testdata/dax_cac_returns.csv"},
		Ref:  filepath.Join(refDir, "ref_msv_daxcac.json"), RefNote: "Stan NUTS on the same model and prior, the latent states sampled jointly"},
	{Name: "svm-dax-laplace", Title: "SVM as MSV{D: 1} (Laplace importance sampling, pseudo-marginal), DAX daily returns", T: 1859, Long: true,
		Args:     []string{"-model", "msv", "-data", "testdata/dax_returns.csv"},
		Ref:      filepath.Join(refDir, "ref_svm_dax.json"),
		RefNames: []string{"phi", "sigma", "tau"},
		RefNote:  "the SVM's grid-filter likelihood (G = 300), importance sampling: MSV{D: 1} is the SVM with its parameters renamed"},
	{Name: "garch-sp500", Title: "GARCH(1,1) with noise, S&P 500 daily returns", T: 17055, Long: true,
		Args:    []string{"-model", "garch", "-data", "testdata/sp500_returns.csv"},
		Ref:     filepath.Join(refDir, "ref_garch_sp500.json"),
		RefNote: "quadrature-filter likelihood (14 points, within 0.004 nats of 512 σ² nodes), importance sampling"},
	{Name: "svm-sim1e6", Title: "SVM, simulated, T = 10⁶ (memory-mapped binary)", T: 1000000, Long: true,
		Setup: func(tmp string, bin binaries) error {
			return runQuiet(bin.simulate, "-model", "svm", "-T", "1000000", "-params", "0.97,0.2,1", "-out", filepath.Join(tmp, "svm1e6.bin"))
		},
		SetupCmd: "go run ./examples/simulate -model svm -T 1000000 -params 0.97,0.2,1 -out /tmp/svm1e6.bin",
		Args:     []string{"-data", "TMP/svm1e6.bin"},
		Truth:    []float64{0.97, 0.2, 1}, RefNote: "the simulation's parameters"},
}

// result is what a case produced.
type result struct {
	Case     string     `json:"case"`
	Title    string     `json:"title"`
	T        int        `json:"T"`
	Command  string     `json:"command"`
	Setup    string     `json:"setup,omitempty"`
	Ref      string     `json:"reference"`
	RefNote  string     `json:"reference_note"`
	Wall     float64    `json:"wall_seconds"`
	Gradient string     `json:"gradient,omitempty"`
	Chains   int        `json:"chains,omitempty"`
	Kept     int        `json:"kept,omitempty"`
	KSD      *float64   `json:"ksd,omitempty"`
	Rows     []paramRow `json:"params,omitempty"`
	Summary  summary    `json:"summary"`
	Warnings []string   `json:"warnings"`
	Problems []string   `json:"problems"`
	Error    string     `json:"error,omitempty"`
	Figures  []string   `json:"figures,omitempty"`
}

// fitOutput is the part of examples/fit's -json output the page uses.
type fitOutput struct {
	Model    string     `json:"model"`
	Gradient string     `json:"gradient"`
	Params   []fitParam `json:"params"`
	KSD      *float64   `json:"ksd"`
	Chains   int        `json:"chains"`
	Kept     int        `json:"kept"`
	Warnings []string   `json:"warnings"`
}

type binaries struct{ fit, simulate string }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "docs", "directory of the page (validation.md) and its figures (figures/validation_*.png); empty: write no page")
	long := fs.Bool("long", false, "include the slow cases: the bivariate SV on DAX and CAC 40, the SVM as MSV{D: 1} on DAX, GARCH on the S&P 500 (20-100 s each on 2 cores) and the simulated SVM at T = 10^6")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of the table")
	only := fs.String("only", "", "comma-separated case names to run (default: all; "+caseNames()+"; with -scaling: model-length names such as garch-17k)")
	scaling := fs.Bool("scaling", false, "instead of the validation cases, fit every model simulated at T = 2k, 17k, 62k and 10^6 and write docs/scaling.md: cost per effective draw against T (about an hour on 2 cores)")
	budget := fs.Duration("budget", defaultScalingBudget, "with -scaling: each fit's time budget (examples/fit -time)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./examples/validate [flags]\n\nFits each case with examples/fit and compares it with its reference; writes docs/validation.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "validate: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	all := cases
	if *scaling {
		all = scalingCases(*budget)
	}
	selected, err := selectCases(all, *only, *long || *scaling)
	if err != nil {
		fmt.Fprintln(stderr, "validate:", err)
		return errUsage
	}
	if err := chdirRoot(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "validate")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	startLoad = readLoad()
	bin, err := build(ctx, tmp, stderr)
	if err != nil {
		return err
	}
	if *scaling {
		page := ""
		if *out != "" {
			page = filepath.Join(*out, "scaling.md")
		}
		results, err := runScaling(ctx, selected, tmp, bin, *budget, page, stderr)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(results)
		}
		writeTable(stdout, results)
		return nil
	}
	var results []result
	failed := 0
	start := time.Now()
	for _, c := range selected {
		if err := ctx.Err(); err != nil {
			return err
		}
		res := runCase(ctx, c, tmp, bin, *out, stderr)
		if res.Error != "" || len(res.Problems) > 0 {
			failed++
		}
		results = append(results, res)
	}
	total := time.Since(start)
	fmt.Fprintf(stderr, "validate: %d cases in %s\n", len(results), wall(total))
	if *out != "" {
		if err := writePage(filepath.Join(*out, "validation.md"), results, *long, total); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "validate: wrote %s\n", filepath.Join(*out, "validation.md"))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		writeTable(stdout, results)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d cases failed or fell outside the tolerances", failed, len(results))
	}
	return nil
}

func caseNames() string {
	var n []string
	for _, c := range cases {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// selectCases picks the cases of all that -only and -long ask for, in
// table order.
func selectCases(cases []testCase, only string, long bool) ([]testCase, error) {
	if only == "" {
		var s []testCase
		for _, c := range cases {
			if long || !c.Long {
				s = append(s, c)
			}
		}
		return s, nil
	}
	want := strings.Split(only, ",")
	for _, w := range want {
		if !slices.ContainsFunc(cases, func(c testCase) bool { return c.Name == w }) {
			var names []string
			for _, c := range cases {
				names = append(names, c.Name)
			}
			return nil, fmt.Errorf("-only: no case %q (cases: %s)", w, strings.Join(names, ", "))
		}
	}
	var s []testCase
	for _, c := range cases {
		if slices.Contains(want, c.Name) {
			s = append(s, c)
		}
	}
	return s, nil
}

// chdirRoot moves to the module's root (the directory holding go.mod), where
// the data and reference paths are relative to.
func chdirRoot() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, refDir)); err == nil {
				return os.Chdir(dir)
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return errors.New("run it inside the pbsgmcmc repository: no go.mod with examples/fit/gridref above the working directory")
		}
		dir = parent
	}
}

// build compiles examples/fit and examples/simulate once, so that the wall
// times are the fits' and not the compiler's.
func build(ctx context.Context, tmp string, stderr io.Writer) (binaries, error) {
	bin := binaries{fit: filepath.Join(tmp, "fit"), simulate: filepath.Join(tmp, "simulate")}
	for _, b := range []struct{ out, pkg string }{{bin.fit, "./examples/fit"}, {bin.simulate, "./examples/simulate"}} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b.out, b.pkg)
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return bin, fmt.Errorf("go build %s: %w", b.pkg, err)
		}
	}
	return bin, nil
}

// command is the command a user types for a case's fit.
func command(c testCase) string {
	parts := []string{"go run ./examples/fit"}
	for _, a := range c.Args {
		parts = append(parts, shellWord(strings.ReplaceAll(a, "TMP/", "/tmp/")))
	}
	return strings.Join(parts, " ")
}

func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"$&|;<>()*?`\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runCase(ctx context.Context, c testCase, tmp string, bin binaries, out string, stderr io.Writer) result {
	res := result{Case: c.Name, Title: c.Title, T: c.T, Command: command(c), Setup: c.SetupCmd, Ref: c.Ref, RefNote: c.RefNote,
		Warnings: []string{}, Problems: []string{}}
	if c.Truth != nil {
		res.Ref = "truth " + joinFloats(c.Truth)
	}
	fail := func(err error) result {
		res.Error = err.Error()
		fmt.Fprintf(stderr, "validate: %s: %v\n", c.Name, err)
		return res
	}
	if c.Setup != nil {
		fmt.Fprintf(stderr, "validate: %s: %s\n", c.Name, c.SetupCmd)
		if err := c.Setup(tmp, bin); err != nil {
			return fail(err)
		}
	}
	dir := filepath.Join(tmp, c.Name)
	args := []string{"-json", "-q", "-out", dir}
	for _, a := range c.Args {
		args = append(args, strings.ReplaceAll(a, "TMP/", tmp+string(filepath.Separator)))
	}
	fmt.Fprintf(stderr, "validate: %s: %s\n", c.Name, res.Command)
	cmd := exec.CommandContext(ctx, bin.fit, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	res.Wall = time.Since(start).Seconds()
	if err != nil {
		return fail(fmt.Errorf("%w: %s", err, lastLine(se.String())))
	}
	var o fitOutput
	if err := json.Unmarshal(so.Bytes(), &o); err != nil {
		return fail(fmt.Errorf("decoding the fit's JSON: %w", err))
	}
	res.Gradient, res.Chains, res.Kept, res.KSD = o.Gradient, o.Chains, o.Kept, o.KSD
	if o.Warnings != nil {
		res.Warnings = o.Warnings
	}
	var rows []paramRow
	if c.Truth != nil {
		rows, err = compareTruth(o.Params, c.Truth)
	} else {
		var ref []refParam
		if ref, err = readRef(c.Ref); err == nil {
			rows, err = compareRef(o.Params, ref, c.RefNames)
		}
	}
	if err != nil {
		return fail(err)
	}
	res.Rows = rows
	res.Summary = summarise(rows)
	if p := res.Summary.problems(res.Warnings); p != nil {
		res.Problems = p
	}
	fmt.Fprintf(stderr, "validate: %s: %s, max |z| %.2f, R-hat ≤ %.3f, ESS ≥ %.0f, %d warnings\n",
		c.Name, wall(time.Duration(res.Wall*float64(time.Second))), res.Summary.MaxAbsZ, res.Summary.MaxRhat, res.Summary.MinESS, len(res.Warnings))
	if c.Figures && out != "" {
		for _, f := range []string{"trace", "density"} {
			name := fmt.Sprintf("validation_%s_%s.png", c.Name, f)
			if err := copyFile(filepath.Join(dir, f+".png"), filepath.Join(out, "figures", name)); err != nil {
				return fail(err)
			}
			res.Figures = append(res.Figures, "figures/"+name)
		}
	}
	return res
}

func readRef(path string) ([]refParam, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ref struct{ Params []refParam }
	if err := json.Unmarshal(b, &ref); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ref.Params, nil
}

func joinFloats(x []float64) string {
	s := make([]string, len(x))
	for i, v := range x {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, ", ")
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// headRows copies the first n lines of src to dst.
func headRows(src string, n int, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return os.WriteFile(dst, []byte(b.String()), 0o644)
}

func runQuiet(bin string, args ...string) error {
	var se bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &se
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(bin), err, lastLine(se.String()))
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// hostLine describes the machine the wall times were measured on, with
// its load when the run began (Linux), since other work on the same cores
// stretches every wall time.
func hostLine() string {
	s := fmt.Sprintf("%d-core machine (runtime.NumCPU), %s/%s, %s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	if startLoad != "" {
		s += "; " + loadNote(startLoad, runtime.NumCPU())
	}
	return s
}

// loadNote says what the 1-minute load average when the run began means
// for its wall times on n cores.
func loadNote(load string, n int) string {
	l, err := strconv.ParseFloat(load, 64)
	switch {
	case err != nil:
		return fmt.Sprintf("load average %s when the run began", load)
	case l > float64(n):
		return fmt.Sprintf("load average %s when the run began: above %d, other work shared the cores and stretched the times", load, n)
	default:
		return fmt.Sprintf("load average %s when the run began (at most %d: no other work waited for the cores then)", load, n)
	}
}

// startLoad is the 1-minute load average when the run began ("" where
// /proc/loadavg does not exist).
var startLoad string

func readLoad() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}
