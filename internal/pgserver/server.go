//go:build unix

package pgserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxSocketPath is the longest Unix socket path every supported platform accepts (macOS: 104 bytes
// with the terminating NUL).
const maxSocketPath = 103

// Server is a running private PostgreSQL server. Stop stops it.
type Server struct {
	dir, pgdata, socketDir string
	bin                    binaries
	opts                   Options
	prepared               bool

	lock   *os.File
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	logf   *os.File

	stopOnce sync.Once
	stopErr  error
}

// Start starts the server of the data directory dir, creating dir and preparing the cluster (initdb)
// on the first run, and returns when it accepts connections. It fails with ErrLocked while another
// process has dir open. It stops a server a crashed earlier run of dir left behind. Stop stops it.
func Start(ctx context.Context, dir string, opts *Options) (*Server, error) {
	o := opts.orDefault()
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: data directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: data directory: %w", err)
	}
	s := &Server{dir: abs, pgdata: filepath.Join(abs, clusterDir), opts: o}
	if s.lock, err = lockDir(abs); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.release()
		}
	}()
	cred, err := serverCredential(o.ServerUser)
	if err != nil {
		return nil, err
	}
	version, err := clusterVersion(s.pgdata)
	if err != nil {
		return nil, err
	}
	if s.bin, err = findBinaries(ctx, o, version); err != nil {
		return nil, err
	}
	if s.socketDir, err = socketDir(s.pgdata); err != nil {
		return nil, err
	}
	attr, err := procAttr(cred, s.pgdata, s.bin.dir)
	if err != nil {
		return nil, err
	}
	if version == 0 {
		fmt.Fprintf(o.Log, "embedded: preparing a private PostgreSQL %d in %s (first run, initdb)\n", s.bin.major, s.pgdata)
		if err := s.initdb(ctx, cred, attr); err != nil {
			return nil, err
		}
		s.prepared = true
	}
	if err := s.stopOrphan(ctx); err != nil {
		return nil, err
	}
	if s.socketDir != s.pgdata {
		if err := ownedDir(s.socketDir, cred); err != nil {
			return nil, err
		}
	}
	if err := s.start(ctx, attr); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// lockDir takes the exclusive lock of the data directory dir, or fails with ErrLocked.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked (%s); close the other program or use another directory",
				ErrLocked, dir, strings.TrimSpace("pid "+string(holder)))
		}
		return nil, fmt.Errorf("embedded: lock %s: %w", path, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

// credential is the user the server runs as when the host is root; nil: the host's own user.
type credential struct {
	name     string
	uid, gid uint32
}

// serverCredential returns the user the server runs as: nil unless the host runs as root.
func serverCredential(name string) (*credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("embedded: running as root, the server must run as an unprivileged user, and "+
			"user %q (Options.ServerUser) was not found: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, fmt.Errorf("embedded: server user %q (Options.ServerUser) must be an unprivileged user with numeric ids, has uid %s", name, u.Uid)
	}
	return &credential{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// ownedDir creates dir (mode 0700) unless it exists, and makes cred its owner.
func ownedDir(dir string, cred *credential) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("embedded: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.uid), int(cred.gid)); err != nil {
			return fmt.Errorf("embedded: give %s to %s: %w", dir, cred.name, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// clusterVersion returns the major version of the cluster in pgdata, 0 when there is none yet.
func clusterVersion(pgdata string) (int, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "PG_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		if _, statErr := os.Stat(pgdata); statErr == nil {
			return 0, fmt.Errorf("embedded: %s exists but holds no PostgreSQL cluster (no PG_VERSION): move it away", pgdata)
		}
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("embedded: %s/PG_VERSION: %q is not a version", pgdata, b)
	}
	return v, nil
}

// socketDir is where the server puts its socket: the cluster directory itself, unless the socket's
// path would be too long for the platform; then a directory under the temporary directory named
// after the cluster's path.
func socketDir(pgdata string) (string, error) {
	if len(pgdata)+len("/.s.PGSQL.5432") <= maxSocketPath {
		return pgdata, nil
	}
	sum := sha256.Sum256([]byte(pgdata))
	d := filepath.Join(os.TempDir(), "densemem-"+hex.EncodeToString(sum[:6]))
	if len(d)+len("/.s.PGSQL.5432") > maxSocketPath {
		d = filepath.Join("/tmp", "densemem-"+hex.EncodeToString(sum[:6]))
	}
	return d, nil
}

// initdb prepares the cluster in a directory beside pgdata and renames it into place, so that an
// interrupted first run leaves no half-made cluster.
func (s *Server) initdb(ctx context.Context, cred *credential, attr *syscall.SysProcAttr) error {
	tmp := s.pgdata + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	if err := ownedDir(tmp, cred); err != nil {
		return err
	}
	var lastErr error
	for _, locale := range []string{"C.UTF-8", "C.utf8", "en_US.UTF-8", "C"} {
		args := []string{"-D", tmp, "-U", Superuser, "-A", "trust", "-E", "UTF8", "--locale=" + locale, "--no-instructions"}
		if s.opts.NoSync {
			args = append(args, "--no-sync")
		}
		cmd := exec.CommandContext(ctx, s.bin.initdb, args...)
		cmd.SysProcAttr = attr
		cmd.Dir = "/"
		cmd.Env = serverEnv()
		out, err := cmd.CombinedOutput()
		if err == nil {
			if err := os.Rename(tmp, s.pgdata); err != nil {
				return fmt.Errorf("embedded: %w", err)
			}
			return nil
		}
		lastErr = fmt.Errorf("embedded: initdb (%s) failed: %v\n%s", s.bin.initdb, err, bytes.TrimSpace(out))
		if !bytes.Contains(out, []byte("locale")) || ctx.Err() != nil {
			break
		}
		// initdb removes what it made in the directory when it fails: try the next locale.
	}
	_ = os.RemoveAll(tmp)
	return lastErr
}

// serverEnv is the environment of initdb and the server: the host's, without the libpq variables
// that would point them elsewhere.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// start runs the postmaster and waits until it accepts connections.
func (s *Server) start(ctx context.Context, attr *syscall.SysProcAttr) error {
	logf, err := os.OpenFile(filepath.Join(s.dir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("embedded: server log: %w", err)
	}
	s.logf = logf
	offset, _ := logf.Seek(0, 2)
	args := []string{"-D", s.pgdata,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + s.socketDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "port=" + strconv.Itoa(port),
		"-c", "max_connections=200",
	}
	if s.opts.NoSync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	cmd := exec.Command(s.bin.postgres, args...)
	cmd.SysProcAttr = attr
	cmd.Dir = "/"
	cmd.Env = serverEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("embedded: start %s: %w", s.bin.postgres, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	fmt.Fprintf(s.opts.Log, "embedded: starting PostgreSQL %d (pid %d) in %s\n", s.bin.major, cmd.Process.Pid, s.dir)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		// Ready when the cluster's postmaster.pid names this process (not a server that still holds
		// the socket) and a connection succeeds.
		err := s.ownsCluster(cmd.Process.Pid)
		if err == nil {
			err = s.ping(ctx)
		}
		if err == nil {
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("embedded: the server exited while starting (%s): %s", cmd.ProcessState, s.logSince(offset))
		case <-ctx.Done():
			s.stop()
			return fmt.Errorf("embedded: the server did not accept connections in time (%v; last: %v): %s", ctx.Err(), err, s.logSince(offset))
		case <-tick.C:
		}
	}
}

// ownsCluster reports whether the cluster's postmaster.pid names pid.
func (s *Server) ownsCluster(pid int) error {
	b, err := os.ReadFile(filepath.Join(s.pgdata, "postmaster.pid"))
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if strings.TrimSpace(first) != strconv.Itoa(pid) {
		return fmt.Errorf("postmaster.pid names pid %s, not %d", strings.TrimSpace(first), pid)
	}
	return nil
}

// ping connects to the maintenance database once.
func (s *Server) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.AdminURL())
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// logSince returns the server log written after offset, at most its last 2 KiB.
func (s *Server) logSince(offset int64) string {
	b, err := os.ReadFile(filepath.Join(s.dir, logFile))
	if err != nil || int64(len(b)) < offset {
		return "(no log)"
	}
	b = b[offset:]
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return "server log " + filepath.Join(s.dir, logFile) + ":\n" + string(bytes.TrimSpace(b))
}

// Stop stops the server with a fast shutdown (sessions are ended, committed data is checkpointed),
// waits for it to exit and releases the data directory. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.stopErr = s.stop()
		s.release()
	})
	return s.stopErr
}

