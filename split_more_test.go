package densemem_test

import (
	"errors"
	"testing"

	"github.com/densemem/densemem"
)

// production is "production (system sys) deploys_from branch": environments of different systems are
// different entities.
func production(sys, branch, content string) densemem.RememberRequest {
	f := deploy("production", branch)
	if content != "" {
		f = withContent(f, content)
	}
	req := f.request(nextKey())
	req.Proposal.Entities[0].IdentityContext = map[string]string{"system": sys}
	return req
}

// mergeOf is A's merge of from into into moving obs.
func mergeOf(from, into densemem.EntityID, obs ...string) densemem.MergeRequest {
	return densemem.MergeRequest{FromEntityID: from, IntoEntityID: into, ObservationIDs: obs,
		Evidence: []densemem.EvidenceInput{{Content: "Both name the one production environment.", SourceType: "manual"}},
		Reason:   "one environment", IdempotencyKey: nextKey()}
}

func (e *env) merge(p densemem.Principal, req densemem.MergeRequest) *densemem.ReassignResult {
	e.t.Helper()
	res, err := e.client.Merge(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("merge: %v", err)
	}
	return res
}

// TestMergeHoldsAnIncompatibleStatementForReview: merging an observation into an entity where the
// caller already holds an incompatible current statement (deploys_from is cardinality one) restates
// it held for review (DESIGN §6.4 step 5): the caller's prior stays current, the moved statement is
// no edge.
func TestMergeHoldsAnIncompatibleStatementForReview(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	prior := e.place(e.A, production("a", "main", ""))
	other := e.place(e.A, production("b", "release", ""))
	if prior.subject == other.subject {
		t.Fatal("the two productions resolved to one entity")
	}
	res := e.merge(e.A, mergeOf(other.subject, prior.subject, other.obs))
	if len(res.Relationships) != 1 || res.Relationships[0].RelationshipID != other.rel {
		t.Fatalf("re-derived %+v, want %s", res.Relationships, other.rel)
	}
	held := res.Relationships[0].MovedTo
	l := e.ledger()
	for id, want := range map[densemem.RelationshipID]string{prior.rel: "active", other.rel: "retracted", held: "needs_review"} {
		if got := l.Relationship(id).Status; got != want {
			t.Errorf("relationship %s is %s, want %s", id, got, want)
		}
	}
	if tr := e.trace(e.A, held); tr.Relationship.Subject.EntityID != prior.subject {
		t.Errorf("the held restatement is on %s, want %s", tr.Relationship.Subject.EntityID, prior.subject)
	}
	e.checkLedger()
}

// TestMergeIntoAnIdenticalStatementAddsItsSupport: when the caller already states the same thing on
// the entity merged into, the moved statement's supports join that relationship (no new row, no new
// verification) and it counts both source groups.
func TestMergeIntoAnIdenticalStatementAddsItsSupport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	kept := e.place(e.A, production("a", "main", "The production environment deploys from the main branch, says the runbook."))
	other := e.place(e.A, production("b", "main", "The production environment deploys from the main branch, says the wiki."))
	res := e.merge(e.A, mergeOf(other.subject, kept.subject, other.obs))
	if len(res.Relationships) != 1 || res.Relationships[0].MovedTo != kept.rel {
		t.Fatalf("re-derived %+v, want the statement moved onto %s", res.Relationships, kept.rel)
	}
	l := e.ledger()
	if n := l.Int(`SELECT count(*) FROM support_links WHERE relationship_id = $1`, kept.rel); n != 2 {
		t.Errorf("%s has %d supports, want 2", kept.rel, n)
	}
	if got := l.Relationship(kept.rel); got.Status != "active" || got.Tier != "fact" {
		t.Errorf("%s is %s/%s, want active/fact (two independent source groups)", kept.rel, got.Status, got.Tier)
	}
	if got := l.Relationship(other.rel).Status; got != "retracted" {
		t.Errorf("%s is %s, want retracted", other.rel, got)
	}
	e.checkLedger()
}

// TestMergeCrossReferencesAndOpensTheCase: a merge that makes the caller's statement current on a key
// where another profile holds an incompatible one writes the cross-reference and opens the team case
// in the same transaction, and never changes the other profile's relationship.
func TestMergeCrossReferencesAndOpensTheCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	theirs := e.place(e.B, production("a", "main", ""))
	mine := e.place(e.A, production("b", "release", ""))
	var bBefore map[string]map[string]string
	e.snapshot(func(l ledgerView) { bBefore = l.ProfileRows(e.B.ProfileID) })
	res := e.merge(e.A, mergeOf(mine.subject, theirs.subject, mine.obs))
	if len(res.Conflicts) != 1 || res.Conflicts[0].Status != "open" {
		t.Fatalf("conflicts %+v, want one open case", res.Conflicts)
	}
	moved := res.Relationships[0].MovedTo
	if n := e.ledger().Int(`SELECT count(*) FROM relationship_cross_references WHERE from_relationship_id = $1 AND to_relationship_id = $2`,
		moved, theirs.rel); n != 1 {
		t.Errorf("%d cross-references from %s to B's %s, want 1", n, moved, theirs.rel)
	}
	var bAfter map[string]map[string]string
	e.snapshot(func(l ledgerView) { bAfter = l.ProfileRows(e.B.ProfileID) })
	if d := diff(bBefore, bAfter); d != "" {
		t.Errorf("B's rows changed (-before +after):\n%s", d)
	}
	e.checkLedger()
}

