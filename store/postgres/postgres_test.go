package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/failpoint"
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
		})
	})
	if !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("err = %v, want ErrStaleVersion", err)
	}
	for _, table := range []string{"entities"} {
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

// TestTxLostCommitAcknowledgementIsUnknown: when the round trip that carried COMMIT loses its answer
// (failpoint tx.commit_ack_lost drops the answer of a COMMIT that succeeded), Tx reports
// ErrCommitUnknown and runs fn once, never retrying a transaction that may have committed; here it
// did, so its rows are there. An error that proves nothing committed stays what it was: a context
// that ended before the write batch was sent is not an unknown outcome.
func TestTxLostCommitAcknowledgementIsUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	st := postgres.New(pool, nil)
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	team := identity.TeamID("tm_lost")
	if err := st.TeamCreate(ctx, store.TeamCreateParams{Team: team, Name: "lost", CreatedAt: now,
		Policy: store.Policy{ReviewTTL: 7 * 24 * time.Hour, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "system", CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if err := st.ProfileCreate(ctx, store.ProfileCreateParams{Team: team, Profile: "pf_a", Name: "a",
		Scopes: []identity.Scope{identity.ScopeWrite}, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	entities := func() int {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM entities").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// write inserts one entity; before runs ahead of its write batch.
	write := func(ctx context.Context, id string, before func()) (calls int, err error) {
		err = st.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			calls++
			if _, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: team, Profile: "pf_a", IdempotencyKey: id}); err != nil {
				return err
			}
			if before != nil {
				before()
			}
			return tx.WriteSetApply(ctx, store.WriteSet{Entities: []store.EntityRow{{Team: team, ID: identity.EntityID(id),
				Kind: "thing", CreatedBy: "pf_a", IngestID: "ing_" + id, CreatedAt: now}}})
		})
		return calls, err
	}

	// COMMIT in the write batch, as in production.
	calls, err := write(failpoint.Arm(ctx, "tx.commit_ack_lost"), "ent_1", nil)
	if !errors.Is(err, store.ErrCommitUnknown) || calls != 1 {
		t.Fatalf("write batch with COMMIT, answer lost: err = %v after %d calls of fn, want ErrCommitUnknown after 1", err, calls)
	}
	if n := entities(); n != 1 {
		t.Errorf("%d entities after a COMMIT whose answer was lost, want 1 (the failpoint lets the COMMIT run)", n)
	}

	// COMMIT alone, when fn writes nothing.
	err = st.Tx(failpoint.Arm(ctx, "tx.commit_ack_lost"), func(ctx context.Context, tx store.Tx) error {
		_, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: team, Profile: "pf_a", IdempotencyKey: "read"})
		return err
	})
	if !errors.Is(err, store.ErrCommitUnknown) {
		t.Fatalf("COMMIT alone, answer lost: err = %v, want ErrCommitUnknown", err)
	}

	// The context ends before the write batch leaves: nothing was sent, so the outcome is known.
	cctx, cancel := context.WithCancel(ctx)
	calls, err = write(cctx, "ent_2", cancel)
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrCommitUnknown) || calls != 1 {
		t.Fatalf("write batch after the context ended: err = %v after %d calls of fn, want context.Canceled, not ErrCommitUnknown",
			err, calls)
	}
	if n := entities(); n != 1 {
		t.Errorf("%d entities after a write batch that was never sent, want 1", n)
	}

	// The pool recovered from the closed connections: a healthy write commits.
	if _, err := write(ctx, "ent_3", nil); err != nil {
		t.Fatalf("healthy write: %v", err)
	}
	if n := entities(); n != 2 {
		t.Errorf("%d entities after a healthy write, want 2", n)
	}
}

// TestPoolOwnership: a Store made by New leaves its pool to the caller (Close does not close it, as
// New's doc promises); a Store made by Open owns the pool it opened and Close releases it.
func TestPoolOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	postgres.New(pool, nil).Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the caller's pool after Close of a Store made by New: %v; want it still open", err)
	}
	st, err := postgres.Open(ctx, testdb.NewURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := st.Pool().Ping(ctx); err == nil {
		t.Fatal("the pool Open made still answers after Close; want it closed")
	}
}
