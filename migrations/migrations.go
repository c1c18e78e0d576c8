// Package migrations holds Dense-Mem's PostgreSQL schema as goose v3 migrations embedded in the
// binary (SQL files, and Go where a migration computes values in Go), and applies them through a
// goose Provider guarded by a PostgreSQL session lock, so several processes may start at once and
// exactly one of them migrates.
//
// Every object lives in a schema of its own (DefaultSchema, "densemem", unless Options.Schema says
// otherwise), with its own goose version table in that schema: nothing is created in public, and a
// host's own tables and goose history are never touched. Migrations run on a short-lived pool of
// their own whose search_path is that schema; the SQL files name objects without a schema.
package migrations

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
//go:embed 0*.go
var goSources embed.FS

// goMigrations returns the migrations written in Go, for one set of roles.
func goMigrations(r Roles) []*goose.Migration {
	return []*goose.Migration{nameKeys, rolesMigration(r), decisionsMigration(r), identityDecisionsMigration(r),
		dropSearchRefreshMigration(r), fragmentRetirementsMigration(r), privacyErasureMigration(r), boundedRecallMigration(r),
		reviewerReviewItemsMigration(r), recallPostingsMigration(r), databaseBoundaryMigration(r),
		databaseJudgementsMigration(r), transactionSettingsMigration(r), nightlyLedgerMigration(r),
		verifiedTeamMigration(r)}
}

// DefaultSchema is the schema that holds every object unless Options.Schema names another.
const DefaultSchema = "densemem"

// versionTable is goose's version table, inside the schema.
const versionTable = "goose_db_version"

// Options tune the migrations. A nil *Options or a zero field means the default.
type Options struct {
	// Schema is the PostgreSQL schema that holds every object (default DefaultSchema). It must be a
	// lower-case identifier of at most 63 bytes: letters, digits and underscores.
	Schema string
	// Roles names the owner, runtime and reviewer roles (migration 9; see Roles).
	Roles Roles
}

func (o *Options) roles() (Roles, error) {
	var r Roles
	if o != nil {
		r = o.Roles
	}
	return r.withDefaults()
}

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (o *Options) schema() (string, error) {
	s := DefaultSchema
	if o != nil && o.Schema != "" {
		s = o.Schema
	}
	if !schemaPattern.MatchString(s) || s == "public" || strings.HasPrefix(s, "pg_") {
		return "", fmt.Errorf("densemem migrations: schema %q must match %s and be neither public nor pg_*", s, schemaPattern)
	}
	return s, nil
}

// FS returns the embedded SQL migration files, rooted at the directory that holds them.
func FS() fs.FS { return files }

// Latest returns the number of the newest migration this library carries: the version a database
// must be at for the library to use it.
func Latest() int64 {
	var latest int64
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		if v, ok := fileVersion(e.Name()); ok {
			latest = max(latest, v)
		}
	}
	for _, m := range goMigrations(Roles{}) {
		latest = max(latest, m.Version)
	}
	return latest
}

func fileVersion(name string) (int64, bool) {
	digits, _, ok := strings.Cut(name, "_")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	return v, err == nil
}

// Up applies every pending migration to the database behind pool. It holds a PostgreSQL session
// advisory lock while it runs, so concurrent callers wait and then find nothing left to do. An
// installation from before the library had its own schema (its objects in public) is first moved
// into the schema, its version history with it.
func Up(ctx context.Context, pool *pgxpool.Pool, opts *Options) error {
	return UpTo(ctx, pool, math.MaxInt64, opts)
}

// UpTo is Up that stops after the migration numbered version.
func UpTo(ctx context.Context, pool *pgxpool.Pool, version int64, opts *Options) error {
	_, err := Apply(ctx, pool, version, opts)
	return err
}

// Result is one migration applied or rolled back.
type Result struct {
	Version   int64
	Source    string // the file name, e.g. 00006_name_keys.go
	Direction string // "up" or "down"
	Duration  time.Duration
}

// results converts goose's results.
func results(rs []*goose.MigrationResult) []Result {
	out := make([]Result, 0, len(rs))
	for _, r := range rs {
		if r == nil || r.Source == nil {
			continue
		}
		out = append(out, Result{Version: r.Source.Version, Source: sourceName(r.Source), Direction: r.Direction,
			Duration: r.Duration})
	}
	return out
}

// Apply is UpTo reporting every migration it applied, oldest first (math.MaxInt64: every pending
// one). On failure the migrations applied before it are reported with the error.
func Apply(ctx context.Context, pool *pgxpool.Pool, version int64, opts *Options) ([]Result, error) {
	var out []Result
	err := withProvider(ctx, pool, opts, true, func(p *goose.Provider) error {
		rs, err := p.UpTo(ctx, version)
		out = results(rs)
		return err
	})
	return out, err
}

