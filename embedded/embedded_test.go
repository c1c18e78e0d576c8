//go:build unix

package embedded_test

import (
	"bufio"
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
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/embedded"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
	"github.com/densemem/densemem/store/storetest"
)

// envCrashHost makes the test binary a host that opens the data directory it names, records a team
// and waits to be killed (TestCrash_KillHostThenReopen).
const envCrashHost = "DENSEMEM_EMBEDDED_CRASH_HOST"

// seed is a prepared cluster (initdb once per test binary), copied into each test's data directory.
var seed string

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashHost); dir != "" {
		crashHost(dir)
		return
	}
	// These tests are about the private server: use one even though a local server answers.
	os.Setenv("DENSEMEM_TEST_SERVER", "embedded")
	code := func() int {
		tmp, err := os.MkdirTemp("", "densemem-embedded-seed-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(tmp)
		srv, err := embedded.Start(context.Background(), tmp, &embedded.Options{NoSync: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		seed = filepath.Join(tmp, "pgdata")
		code := m.Run()
		if err := testdb.StopEmbedded(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
		return code
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

var opts = &embedded.Options{NoSync: true}

// TestConformance runs the store conformance suite on a private server, as store/postgres runs it on
// an external one: the runtime role for profile calls, the reviewer role for the reviewer's.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store {
			pool := testdb.New(t)
			return postgres.New(testdb.AsRole(t, pool, migrations.DefaultRuntimeRole),
				&postgres.Options{BindingKey: testdb.BindingKey(t, pool)})
		},
		Reviewer: func(t *testing.T, s store.Store) store.Store {
			pool := s.(*postgres.Store).Pool()
			return postgres.New(testdb.AsRole(t, pool, migrations.DefaultReviewerRole),
				&postgres.Options{BindingKey: testdb.BindingKey(t, pool)})
		},
	})
	admin, err := testdb.AdminURL()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(admin, "host=%2F") {
		t.Errorf("the suite ran on %s, not on a private server's socket", admin)
	}
}

// TestOpen_PersistsAcrossRunsAsTheRoles opens a data directory, records a team, closes, opens again
// and finds it; the stores connect as the runtime and reviewer roles.
func TestOpen_PersistsAcrossRunsAsTheRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dataDir(t)
	db, err := embedded.Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	for st, want := range map[*postgres.Store]string{db.Store: migrations.DefaultRuntimeRole, db.ReviewStore: migrations.DefaultReviewerRole} {
		var user string
		if err := st.Pool().QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
			t.Fatal(err)
		}
		if user != want {
			t.Errorf("store connects as %s, want %s", user, want)
		}
	}
	team := createTeam(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = embedded.Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Server.Prepared() {
		t.Error("the second open prepared the cluster again")
	}
	checkTeam(t, db, team)
}

func client(t *testing.T, db *embedded.DB) *densemem.Client {
	t.Helper()
	c, err := densemem.New(db.Store, &densemem.Config{Nightly: densemem.NightlyConfig{Store: db.ReviewStore}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createTeam(t *testing.T, db *embedded.DB) densemem.TeamID {
	t.Helper()
	team, err := client(t, db).CreateTeam(context.Background(), densemem.CreateTeamRequest{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return team
}

func checkTeam(t *testing.T, db *embedded.DB, team densemem.TeamID) {
	t.Helper()
	if _, err := client(t, db).TeamPolicy(context.Background(), densemem.HostPrincipal(team)); err != nil {
		t.Errorf("team %s after a restart: %v", team, err)
	}
}

// TestCrash_KillHostThenReopen starts a host process that opens a data directory and records a team,
// kills it with SIGKILL, and opens the directory again: the open succeeds, the team is there, and the
// server the host left is gone.
func TestCrash_KillHostThenReopen(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), envCrashHost+"="+dir)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = host.Process.Kill()
		_ = host.Wait()
		t.Fatalf("the host did not report: %v", err)
	}
	var team string
	var serverPID int
	if _, err := fmt.Sscanf(line, "ready %s %d", &team, &serverPID); err != nil {
		t.Fatalf("the host reported %q: %v", line, err)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()

	db, err := embedded.Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatalf("open after the host was killed: %v", err)
	}
	defer db.Close()
	checkTeam(t, db, densemem.TeamID(team))
	if db.Server.PID() == serverPID {
		t.Fatalf("the new server has the old one's pid %d", serverPID)
	}
	if err := syscall.Kill(serverPID, 0); err == nil && isPostgres(serverPID) {
		t.Errorf("the killed host's server (pid %d) still runs", serverPID)
	}
}

// isPostgres reports whether pid is a running postgres (not a zombie or a reused pid).
func isPostgres(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	return strings.Contains(s, "(postgres)") && !strings.Contains(s, ") Z")
}

// crashHost is the host of TestCrash_KillHostThenReopen: open, record a team, report, wait.
func crashHost(dir string) {
	ctx := context.Background()
	db, err := embedded.Open(ctx, dir, &embedded.Options{NoSync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash host:", err)
		os.Exit(1)
	}
	c, err := densemem.New(db.Store, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash host:", err)
		os.Exit(1)
	}
	team, err := c.CreateTeam(ctx, densemem.CreateTeamRequest{Name: "survives"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash host:", err)
		os.Exit(1)
	}
	fmt.Printf("ready %s %d\n", team, db.Server.PID())
	time.Sleep(time.Hour) // killed by the test
}
