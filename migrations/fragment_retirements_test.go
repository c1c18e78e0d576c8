package migrations_test

import (
	"context"
	"testing"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestFragmentRetirementsMigrationUpDown: migration 16 creates the fragment retirement ledger (owned
// by the owner, row-level security forced, the runtime role may read and append, the reviewer only
// read, UPDATE/DELETE/TRUNCATE refused by triggers) and the source index; its Down drops both; and
// Up applies again.
func TestFragmentRetirementsMigrationUpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	check := func(up bool) {
		t.Helper()
		var table, index bool
		if err := pool.QueryRow(ctx, `SELECT to_regclass('fragment_retirements') IS NOT NULL,
			to_regclass('evidence_fragments_source') IS NOT NULL`).Scan(&table, &index); err != nil || table != up || index != up {
			t.Fatalf("fragment_retirements %v, evidence_fragments_source %v (%v), want %v", table, index, err, up)
		}
		if !up {
			return
		}
		checkLedgerTable(t, ctx, pool, "fragment_retirements")
		var triggers int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'fragment_retirements'::regclass
			AND tgname IN ('fragment_retirements_append_only', 'fragment_retirements_no_truncate')`).Scan(&triggers); err != nil || triggers != 2 {
			t.Errorf("append-only triggers: %d (%v), want 2", triggers, err)
		}
	}
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	check(true)
	if err := migrations.DownTo(ctx, pool, 15, nil); err != nil {
		t.Fatalf("down to 15: %v", err)
	}
	check(false)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	check(true)
}
