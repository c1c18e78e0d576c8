// Package testdb provisions PostgreSQL databases for tests in the style of pgtestdb: the embedded
// migrations are applied once per server to a template database keyed by migrations.Hash(), and
// every test gets its own clone of that template, dropped when the test ends.
//
// The server is found, in order, from the DENSEMEM_TEST_DATABASE_URL environment variable (a URL
// to any database on the server, used as the maintenance connection), from a PostgreSQL accepting
// postgres@127.0.0.1:5432 without a password, from a private server of the test process (package
// embedded, on the machine's installed PostgreSQL binaries, in a temporary directory), or from a
// container fallback registered with RegisterContainer (package densememtest/container starts a
// postgres:15-alpine container through testcontainers-go when Docker is available; this package
// never imports Docker's client, so a host importing densememtest does not depend on it). With
// DENSEMEM_TEST_SERVER=embedded the private server is used even when another answers. With none of
// these a test fails; it is never skipped.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/pgserver"
	"github.com/densemem/densemem/migrations"
)

const (
	// envURL names the environment variable that points the tests at a server.
	envURL = "DENSEMEM_TEST_DATABASE_URL"
	// envServer, set to "embedded", makes the tests use a private server of their own even when
	// envURL is set or a local server answers.
	envServer = "DENSEMEM_TEST_SERVER"
	// embeddedPrefix names the temporary data directories of the test processes' private servers.
	embeddedPrefix = "densemem-test-"
	// localURL is tried when envURL is unset.
	localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	// containerPackage is the package whose import registers the container fallback.
	containerPackage = "github.com/densemem/densemem/densememtest/container"

	// templatePrefix and clonePrefix name the databases this package creates.
	templatePrefix = "densemem_tpl_"
	clonePrefix    = "densemem_t_"

	// lockKey is the pg_advisory_lock key held while the template is checked or built. It spells
	// "densemtd" and differs from goose's migration lock key.
	lockKey int64 = 0x64656e73656d7464

	// maxConns bounds each test's pool: test binaries run in parallel against one server.
	maxConns = 12

	// cloneAttempts and cloneBackoff bound the retries of CREATE DATABASE ... TEMPLATE while the
	// template is briefly in use (SQLSTATE 55006).
	cloneAttempts = 10
	cloneBackoff  = 50 * time.Millisecond

	// setupTimeout bounds template creation (including waiting for another process that holds
	// the lock while it migrates) and each clone or drop.
	setupTimeout = 2 * time.Minute
)

var (
	// containerMu guards startContainer, the fallback RegisterContainer set (nil: none).
	containerMu    sync.Mutex
	startContainer func() (string, error)

	adminOnce sync.Once
	adminURL  string
	adminErr  error

	// tplMu guards tplReady; a failed build leaves tplReady false so the next test retries.
	tplMu    sync.Mutex
	tplReady bool
)

// RegisterContainer sets the last resort of AdminURL: start returns the maintenance URL of a server
// it started (a container), or why it could not. Package densememtest/container registers one when
// imported; a later registration replaces an earlier one. It has no effect once AdminURL has run.
func RegisterContainer(start func() (string, error)) {
	containerMu.Lock()
	startContainer = start
	containerMu.Unlock()
}

// AdminURL returns the URL of the server's maintenance database used to create and drop test
// databases. It consults DENSEMEM_TEST_DATABASE_URL, then postgres@127.0.0.1:5432, then the container
// fallback RegisterContainer set, if any. The result is computed once per process. The error says
// how to provide a server.
func AdminURL() (string, error) {
	adminOnce.Do(func() { adminURL, adminErr = resolveAdminURL() })
	return adminURL, adminErr
}

func resolveAdminURL() (string, error) {
	switch v := strings.TrimSpace(os.Getenv(envServer)); v {
	case "":
	case "embedded":
		return startEmbedded()
	default:
		return "", fmt.Errorf("testdb: %s=%q: the only value is \"embedded\"", envServer, v)
	}
	if u := strings.TrimSpace(os.Getenv(envURL)); u != "" {
		return u, nil
	}
	localErr := ping(localURL, 2*time.Second)
	if localErr == nil {
		return localURL, nil
	}
	u, embeddedErr := startEmbedded()
	if embeddedErr == nil {
		return u, nil
	}
	containerMu.Lock()
	start := startContainer
	containerMu.Unlock()
	if start == nil {
		return "", fmt.Errorf("testdb: no PostgreSQL server for tests: set %s to a URL of a database on a "+
			"server where the user may create databases, or run PostgreSQL on 127.0.0.1:5432 accepting user "+
			"postgres without a password, or install PostgreSQL %d+ binaries for a private server, or import %q "+
			"in the tests (a blank import) and start Docker so a container can be started (127.0.0.1:5432: %v; "+
			"private server: %v)", envURL, pgserver.MinVersion, containerPackage, localErr, embeddedErr)
	}
	u, dockerErr := start()
	if dockerErr == nil {
		return u, nil
	}
	return "", fmt.Errorf("testdb: no PostgreSQL server for tests: set %s to a URL of a database on a "+
		"server where the user may create databases, or run PostgreSQL on 127.0.0.1:5432 accepting user "+
		"postgres without a password, or install PostgreSQL %d+ binaries for a private server, or install and "+
		"start Docker so a container can be started (127.0.0.1:5432: %v; private server: %v; docker: %v)",
		envURL, pgserver.MinVersion, localErr, embeddedErr, dockerErr)
}

