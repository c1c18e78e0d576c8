// Package embedded runs Dense-Mem on a private PostgreSQL server that lives in a data directory of
// its own, for a machine with no database server: the default of the examples, of the densemem
// command and of densememtest when nothing else is configured.
//
//	db, err := embedded.Open(ctx, dir, nil) // the first run prepares the server (initdb): seconds
//	if err != nil {
//		return err
//	}
//	defer db.Close() // stops the server
//	client, err := densemem.New(db.Store, &densemem.Config{Nightly: densemem.NightlyConfig{Store: db.ReviewStore}})
//
// It is PostgreSQL itself, not a second store on another engine: the same migrations, the same three
// roles (the library as the runtime role, the nightly review as the reviewer role, both under
// row-level security), the same conformance suite. What is private is the server:
//
//   - Its binaries are the machine's installed PostgreSQL 15 or later (Options.BinDir, else
//     $DENSEMEM_POSTGRES_BIN, else pg_config --bindir, else the usual install directories); with none
//     installed, PostgreSQL DownloadVersion for the platform is downloaded once from Maven Central
//     (about 15 MB, verified against its published SHA-256) into a cache; when that fails too, Start
//     fails with an error naming how to install binaries or point at them.
//   - It listens on a Unix socket in its data directory only (no TCP port, so two hosts on one machine
//     never collide), with trust authentication: who may connect is decided by the directory's
//     permissions (0700, the server's user), not by passwords.
//   - Run as root, the server runs as an unprivileged user (Options.ServerUser, default "nobody"),
//     because PostgreSQL refuses to run as root.
//   - A lock on the data directory (flock of dir/densemem.lock) keeps a second opener out; a server
//     left running by a host that crashed (kill -9) is found through its postmaster.pid, recognised
//     as this directory's own (on Linux its working directory is the data directory) and stopped
//     before a fresh start; another program's process is never signalled.
//   - Close stops the server with a fast shutdown (a checkpoint; nothing committed is lost). On Linux
//     the server is also told to shut down when the host process exits without Close.
//
// The data directory holds densemem.lock, server.log and pgdata (the PostgreSQL cluster); the data
// persists across runs. Open creates the database "densemem" in the cluster and applies the
// migrations as the cluster's superuser "postgres", as an operator would on an external server.
//
// Supported: Linux and macOS (Unix sockets, flock); PostgreSQL 15 or later. Windows is not supported.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// Names in the cluster and the data directory.
const (
	// Database is the database Open creates and migrates.
	Database = "densemem"
	// Superuser is the cluster's superuser, created by initdb; it owns the migrations.
	Superuser = "postgres"

	// EnvBinDir names the environment variable that points at a directory holding initdb and
	// postgres, when Options.BinDir is empty.
	EnvBinDir = "DENSEMEM_POSTGRES_BIN"
	// EnvDataDir names the environment variable DefaultDir reads first.
	EnvDataDir = "DENSEMEM_DATA"

	lockFile   = "densemem.lock"
	logFile    = "server.log"
	clusterDir = "pgdata"
	// port only names the socket file (.s.PGSQL.5432): the server listens on no TCP port.
	port = 5432
)

// ErrLocked is returned by Start and Open when another process holds the data directory.
var ErrLocked = errors.New("embedded: data directory in use by another process")

// Options tune Start and Open. The zero value (or nil) is the default.
type Options struct {
	// BinDir is the directory holding initdb and postgres. Empty: $DENSEMEM_POSTGRES_BIN, else the
	// directory pg_config --bindir names, else the usual install directories (Debian's
	// /usr/lib/postgresql/N/bin, RHEL's /usr/pgsql-N/bin, Homebrew's, /usr/local/pgsql/bin), the
	// newest version 15 or later; a data directory made by one major version needs binaries of it.
	BinDir string
	// NoDownload forbids downloading binaries when none are installed (so does
	// $DENSEMEM_POSTGRES_NO_DOWNLOAD): Start then fails, naming how to install them.
	NoDownload bool
	// CacheDir is where downloaded binaries are kept; empty: densemem/postgres in the user's cache
	// directory (~/.cache on Linux, ~/Library/Caches on macOS).
	CacheDir string
	// Repository is the Maven repository downloads come from; empty: DefaultRepository.
	Repository string
	// ServerUser is the user the server runs as when the host runs as root (PostgreSQL refuses to run
	// as root). Empty: "nobody". Ignored when the host is not root: the server runs as the host's user.
	ServerUser string
	// NoSync runs the server without fsync and initdb without syncing: faster, and a machine crash
	// (not a host crash) may lose or corrupt data. For tests only.
	NoSync bool
	// Log receives one line per step (preparing, starting, stopping an orphan); nil: nothing.
	Log io.Writer
	// StartTimeout bounds initdb and the server's start; zero: 2 minutes.
	StartTimeout time.Duration
}

