package densemem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/densemem/densemem"
)

// The two sequences of issue 20 that broke the same-owner rule with ordinary calls, no faults and
// no concurrency: each leaves one owner, on one key of a cardinality-one predicate, with at most one
// current value.

// ownersCurrentValues returns p's current relationships of "<subject> deploys_from" in the unscoped
// key, as Recall's current view shows them to the team's admin, and the pairs of them that are two
// current values at once (currentValueOverlaps).
func (e *env) ownersCurrentValues(p densemem.Principal, subject string) ([]densemem.RecallResult, []string) {
	e.t.Helper()
	r, err := e.client.Recall(e.ctx, e.admin, densemem.RecallRequest{Query: subject, Limit: densemem.MaxRecallLimit,
		Predicate: "deploys_from"})
	if err != nil {
		e.t.Fatalf("recall %q: %v", subject, err)
	}
	var mine []densemem.RecallResult
	for _, res := range r.Results {
		if s := res.Relationship; s.OwnerProfileID == p.ProfileID && s.Subject.Name == subject && s.Scope == "" {
			mine = append(mine, res)
		}
	}
	return mine, currentValueOverlaps(mine)
}

// named replaces the profile IDs in s by the profiles' names.
func (e *env) named(s string) string {
	return strings.NewReplacer(string(e.A.ProfileID), "A", string(e.B.ProfileID), "B", string(e.C.ProfileID), "C").Replace(s)
}

// describeResults lists recall results as "object (status, valid from)".
func describeResults(rs []densemem.RecallResult) string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Relationship.RelationshipID)+" "+r.Relationship.Object.Name+" ("+
			string(r.Relationship.Status)+", from "+instant(r.ValidDuring.From)+")")
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// TestSequences_RegressionDuplicateHeldStatements is the first sequence: A's current
// "production deploys_from release"; "main" held against it (item 1); "main" again, word for word;
// "develop" held too (item 3). Deciding item 1 with supersede_prior, then item 3 with
// supersede_prior, once left main, main and develop all current. The exact duplicate of a held
// statement must be a support of it, not a second relationship, and whatever the second decision
// does (decide against main, or be refused as stale because its question changed), A keeps one
// current value, which Recall shows alone.
func TestSequences_RegressionDuplicateHeldStatements(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	release := e.remember(e.A, deploy("production", "release"))
	if release.Status != "active" {
		t.Fatalf("release: %s/%s, want accepted and active", release.Category, release.Status)
	}
	e.step()
	mainReq := deploy("production", "main")
	pl1 := e.rememberOne(e.A, mainReq.request(nextKey()))
	main1 := only(t, pl1)
	if main1.Status != "needs_review" || main1.Review == nil {
		t.Fatalf("main: %s/%s, want held for review against release", main1.Category, main1.Status)
	}
	e.step()
	main2 := only(t, e.rememberOne(e.A, mainReq.request(nextKey())))
	if main2.RelationshipID != main1.RelationshipID {
		t.Errorf("main stated again, word for word: %s %s (%s), want a support of the held %s, not a second relationship",
			main2.Category, main2.RelationshipID, main2.Status, main1.RelationshipID)
	}
	e.step()
	pl3 := e.rememberOne(e.A, deploy("production", "develop").request(nextKey()))
	develop := only(t, pl3)
	if develop.Status != "needs_review" || develop.Review == nil {
		t.Fatalf("develop: %s/%s, want held for review", develop.Category, develop.Status)
	}
	e.step()

	if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(pl1.IngestID, main1, densemem.ActionSupersedePrior)); err != nil {
		t.Fatalf("supersede_prior on item 1 (main): %v", err)
	}
	e.step()
	before := e.allCounts()
	_, err := e.client.Resolve(e.ctx, e.A, resolveRequest(pl3.IngestID, develop, densemem.ActionSupersedePrior))
	switch {
	case errors.Is(err, densemem.ErrStaleDecision):
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("the refused decision on item 3 wrote rows: %s", d)
		}
	case err != nil:
		t.Fatalf("supersede_prior on item 3 (develop): %v, want success or ErrStaleDecision", err)
	}

	current, overlaps := e.ownersCurrentValues(e.A, "production")
	for _, o := range overlaps {
		t.Errorf("A holds two current values: %s", e.named(o))
	}
	if len(current) != 1 {
		t.Errorf("Recall shows A's current values of production deploys_from %s, want exactly one", describeResults(current))
	}
	e.checkLedger()
}