// TestSplitRestatesAStatementOnBothSides: a relationship supported by a moved and an unselected
// observation is closed and restated twice: on the new entity with the moved support, on the old one
// with the support that stays.
func TestSplitRestatesAStatementOnBothSides(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.place(e.A, works("Mark", "Dense-Mem").request(nextKey()))
	second := e.place(e.A, withContent(works("Mark", "Dense-Mem"), "Mark works on Dense-Mem, said the standup.").request(nextKey()))
	if second.rel != first.rel {
		t.Fatalf("the second statement made %s, want support of %s", second.rel, first.rel)
	}
	res := e.split(e.A, splitOff(first.subject, second.obs))
	if len(res.Relationships) != 1 {
		t.Fatalf("re-derived %+v, want one", res.Relationships)
	}
	d := res.Relationships[0]
	if d.RelationshipID != first.rel || d.MovedTo == "" || d.StayedAs == "" {
		t.Fatalf("re-derived %+v, want %s restated on both entities", d, first.rel)
	}
	l := e.ledger()
	for id, obs := range map[densemem.RelationshipID]string{d.MovedTo: second.obs, d.StayedAs: first.obs} {
		if got := l.Strings(`SELECT observation_id FROM support_links WHERE relationship_id = $1`, id); len(got) != 1 || got[0] != obs {
			t.Errorf("%s is supported by %v, want only %s", id, got, obs)
		}
		if got := l.Relationship(id).Status; got != "active" {
			t.Errorf("%s is %s, want active", id, got)
		}
	}
	if tr := e.trace(e.A, d.StayedAs); tr.Relationship.Subject.EntityID != first.subject {
		t.Errorf("the statement that stays is on %s, want %s", tr.Relationship.Subject.EntityID, first.subject)
	}
	e.checkLedger()
}

// TestSplitReplaysAndRefusesAStaleConfirm: a retry with the same key replays the result and writes
// nothing; a second split of an observation that moved meanwhile is stale and writes nothing; the
// key reused for another request is an idempotency conflict.
func TestSplitReplaysAndRefusesAStaleConfirm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	req := splitOff(m.mark, m.aBilling.obs)
	first := e.split(e.A, req)
	before := e.allCounts()
	again, err := e.client.Split(e.ctx, e.A, req)
	if err != nil || !again.Replayed || again.DecisionID != first.DecisionID || again.ToEntityID != first.ToEntityID {
		t.Errorf("replay: %+v (%v), want the first result replayed", again, err)
	}
	stale := splitOff(m.mark, m.aBilling.obs)
	if _, err := e.client.Split(e.ctx, e.A, stale); !errors.Is(err, densemem.ErrStaleDecision) {
		t.Errorf("split of a moved observation: %v, want ErrStaleDecision", err)
	}
	if _, err := e.client.PreviewSplit(e.ctx, e.A, stale); !errors.Is(err, densemem.ErrStaleDecision) {
		t.Errorf("preview of a moved observation: %v, want ErrStaleDecision", err)
	}
	other := splitOff(m.mark, m.aDense.obs)
	other.IdempotencyKey = req.IdempotencyKey
	if _, err := e.client.Split(e.ctx, e.A, other); !errors.Is(err, densemem.ErrIdempotencyConflict) {
		t.Errorf("the key reused: %v, want ErrIdempotencyConflict", err)
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("replay, stale and conflicting calls wrote rows: %s", d)
	}
}

// TestSplitConcurrentConfirmsMoveOnce: of concurrent splits of one observation, exactly one moves it;
// the others are stale.
func TestSplitConcurrentConfirmsMoveOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	const n = 6
	errs := make([]error, n)
	runTogether(n, func(i int) {
		_, errs[i] = e.client.Split(e.ctx, e.A, splitOff(m.mark, m.aBilling.obs))
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, densemem.ErrStaleDecision):
			t.Errorf("a concurrent split: %v, want success or ErrStaleDecision", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent splits succeeded, want 1", ok)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM identity_decisions`); n != 1 {
		t.Errorf("%d decisions recorded, want 1", n)
	}
	e.checkLedger()
}

