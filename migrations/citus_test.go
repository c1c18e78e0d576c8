package migrations_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestDistributeOnCitus runs on the Citus cluster DENSEMEM_CITUS_URL names (skipped without one):
// after Up and Distribute, every team-scoped table is hash-distributed by team_id in one
// co-location group, every other table of the schema but the version table is a reference table,
// every foreign key survived, every function of the schema exists on every worker, and a second
// Distribute changes nothing.
func TestDistributeOnCitus(t *testing.T) {
	pool := testdb.Citus(t)
	ctx := context.Background()
	fks := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
			WHERE c.contype = 'f' AND r.relnamespace = 'densemem'::regnamespace`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := fks()
	again, err := migrations.Distribute(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.ForeignKeys != 0 || len(again.Functions) != 0 {
		t.Errorf("a second Distribute placed tables again (%d keys dropped and added) or propagated functions %v", again.ForeignKeys, again.Functions)
	}
	if after := fks(); after != before || before == 0 {
		t.Errorf("foreign keys: %d before the second Distribute, %d after", before, after)
	}

	type placed struct {
		Table     string
		Team      bool
		Method    *string
		Column    *string
		Colocated *int64
		RepModel  *string
	}
	rows, err := pool.Query(ctx, `SELECT c.relname::text,
		    EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'team_id') AND c.relname <> 'teams',
		    p.partmethod::text, column_to_column_name(p.logicalrelid, p.partkey), p.colocationid::bigint, p.repmodel::text
		FROM pg_class c LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
		WHERE c.relnamespace = 'densemem'::regnamespace AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[placed])
	if err != nil {
		t.Fatal(err)
	}
	groups := map[int64][]string{}
	var distributed, reference int
	for _, p := range tables {
		switch {
		case p.Table == "goose_db_version":
			if p.Method != nil {
				t.Errorf("the version table is placed (%s); it stays on the coordinator", *p.Method)
			}
		case p.Team:
			if p.Method == nil || *p.Method != "h" || p.Column == nil || *p.Column != "team_id" {
				t.Errorf("team-scoped table %s is not hash-distributed by team_id: %+v", p.Table, p)
				continue
			}
			distributed++
			groups[*p.Colocated] = append(groups[*p.Colocated], p.Table)
		default:
			if p.Method == nil || *p.Method != "n" || p.RepModel == nil || *p.RepModel != "t" {
				t.Errorf("global table %s is not a reference table: %+v", p.Table, p)
				continue
			}
			reference++
		}
	}
	if len(groups) != 1 {
		t.Errorf("team-scoped tables in %d co-location groups, want 1: %v", len(groups), groups)
	}
	t.Logf("%d team-scoped tables distributed by team_id in %d co-location group(s), %d reference table(s), %d foreign keys",
		distributed, len(groups), reference, before)

	// Every function of the schema (but an extension's) on every worker.
	const functions = `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = 'densemem'::regnamespace
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		ORDER BY 1`
	list := func(q pgx.Rows, err error) []string {
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(q, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := list(pool.Query(ctx, functions))
	for i, w := range testdb.CitusWorkers(t, pool) {
		got := list(w.Query(ctx, functions))
		for _, f := range want {
			if !slices.Contains(got, f) {
				t.Errorf("function %s exists on the coordinator, not on worker %d", f, i+1)
			}
		}
	}
	t.Logf("%d functions of the schema on the coordinator and every worker", len(want))
}

// TestDistributeRefusesPlainPostgreSQL: on a database without Citus, Distribute says so and changes
// nothing.
func TestDistributeRefusesPlainPostgreSQL(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	if _, err := migrations.Distribute(context.Background(), pool, nil); !errors.Is(err, migrations.ErrNotCitus) {
		t.Fatalf("Distribute on plain PostgreSQL: %v, want ErrNotCitus", err)
	}
}
