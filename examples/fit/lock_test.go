package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID returns the id of a process that has exited (and been reaped).
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// One run per output directory: a second one fails at once naming the
// first's PID (before reading its data); a lock of a process that is gone,
// or one holding no PID, is taken over with a note; release removes only
// this process's lock.
func TestOutputLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, lockName)
	release, err := acquireLock(path, "-out", dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	me := strconv.Itoa(os.Getpid())
	if _, err := acquireLock(path, "-out", dir, io.Discard); err == nil || !strings.Contains(err.Error(), "PID "+me) {
		t.Errorf("second lock: error %v, want one naming PID %s", err, me)
	}
	// The command itself, on a locked directory, stops before the data.
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"-out", dir, "-data", filepath.Join(dir, "missing.csv"), "-q"}, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "in use by another fit (PID "+me) || strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("run on a locked -out: error %v, want the lock's, naming PID %s", err, me)
	}
	release()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after release the lock file remains: %v", err)
	}

	for _, stale := range []string{fmt.Sprintf("%d\n", deadPID(t)), "garbage", ""} {
		if err := os.WriteFile(path, []byte(stale), 0o644); err != nil {
			t.Fatal(err)
		}
		var note bytes.Buffer
		release, err := acquireLock(path, "-out", dir, &note)
		if err != nil {
			t.Fatalf("stale lock %q: %v", stale, err)
		}
		if pid, ok := lockOwner(path); !ok || pid != os.Getpid() {
			t.Errorf("stale lock %q: the lock holds %d, %v after the takeover", stale, pid, ok)
		}
		want := "taking over the lock " + path
		if n := strings.Count(note.String(), "\n"); n != 1 || !strings.Contains(note.String(), want) ||
			stale != "garbage" && stale != "" && !strings.Contains(note.String(), "PID "+strings.TrimSpace(stale)) {
			t.Errorf("stale lock %q: stderr %q, want one note %q naming the PID", stale, note.String(), want)
		}
		// Another process's lock is left alone by release.
		os.WriteFile(path, []byte("1\n"), 0o644)
		release()
		if b, _ := os.ReadFile(path); string(b) != "1\n" {
			t.Errorf("release removed or changed another process's lock: %q", b)
		}
		os.Remove(path)
	}
}

// Finished output files appear whole: while one is written, its path
// holds the old content; an error leaves the old file and no temporary.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.png")
	os.WriteFile(path, []byte("old"), 0o644)
	err := writeAtomic(path, func(tmp string) error {
		if filepath.Ext(tmp) != ".png" || filepath.Dir(tmp) != dir {
			t.Errorf("temporary name %s: want one in %s ending in .png", tmp, dir)
		}
		if err := os.WriteFile(tmp, []byte("half"), 0o644); err != nil {
			return err
		}
		if b, _ := os.ReadFile(path); string(b) != "old" {
			t.Errorf("during the write the file holds %q", b)
		}
		return os.WriteFile(tmp, []byte("new"), 0o644)
	})
	if b, _ := os.ReadFile(path); err != nil || string(b) != "new" {
		t.Errorf("after the write: %q, %v", b, err)
	}
	err = writeAtomic(path, func(tmp string) error {
		os.WriteFile(tmp, []byte("torn"), 0o644)
		return errors.New("disk full")
	})
	if b, _ := os.ReadFile(path); err == nil || string(b) != "new" {
		t.Errorf("failed write: %q, %v; want the old content and the error", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
