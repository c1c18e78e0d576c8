package migrations_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestDecisionsMigrationUpDown: migration 11 creates the decision ledger (owned by the owner, the
// runtime role may read and append, the reviewer only read) and the review item lifecycle (the
// runtime role may update status, resolved_at and decision_id); its Down removes both, turns items
// closed as superseded or expired into resolved ones and restores migration 9's privileges; and Up
// applies again.
func TestDecisionsMigrationUpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	checkDecisionsSchema(t, ctx, pool, true)
	// An item closed as superseded, as only migration 11 allows.
	for _, q := range []string{
		`INSERT INTO teams (team_id, name, created_at) VALUES ('tm_m', 'm', now())`,
		`INSERT INTO review_items (team_id, review_id, ingest_id, placement_item_id, kind, status, profile_id, observation_id,
			related_ids, choices, created_at, relationship_version, related_versions)
		 VALUES ('tm_m', 'rev_1', 'ing_1', 'item_1', 'relationship_held', 'open', 'pf_a', 'obs_1', '{rel_2}', '[]', now(), 3, '{1}')`,
		`UPDATE review_items SET status = 'superseded', resolved_at = now() WHERE review_id = 'rev_1'`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	if err := migrations.DownTo(ctx, pool, 10, nil); err != nil {
		t.Fatalf("down to 10: %v", err)
	}
	if v, err := migrations.Version(ctx, pool, nil); err != nil || v != 10 {
		t.Fatalf("version after Down %d (%v), want 10", v, err)
	}
	checkDecisionsSchema(t, ctx, pool, false)
	var status string
	if err := pool.QueryRow(ctx, `SELECT status FROM review_items WHERE review_id = 'rev_1'`).Scan(&status); err != nil || status != "resolved" {
		t.Errorf("superseded item after Down: %q (%v), want resolved", status, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE review_items SET status = 'expired'`); err == nil || !strings.Contains(err.Error(), "review_items_status_check") {
		t.Errorf("status expired after Down: %v, want the old check to refuse it", err)
	}

	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	checkDecisionsSchema(t, ctx, pool, true)
}

// checkDecisionsSchema checks what migration 11 creates: present (up) or absent (down).
func checkDecisionsSchema(t *testing.T, ctx context.Context, pool *pgxpool.Pool, up bool) {
	t.Helper()
	rt, owner := migrations.DefaultRuntimeRole, migrations.DefaultOwnerRole
	var table bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('placement_decisions') IS NOT NULL`).Scan(&table); err != nil || table != up {
		t.Errorf("placement_decisions exists: %v (%v), want %v", table, err, up)
	}
	var columns int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema = current_schema()
		AND table_name = 'review_items' AND column_name IN ('decision_id', 'relationship_version', 'related_versions')`).
		Scan(&columns); err != nil || (columns == 3) != up || (columns == 0) == up {
		t.Errorf("review_items has %d of the lifecycle columns (%v), want them only after Up", columns, err)
	}
	var updStatus, updDecision bool
	q := `SELECT has_column_privilege($1, 'review_items', 'status', 'UPDATE'),
		EXISTS (SELECT 1 FROM information_schema.column_privileges WHERE table_schema = current_schema()
		        AND table_name = 'review_items' AND column_name = 'decision_id' AND grantee = $1 AND privilege_type = 'UPDATE')`
	if err := pool.QueryRow(ctx, q, rt).Scan(&updStatus, &updDecision); err != nil || !updStatus || updDecision != up {
		t.Errorf("runtime may update review_items.status %v, .decision_id %v (%v), want true, %v", updStatus, updDecision, err, up)
	}
	if !up {
		return
	}
	checkLedgerTable(t, ctx, pool, "placement_decisions")
	var fnOwner string
	if err := pool.QueryRow(ctx, `SELECT string_agg(pg_get_userbyid(proowner)::text, ',') FROM pg_proc WHERE proname = 'densemem_guard_review_item' AND pronamespace::regnamespace::text = current_schema()`).
		Scan(&fnOwner); err != nil || fnOwner != owner {
		t.Errorf("densemem_guard_review_item owner %q (%v), want %s", fnOwner, err, owner)
	}
}
