package compare

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// CheckHelpExits is the body of a command's TestHelpExitsZero (test is
// that test's name): it runs main with -h, -help and an unknown flag in a
// subprocess of the test binary and checks the exit codes 0, 0 and 1 and
// that the usage (mentioning -seed) went to stderr. In the subprocess it
// runs main and returns.
func CheckHelpExits(t *testing.T, test, name string, main func()) {
	t.Helper()
	if arg := os.Getenv("HELP_TEST_ARG"); arg != "" {
		os.Args = []string{name, arg}
		main()
		return
	}
	for _, c := range []struct {
		arg  string
		code int
	}{{"-h", 0}, {"-help", 0}, {"-no-such-flag", 1}} {
		cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
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