// embeddedServer is the test process's private server, when it has one.
var embeddedServer *pgserver.Server

// StopEmbedded stops the test process's private server, if it started one, and removes its
// directory; a TestMain may call it after m.Run. Without it the server shuts down when the test
// process exits (on Linux) and a later test process removes the directory.
func StopEmbedded() error {
	if embeddedServer == nil {
		return nil
	}
	err := embeddedServer.Stop()
	if rmErr := os.RemoveAll(embeddedServer.Dir()); err == nil {
		err = rmErr
	}
	embeddedServer = nil
	return err
}

// startEmbedded starts a private server in a fresh temporary directory (without fsync: test data
// need not survive a machine crash) and returns its maintenance URL.
func startEmbedded() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	discardAbandoned(ctx)
	dir, err := os.MkdirTemp("", embeddedPrefix)
	if err != nil {
		return "", err
	}
	srv, err := pgserver.Start(ctx, dir, &pgserver.Options{NoSync: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	embeddedServer = srv
	return srv.AdminURL(), nil
}

// discardAbandoned removes the private servers' directories of test processes that have gone (their
// lock is free); those of running processes are locked and stay. A directory whose lock file is
// younger than a minute is left alone: its process may be about to take the lock.
func discardAbandoned(ctx context.Context) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), embeddedPrefix+"*"))
	for _, d := range dirs {
		fi, err := os.Stat(filepath.Join(d, "densemem.lock"))
		if err != nil || time.Since(fi.ModTime()) < time.Minute {
			continue
		}
		_ = pgserver.Discard(ctx, d, nil)
	}
}

// ping reports whether a connection to connString succeeds within timeout.
func ping(connString string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = timeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// New returns a pool on a fresh, migrated database of its own, dropped when the test ends. The
// pool holds at most 12 connections and is closed before the database is dropped.
func New(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	admin, name := create(tb)
	return open(tb, admin, name)
}

// open returns a pool on database name, closed when the test ends (before the database is dropped).
func open(tb testing.TB, admin, name string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(admin)
	if err != nil {
		tb.Fatalf("testdb: parse admin URL: %v", err)
	}
	cfg.ConnConfig.Database = name
	// Tests read and write Dense-Mem's tables by their plain names.
	cfg.ConnConfig.RuntimeParams["search_path"] = migrations.DefaultSchema
	cfg.MaxConns = maxConns
	if cfg.MinConns > cfg.MaxConns {
		cfg.MinConns = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("testdb: open pool on %s: %v", name, err)
	}
	// Cleanups run last-in first-out: the pool closes before create's cleanup drops the database.
	tb.Cleanup(pool.Close)
	return pool
}

// NewURL is New but returns the connection string of the fresh database, for a caller that opens
// its own pool or connection. The database is dropped (with FORCE, so open connections are ended)
// when the test ends.
func NewURL(tb testing.TB) string {
	tb.Helper()
	admin, name := create(tb)
	u, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("testdb: %v", err)
	}
	return u
}

// NewHostURL is NewURL without the schema as search_path: the connection string of a fresh
// database as a host would hold it, for tests of programs that must name the schema themselves.
func NewHostURL(tb testing.TB) string {
	tb.Helper()
	raw := NewURL(tb)
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		// A keyword/value string: withDatabase appended the setting last.
		return strings.TrimSuffix(raw, " search_path="+migrations.DefaultSchema)
	}
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String()
}

