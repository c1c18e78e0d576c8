package storetest

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Fenced reviews: KeysRead returns what KeysLock returns, unlocked; ReviewApplyFenced writes only
// while everything its fence names is as read, and refuses with ErrStaleVersion otherwise, writing
// nothing.
var reviewFenceContracts = []contract{
	{"KeysReadReadsWhatKeysLockLocks", testKeysReadMatchesKeysLock},
	{"ReviewApplyFencedChecksEveryFact", testReviewFenceChecks},
	{"ReviewApplyFencedBatchWritesAllOrNone", testReviewFenceBatch},
}

// liveRead reads sc's key and case with LiveOnly, locked (KeysLock) or not (KeysRead).
func (w *world) liveRead(s store.Store, sc scene, locked bool) store.KeysLocked {
	w.t.Helper()
	p := store.KeysLockParams{Team: w.team, Keys: []conflict.Key{sc.key}, Cases: []conflict.ID{sc.cs.ID}, LiveOnly: true}
	if !locked {
		kl, err := s.KeysRead(w.e.ctx, p)
		w.must(err, "KeysRead")
		return kl
	}
	var kl store.KeysLocked
	w.must(s.Tx(w.e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
		kl, err = tx.KeysLock(ctx, p)
		return err
	}), "KeysLock")
	return kl
}

func testKeysReadMatchesKeysLock(e *env) {
	w := e.world(e.team("tm_kr"))
	sc := w.disagreement("", t0, t0)
	closed := w.rel(relSpec{owner: w.b, content: "Ada worked on Falcon."})
	w.change(closed, relationship.StatusSuperseded, closed.Tier, nil, at(time.Minute))
	locked, read := w.liveRead(e.rv, sc, true), w.liveRead(e.rv, sc, false)
	if diff := cmp.Diff(locked, read, cmpopts.EquateEmpty()); diff != "" {
		e.t.Errorf("KeysRead differs from KeysLock (-locked +read):\n%s", diff)
	}
	if len(read.Relationships) != 2 || len(read.Cases) != 1 {
		e.t.Errorf("KeysRead: %d relationships and %d cases, want the 2 live ones and the case", len(read.Relationships), len(read.Cases))
	}
	if _, err := e.rv.KeysRead(e.ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{sc.key}, Members: true}); err == nil {
		e.t.Errorf("KeysRead with Members: no error, want a refusal")
	}
}

