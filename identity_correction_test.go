package densemem_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// The specification's Cross-Profile Corrections example: A's "Mark" combines two people; B, with
// distinguishing evidence, gets an identity question instead of A's entity, confirms two new
// entities, and its relationships correct A's through one identity_correction case. A's rows never
// change; C sees every position; the nightly reviewer never resolves an identity case itself.

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

	// 5. The nightly reviewer keeps it open, marks it overdue at its deadline, never resolves it.
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
