package densemem_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// works is the fact "<person> works_on <project>" (works_on: state, cardinality many).
func works(person, project string) fact {
	return fact{subject: person, subjectKind: "person", predicate: "works_on", object: project, objectKind: "project",
		content: fmt.Sprintf("%s works on %s.", person, project)}
}

// placed is one remembered statement: its relationship, its observation and its subject entity.
type placed struct {
	rel     densemem.RelationshipID
	obs     string
	subject densemem.EntityID
}

// place remembers req for p and returns its only statement.
func (e *env) place(p densemem.Principal, req densemem.RememberRequest) placed {
	e.t.Helper()
	pl := e.rememberReq(p, req)
	out := only(e.t, pl)
	return placed{rel: out.RelationshipID, obs: out.ObservationID, subject: entityID(e.t, pl, "s")}
}

// twoMarks is the specification's story: A remembered that Mark works on Dense-Mem and on Billing,
// B that Mark works on Dense-Mem; all three resolved to one entity, mark.
type twoMarks struct {
	mark                  densemem.EntityID
	aDense, aBilling, bDM placed
}

func (e *env) twoMarks() twoMarks {
	e.t.Helper()
	var m twoMarks
	m.aDense = e.place(e.A, works("Mark", "Dense-Mem").request(nextKey()))
	m.aBilling = e.place(e.A, works("Mark", "Billing").request(nextKey()))
	m.bDM = e.place(e.B, works("Mark", "Dense-Mem").request(nextKey()))
	m.mark = m.aDense.subject
	if m.aBilling.subject != m.mark || m.bDM.subject != m.mark {
		e.t.Fatalf("the three mentions of Mark resolved to %s, %s, %s: want one entity", m.aDense.subject,
			m.aBilling.subject, m.bDM.subject)
	}
	return m
}

// splitOff is A's split of mark moving obs to a new "Mark" of the billing team.
func splitOff(mark densemem.EntityID, obs ...string) densemem.SplitRequest {
	return densemem.SplitRequest{EntityID: mark, ObservationIDs: obs, IdentityContext: map[string]string{"team": "billing"},
		Evidence: []densemem.EvidenceInput{{Content: "The Mark on Billing is Mark Jones, not Mark Huang.", SourceType: "manual",
			Authority: "authoritative", SourceGroup: "user-resolution:mark"}},
		Reason: "two people named Mark", IdempotencyKey: nextKey()}
}

func (e *env) split(p densemem.Principal, req densemem.SplitRequest) *densemem.ReassignResult {
	e.t.Helper()
	res, err := e.client.Split(e.ctx, p, req)
	if err != nil {
		e.t.Fatalf("split: %v", err)
	}
	return res
}

// currentEntity returns the entity the latest resolution event of obs's mention ref names.
func (l ledgerView) currentEntity(obs, ref string) string {
	l.t.Helper()
	return l.Strings(`SELECT COALESCE(entity_id, '') FROM entity_resolution_events WHERE observation_id = $1 AND mention_ref = $2
		ORDER BY created_at DESC, resolution_id DESC LIMIT 1`, obs, ref)[0]
}