// AsRole returns a pool on pool's database that connects as role (one of the roles the migrations
// create, which log in without a password on a trust-authenticated test server), closed when the
// test ends. Tests use it to run the library under its runtime and reviewer roles.
func AsRole(tb testing.TB, pool *pgxpool.Pool, role string) *pgxpool.Pool {
	tb.Helper()
	cfg := pool.Config().Copy()
	cfg.ConnConfig.User = role
	cfg.ConnConfig.Password = ""
	// The library names its tables with their schema; without a search_path a statement that does
	// not fails here as it would on a host's pool.
	cfg.ConnConfig.RuntimeParams["search_path"] = "public"
	// The settings a host's pool pins (postgres.PinConnParams): role defaults cannot change them.
	for k, v := range migrations.ConnParams() {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("testdb: pool as %s: %v", role, err)
	}
	tb.Cleanup(p.Close)
	return p
}

// NewEmpty returns a pool on a fresh database with no migrations applied (made from template0), for
// tests of the migrations themselves. It is dropped when the test ends.
func NewEmpty(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	admin, err := AdminURL()
	if err != nil {
		tb.Fatalf("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	name := clonePrefix + randomHex(8)
	if err := withAdmin(ctx, admin, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE template0")
		return err
	}); err != nil {
		tb.Fatalf("testdb: create %s: %v", name, err)
	}
	tb.Cleanup(func() { drop(tb, admin, name) })
	return open(tb, admin, name)
}

// create makes a fresh clone of the template, registers its drop, and returns the admin URL and
// the clone's name.
func create(tb testing.TB) (admin, name string) {
	tb.Helper()
	admin, name, err := Clone(context.Background(), tb.Logf)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { drop(tb, admin, name) })
	return admin, name
}

// Clone makes a fresh clone of the migrated template, for callers without a testing.TB (runnable
// examples): it returns the admin URL and the clone's name; Drop removes it. logf reports retries.
func Clone(ctx context.Context, logf func(string, ...any)) (admin, name string, err error) {
	admin, err = AdminURL()
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	tpl := templateName()
	if err := ensureTemplate(ctx, admin, tpl); err != nil {
		return "", "", fmt.Errorf("testdb: template %s: %w", tpl, err)
	}
	name = clonePrefix + randomHex(8)
	err = clone(ctx, admin, tpl, name, logf)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
		// The template vanished (another checkout with other migrations dropped it as stale):
		// build it again once.
		forgetTemplate()
		if err = ensureTemplate(ctx, admin, tpl); err == nil {
			err = clone(ctx, admin, tpl, name, logf)
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("testdb: create %s from %s: %w", name, tpl, err)
	}
	return admin, name, nil
}

// URL returns the connection string of database name on the admin URL's server, as the tests use
// it (search_path the schema).
func URL(admin, name string) (string, error) { return withDatabase(admin, name) }

// Drop drops a database Clone made, ending its connections.
func Drop(ctx context.Context, admin, name string) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	return withAdmin(ctx, admin, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
		return err
	})
}

// drop drops a test database, ending its connections.
func drop(tb testing.TB, admin, name string) {
	if err := Drop(context.Background(), admin, name); err != nil {
		tb.Errorf("testdb: drop %s: %v", name, err)
	}
}

// templateName returns the name of the migrated template database for the embedded migrations:
// "densemem_tpl_" and the first 16 hex digits of migrations.Hash().
func templateName() string {
	return templatePrefix + migrations.Hash()[:16]
}

func forgetTemplate() {
	tplMu.Lock()
	tplReady = false
	tplMu.Unlock()
}

// ensureTemplate makes sure the template tpl exists, is migrated and is marked as a template. It
// serialises goroutines with tplMu and processes with a server-wide advisory lock.
func ensureTemplate(ctx context.Context, admin, tpl string) error {
	tplMu.Lock()
	defer tplMu.Unlock()
	if tplReady {
		return nil
	}
	err := withAdmin(ctx, admin, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
			return fmt.Errorf("advisory lock: %w", err)
		}
		defer func() {
			// Closing the connection releases the lock too; unlock explicitly when we can.
			unlockCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = conn.Exec(unlockCtx, "SELECT pg_advisory_unlock($1)", lockKey)
		}()
		dropStaleTemplates(ctx, conn, tpl)

		var isTemplate bool
		err := conn.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", tpl).Scan(&isTemplate)
		switch {
		case err == nil && isTemplate:
			return nil
		case err == nil:
			// Left half-built by a creator that died: start over.
			if _, err := conn.Exec(ctx, "DROP DATABASE "+ident(tpl)+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop unfinished template: %w", err)
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up template: %w", err)
		}
		return buildTemplate(ctx, conn, admin, tpl)
	})
	if err != nil {
		return err
	}
	tplReady = true
	return nil
}

