package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// TestBoundedRecallMigrationUpDown: migration 21 (checked at version 22; migration 23 replaces its
// search function) creates the creation-ordered relationship indexes
// and densemem_search_dense (the owner's, not executable by PUBLIC) and sets the search function's
// planner settings; its Down puts back migration 16's function and drops the rest; Up applies again.
func TestBoundedRecallMigrationUpDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if err := migrations.UpTo(ctx, pool, 22, nil); err != nil {
		t.Fatal(err)
	}
	checkBoundedRecallSchema(t, ctx, pool, true)
	if err := migrations.DownTo(ctx, pool, 19, nil); err != nil {
		t.Fatalf("down to 19: %v", err)
	}
	checkBoundedRecallSchema(t, ctx, pool, false)
	if err := migrations.UpTo(ctx, pool, 22, nil); err != nil {
		t.Fatalf("up again: %v", err)
	}
	checkBoundedRecallSchema(t, ctx, pool, true)
}

func checkBoundedRecallSchema(t *testing.T, ctx context.Context, pool *pgxpool.Pool, up bool) {
	t.Helper()
	var indexes int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = 'densemem'
		AND indexname IN ('relationships_subject_created', 'relationships_object_created')`).Scan(&indexes); err != nil {
		t.Fatal(err)
	}
	var config []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(proconfig, '{}') FROM pg_proc
		WHERE proname = 'densemem_search_hits' AND pronamespace = 'densemem'::regnamespace`).Scan(&config); err != nil {
		t.Fatal(err)
	}
	var dense, public bool
	if err := pool.QueryRow(ctx, `SELECT count(*) > 0, coalesce(bool_or(has_function_privilege('public',
		p.oid, 'EXECUTE')), false) FROM pg_proc p WHERE proname = 'densemem_search_dense'`).Scan(&dense, &public); err != nil {
		t.Fatal(err)
	}
	generic := slices.Contains(config, "plan_cache_mode=force_generic_plan")
	if want := map[bool]int{true: 2, false: 0}[up]; indexes != want || generic != up || dense != up || public {
		t.Errorf("up=%t: %d creation-ordered indexes, search function settings %v, densemem_search_dense %t "+
			"(PUBLIC may execute: %t)", up, indexes, config, dense, public)
	}
}
