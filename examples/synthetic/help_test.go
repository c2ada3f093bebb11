package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHelpExitsZero runs main with -h (and a bad flag) in a subprocess:
// -h prints the usage and exits 0, like the other examples; an unknown
// flag exits 1.
func TestHelpExitsZero(t *testing.T) {
	if arg := os.Getenv("HELP_TEST_ARG"); arg != "" {
		os.Args = []string{"synthetic", arg}
		main()
		return
	}
	for _, c := range []struct {
		arg  string
		code int
	}{{"-h", 0}, {"-help", 0}, {"-no-such-flag", 1}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelpExitsZero$")
		cmd.Env = append(os.Environ(), "HELP_TEST_ARG="+c.arg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stderr.String(), "-seed") {
			t.Errorf("%s: exit %d, want %d; stderr %q", c.arg, code, c.code, stderr.String())
		}
	}
}
