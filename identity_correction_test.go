package densemem_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// The specification's Cross-Profile Corrections example: A's "Mark" combines two people; B, with
// distinguishing evidence, gets an identity question instead of A's entity, confirms two new
// entities, and its relationships correct A's through one identity_correction case. Placement never
// changes A's rows; C sees every position; the nightly reviewer decides the case under the one
// deterministic policy, weighing A's combined identity against B's distinct ones together.

// markWorksOn is "<mark> works_on <project>" as a person and a project.
func markWorksOn(project, content string) fact {
	return fact{subject: "Mark", subjectKind: "person", predicate: "works_on", object: project, objectKind: "project",
		content: content}
}

// bobsTwoMarks is B's Remember: Mark of the dense-mem team works on Dense-Mem, Mark of the billing team
// on Billing, each mention with the identity context that tells them apart.
func bobsTwoMarks(key string) densemem.RememberRequest {
	dense, billing := "Mark from the dense-mem team works on Dense-Mem.", "Mark from the billing team works on Billing."
	return densemem.RememberRequest{IdempotencyKey: key,
		Evidence: []densemem.EvidenceInput{{Content: dense, SourceType: "manual"}, {Content: billing, SourceType: "manual"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "mark_dense", Name: "Mark", EntityKind: "person", IdentityContext: map[string]string{"team": "dense-mem"}},
				{Ref: "mark_billing", Name: "Mark", EntityKind: "person", IdentityContext: map[string]string{"team": "billing"}},
				{Ref: "dense", Name: "Dense-Mem", EntityKind: "project"},
				{Ref: "billing", Name: "Billing", EntityKind: "project"},
			},
			Relationships: []densemem.ProposedRelationship{
				{ProposalID: "dense", SubjectRef: "mark_dense", Predicate: "works_on", ObjectRef: "dense",
					Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(dense)}}},
				{ProposalID: "billing", SubjectRef: "mark_billing", Predicate: "works_on", ObjectRef: "billing",
					Evidence: []densemem.Citation{{EvidenceIndex: 1, Start: 0, End: len(billing)}}},
			},
		}}
}

// markStory is the story's state after A's two relationships: A's entity and relationships.
type markStory struct {
	e                *env
	mark             densemem.EntityID
	aDense, aBilling densemem.RelationshipOutcome
}

func newMarkStory(t *testing.T) *markStory {
	e := newEnv(t)
	s := &markStory{e: e}
	s.aDense = e.rememberAccepted(e.A, markWorksOn("Dense-Mem", "Mark works on Dense-Mem."))
	s.aBilling = e.rememberAccepted(e.A, markWorksOn("Billing", "Mark works on Billing."))
	s.mark = e.trace(e.A, s.aDense.RelationshipID).Relationship.Subject.EntityID
	if got := e.trace(e.A, s.aBilling.RelationshipID).Relationship.Subject.EntityID; got != s.mark {
		t.Fatalf("A's second Mark is %s, want A's entity %s reused", got, s.mark)
	}
	return s
}

// confirmNewMark answers B's identity item for mention ref with confirm_new_entity and the evidence
// that tells the two people apart.
func (s *markStory) confirmNewMark(ingest string, out densemem.RelationshipOutcome, ref string) *densemem.ResolveResult {
	s.e.t.Helper()
	req := resolveRequest(ingest, out, densemem.ActionConfirmNewEntity)
	req.Decision = &densemem.ResolveDecision{MentionRef: ref, DistinctFromEntityIDs: []densemem.EntityID{s.mark},
		Reason: "two different people named Mark"}
	req.Evidence = []densemem.EvidenceInput{{SourceType: "manual",
		Content: "Mark of the dense-mem team and Mark of the billing team are two different people."}}
	res, err := s.e.client.Resolve(s.e.ctx, s.e.B, req)
	if err != nil {
		s.e.t.Fatalf("confirm_new_entity %s: %v", ref, err)
	}
	return res
}

