// Package exampledb opens the database of a runnable example: the database the DSN names, created
// when it does not exist yet (so the examples never write into a database of the host's), migrated to
// this library's schema, and opened as a Store. With no DSN configured and no server on the local
// default address, the examples run on a private PostgreSQL (package embedded) in a data directory
// of their own.
package exampledb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/embedded"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// DefaultURL is the examples' database when DENSEMEM_DATABASE_URL is unset: a database of their own
// on the local server, created on first use.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/densemem_examples?sslmode=disable"

// EnvURL names the environment variable that points an example at a database.
const EnvURL = "DENSEMEM_DATABASE_URL"

// connectTimeout bounds an example's first connection, so a missing server fails fast.
const connectTimeout = 10 * time.Second

// EmbeddedPrefix starts a DSN that names no server but the data directory of a private one:
// "embedded:DIR" makes Connect run the example on the private PostgreSQL in DIR.
const EmbeddedPrefix = "embedded:"

// RuntimePrefix starts a DSN whose user migrates the database, after which the example runs as the
// runtime role (migrations.DefaultRuntimeRole, no password: a trust-authenticated test server) with
// the database's binding key, under row-level security as a host's service does: "runtime:URL".
// The golden tests use it; the examples' users give a plain URL.
const RuntimePrefix = "runtime:"

// URL returns the database URL of an example: $DENSEMEM_DATABASE_URL, or "" when it is unset (Connect
// then uses the local server at DefaultURL when one answers, else a private one).
func URL() string { return strings.TrimSpace(os.Getenv(EnvURL)) }

// DataDir is the data directory of the examples' private server: $DENSEMEM_DATA, else
// densemem-examples beside embedded.DefaultDir (apart from the densemem command's, so that an example
// can run while an MCP server holds that one).
func DataDir() (string, error) {
	if d := os.Getenv(embedded.EnvDataDir); d != "" {
		return d, nil
	}
	d, err := embedded.DefaultDir()
	if err != nil {
		return "", err
	}
	return d + "-examples", nil
}

// Connect opens the example program's database: dsn as Open opens it; when dsn is "", DefaultURL
// when a server answers there, else the private server in DataDir (saying so in one line on
// stderr); "embedded:DIR" the private server in DIR. done closes the store and stops a private
// server. A failure says how to provide a database, without the URL's password.
func Connect(ctx context.Context, program, dsn string) (st *postgres.Store, done func(), err error) {
	if dsn == "" {
		if err := ping(ctx, DefaultURL); err != nil {
			dir, dirErr := DataDir()
			if dirErr != nil {
				return nil, nil, fmt.Errorf("%s: no %s and no PostgreSQL at 127.0.0.1:5432 (%v), and no data directory "+
					"for a private one: %w", program, EnvURL, err, dirErr)
			}
			return connectEmbedded(ctx, program, dir, true)
		}
		dsn = DefaultURL
	}
	if dir, ok := strings.CutPrefix(dsn, EmbeddedPrefix); ok {
		return connectEmbedded(ctx, program, dir, false)
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	dsn, asRuntime := strings.CutPrefix(dsn, RuntimePrefix)
	if asRuntime {
		return openRoles(ctx, program, dsn)
	}
	st, _, err = open(ctx, dsn, false)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot connect to PostgreSQL at %s: %v\n"+
			"Set %s to the URL of a PostgreSQL 15+ database this program may create tables in, e.g.\n"+
			"  %s='postgres://USER:PASSWORD@HOST:5432/DB?sslmode=disable' go run ./examples/%s\n"+
			"or run PostgreSQL on 127.0.0.1:5432 accepting user postgres without a password",
			program, redactURL(dsn), err, EnvURL, EnvURL, program)
	}
	return st, st.Close, nil
}

