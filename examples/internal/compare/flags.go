package compare

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseInts parses a comma-separated list of positive integers.
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseFloats parses a comma-separated list of positive finite numbers.
func ParseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("%q is not a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseSet parses a comma-separated list of options from allowed.
func ParseSet(s string, allowed ...string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		ok := false
		for _, a := range allowed {
			ok = ok || f == a
		}
		if !ok {
			return nil, fmt.Errorf("unknown option %q (want %s)", f, strings.Join(allowed, ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// NewFlagSet returns a flag set that returns errors rather than exiting,
// writes them to stderr, and whose usage message is usage followed by the
// flag defaults.
func NewFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// FlagDefaults holds what differs between the commands in the shared
// flags: two defaults and three help texts.
type FlagDefaults struct {
	Out        string // default of -out
	KSDDraws   int    // default of -ksddraws
	EpsHelp    string // help of -eps
	NHelp      string // help of -N
	BurnInHelp string // help of -burnin
}

// CommonFlags holds the flags every comparison command has.
type CommonFlags struct {
	Runtime     time.Duration // -time
	Iters       int           // -iters
	Chains      int           // -chains
	Eps         []float64     // -eps, set by Parse
	N, S, B     int           // -N, -S, -B
	BurnIn      float64       // -burnin
	KSDDraws    int           // -ksddraws
	Seed        uint64        // -seed
	Out         string        // -out
	Concurrency int           // -concurrency

	eps string
}

// Register defines the shared flags on fs with the defaults d.
func (c *CommonFlags) Register(fs *flag.FlagSet, d FlagDefaults) {
	fs.DurationVar(&c.Runtime, "time", time.Second, "compute time per chain (the equal-time budget); 0 with -iters for a fixed iteration count")
	fs.IntVar(&c.Iters, "iters", 0, "iteration limit per chain (0: none)")
	fs.IntVar(&c.Chains, "chains", 5, "chains per method and step size")
	fs.StringVar(&c.eps, "eps", "1,0.1,0.01,0.001", d.EpsHelp)
	fs.IntVar(&c.N, "N", 1000, d.NHelp)
	fs.IntVar(&c.S, "S", 40, "subsequence length")
	fs.IntVar(&c.B, "B", 10, "buffer length of the Buffer method")
	fs.Float64Var(&c.BurnIn, "burnin", 0.5, d.BurnInHelp)
	fs.IntVar(&c.KSDDraws, "ksddraws", d.KSDDraws, "draws per chain scored for the KSD")
	fs.Uint64Var(&c.Seed, "seed", 1, "random seed")
	fs.StringVar(&c.Out, "out", d.Out, "output directory")
	fs.IntVar(&c.Concurrency, "concurrency", 0, "chains run at once (0: GOMAXPROCS)")
}

// Parse parses args with fs, on which Register defined c's flags, rejects
// positional arguments and parses -eps.
func (c *CommonFlags) Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if c.Eps, err = ParseFloats(c.eps); err != nil {
		return fmt.Errorf("-eps: %w", err)
	}
	return nil
}

// Check validates the shared flags except -N and -ksddraws, which the
// commands check together with their own flags.
func (c *CommonFlags) Check() error {
	switch {
	case c.Runtime < 0 || c.Iters < 0:
		return fmt.Errorf("-time and -iters must not be negative")
	case c.Runtime == 0 && c.Iters == 0:
		return fmt.Errorf("set -time or -iters")
	case c.Chains < 1:
		return fmt.Errorf("-chains = %d must be at least 1", c.Chains)
	case c.S < 1 || c.B < 0:
		return fmt.Errorf("-S = %d must be positive and -B = %d non-negative", c.S, c.B)
	case c.BurnIn < 0 || c.BurnIn >= 1:
		return fmt.Errorf("-burnin = %g must be in [0, 1)", c.BurnIn)
	}
	return nil
}

// Settings returns the Settings the shared flags fix: Eps, Runtime,
// Iterations, Chains, Concurrency, BurnIn and KSDDraws. The caller sets the
// rest. -burnin 0 keeps every draw, which Settings spells as a negative
// BurnIn.
func (c *CommonFlags) Settings() Settings {
	burn := c.BurnIn
	if burn == 0 {
		burn = -1
	}
	return Settings{
		Eps: c.Eps, Runtime: c.Runtime, Iterations: c.Iters,
		Chains: c.Chains, Concurrency: c.Concurrency,
		BurnIn: burn, KSDDraws: c.KSDDraws,
	}
}
