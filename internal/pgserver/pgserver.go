// Package pgserver runs a private PostgreSQL server in a data directory: the process manager behind
// package embedded (whose documentation says what it promises), apart from it so that the test
// helpers, which package store/postgres's own tests import, can start one without importing the
// store.
package pgserver

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
)

// Names in the cluster and the data directory.
const (
	// Database is the database embedded.Open creates and migrates.
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

// ErrLocked is returned by Start when another process holds the data directory.
var ErrLocked = errors.New("embedded: data directory in use by another process")

// Options tune Start. The zero value (or nil) is the default.
type Options struct {
	// BinDir is the directory holding initdb and postgres. Empty: $DENSEMEM_POSTGRES_BIN, else the
	// directory pg_config --bindir names, else the usual install directories (Debian's
	// /usr/lib/postgresql/N/bin, RHEL's /usr/pgsql-N/bin, Homebrew's, /usr/local/pgsql/bin), the
	// newest version 15 or later; a data directory made by one major version needs binaries of it.
	// With none installed, DownloadVersion is downloaded once into CacheDir.
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
	// Log receives one line per step (preparing, starting, stopping an orphan, download progress);
	// nil: nothing, except download progress on a terminal's stderr.
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

// OwnerURL is the superuser's URL on the database "densemem": for migrations and administration.
func (s *Server) OwnerURL() string { return s.URL(Database, Superuser) }

// Dir is the data directory.
func (s *Server) Dir() string { return s.dir }

// Prepared reports whether this Start created the cluster (ran initdb), the slow first run.
func (s *Server) Prepared() bool { return s.prepared }

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
