//go:build unix

package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// seed is a prepared cluster (initdb once per test binary), copied into each test's data directory.
var seed string

func TestMain(m *testing.M) {
	code := func() int {
		tmp, err := os.MkdirTemp("", "densemem-pgserver-seed-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		srv, err := Start(context.Background(), tmp, &Options{NoSync: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		seed = filepath.Join(tmp, "pgdata")
		return m.Run()
	}()
	os.Exit(code)
}

// dataDir returns a fresh data directory holding a copy of the seed cluster.
func dataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-a", seed, filepath.Join(dir, "pgdata")).CombinedOutput(); err != nil {
		t.Fatalf("copy the seed cluster: %v\n%s", err, out)
	}
	return dir
}

var opts = &Options{NoSync: true}

// TestStart_SecondOpenerLocked checks that a data directory in use refuses a second opener.
func TestStart_SecondOpenerLocked(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	srv, err := Start(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	_, err = Start(context.Background(), dir, opts)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Start: %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(os.Getpid())) {
		t.Errorf("the error does not name the holder's pid %d: %v", os.Getpid(), err)
	}
}

// TestStart_StopsTheOrphanOfACrashedRun leaves a server running with its lock released, as a host
// killed with kill -9 leaves it, and checks that the next Start stops it and starts afresh.
func TestStart_StopsTheOrphanOfACrashedRun(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	srv, err := Start(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	// What a host killed with kill -9 leaves: the server running, the lock released.
	srv.release()
	oldPID, exited := srv.PID(), srv.exited
	again, err := Start(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("start after a crash: %v", err)
	}
	defer again.Stop()
	select {
	case <-exited:
	default:
		t.Errorf("the orphan (pid %d) still runs after the next Start", oldPID)
	}
	if again.PID() == oldPID {
		t.Errorf("the new server has the orphan's pid %d", oldPID)
	}
}

// TestStart_NeverSignalsAnotherProgram names a running program that is not a server in
// postmaster.pid, as after a reboot that reused the pid: Start must leave it alone and start.
func TestStart_NeverSignalsAnotherProgram(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	other := exec.Command("sleep", "600")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = other.Wait(); close(done) }()
	defer func() { _ = other.Process.Kill(); <-done }()
	pidFile := filepath.Join(dir, "pgdata", "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(other.Process.Pid)+"\n"+filepath.Join(dir, "pgdata")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := Start(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("start with a stale postmaster.pid: %v", err)
	}
	defer srv.Stop()
	select {
	case <-done:
		t.Fatalf("the other program was stopped: %v", other.ProcessState)
	default:
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the other program is gone: %v", err)
	}
}

// TestStart_NoBinaries checks the error when no PostgreSQL binaries are found: it names both ways
// to provide them.
func TestStart_NoBinaries(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), t.TempDir(), &Options{BinDir: t.TempDir()})
	if err == nil {
		t.Fatal("started without binaries")
	}
	for _, want := range []string{"Options.BinDir", "initdb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q: %v", want, err)
		}
	}
}
