package sgmcmc

import (
	"bytes"
	"flag"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// TestRegisterFlags parses a flag line into FitSettings and checks every
// field the flags set.
func TestRegisterFlags(t *testing.T) {
	s := FitSettings{N: 300, Seed: 1, Progress: os.Stderr}
	fs := newFlagSet()
	s.RegisterFlags(fs)
	args := strings.Fields("-S 20 -B -1 -N 50 -Ncv 30 -filter particles -gradient cv -step 0.1 -warmup 60 " +
		"-adapt 70 -iters 80 -time 90s -thin 2 -chains 3 -seed 7 -ksd 0 -q")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	want := FitSettings{S: 20, B: -1, N: 50, CVParticles: 30, Filter: ParticleFilter, Gradient: ControlVariateGradient,
		StepSize: 0.1, WarmUp: 60, AdaptWindow: 70, Iterations: 80, MaxTime: 90 * time.Second, Thin: 2, Chains: 3,
		Seed: 7, KSDDraws: -1}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", s, want)
	}
}

// TestRegisterFlagsDefaults checks that an empty flag line leaves the
// settings as they were, that the help shows them as defaults, and the
// single-valued flags.
func TestRegisterFlagsDefaults(t *testing.T) {
	var progress bytes.Buffer
	prior := FitSettings{S: 40, B: 10, N: 300, Filter: GridFilter, Gradient: PlainGradient, StepSize: 0.2, WarmUp: 100,
		MaxTime: time.Minute, Thin: 1, Chains: 4, Seed: 1, KSDDraws: 50, Progress: &progress}
	s := prior
	fs := newFlagSet()
	s.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, prior) {
		t.Errorf("after no flags\n%+v\nwant the prior values\n%+v", s, prior)
	}
	for name, def := range map[string]string{"S": "40", "B": "10", "N": "300", "Ncv": "0", "filter": "grid",
		"gradient": "plain", "step": "0.2", "warmup": "100", "adapt": "0", "iters": "0", "time": "1m0s", "thin": "1",
		"chains": "4", "seed": "1", "ksd": "50", "q": "false"} {
		if f := fs.Lookup(name); f == nil || f.DefValue != def {
			t.Errorf("-%s: flag %+v, want default %q", name, f, def)
		}
	}

	// -q=false after -q restores Progress; -ksd 5 sets 5; a zero
	// KSDDraws (Fit's default) shows no default.
	if err := fs.Parse([]string{"-q", "-q=false", "-ksd", "5", "-gradient", "auto", "-filter", "auto"}); err != nil {
		t.Fatal(err)
	}
	if s.Progress != &progress || s.KSDDraws != 5 || s.Gradient != AutoGradient || s.Filter != AutoFilter {
		t.Errorf("Progress %v, KSDDraws %d, Gradient %v, Filter %v", s.Progress, s.KSDDraws, s.Gradient, s.Filter)
	}
	var zero FitSettings
	fs = newFlagSet()
	zero.RegisterFlags(fs)
	if d := fs.Lookup("ksd").DefValue; d != "" {
		t.Errorf("-ksd default %q for KSDDraws 0, want none", d)
	}
}

func TestRegisterFlagsErrors(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"-filter smc", `unknown filter "smc" (want auto, grid or particles)`},
		{"-gradient hmc", `unknown gradient "hmc" (want auto, cv, plain or full)`},
		{"-ksd x", `invalid value "x" for flag -ksd`},
		{"-q=maybe", `invalid boolean value "maybe" for -q`},
		{"-iters many", `invalid value "many" for flag -iters`},
	} {
		var s FitSettings
		fs := newFlagSet()
		s.RegisterFlags(fs)
		if err := fs.Parse(strings.Fields(c.args)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

// CheckFlags names the flag of the first value Fit would refuse, so a
// command reports it before reading its data; -ksd refuses a negative
// count (it used to skip the KSD silently).
func TestCheckFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"-iters", "-1"}, "-iters = -1 is negative"},
		{[]string{"-S", "-2"}, "-S = -2 is negative"},
		{[]string{"-chains", "-1"}, "-chains = -1 is negative"},
		{[]string{"-chains", "5000"}, "-chains = 5000 exceeds 4096"},
		{[]string{"-thin", "200000"}, "-thin = 200000 exceeds 100000"},
		{[]string{"-step", "1"}, "-step = 1: want a value in (0, 1)"},
		{[]string{"-step", "-0.1"}, "-step = -0.1"},
		{[]string{"-time", "-5s"}, "-time = -5s is negative"},
		{[]string{"-warmup", "-3"}, "-warmup = -3 is negative"},
	} {
		var s FitSettings
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		err := s.CheckFlags()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	var s FitSettings
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.RegisterFlags(fs)
	if err := fs.Parse([]string{"-ksd", "-5"}); err == nil {
		t.Errorf("-ksd -5: no error (KSDDraws %d)", s.KSDDraws)
	}
}
