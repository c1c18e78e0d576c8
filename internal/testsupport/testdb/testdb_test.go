package testdb

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/migrations"
)

func currentDatabase(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var name string
	if err := pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatalf("current_database: %v", err)
	}
	return name
}

func tableExists(t *testing.T, pool *pgxpool.Pool, table string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", migrations.DefaultSchema+"."+table).Scan(&ok); err != nil {
		t.Fatalf("to_regclass(%s): %v", table, err)
	}
	return ok
}

// databaseExists asks the maintenance database whether name exists.
func databaseExists(t *testing.T, name string) bool {
	t.Helper()
	admin, err := AdminURL()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatalf("connect admin: %v", err)
	}
	defer conn.Close(context.Background())
	var ok bool
	if err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok); err != nil {
		t.Fatalf("look up %s: %v", name, err)
	}
	return ok
}

func TestNewIsMigrated(t *testing.T) {
	pool := New(t)
	for _, table := range []string{"teams", "relationships", "support_links", "review_items"} {
		if !tableExists(t, pool, table) {
			t.Errorf("table %s missing from fresh database", table)
		}
	}
	name := currentDatabase(t, pool)
	if !strings.HasPrefix(name, clonePrefix) {
		t.Errorf("database %q lacks prefix %q", name, clonePrefix)
	}
	if got, want := pool.Config().MaxConns, int32(maxConns); got != want {
		t.Errorf("MaxConns = %d, want %d", got, want)
	}
}

func TestTemplateIsMarked(t *testing.T) {
	New(t) // makes sure the template exists
	tpl := templateName()
	if len(tpl) != len(templatePrefix)+16 {
		t.Fatalf("template name %q: want prefix and 16 hex digits", tpl)
	}
	admin, err := AdminURL()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var isTemplate bool
	if err := conn.QueryRow(t.Context(), "SELECT datistemplate FROM pg_database WHERE datname = $1", tpl).Scan(&isTemplate); err != nil {
		t.Fatalf("look up template %s: %v", tpl, err)
	}
	if !isTemplate {
		t.Errorf("%s exists but is not marked as a template", tpl)
	}
}

func TestNewGivesDistinctDatabases(t *testing.T) {
	a, b := New(t), New(t)
	nameA, nameB := currentDatabase(t, a), currentDatabase(t, b)
	if nameA == nameB {
		t.Fatalf("two calls to New share database %s", nameA)
	}
	if _, err := a.Exec(t.Context(), "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatalf("create table in %s: %v", nameA, err)
	}
	if tableExists(t, b, "only_in_a") {
		t.Errorf("table created in %s is visible in %s", nameA, nameB)
	}
	if !tableExists(t, a, "only_in_a") {
		t.Errorf("table created in %s is missing there", nameA)
	}
}

func TestNewURLIsDroppedAtCleanup(t *testing.T) {
	var name string
	t.Run("use", func(t *testing.T) {
		var conn *pgx.Conn
		// Registered before NewURL, so it runs after the drop: the connection is left open on
		// purpose, and DROP DATABASE ... WITH (FORCE) must end it.
		t.Cleanup(func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		})
		u := NewURL(t)
		var err error
		conn, err = pgx.Connect(t.Context(), u)
		if err != nil {
			t.Fatalf("connect to %s: %v", u, err)
		}
		if err := conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		var ok bool
		if err := conn.QueryRow(t.Context(), "SELECT to_regclass('relationships') IS NOT NULL AND to_regclass('public.relationships') IS NULL").Scan(&ok); err != nil || !ok {
			t.Fatalf("relationships table present = %v, err %v", ok, err)
		}
		if !strings.Contains(u, name) {
			t.Errorf("URL %q does not name database %q", u, name)
		}
	})
	if name == "" {
		t.Fatal("subtest did not report its database")
	}
	if databaseExists(t, name) {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestNewParallel(t *testing.T) {
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			pool := New(t)
			if !tableExists(t, pool, "relationships") {
				t.Fatal("relationships table missing")
			}
			if _, err := pool.Exec(t.Context(), "CREATE TABLE mine (n int)"); err != nil {
				t.Fatalf("create table: %v", err)
			}
			if _, err := pool.Exec(t.Context(), "INSERT INTO mine VALUES ($1)", i); err != nil {
				t.Fatalf("insert: %v", err)
			}
			var n, count int
			if err := pool.QueryRow(t.Context(), "SELECT min(n), count(*) FROM mine").Scan(&n, &count); err != nil {
				t.Fatal(err)
			}
			if n != i || count != 1 {
				t.Errorf("got n=%d count=%d, want n=%d count=1", n, count, i)
			}
		})
	}
}

func TestWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h:5432/postgres?sslmode=disable", "postgres://u@h:5432/x?search_path=densemem&sslmode=disable"},
		{"postgresql://u:p@h/other", "postgresql://u:p@h/x?search_path=densemem"},
		{"host=h user=u dbname=postgres", "host=h user=u dbname=postgres dbname=x search_path=densemem"},
	} {
		got, err := withDatabase(tc.in, "x")
		if err != nil || got != tc.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil {
			t.Errorf("parse %q: %v", got, err)
		} else if cfg.Database != "x" {
			t.Errorf("parse %q: database %q, want x", got, cfg.Database)
		}
	}
}
