// Package migrations holds Dense-Mem's PostgreSQL schema as goose v3 SQL migrations embedded in the
// binary, and applies them through a goose Provider guarded by a PostgreSQL session lock, so several
// processes may start at once and exactly one of them migrates.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math"
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// goSources are the Go migrations' source files, part of Hash so a change to one builds new test
// templates.
//
//go:embed 00006_name_keys.go
var goSources embed.FS

// goMigrations are the migrations written in Go, registered with every provider.
var goMigrations = []*goose.Migration{nameKeys}

// FS returns the embedded migration files, rooted at the directory that holds them.
func FS() fs.FS { return files }

// Up applies every pending migration to the database behind pool. It holds a PostgreSQL session
// advisory lock while it runs, so concurrent callers wait and then find nothing left to do.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	return UpTo(ctx, pool, math.MaxInt64)
}

// UpTo is Up that stops after the migration numbered version.
func UpTo(ctx context.Context, pool *pgxpool.Pool, version int64) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("densemem migrations: session locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker),
		goose.WithGoMigrations(goMigrations...))
	if err != nil {
		return fmt.Errorf("densemem migrations: provider: %w", err)
	}
	if _, err := provider.UpTo(ctx, version); err != nil {
		return fmt.Errorf("densemem migrations: up: %w", err)
	}
	return nil
}

// Hash returns a stable hex digest of every embedded migration file's name and bytes, SQL and Go.
// Test databases use it to key a migrated template, so a schema change builds a fresh template.
func Hash() string {
	h := sha256.New()
	for _, fsys := range []embed.FS{files, goSources} {
		entries, _ := fs.ReadDir(fsys, ".")
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		for _, n := range names {
			b, _ := fs.ReadFile(fsys, n)
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