// buildTemplate creates tpl, migrates it, closes every connection to it and marks it a template.
func buildTemplate(ctx context.Context, conn *pgx.Conn, admin, tpl string) error {
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident(tpl)+" TEMPLATE template0"); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(admin)
	if err != nil {
		return err
	}
	cfg.ConnConfig.Database = tpl
	// goose holds one connection for its session lock and migrates on another.
	cfg.MaxConns = 4
	cfg.MinConns = 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	err = migrations.Up(ctx, pool, nil)
	// Every connection to the template must be gone before it can be cloned.
	pool.Close()
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+ident(tpl)+" WITH is_template = true"); err != nil {
		return fmt.Errorf("mark as template: %w", err)
	}
	return nil
}

// dropStaleTemplates drops templates built from other migrations, keeping the three newest: another
// checkout or a test binary built a moment earlier may still be cloning one of those. Errors are
// ignored: a stale template that cannot be dropped costs disk space, not correctness.
func dropStaleTemplates(ctx context.Context, conn *pgx.Conn, keep string) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE 'densemem\_tpl\_%' AND datname <> $1
		ORDER BY oid DESC OFFSET 3`, keep)
	if err != nil {
		return
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, name := range stale {
		_, _ = conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" WITH is_template = false")
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	}
}

// clone creates name from the template tpl, retrying while the template is briefly in use.
// Each retry is reported through logf.
func clone(ctx context.Context, admin, tpl, name string, logf func(string, ...any)) error {
	return withAdmin(ctx, admin, func(conn *pgx.Conn) error {
		var err error
		for attempt := 1; attempt <= cloneAttempts; attempt++ {
			_, err = conn.Exec(ctx, "CREATE DATABASE "+ident(name)+" TEMPLATE "+ident(tpl))
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "55006" {
				return err
			}
			// Retry backoff while the template is being accessed by other users.
			logf("testdb: template %s busy (attempt %d of %d): %v", tpl, attempt, cloneAttempts, err)
			select {
			case <-time.After(time.Duration(attempt) * cloneBackoff):
			case <-ctx.Done():
				return errors.Join(err, ctx.Err())
			}
		}
		return err
	})
}

// withAdmin opens a short-lived connection to the maintenance database, runs f and closes it.
func withAdmin(ctx context.Context, admin string, f func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return fmt.Errorf("connect to maintenance database: %w", err)
	}
	defer conn.Close(context.Background())
	return f(conn)
}

// withDatabase returns connString pointed at database name. It accepts URLs and keyword/value
// connection strings.
func withDatabase(connString, name string) (string, error) {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "", fmt.Errorf("parse admin URL: %w", err)
		}
		u.Path = "/" + name
		u.RawPath = ""
		q := u.Query()
		q.Set("search_path", migrations.DefaultSchema)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In a keyword/value string a later setting overrides an earlier one.
	return connString + " dbname=" + name + " search_path=" + migrations.DefaultSchema, nil
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error.
	return hex.EncodeToString(b)
}

// Keep returns the admin URL and whether database name was just created: an existing database of
// that name is left as it is, else name is cloned from the migrated template. Unlike New's clones it
// is never dropped by this package: benchmarks keep large loaded databases between runs under a
// name that fingerprints what they loaded, and drop them with Drop (or DROP DATABASE) themselves.
func Keep(ctx context.Context, name string, logf func(string, ...any)) (admin string, created bool, err error) {
	admin, err = AdminURL()
	if err != nil {
		return "", false, err
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	var exists bool
	if err := withAdmin(ctx, admin, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	}); err != nil {
		return "", false, fmt.Errorf("testdb: look up %s: %w", name, err)
	}
	if exists {
		return admin, false, nil
	}
	tpl := templateName()
	if err := ensureTemplate(ctx, admin, tpl); err != nil {
		return "", false, fmt.Errorf("testdb: template %s: %w", tpl, err)
	}
	if err := clone(ctx, admin, tpl, name, logf); err != nil {
		return "", false, fmt.Errorf("testdb: create %s from %s: %w", name, tpl, err)
	}
	return admin, true, nil
}

// BindingKey returns the binding key (migration 25) of pool's database, read as the test server's
// maintenance user, which the runtime and reviewer roles' stores need (postgres.Options.BindingKey).
func BindingKey(tb testing.TB, pool *pgxpool.Pool) []byte {
	tb.Helper()
	cfg := pool.Config().Copy()
	if u, err := AdminURL(); err == nil {
		if c, err := pgxpool.ParseConfig(u); err == nil {
			cfg.ConnConfig.User, cfg.ConnConfig.Password = c.ConnConfig.User, c.ConnConfig.Password
		}
	}
	cfg.MaxConns = 1
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	su, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("testdb: pool as the maintenance user: %v", err)
	}
	defer su.Close()
	key, err := migrations.BindingKey(ctx, su, nil)
	if err != nil {
		tb.Fatalf("testdb: %v", err)
	}
	return key
}