func TestIdentityCorrectionTheTwoMarks(t *testing.T) {
	t.Parallel()
	s := newMarkStory(t)
	e := s.e
	rowsOfA := func() map[string]map[string]string {
		var rows map[string]map[string]string
		e.snapshot(func(l ledgerView) { rows = l.ProfileRows(e.A.ProfileID) })
		return rows
	}
	before := rowsOfA()

	// 1. B's narrower mentions of A's context-less Mark are identity questions, never a silent reuse.
	pl := e.rememberReq(e.B, bobsTwoMarks(nextKey()))
	for i, out := range pl.RelationshipOutcomes {
		if out.Category != densemem.CategoryIdentityReview || out.Review == nil || len(out.Review.Mentions) != 1 {
			t.Fatalf("B's relationship %d: %s (%s), want an identity review of one mention", i, out.Category, out.Reason)
		}
		m := out.Review.Mentions[0]
		if !m.Broader || !slices.Equal(m.CandidateIDs, []densemem.EntityID{s.mark}) {
			t.Errorf("B's mention %s: broader %v, candidates %v; want broader with A's entity %s", m.Ref, m.Broader,
				m.CandidateIDs, s.mark)
		}
	}

	// 2. B confirms two new entities; each of B's relationships corrects A's of the same project.
	dense := s.confirmNewMark(pl.IngestID, pl.RelationshipOutcomes[0], "mark_dense")
	billing := s.confirmNewMark(pl.IngestID, pl.RelationshipOutcomes[1], "mark_billing")
	for _, c := range []struct {
		res      *densemem.ResolveResult
		corrects densemem.RelationshipOutcome
		version  int
	}{{dense, s.aDense, 1}, {billing, s.aBilling, 2}} {
		o := c.res.Outcome
		if o == nil || o.Status != "active" {
			t.Fatalf("decision %s: outcome %+v, want an active relationship", c.res.DecisionID, o)
		}
		if len(o.CrossReferences) != 1 || o.CrossReferences[0].Kind != "corrects" ||
			o.CrossReferences[0].ToRelationshipID != c.corrects.RelationshipID {
			t.Errorf("B's %s: cross-references %+v, want one corrects to A's %s", o.RelationshipID, o.CrossReferences,
				c.corrects.RelationshipID)
		}
		if o.Conflict == nil || o.Conflict.Status != "open" || o.Conflict.Version != c.version {
			t.Errorf("B's %s: case %+v, want the identity case open at version %d", o.RelationshipID, o.Conflict, c.version)
		}
	}
	if dense.Outcome.Conflict.ConflictID != billing.Outcome.Conflict.ConflictID {
		t.Errorf("two identity cases %s and %s, want one about A's Mark", dense.Outcome.Conflict.ConflictID,
			billing.Outcome.Conflict.ConflictID)
	}
	markDense := e.trace(e.B, dense.Outcome.RelationshipID).Relationship.Subject.EntityID
	markBilling := e.trace(e.B, billing.Outcome.RelationshipID).Relationship.Subject.EntityID
	if markDense == s.mark || markBilling == s.mark || markDense == markBilling {
		t.Fatalf("B's entities %s and %s: want two new entities besides A's %s", markDense, markBilling, s.mark)
	}

	// 3. A's rows are byte-identical: status, tier, supports, validity, resolutions, everything.
	if d := diff(before, rowsOfA()); d != "" {
		t.Errorf("A's rows changed (-before +after):\n%s", d)
	}

	// 4. One identity_correction case, its positions the three identities; C's recall shows it.
	cases, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases.Conflicts) != 1 || cases.Conflicts[0].Kind != "identity_correction" {
		t.Fatalf("cases %+v, want one identity_correction case", cases.Conflicts)
	}
	cs := cases.Conflicts[0]
	wantPositions := map[densemem.EntityID][]densemem.RelationshipID{
		s.mark:      sortedIDs(s.aDense.RelationshipID, s.aBilling.RelationshipID),
		markDense:   {dense.Outcome.RelationshipID},
		markBilling: {billing.Outcome.RelationshipID},
	}
	gotPositions := map[densemem.EntityID][]densemem.RelationshipID{}
	for _, p := range cs.Positions {
		gotPositions[p.Object.EntityID] = sortedIDs(p.RelationshipIDs...)
	}
	if d := diff(wantPositions, gotPositions); d != "" {
		t.Errorf("identity case positions by entity (-want +got):\n%s", d)
	}
	if cs.Subject.EntityID != s.mark || !strings.Contains(cs.Question, "Mark") {
		t.Errorf("case subject %s, question %q: want A's Mark named", cs.Subject.EntityID, cs.Question)
	}
	rec := e.recall(e.C, "Mark works on", nil, nil)
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID,
		dense.Outcome.RelationshipID, billing.Outcome.RelationshipID} {
		if r := resultFor(rec, id); r == nil || r.ConflictID != cs.ConflictID {
			t.Errorf("C's recall: %s is %+v, want a result naming case %s", id, r, cs.ConflictID)
		}
	}
	if len(rec.Conflicts) != 1 || len(rec.Conflicts[0].Positions) != 3 {
		t.Errorf("C's recall conflicts %+v, want the identity case with its three positions", rec.Conflicts)
	}

	// 5. Two groups on each side: the nightly reviewer keeps it open, and marks it overdue at its
	// deadline with no side qualifying.
	if rep := e.reviewTeamAs("night-1"); rep.KeptOpen != 1 || rep.Resolved != 0 {
		t.Errorf("first night: %+v, want the identity case kept open", rep)
	}
	e.clock.Advance(defaultReviewTTL + 24*time.Hour)
	if rep := e.reviewTeamAs("night-2"); rep.Overdue != 1 || rep.Resolved != 0 {
		t.Errorf("after the deadline: %+v, want the identity case overdue", rep)
	}
	if d := diff(before, rowsOfA()); d != "" {
		t.Errorf("the reviewer changed A's rows (-before +after):\n%s", d)
	}

	// 6. When A forgets its combined statements the disagreement is gone: the case is dismissed.
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: id, Reason: "two people",
			IdempotencyKey: nextKey()}); err != nil {
			t.Fatal(err)
		}
	}
	if st := e.caseStatus(cs.ConflictID); st != "dismissed" {
		t.Errorf("after A forgot its statements the identity case is %s, want dismissed", st)
	}
}