// Rollback rolls back, newest first, every applied migration numbered above version (0: all of
// them), and reports each. Rolling back loses the data of what the migrations created: it is for
// development and for undoing a release, after a backup.
func Rollback(ctx context.Context, pool *pgxpool.Pool, version int64, opts *Options) ([]Result, error) {
	var out []Result
	err := withProvider(ctx, pool, opts, false, func(p *goose.Provider) error {
		rs, err := p.DownTo(ctx, version)
		out = results(rs)
		return err
	})
	return out, err
}

// MigrationStatus is one migration and whether the database has it.
type MigrationStatus struct {
	Version   int64
	Source    string // the file name, e.g. 00006_name_keys.go
	Applied   bool
	AppliedAt time.Time // zero when pending
}

// Status lists every migration of the library, oldest first, with whether the database behind pool
// has applied it. It changes nothing: on a database without the schema or its version table, every
// migration is pending.
func Status(ctx context.Context, pool *pgxpool.Pool, opts *Options) ([]MigrationStatus, error) {
	schema, err := opts.schema()
	if err != nil {
		return nil, err
	}
	var table *string
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1)::text", pgx.Identifier{schema, versionTable}.Sanitize()).Scan(&table); err != nil {
		return nil, fmt.Errorf("densemem migrations: status: %w", err)
	}
	var out []MigrationStatus
	err = withProvider(ctx, pool, opts, false, func(p *goose.Provider) error {
		if table == nil {
			for _, src := range p.ListSources() {
				out = append(out, MigrationStatus{Version: src.Version, Source: sourceName(src)})
			}
			return nil
		}
		statuses, err := p.Status(ctx)
		for _, s := range statuses {
			out = append(out, MigrationStatus{Version: s.Source.Version, Source: sourceName(s.Source),
				Applied: s.State == goose.StateApplied, AppliedAt: s.AppliedAt})
		}
		return err
	})
	return out, err
}

// sourceName is a migration's file name: goose knows a SQL file's, and the Go ones are named after
// their embedded source file.
func sourceName(src *goose.Source) string {
	if src.Path != "" {
		return src.Path
	}
	return goSourceNames()[src.Version]
}

// goSourceNames maps the version of each Go migration to its file name.
var goSourceNames = sync.OnceValue(func() map[int64]string {
	names := map[int64]string{}
	entries, _ := goSources.ReadDir(".")
	for _, e := range entries {
		if v, ok := fileVersion(e.Name()); ok && strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			names[v] = e.Name()
		}
	}
	return names
})

// Version returns the newest migration the database behind pool has applied, 0 when it has none
// (no schema, or no version table yet). It is one query and changes nothing.
func Version(ctx context.Context, pool *pgxpool.Pool, opts *Options) (int64, error) {
	schema, err := opts.schema()
	if err != nil {
		return 0, err
	}
	var v *int64
	err = pool.QueryRow(ctx, "SELECT max(version_id) FROM "+pgx.Identifier{schema, versionTable}.Sanitize()+
		" WHERE is_applied").Scan(&v)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000") {
		return 0, nil // no version table, or no schema: nothing applied
	}
	if err != nil {
		return 0, fmt.Errorf("densemem migrations: version: %w", err)
	}
	if v == nil {
		return 0, nil
	}
	return *v, nil
}

// withProvider runs fn with a goose provider on a short-lived pool of its own, whose connections
// have the schema as search_path. With prepare, the schema is created first and a legacy
// installation in public is adopted.
func withProvider(ctx context.Context, pool *pgxpool.Pool, opts *Options, prepare bool, fn func(*goose.Provider) error) error {
	schema, err := opts.schema()
	if err != nil {
		return err
	}
	roles, err := opts.roles()
	if err != nil {
		return err
	}
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	// goose holds one connection for its session lock and migrates on another.
	cfg.MaxConns, cfg.MinConns = 2, 0
	mpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("densemem migrations: open: %w", err)
	}
	defer mpool.Close()
	if prepare {
		if err := prepareSchema(ctx, mpool, schema); err != nil {
			return err
		}
	}
	db := stdlib.OpenDBFromPool(mpool)
	defer db.Close()
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(lockID(schema)))
	if err != nil {
		return fmt.Errorf("densemem migrations: session locker: %w", err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker),
		goose.WithGoMigrations(goMigrations(roles)...), goose.WithTableName(schema+"."+versionTable))
	if err != nil {
		return fmt.Errorf("densemem migrations: provider: %w", err)
	}
	if err := fn(provider); err != nil {
		return fmt.Errorf("densemem migrations: %w", err)
	}
	return nil
}

