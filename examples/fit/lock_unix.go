//go:build unix

package main

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with the given id exists (signal
// 0 checks without sending one; EPERM means it exists under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
