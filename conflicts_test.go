package densemem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem"
)

// Cross-profile corrections and durable team conflict cases: the specification's stale team knowledge
// story and the acceptance invariants 11, 14, 16, 17, 18 and I-26, each against its own database.

// listedConflict returns case id as ListConflicts shows it to the team's admin, whatever its status.
func (e *env) listedConflict(id string) densemem.ConflictCase {
	e.t.Helper()
	for _, c := range e.listConflictPages(e.admin, densemem.ListConflictsRequest{
		Status: []string{"open", "overdue", "resolved", "dismissed"}}) {
		if c.ConflictID == id {
			return c
		}
	}
	e.t.Fatalf("ListConflicts does not list case %s", id)
	return densemem.ConflictCase{}
}

// currentCaseMembers returns the current (not removed) membership rows of case id by relationship,
// failing the test when a relationship has two.
func (e *env) currentCaseMembers(id string) map[densemem.RelationshipID]caseMember {
	e.t.Helper()
	c := e.ledger().Case(id)
	seen := map[densemem.RelationshipID]bool{}
	for _, m := range c.Members {
		if m.Removed == nil {
			if seen[m.Relationship] {
				e.t.Errorf("case %s: relationship %s has two current membership rows", id, m.Relationship)
			}
			seen[m.Relationship] = true
		}
	}
	return c.CurrentMembers()
}

// teamDisagreement is the specification's stale team knowledge example up to t2: A1 "production
// deploys_from main" remembered by A at t0, and B1 "since 2026-05-01 production deploys_from release"
// remembered by B a day later.
type teamDisagreement struct {
	A1, B1     densemem.RelationshipID
	A1Out      densemem.RelationshipOutcome
	B1Out      densemem.RelationshipOutcome
	T0, T2     time.Time
	ConflictID string
}

// rememberTeamDisagreement remembers A1 and B1 and returns them with the case B1 opened.
func (e *env) rememberTeamDisagreement() teamDisagreement {
	e.t.Helper()
	var s teamDisagreement
	s.T0 = e.clock.Now()
	s.A1Out = e.rememberOne(e.A, deploy("production", "main").request(nextKey())).RelationshipOutcomes[0]
	s.A1 = s.A1Out.RelationshipID
	if s.A1Out.Category != densemem.CategoryAccepted {
		e.t.Fatalf("A1: %s (%s)", s.A1Out.Category, s.A1Out.Reason)
	}
	e.clock.Advance(24 * time.Hour)
	s.T2 = e.clock.Now()
	s.B1Out = e.rememberOne(e.B, deploy("production", "release").since(date("2026-05-01")).request(nextKey())).RelationshipOutcomes[0]
	s.B1 = s.B1Out.RelationshipID
	if s.B1Out.Category != densemem.CategoryAccepted {
		e.t.Fatalf("B1: %s (%s)", s.B1Out.Category, s.B1Out.Reason)
	}
	if s.B1Out.Conflict == nil {
		e.t.Fatalf("B1 placement names no conflict case: %+v", s.B1Out)
	}
	s.ConflictID = s.B1Out.Conflict.ConflictID
	return s
}

// ---- the story ----

func TestStaleTeamKnowledgeTimeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// t0: A owns A1.
	a1 := e.rememberOne(e.A, deploy("production", "main").request(nextKey())).RelationshipOutcomes[0]
	if a1.Category != densemem.CategoryAccepted || a1.Status != "active" {
		t.Fatalf("A1: %s/%s (%s)", a1.Category, a1.Status, a1.Reason)
	}
	rowsOfA := func() map[string]map[string]string {
		var rows map[string]map[string]string
		e.snapshot(func(l ledgerView) { rows = l.ProfileRows(e.A.ProfileID) })
		return rows
	}
	before := rowsOfA()
	for _, table := range []string{"relationships", "support_links", "relationship_transitions", "observations",
		"verification_events", "evidence_fragments", "fragment_contents", "entity_resolution_events"} {
		if len(before[table]) == 0 {
			t.Fatalf("snapshot of A has no %s rows: the comparison would prove nothing", table)
		}
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_cases`); n != 0 {
		t.Fatalf("%d conflict cases before any disagreement", n)
	}

	// t1 (the business change, 2026-05-01) happened before Dense-Mem learns of it at t2.
	e.clock.Advance(24 * time.Hour)
	t2 := e.clock.Now()
	pl := e.rememberOne(e.B, deploy("production", "release").since(date("2026-05-01")).request(nextKey()))
	b1 := pl.RelationshipOutcomes[0]
	if b1.Category != densemem.CategoryAccepted || b1.Status != "active" {
		t.Fatalf("B1: %s/%s (%s)", b1.Category, b1.Status, b1.Reason)
	}
	if len(b1.CrossReferences) != 1 || b1.CrossReferences[0].Kind != "corrects" || b1.CrossReferences[0].ToRelationshipID != a1.RelationshipID {
		t.Fatalf("B1 cross-references = %+v, want one corrects -> %s", b1.CrossReferences, a1.RelationshipID)
	}
	if b1.Conflict == nil || b1.Conflict.Version != 1 || b1.Conflict.Status != "open" {
		t.Fatalf("B1 conflict = %+v, want an open case at version 1", b1.Conflict)
	}
	if !slices.Contains(e.ledger().Strings(`SELECT relationship_id FROM semantic_edges`), string(b1.RelationshipID)) {
		t.Errorf("B1 is not B's active edge")
	}

	// The cross-reference, as B1's trace shows it; the ledger holds only this one, written by B's ingest.
	trB1 := e.trace(e.admin, b1.RelationshipID)
	if len(trB1.CrossReferences) != 1 {
		t.Fatalf("B1's cross-references = %+v, want exactly one", trB1.CrossReferences)
	}
	x := trB1.CrossReferences[0]
	if ingests := e.ledger().Strings(`SELECT ingest_id FROM relationship_cross_references`); !slices.Equal(ingests, []string{pl.IngestID}) {
		t.Errorf("cross-reference ingests = %v, want exactly one, of B's placement %s", ingests, pl.IngestID)
	}
	var b1Verification string
	var confirmed *time.Time
	for _, v := range trB1.Verifications {
		if v.ObservationID == b1.ObservationID {
			b1Verification, confirmed = v.VerificationID, v.ConfirmedValidFrom
			break
		}
	}
	if b1Verification == "" {
		t.Fatalf("B1's trace has no verification of its observation %s: %+v", b1.ObservationID, trB1.Verifications)
	}
	if b1From := trB1.Relationship.ValidFrom; confirmed == nil || !confirmed.Equal(date("2026-05-01")) || b1From == nil ||
		!b1From.Equal(date("2026-05-01")) {
		t.Errorf("B1 valid_from = %v, verifier-confirmed %v; want both 2026-05-01", b1From, confirmed)
	}
	type xref struct {
		Kind, From, To, Author, Verification string
		FromV, ToV                           int
		At                                   time.Time
	}
	if d := cmp.Diff(xref{"corrects", string(b1.RelationshipID), string(a1.RelationshipID), string(e.B.ProfileID), b1Verification, 1, 1, t2},
		xref{x.Kind, string(x.FromRelationshipID), string(x.ToRelationshipID), string(x.AuthorProfileID), x.VerificationID,
			x.FromVersion, x.ToVersion, x.CreatedAt.UTC()}); d != "" {
		t.Errorf("cross-reference (-want +got):\n%s", d)
	}

	// Exactly one open case, version 1, deadline opened_at + 7 days, first review due at once: the
	// operator's view, and the ledger's opener, claim and attempts, its positions, members and events.
	var stored caseRow
	var positions int
	e.snapshot(func(l ledgerView) {
		stored = l.OnlyCase()
		positions = l.Int(`SELECT count(*) FROM conflict_positions WHERE conflict_id = $1`, stored.ID)
	})
	c := e.listedConflict(b1.Conflict.ConflictID)
	subject := e.trace(e.admin, a1.RelationshipID).Relationship.Subject.EntityID
	if stored.ID != c.ConflictID || c.Status != "open" || c.Version != 1 || c.Kind != "cross_profile_current_state" ||
		c.Subject.EntityID != subject || c.Predicate != "deploys_from" || c.Scope != "" || c.ResolvedAt != nil ||
		c.PreferredPositionID != "" {
		t.Errorf("listed case = %+v", c)
	}
	if stored.OpenedBy != string(e.B.ProfileID) || stored.ClaimToken != nil || stored.Attempts != 0 {
		t.Errorf("case row = %+v, want opened by B, unclaimed, never attempted", stored)
	}
	if !c.OpenedAt.Equal(t2) {
		t.Errorf("opened_at = %v, want %v (the placement's clock time)", c.OpenedAt, t2)
	}
	if !c.ReviewDueAt.Equal(c.OpenedAt.Add(7 * 24 * time.Hour)) {
		t.Errorf("review_due_at = %v, want opened_at + 7 days = %v", c.ReviewDueAt, c.OpenedAt.Add(7*24*time.Hour))
	}
	if !c.NextReviewAt.Equal(c.OpenedAt) {
		t.Errorf("next_review_at = %v, want opened_at %v", c.NextReviewAt, c.OpenedAt)
	}

	// Two positions, one member each.
	if positions != 2 {
		t.Errorf("positions = %d, want 2", positions)
	}
	members := stored.CurrentMembers()
	if n := len(stored.Members); n != 2 || len(members) != 2 {
		t.Fatalf("membership rows = %d (current %d), want 2", n, len(members))
	}
	ma, mb := members[a1.RelationshipID], members[b1.RelationshipID]
	if ma.Owner != e.A.ProfileID || mb.Owner != e.B.ProfileID || ma.Version != 1 || mb.Version != 1 ||
		ma.Added != 1 || mb.Added != 1 || ma.Position == "" || ma.Position == mb.Position {
		t.Errorf("members = %+v", members)
	}

	// One event: version 1, opened, by B, in the same transaction as B1.
	evs := stored.Events
	if len(evs) != 1 {
		t.Fatalf("events = %d, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Version != 1 || ev.Reason != "opened" || ev.Prior != "" || ev.Resulting != "open" || ev.ActorKind != "profile" ||
		ev.Actor != string(e.B.ProfileID) || ev.IngestID != pl.IngestID || !ev.CreatedAt.Equal(t2) || len(ev.Positions) != 2 {
		t.Errorf("event = %+v", ev)
	}

	// A1, its evidence, support, tier, status, validity and resolutions are byte for byte unchanged.
	if d := cmp.Diff(before, rowsOfA()); d != "" {
		t.Errorf("B's placement changed rows of A (-before +after):\n%s", d)
	}
	if st, tier, vt, v := e.relationshipState(a1.RelationshipID); st != "active" || tier != "validated_claim" || vt != nil || v != 1 {
		t.Errorf("A1 = %s/%s valid_to=%v v%d, want active/validated_claim open v1", st, tier, vt, v)
	}
}

// ---- invariant 11 ----

func TestInvariant11_CrossProfileCorrectionsStayIndependentlyAuthored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.rememberTeamDisagreement()

	// Both relationships exist, each with its own owner, both on the graph.
	owners := e.ledger().Keyed(`SELECT relationship_id, owner_profile_id FROM relationships`)
	if owners[string(s.A1)] != string(e.A.ProfileID) || owners[string(s.B1)] != string(e.B.ProfileID) || len(owners) != 2 {
		t.Fatalf("owners = %v", owners)
	}
	edges := e.ledger().Strings(`SELECT relationship_id FROM semantic_edges ORDER BY relationship_id`)
	if d := cmp.Diff([]string{string(sortedIDs(s.A1, s.B1)[0]), string(sortedIDs(s.A1, s.B1)[1])}, edges); d != "" {
		t.Errorf("semantic_edges (-want +got):\n%s", d)
	}
	// B's supports are authored by B, A's by A.
	if n := e.ledger().Int(`SELECT count(*) FROM support_links s JOIN relationships r USING (team_id, relationship_id)
		WHERE s.author_profile_id <> r.owner_profile_id OR s.profile_id <> r.owner_profile_id`); n != 0 {
		t.Errorf("%d support links authored by a profile other than the relationship's owner", n)
	}

	// Trace of A1 (by a third profile) shows the incoming corrects and the case.
	for _, viewer := range []densemem.Principal{e.A, e.C} {
		tr, err := e.client.Trace(e.ctx, viewer, densemem.TraceRequest{RelationshipID: s.A1, IncludeTransitions: true,
			IncludeVerification: true, IncludeEvidenceContent: true})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Relationship.OwnerProfileID != e.A.ProfileID || tr.Relationship.Status != "active" || tr.Relationship.Version != 1 {
			t.Errorf("trace A1 relationship = %+v", tr.Relationship.RelationshipSummary)
		}
		if len(tr.CrossReferences) != 1 {
			t.Fatalf("trace A1 cross-references = %+v", tr.CrossReferences)
		}
		x := tr.CrossReferences[0]
		if x.Kind != "corrects" || x.Direction != "incoming" || x.FromRelationshipID != s.B1 || x.ToRelationshipID != s.A1 ||
			x.AuthorProfileID != e.B.ProfileID || x.VerificationID == "" {
			t.Errorf("trace A1 cross-reference = %+v", x)
		}
		if len(tr.Conflicts) != 1 || tr.Conflicts[0].ConflictID != s.ConflictID || tr.Conflicts[0].Status != "open" ||
			len(tr.Conflicts[0].Positions) != 2 || len(tr.Conflicts[0].Events) != 1 || tr.Conflicts[0].Events[0].Reason != "opened" {
			t.Errorf("trace A1 conflicts = %+v", tr.Conflicts)
		}
		if len(tr.Transitions) != 1 || tr.Transitions[0].ActorProfileID != e.A.ProfileID {
			t.Errorf("trace A1 transitions = %+v, want only A's creation", tr.Transitions)
		}
		if len(tr.Evidence) != 1 || tr.Evidence[0].AuthorProfileID != e.A.ProfileID || !strings.Contains(tr.Evidence[0].Content, "main") {
			t.Errorf("trace A1 evidence = %+v", tr.Evidence)
		}
	}

	// Trace of B1 shows the outgoing corrects and the same case.
	tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: s.B1, IncludeTransitions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.CrossReferences) != 1 || tr.CrossReferences[0].Direction != "outgoing" || tr.CrossReferences[0].Kind != "corrects" ||
		tr.CrossReferences[0].ToRelationshipID != s.A1 || tr.CrossReferences[0].FromRelationshipID != s.B1 {
		t.Errorf("trace B1 cross-references = %+v", tr.CrossReferences)
	}
	if len(tr.Conflicts) != 1 || tr.Conflicts[0].ConflictID != s.ConflictID {
		t.Errorf("trace B1 conflicts = %+v", tr.Conflicts)
	}
	if tr.Relationship.OwnerProfileID != e.B.ProfileID {
		t.Errorf("trace B1 owner = %s", tr.Relationship.OwnerProfileID)
	}

	// Recall as C returns both, neither hidden, with the same conflict_id, and the case once.
	r := e.recall(e.C, "production", nil, nil)
	if d := cmp.Diff(sortedIDs(s.A1, s.B1), recallIDs(r)); d != "" {
		t.Fatalf("recall as C (-want +got):\n%s", d)
	}
	for _, res := range r.Results {
		if res.ConflictID != s.ConflictID {
			t.Errorf("recall result %s conflict_id = %q, want %q", res.Relationship.RelationshipID, res.ConflictID, s.ConflictID)
		}
		if len(res.Evidence) == 0 {
			t.Errorf("recall result %s has no evidence", res.Relationship.RelationshipID)
		}
	}
	if len(r.Conflicts) != 1 {
		t.Fatalf("recall conflicts = %+v, want the case once", r.Conflicts)
	}
	rc := r.Conflicts[0]
	if rc.ConflictID != s.ConflictID || rc.Version != 1 || rc.Status != "open" || len(rc.Positions) != 2 ||
		rc.Subject.Name != "production" || rc.Predicate != "deploys_from" {
		t.Errorf("recall conflict = %+v", rc)
	}
	owners2 := map[densemem.RelationshipID][]densemem.ProfileID{}
	for _, p := range rc.Positions {
		for _, id := range p.RelationshipIDs {
			owners2[id] = p.OwnerProfileIDs
		}
		if p.CountedSourceGroups != 1 || len(p.Evidence) == 0 {
			t.Errorf("position %+v: want 1 counted group with evidence", p)
		}
	}
	if d := cmp.Diff(map[densemem.RelationshipID][]densemem.ProfileID{s.A1: {e.A.ProfileID}, s.B1: {e.B.ProfileID}}, owners2); d != "" {
		t.Errorf("positions (-want +got):\n%s", d)
	}
	for _, want := range []string{`"main"`, `"release"`, s.ConflictID, "expected_version: 1"} {
		if !strings.Contains(rc.Question, want) {
			t.Errorf("question %q does not mention %s", rc.Question, want)
		}
	}
}

// ---- invariant 14 ----

func TestInvariant14_OneCasePerMaterialDisagreement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.mustProfile("D", "read", "write")
	ep := e.mustProfile("E", "read", "write")
	s := e.rememberTeamDisagreement()
	cf := s.ConflictID

	live := func() int { return len(e.listConflictPages(e.admin, densemem.ListConflictsRequest{})) }

	// C agrees with B with its own evidence: C's relationship joins B's position; one event, version 2.
	c1 := e.rememberOne(e.C, withContent(deploy("production", "release"),
		"The deploy runbook says the production environment deploys from the release branch.").request(nextKey())).RelationshipOutcomes[0]
	if c1.Category != densemem.CategoryAccepted {
		t.Fatalf("C1: %s (%s)", c1.Category, c1.Reason)
	}
	if c1.Conflict == nil || c1.Conflict.ConflictID != cf || c1.Conflict.Version != 2 {
		t.Errorf("C1 conflict = %+v, want %s at version 2", c1.Conflict, cf)
	}
	kinds := map[densemem.RelationshipID]string{}
	for _, x := range c1.CrossReferences {
		kinds[x.ToRelationshipID] = x.Kind
	}
	if diff := cmp.Diff(map[densemem.RelationshipID]string{s.A1: "challenges", s.B1: "confirms"}, kinds); diff != "" {
		t.Errorf("C1 cross-references (-want +got):\n%s", diff)
	}
	if c := e.listedConflict(cf); c.Version != 2 || c.Status != "open" {
		t.Errorf("case after C1 = v%d %s, want v2 open", c.Version, c.Status)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_positions WHERE conflict_id = $1`, cf); n != 2 {
		t.Errorf("positions after C1 = %d, want 2 (C joins B's position)", n)
	}
	members := e.currentCaseMembers(cf)
	if len(members) != 3 || members[c1.RelationshipID].Position != members[s.B1].Position ||
		members[c1.RelationshipID].Position == members[s.A1].Position || members[c1.RelationshipID].Added != 2 ||
		members[c1.RelationshipID].Owner != e.C.ProfileID {
		t.Errorf("members after C1 = %+v", members)
	}
	evs := e.checkedCase(cf).Events
	if len(evs) != 2 || evs[1].Reason != "membership_changed" || evs[1].Actor != string(e.C.ProfileID) || evs[1].Prior != "open" {
		t.Errorf("events after C1 = %+v", evs)
	}

	// Nothing changes: C repeats the same evidence (copies count once) -> supported, no event, no bump.
	e.clock.Advance(time.Hour)
	counts := e.countsOf(writtenTables)
	dup := e.rememberOne(e.C, withContent(deploy("production", "release"),
		"The deploy runbook says the production environment deploys from the release branch.").request(nextKey())).RelationshipOutcomes[0]
	if dup.Category != densemem.CategorySupported || dup.RelationshipID != c1.RelationshipID {
		t.Fatalf("duplicate evidence: %s on %s (%s), want relationship_supported on C1", dup.Category, dup.RelationshipID, dup.Reason)
	}
	if c := e.listedConflict(cf); c.Version != 2 {
		t.Errorf("duplicate evidence bumped the case to version %d", c.Version)
	}
	after := e.countsOf(writtenTables)
	for _, table := range []string{"conflict_events", "conflict_cases", "conflict_positions", "conflict_position_members", "relationships"} {
		if after[table] != counts[table] {
			t.Errorf("duplicate evidence changed %s: %d -> %d", table, counts[table], after[table])
		}
	}
	if after["support_links"] != counts["support_links"]+1 {
		t.Errorf("duplicate evidence: support_links %d -> %d, want one more", counts["support_links"], after["support_links"])
	}

	// One call that both creates D's relationship and adds a second independent source to it changes
	// the membership once: one event, one version.
	e.clock.Advance(time.Hour)
	first := "Ops wiki: the production environment deploys from the release branch."
	second := "Pager notes: the production environment deploys from the release branch."
	two := densemem.RememberRequest{IdempotencyKey: nextKey(),
		Evidence: []densemem.EvidenceInput{{Content: first, SourceType: "manual", SourceGroup: "ops-wiki"},
			{Content: second, SourceType: "manual", SourceGroup: "pager"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: "prod", Name: "production", EntityKind: "environment"},
				{Ref: "rel", Name: "release", EntityKind: "git_branch"}},
			Relationships: []densemem.ProposedRelationship{
				{ProposalID: "d1", SubjectRef: "prod", Predicate: "deploys_from", ObjectRef: "rel",
					Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(first)}}},
				{ProposalID: "d2", SubjectRef: "prod", Predicate: "deploys_from", ObjectRef: "rel",
					Evidence: []densemem.Citation{{EvidenceIndex: 1, Start: 0, End: len(second)}}},
			}}}
	dpl, err := e.client.Remember(e.ctx, d, two)
	if err != nil {
		t.Fatal(err)
	}
	d1 := dpl.RelationshipOutcomes[0]
	if d1.Category != densemem.CategoryAccepted || dpl.RelationshipOutcomes[1].Category != densemem.CategorySupported ||
		dpl.RelationshipOutcomes[1].RelationshipID != d1.RelationshipID {
		t.Fatalf("D's two statements: %s, %s", d1.Category, dpl.RelationshipOutcomes[1].Category)
	}
	if c := e.listedConflict(cf); c.Version != 3 {
		t.Errorf("one call changing membership once moved the case from version 2 to %d", c.Version)
	}
	if _, tier, _, v := e.relationshipState(d1.RelationshipID); tier != "fact" || e.currentCaseMembers(cf)[d1.RelationshipID].Version != v {
		t.Errorf("D1 tier %s v%d, member %+v: want fact, current version in the membership", tier, v, e.currentCaseMembers(cf)[d1.RelationshipID])
	}
	for _, o := range dpl.RelationshipOutcomes {
		if o.Conflict == nil || o.Conflict.Version != 3 {
			t.Errorf("D outcome %s conflict = %+v, want version 3", o.ProposalID, o.Conflict)
		}
	}
	e.checkedCase(cf)

	// A's own incompatible undated write is held for A's review: not a member, no event.
	heldPl := e.rememberOne(e.A, deploy("production", "hotfix").request(nextKey()))
	held, heldIngest := heldPl.RelationshipOutcomes[0], heldPl.IngestID
	if held.Category != densemem.CategoryNeedsReview {
		t.Fatalf("A's undated hotfix: %s, want relationship_needs_review", held.Category)
	}
	if c := e.listedConflict(cf); c.Version != 3 {
		t.Errorf("a held same-owner write bumped the case to version %d", c.Version)
	}
	if _, ok := e.currentCaseMembers(cf)[held.RelationshipID]; ok {
		t.Errorf("a needs_review relationship became a case member")
	}

	// Still exactly one live case for the key, and the database refuses a twin.
	if n := live(); n != 1 {
		t.Errorf("live cases = %d, want 1", n)
	}
	_, err = e.pool.Exec(e.ctx, `INSERT INTO conflict_cases (team_id, conflict_id, kind, subject_entity_id, predicate_key,
		scope, status, version, opened_at, review_due_at, next_review_at, policy_version, opened_by_profile_id, updated_at)
		SELECT team_id, 'cf_twin', kind, subject_entity_id, predicate_key, scope, 'open', 1, opened_at, review_due_at,
		next_review_at, policy_version, opened_by_profile_id, updated_at FROM conflict_cases WHERE conflict_id = $1`, cf)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("second live case for one key: err = %v, want unique violation 23505", err)
	}

	// Events are append-only; membership rows only gain a removed_version.
	if _, err := e.pool.Exec(e.ctx, `UPDATE conflict_events SET reason_code = 'edited' WHERE conflict_id = $1`, cf); err == nil {
		t.Errorf("UPDATE conflict_events succeeded")
	}
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM conflict_events WHERE conflict_id = $1`, cf); err == nil {
		t.Errorf("DELETE conflict_events succeeded")
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE conflict_position_members SET relationship_version = 9 WHERE conflict_id = $1`, cf); err == nil {
		t.Errorf("UPDATE of a membership row's version succeeded")
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE reason_code = 'edited'`); n != 0 {
		t.Errorf("%d events were edited", n)
	}

	// A rejects its held hotfix (else forgetting A1 would make it current, DESIGN §6.7, and keep a
	// disagreement alive); the decision changes no member, so the case stays at version 3.
	if _, err := e.client.Resolve(e.ctx, e.A, densemem.ResolveRequest{IngestID: heldIngest, PlacementItemID: held.PlacementItemID,
		Action: densemem.ActionKeepPriorRejectNew, IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	if c := e.listedConflict(cf); c.Version != 3 {
		t.Errorf("rejecting a held write bumped the case to version %d", c.Version)
	}

	// A forgets A1: fewer than two material positions remain, the case is dismissed in the same transaction.
	e.clock.Advance(time.Hour)
	forgetAt := e.clock.Now()
	fr, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: s.A1, IdempotencyKey: nextKey()})
	if err != nil {
		t.Fatal(err)
	}
	if fr.Conflict == nil || fr.Conflict.ConflictID != cf || fr.Conflict.Status != "dismissed" || fr.Conflict.Version != 4 {
		t.Errorf("forget conflict = %+v, want %s dismissed at version 4", fr.Conflict, cf)
	}
	c := e.listedConflict(cf)
	if c.Status != "dismissed" || c.Version != 4 || c.ResolvedAt != nil || c.PreferredPositionID != "" {
		t.Errorf("case after forget = %+v, want dismissed v4, never resolved", c)
	}
	stored := e.checkedCase(cf)
	evs = stored.Events
	last := evs[len(evs)-1]
	trnIngest := ""
	for _, x := range e.trace(e.admin, s.A1).Transitions {
		if x.TransitionID == fr.TransitionID {
			trnIngest = x.IngestID
		}
	}
	if trnIngest == "" {
		t.Fatalf("A1's trace has no transition %s", fr.TransitionID)
	}
	if last.Version != 4 || last.Prior != "open" || last.Resulting != "dismissed" || last.Actor != string(e.A.ProfileID) ||
		!strings.HasPrefix(last.Reason, "dismissed") || last.IngestID != trnIngest || !last.CreatedAt.Equal(forgetAt) {
		t.Errorf("dismissal event = %+v (forget transition ingest %s)", last, trnIngest)
	}
	if m := stored.CurrentMembers(); len(m) != 0 {
		t.Errorf("dismissed case keeps current members %+v", m)
	}
	endedAt4 := 0
	for _, m := range stored.Members {
		if m.Removed != nil && *m.Removed == 4 {
			endedAt4++
		}
	}
	if endedAt4 != 4 {
		t.Errorf("membership rows ended at version 4 = %d, want 4 (A1, B1, C1, D1)", endedAt4)
	}
	if n := live(); n != 0 {
		t.Errorf("live cases after dismissal = %d", n)
	}

	// A later incompatible write opens a NEW case; the dismissed one is not reopened.
	e.clock.Advance(time.Hour)
	e1 := e.rememberOne(ep, deploy("production", "hotfix").request(nextKey())).RelationshipOutcomes[0]
	if e1.Category != densemem.CategoryAccepted || e1.Conflict == nil || e1.Conflict.ConflictID == cf || e1.Conflict.Version != 1 ||
		e1.Conflict.Status != "open" {
		t.Fatalf("E1: %s conflict=%+v, want a new open case at version 1", e1.Category, e1.Conflict)
	}
	if c := e.listedConflict(cf); c.Status != "dismissed" || c.Version != 4 {
		t.Errorf("old case after the new episode = %s v%d", c.Status, c.Version)
	}
	if n := live(); n != 1 {
		t.Errorf("live cases = %d, want 1", n)
	}
	if n := len(e.listConflictPages(e.admin, densemem.ListConflictsRequest{
		Status: []string{"open", "overdue", "resolved", "dismissed"}})); n != 2 {
		t.Errorf("cases = %d, want 2", n)
	}
	nm := e.currentCaseMembers(e1.Conflict.ConflictID)
	if len(nm) != 4 || nm[s.B1].Position != nm[c1.RelationshipID].Position || nm[s.B1].Position != nm[d1.RelationshipID].Position ||
		nm[e1.RelationshipID].Position == nm[s.B1].Position {
		t.Errorf("new case members = %+v, want B1, C1 and D1 in one position and E1 in another", nm)
	}
	e.checkedCase(e1.Conflict.ConflictID)

	// Trace of B1 shows both episodes: the dismissed case with its whole ledger and the new open one.
	tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: s.B1})
	if err != nil {
		t.Fatal(err)
	}
	episodes := map[string]string{}
	for _, c := range tr.Conflicts {
		episodes[c.ConflictID] = fmt.Sprintf("%s v%d, %d events", c.Status, c.Version, len(c.Events))
	}
	want := map[string]string{cf: "dismissed v4, 4 events", e1.Conflict.ConflictID: "open v1, 1 events"}
	if diff := cmp.Diff(want, episodes); diff != "" {
		t.Errorf("trace B1 conflicts (-want +got):\n%s", diff)
	}
}

// ---- invariant 16 ----

func TestInvariant16_ValidAtAndKnownAtReconstructHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.rememberTeamDisagreement()
	beforeChange := date("2026-04-15")
	afterChange := date("2026-05-15")

	check := func(name string, r *densemem.RecallResponse, want []densemem.RelationshipID, conflict string) {
		t.Helper()
		if d := cmp.Diff(sortedIDs(want...), recallIDs(r)); d != "" {
			t.Errorf("%s: results (-want +got):\n%s", name, d)
		}
		for _, res := range r.Results {
			if res.ConflictID != conflict {
				t.Errorf("%s: %s conflict_id = %q, want %q", name, res.Relationship.RelationshipID, res.ConflictID, conflict)
			}
		}
		switch {
		case conflict == "" && len(r.Conflicts) != 0:
			t.Errorf("%s: conflicts = %+v, want none", name, r.Conflicts)
		case conflict != "" && (len(r.Conflicts) != 1 || r.Conflicts[0].ConflictID != conflict):
			t.Errorf("%s: conflicts = %+v, want %s", name, r.Conflicts, conflict)
		}
	}

	// While the case is open.
	check("current", e.recall(e.C, "production", nil, nil), []densemem.RelationshipID{s.A1, s.B1}, s.ConflictID)
	check("valid_at before the change", e.recall(e.C, "production", &beforeChange, nil), []densemem.RelationshipID{s.A1}, s.ConflictID)
	check("known_at before B's correction", e.recall(e.C, "production", nil, ptr(s.T2.Add(-time.Microsecond))), []densemem.RelationshipID{s.A1}, "")

	// A later accepts the correction with its own dated evidence: same-owner supersession.
	e.clock.Advance(24 * time.Hour)
	t3 := e.clock.Now()
	a2 := e.rememberOne(e.A, withContent(deploy("production", "release").since(date("2026-05-01")),
		"Confirmed: since 2026-05-01 the production environment deploys from the release branch.").request(nextKey())).RelationshipOutcomes[0]
	if a2.Category != densemem.CategorySupersededPrior || !slices.Contains(a2.Related, s.A1) {
		t.Fatalf("A2: %s related=%v (%s), want relationship_superseded_prior of A1", a2.Category, a2.Related, a2.Reason)
	}
	st, _, vt, _ := e.relationshipState(s.A1)
	if st != "superseded" || vt == nil || !vt.Equal(date("2026-05-01")) {
		t.Fatalf("A1 = %s valid_to=%v, want superseded at 2026-05-01", st, vt)
	}
	if c := e.listedConflict(s.ConflictID); c.Status != "dismissed" {
		t.Errorf("case after A adopts release = %s, want dismissed (no material disagreement left)", c.Status)
	}

	// World time: before the change A's main; after it release (A2 and B1), not main.
	r := e.recall(e.C, "production", &beforeChange, nil)
	check("valid_at before the change, after supersession", r, []densemem.RelationshipID{s.A1}, "")
	if len(r.Results) == 1 {
		if got := r.Results[0].Relationship; got.Object.Name != "main" || got.Status != "superseded" {
			t.Errorf("valid_at before the change returned %s %s, want main (superseded)", got.Object.Name, got.Status)
		}
	}
	check("valid_at after the change", e.recall(e.C, "production", &afterChange, nil), []densemem.RelationshipID{a2.RelationshipID, s.B1}, "")
	check("current after supersession", e.recall(e.C, "production", nil, nil), []densemem.RelationshipID{a2.RelationshipID, s.B1}, "")

	// Recorded time: between B's correction and A's supersession the open case and both positions.
	between := t3.Add(-time.Microsecond)
	r = e.recall(e.C, "production", nil, &between)
	check("known_at between", r, []densemem.RelationshipID{s.A1, s.B1}, s.ConflictID)
	if len(r.Conflicts) == 1 && (r.Conflicts[0].Version != 1 || r.Conflicts[0].Status != "open" || len(r.Conflicts[0].Positions) != 2) {
		t.Errorf("known_at between: conflict = %+v, want open v1 with two positions", r.Conflicts[0])
	}
	for _, res := range r.Results {
		if res.Relationship.RelationshipID == s.A1 && (res.Relationship.Status != "active" || res.Relationship.ValidTo != nil) {
			t.Errorf("known_at between: A1 shown as %s valid_to=%v, want active and open-ended as recorded then",
				res.Relationship.Status, res.Relationship.ValidTo)
		}
	}
	check("known_at before the correction", e.recall(e.C, "production", nil, ptr(s.T2.Add(-time.Microsecond))), []densemem.RelationshipID{s.A1}, "")
	// Combined: what the system believed, before A's supersession, about May: main and release both.
	check("valid_at after the change, known_at between", e.recall(e.C, "production", &afterChange, &between),
		[]densemem.RelationshipID{s.A1, s.B1}, s.ConflictID)
	check("valid_at before the change, known_at between", e.recall(e.C, "production", &beforeChange, &between),
		[]densemem.RelationshipID{s.A1}, s.ConflictID)
}

// ---- invariant 17 ----

func TestInvariant17_ResponseIsTheWritersOwnEvidenceBackedRelationship(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.rememberTeamDisagreement()
	cf := s.ConflictID

	r := e.recall(e.C, "production", nil, nil)
	if len(r.Conflicts) != 1 || r.Conflicts[0].ConflictID != cf {
		t.Fatalf("C's recall conflicts = %+v", r.Conflicts)
	}
	version := r.Conflicts[0].Version

	// C responds with its own evidence: C's own relationship, C's own support, in B's position.
	e.clock.Advance(time.Hour)
	pl := e.rememberOne(e.C, responding(withContent(deploy("production", "release"),
		"The deploy runbook says the production environment deploys from the release branch."), cf, version))
	c1 := pl.RelationshipOutcomes[0]
	if c1.Category != densemem.CategoryAccepted || c1.Conflict == nil || c1.Conflict.Version != version+1 {
		t.Fatalf("C's response: %s conflict=%+v (%s)", c1.Category, c1.Conflict, c1.Reason)
	}
	if owner := e.trace(e.admin, c1.RelationshipID).Relationship.OwnerProfileID; owner != e.C.ProfileID {
		t.Errorf("response relationship owner = %v, want C", owner)
	}
	sups := e.ledger().Strings(`SELECT s.author_profile_id || '|' || s.profile_id || '|' || f.author_profile_id || '|' || s.fragment_id
		FROM support_links s JOIN evidence_fragments f USING (team_id, fragment_id) WHERE s.relationship_id = $1`, c1.RelationshipID)
	wantSup := fmt.Sprintf("%s|%s|%s|%s", e.C.ProfileID, e.C.ProfileID, e.C.ProfileID, pl.Fragments[0].FragmentID)
	if len(sups) != 1 || sups[0] != wantSup {
		t.Errorf("response supports = %v, want [%s]", sups, wantSup)
	}
	members := e.currentCaseMembers(cf)
	if members[c1.RelationshipID].Position != members[s.B1].Position || members[c1.RelationshipID].Owner != e.C.ProfileID {
		t.Errorf("response membership = %+v, want C1 in B1's position", members)
	}
	if c := e.listedConflict(cf); c.Version != version+1 || c.Status != "open" {
		t.Errorf("case after response = v%d %s, want v%d open", c.Version, c.Status, version+1)
	}
	version++
	// A1 and B1 are untouched by C's response.
	for _, id := range []densemem.RelationshipID{s.A1, s.B1} {
		if st, _, _, v := e.relationshipState(id); st != "active" || v != 1 {
			t.Errorf("%s after C's response = %s v%d", id, st, v)
		}
	}

	// A response whose evidence does not entail the claim: pending_evidence, no membership or version change.
	e.clock.Advance(time.Hour)
	before := e.countsOf(writtenTables)
	membersBefore := e.currentCaseMembers(cf)
	weak := e.rememberOne(e.C, responding(withContent(deploy("production", "main"),
		"The production environment deploys from whichever branch was tagged last."), cf, version)).RelationshipOutcomes[0]
	if weak.Category != densemem.CategoryPendingEvidence || weak.Status != "pending_evidence" {
		t.Fatalf("non-entailed response: %s/%s, want relationship_pending_evidence", weak.Category, weak.Status)
	}
	if c := e.listedConflict(cf); c.Version != version {
		t.Errorf("non-entailed response moved the case to version %d", c.Version)
	}
	if d := cmp.Diff(membersBefore, e.currentCaseMembers(cf)); d != "" {
		t.Errorf("non-entailed response changed membership (-before +after):\n%s", d)
	}
	after := e.countsOf(writtenTables)
	for _, table := range []string{"conflict_events", "conflict_cases", "conflict_positions", "conflict_position_members",
		"support_links", "relationship_cross_references"} {
		if after[table] != before[table] {
			t.Errorf("non-entailed response changed %s: %d -> %d", table, before[table], after[table])
		}
	}

	// A stale expected_version fails and writes nothing.
	e.clock.Advance(time.Hour)
	before = e.countsOf(writtenTables)
	_, err := e.client.Remember(e.ctx, e.C, responding(withContent(deploy("production", "release"),
		"Release notes: the production environment deploys from the release branch."), cf, version-1))
	if !errors.Is(err, densemem.ErrStaleConflictVersion) {
		t.Errorf("stale response: err = %v, want ErrStaleConflictVersion", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("stale response wrote: %s", d)
	}

	// The whole call fails: a fresh statement about another key in the same call is not written either.
	fresh := deploy("staging", "main").request("")
	stale := responding(withContent(deploy("production", "release"),
		"Release notes: the production environment deploys from the release branch."), cf, version-1)
	both := densemem.RememberRequest{IdempotencyKey: nextKey(),
		Evidence: append(append([]densemem.EvidenceInput{}, fresh.Evidence...), stale.Evidence...),
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{{Ref: "stg", Name: "staging", EntityKind: "environment"},
				{Ref: "main", Name: "main", EntityKind: "git_branch"}, {Ref: "prod", Name: "production", EntityKind: "environment"},
				{Ref: "rel", Name: "release", EntityKind: "git_branch"}},
			Relationships: []densemem.ProposedRelationship{
				{ProposalID: "fresh", SubjectRef: "stg", Predicate: "deploys_from", ObjectRef: "main",
					Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(fresh.Evidence[0].Content)}}},
				{ProposalID: "stale", SubjectRef: "prod", Predicate: "deploys_from", ObjectRef: "rel",
					ConflictResponse: stale.Proposal.Relationships[0].ConflictResponse,
					Evidence:         []densemem.Citation{{EvidenceIndex: 1, Start: 0, End: len(stale.Evidence[0].Content)}}},
			}}}
	if _, err := e.client.Remember(e.ctx, e.C, both); !errors.Is(err, densemem.ErrStaleConflictVersion) {
		t.Errorf("two-proposal call with a stale response: err = %v, want ErrStaleConflictVersion", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("two-proposal call with a stale response wrote: %s", d)
	}

	// A response about another key fails and writes nothing.
	_, err = e.client.Remember(e.ctx, e.C, responding(deploy("staging", "release"), cf, version))
	if !errors.Is(err, densemem.ErrNotMaterialToConflict) {
		t.Errorf("response about staging: err = %v, want ErrNotMaterialToConflict", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("non-material response wrote: %s", d)
	}

	// Same subject and predicate in another scope is another key: not material either.
	scoped := deploy("production", "release")
	scoped.scope = "eu"
	_, err = e.client.Remember(e.ctx, e.C, responding(scoped, cf, version))
	if !errors.Is(err, densemem.ErrNotMaterialToConflict) {
		t.Errorf("response in scope eu: err = %v, want ErrNotMaterialToConflict", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("response in another scope wrote: %s", d)
	}

	// An unknown conflict_id is a validation error at its path.
	_, err = e.client.Remember(e.ctx, e.C, responding(deploy("production", "release"), "cf_doesnotexist", 1))
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) || !ve.Has("proposal.relationships[0].conflict_response.conflict_id") {
		t.Errorf("unknown conflict_id: err = %v, want ValidationError at proposal.relationships[0].conflict_response.conflict_id", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("unknown-case response wrote: %s", d)
	}

	// There is no bare vote: a response without evidence, or without a citation, is invalid.
	vote := responding(deploy("production", "release"), cf, version)
	vote.Evidence = nil
	vote.Proposal.Relationships[0].Evidence = nil
	_, err = e.client.Remember(e.ctx, e.C, vote)
	if !errors.As(err, &ve) || !ve.Has("evidence") || !ve.Has("proposal.relationships[0].evidence") {
		t.Errorf("bare vote: err = %v, want ValidationError at evidence and proposal.relationships[0].evidence", err)
	}
	uncited := responding(deploy("production", "release"), cf, version)
	uncited.Proposal.Relationships[0].Evidence = nil
	_, err = e.client.Remember(e.ctx, e.C, uncited)
	if !errors.As(err, &ve) || !ve.Has("proposal.relationships[0].evidence") {
		t.Errorf("uncited vote: err = %v, want ValidationError at proposal.relationships[0].evidence", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("bare votes wrote: %s", d)
	}
	if c := e.listedConflict(cf); c.Version != version || c.Status != "open" {
		t.Errorf("case after rejected responses = v%d %s, want v%d open", c.Version, c.Status, version)
	}
}

// ---- invariant 18 ----

func TestInvariant18_PlacementNeverResolvesACase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.mustProfile("D", "read", "write")
	s := e.rememberTeamDisagreement()
	cf := s.ConflictID

	writers := []densemem.Principal{e.B, e.C, d, e.C, d, e.B}
	for i, p := range writers {
		e.clock.Advance(12 * time.Hour)
		f := withContent(deploy("production", "release"),
			fmt.Sprintf("Source %d (independent): the production environment deploys from the release branch.", i))
		f.sourceGroup = fmt.Sprintf("independent-source-%d", i)
		out := e.rememberOne(p, f.request(nextKey())).RelationshipOutcomes[0]
		if out.Category != densemem.CategoryAccepted && out.Category != densemem.CategorySupported {
			t.Fatalf("write %d: %s (%s)", i, out.Category, out.Reason)
		}
		if out.Conflict == nil || out.Conflict.ConflictID != cf || out.Conflict.Status != "open" {
			t.Errorf("write %d: conflict = %+v, want %s open", i, out.Conflict, cf)
		}
		c := e.listedConflict(cf)
		if c.Status != "open" || c.ResolvedAt != nil || c.PreferredPositionID != "" {
			t.Fatalf("after write %d the case is %+v: placement resolved or escalated it", i, c)
		}
		if st, _, vt, v := e.relationshipState(s.A1); st != "active" || vt != nil || v != 1 {
			t.Fatalf("after write %d A1 = %s valid_to=%v v%d, want active, open-ended, v1", i, st, vt, v)
		}
	}
	// Past the deadline, placement still neither resolves nor marks overdue.
	e.clock.Advance(8 * 24 * time.Hour)
	f := withContent(deploy("production", "release"), "Audit log: the production environment deploys from the release branch.")
	f.sourceGroup = "audit-log"
	e.rememberOne(e.C, f.request(nextKey()))
	if c := e.listedConflict(cf); c.Status != "open" || c.ResolvedAt != nil {
		t.Errorf("after the deadline a placement left the case %s", c.Status)
	}

	// Release really has five or more independent groups now, as readers see it.
	r := e.recall(e.C, "production", nil, nil)
	if len(r.Conflicts) != 1 {
		t.Fatalf("recall conflicts = %+v", r.Conflicts)
	}
	maxGroups := 0
	for _, p := range r.Conflicts[0].Positions {
		maxGroups = max(maxGroups, p.CountedSourceGroups)
	}
	if maxGroups < 5 {
		t.Errorf("release position counts %d groups, want at least 5 (the test must exceed the resolution floor)", maxGroups)
	}

	if n := e.ledger().Int(`SELECT count(*) FROM relationship_transitions WHERE actor_kind = 'system_conflict_reviewer'`); n != 0 {
		t.Errorf("%d transitions by system_conflict_reviewer", n)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_events WHERE resulting_status IN ('resolved', 'overdue') OR actor_kind <> 'profile'`); n != 0 {
		t.Errorf("%d resolution/overdue or system events from placement", n)
	}
	if settled := e.listConflictPages(e.admin, densemem.ListConflictsRequest{
		Status: []string{"overdue", "resolved", "dismissed"}}); len(settled) != 0 {
		t.Errorf("%d cases left open status: %v", len(settled), conflictIDStatuses(settled))
	}
	e.checkedCase(cf)
}