// lockID is the session lock of the schema's migrations: not goose's default, so a host migrating
// its own tables with goose never waits for Dense-Mem's migrations, nor they for the host's.
func lockID(schema string) int64 {
	sum := sha256.Sum256([]byte("densemem migrations\x00" + schema))
	var id int64
	for _, b := range sum[:8] {
		id = id<<8 | int64(b)
	}
	return id
}

// prepareSchema creates the schema and, when the objects of an installation from before the schema
// sit in public, moves them into it with their version history, in one transaction under the
// migrations' lock.
func prepareSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockID(schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42P06" {
				return fmt.Errorf("densemem migrations: create schema %s: %w", schema, err)
			}
		}
		return adoptLegacy(ctx, tx, schema)
	})
}

// legacyTables are the tables of an installation whose objects were created in public, in the
// order they were created; legacyFunctions its functions; legacyMarks, per migration, an object that
// migration created, from which the installation's version is read back.
var (
	legacyTables = []string{"teams", "profiles", "team_policies", "predicate_definitions", "entities", "entity_names",
		"literal_values", "evidence_fragments", "fragment_contents", "observations", "verification_events",
		"entity_resolution_events", "relationships", "support_links", "relationship_transitions", "idempotency_records",
		"review_items", "search_refresh_queue", "relationship_cross_references", "conflict_cases", "conflict_positions",
		"conflict_position_members", "conflict_events", "nightly_runs", "entity_name_collisions"}
	legacyFunctions = []string{"densemem_reject_mutation()", "densemem_expect_rows(bigint, bigint, text)",
		"densemem_guard_relationship()", "densemem_relationship_has_transition()", "densemem_refuse_reviewer()",
		"densemem_reviewer_relationships()", "densemem_reviewer_transitions()", "densemem_transition_has_relationship()",
		"densemem_guard_member()", "densemem_entity_names_bounded()"}
	legacyMarks = []struct {
		version int64
		check   string
	}{
		{7, `SELECT to_regclass('public.review_items_related') IS NOT NULL`},
		{6, `SELECT to_regclass('public.entity_name_collisions') IS NOT NULL`},
		{5, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = 'conflict_cases_due'
		     AND indexdef LIKE '%conflict_id%')`},
		{4, `SELECT to_regprocedure('public.densemem_transition_has_relationship()') IS NOT NULL`},
		{3, `SELECT to_regclass('public.nightly_runs') IS NOT NULL`},
		{2, `SELECT to_regclass('public.relationship_cross_references') IS NOT NULL`},
		{1, `SELECT to_regclass('public.relationships') IS NOT NULL`},
	}
)

// adoptLegacy moves a legacy installation from public into schema. An installation is legacy when
// public holds Dense-Mem's own function densemem_reject_mutation and schema has no version table
// yet; a host's tables in public that merely share a name are never moved.
func adoptLegacy(ctx context.Context, tx pgx.Tx, schema string) error {
	var legacy bool
	err := tx.QueryRow(ctx, `SELECT to_regprocedure('public.densemem_reject_mutation()') IS NOT NULL
		AND to_regclass($1) IS NULL AND to_regclass('public.relationship_transitions') IS NOT NULL`,
		pgx.Identifier{schema, versionTable}.Sanitize()).Scan(&legacy)
	if err != nil || !legacy {
		return err
	}
	var version int64
	for _, m := range legacyMarks {
		var ok bool
		if err := tx.QueryRow(ctx, m.check).Scan(&ok); err != nil {
			return err
		}
		if ok {
			version = m.version
			break
		}
	}
	target := pgx.Identifier{schema}.Sanitize()
	moves := []string{"ALTER VIEW IF EXISTS public.semantic_edges SET SCHEMA " + target}
	for _, t := range legacyTables {
		moves = append(moves, "ALTER TABLE IF EXISTS public."+t+" SET SCHEMA "+target)
	}
	for _, f := range legacyFunctions {
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regprocedure($1) IS NOT NULL", "public."+f).Scan(&exists); err != nil {
			return err
		}
		if exists {
			moves = append(moves, "ALTER FUNCTION public."+f+" SET SCHEMA "+target,
				"ALTER FUNCTION "+target+"."+f+" SET search_path = "+target)
		}
	}
	for _, m := range moves {
		if _, err := tx.Exec(ctx, m); err != nil {
			return fmt.Errorf("densemem migrations: adopt the installation in public: %s: %w", m, err)
		}
	}
	table := pgx.Identifier{schema, versionTable}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE TABLE `+table+` (id integer PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
		version_id bigint NOT NULL, is_applied boolean NOT NULL, tstamp timestamp NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	versions := make([]int64, 0, version+1)
	for v := int64(0); v <= version; v++ {
		versions = append(versions, v)
	}
	_, err = tx.Exec(ctx, `INSERT INTO `+table+` (version_id, is_applied) SELECT v, true FROM unnest($1::int8[]) v`, versions)
	return err
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