// TestInvariant6_LateSplitMovesOnlyTheCallersRows: A's split of the shared entity moves exactly the
// observation A selected — a new resolution event points its mention to the new entity, and A's
// relationship built on it is closed and re-derived there — while A's other observation stays, and
// every row of B (relationships, transitions, supports, observations, resolution events) is byte for
// byte what it was.
func TestInvariant6_LateSplitMovesOnlyTheCallersRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	var bBefore map[string]map[string]string
	e.snapshot(func(l ledgerView) { bBefore = l.ProfileRows(e.B.ProfileID) })

	res := e.split(e.A, splitOff(m.mark, m.aBilling.obs))

	var bAfter map[string]map[string]string
	e.snapshot(func(l ledgerView) { bAfter = l.ProfileRows(e.B.ProfileID) })
	if d := diff(bBefore, bAfter); d != "" {
		t.Errorf("B's rows changed (-before +after):\n%s", d)
	}
	if res.ToEntityID == "" || res.ToEntityID == m.mark || res.FromEntityID != m.mark {
		t.Fatalf("split from %s to %s, want from %s to a new entity", res.FromEntityID, res.ToEntityID, m.mark)
	}
	l := e.ledger()
	if got := l.currentEntity(m.aBilling.obs, "s"); got != string(res.ToEntityID) {
		t.Errorf("the selected observation's mention resolves to %s, want the new entity %s", got, res.ToEntityID)
	}
	if got := l.currentEntity(m.aDense.obs, "s"); got != string(m.mark) {
		t.Errorf("A's unselected observation's mention resolves to %s, want %s", got, m.mark)
	}
	if len(res.Relationships) != 1 || res.Relationships[0].RelationshipID != m.aBilling.rel {
		t.Fatalf("re-derived %+v, want exactly A's Billing relationship %s", res.Relationships, m.aBilling.rel)
	}
	moved := res.Relationships[0].MovedTo
	if st := l.Relationship(m.aBilling.rel).Status; st != "retracted" {
		t.Errorf("A's Billing relationship on the old entity is %s, want retracted", st)
	}
	if st := l.Relationship(m.aDense.rel).Status; st != "active" {
		t.Errorf("A's Dense-Mem relationship is %s, want active (not selected)", st)
	}
	tr := e.trace(e.A, moved)
	if tr.Relationship.Subject.EntityID != res.ToEntityID || tr.Relationship.Status != "active" || tr.Relationship.OwnerProfileID != e.A.ProfileID {
		t.Errorf("the re-derived relationship is %+v, want A's active relationship on %s", tr.Relationship, res.ToEntityID)
	}
	if n := l.Int(`SELECT count(*) FROM support_links WHERE relationship_id = $1 AND observation_id = $2`, moved, m.aBilling.obs); n != 1 {
		t.Errorf("the re-derived relationship has %d supports from the moved observation, want 1 (the same fragment)", n)
	}
	if n := l.Int(`SELECT count(*) FROM verification_events WHERE observation_id = $1`, m.aBilling.obs); n != 1 {
		t.Errorf("the moved observation has %d verification events, want 1 (a split verifies nothing again)", n)
	}
	e.checkLedger()
}

// TestSplitPreviewListsOnlyTheCallersRows: a preview lists the caller's observations that resolve to
// the entity and the caller's relationships the selection would move, never another profile's, and
// writes nothing.
func TestSplitPreviewListsOnlyTheCallersRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	before := e.allCounts()
	all, err := e.client.PreviewSplit(e.ctx, e.A, densemem.SplitRequest{EntityID: m.mark})
	if err != nil {
		t.Fatal(err)
	}
	var obs []string
	for _, o := range all.Observations {
		obs = append(obs, o.ObservationID)
		if o.Selected || !slices.Equal(o.MentionRefs, []string{"s"}) {
			t.Errorf("observation %+v: want unselected, mention s", o)
		}
	}
	if d := diff([]string{m.aDense.obs, m.aBilling.obs}, obs); d != "" {
		t.Errorf("previewed observations (-want +got):\n%s", d)
	}
	if got := previewed(all); !slices.Equal(got, sortedIDs(m.aDense.rel, m.aBilling.rel)) {
		t.Errorf("previewed relationships %v, want A's two", got)
	}
	one, err := e.client.PreviewSplit(e.ctx, e.A, densemem.SplitRequest{EntityID: m.mark, ObservationIDs: []string{m.aBilling.obs}})
	if err != nil {
		t.Fatal(err)
	}
	if got := previewed(one); !slices.Equal(got, []densemem.RelationshipID{m.aBilling.rel}) {
		t.Errorf("previewed relationships of the selection %v, want only %s", got, m.aBilling.rel)
	}
	bView, err := e.client.PreviewSplit(e.ctx, e.B, densemem.SplitRequest{EntityID: m.mark})
	if err != nil {
		t.Fatal(err)
	}
	if len(bView.Observations) != 1 || bView.Observations[0].ObservationID != m.bDM.obs ||
		!slices.Equal(previewed(bView), []densemem.RelationshipID{m.bDM.rel}) {
		t.Errorf("B's preview %+v, want only B's observation and relationship", bView)
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("previews wrote rows: %s", d)
	}
}

func previewed(p *densemem.ReassignPreview) []densemem.RelationshipID {
	var out []densemem.RelationshipID
	for _, r := range p.Relationships {
		out = append(out, r.RelationshipID)
	}
	return sortedIDs(out...)
}

