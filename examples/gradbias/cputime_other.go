//go:build !linux

package main

// threadCPU is not available here: callers fall back to wall-clock time.
func threadCPU() (float64, bool) { return 0, false }
