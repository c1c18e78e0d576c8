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
//
// The server alone (Start, without the migrations and stores) serves a host that manages its own
// databases on it; the densemem command's migrate subcommands use it.
package embedded

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/pgserver"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// Names in the cluster and the environment.
const (
	// Database is the database Open creates and migrates.
	Database = pgserver.Database
	// Superuser is the cluster's superuser, created by initdb; it owns the migrations.
	Superuser = pgserver.Superuser
	// EnvBinDir names the environment variable that points at a directory holding initdb and
	// postgres, when Options.BinDir is empty.
	EnvBinDir = pgserver.EnvBinDir
	// EnvDataDir names the environment variable DefaultDir reads first.
	EnvDataDir = pgserver.EnvDataDir
	// EnvNoDownload, set to any value, forbids downloading binaries (as Options.NoDownload does).
	EnvNoDownload = pgserver.EnvNoDownload
	// MinVersion is the oldest PostgreSQL major version the library supports.
	MinVersion = pgserver.MinVersion
	// DownloadVersion is the PostgreSQL version downloaded when none is installed.
	DownloadVersion = pgserver.DownloadVersion
	// DefaultRepository is where the binaries are downloaded from (Maven Central).
	DefaultRepository = pgserver.DefaultRepository
)

// ErrLocked is returned by Start and Open when another process holds the data directory.
var ErrLocked = pgserver.ErrLocked

// Options tune Start and Open; see the fields. The zero value (or nil) is the default.
type Options = pgserver.Options

// Server is a running private PostgreSQL server: URL, AdminURL and OwnerURL connect to it over its
// Unix socket, CreateDatabase makes a database, Stop stops it.
type Server = pgserver.Server

// Start starts the server of the data directory dir, creating dir and preparing the cluster (initdb)
// on the first run, and returns when it accepts connections. It fails with ErrLocked while another
// process has dir open, and stops a server a crashed earlier run of dir left behind.
func Start(ctx context.Context, dir string, opts *Options) (*Server, error) {
	return pgserver.Start(ctx, dir, opts)
}

// Discard removes the data directory dir and everything in it, after stopping a server a crashed run
// of it left behind. It fails with ErrLocked while another process has dir open.
func Discard(ctx context.Context, dir string, opts *Options) error {
	return pgserver.Discard(ctx, dir, opts)
}

// DefaultDir is the data directory a host uses when none is configured: $DENSEMEM_DATA, else
// densemem under the user's data directory ($XDG_DATA_HOME, else ~/.local/share; on macOS
// ~/Library/Application Support).
func DefaultDir() (string, error) { return pgserver.DefaultDir() }

// DB is Dense-Mem on a private server: the stores of the runtime and reviewer roles on the migrated
// database "densemem".
type DB struct {
	// Server is the running server.
	Server *Server
	// Store is the runtime role's store, for the library's calls.
	Store *postgres.Store
	// ReviewStore is the reviewer role's store, for the nightly review (Config.Nightly.Store).
	ReviewStore *postgres.Store
	// BindingKey is the database's binding key (migration 25), which Store and ReviewStore hold: a
	// store the host opens itself on RuntimeURL or ReviewerURL needs it (postgres.Options.BindingKey).
	BindingKey []byte
}

// Open starts the server of dir (preparing it on the first run), creates and migrates the database
// "densemem" as the cluster's superuser and opens the runtime and reviewer roles' stores on it.
// Close stops everything.
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
	var key []byte
	if err == nil {
		key, err = migrations.BindingKey(ctx, owner, nil)
	}
	owner.Close()
	if err != nil {
		return nil, fmt.Errorf("embedded: migrate: %w", err)
	}
	db := &DB{Server: srv, BindingKey: key}
	opts := &postgres.Options{BindingKey: key}
	if db.Store, err = postgres.Open(ctx, db.RuntimeURL(), opts); err != nil {
		return nil, fmt.Errorf("embedded: open as %s: %w", migrations.DefaultRuntimeRole, err)
	}
	if db.ReviewStore, err = postgres.Open(ctx, db.ReviewerURL(), opts); err != nil {
		db.Store.Close()
		return nil, fmt.Errorf("embedded: open as %s: %w", migrations.DefaultReviewerRole, err)
	}
	return db, nil
}

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
