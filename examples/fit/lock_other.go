//go:build !unix

package main

import "os"

// processAlive reports whether a process with the given id exists. Where
// there is no signal 0, os.FindProcess opens the process (Windows), which
// fails when it is gone.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