// caseStatus reads a case's status.
func (e *env) caseStatus(id string) string {
	e.t.Helper()
	var st string
	if err := e.pool.QueryRow(e.ctx, `SELECT status FROM conflict_cases WHERE conflict_id = $1`, id).Scan(&st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// TestIdentityCorrectionStatedInRemember: a Remember whose mentions name A's entity in
// distinct_from_entity_ids takes the same path without a review item, and the correcting owner's
// lifecycle changes repair the identity case in their own transaction (DESIGN §6.7).
func TestIdentityCorrectionStatedInRemember(t *testing.T) {
	t.Parallel()
	s := newMarkStory(t)
	e := s.e
	req := bobsTwoMarks(nextKey())
	for i := range req.Proposal.Entities[:2] {
		req.Proposal.Entities[i].DistinctFromEntityIDs = []densemem.EntityID{s.mark}
	}
	pl := e.rememberReq(e.B, req)
	var caseID string
	for i, out := range pl.RelationshipOutcomes {
		corrected := []densemem.RelationshipOutcome{s.aDense, s.aBilling}[i]
		if out.Status != "active" || len(out.CrossReferences) != 1 || out.CrossReferences[0].Kind != "corrects" ||
			out.CrossReferences[0].ToRelationshipID != corrected.RelationshipID {
			t.Fatalf("B's %s: %s/%s, cross-references %+v; want active, correcting A's %s", out.ProposalID, out.Category,
				out.Status, out.CrossReferences, corrected.RelationshipID)
		}
		if out.Conflict == nil || (caseID != "" && out.Conflict.ConflictID != caseID) {
			t.Fatalf("B's %s: case %+v, want the one identity case", out.ProposalID, out.Conflict)
		}
		caseID = out.Conflict.ConflictID
	}
	if v := pl.RelationshipOutcomes[1].Conflict.Version; v != 1 {
		t.Errorf("one Remember opened the case at version %d, want 1: both corrections in its opening", v)
	}
	// The resolution events record the distinction (Trace shows them).
	tr := e.trace(e.B, pl.RelationshipOutcomes[0].RelationshipID)
	if !slices.ContainsFunc(tr.IdentityResolutions, func(r densemem.IdentityResolution) bool {
		return slices.Contains(r.DistinctFromEntityIDs, s.mark) && r.IdentityContext["team"] == "dense-mem"
	}) {
		t.Errorf("Trace resolutions %+v: want the mention's context and its distinction from %s", tr.IdentityResolutions, s.mark)
	}

	// B forgets one correction: the case loses that identity in the Forget's transaction.
	if _, err := e.client.Forget(e.ctx, e.B, densemem.ForgetRequest{RelationshipID: pl.RelationshipOutcomes[0].RelationshipID,
		Reason: "wrong team", IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	var positions, version int
	e.snapshot(func(l ledgerView) {
		version = l.Int(`SELECT version FROM conflict_cases WHERE conflict_id = $1`, caseID)
		positions = l.Int(`SELECT count(DISTINCT position_id) FROM conflict_position_members WHERE conflict_id = $1
			AND removed_version IS NULL`, caseID)
	})
	if version != 2 || positions != 2 {
		t.Errorf("after B forgot one correction: version %d with %d live positions, want 2 and 2", version, positions)
	}
	if _, err := e.client.Forget(e.ctx, e.B, densemem.ForgetRequest{RelationshipID: pl.RelationshipOutcomes[1].RelationshipID,
		Reason: "wrong team", IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	if st := e.caseStatus(caseID); st != "dismissed" {
		t.Errorf("after B forgot both corrections the case is %s, want dismissed", st)
	}
}

// TestConcurrentIdentityCorrections: B's and C's corrections of A's Mark and A's forgets, all at
// once, leave one identity case whose live membership is exactly the corrections still standing
// with the statements they correct, read in one snapshot.
func TestConcurrentIdentityCorrections(t *testing.T) {
	t.Parallel()
	s := newMarkStory(t)
	e := s.e
	correct := func(p densemem.Principal, who string, m int) error {
		full := bobsTwoMarks(nextKey())
		mark := full.Proposal.Entities[m]
		mark.IdentityContext = map[string]string{"team": mark.IdentityContext["team"] + "-" + who} // each profile its own Mark
		mark.DistinctFromEntityIDs = []densemem.EntityID{s.mark}
		rel := full.Proposal.Relationships[m]
		rel.Evidence[0].EvidenceIndex = 0
		req := densemem.RememberRequest{IdempotencyKey: full.IdempotencyKey, Evidence: full.Evidence[m : m+1],
			Proposal: densemem.Proposal{Entities: []densemem.ProposedEntity{mark, full.Proposal.Entities[2+m]},
				Relationships: []densemem.ProposedRelationship{rel}}}
		_, err := e.client.Remember(e.ctx, p, req)
		return err
	}
	errs := make([]error, 4)
	runTogether(4, func(i int) {
		switch i {
		case 0:
			errs[i] = correct(e.B, "b", 0)
		case 1:
			errs[i] = correct(e.C, "c", 1)
		case 2:
			errs[i] = correct(e.C, "c", 0)
		case 3:
			_, errs[i] = e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: s.aBilling.RelationshipID,
				Reason: "two people", IdempotencyKey: nextKey()})
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	var live, cases int
	var members, want []string
	e.snapshot(func(l ledgerView) {
		cases = l.Int(`SELECT count(*) FROM conflict_cases WHERE kind = 'identity_correction'`)
		live = l.Int(`SELECT count(*) FROM conflict_cases WHERE kind = 'identity_correction' AND status IN ('open', 'overdue')`)
		members = l.Strings(`SELECT m.relationship_id FROM conflict_position_members m JOIN conflict_cases c USING (team_id, conflict_id)
			WHERE c.kind = 'identity_correction' AND c.status IN ('open', 'overdue') AND m.removed_version IS NULL ORDER BY 1`)
		// What the membership must be: every active correction, and the active statements it corrects.
		want = l.Strings(`SELECT id FROM (
			SELECT x.from_relationship_id AS id FROM relationship_cross_references x
			JOIN relationships f ON f.relationship_id = x.from_relationship_id AND f.status = 'active'
			JOIN relationships o ON o.relationship_id = x.to_relationship_id AND o.status = 'active'
			WHERE x.kind = 'corrects' AND o.subject_entity_id = $1
			UNION
			SELECT x.to_relationship_id FROM relationship_cross_references x
			JOIN relationships f ON f.relationship_id = x.from_relationship_id AND f.status = 'active'
			JOIN relationships o ON o.relationship_id = x.to_relationship_id AND o.status = 'active'
			WHERE x.kind = 'corrects' AND o.subject_entity_id = $1) y ORDER BY 1`, s.mark)
	})
	if live != 1 || cases < 1 {
		t.Fatalf("%d identity cases, %d live; want exactly one live", cases, live)
	}
	if d := diff(want, members); d != "" {
		t.Errorf("live membership (-standing corrections +members):\n%s", d)
	}
}

// TestIdentityCorrectionSettledByTheOwnersSplit: A settles the two Marks by late splits of its own
// observations; each split repairs the identity case in its transaction, and the second, leaving
// nothing of A's on the combined entity, dismisses it.
func TestIdentityCorrectionSettledByTheOwnersSplit(t *testing.T) {
	t.Parallel()
	s := newMarkStory(t)
	e := s.e
	req := bobsTwoMarks(nextKey())
	for i := range req.Proposal.Entities[:2] {
		req.Proposal.Entities[i].DistinctFromEntityIDs = []densemem.EntityID{s.mark}
	}
	caseID := e.rememberReq(e.B, req).RelationshipOutcomes[0].Conflict.ConflictID
	split := func(out densemem.RelationshipOutcome, team string) *densemem.ReassignResult {
		res, err := e.client.Split(e.ctx, e.A, densemem.SplitRequest{EntityID: s.mark, ObservationIDs: []string{out.ObservationID},
			IdentityContext: map[string]string{"team": team}, IdempotencyKey: nextKey(),
			Evidence: []densemem.EvidenceInput{{Content: "B is right: there are two Marks.", SourceType: "manual"}}})
		if err != nil {
			t.Fatalf("A splits %s off: %v", out.RelationshipID, err)
		}
		return res
	}
	caseIn := func(res *densemem.ReassignResult) *densemem.ConflictRef {
		for i := range res.Conflicts {
			if res.Conflicts[i].ConflictID == caseID {
				return &res.Conflicts[i]
			}
		}
		return nil
	}
	if c := caseIn(split(s.aBilling, "billing")); c == nil || c.Status != "open" || c.Version != 2 {
		t.Errorf("after A split Billing off: case %+v, want the identity case open at version 2", c)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM conflict_position_members WHERE conflict_id = $1 AND removed_version IS NULL`,
		caseID); n != 2 {
		t.Errorf("after A split Billing off: %d live members, want 2 (A's Dense-Mem and B's correction of it)", n)
	}
	if c := caseIn(split(s.aDense, "dense-mem")); c == nil || c.Status != "dismissed" {
		t.Errorf("after A split Dense-Mem off: case %+v, want the identity case dismissed", c)
	}
}

// ---- The identity_correction case under the deterministic policy (DESIGN §7, §8, §9) ----

// corrections is B's one Remember correcting A's combined Mark: "Mark works_on Dense-Mem" about a Mark
// of the dense-mem team and "Mark works_on Billing" about a Mark of the billing team, both mentions
// stated distinct from A's entity, each relationship citing every content given for its project (one
// independent source group per distinct content), from validFrom when it is set.
func (s *markStory) corrections(dense, billing []string, validFrom *time.Time) densemem.RememberRequest {
	req := densemem.RememberRequest{IdempotencyKey: nextKey(), Proposal: densemem.Proposal{
		Entities: []densemem.ProposedEntity{
			{Ref: "mark_dense", Name: "Mark", EntityKind: "person", IdentityContext: map[string]string{"team": "dense-mem"},
				DistinctFromEntityIDs: []densemem.EntityID{s.mark}},
			{Ref: "mark_billing", Name: "Mark", EntityKind: "person", IdentityContext: map[string]string{"team": "billing"},
				DistinctFromEntityIDs: []densemem.EntityID{s.mark}},
			{Ref: "dense", Name: "Dense-Mem", EntityKind: "project"},
			{Ref: "billing", Name: "Billing", EntityKind: "project"},
		}}}
	for _, stated := range []struct {
		proposal, subject string
		contents          []string
	}{{"dense", "mark_dense", dense}, {"billing", "mark_billing", billing}} {
		rel := densemem.ProposedRelationship{ProposalID: stated.proposal, SubjectRef: stated.subject, Predicate: "works_on",
			ObjectRef: stated.proposal, ValidFrom: validFrom}
		for _, content := range stated.contents {
			i := slices.IndexFunc(req.Evidence, func(ev densemem.EvidenceInput) bool { return ev.Content == content })
			if i < 0 {
				i = len(req.Evidence)
				req.Evidence = append(req.Evidence, densemem.EvidenceInput{Content: content, SourceType: "document"})
			}
			rel.Evidence = append(rel.Evidence, densemem.Citation{EvidenceIndex: i, Start: 0, End: len(content)})
		}
		req.Proposal.Relationships = append(req.Proposal.Relationships, rel)
	}
	return req
}

// identityCase is the story's identity case after B's corrections: its ID and B's two relationships.
type identityCase struct {
	id                 string
	bDense, bBilling   densemem.RelationshipID
	markDense, mBilled densemem.EntityID
	correctedAt        time.Time
}

// correct places B's corrections and returns the case they opened.
func (s *markStory) correct(dense, billing []string, validFrom *time.Time) identityCase {
	s.e.t.Helper()
	at := s.e.clock.Now()
	pl := s.e.rememberReq(s.e.B, s.corrections(dense, billing, validFrom))
	for _, out := range pl.RelationshipOutcomes {
		if out.Status != "active" || out.Conflict == nil || len(out.CrossReferences) != 1 || out.CrossReferences[0].Kind != "corrects" {
			s.e.t.Fatalf("B's %s: %s/%s, case %+v, cross-references %+v; want active, correcting A's statement in the identity case",
				out.ProposalID, out.Category, out.Status, out.Conflict, out.CrossReferences)
		}
	}
	c := identityCase{id: pl.RelationshipOutcomes[0].Conflict.ConflictID, correctedAt: at,
		bDense: pl.RelationshipOutcomes[0].RelationshipID, bBilling: pl.RelationshipOutcomes[1].RelationshipID}
	c.markDense = s.e.trace(s.e.B, c.bDense).Relationship.Subject.EntityID
	c.mBilled = s.e.trace(s.e.B, c.bBilling).Relationship.Subject.EntityID
	return c
}

// newMarkStoryFrom is newMarkStory with A's two statements from the given sources: A's side counts one
// group per distinct source group label.
func newMarkStoryFrom(t *testing.T, denseGroup, billingGroup string) *markStory {
	e := newEnv(t)
	s := &markStory{e: e}
	dense, billing := markWorksOn("Dense-Mem", "Mark works on Dense-Mem."), markWorksOn("Billing", "Mark works on Billing.")
	dense.sourceGroup, billing.sourceGroup = denseGroup, billingGroup
	s.aDense, s.aBilling = e.rememberAccepted(e.A, dense), e.rememberAccepted(e.A, billing)
	s.mark = e.trace(e.A, s.aDense.RelationshipID).Relationship.Subject.EntityID
	e.clock.Advance(time.Hour)
	return s
}

// exceptLifecycle drops a profile's relationship rows and transitions from rows (ProfileRows): what is
// left — evidence, observations, verifications, supports, entity resolutions, entities, names, items —
// no reviewer may ever change.
func exceptLifecycle(rows map[string]map[string]string) map[string]map[string]string {
	out := maps.Clone(rows)
	delete(out, "relationships")
	delete(out, "relationship_transitions")
	return out
}

// neverByTheReviewer are the tables the reviewer must never write (DESIGN §9): their counts stay.
var neverByTheReviewer = []string{"evidence_fragments", "fragment_contents", "observations", "verification_events",
	"support_links", "relationship_cross_references", "entities", "entity_names", "entity_resolution_events",
	"review_items"}

// checkClosedByTheReviewer asserts, through Trace, that id was superseded by the reviewer's
// resolution of case at the cutoff, from version 1 to 2.
func (e *env) checkClosedByTheReviewer(id densemem.RelationshipID, caseID string, cutoff, at time.Time) {
	e.t.Helper()
	tr, err := e.client.Trace(e.ctx, e.C, densemem.TraceRequest{RelationshipID: id, IncludeTransitions: true})
	if err != nil {
		e.t.Fatal(err)
	}
	r := tr.Relationship
	if r.Status != "superseded" || r.ValidTo == nil || !r.ValidTo.Equal(cutoff) || r.Version != 2 {
		e.t.Errorf("%s after the resolution: %s, valid_to %v, version %d; want superseded at %v, version 2", id, r.Status,
			r.ValidTo, r.Version, cutoff)
	}
	last := tr.Transitions[len(tr.Transitions)-1]
	if last.FromStatus != "active" || last.ToStatus != "superseded" || last.ActorKind != reviewerActorKind ||
		last.ActorProfileID != "" || last.Reason != "conflict_resolved:"+caseID || !last.CreatedAt.Equal(at) {
		e.t.Errorf("%s's last transition %+v, want the reviewer's conflict_resolved:%s at %v", id, last, caseID, at)
	}
}

// checkUntouched asserts, through Trace, that ids are still active at version 1.
func (e *env) checkUntouched(ids ...densemem.RelationshipID) {
	e.t.Helper()
	for _, id := range ids {
		if r := e.trace(e.C, id).Relationship; r.Status != "active" || r.Version != 1 || r.ValidTo != nil {
			e.t.Errorf("%s: %s, version %d, valid_to %v; want active and unchanged", id, r.Status, r.Version, r.ValidTo)
		}
	}
}

// listedCase returns case id as ListConflicts shows it (every status).
func (e *env) listedCase(id string) densemem.ConflictCase {
	e.t.Helper()
	page, err := e.client.ListConflicts(e.ctx, e.C, densemem.ListConflictsRequest{Status: []string{"open", "overdue", "resolved", "dismissed"}})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range page.Conflicts {
		if c.ConflictID == id {
			return c
		}
	}
	e.t.Fatalf("case %s is not listed", id)
	return densemem.ConflictCase{}
}

// groupsByIdentity maps each position's identity to its counted source groups.
func groupsByIdentity(c densemem.ConflictCase) map[densemem.EntityID]int {
	out := map[densemem.EntityID]int{}
	for _, p := range c.Positions {
		out[p.Object.EntityID] = p.CountedSourceGroups
	}
	return out
}

// TestIdentityCorrectionResolvedForTheDistinctIdentities: B's corrections, dated by their evidence,
// have four independent groups against A's one (80%): the first nightly review resolves the case for
// the distinct identities before its deadline, superseding both of A's statements at the evidence
// time with audited transitions, in one transaction; A's entity resolutions, evidence and supports,
// and B's rows, are untouched. Recall's current view shows B's side with the resolved case; valid_at
// before the cutoff and known_at before the correction still show A's.
func TestIdentityCorrectionResolvedForTheDistinctIdentities(t *testing.T) {
	t.Parallel()
	s := newMarkStoryFrom(t, "alice-notes", "alice-notes")
	e := s.e
	since := date("2026-05-01")
	c := s.correct(
		[]string{"Since 2026-05-01 Mark of the dense-mem team works on Dense-Mem.", "Org chart 2026-05-01: Mark (dense-mem team) works on Dense-Mem."},
		[]string{"Since 2026-05-01 Mark of the billing team works on Billing.", "Payroll 2026-05-01: Mark (billing team) works on Billing."},
		&since)
	if d := diff(map[densemem.EntityID]int{s.mark: 1, c.markDense: 2, c.mBilled: 2}, groupsByIdentity(e.listedCase(c.id))); d != "" {
		t.Errorf("counted groups by identity (-want +got):\n%s", d)
	}
	rowsOfA, rowsOfB := exceptLifecycle(e.ledger().ProfileRows(e.A.ProfileID)), e.ledger().ProfileRows(e.B.ProfileID)
	counts := e.countsOf(neverByTheReviewer)

	e.clock.Advance(24 * time.Hour)
	night := e.clock.Now()
	if rep := e.reviewTeamAs("night-1"); rep.Resolved != 1 || rep.Claimed != 1 {
		t.Fatalf("the first night: %+v, want the identity case resolved before its deadline", rep)
	}

	// The case: resolved for one of B's identities, from the evidence time, by the reviewer.
	cs := e.ledger().Case(c.id)
	last := cs.Events[len(cs.Events)-1]
	if cs.Status != "resolved" || cs.Basis != "evidence_time" || cs.EffectiveAt == nil || !cs.EffectiveAt.Equal(since) ||
		last.Reason != "pre_ttl_floor_met" || last.ActorKind != reviewerActorKind || last.Resulting != "resolved" {
		t.Fatalf("case after the review: %s, basis %s, effective %v, last event %+v; want resolved by the pre-deadline floor from %v",
			cs.Status, cs.Basis, cs.EffectiveAt, last, since)
	}
	listed := e.listedCase(c.id)
	preferred := slices.IndexFunc(listed.Positions, func(p densemem.RecallPosition) bool { return p.PositionID == listed.PreferredPositionID })
	if preferred < 0 || listed.Positions[preferred].Object.EntityID == s.mark {
		t.Errorf("preferred position %s: want one of B's distinct identities", listed.PreferredPositionID)
	}

	// A's stale episodes closed at the cutoff by the reviewer; B's statements unchanged.
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		e.checkClosedByTheReviewer(id, c.id, since, night)
	}
	e.checkUntouched(c.bDense, c.bBilling)
	// Nothing else: A's resolutions, evidence, supports; B's rows; no evidence, support, cross-reference
	// or resolution row anywhere.
	if d := diff(rowsOfA, exceptLifecycle(e.ledger().ProfileRows(e.A.ProfileID))); d != "" {
		t.Errorf("the reviewer changed A's rows besides the lifecycle of its statements (-before +after):\n%s", d)
	}
	if d := diff(rowsOfB, e.ledger().ProfileRows(e.B.ProfileID)); d != "" {
		t.Errorf("the reviewer changed B's rows (-before +after):\n%s", d)
	}
	if d := countsDiff(counts, e.countsOf(neverByTheReviewer)); d != "" {
		t.Errorf("the reviewer wrote rows it must never write: %s", d)
	}
	e.checkLedgerTransitions()

	// Recall now: B's side, each statement with the resolved case; A's superseded statements gone.
	now := e.recall(e.C, "Mark works on", nil, nil)
	for _, id := range []densemem.RelationshipID{c.bDense, c.bBilling} {
		r := resultFor(now, id)
		if r == nil || r.ResolvedConflict == nil || r.ResolvedConflict.ConflictID != c.id || r.ConflictID != "" ||
			r.ResolvedConflict.EffectiveTimeBasis != "evidence_time" {
			t.Errorf("current recall: %s is %+v, want B's statement with the resolved identity case", id, r)
		}
	}
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		if resultFor(now, id) != nil {
			t.Errorf("current recall still returns A's superseded %s", id)
		}
	}
	if len(now.Conflicts) != 0 {
		t.Errorf("current recall lists live cases %+v, want none", now.Conflicts)
	}
	// valid_at before the cutoff: A's statements held then; B's had not started.
	before := since.Add(-24 * time.Hour)
	then := e.recall(e.C, "Mark works on", &before, nil)
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		if r := resultFor(then, id); r == nil || r.TrueAtValidAt == nil || !*r.TrueAtValidAt {
			t.Errorf("recall valid_at %v: A's %s is %+v, want it true then", before, id, r)
		}
	}
	if r := resultFor(then, c.bDense); r != nil {
		t.Errorf("recall valid_at %v returns B's %s, which starts on %v", before, c.bDense, since)
	}
	// known_at before B's correction: the system's view then, A's statements current, no case.
	known := c.correctedAt.Add(-time.Minute)
	old := e.recall(e.C, "Mark works on", nil, &known)
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		if r := resultFor(old, id); r == nil || r.Relationship.Status != "active" || !r.Current || r.ResolvedConflict != nil {
			t.Errorf("recall known_at %v: A's %s is %+v, want it active and current as recorded then", known, id, r)
		}
	}
	if resultFor(old, c.bDense) != nil || resultFor(old, c.bBilling) != nil || len(old.Conflicts) != 0 {
		t.Errorf("recall known_at %v leaks B's later correction: %v, conflicts %+v", known, recallIDs(old), old.Conflicts)
	}
}

// TestIdentityCorrectionBelowThePreDeadlineFloorStaysOpen: B's corrections have three independent
// groups against A's one (exactly 75%, and fewer than four): before the deadline the case stays open
// whatever the nights; at the deadline the majority floor resolves it for the distinct identities by
// the recorded fallback (B's statements carry no date), closing A's statements at the case's opening.
func TestIdentityCorrectionBelowThePreDeadlineFloorStaysOpen(t *testing.T) {
	t.Parallel()
	s := newMarkStoryFrom(t, "alice-notes", "alice-notes")
	e := s.e
	c := s.correct(
		[]string{"Mark of the dense-mem team works on Dense-Mem.", "Org chart: Mark (dense-mem team) works on Dense-Mem."},
		[]string{"Mark of the billing team works on Billing."}, nil)
	opened := e.ledger().Case(c.id).OpenedAt
	for night := range 3 {
		e.clock.Advance(24 * time.Hour)
		if rep := e.reviewTeamAs(fmt.Sprintf("night-%d", night)); rep.KeptOpen != 1 || rep.Resolved != 0 {
			t.Fatalf("night %d before the deadline: %+v, want the case kept open (3 groups of 4)", night, rep)
		}
	}
	if cs := e.ledger().Case(c.id); cs.Status != "open" || cs.Version != 1 {
		t.Fatalf("before the deadline: %s at version %d, want open and unchanged", cs.Status, cs.Version)
	}
	e.checkUntouched(s.aDense.RelationshipID, s.aBilling.RelationshipID, c.bDense, c.bBilling)

	at := e.advanceToReviewDue(c.id)
	if rep := e.reviewTeamAs("at-the-deadline"); rep.Resolved != 1 {
		t.Fatalf("at the deadline: %+v, want the case resolved by majority", rep)
	}
	cs := e.ledger().Case(c.id)
	if cs.Status != "resolved" || cs.Basis != "recorded_fallback" || cs.EffectiveAt == nil || !cs.EffectiveAt.Equal(opened) ||
		cs.Events[len(cs.Events)-1].Reason != "post_ttl_majority_floor_met" {
		t.Fatalf("case at the deadline: %s, basis %s, effective %v, reasons %v; want resolved by majority from its opening %v",
			cs.Status, cs.Basis, cs.EffectiveAt, cs.Reasons(), opened)
	}
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		e.checkClosedByTheReviewer(id, c.id, opened, at)
	}
	e.checkUntouched(c.bDense, c.bBilling)
	e.checkLedgerTransitions()
}

// TestInvariant21_IdentityCaseResolvedByMajorityClosesTheLosingEpisodes (issue 20 item 6): an
// identity case resolved by the post-deadline majority (B's two groups against A's one) must close A's
// losing episodes with audited transitions in the resolving transaction — a reviewer that marks the
// case resolved while closing none of A's rows leaves A's stale statements current, which this test
// refuses through Recall and Trace — and must change no entity resolution, evidence or support.
func TestInvariant21_IdentityCaseResolvedByMajorityClosesTheLosingEpisodes(t *testing.T) {
	t.Parallel()
	s := newMarkStoryFrom(t, "alice-notes", "alice-notes")
	e := s.e
	c := s.correct([]string{"Mark of the dense-mem team works on Dense-Mem."}, []string{"Mark of the billing team works on Billing."}, nil)
	counts := e.countsOf(neverByTheReviewer)
	at := e.advanceToReviewDue(c.id)
	if rep := e.reviewTeamAs("at-the-deadline"); rep.Resolved != 1 {
		t.Fatalf("at the deadline: %+v, want the case resolved by majority (2 groups of 3)", rep)
	}
	cs := e.ledger().Case(c.id)
	if cs.Status != "resolved" || cs.Events[len(cs.Events)-1].Reason != "post_ttl_majority_floor_met" {
		t.Fatalf("case %s, reasons %v; want resolved by the majority floor", cs.Status, cs.Reasons())
	}
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		e.checkClosedByTheReviewer(id, c.id, cs.OpenedAt, at)
	}
	rec := e.recall(e.C, "Mark works on", nil, nil)
	if resultFor(rec, s.aDense.RelationshipID) != nil || resultFor(rec, s.aBilling.RelationshipID) != nil {
		t.Errorf("current recall after the resolution returns A's losing statements: %v", recallIDs(rec))
	}
	e.checkUntouched(c.bDense, c.bBilling)
	if d := countsDiff(counts, e.countsOf(neverByTheReviewer)); d != "" {
		t.Errorf("the reviewer wrote rows it must never write: %s", d)
	}
}

// TestIdentityCorrectionResolvedForTheCombinedIdentity: the policy is symmetric. A's combined Mark has
// three independent groups against the one document B cites for both distinct Marks (which counts once
// for B's side): at the deadline the case resolves for A's identity and the reviewer supersedes B's
// corrections at the case's opening; A's statements and B's entity resolutions stay as they were.
func TestIdentityCorrectionResolvedForTheCombinedIdentity(t *testing.T) {
	t.Parallel()
	s := newMarkStoryFrom(t, "alice-notes", "alice-hr")
	e := s.e
	third := withContent(markWorksOn("Dense-Mem", ""), "Team page: Mark works on Dense-Mem.")
	if out := e.remember(e.A, third); out.Category != densemem.CategorySupported || out.RelationshipID != s.aDense.RelationshipID {
		t.Fatalf("A's third source: %s on %s, want a support of %s", out.Category, out.RelationshipID, s.aDense.RelationshipID)
	}
	memo := "Memo: Mark of the dense-mem team works on Dense-Mem and Mark of the billing team works on Billing."
	c := s.correct([]string{memo}, []string{memo}, nil)
	if d := diff(map[densemem.EntityID]int{s.mark: 3, c.markDense: 1, c.mBilled: 1}, groupsByIdentity(e.listedCase(c.id))); d != "" {
		t.Errorf("counted groups by identity (-want +got):\n%s", d)
	}
	opened := e.ledger().Case(c.id).OpenedAt
	rowsOfB := exceptLifecycle(e.ledger().ProfileRows(e.B.ProfileID))

	at := e.advanceToReviewDue(c.id)
	if rep := e.reviewTeamAs("at-the-deadline"); rep.Resolved != 1 {
		t.Fatalf("at the deadline: %+v, want the case resolved for A's identity", rep)
	}
	listed := e.listedCase(c.id)
	preferred := slices.IndexFunc(listed.Positions, func(p densemem.RecallPosition) bool { return p.PositionID == listed.PreferredPositionID })
	if listed.Status != "resolved" || preferred < 0 || listed.Positions[preferred].Object.EntityID != s.mark {
		t.Fatalf("case %s preferring %s, want resolved for A's Mark %s", listed.Status, listed.PreferredPositionID, s.mark)
	}
	for _, id := range []densemem.RelationshipID{c.bDense, c.bBilling} {
		e.checkClosedByTheReviewer(id, c.id, opened, at)
	}
	e.checkUntouched(s.aBilling.RelationshipID)
	if r := e.trace(e.C, s.aDense.RelationshipID).Relationship; r.Status != "active" || r.ValidTo != nil {
		t.Errorf("A's %s: %s, valid_to %v; want active", s.aDense.RelationshipID, r.Status, r.ValidTo)
	}
	if d := diff(rowsOfB, exceptLifecycle(e.ledger().ProfileRows(e.B.ProfileID))); d != "" {
		t.Errorf("the reviewer changed B's rows besides the lifecycle of its statements (-before +after):\n%s", d)
	}
	now := e.recall(e.C, "Mark works on", nil, nil)
	for _, id := range []densemem.RelationshipID{s.aDense.RelationshipID, s.aBilling.RelationshipID} {
		if r := resultFor(now, id); r == nil || r.ResolvedConflict == nil || r.ResolvedConflict.ConflictID != c.id {
			t.Errorf("current recall: A's %s is %+v, want it with the resolved identity case", id, r)
		}
	}
	if resultFor(now, c.bDense) != nil || resultFor(now, c.bBilling) != nil {
		t.Errorf("current recall still returns B's superseded corrections: %v", recallIDs(now))
	}
	e.checkLedgerTransitions()
}

// TestIdentityCorrectionOverdueWithoutAWinner: two independent groups on each side. Before the
// deadline the case stays open; at it no side qualifies, so it becomes overdue with one escalation
// event — never an invented winner — and later nights add no event; nobody's statement changes.
func TestIdentityCorrectionOverdueWithoutAWinner(t *testing.T) {
	t.Parallel()
	s := newMarkStoryFrom(t, "", "")
	e := s.e
	c := s.correct([]string{"Mark of the dense-mem team works on Dense-Mem."}, []string{"Mark of the billing team works on Billing."}, nil)
	if d := diff(map[densemem.EntityID]int{s.mark: 2, c.markDense: 1, c.mBilled: 1}, groupsByIdentity(e.listedCase(c.id))); d != "" {
		t.Errorf("counted groups by identity (-want +got):\n%s", d)
	}
	e.clock.Advance(24 * time.Hour)
	if rep := e.reviewTeamAs("before"); rep.KeptOpen != 1 {
		t.Fatalf("before the deadline: %+v, want kept open", rep)
	}
	e.advanceToReviewDue(c.id)
	if rep := e.reviewTeamAs("at-the-deadline"); rep.Overdue != 1 || rep.Resolved != 0 {
		t.Fatalf("at the deadline: %+v, want overdue", rep)
	}
	e.clock.Advance(24 * time.Hour)
	if rep := e.reviewTeamAs("after"); rep.Overdue != 1 || rep.Resolved != 0 {
		t.Fatalf("a night after the deadline: %+v, want still overdue", rep)
	}
	cs := e.ledger().Case(c.id)
	if d := diff([]string{"opened", "overdue_no_qualifying_position"}, cs.Reasons()); d != "" || cs.Status != "overdue" || cs.Preferred != "" {
		t.Errorf("case %s preferring %q, events (-want +got):\n%s", cs.Status, cs.Preferred, d)
	}
	if ev := cs.Events[len(cs.Events)-1]; ev.ActorKind != reviewerActorKind || ev.Prior != "open" || ev.Resulting != "overdue" {
		t.Errorf("escalation event %+v, want the reviewer's open -> overdue", ev)
	}
	e.checkUntouched(s.aDense.RelationshipID, s.aBilling.RelationshipID, c.bDense, c.bBilling)
}

// checkLedgerTransitions asserts every relationship's version agrees with its transitions (the
// relationship half of checkLedger, which reads identity cases' members as current-state ones).
func (e *env) checkLedgerTransitions() {
	e.t.Helper()
	e.snapshot(func(l ledgerView) { l.checkTransitions() })
}

// TestIdentityResolutionReasksTheLosersHeldStatement: the identity case's losers lie on other keys
// than the case's; the review locks those keys, so an owner's statement held against a loser it
// closes is asked its new question in the review's transaction (DESIGN §6.7; decision 127). A's
// "production deploys_from main" is corrected by B's two independent sources about a production
// distinct from A's; A's "production deploys_from release" is held against A's main. After the
// deadline the reviewer resolves for B's identity and supersedes A's main: A's held release is left
// in review, its old item superseded and a new one open with no prior left to name.
func TestIdentityResolutionReasksTheLosersHeldStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	aMain := e.rememberAccepted(e.A, deploy("production", "main"))
	pl := e.rememberOne(e.A, deploy("production", "release").request(nextKey()))
	held := only(t, pl)
	if held.Status != "needs_review" || held.Review == nil {
		t.Fatalf("A's release: %s/%s, want held against A's main", held.Category, held.Status)
	}
	production := e.trace(e.A, aMain.RelationshipID).Relationship.Subject.EntityID
	texts := []string{"The eu production environment deploys from the main branch.", "Runbook: eu production deploys from main."}
	req := densemem.RememberRequest{IdempotencyKey: nextKey(),
		Evidence: []densemem.EvidenceInput{{Content: texts[0], SourceType: "manual", SourceGroup: "ops-chat"},
			{Content: texts[1], SourceType: "document", SourceGroup: "runbook"}},
		Proposal: densemem.Proposal{
			Entities: []densemem.ProposedEntity{
				{Ref: "env", Name: "production", EntityKind: "environment", IdentityContext: map[string]string{"region": "eu"},
					DistinctFromEntityIDs: []densemem.EntityID{production}},
				{Ref: "branch", Name: "main", EntityKind: "git_branch"},
			},
			Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "env", Predicate: "deploys_from",
				ObjectRef: "branch", Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(texts[0])},
					{EvidenceIndex: 1, Start: 0, End: len(texts[1])}}}},
		}}
	b := only(t, e.rememberReq(e.B, req))
	if b.Status != "active" || b.Conflict == nil || len(b.CrossReferences) != 1 || b.CrossReferences[0].Kind != "corrects" {
		t.Fatalf("B's correction: %s/%s, case %+v, cross-references %+v; want it correcting A's main in an identity case",
			b.Category, b.Status, b.Conflict, b.CrossReferences)
	}
	e.clock.Advance(defaultReviewTTL + 24*time.Hour)
	if rep := e.reviewTeamAs("night"); rep.Resolved != 1 {
		t.Fatalf("nightly: %+v, want the identity case resolved for B's identity", rep)
	}
	if st, _, _, _ := e.relationshipState(aMain.RelationshipID); st != "superseded" {
		t.Fatalf("A's main is %s after the resolution, want superseded", st)
	}
	if st, _, _, v := e.relationshipState(held.RelationshipID); st != "needs_review" || v != 1 {
		t.Errorf("the reviewer changed A's held release: %s v%d, want needs_review v1", st, v)
	}
	if got := e.reviewItemStatus(e.A, held.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
		t.Errorf("A's old item is %s, want superseded: its prior is gone", got)
	}
	items, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items.ReviewItems) != 1 || items.ReviewItems[0].RelationshipID != held.RelationshipID ||
		len(items.ReviewItems[0].RelatedRelationshipID) != 0 {
		t.Fatalf("A's open items %+v, want one new question about the held release with no prior", items.ReviewItems)
	}
	e.checkLedgerTransitions()
}