// stop signals the postmaster and waits: fast shutdown, then immediate shutdown after 30 seconds.
func (s *Server) stop() error {
	if s.cmd == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
		return nil
	case <-time.After(30 * time.Second):
	}
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.exited:
		return fmt.Errorf("embedded: the server did not finish a fast shutdown in 30s; stopped it immediately (it recovers on the next start)")
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("embedded: the server did not stop; killed it")
	}
}

// release closes the log and unlocks the data directory.
func (s *Server) release() {
	if s.logf != nil {
		s.logf.Close()
	}
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
	}
}

// stopOrphan stops a server a crashed run of this data directory left behind, named by its
// postmaster.pid. The caller holds the directory's lock, so no live opener of it owns that server.
// A postmaster.pid whose process is gone, or is no server of this cluster, is left to PostgreSQL
// (gone) or removed (another program now has that pid); a process is signalled only when it is a
// postgres whose data directory is this one.
func (s *Server) stopOrphan(ctx context.Context) error {
	pidPath := filepath.Join(s.pgdata, "postmaster.pid")
	b, err := os.ReadFile(pidPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return nil // unreadable: PostgreSQL judges it on start
	}
	switch serverOf(pid, s.pgdata) {
	case processGone:
		return nil // PostgreSQL removes a stale postmaster.pid itself
	case processOther:
		fmt.Fprintf(s.opts.Log, "embedded: postmaster.pid names pid %d, now another program: removing the stale file\n", pid)
		if err := os.Remove(pidPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("embedded: remove stale %s: %w", pidPath, err)
		}
		return nil
	case processUnknown:
		return fmt.Errorf("embedded: %s names pid %d, which is running and could not be identified as this "+
			"directory's server; stop it, or remove postmaster.pid if no server runs on %s", pidPath, pid, s.pgdata)
	}
	fmt.Fprintf(s.opts.Log, "embedded: stopping the server (pid %d) a crashed run left in %s\n", pid, s.dir)
	_ = syscall.Kill(pid, syscall.SIGINT)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	quit := time.After(30 * time.Second)
	for serverOf(pid, s.pgdata) == processOurs {
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded: the server a crashed run left (pid %d) did not stop: %w", pid, ctx.Err())
		case <-quit:
			_ = syscall.Kill(pid, syscall.SIGQUIT)
		case <-tick.C:
		}
	}
	return nil
}

// processKind is what serverOf found at a pid.
type processKind int

const (
	processGone    processKind = iota // no such process (or a zombie)
	processOurs                       // a postgres running on this cluster
	processOther                      // a process that is not a postgres on this cluster
	processUnknown                    // running, and could not be identified
)

// Discard removes the data directory dir and everything in it, after stopping a server a crashed
// run of it left behind. It fails with ErrLocked while another process has dir open. Test helpers
// use it to clean up the directories of test processes that died.
func Discard(ctx context.Context, dir string, opts *Options) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("embedded: data directory %q: %w", dir, err)
	}
	s := &Server{dir: abs, pgdata: filepath.Join(abs, clusterDir), opts: opts.orDefault()}
	if s.lock, err = lockDir(abs); err != nil {
		return err
	}
	defer s.release()
	if err := s.stopOrphan(ctx); err != nil {
		return err
	}
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("embedded: remove %s: %w", abs, err)
	}
	return nil
}

// PID is the server's process id (the postmaster's).
func (s *Server) PID() int { return s.cmd.Process.Pid }