func testReviewFenceChecks(e *env) {
	w := e.world(e.team("tm_rf"))
	sc := w.disagreement("", t0, t0)
	if got := w.claim(store.CaseClaimDueParams{Now: at(time.Hour), RunDate: runDate, Batch: 10, Lease: 5 * time.Minute,
		Token: "tok_1", MaxAttempts: 5}); len(got) != 1 {
		e.t.Fatalf("claim = %v, want the case", claimedIDs(got))
	}
	fence := store.NewReviewFence(sc.key, sc.cs.ID, w.liveRead(e.rv, sc, false))
	// A review that keeps the case open, fenced: it writes the case's next review time.
	next := at(24 * time.Hour)
	keep := store.WriteSet{CaseReviews: []store.CaseReviewUpdate{{Team: w.team, ID: sc.cs.ID, Token: "tok_1", ExpectVersion: sc.cs.Version,
		Version: sc.cs.Version, Status: sc.cs.Status, NextReviewAt: next, UpdatedAt: at(time.Hour)}}}
	apply := func(f store.ReviewFence) error {
		return e.rv.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error { return tx.ReviewApplyFenced(ctx, f, keep) })
	}
	for _, tc := range []struct {
		what   string
		change func(f *store.ReviewFence)
	}{
		{"a relationship the read did not see", func(f *store.ReviewFence) {
			f.Relationships, f.Versions = f.Relationships[:1], f.Versions[:1]
		}},
		{"a relationship at another version", func(f *store.ReviewFence) { f.Versions[0]++ }},
		{"another relationship", func(f *store.ReviewFence) { f.Relationships[0] = "rel_other" }},
		{"a support the read did not see", func(f *store.ReviewFence) { f.Supports-- }},
		{"a retirement the read did not see", func(f *store.ReviewFence) { f.Retired++ }},
		{"a case the read did not see", func(f *store.ReviewFence) {
			f.Cases, f.CaseVersions, f.ClaimTokens = nil, nil, nil
		}},
		{"a case at another version", func(f *store.ReviewFence) { f.CaseVersions[0]++ }},
		{"a case under another claim", func(f *store.ReviewFence) { f.ClaimTokens[0] = "tok_other" }},
	} {
		f := fence
		f.Relationships, f.Versions = append([]relationship.ID(nil), fence.Relationships...), append([]int(nil), fence.Versions...)
		f.Cases, f.CaseVersions = append([]conflict.ID(nil), fence.Cases...), append([]int(nil), fence.CaseVersions...)
		f.ClaimTokens = append([]string(nil), fence.ClaimTokens...)
		tc.change(&f)
		e.checkErr(apply(f), store.ErrStaleVersion, "a fence expecting "+tc.what)
		w.caseState(sc.cs, sc.cs.Version, sc.cs.Status, t0, "tok_1", "after a refused fenced review ("+tc.what+")")
	}
	e.must(apply(fence), "the fenced review as read")
	w.caseState(sc.cs, sc.cs.Version, sc.cs.Status, next, "", "after the fenced review")
	e.checkErr(e.rv.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.KeysLock(ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{sc.key}}); err != nil {
			return err
		}
		return tx.ReviewApplyFenced(ctx, fence, keep)
	}), store.ErrInternal, "a fenced review after another call of its transaction")
}

// testReviewFenceBatch: several fenced reviews in one transaction write together, and one stale
// fence refuses them all, writing nothing; two fences of one key are refused.
func testReviewFenceBatch(e *env) {
	w := e.world(e.team("tm_rb"))
	scenes := []scene{w.disagreement("", t0, t0), w.disagreement("work", t0, t0)}
	if got := w.claim(store.CaseClaimDueParams{Now: at(time.Hour), RunDate: runDate, Batch: 10, Lease: 5 * time.Minute,
		Token: "tok_1", MaxAttempts: 5}); len(got) != 2 {
		e.t.Fatalf("claim = %v, want both cases", claimedIDs(got))
	}
	next := at(24 * time.Hour)
	fences, sets := make([]store.ReviewFence, len(scenes)), make([]store.WriteSet, len(scenes))
	for i, sc := range scenes {
		fences[i] = store.NewReviewFence(sc.key, sc.cs.ID, w.liveRead(e.rv, sc, false))
		sets[i] = store.WriteSet{CaseReviews: []store.CaseReviewUpdate{{Team: w.team, ID: sc.cs.ID, Token: "tok_1",
			ExpectVersion: sc.cs.Version, Version: sc.cs.Version, Status: sc.cs.Status, NextReviewAt: next, UpdatedAt: at(time.Hour)}}}
	}
	apply := func(fs []store.ReviewFence, ws []store.WriteSet) error {
		return e.rv.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error { return tx.ReviewApplyFencedBatch(ctx, fs, ws) })
	}
	stale := fences[1]
	stale.Versions = append([]int(nil), stale.Versions...)
	stale.Versions[0]++
	e.checkErr(apply([]store.ReviewFence{fences[0], stale}, sets), store.ErrStaleVersion, "a batch with one stale fence")
	for _, sc := range scenes {
		w.caseState(sc.cs, sc.cs.Version, sc.cs.Status, t0, "tok_1", "after a refused batch")
	}
	e.checkErr(apply([]store.ReviewFence{fences[0], fences[0]}, sets), store.ErrInternal, "a batch with one key twice")
	e.must(apply(fences, sets), "the batch as read")
	for _, sc := range scenes {
		w.caseState(sc.cs, sc.cs.Version, sc.cs.Status, next, "", "after the batch")
	}
}
