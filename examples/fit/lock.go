package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// lockName is the lock file a run keeps in its -out directory.
const lockName = "fit.lock"

// acquireLock makes path (a lock file: the owner's PID and a newline)
// this process's, for the run's use of what (the -out directory, the
// -checkpoint path) named by flag. A lock held by a running process is an
// error naming its PID; a stale one (its process is gone, or the file
// holds no PID) is taken over with a note on stderr. release removes the
// lock if it is still this process's.
//
// Two runs that find the same stale lock at the same moment can both take
// it over (the remove and the create are two steps); the lock protects
// against the common case, a second run started while the first works.
func acquireLock(path, flag, what string, stderr io.Writer) (release func(), err error) {
	me := os.Getpid()
	for range 3 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := fmt.Fprintf(f, "%d\n", me)
			if err := errors.Join(werr, f.Close()); err != nil {
				os.Remove(path)
				return nil, fmt.Errorf("%s %s: cannot write the lock file %s: %v", flag, what, path, err)
			}
			return func() {
				if pid, ok := lockOwner(path); ok && pid == me {
					os.Remove(path)
				}
			}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s %s: cannot create the lock file %s: %v", flag, what, path, unwrapPath(err))
		}
		pid, ok := lockOwner(path)
		switch {
		case ok && (pid == me || processAlive(pid)):
			return nil, fmt.Errorf("%s %s is in use by another fit (PID %d; lock file %s): wait for it to end, or choose another %s "+
				"(if no such fit runs, delete the lock file)", flag, what, pid, path, flag)
		case ok:
			fmt.Fprintf(stderr, "fit: note: taking over the lock %s of PID %d, which is no longer running\n", path, pid)
		default:
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				continue // released meanwhile
			}
			fmt.Fprintf(stderr, "fit: note: taking over the lock %s, which holds no process id\n", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s %s: cannot remove the stale lock file %s: %v", flag, what, path, unwrapPath(err))
		}
	}
	return nil, fmt.Errorf("%s %s: the lock file %s keeps changing: another fit is starting with it", flag, what, path)
}

// lockOwner returns the PID a lock file holds (false when it holds none
// or cannot be read).
func lockOwner(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return pid, err == nil && pid > 0
}

// unwrapPath returns the cause of a *fs.PathError (the messages name the
// path already).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// writeAtomic writes a finished output file: write fills a temporary
// file in the directory of path (a name starting with ".tmp-" and ending
// like path, so that a plotter choosing the format by the extension
// still does), which is then renamed over path. A reader (a browser, a
// script polling the directory) thus sees the old file or the whole new
// one, never part of one; on an error path is left as it was.
func writeAtomic(path string, write func(tmp string) error) error {
	dir, base := filepath.Split(path)
	tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d-%s", os.Getpid(), base))
	if err := write(tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
