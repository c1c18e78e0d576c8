// Package densememtest gives a host's tests a fresh, migrated Dense-Mem database of their own and a
// ready Client on it, connected the way production connects: the client as the runtime role, its
// nightly review as the reviewer role, both under row-level security.
//
// The server is found as the library's own tests find it: DENSEMEM_TEST_DATABASE_URL (a URL to any
// database on a server where the user may create databases and roles), else PostgreSQL on
// 127.0.0.1:5432 accepting postgres without a password, else a private PostgreSQL of the test
// process in a temporary directory (package embedded: the machine's PostgreSQL 15+ binaries, else a
// one-time download; DENSEMEM_TEST_SERVER=embedded uses it whatever else answers), else, in tests
// that import package densememtest/container, a postgres:15-alpine container through testcontainers-go when Docker is
// available; with none of these the test fails, it never skips. The container fallback is a package
// of its own so that importing densememtest does not add testcontainers-go and Docker's client to a
// host's go.mod:
//
//	import _ "github.com/densemem/densemem/densememtest/container"
//
// The migrations are applied once per server to a template database keyed by their hash, and every
// New clones it, so tests run in parallel, each on its own database, dropped when the test ends.
//
//	func TestMyHost(t *testing.T) {
//		db := densememtest.New(t, nil)
//		team, _ := db.Client.CreateTeam(t.Context(), densemem.CreateTeamRequest{Name: "acme"})
//		...
//	}
//
// The roles log in without a password, which a test server with trust authentication allows; a
// server that wants passwords needs them in DENSEMEM_TEST_DATABASE_URL's user and in a pgpass file.
package densememtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// DB is one test's database and the library on it.
type DB struct {
	// Client is a Client over Store, whose nightly review runs on ReviewStore.
	Client *densemem.Client
	// Store is the runtime role's store; ReviewStore the reviewer role's.
	Store, ReviewStore *postgres.Store
	// Admin is a pool of the maintenance user (a superuser on a test server), beyond row-level
	// security, for the test's own arranging and inspecting; its search_path is the schema.
	Admin *pgxpool.Pool
	// Runtime and Reviewer are the pools behind Store and ReviewStore.
	Runtime, Reviewer *pgxpool.Pool
	// BindingKey is the database's binding key, which Store and ReviewStore hold
	// (postgres.Options.BindingKey): a test's own store on Runtime or Reviewer needs it too.
	BindingKey []byte
}

// New clones a fresh migrated database for tb and returns the library on it, with cfg (nil for the
// defaults; its Nightly.Store, when nil, becomes the reviewer role's store). Everything is closed and
// the database dropped when tb ends.
func New(tb testing.TB, cfg *densemem.Config) *DB {
	tb.Helper()
	return Open(tb, testdb.New(tb), cfg)
}

// Open is New on an existing migrated database: admin is a pool of a user that may connect as the
// roles (a superuser's on a test server), whose search_path is the schema. Its role pools are
// closed when tb ends; admin stays the caller's.
func Open(tb testing.TB, admin *pgxpool.Pool, cfg *densemem.Config) *DB {
	tb.Helper()
	db := &DB{Admin: admin}
	db.Runtime = testdb.AsRole(tb, admin, migrations.DefaultRuntimeRole)
	db.Reviewer = testdb.AsRole(tb, admin, migrations.DefaultReviewerRole)
	// The stores bind their transactions with the database's key, as a host's do (migration 25).
	key, err := migrations.BindingKey(context.Background(), admin, nil)
	if err != nil {
		tb.Fatalf("densememtest: %v", err)
	}
	db.BindingKey = key
	// RequireActor: every call of the Client names its actor, which the database judges writes by.
	opts := &postgres.Options{BindingKey: key, RequireActor: true}
	db.Store, db.ReviewStore = postgres.New(db.Runtime, opts), postgres.New(db.Reviewer, opts)
	var c densemem.Config
	if cfg != nil {
		c = *cfg
	}
	if c.Nightly.Store == nil {
		c.Nightly.Store = db.ReviewStore
	}
	if db.Client, err = densemem.New(db.Store, &c); err != nil {
		tb.Fatalf("densememtest: %v", err)
	}
	return db
}