func (o *Options) orDefault() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.ServerUser == "" {
		v.ServerUser = "nobody"
	}
	if v.StartTimeout <= 0 {
		v.StartTimeout = 2 * time.Minute
	}
	if v.Log == nil {
		v.Log = io.Discard
	}
	return v
}

// DefaultDir is the data directory a host uses when none is configured: $DENSEMEM_DATA, else
// densemem under the user's data directory ($XDG_DATA_HOME, else ~/.local/share; on macOS
// ~/Library/Application Support).
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvDataDir); d != "" {
		return filepath.Abs(d)
	}
	if runtime.GOOS == "darwin" {
		base, err := os.UserConfigDir() // ~/Library/Application Support
		if err != nil {
			return "", err
		}
		return filepath.Join(base, "densemem"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "densemem"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("embedded: no data directory: set %s (%w)", EnvDataDir, err)
	}
	return filepath.Join(home, ".local", "share", "densemem"), nil
}

// URL returns the connection string of database as user on the server (over its Unix socket).
func (s *Server) URL(database, user string) string {
	u := url.URL{Scheme: "postgres", User: url.User(user), Path: "/" + database}
	q := url.Values{}
	q.Set("host", s.socketDir)
	q.Set("port", fmt.Sprint(port))
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	return u.String()
}

// AdminURL is the superuser's URL on the maintenance database "postgres": for creating and dropping
// databases (tests clone their databases through it).
func (s *Server) AdminURL() string { return s.URL("postgres", Superuser) }

// Dir is the data directory.
func (s *Server) Dir() string { return s.dir }

// Prepared reports whether this Start created the cluster (ran initdb), the slow first run.
func (s *Server) Prepared() bool { return s.prepared }

// DB is Dense-Mem on a private server: the stores of the runtime and reviewer roles on the migrated
// database "densemem".
type DB struct {
	// Server is the running server.
	Server *Server
	// Store is the runtime role's store, for the library's calls.
	Store *postgres.Store
	// ReviewStore is the reviewer role's store, for the nightly review (Config.Nightly.Store).
	ReviewStore *postgres.Store
}

// Open starts the server of dir (preparing it on the first run), creates and migrates the database
// "densemem" and opens the runtime and reviewer roles' stores on it. Close stops everything.
func Open(ctx context.Context, dir string, opts *Options) (*DB, error) {
	srv, err := Start(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	db, err := openDB(ctx, srv)
	if err != nil {
		_ = srv.Stop()
		return nil, err
	}
	return db, nil
}

func openDB(ctx context.Context, srv *Server) (*DB, error) {
	if err := srv.CreateDatabase(ctx, Database); err != nil {
		return nil, err
	}
	owner, err := pgxpool.New(ctx, srv.OwnerURL())
	if err != nil {
		return nil, fmt.Errorf("embedded: connect as %s: %w", Superuser, err)
	}
	err = migrations.Up(ctx, owner, nil)
	owner.Close()
	if err != nil {
		return nil, fmt.Errorf("embedded: migrate: %w", err)
	}
	db := &DB{Server: srv}
	if db.Store, err = postgres.Open(ctx, db.RuntimeURL(), nil); err != nil {
		return nil, fmt.Errorf("embedded: open as %s: %w", migrations.DefaultRuntimeRole, err)
	}
	if db.ReviewStore, err = postgres.Open(ctx, db.ReviewerURL(), nil); err != nil {
		db.Store.Close()
		return nil, fmt.Errorf("embedded: open as %s: %w", migrations.DefaultReviewerRole, err)
	}
	return db, nil
}

// OwnerURL is the superuser's URL on the database "densemem": for migrations and administration.
func (s *Server) OwnerURL() string { return s.URL(Database, Superuser) }

// RuntimeURL is the runtime role's URL on the database "densemem".
func (db *DB) RuntimeURL() string {
	return db.Server.URL(Database, migrations.DefaultRuntimeRole)
}

// ReviewerURL is the reviewer role's URL on the database "densemem".
func (db *DB) ReviewerURL() string {
	return db.Server.URL(Database, migrations.DefaultReviewerRole)
}

// Close closes the stores and stops the server.
func (db *DB) Close() error {
	db.Store.Close()
	db.ReviewStore.Close()
	return db.Server.Stop()
}

// CreateDatabase creates database name on the server unless it exists.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.AdminURL())
	if err != nil {
		return fmt.Errorf("embedded: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("embedded: look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42P04") {
		return fmt.Errorf("embedded: create database %s: %w", name, err)
	}
	return nil
}
