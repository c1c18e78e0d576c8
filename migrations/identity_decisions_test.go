package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestIdentityDecisionsMigrationUpDown: migration 14 creates the identity decision ledger (owned by
// the owner, row-level security forced, the runtime role may read and append, the reviewer only
// read) and lets resolution events record split and merged; its Down drops the ledger and refuses
// those decisions again without rewriting stored events (the check comes back NOT VALID); and Up
// applies again.
func TestIdentityDecisionsMigrationUpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	checkIdentityDecisionsSchema(t, ctx, pool, true)
	if err := migrations.DownTo(ctx, pool, 12, nil); err != nil {
		t.Fatalf("down to 12: %v", err)
	}
	checkIdentityDecisionsSchema(t, ctx, pool, false)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	checkIdentityDecisionsSchema(t, ctx, pool, true)
}

// checkIdentityDecisionsSchema checks what migration 14 creates: present (up) or absent (down).
func checkIdentityDecisionsSchema(t *testing.T, ctx context.Context, pool *pgxpool.Pool, up bool) {
	t.Helper()
	var def string
	var valid bool
	if err := pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid), convalidated FROM pg_constraint
		WHERE conname = 'entity_resolution_events_decision_check' AND connamespace::regnamespace::text = current_schema()`).
		Scan(&def, &valid); err != nil || strings.Contains(def, "'split'") != up || valid != up {
		t.Errorf("resolution decision check %q validated %v (%v), want split allowed and validated: %v", def, valid, err, up)
	}
	var table bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('identity_decisions') IS NOT NULL`).Scan(&table); err != nil || table != up {
		t.Errorf("identity_decisions exists: %v (%v), want %v", table, err, up)
	}
	if !up {
		return
	}
	checkLedgerTable(t, ctx, pool, "identity_decisions")
}

// checkLedgerTable checks a decision ledger table: owned by the owner, row-level security enabled
// and forced, the runtime role may read and append (never change or empty it), the reviewer only read.
func checkLedgerTable(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) {
	t.Helper()
	rt, rv, owner := migrations.DefaultRuntimeRole, migrations.DefaultReviewerRole, migrations.DefaultOwnerRole
	var got string
	if err := pool.QueryRow(ctx, `SELECT pg_get_userbyid(relowner)::text || ' ' || relrowsecurity::text || ' ' || relforcerowsecurity::text
		FROM pg_class WHERE oid = $1::regclass`, table).Scan(&got); err != nil || got != owner+" true true" {
		t.Errorf("%s owner and row-level security: %q (%v), want %q", table, got, err, owner+" true true")
	}
	for _, c := range []struct {
		role, priv string
		want       bool
	}{
		{rt, "SELECT", true}, {rt, "INSERT", true}, {rt, "UPDATE", false}, {rt, "DELETE", false}, {rt, "TRUNCATE", false},
		{rv, "SELECT", true}, {rv, "INSERT", false}, {rv, "UPDATE", false},
	} {
		var has bool
		if err := pool.QueryRow(ctx, `SELECT has_table_privilege($1, $2, $3)`, c.role, table, c.priv).Scan(&has); err != nil || has != c.want {
			t.Errorf("%s %s on %s: %v (%v), want %v", c.role, c.priv, table, has, err, c.want)
		}
	}
}
