//go:build unix

package ssm

import (
	"os"
	"syscall"
	"unsafe"
)

// mapFile maps size bytes of f read-only and aliases them as float64s.
// The mapping outlives f, which the caller closes.
func mapFile(f *os.File, path string, size, obs int) (*MappedSequence, error) {
	data, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	// A filter reads a window of a few hundred rows at a random place:
	// tell the kernel not to read ahead around each fault, so a window
	// does not pull in megabytes of the file (Linux; elsewhere adviseRandom
	// does nothing). The advice only tunes paging, so a failure is ignored.
	_ = adviseRandom(data)
	// mmap returns page-aligned memory, so the float64s are aligned; the
	// host is little-endian (checked by OpenBinary), so the bytes are the
	// values.
	y := unsafe.Slice((*float64)(unsafe.Pointer(&data[0])), size/8)
	return &MappedSequence{seq: Sequence{Obs: obs, Y: y}, data: data}, nil
}

func unmap(data []byte) error { return syscall.Munmap(data) }

// adviseRandom gives the kernel the random-access hint (MADV_RANDOM) for a
// mapping. syscall.Madvise exists only on Linux, where binary_linux.go
// sets it; on other Unix systems it is a no-op.
var adviseRandom = func([]byte) error { return nil }