// connectEmbedded runs the example on the private server in dir, in the database the local
// default names, as the server's superuser (as the examples run on the local server); announce
// prints the line that says what was done and where the data lives.
func connectEmbedded(ctx context.Context, program, dir string, announce bool) (*postgres.Store, func(), error) {
	if announce {
		what := "using the private PostgreSQL in " + dir
		if _, err := os.Stat(filepath.Join(dir, "pgdata")); err != nil {
			what = "preparing a private PostgreSQL in " + dir + " (first run: initdb, a few seconds)"
		}
		fmt.Fprintf(os.Stderr, "%s: no %s and nothing on 127.0.0.1:5432: %s\n", program, EnvURL, what)
	}
	srv, err := embedded.Start(ctx, dir, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w\nor set %s to the URL of a PostgreSQL 15+ database", program, err, EnvURL)
	}
	name := "densemem_examples"
	if err := srv.CreateDatabase(ctx, name); err != nil {
		_ = srv.Stop()
		return nil, nil, err
	}
	st, err := Open(ctx, srv.URL(name, embedded.Superuser))
	if err != nil {
		_ = srv.Stop()
		return nil, nil, fmt.Errorf("%s: %w", program, err)
	}
	return st, func() { st.Close(); _ = srv.Stop() }, nil
}

// ping reports whether a server answers at dsn within two seconds: a refusal by the server (a wrong
// password, a missing database) is an answer.
func ping(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	cfg.Database = "postgres"
	cfg.ConnectTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return nil
	}
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// redactURL hides the password of a database URL.
func redactURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "the configured database"
	}
	return u.Redacted()
}

// Open connects to dsn, creating its database first when the server says it does not exist,
// applies the migrations and returns the Store (Close releases its pool).
func Open(ctx context.Context, dsn string) (*postgres.Store, error) {
	st, _, err := open(ctx, dsn, false)
	return st, err
}

// open is Open, its Store connecting as the runtime role with the binding key (returned) when
// asRuntime.
func open(ctx context.Context, dsn string, asRuntime bool) (*postgres.Store, []byte, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	pool, err := connect(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
		if err := create(ctx, cfg); err != nil {
			return nil, nil, err
		}
		pool, err = connect(ctx, cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := migrations.Up(ctx, pool, nil); err != nil {
		pool.Close()
		return nil, nil, err
	}
	var opts *postgres.Options
	var key []byte
	if asRuntime {
		key, err = migrations.BindingKey(ctx, pool, nil)
		if err == nil {
			dsn, err = asRole(dsn, migrations.DefaultRuntimeRole)
		}
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		opts = &postgres.Options{BindingKey: key}
	}
	// The store owns a pool of its own (Open's), so the program's Close releases it.
	pool.Close()
	st, err := postgres.Open(ctx, dsn, opts)
	return st, key, err
}

// reviewers maps a runtime role's store Connect returned to the reviewer role's store opened with
// it (RuntimePrefix).
var reviewers sync.Map

// Reviewer returns the store an example's nightly review runs on (densemem.NightlyConfig.Store):
// the reviewer role's, opened with st when Connect was given a RuntimePrefix DSN, else st itself.
func Reviewer(st *postgres.Store) *postgres.Store {
	if r, ok := reviewers.Load(st); ok {
		return r.(*postgres.Store)
	}
	return st
}

// openRoles is Connect for a RuntimePrefix DSN: the runtime role's store, and the reviewer role's
// (Reviewer); done closes both.
func openRoles(ctx context.Context, program, dsn string) (*postgres.Store, func(), error) {
	st, key, err := open(ctx, dsn, true)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", program, err)
	}
	reviewerDSN, err := asRole(dsn, migrations.DefaultReviewerRole)
	var rv *postgres.Store
	if err == nil {
		rv, err = postgres.Open(ctx, reviewerDSN, &postgres.Options{BindingKey: key})
	}
	if err != nil {
		st.Close()
		return nil, nil, fmt.Errorf("%s: %w", program, err)
	}
	reviewers.Store(st, rv)
	return st, func() { reviewers.Delete(st); rv.Close(); st.Close() }, nil
}

// asRole returns the URL dsn with role as its user and no password.
func asRole(dsn, role string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("exampledb: %s needs a postgres:// URL", RuntimePrefix)
	}
	u.User = url.User(role)
	return u.String(), nil
}

func connect(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// create creates cfg's database through the server's maintenance database, tolerating a concurrent
// creator.
func create(ctx context.Context, cfg *pgxpool.Config) error {
	admin := cfg.ConnConfig.Copy()
	name := admin.Database
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" {
		return nil // created meanwhile by another run
	}
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}
