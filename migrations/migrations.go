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
	"sort"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// FS returns the embedded migration files, rooted at the directory that holds them.
func FS() fs.FS { return files }

// Up applies every pending migration to the database behind pool. It holds a PostgreSQL session
// advisory lock while it runs, so concurrent callers wait and then find nothing left to do.
func Up(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("densemem migrations: session locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("densemem migrations: provider: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("densemem migrations: up: %w", err)
	}
	return nil
}

// Hash returns a stable hex digest of every embedded migration file's name and bytes. Test
// databases use it to key a migrated template, so a schema change builds a fresh template.
func Hash() string {
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, _ := fs.ReadFile(files, n)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
