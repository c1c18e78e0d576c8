package migrations_test

import (
	"context"
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
		ORDER BY 1`)
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

// TestEveryPolicyUsesTheBoundTeam: every team policy admits the bound team (migrations 25 and 29:
// the team the view verified_team admits), not the raw densemem.team setting; grantTable gives
// later tables the same policy.
func TestEveryPolicyUsesTheBoundTeam(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `SELECT tablename::text FROM pg_policies
		WHERE schemaname = 'densemem' AND policyname = 'team_isolation'
		  AND NOT (qual ~ 'FROM (densemem\.)?verified_team v' AND with_check ~ 'FROM (densemem\.)?verified_team v')
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
