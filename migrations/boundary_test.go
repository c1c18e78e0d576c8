package migrations_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// TestEveryFunctionPinsSearchPath: every function of the schema runs with search_path
// "densemem, pg_temp", so a session's temporary table cannot stand in for a table of the schema
// (issue 22; migration 25 pinned the functions before it, each later migration must pin its own).
func TestEveryFunctionPinsSearchPath(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = 'densemem'::regnamespace
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		  AND NOT ('search_path=densemem, pg_temp' = ANY (COALESCE(p.proconfig, '{}')))
		  AND p.oid::regprocedure::text <> ALL ($1)
		ORDER BY 1`, unpinnedFunctions)
	if err != nil {
		t.Fatal(err)
	}
	unpinned, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(unpinned) > 0 {
		t.Errorf("functions without search_path = densemem, pg_temp: %v", unpinned)
	}
}

// unpinnedFunctions run without a SET clause (which costs a third of a cheap function's call):
// every name in them is qualified, which TestUnpinnedFunctionsQualifyEveryName checks.
var unpinnedFunctions = []string{"densemem_verified_team()"}

// TestUnpinnedFunctionsQualifyEveryName: a function of unpinnedFunctions names every function, type
// and operator with its schema (outside string literals), so no search_path and no temporary object
// can redirect it (issue 22 item 1: "or no unqualified name at all").
func TestUnpinnedFunctionsQualifyEveryName(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	literals := regexp.MustCompile(`'(?:[^']|'')*'`)
	operators := regexp.MustCompile(`OPERATOR\((?:pg_catalog|densemem)\.[^)]+\)`)
	// A name not preceded by a dot, a word character or a quote: unqualified.
	calls := regexp.MustCompile(`(?:^|[^.\w"])([A-Za-z_]\w*)\s*\(`)
	casts := regexp.MustCompile(`::\s*([A-Za-z_][A-Za-z_0-9.]*)`)
	bare := regexp.MustCompile(`\|\||[=<>+*/-]`)
	for _, f := range unpinnedFunctions {
		var src string
		if err := pool.QueryRow(context.Background(), "SELECT prosrc FROM pg_proc WHERE oid = ('densemem.' || $1)::regprocedure", f).Scan(&src); err != nil {
			t.Fatal(f, err)
		}
		body := operators.ReplaceAllString(literals.ReplaceAllString(src, "''"), " ")
		body = strings.ReplaceAll(body, ":=", " ")
		for _, m := range calls.FindAllStringSubmatch(body, -1) {
			if !strings.EqualFold(m[1], "COALESCE") {
				t.Errorf("%s calls %s without its schema", f, m[1])
			}
		}
		for _, m := range casts.FindAllStringSubmatch(body, -1) {
			if !strings.Contains(m[1], ".") {
				t.Errorf("%s casts to %s without its schema", f, m[1])
			}
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			if op := bare.FindString(line); op != "" {
				t.Errorf("%s uses the operator %s without its schema: %s", f, op, strings.TrimSpace(line))
			}
		}
		for _, decl := range regexp.MustCompile(`(?m)^\s*[a-z_]+\s+([A-Za-z_][A-Za-z_0-9.]*)\s*(?::=|;)`).FindAllStringSubmatch(body, -1) {
			if !strings.Contains(decl[1], ".") {
				t.Errorf("%s declares a variable of type %s without its schema", f, decl[1])
			}
		}
	}
}

// TestEveryPolicyUsesTheBoundTeam: every team policy admits the bound team (migrations 25 and 29:
// the team densemem_verified_team() verified), not the raw densemem.team setting; grantTable gives
// later tables the same policy.
func TestEveryPolicyUsesTheBoundTeam(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `SELECT tablename::text FROM pg_policies
		WHERE schemaname = 'densemem' AND policyname = 'team_isolation'
		  AND NOT (qual ~ 'SELECT (densemem\.)?densemem_verified_team\(\)' AND with_check ~ 'SELECT (densemem\.)?densemem_verified_team\(\)')
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 0 {
		t.Errorf("team policies not on the bound team: %v", raw)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_policies WHERE schemaname = 'densemem'
		AND policyname = 'team_isolation'`).Scan(&n); err != nil || n < 30 {
		t.Errorf("%d team policies, %v; want one per table", n, err)
	}
}
