// Package exampledb opens the database of a runnable example: the database the DSN names, created
// when it does not exist yet (so the examples never write into a database of the host's), migrated to
// this library's schema, and opened as a Store.
package exampledb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// URL returns the database URL of an example: $DENSEMEM_DATABASE_URL, or DefaultURL when it is unset.
func URL() string {
	if u := strings.TrimSpace(os.Getenv(EnvURL)); u != "" {
		return u
	}
	return DefaultURL
}

// Connect opens dsn as Open does, within a bounded time, for the example program named program; a
// failure says how to provide a database, without the URL's password.
func Connect(ctx context.Context, program, dsn string) (*postgres.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	st, err := Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: cannot connect to PostgreSQL at %s: %v\n"+
			"Set %s to the URL of a PostgreSQL 15+ database this program may create tables in, e.g.\n"+
			"  %s='postgres://USER:PASSWORD@HOST:5432/DB?sslmode=disable' go run ./examples/%s\n"+
			"or run PostgreSQL on 127.0.0.1:5432 accepting user postgres without a password",
			program, redactURL(dsn), err, EnvURL, EnvURL, program)
	}
	return st, nil
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
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pool, err := connect(ctx, cfg)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
		if err := create(ctx, cfg); err != nil {
			return nil, err
		}
		pool, err = connect(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(ctx, pool, nil); err != nil {
		pool.Close()
		return nil, err
	}
	// The store owns a pool of its own (Open's), so the program's Close releases it.
	pool.Close()
	return postgres.Open(ctx, cfg.ConnString(), nil)
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
