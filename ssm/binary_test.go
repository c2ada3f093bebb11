package ssm_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pbsgmcmc/pbsgmcmc/ssm"
)

// littleEndianBytes encodes v with the standard library, independently of
// WriteBinary.
func littleEndianBytes(t *testing.T, v []float64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWriteBinaryFormat(t *testing.T) {
	s := ssm.Sequence{Obs: 2, Y: []float64{1.5, nan, -2, 0.25, 5e-324, -math.MaxFloat64}}
	var buf bytes.Buffer
	if err := ssm.WriteBinary(&buf, s); err != nil {
		t.Fatal(err)
	}
	if want := littleEndianBytes(t, s.Y); !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("WriteBinary wrote % x, want % x", buf.Bytes(), want)
	}

	// A sequence longer than WriteBinary's internal buffer.
	long := ssm.Sequence{Obs: 3, Y: make([]float64, 3*4001)}
	for i := range long.Y {
		long.Y[i] = float64(i) - 0.5
	}
	buf.Reset()
	if err := ssm.WriteBinary(&buf, long); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), littleEndianBytes(t, long.Y)) {
		t.Error("long sequence encoded differently from encoding/binary")
	}
}

func TestWriteBinaryErrors(t *testing.T) {
	for _, bad := range []ssm.Sequence{
		{Obs: 0, Y: []float64{1}},
		{Obs: 2, Y: []float64{1, 2, 3}},
		{Obs: 1},
		{Obs: 1, Y: []float64{1, math.Inf(1)}},
	} {
		var buf bytes.Buffer
		if err := ssm.WriteBinary(&buf, bad); !errors.Is(err, ssm.ErrData) || buf.Len() != 0 {
			t.Errorf("WriteBinary(%v) = %v after %d bytes; want ErrData and nothing written", bad, err, buf.Len())
		}
	}
	boom := errors.New("boom")
	if err := ssm.WriteBinary(failWriter{boom}, ssm.Sequence{Obs: 1, Y: []float64{1}}); !errors.Is(err, boom) {
		t.Errorf("writer error: got %v", err)
	}
}

func TestOpenBinary(t *testing.T) {
	s := ssm.Sequence{Obs: 3, Y: []float64{1, nan, -3.25, 4e100, 5, nan, 0, math.Copysign(0, -1), 1e-310}}
	var buf bytes.Buffer
	if err := ssm.WriteBinary(&buf, s); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "y.f64", buf.Bytes())

	m, err := ssm.OpenBinary(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	got := m.Seq()
	if got.Obs != 3 || got.Len() != 3 || !sameValues(got.Y, s.Y) {
		t.Errorf("mapped %v, want %v", got, s)
	}
	if math.Signbit(got.Y[7]) != true {
		t.Error("-0 lost its sign")
	}
	if err := got.Validate(3); err != nil {
		t.Error(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if after := m.Seq(); after.Y != nil || after.Len() != 0 {
		t.Errorf("Seq after Close = %v, want the zero Sequence", after)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// The same file read into memory, and mapped with another row width.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ssm.ReadBinary(bufio.NewReader(f), 3)
	if err != nil || r.Obs != 3 || !sameValues(r.Y, s.Y) {
		t.Errorf("ReadBinary = %v, %v", r, err)
	}
	m9, err := ssm.OpenBinary(path, 9)
	if err != nil || m9.Seq().Len() != 1 {
		t.Fatalf("OpenBinary(obs 9) = %v, %v", m9, err)
	}
	m9.Close()
}

// TestOpenBinaryLarge maps an 80 MB file written with encoding/binary and
// checks random accesses against the formula that generated it.
func TestOpenBinaryLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("writes an 80 MB file")
	}
	const n, obs = 10_000_000, 4
	value := func(i int) float64 { return float64(i)*0.5 - 1e6 } // exact in float64
	path := filepath.Join(t.TempDir(), "big.f64")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [8]byte
	for i := range n {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(value(i)))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	m, err := ssm.OpenBinary(path, obs)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := m.Seq()
	if s.Len() != n/obs {
		t.Fatalf("Len %d, want %d", s.Len(), n/obs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		tt := rng.IntN(s.Len())
		for j, v := range s.At(tt) {
			if want := value(tt*obs + j); v != want {
				t.Fatalf("At(%d)[%d] = %v, want %v", tt, j, v, want)
			}
		}
	}
	if last := s.At(s.Len() - 1)[obs-1]; last != value(n-1) {
		t.Errorf("last value %v, want %v", last, value(n-1))
	}
	if err := s.CheckFinite(); err != nil {
		t.Error(err)
	}
}

func TestOpenBinaryErrors(t *testing.T) {
	three := littleEndianBytes(t, []float64{1, 2, 3})
	dir := t.TempDir()

	if _, err := ssm.OpenBinary(filepath.Join(dir, "missing"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		obs  int
	}{
		{"obs 0", three, 0},
		{"obs -1", three, -1},
		{"rows do not divide", three, 2},
		{"partial value", three[:12], 1},
		{"empty file", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "y.f64", tc.data)
			m, err := ssm.OpenBinary(path, tc.obs)
			if !errors.Is(err, ssm.ErrData) || m != nil {
				t.Errorf("OpenBinary = %v, %v; want nil and an ErrData error", m, err)
			}
			_, err = ssm.ReadBinary(bytes.NewReader(tc.data), tc.obs)
			if !errors.Is(err, ssm.ErrData) {
				t.Errorf("ReadBinary: %v, want an ErrData error", err)
			}
		})
	}
	if _, err := ssm.OpenBinary(dir, 1); !errors.Is(err, ssm.ErrData) {
		t.Errorf("directory: %v, want an ErrData error", err)
	}
	boom := errors.New("boom")
	if _, err := ssm.ReadBinary(&errReader{data: string(three), err: boom}, 1); !errors.Is(err, boom) || errors.Is(err, ssm.ErrData) {
		t.Errorf("ReadBinary reader error: %v", err)
	}
}

// TestOpenBinaryInf shows that values are not validated at open and that
// CheckFinite finds a stored Inf.
func TestOpenBinaryInf(t *testing.T) {
	path := writeFile(t, "inf.f64", littleEndianBytes(t, []float64{1, 2, 3, math.Inf(-1), 5, 6}))
	m, err := ssm.OpenBinary(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = m.Seq().CheckFinite()
	if !errors.Is(err, ssm.ErrData) || err.Error() != "ssm: invalid data: observation 1, component 1 is -Inf" {
		t.Errorf("CheckFinite = %v", err)
	}
}

func BenchmarkOpenBinary(b *testing.B) {
	path := filepath.Join(b.TempDir(), "y.f64")
	s := ssm.Sequence{Obs: 1, Y: make([]float64, 1<<20)}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := ssm.WriteBinary(f, s); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ReportAllocs()
	for b.Loop() {
		m, err := ssm.OpenBinary(path, 1)
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}