// TestInvariant3_SplitAndMergeRecordTheirDecision: a split and a merge each append one decision row
// naming the actor, the time, the entities and observations, the evidence, the reason, the
// idempotency key and every change, and the relationship transitions they made carry the same
// actor, time and key.
func TestInvariant3_SplitAndMergeRecordTheirDecision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	split := splitOff(m.mark, m.aBilling.obs)
	splitAt := e.clock.Now()
	res := e.split(e.A, split)
	merge := densemem.MergeRequest{FromEntityID: res.ToEntityID, IntoEntityID: m.mark, ObservationIDs: []string{m.aBilling.obs},
		Evidence: []densemem.EvidenceInput{{Content: "It was Mark Huang on Billing after all.", SourceType: "manual"}},
		Reason:   "one Mark after all", IdempotencyKey: nextKey()}
	e.clock.Advance(time.Second)
	mergeAt := e.clock.Now()
	merged, err := e.client.Merge(e.ctx, e.A, merge)
	if err != nil {
		t.Fatal(err)
	}
	l := e.ledger()
	for id, want := range map[string]time.Time{res.DecisionID: splitAt, merged.DecisionID: mergeAt} {
		var at time.Time
		if err := e.pool.QueryRow(e.ctx, `SELECT created_at FROM identity_decisions WHERE decision_id = $1`, id).Scan(&at); err != nil ||
			!at.Equal(want) {
			t.Errorf("decision %s recorded at %v (%v), want the clock's %v", id, at, err, want)
		}
	}
	for _, c := range []struct {
		res    *densemem.ReassignResult
		action string
		from   densemem.EntityID
		to     densemem.EntityID
		key    string
		reason string
	}{
		{res, "split", m.mark, res.ToEntityID, split.IdempotencyKey, split.Reason},
		{merged, "merge", res.ToEntityID, m.mark, merge.IdempotencyKey, merge.Reason},
	} {
		row := l.Strings(`SELECT concat_ws('|', profile_id, action, from_entity_id, to_entity_id, array_to_string(observation_ids, ','),
			cardinality(fragment_ids), reason, idempotency_key, jsonb_array_length(changes), ingest_id)
			FROM identity_decisions WHERE decision_id = $1`, c.res.DecisionID)
		if len(row) != 1 {
			t.Fatalf("%s: %d decision rows, want 1", c.action, len(row))
		}
		want := fmt.Sprintf("%s|%s|%s|%s|%s|1|%s|%s|%d|", e.A.ProfileID, c.action, c.from, c.to, m.aBilling.obs, c.reason, c.key,
			len(c.res.Changes))
		if !strings.HasPrefix(row[0], want) || len(c.res.Changes) == 0 {
			t.Errorf("%s decision %q, want %q<ingest> with at least one change", c.action, row[0], want)
		}
		for _, ch := range c.res.Changes {
			tr := l.Strings(`SELECT concat_ws('|', actor_profile_id, idempotency_key, reason) FROM relationship_transitions
				WHERE transition_id = $1`, ch.TransitionID)
			reason := "split:" + c.res.DecisionID
			if c.action == "merge" {
				reason = "merged:" + c.res.DecisionID
			}
			if len(tr) != 1 || tr[0] != fmt.Sprintf("%s|%s|%s", e.A.ProfileID, c.key, reason) {
				t.Errorf("%s change %+v: transition %v, want actor, key and reason %s", c.action, ch, tr, reason)
			}
		}
	}
	if got := l.currentEntity(m.aBilling.obs, "s"); got != string(m.mark) {
		t.Errorf("after the merge back the observation resolves to %s, want %s", got, m.mark)
	}
	e.checkLedger()
}