// TestSplitAndMergeRefuseBadInput: each malformed request is one *ValidationError naming the field,
// and nothing is written; unknown entities and observations are ErrNotFound.
func TestSplitAndMergeRefuseBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	good := splitOff(m.mark, m.aBilling.obs)
	split := func(edit func(*densemem.SplitRequest)) func() error {
		return func() error {
			r := good
			r.Evidence = append([]densemem.EvidenceInput(nil), good.Evidence...)
			edit(&r)
			_, err := e.client.Split(e.ctx, e.A, r)
			return err
		}
	}
	merge := func(edit func(*densemem.MergeRequest)) func() error {
		return func() error {
			r := mergeOf(m.mark, m.mark+"x", m.aBilling.obs)
			edit(&r)
			_, err := e.client.Merge(e.ctx, e.A, r)
			return err
		}
	}
	dense := e.ledger().Strings(`SELECT COALESCE(object_entity_id, '') FROM relationships WHERE relationship_id = $1`, m.aDense.rel)[0]
	for _, c := range []struct {
		name, field string
		call        func() error
		sentinel    error
	}{
		{"no entity", "entity_id", split(func(r *densemem.SplitRequest) { r.EntityID = "" }), nil},
		{"no observations", "observation_ids", split(func(r *densemem.SplitRequest) { r.ObservationIDs = nil }), nil},
		{"repeated observation", "observation_ids[1]", split(func(r *densemem.SplitRequest) {
			r.ObservationIDs = []string{m.aBilling.obs, m.aBilling.obs}
		}), nil},
		{"no evidence", "evidence", split(func(r *densemem.SplitRequest) { r.Evidence = nil }), nil},
		{"bad source type", "evidence[0].source_type", split(func(r *densemem.SplitRequest) { r.Evidence[0].SourceType = "rumour" }), nil},
		{"no key", "idempotency_key", split(func(r *densemem.SplitRequest) { r.IdempotencyKey = "" }), nil},
		{"invisible name", "name", split(func(r *densemem.SplitRequest) { r.Name = "\u200b" }), nil},
		{"empty context key", "identity_context", split(func(r *densemem.SplitRequest) { r.IdentityContext = map[string]string{"": "x"} }), nil},
		{"observation not on the entity", "observation_ids[0]", split(func(r *densemem.SplitRequest) { r.EntityID = densemem.EntityID(dense) }), nil},
		{"unknown entity", "", split(func(r *densemem.SplitRequest) { r.EntityID = "ent_missing" }), densemem.ErrNotFound},
		{"unknown observation", "", split(func(r *densemem.SplitRequest) { r.ObservationIDs = []string{"obs_missing"} }), densemem.ErrNotFound},
		{"merge into itself", "into_entity_id", merge(func(r *densemem.MergeRequest) { r.IntoEntityID = r.FromEntityID }), nil},
		{"merge into another kind", "into_entity_id", merge(func(r *densemem.MergeRequest) { r.IntoEntityID = densemem.EntityID(dense) }), nil},
		{"merge into nothing", "", merge(func(r *densemem.MergeRequest) {}), densemem.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.allCounts()
			err := c.call()
			var ve *densemem.ValidationError
			switch {
			case c.sentinel != nil && !errors.Is(err, c.sentinel):
				t.Errorf("%v, want %v", err, c.sentinel)
			case c.sentinel == nil && (!errors.As(err, &ve) || !ve.Has(c.field)):
				t.Errorf("%v, want a *ValidationError at %s", err, c.field)
			}
			if d := countsDiff(before, e.allCounts()); d != "" {
				t.Errorf("a refused request wrote rows: %s", d)
			}
		})
	}
}

// TestSplitMovesAnObjectMention: splitting the entity a statement names as its object moves the
// object: the statement is restated on the same key with the new entity as object.
func TestSplitMovesAnObjectMention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stmt := e.place(e.A, works("Mark", "Dense-Mem").request(nextKey()))
	project := densemem.EntityID(e.ledger().Strings(`SELECT object_entity_id FROM relationships WHERE relationship_id = $1`, stmt.rel)[0])
	req := splitOff(project, stmt.obs)
	req.Name = "Dense-Mem (fork)"
	res := e.split(e.A, req)
	if len(res.Relationships) != 1 {
		t.Fatalf("re-derived %+v, want one", res.Relationships)
	}
	tr := e.trace(e.A, res.Relationships[0].MovedTo)
	if tr.Relationship.Subject.EntityID != stmt.subject || tr.Relationship.Object.EntityID != res.ToEntityID ||
		tr.Relationship.Object.Name != "Dense-Mem (fork)" || tr.Relationship.Status != "active" {
		t.Errorf("the restatement is %+v, want Mark works_on the new entity, active", tr.Relationship.RelationshipSummary)
	}
	if got := e.ledger().currentEntity(stmt.obs, "o"); got != string(res.ToEntityID) {
		t.Errorf("the object mention resolves to %s, want %s", got, res.ToEntityID)
	}
	e.checkLedger()
}
