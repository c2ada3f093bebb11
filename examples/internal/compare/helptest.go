package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"io"
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

// ReadJSON returns the JSON file path decoded as a T, failing the test
// when it cannot be read or decoded.
func ReadJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// CheckPNG checks that path holds a PNG image at least size pixels wide
// and high, failing the test when the file cannot be opened.
func CheckPNG(t *testing.T, path string, size int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if b := img.Bounds(); b.Dx() < size || b.Dy() < size {
		t.Errorf("%s: image is %v", path, b)
	}
}

// RunFunc is a command's run: its flags, stdout and stderr.
type RunFunc = func(args []string, stdout, stderr io.Writer) error

// RunOK runs run with args and returns its stdout, failing the test with
// the error and stderr when it returns an error.
func RunOK(t *testing.T, run RunFunc, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// CheckRejects checks that run returns an error for each argument list,
// with -out a new temporary directory appended.
func CheckRejects(t *testing.T, run RunFunc, cases [][]string) {
	t.Helper()
	for _, args := range cases {
		var stdout, stderr bytes.Buffer
		args = append(args, "-out", t.TempDir())
		if err := run(args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