// ---- I-26 ----

func TestInvariant26_KnownAtHasNoFutureLeak(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var steps []time.Time
	step := func() time.Time {
		e.clock.Advance(time.Hour)
		now := e.clock.Now()
		steps = append(steps, now)
		return now
	}

	step()
	a1 := e.rememberOne(e.A, deploy("production", "main").request(nextKey())).RelationshipOutcomes[0]
	step()
	b1 := e.rememberOne(e.B, deploy("production", "release").since(date("2026-05-01")).request(nextKey())).RelationshipOutcomes[0]
	if b1.Conflict == nil {
		t.Fatalf("B1 opened no case")
	}
	cf := b1.Conflict.ConflictID
	step()
	// New evidence on an existing relationship: a fragment recorded after the relationship itself.
	more := withContent(deploy("production", "release"), "Change log: the production environment deploys from the release branch.")
	more.sourceGroup = "change-log"
	if out := e.rememberOne(e.B, more.request(nextKey())).RelationshipOutcomes[0]; out.Category != densemem.CategorySupported ||
		out.RelationshipID != b1.RelationshipID {
		t.Fatalf("B's new evidence: %s on %s, want relationship_supported on B1", out.Category, out.RelationshipID)
	}
	step()
	a2 := e.rememberOne(e.A, deploy("production", "hotfix").since(date("2026-06-01")).request(nextKey())).RelationshipOutcomes[0]
	if a2.Category != densemem.CategorySupersededPrior {
		t.Fatalf("A2: %s (%s)", a2.Category, a2.Reason)
	}
	step()
	r := e.recall(e.C, "production", nil, nil)
	if len(r.Conflicts) != 1 {
		t.Fatalf("conflicts before C's response = %+v", r.Conflicts)
	}
	c1 := e.rememberOne(e.C, responding(withContent(deploy("production", "release"),
		"The deploy runbook says the production environment deploys from the release branch."), cf, r.Conflicts[0].Version)).RelationshipOutcomes[0]
	if c1.Category != densemem.CategoryAccepted {
		t.Fatalf("C1: %s (%s)", c1.Category, c1.Reason)
	}
	step()
	if _, err := e.client.Forget(e.ctx, e.B, densemem.ForgetRequest{RelationshipID: b1.RelationshipID, IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	step()
	if _, err := e.client.Forget(e.ctx, e.C, densemem.ForgetRequest{RelationshipID: c1.RelationshipID, IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	if c := e.listedConflict(cf); c.Status != "dismissed" || c.Version != 6 {
		t.Fatalf("case at the end = %s v%d, want dismissed v6", c.Status, c.Version)
	}
	_ = a1

	// The expected view at T is computed from the ledgers, independently of the library.
	// fragmentLeak returns when a fragment was recorded if that is after at, "" if not.
	fragmentLeak := func(id densemem.FragmentID, at time.Time) string {
		t.Helper()
		created := e.ledger().Strings(`SELECT CASE WHEN created_at > $2 THEN created_at::text ELSE '' END
			FROM evidence_fragments WHERE fragment_id = $1`, id, at)
		if len(created) != 1 {
			t.Fatalf("fragment %s: %d rows", id, len(created))
		}
		return created[0]
	}
	expectActive := func(at time.Time) []densemem.RelationshipID {
		ids := e.ledger().Strings(`SELECT r.relationship_id FROM relationships r
			JOIN LATERAL (SELECT to_status, to_valid_to FROM relationship_transitions t
				WHERE t.relationship_id = r.relationship_id AND t.created_at <= $1 ORDER BY to_version DESC LIMIT 1) s ON true
			WHERE r.created_at <= $1 AND s.to_status = 'active' AND (s.to_valid_to IS NULL OR s.to_valid_to > $1)
			ORDER BY r.relationship_id`, at)
		out := []densemem.RelationshipID{}
		for _, id := range ids {
			out = append(out, densemem.RelationshipID(id))
		}
		return out
	}
	type caseAt struct {
		version int
		status  string
		members map[densemem.RelationshipID]bool
	}
	caseAsOf := func(at time.Time) (caseAt, bool) {
		for _, ev := range slices.Backward(e.ledger().Case(cf).Events) {
			if !ev.CreatedAt.After(at) {
				c := caseAt{version: ev.Version, status: ev.Resulting, members: map[densemem.RelationshipID]bool{}}
				for _, p := range ev.Positions {
					for _, m := range p.Members {
						c.members[m.RelationshipID] = true
					}
				}
				return c, true
			}
		}
		return caseAt{}, false
	}

	var instants []time.Time
	for _, s := range steps {
		instants = append(instants, s.Add(-time.Microsecond), s)
	}
	for _, at := range instants {
		name := at.Format(time.RFC3339Nano)
		r := e.recall(e.C, "production", nil, ptr(at))
		if d := cmp.Diff(expectActive(at), recallIDs(r)); d != "" {
			t.Errorf("known_at %s: results (-want +got):\n%s", name, d)
		}
		for _, res := range r.Results {
			id := res.Relationship.RelationshipID
			if created := e.trace(e.admin, id).Relationship.CreatedAt; created.After(at) {
				t.Errorf("known_at %s: relationship %s created at %s leaked", name, id, created)
			}
			var frags []string
			for _, ev := range res.Evidence {
				frags = append(frags, string(ev.FragmentID))
				if fAt := fragmentLeak(ev.FragmentID, at); fAt != "" {
					t.Errorf("known_at %s: fragment %s created at %s leaked", name, ev.FragmentID, fAt)
				}
			}
			slices.Sort(frags)
			want := e.ledger().Strings(`SELECT fragment_id FROM support_links WHERE relationship_id = $1 AND created_at <= $2 ORDER BY fragment_id`, id, at)
			if d := cmp.Diff(want, append([]string{}, frags...)); d != "" {
				t.Errorf("known_at %s: evidence of %s (-want +got):\n%s", name, id, d)
			}
		}
		ca, exists := caseAsOf(at)
		liveAt := exists && (ca.status == "open" || ca.status == "overdue")
		switch {
		case !liveAt && len(r.Conflicts) != 0:
			t.Errorf("known_at %s: conflicts = %+v, want none (case as of then: %+v, exists=%v)", name, r.Conflicts, ca, exists)
		case liveAt && len(r.Conflicts) != 1:
			t.Errorf("known_at %s: conflicts = %+v, want the case at version %d", name, r.Conflicts, ca.version)
		case liveAt:
			rc := r.Conflicts[0]
			if rc.ConflictID != cf || rc.Version != ca.version || rc.Status != ca.status {
				t.Errorf("known_at %s: conflict %s v%d %s, want %s v%d %s", name, rc.ConflictID, rc.Version, rc.Status, cf, ca.version, ca.status)
			}
			var got []densemem.RelationshipID
			for _, p := range rc.Positions {
				got = append(got, p.RelationshipIDs...)
				for _, ev := range p.Evidence {
					if fAt := fragmentLeak(ev.FragmentID, at); fAt != "" {
						t.Errorf("known_at %s: position evidence %s created at %s leaked", name, ev.FragmentID, fAt)
					}
				}
			}
			slices.Sort(got)
			var want []densemem.RelationshipID
			for id := range ca.members {
				want = append(want, id)
			}
			slices.Sort(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("known_at %s: case members (-want +got):\n%s", name, d)
			}
		}
		for _, res := range r.Results {
			want := ""
			if liveAt && ca.members[res.Relationship.RelationshipID] {
				want = cf
			}
			if res.ConflictID != want {
				t.Errorf("known_at %s: %s conflict_id = %q, want %q", name, res.Relationship.RelationshipID, res.ConflictID, want)
			}
		}
	}
}

// ---- team isolation ----

func TestTeamIsolationOfConflicts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team2 := e.mustTeam("globex")
	admin2 := e.profileIn(team2, "admin2", "read", "vocabulary")
	x := e.profileIn(team2, "X", "read", "write")
	y := e.profileIn(team2, "Y", "read", "write")
	e.registerVocabulary(admin2)

	s := e.rememberTeamDisagreement()
	team1IDs := map[string]bool{string(s.A1): true, string(s.B1): true}

	// Team 2 has its own, unrelated disagreement with the same words.
	x1 := e.rememberOne(x, deploy("production", "main").request(nextKey())).RelationshipOutcomes[0]
	y1 := e.rememberOne(y, deploy("production", "release").since(date("2026-05-01")).request(nextKey())).RelationshipOutcomes[0]
	if y1.Conflict == nil || y1.Conflict.ConflictID == s.ConflictID || y1.Conflict.Version != 1 {
		t.Fatalf("team 2's case = %+v, want its own case at version 1", y1.Conflict)
	}
	for _, xr := range y1.CrossReferences {
		if team1IDs[string(xr.ToRelationshipID)] {
			t.Errorf("team 2's write cross-references team 1's %s", xr.ToRelationshipID)
		}
	}
	if c := e.listedConflict(s.ConflictID); c.Version != 1 || len(c.Positions) != 2 ||
		len(c.Positions[0].RelationshipIDs)+len(c.Positions[1].RelationshipIDs) != 2 {
		t.Errorf("team 1's case changed after team 2's writes: v%d positions=%+v", c.Version, c.Positions)
	}

	r := e.recall(x, "production", nil, nil)
	if d := cmp.Diff(sortedIDs(x1.RelationshipID, y1.RelationshipID), recallIDs(r)); d != "" {
		t.Errorf("team 2 recall (-want +got):\n%s", d)
	}
	for _, res := range r.Results {
		if res.ConflictID == s.ConflictID {
			t.Errorf("team 2 recall shows team 1's conflict id")
		}
	}
	for _, c := range r.Conflicts {
		if c.ConflictID == s.ConflictID {
			t.Errorf("team 2 recall lists team 1's case")
		}
		for _, p := range c.Positions {
			for _, id := range p.RelationshipIDs {
				if team1IDs[string(id)] {
					t.Errorf("team 2 recall case names team 1's relationship %s", id)
				}
			}
		}
	}
	body, _ := json.Marshal(r)
	for id := range team1IDs {
		if strings.Contains(string(body), id) || strings.Contains(string(body), s.ConflictID) {
			t.Errorf("team 2 recall response mentions team 1's %s or its case", id)
		}
	}
	// And the other way around.
	r1 := e.recall(e.C, "production", nil, nil)
	if d := cmp.Diff(sortedIDs(s.A1, s.B1), recallIDs(r1)); d != "" {
		t.Errorf("team 1 recall (-want +got):\n%s", d)
	}

	// Trace of team 1's relationships from team 2: not found.
	for id := range team1IDs {
		if _, err := e.client.Trace(e.ctx, x, densemem.TraceRequest{RelationshipID: densemem.RelationshipID(id)}); !errors.Is(err, densemem.ErrNotFound) {
			t.Errorf("team 2 traces team 1's %s: err = %v, want ErrNotFound", id, err)
		}
	}

	// Expanding from team 1's entity or forgetting team 1's relationship reaches nothing.
	subject := e.trace(e.admin, s.A1).Relationship.Subject.EntityID
	rx, err := e.client.Recall(e.ctx, x, densemem.RecallRequest{ExpandFromEntityIDs: []densemem.EntityID{subject}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rx.Results) != 0 || len(rx.Conflicts) != 0 {
		t.Errorf("team 2 expanding from team 1's entity got %d results and %d conflicts", len(rx.Results), len(rx.Conflicts))
	}
	if _, err := e.client.Forget(e.ctx, x, densemem.ForgetRequest{RelationshipID: s.A1, IdempotencyKey: nextKey()}); !errors.Is(err, densemem.ErrNotFound) {
		t.Errorf("team 2 forgets team 1's A1: err = %v, want ErrNotFound", err)
	}

	// A response naming team 1's case: the case is unknown to team 2, nothing is written.
	before := e.countsOf(writtenTables)
	_, err = e.client.Remember(e.ctx, x, responding(deploy("production", "release"), s.ConflictID, 1))
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) || !ve.Has("proposal.relationships[0].conflict_response.conflict_id") {
		t.Errorf("team 2 responds to team 1's case: err = %v, want ValidationError at conflict_response.conflict_id", err)
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("cross-team response wrote: %s", d)
	}
	if c := e.listedConflict(s.ConflictID); c.Version != 1 {
		t.Errorf("team 1's case moved to version %d", c.Version)
	}
}

// ---- corrects_relationship_id ----

func TestCorrectsRelationshipID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a1 := e.rememberOne(e.A, deploy("production", "main").request(nextKey())).RelationshipOutcomes[0]
	s1 := e.rememberOne(e.A, deploy("staging", "main").request(nextKey())).RelationshipOutcomes[0]

	// Control: C's undated disagreement without corrects_relationship_id challenges A1.
	c1 := e.rememberOne(e.C, withContent(deploy("production", "release"),
		"The runbook says the production environment deploys from the release branch.").request(nextKey())).RelationshipOutcomes[0]
	if len(c1.CrossReferences) != 1 || c1.CrossReferences[0].Kind != "challenges" {
		t.Fatalf("undated disagreement cross-references = %+v, want one challenges", c1.CrossReferences)
	}

	// B names A1 without a later confirmed date: corrects, not challenges.
	e.clock.Advance(time.Hour)
	b1 := e.rememberOne(e.B, correcting(deploy("production", "release"), a1.RelationshipID)).RelationshipOutcomes[0]
	if b1.Category != densemem.CategoryAccepted {
		t.Fatalf("B1: %s (%s)", b1.Category, b1.Reason)
	}
	var toA1 []densemem.CrossReferenceOutcome
	for _, x := range b1.CrossReferences {
		if x.ToRelationshipID == a1.RelationshipID {
			toA1 = append(toA1, x)
		}
	}
	if len(toA1) != 1 || toA1[0].Kind != "corrects" {
		t.Errorf("B1 -> A1 cross-references = %+v, want one corrects", toA1)
	}
	if k := e.ledger().Strings(`SELECT kind FROM relationship_cross_references WHERE from_relationship_id = $1 AND to_relationship_id = $2`,
		b1.RelationshipID, a1.RelationshipID); len(k) != 1 || k[0] != "corrects" {
		t.Errorf("stored B1 -> A1 kinds = %v", k)
	}
	if st, _, vt, v := e.relationshipState(a1.RelationshipID); st != "active" || vt != nil || v != 1 {
		t.Errorf("A1 after B's correction = %s valid_to=%v v%d: another profile changed it", st, vt, v)
	}

	// Naming a relationship of another key (or no relationship) is a validation error; nothing written.
	before := e.countsOf(writtenTables)
	var ve *densemem.ValidationError
	for _, id := range []densemem.RelationshipID{s1.RelationshipID, "rel_doesnotexist"} {
		_, err := e.client.Remember(e.ctx, e.B, correcting(withContent(deploy("production", "hotfix"),
			"The production environment deploys from the hotfix branch."), id))
		if !errors.As(err, &ve) || !ve.Has("proposal.relationships[0].corrects_relationship_id") {
			t.Errorf("corrects %s: err = %v, want ValidationError at proposal.relationships[0].corrects_relationship_id", id, err)
		}
	}
	if d := countsDiff(before, e.countsOf(writtenTables)); d != "" {
		t.Errorf("invalid corrections wrote: %s", d)
	}

	// A names its own prior without a date: the prior is superseded at the call's time.
	e.clock.Advance(time.Hour)
	now := e.clock.Now()
	a2 := e.rememberOne(e.A, correcting(deploy("production", "hotfix"), a1.RelationshipID)).RelationshipOutcomes[0]
	if a2.Category != densemem.CategorySupersededPrior || !slices.Equal(a2.Related, []densemem.RelationshipID{a1.RelationshipID}) {
		t.Fatalf("A corrects A1: %s related=%v (%s), want relationship_superseded_prior of A1", a2.Category, a2.Related, a2.Reason)
	}
	st, _, vt, v := e.relationshipState(a1.RelationshipID)
	if st != "superseded" || vt == nil || !vt.Equal(now) || v != 2 {
		t.Errorf("A1 = %s valid_to=%v v%d, want superseded at %v, v2", st, vt, v, now)
	}
	if tr := e.transitions(a1.RelationshipID); !slices.Equal(tr, []string{"->active:accepted", "active->superseded:superseded"}) {
		t.Errorf("A1 transitions = %v", tr)
	}
	for _, x := range a2.CrossReferences {
		if x.ToRelationshipID == a1.RelationshipID {
			t.Errorf("a same-owner correction wrote a cross-reference to its own prior: %+v", x)
		}
	}

	// A names its own prior with an unconfirmed valid_from: superseded, prior ends at the new valid_from.
	qa1 := e.rememberOne(e.A, deploy("qa", "main").request(nextKey())).RelationshipOutcomes[0]
	dated := deploy("staging", "release")
	from := date("2026-05-15")
	dated.validFrom = &from // the content does not state the date: the verifier cannot confirm it
	s2 := e.rememberOne(e.A, correcting(dated, s1.RelationshipID)).RelationshipOutcomes[0]
	if s2.Category != densemem.CategorySupersededPrior {
		t.Fatalf("A corrects S1 with a date: %s (%s)", s2.Category, s2.Reason)
	}
	if st, _, vt, _ := e.relationshipState(s1.RelationshipID); st != "superseded" || vt == nil || !vt.Equal(from) {
		t.Errorf("S1 = %s valid_to=%v, want superseded at %v", st, vt, from)
	}
	// Control: the same unconfirmed date without corrects_relationship_id is held for review.
	qa := deploy("qa", "release")
	qa.validFrom = &from
	held := e.rememberOne(e.A, qa.request(nextKey())).RelationshipOutcomes[0]
	if held.Category != densemem.CategoryNeedsReview {
		t.Errorf("unconfirmed dated replacement without corrects: %s, want relationship_needs_review", held.Category)
	}
	if st, _, _, _ := e.relationshipState(qa1.RelationshipID); st != "active" {
		t.Errorf("QA1 = %s, want active", st)
	}
}

// TestConflictByID: Conflict reads one case of any status as ListConflicts shows it; a missing ID, or
// one of another team, is ErrNotFound; a blank ID is a validation error.
func TestConflictByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.openStaleDeployCase(false, false)
	host := densemem.HostPrincipal(e.team)
	list, err := e.client.ListConflicts(e.ctx, host, densemem.ListConflictsRequest{})
	if err != nil || len(list.Conflicts) != 1 {
		t.Fatalf("ListConflicts: %v, %+v", err, list)
	}
	got, err := e.client.Conflict(e.ctx, e.C, s.ConflictID)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(list.Conflicts[0], *got); d != "" {
		t.Errorf("Conflict differs from its ListConflicts item (-list +get):\n%s", d)
	}
	if _, err := e.client.Conflict(e.ctx, e.C, "cf_missing"); !errors.Is(err, densemem.ErrNotFound) {
		t.Errorf("missing case: %v, want ErrNotFound", err)
	}
	other := e.profileIn(e.mustTeam("globex"), "X", "read")
	if _, err := e.client.Conflict(e.ctx, other, s.ConflictID); !errors.Is(err, densemem.ErrNotFound) {
		t.Errorf("another team's case: %v, want ErrNotFound", err)
	}
	if _, err := e.client.Conflict(e.ctx, e.C, ""); !isFieldProblem(err, "conflict_id") {
		t.Errorf("blank ID: %v, want a validation error on conflict_id", err)
	}
}
