package densemem_test

import (
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
)

// TestSourceRevisionAt10kRelationships: one revision of a source whose previous revision supports
// 10,000 relationships (Limits.MaxRevisionRelationships, the default bound) completes in the one
// transaction of its Remember (decision 111): 10,000 retirement rows, every current relationship
// recomputed by a system transition (each had only that support: pending_evidence), the conflict
// keys locked through the team's key lock (past Limits.MaxAdvisoryLocks), the ledger consistent.
// The time it took is logged; speed is measured, never asserted. It takes about 16 s (21 s under
// -race) on 2 cores, most of it the load and the revision's one transaction.
//
// Slow (over 20 s alone at load 9; skipped under -short): the size is the point, the default bound.
func TestSourceRevisionAt10kRelationships(t *testing.T) {
	slow(t)
	t.Parallel()
	e := newEnv(t)
	const key = "doc:runbook"
	// 9,995 filler relationships and one query subject's 5: 10,000 supported by revision v1.
	p := benchload.Params{Team: string(e.team), Owner: string(e.A.ProfileID), Active: 9999, Subjects: 1,
		Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), SourceKey: key, SourceRevision: "v1", SkipResolutions: true}
	if err := benchload.Load(e.ctx, e.pool, p); err != nil {
		t.Fatal(err)
	}
	active := e.ledger().Int(`SELECT count(*) FROM relationships WHERE status = 'active'`)
	e.step()
	v2 := withContent(deploy("production", "release"), "The production environment deploys from the release branch.")
	start := time.Now()
	pl, err := e.client.Remember(e.ctx, e.A, sourced(v2, key, "v2", "v1"))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("revision of 10,000 relationships: %v", err)
	}
	t.Logf("a revision retiring 10,000 fragments and recomputing %d relationships took %s in one transaction", len(pl.Recomputed),
		took.Round(time.Millisecond))
	if len(pl.Retired) != 10000 || len(pl.Recomputed) != active {
		t.Errorf("retired %d fragments and recomputed %d relationships, want 10000 and %d", len(pl.Retired), len(pl.Recomputed), active)
	}
	l := e.ledger()
	if n := l.Int(`SELECT count(*) FROM relationships WHERE status = 'active'`); n != 1 {
		t.Errorf("%d active relationships after the revision, want 1 (the new revision's statement)", n)
	}
	if n := l.Int(`SELECT count(*) FROM relationship_transitions WHERE actor_kind = 'system' AND reason LIKE 'support_retired:%'`); n != active {
		t.Errorf("%d system transitions, want %d", n, active)
	}
	e.checkLedger()

	// One more than the bound is refused, naming the field, and writes nothing.
	small := newEnv(t, func(c *densemem.Config) { c.Limits.MaxRevisionRelationships = 3 })
	small.rememberReq(small.A, sourced(deploy("production", "main"), key, "v1", ""))
	for _, env := range []string{"staging", "qa", "dev"} {
		small.rememberReq(small.A, sourced(withContent(deploy(env, "main"), "The "+env+" environment deploys from the main branch."), key, "v1", ""))
	}
	before := small.counts()
	_, err = small.client.Remember(small.ctx, small.A, sourced(v2, key, "v2", "v1"))
	var ve *densemem.ValidationError
	if !asValidation(err, &ve) || !ve.Has("evidence[0].previous_source_revision") {
		t.Errorf("a revision past Limits.MaxRevisionRelationships: %v, want a validation error", err)
	}
	if d := countsDiff(before, small.counts()); d != "" {
		t.Errorf("the refused revision wrote rows: %s", d)
	}
}
