package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
)

// TestFoldedCommitFailureLeavesNothing drives the production path of Tx, where COMMIT travels in the
// write batch: a stale version fence in the middle of the batch must abort the whole transaction on
// the server, so no row queued before or after it survives.
func TestFoldedCommitFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	st := postgres.New(pool, nil)
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	team := identity.TeamID("tm_fold")
	if err := st.TeamCreate(ctx, store.TeamCreateParams{Team: team, Name: "fold", CreatedAt: now,
		Policy: store.Policy{ReviewTTL: 7 * 24 * time.Hour, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "system", CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if err := st.ProfileCreate(ctx, store.ProfileCreateParams{Team: team, Profile: "pf_a", Name: "a",
		Scopes: []identity.Scope{identity.ScopeWrite}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	err := st.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: team, Profile: "pf_a", IdempotencyKey: "k"}); err != nil {
			return err
		}
		return tx.WriteSetApply(ctx, store.WriteSet{
			Entities: []store.EntityRow{{Team: team, ID: "ent_x", Kind: "thing", CreatedBy: "pf_a", IngestID: "ing_1", CreatedAt: now}},
			Updates: []store.RelationshipUpdate{{Team: team, ID: "rel_missing", ExpectVersion: 1,
				Status: relationship.StatusRetracted, Tier: relationship.TierCandidate, UpdatedAt: now}},
			Refreshes: []store.RefreshRow{{Team: team, RelationshipID: "rel_missing", Reason: "x", CreatedAt: now}},
		})
	})
	if !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("err = %v, want ErrStaleVersion", err)
	}
	for _, table := range []string{"entities", "search_refresh_queue"} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s has %d rows after a failed transaction", table, n)
		}
	}
	// The connection went back to the pool clean: a new transaction on it works.
	if err := st.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: team, Profile: "pf_a", IdempotencyKey: "k2"})
		return err
	}); err != nil {
		t.Fatalf("next transaction: %v", err)
	}
}
