// Package exampledb opens the database of a runnable example: the database the DSN names, created
// when it does not exist yet (so the examples never write into a database of the host's), migrated to
// this library's schema, and opened as a Store.
package exampledb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// DefaultURL is the examples' database when DENSEMEM_DATABASE_URL is unset: a database of their own
// on the local server, created on first use.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/densemem_examples?sslmode=disable"

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
	st := postgres.New(pool, nil)
	if err := st.CheckSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return st, nil
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
