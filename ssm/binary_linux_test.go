package ssm_test

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// TestOpenBinaryAdvisesRandom: OpenBinary's mapping carries the
// random-access hint (the "rr" flag of /proc/self/smaps, set by
// madvise(MADV_RANDOM)), and the values read through it are those
// written, at the start, in the middle and at the end of a 4 MB file.
func TestOpenBinaryAdvisesRandom(t *testing.T) {
	const T = 1 << 19 // 4 MiB of float64
	y := make([]float64, T)
	for i := range y {
		y[i] = math.Sin(float64(i)) * float64(i%1000)
	}
	y[12345] = math.NaN()
	path := filepath.Join(t.TempDir(), "y.bin")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ssm.WriteBinary(f, ssm.Sequence{Obs: 1, Y: y}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	m, err := ssm.OpenBinary(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := m.Seq()
	if got.Len() != T {
		t.Fatalf("T = %d, want %d", got.Len(), T)
	}
	for _, i := range []int{0, 1, 12345, T / 2, T/2 + 7, T - 1} {
		if g := got.Y[i]; g != y[i] && !(math.IsNaN(g) && math.IsNaN(y[i])) {
			t.Errorf("row %d: %v, want %v", i, g, y[i])
		}
	}
	addr := uintptr(unsafe.Pointer(&got.Y[0]))
	flags, err := vmFlags(addr)
	if err != nil {
		t.Skipf("cannot read /proc/self/smaps: %v", err)
	}
	if !strings.Contains(" "+flags+" ", " rr ") {
		t.Errorf("mapping at %#x has VmFlags %q, want rr (MADV_RANDOM)", addr, flags)
	}
}

// vmFlags returns the VmFlags line of the /proc/self/smaps entry holding
// addr.
func vmFlags(addr uintptr) (string, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = addr >= lo && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:")), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no mapping holds %#x", addr)
}
