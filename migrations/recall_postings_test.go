package migrations_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestRecallPostingsMigrationUpDown: migration 23 creates recall_postings with its order index and
// triggers and drops densemem_search_dense; its Down puts migration 21's function back and drops the
// postings; Up applies again.
func TestRecallPostingsMigrationUpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatal(err)
	}
	checkRecallPostingsSchema(t, ctx, pool, true)
	if err := migrations.DownTo(ctx, pool, 22, nil); err != nil {
		t.Fatalf("down to 22: %v", err)
	}
	checkRecallPostingsSchema(t, ctx, pool, false)
	if err := migrations.Up(ctx, pool, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	checkRecallPostingsSchema(t, ctx, pool, true)
}

func checkRecallPostingsSchema(t *testing.T, ctx context.Context, pool *pgxpool.Pool, up bool) {
	t.Helper()
	var table, index, dense bool
	var triggers int
	if err := pool.QueryRow(ctx, `SELECT to_regclass('densemem.recall_postings') IS NOT NULL,
		to_regclass('densemem.recall_postings_order') IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'densemem_search_dense'),
		(SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'fragment_contents_postings_%')`).Scan(&table, &index, &dense, &triggers); err != nil {
		t.Fatal(err)
	}
	if table != up || index != up || dense == up || triggers != map[bool]int{true: 2, false: 0}[up] {
		t.Errorf("up=%t: recall_postings %t, its order index %t, densemem_search_dense %t, %d posting triggers",
			up, table, index, dense, triggers)
	}
}
