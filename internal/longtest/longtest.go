// Package longtest gates the tests that fit whole real or simulated series
// end to end and take more than about 20 s on a 2-core machine. They run
// only when the environment variable PBSGMCMC_LONG is set (to anything but
// "" or "0"):
//
//	PBSGMCMC_LONG=1 go test -timeout 60m ./...
//
// The tests of go test ./... stay under about 20 s each, so that the whole
// check (.ci/run) stays well under 15 minutes on 2 cores; the gated ones
// repeat what examples/validate measures against the independent
// references, plus the robustness checks that need a whole fit.
package longtest

import (
	"os"
	"testing"
)

// Env is the environment variable that turns the long tests on.
const Env = "PBSGMCMC_LONG"

// Enabled reports whether the long tests run.
func Enabled() bool {
	v := os.Getenv(Env)
	return v != "" && v != "0"
}

// Skip skips t under -short, and otherwise unless the long tests are
// enabled; why says what the test does (for example "a whole fit of the
// S&P 500 series").
func Skip(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why + ": long test")
	}
	if !Enabled() {
		t.Skip(why + ": over 20 s; set " + Env + "=1 to run it")
	}
}