// TestInvariant5_SplitWritesThroughPostgresPolicy: a split's effect on current knowledge is the view
// over relationships (semantic_edges drops the closed edge and shows the re-derived one at commit),
// and its decision and resolution events are append-only: UPDATE and DELETE are refused, whoever asks.
func TestInvariant5_SplitWritesThroughPostgresPolicy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	res := e.split(e.A, splitOff(m.mark, m.aBilling.obs))
	moved := res.Relationships[0].MovedTo
	if e.ledger().Edges(m.aBilling.rel) != 0 || e.ledger().Edges(moved) != 1 {
		t.Errorf("edges %d (old) and %d (re-derived), want 0 and 1", e.ledger().Edges(m.aBilling.rel), e.ledger().Edges(moved))
	}
	for _, stmt := range []string{
		`UPDATE identity_decisions SET reason = 'rewritten' WHERE decision_id = $1`,
		`DELETE FROM identity_decisions WHERE decision_id = $1`,
		`UPDATE entity_resolution_events SET entity_id = NULL WHERE ingest_id = (SELECT ingest_id FROM identity_decisions WHERE decision_id = $1)`,
		`DELETE FROM entity_resolution_events WHERE ingest_id = (SELECT ingest_id FROM identity_decisions WHERE decision_id = $1)`,
	} {
		if _, err := e.pool.Exec(e.ctx, stmt, res.DecisionID); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s as superuser: %v, want the append-only trigger to refuse it", stmt, err)
		}
		if _, err := e.runtime.Exec(e.ctx, stmt, res.DecisionID); err == nil {
			t.Errorf("%s as the runtime role succeeded", stmt)
		}
	}
}

// TestInvariant9_TraceReconstructsSplitLineage: Trace of the closed relationship shows its closing
// transition naming the split decision and the relationship its statement became; Trace of that one
// shows its first transition naming the same decision and the relationship it came from, and the
// resolution event that moved the mention.
func TestInvariant9_TraceReconstructsSplitLineage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	res := e.split(e.A, splitOff(m.mark, m.aBilling.obs))
	moved := res.Relationships[0].MovedTo
	for _, p := range []densemem.Principal{e.A, e.B} { // lineage is visible to the team
		old := e.trace(p, m.aBilling.rel)
		last := old.Transitions[len(old.Transitions)-1]
		if last.ToStatus != "retracted" || last.Reason != "split:"+res.DecisionID || last.DecisionID != res.DecisionID ||
			last.RelatedRelationshipID != moved {
			t.Errorf("closing transition %+v, want retracted, reason split:%s, decision %s, related %s", last,
				res.DecisionID, res.DecisionID, moved)
		}
		cur := e.trace(p, moved)
		first := cur.Transitions[0]
		if first.FromVersion != 0 || first.Reason != "split:"+res.DecisionID || first.DecisionID != res.DecisionID ||
			first.RelatedRelationshipID != m.aBilling.rel {
			t.Errorf("first transition %+v, want a creation naming the decision and %s", first, m.aBilling.rel)
		}
		found := false
		for _, r := range cur.IdentityResolutions {
			if r.ObservationID == m.aBilling.obs && r.EntityID == res.ToEntityID && r.Decision == "split" {
				found = true
			}
		}
		if !found {
			t.Errorf("the re-derived relationship's trace lacks the split resolution event: %+v", cur.IdentityResolutions)
		}
	}
}

// TestInvariant10_AnotherProfileCannotSplitOrMerge: B naming A's observation in a split, a merge or
// their previews is refused with ErrNotOwner, and nothing is written.
func TestInvariant10_AnotherProfileCannotSplitOrMerge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	other := e.place(e.A, works("Marcus", "Billing").request(nextKey()))
	before := e.allCounts()
	split := splitOff(m.mark, m.aBilling.obs)
	merge := densemem.MergeRequest{FromEntityID: m.mark, IntoEntityID: other.subject, ObservationIDs: []string{m.aBilling.obs},
		Evidence: split.Evidence, IdempotencyKey: nextKey()}
	calls := map[string]func(p densemem.Principal) error{
		"split":         func(p densemem.Principal) error { _, err := e.client.Split(e.ctx, p, split); return err },
		"preview split": func(p densemem.Principal) error { _, err := e.client.PreviewSplit(e.ctx, p, split); return err },
		"merge":         func(p densemem.Principal) error { _, err := e.client.Merge(e.ctx, p, merge); return err },
		"preview merge": func(p densemem.Principal) error { _, err := e.client.PreviewMerge(e.ctx, p, merge); return err },
	}
	for name, call := range calls {
		for _, p := range []densemem.Principal{e.B, e.C} {
			if err := call(p); !errors.Is(err, densemem.ErrNotOwner) {
				t.Errorf("%s of A's observation by another profile: %v, want ErrNotOwner", name, err)
			}
		}
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("refused splits and merges wrote rows: %s", d)
	}
	if _, err := e.client.Split(e.ctx, e.A, split); err != nil {
		t.Errorf("A's own split: %v", err)
	}
}