// TestSequences_RegressionItemAfterPriorReplaced is the second sequence: B's current
// "production deploys_from develop" (r1); "release" held against r1 (r2); then "main" dated
// 2025-01-20, with the date in its evidence so the verifier confirms it, supersedes r1 (r3). The
// question r2's item asked (release instead of develop?) is gone: deciding it with supersede_prior
// must be refused with ErrStaleDecision, writing nothing, or leave B one current value whose
// validity overlaps no other current one of B's on the key.
func TestSequences_RegressionItemAfterPriorReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r1 := e.remember(e.B, deploy("production", "develop"))
	if r1.Status != "active" {
		t.Fatalf("develop: %s/%s, want active", r1.Category, r1.Status)
	}
	e.step()
	pl2 := e.rememberOne(e.B, deploy("production", "release").request(nextKey()))
	r2 := only(t, pl2)
	if r2.Status != "needs_review" || r2.Review == nil {
		t.Fatalf("release: %s/%s, want held for review against develop", r2.Category, r2.Status)
	}
	e.step()
	r3 := e.remember(e.B, deploy("production", "main").since(date("2025-01-20")))
	if r3.Category != densemem.CategorySupersededPrior || r3.Status != "active" {
		t.Fatalf("main since 2025-01-20: %s/%s (%s), want it to supersede develop", r3.Category, r3.Status, r3.Reason)
	}
	if st, _, _, _ := e.relationshipState(r1.RelationshipID); st != "superseded" {
		t.Fatalf("develop is %s after the dated main, want superseded", st)
	}
	e.step()

	before := e.allCounts()
	_, err := e.client.Resolve(e.ctx, e.B, resolveRequest(pl2.IngestID, r2, densemem.ActionSupersedePrior))
	switch {
	case errors.Is(err, densemem.ErrStaleDecision):
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("the refused decision wrote rows: %s", d)
		}
	case err != nil:
		t.Fatalf("supersede_prior on release's item: %v, want ErrStaleDecision or success", err)
	}

	current, overlaps := e.ownersCurrentValues(e.B, "production")
	for _, o := range overlaps {
		t.Errorf("B holds two current values: %s", e.named(o))
	}
	if len(current) != 1 {
		t.Errorf("Recall shows B's current values of production deploys_from %s, want exactly one", describeResults(current))
	}
	e.checkLedger()
}

// TestSequences_RegressionPriorForgottenUnderTwoHeldTwins was found by the generated sequences
// (seed 2) and pasted as the shrinker printed it: C's current "staging deploys_from main" since
// 2025-02-01 holds "release" (undated) and "release since 2025-01-20" (earlier, so no supersession)
// for review; forgetting main once re-planned both held statements into two current relationships
// with overlapping validity, where the second is the same statement and must support the first.
func TestSequences_RegressionPriorForgottenUnderTwoHeldTwins(t *testing.T) {
	t.Parallel()
	checkSequence(t, []seqStep{
		{Op: opRemember, Who: "C", Subject: "staging", Object: "main", Since: "2025-02-01"},
		{Op: opRemember, Who: "C", Subject: "staging", Object: "release"},
		{Op: opRemember, Who: "C", Subject: "staging", Object: "release", Since: "2025-01-20"},
		{Op: opForget, Who: "C"},
	})
}

// TestSequences_RegressionStaleHeldStatementReplannedBesideItsTwin was found by the generated
// sequences (seed 6): B's "main" is held against "develop"; B's source revision states "release",
// held too; then "main since 2025-02-01" supersedes develop, leaving the first "main" held against
// a prior that is gone. Rejecting "release" (keep_prior_reject_new) once re-planned that stale
// "main" into a second current "main" beside the dated one.
func TestSequences_RegressionStaleHeldStatementReplannedBesideItsTwin(t *testing.T) {
	t.Parallel()
	checkSequence(t, []seqStep{
		{Op: opRemember, Who: "B", Subject: "production", Object: "develop", Group: "ticket"},
		{Op: opRemember, Who: "B", Subject: "Bob", Object: "Atlas", Since: "2025-03-01", Scope: "canary", Source: "doc:beta"},
		{Op: opRemember, Who: "B", Subject: "production", Object: "main"},
		{Op: opRevise, Who: "B", Subject: "production", Object: "release", Source: "doc:beta"},
		{Op: opRemember, Who: "B", Subject: "production", Object: "main", Since: "2025-02-01"},
		{Op: opResolve, Object: "main", Since: "2025-03-01", Pick: 1, Choice: 1},
	})
}

// TestSequences_RegressionStaleItemAnsweredAfterItsPriorWasReplaced was found by the generated
// sequences (seed 3): C's "release since 2025-01-20" (date unconfirmed) is held against C's current
// "develop"; C's "release since 2025-03-01" (confirmed) then supersedes develop. The held item's
// question (release instead of develop?) is gone, yet supersede_prior on it once made the first
// "release" current beside the second.
func TestSequences_RegressionStaleItemAnsweredAfterItsPriorWasReplaced(t *testing.T) {
	t.Parallel()
	checkSequence(t, []seqStep{
		{Op: opRemember, Who: "C", Subject: "production", Object: "develop", Group: "chat"},
		{Op: opRemember, Who: "C", Subject: "production", Object: "release", Since: "2025-01-20", Unconfirmed: true, Source: "doc:alpha"},
		{Op: opRemember, Who: "C", Subject: "production", Object: "release", Since: "2025-03-01", Group: "ticket"},
		{Op: opResolve, Object: "develop", Since: "2025-03-01"},
	})
}

// TestSequences_RegressionMergeOntoAPendingTwinWithErasedSupport was found by the long run (seed 62):
// B's "staging release" and "production release" each lost their only support to an erasure
// (pending); merging production into staging restated the second onto the first with copies of its
// erased support, and the pending twin became current with no effective support. A restatement's
// support that is not effective now leaves a pending or held twin as it is (ledger.promote).
func TestSequences_RegressionMergeOntoAPendingTwinWithErasedSupport(t *testing.T) {
	t.Parallel()
	checkSequence(t, []seqStep{
		{Op: opRemember, Who: "B", Subject: "staging", Object: "release", Since: "2025-02-01", Group: "ticket"},
		{Op: opErase},
		{Op: opRemember, Who: "B", Subject: "production", Object: "release", Since: "2025-01-20", Unconfirmed: true, Source: "doc:alpha"},
		{Op: opErase},
		{Op: opMerge, Who: "B", Subject: "production", Into: "staging"},
	})
}
