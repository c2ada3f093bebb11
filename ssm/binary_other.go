//go:build !unix

package ssm

import "os"

// mapFile reads the file into memory: this platform has no syscall.Mmap.
func mapFile(f *os.File, path string, size, obs int) (*MappedSequence, error) {
	s, err := readBinary(f, obs, size/8)
	if err != nil {
		return nil, err
	}
	return &MappedSequence{seq: s}, nil
}

func unmap(data []byte) error { return nil }
