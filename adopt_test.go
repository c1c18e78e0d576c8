package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
)

// Adoption (DESIGN §13, acceptance invariant 12): evidence[i].adopt_fragment_id cites an existing
// team fragment instead of new content.

// adopting is f's request with its one evidence item replaced by the adoption of fragment, whose
// stored content is content (cited whole).
func adopting(f fact, fragment densemem.FragmentID, content string) densemem.RememberRequest {
	req := f.request(nextKey())
	req.Evidence = []densemem.EvidenceInput{{AdoptFragmentID: fragment}}
	req.Proposal.Relationships[0].Evidence = []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}
	return req
}

// correctionWorld is the specification's stale-knowledge story up to the open case: A1 "production
// deploys_from main", then B1 "release" since May 1, correcting A1, which opens a case.
type correctionWorld struct {
	e        *env
	a1, b1   densemem.RelationshipOutcome
	fragment densemem.FragmentID // B's evidence fragment
	content  string              // its content
	caseID   string
	openedAt time.Time
}

func newCorrectionWorld(t *testing.T) *correctionWorld {
	t.Helper()
	e := newEnv(t)
	w := &correctionWorld{e: e}
	e.step()
	w.a1 = e.remember(e.A, deploy("production", "main"))
	e.step()
	w.openedAt = e.clock.Now()
	fB := deploy("production", "release").since(date("2026-05-01"))
	pB := e.rememberReq(e.B, correcting(fB, w.a1.RelationshipID))
	w.b1 = only(t, pB)
	if w.b1.Conflict == nil {
		t.Fatalf("B's correction opened no case: %+v", w.b1)
	}
	w.caseID, w.fragment, w.content = w.b1.Conflict.ConflictID, pB.Fragments[0].FragmentID, fB.content
	return w
}

// release is the fact B1 states.
func release() fact { return deploy("production", "release").since(date("2026-05-01")) }

func TestAdopt_KeepsProvenanceAndLinksTheSource(t *testing.T) {
	t.Parallel()
	w := newCorrectionWorld(t)
	e := w.e
	fragments := e.count("evidence_fragments")
	e.step()
	pl := e.rememberReq(e.C, adopting(release(), w.fragment, w.content))
	c1 := only(t, pl)

	// The placement lists the adopted fragment, with its author; nothing was stored again.
	wantFrag := []densemem.FragmentOutcome{{EvidenceIndex: 0, FragmentID: w.fragment, SourceGroup: "content:" + contentHash(e, w.fragment),
		Adopted: true, AuthorProfileID: e.B.ProfileID}}
	if d := cmp.Diff(wantFrag, pl.Fragments); d != "" {
		t.Errorf("placement fragments (-want +got):\n%s", d)
	}
	if n := e.count("evidence_fragments"); n != fragments {
		t.Errorf("evidence_fragments: %d rows, want %d (an adoption stores no fragment)", n, fragments)
	}
	if c1.Category != densemem.CategoryAccepted || c1.Tier != "validated_claim" || c1.Conflict == nil ||
		c1.Conflict.ConflictID != w.caseID {
		t.Fatalf("C's adoption: %+v; want accepted, validated_claim, in case %s", c1, w.caseID)
	}
	// C1 confirms B1 and, dated later by the verifier, corrects A1, as any statement would; the
	// adoption adds adopts_evidence_from to B1, whose fragment it adopted, and to nothing else.
	var kinds []string
	for _, x := range c1.CrossReferences {
		kinds = append(kinds, x.Kind+" "+string(x.ToRelationshipID))
	}
	slices.Sort(kinds)
	wantKinds := []string{"adopts_evidence_from " + string(w.b1.RelationshipID), "confirms " + string(w.b1.RelationshipID),
		"corrects " + string(w.a1.RelationshipID)}
	if d := cmp.Diff(wantKinds, kinds); d != "" {
		t.Errorf("cross-reference kinds (-want +got):\n%s", d)
	}

	// The support keeps the fragment's author, group, hash and authority; the adopter is its profile.
	got := e.ledger().Strings(`SELECT fragment_id || ' ' || author_profile_id || ' ' || profile_id || ' ' || authority || ' ' ||
		(source_group = (SELECT source_group FROM evidence_fragments f WHERE f.team_id = s.team_id AND f.fragment_id = s.fragment_id)) || ' ' ||
		(content_sha256 = (SELECT content_sha256 FROM evidence_fragments f WHERE f.team_id = s.team_id AND f.fragment_id = s.fragment_id))
		FROM support_links s WHERE team_id = $1 AND relationship_id = $2`, e.team, c1.RelationshipID)
	want := []string{string(w.fragment) + " " + string(e.B.ProfileID) + " " + string(e.C.ProfileID) + " standard true true"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("C1's support links (-want +got):\n%s", d)
	}

	// Trace shows the original author and the adopter, the content, and the link both ways.
	tr := e.trace(e.admin, c1.RelationshipID)
	if len(tr.Evidence) != 1 {
		t.Fatalf("trace of C1: evidence %+v", tr.Evidence)
	}
	ev := tr.Evidence[0]
	if ev.FragmentID != w.fragment || ev.AuthorProfileID != e.B.ProfileID || ev.ProfileID != e.C.ProfileID || !ev.Adopted ||
		ev.Content != w.content {
		t.Errorf("trace of C1: evidence %+v; want B's fragment, authored by B, adopted by C", ev)
	}
	if !hasCrossReference(tr.CrossReferences, "adopts_evidence_from", "outgoing", c1.RelationshipID, w.b1.RelationshipID) {
		t.Errorf("trace of C1: cross-references %+v lack the outgoing adopts_evidence_from", tr.CrossReferences)
	}
	trB := e.trace(e.admin, w.b1.RelationshipID)
	if !hasCrossReference(trB.CrossReferences, "adopts_evidence_from", "incoming", c1.RelationshipID, w.b1.RelationshipID) {
		t.Errorf("trace of B1: cross-references %+v lack the incoming adopts_evidence_from", trB.CrossReferences)
	}
	if len(trB.Evidence) != 1 || trB.Evidence[0].Adopted || trB.Evidence[0].ProfileID != e.B.ProfileID {
		t.Errorf("trace of B1: evidence %+v; want B's own support, not adopted", trB.Evidence)
	}
	e.checkLedger()
}

func hasCrossReference(xs []densemem.TraceCrossReference, kind, direction string, from, to densemem.RelationshipID) bool {
	return slices.ContainsFunc(xs, func(x densemem.TraceCrossReference) bool {
		return x.Kind == kind && x.Direction == direction && x.FromRelationshipID == from && x.ToRelationshipID == to
	})
}

// contentHash reads a fragment's stored content hash.
func contentHash(e *env, id densemem.FragmentID) string {
	e.t.Helper()
	got := e.ledger().Strings(`SELECT content_sha256 FROM evidence_fragments WHERE team_id = $1 AND fragment_id = $2`, e.team, id)
	if len(got) != 1 {
		e.t.Fatalf("fragment %s: %v", id, got)
	}
	return got[0]
}

// countingView is what the counting rules made of a correction world: the tiers and source counts
// of A1 and B1, each position's counted source groups as Recall shows them (by object), and the
// case's status after the nightly review past its due time.
type countingView struct {
	Tiers     map[string]string
	Sources   map[string]int
	Counted   map[string]int
	Nightly   string
	Resolved  int
	Overdue   int
	CaseFound bool
}

// countingAfter builds a correction world, lets C do what third does (nothing, adopt B's
// fragment, or state release with evidence of its own), and returns what the counting rules made
// of it.
func countingAfter(t *testing.T, third string) countingView {
	w := newCorrectionWorld(t)
	e := w.e
	e.step()
	switch third {
	case "adopt":
		c1 := only(t, e.rememberReq(e.C, adopting(release(), w.fragment, w.content)))
		if c1.Tier != "validated_claim" {
			t.Fatalf("C's adoption: tier %s, want validated_claim (one group)", c1.Tier)
		}
	case "own":
		e.remember(e.C, withContent(release(), "Ops confirmed: since 2026-05-01 the production environment deploys from the release branch."))
	}
	v := countingView{Tiers: map[string]string{}, Sources: map[string]int{}, Counted: map[string]int{}}
	for name, id := range map[string]densemem.RelationshipID{"A1": w.a1.RelationshipID, "B1": w.b1.RelationshipID} {
		r := e.trace(e.admin, id).Relationship
		v.Tiers[name], v.Sources[name] = string(r.Tier), r.SourceCount
	}
	r := e.recall(e.admin, "production", nil, nil)
	for _, c := range r.Conflicts {
		if c.ConflictID != w.caseID {
			continue
		}
		v.CaseFound = true
		for _, p := range c.Positions {
			v.Counted[p.Object.Name] = p.CountedSourceGroups
		}
	}
	pol, err := e.client.TeamPolicy(e.ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(w.openedAt.Add(pol.ReviewTTL).Sub(e.clock.Now()) + time.Minute)
	rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}})
	if err != nil {
		t.Fatal(err)
	}
	v.Resolved, v.Overdue = rep.Resolved, rep.Overdue
	v.Nightly = e.ledger().Strings(`SELECT status FROM conflict_cases WHERE team_id = $1 AND conflict_id = $2`, e.team, w.caseID)[0]
	e.checkLedger()
	return v
}

// TestInvariant12_AdoptionNeverCountsTwice: tiers, Recall's counted groups and the nightly decision
// are the same whether a second profile adopts B's fragment or not; a second profile with evidence
// of its own does change them (the test would see double counting).
func TestInvariant12_AdoptionNeverCountsTwice(t *testing.T) {
	t.Parallel()
	without, adopted, own := countingAfter(t, ""), countingAfter(t, "adopt"), countingAfter(t, "own")
	if !without.CaseFound || without.Counted["release"] != 1 || without.Nightly != "overdue" {
		t.Fatalf("without adoption: %+v; want the case found, release counted once, overdue", without)
	}
	if d := cmp.Diff(without, adopted); d != "" {
		t.Errorf("adoption changed what the counting rules decided (-without +with):\n%s", d)
	}
	if own.Counted["release"] != 2 || own.Nightly != "resolved" {
		t.Errorf("independent evidence: %+v; want release counted twice and the case resolved", own)
	}
}

// TestAdopt_AcceptingAnothersCorrection: "A adopts the exact evidence" is how a profile accepts
// another's correction: A states release with B's fragment and supersedes its own main; release
// still counts as one group, and the case, left without a disagreement, is dismissed.
func TestAdopt_AcceptingAnothersCorrection(t *testing.T) {
	t.Parallel()
	w := newCorrectionWorld(t)
	e := w.e
	e.step()
	req := adopting(release(), w.fragment, w.content)
	req.Proposal.Relationships[0].CorrectsRelationshipID = w.a1.RelationshipID
	a2 := only(t, e.rememberReq(e.A, req))
	if a2.Category != densemem.CategorySupersededPrior || !slices.Equal(a2.Related, []densemem.RelationshipID{w.a1.RelationshipID}) ||
		a2.Tier != "validated_claim" {
		t.Fatalf("A's adoption: %+v; want A1 superseded, validated_claim", a2)
	}
	if !slices.ContainsFunc(a2.CrossReferences, func(x densemem.CrossReferenceOutcome) bool {
		return x.Kind == "adopts_evidence_from" && x.ToRelationshipID == w.b1.RelationshipID
	}) {
		t.Errorf("A's adoption: cross-references %+v lack adopts_evidence_from B1", a2.CrossReferences)
	}
	if st, _, _, _ := e.relationshipState(w.a1.RelationshipID); st != "superseded" {
		t.Errorf("A1 is %s, want superseded", st)
	}
	if st := e.ledger().Case(w.caseID).Status; st != "dismissed" {
		t.Errorf("case %s is %s, want dismissed (one position left)", w.caseID, st)
	}
	for _, id := range []densemem.RelationshipID{w.b1.RelationshipID, a2.RelationshipID} {
		if r := e.trace(e.admin, id).Relationship; r.SourceCount != 1 || r.Tier != "validated_claim" {
			t.Errorf("%s: tier %s with %d sources; want validated_claim with one", id, r.Tier, r.SourceCount)
		}
	}
	e.checkLedger()
}

func TestAdopt_IdempotentReplay(t *testing.T) {
	t.Parallel()
	w := newCorrectionWorld(t)
	e := w.e
	e.step()
	req := adopting(release(), w.fragment, w.content)
	first := e.rememberReq(e.C, req)
	counts := e.counts()
	again := e.rememberReq(e.C, req)
	if !again.Replayed || again.IngestID != first.IngestID || !cmp.Equal(again.Fragments, first.Fragments) {
		t.Errorf("replay: %+v; want the first placement %+v replayed", again, first)
	}
	if d := countsDiff(counts, e.counts()); d != "" {
		t.Errorf("replay wrote rows:\n%s", d)
	}
	other := req
	other.Evidence = []densemem.EvidenceInput{{AdoptFragmentID: "frg_other"}}
	if _, err := e.client.Remember(e.ctx, e.C, other); !errors.Is(err, densemem.ErrIdempotencyConflict) {
		t.Errorf("same key, another adopted fragment: %v; want ErrIdempotencyConflict", err)
	}
}

func TestAdopt_BadInputWritesNothing(t *testing.T) {
	t.Parallel()
	w := newCorrectionWorld(t)
	e := w.e
	otherTeam := e.mustTeam("other")
	x := e.profileIn(otherTeam, "X", "read", "write")
	pX := e.rememberReq(x, deploy("staging", "develop").request(nextKey()))
	foreign := pX.Fragments[0].FragmentID

	set := func(mut func(*densemem.RememberRequest)) densemem.RememberRequest {
		req := adopting(release(), w.fragment, w.content)
		mut(&req)
		return req
	}
	cases := []struct {
		name string
		req  densemem.RememberRequest
		path string
	}{
		{"content", set(func(r *densemem.RememberRequest) { r.Evidence[0].Content = "x" }), "evidence[0].content"},
		{"source_type", set(func(r *densemem.RememberRequest) { r.Evidence[0].SourceType = "manual" }), "evidence[0].source_type"},
		{"authority", set(func(r *densemem.RememberRequest) { r.Evidence[0].Authority = "authoritative" }), "evidence[0].authority"},
		{"source_group", set(func(r *densemem.RememberRequest) { r.Evidence[0].SourceGroup = "g" }), "evidence[0].source_group"},
		{"source_key", set(func(r *densemem.RememberRequest) { r.Evidence[0].SourceKey = "k" }), "evidence[0].source_key"},
		{"source_revision", set(func(r *densemem.RememberRequest) { r.Evidence[0].SourceRevision = "2" }), "evidence[0].source_revision"},
		{"missing", set(func(r *densemem.RememberRequest) { r.Evidence[0].AdoptFragmentID = "frg_missing" }), "evidence[0].adopt_fragment_id"},
		{"another team's", set(func(r *densemem.RememberRequest) { r.Evidence[0].AdoptFragmentID = foreign }), "evidence[0].adopt_fragment_id"},
		{"past the content", set(func(r *densemem.RememberRequest) { r.Proposal.Relationships[0].Evidence[0].End = len(w.content) + 1 }),
			"proposal.relationships[0].evidence[0].end"},
		{"empty span", set(func(r *densemem.RememberRequest) { r.Proposal.Relationships[0].Evidence[0].End = 0 }),
			"proposal.relationships[0].evidence[0].end"},
	}
	counts := e.allCounts()
	for _, tc := range cases {
		_, err := e.client.Remember(e.ctx, e.C, tc.req)
		var ve *densemem.ValidationError
		if !errors.As(err, &ve) || !ve.Has(tc.path) {
			t.Errorf("%s: %v; want a *ValidationError at %s", tc.name, err, tc.path)
		}
	}
	// Another team's fragment and a missing one read the same: nothing says it exists elsewhere.
	_, errMissing := e.client.Remember(e.ctx, e.C, cases[6].req)
	_, errForeign := e.client.Remember(e.ctx, e.C, cases[7].req)
	if errMissing == nil || errForeign == nil {
		t.Fatal("want both refused")
	}
	if a, b := errMissing.Error(), errForeign.Error(); len(a)-len("frg_missing") != len(b)-len(string(foreign)) {
		t.Errorf("a missing and a foreign fragment are told apart:\n%s\n%s", a, b)
	}
	if d := countsDiff(counts, e.allCounts()); d != "" {
		t.Errorf("refused adoptions wrote rows:\n%s", d)
	}
	// Resolve and the identity calls store their own evidence.
	_, err := e.client.Resolve(e.ctx, e.A, densemem.ResolveRequest{IngestID: "ing_x", PlacementItemID: "item_relationship_1",
		Action: densemem.ActionAddEvidence, IdempotencyKey: nextKey(), Evidence: []densemem.EvidenceInput{{AdoptFragmentID: w.fragment}}})
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) || !ve.Has("evidence[0].adopt_fragment_id") {
		t.Errorf("Resolve with adopt_fragment_id: %v; want a *ValidationError at evidence[0].adopt_fragment_id", err)
	}
}

// TestAdopt_ErasedFragmentIsNotAdoptable: an erased fragment has no content to verify a claim
// against: adopting it is the same validation problem as a missing one, and nothing is written.
func TestAdopt_ErasedFragmentIsNotAdoptable(t *testing.T) {
	t.Parallel()
	w := newCorrectionWorld(t)
	e := w.e
	if _, err := e.client.Erase(e.ctx, densemem.HostPrincipal(e.team), densemem.EraseRequest{
		FragmentIDs: []densemem.FragmentID{w.fragment}, Reason: "data subject request", IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	before := e.allCounts()
	_, err := e.client.Remember(e.ctx, e.C, adopting(release(), w.fragment, w.content))
	if !isFieldProblem(err, "evidence[0].adopt_fragment_id") {
		t.Errorf("adopting an erased fragment: %v, want a validation error on evidence[0].adopt_fragment_id", err)
	}
	if d := countDelta(before, e.allCounts()); len(d) > 0 {
		for table, n := range d {
			if n != 0 {
				t.Errorf("%s grew by %d after a refused adoption", table, n)
			}
		}
	}
}

// adoptingAll is worksOnRequest citing fragment, another profile's stored evidence, instead of new
// evidence.
func adoptingAll(req densemem.RememberRequest, fragment densemem.FragmentID) densemem.RememberRequest {
	n := len(req.Evidence[0].Content)
	req.Evidence = []densemem.EvidenceInput{{AdoptFragmentID: fragment}}
	for i := range req.Proposal.Relationships {
		req.Proposal.Relationships[i].Evidence = []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: n}}
	}
	return req
}

// TestAdopt_RowsBoundedWhateverTheEarlierAdopters: 25 profiles adopt one fragment of B's stating 20
// relationships; every adopter writes the same number of rows — one adopts_evidence_from and one
// confirms per relationship, both to B's relationship — whatever the number of adopters before it,
// and Trace of an adopter's relationship still names the relationship whose evidence it adopted.
func TestAdopt_RowsBoundedWhateverTheEarlierAdopters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const rels, adopters = 20, 25
	src := worksOnRequest(nextKey(), "procyon", projects(0, rels)...)
	first := e.rememberReq(e.B, src)
	fragment := first.Fragments[0].FragmentID
	tables := []string{"relationship_cross_references", "support_links", "relationship_transitions", "relationships"}
	var perAdopter []map[string]int
	var last *densemem.Placement
	for i := range adopters {
		p := e.mustProfile(fmt.Sprintf("adopter-%02d", i), "read", "write")
		before := e.ledger().Counts(tables)
		req := src
		req.IdempotencyKey = nextKey()
		last = e.rememberReq(p, adoptingAll(req, fragment))
		after := e.ledger().Counts(tables)
		rows := map[string]int{}
		for _, tb := range tables {
			rows[tb] = after[tb] - before[tb]
		}
		perAdopter = append(perAdopter, rows)
	}
	want := map[string]int{"relationship_cross_references": 2 * rels, "support_links": rels, "relationship_transitions": rels,
		"relationships": rels}
	for i, rows := range perAdopter {
		if d := cmp.Diff(want, rows); d != "" {
			t.Errorf("adopter %d wrote (-want +got):\n%s", i+1, d)
		}
	}
	for i, o := range last.RelationshipOutcomes {
		var kinds []string
		for _, x := range o.CrossReferences {
			kinds = append(kinds, x.Kind+" "+string(x.ToRelationshipID))
		}
		slices.Sort(kinds)
		b := first.RelationshipOutcomes[i].RelationshipID
		if d := cmp.Diff([]string{"adopts_evidence_from " + string(b), "confirms " + string(b)}, kinds); d != "" {
			t.Errorf("25th adopter's %s: cross-references (-want +got):\n%s", o.ProposalID, d)
		}
	}
	tr := e.trace(e.admin, last.RelationshipOutcomes[0].RelationshipID)
	if !hasCrossReference(tr.CrossReferences, "adopts_evidence_from", "outgoing", last.RelationshipOutcomes[0].RelationshipID,
		first.RelationshipOutcomes[0].RelationshipID) {
		t.Errorf("trace of the 25th adopter's relationship: cross-references %+v lack adopts_evidence_from B's", tr.CrossReferences)
	}
}

// outcomeLog describes a story's outcomes with every relationship named by the caller and proposal
// that placed it first, so two runs of one story compare whatever their IDs.
type outcomeLog struct {
	labels map[densemem.RelationshipID]string
	lines  []string
}

// record adds the outcomes of who's placement pl.
func (l *outcomeLog) record(who string, pl *densemem.Placement) {
	if l.labels == nil {
		l.labels = map[densemem.RelationshipID]string{}
	}
	for _, o := range pl.RelationshipOutcomes {
		if _, ok := l.labels[o.RelationshipID]; !ok && o.RelationshipID != "" {
			l.labels[o.RelationshipID] = who + ":" + o.ProposalID
		}
	}
	for _, o := range pl.RelationshipOutcomes {
		var xrefs []string
		for _, x := range o.CrossReferences {
			xrefs = append(xrefs, x.Kind+"->"+l.labels[x.ToRelationshipID])
		}
		slices.Sort(xrefs)
		l.lines = append(l.lines, fmt.Sprintf("%s %s: %s %s as %s [%s]", who, o.ProposalID, o.Category, o.Status,
			l.labels[o.RelationshipID], strings.Join(xrefs, " ")))
	}
}

// adoptionStory runs adoptions of one fragment of B's ("nova works on project-000 … project-003") by
// six profiles — all four statements; one statement from the fragment and one from the adopter's own
// evidence; after B forgot one of its statements; the first adopter again, and the second again for
// the statements B still holds — beside C's own statement
// of one of the projects, and returns each call's outcomes with every relationship named by its
// owner and proposal. whole reads the keys' live relationships whole, as before decision 155.
func adoptionStory(t *testing.T, whole bool) []string {
	e := newEnv(t)
	if whole {
		densemem.PlaceReadingLiveKeysWhole(e.client)
	}
	var log outcomeLog
	record := log.record
	src := worksOnRequest(nextKey(), "nova", projects(0, 4)...)
	first := e.rememberReq(e.B, src)
	record("B", first)
	fragment := first.Fragments[0].FragmentID
	record("C", e.rememberReq(e.C, worksOnFact("nova", "project-000").request(nextKey())))
	adopters := make([]densemem.Principal, 6)
	for i := range adopters {
		adopters[i] = e.mustProfile(fmt.Sprintf("adopter-%d", i), "read", "write")
	}
	adopt := func(i int, req densemem.RememberRequest) {
		req.IdempotencyKey = nextKey()
		record(fmt.Sprintf("adopter-%d", i), e.rememberReq(adopters[i], req))
	}
	for i := range 3 {
		adopt(i, adoptingAll(src, fragment))
	}
	// One statement from the fragment, one from the adopter's own evidence.
	mixed := adoptingAll(src, fragment)
	mixed.Proposal.Relationships = mixed.Proposal.Relationships[:2]
	own := "nova works on project-001, says adopter-3."
	mixed.Evidence = append(mixed.Evidence, densemem.EvidenceInput{Content: own, SourceType: "manual"})
	mixed.Proposal.Relationships[1].Evidence = []densemem.Citation{{EvidenceIndex: 1, Start: 0, End: len(own)}}
	adopt(3, mixed)
	// B forgets its statement of project-002: an adopter of it links to another adopter's.
	if _, err := e.client.Forget(e.ctx, e.B, densemem.ForgetRequest{RelationshipID: first.RelationshipOutcomes[2].RelationshipID,
		IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	adopt(4, adoptingAll(src, fragment))
	adopt(0, adoptingAll(src, fragment))
	// The second adopter again, of the statements B still holds: its own relationships are read.
	again := adoptingAll(src, fragment)
	again.Proposal.Relationships = again.Proposal.Relationships[:2]
	adopt(1, again)
	e.checkLedger()
	return log.lines
}

// adoptionPolarityStory: B's fragment says nova works on project-000 and no longer on project-001,
// and B states the first and the negation of the second. One adopter states, from the fragment's
// first sentence, that nova works on project-001 (no statement of B's to link to by object and
// polarity: its keys are read whole); another adopts both of B's statements, beside the first
// adopter's statement of the other polarity. It returns the calls' outcomes as adoptionStory does.
func adoptionPolarityStory(t *testing.T, whole bool) []string {
	e := newEnv(t)
	if whole {
		densemem.PlaceReadingLiveKeysWhole(e.client)
	}
	content := "nova works on project-000 and project-001. Since May nova does not work on project-001."
	cut := strings.Index(content, "Since")
	statement := func(id, project string, pol densemem.Polarity, start, end int) densemem.ProposedRelationship {
		return densemem.ProposedRelationship{ProposalID: id, SubjectRef: "s", Predicate: "works_on", ObjectRef: project, Polarity: pol,
			Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: start, End: end}}}
	}
	entities := []densemem.ProposedEntity{{Ref: "s", Name: "nova", EntityKind: "person"},
		{Ref: "p0", Name: "project-000", EntityKind: "project"}, {Ref: "p1", Name: "project-001", EntityKind: "project"}}
	src := densemem.RememberRequest{IdempotencyKey: nextKey(), Evidence: []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
		Proposal: densemem.Proposal{Entities: entities, Relationships: []densemem.ProposedRelationship{
			statement("b0", "p0", "+", 0, cut), statement("b1", "p1", "-", cut, len(content))}}}
	var log outcomeLog
	record := log.record
	first := e.rememberReq(e.B, src)
	record("B", first)
	adopt := func(who string, p densemem.Principal, rels ...densemem.ProposedRelationship) {
		req := densemem.RememberRequest{IdempotencyKey: nextKey(), Evidence: []densemem.EvidenceInput{{AdoptFragmentID: first.Fragments[0].FragmentID}},
			Proposal: densemem.Proposal{Entities: entities, Relationships: rels}}
		record(who, e.rememberReq(p, req))
	}
	adopt("A", e.A, statement("a1", "p1", "+", 0, cut))
	adopt("C", e.C, statement("c0", "p0", "+", 0, cut), statement("c1", "p1", "-", cut, len(content)))
	e.checkLedger()
	return log.lines
}

// TestAdopt_NarrowedReadDecidesAsWholeKey: an adopting Remember reads its keys for its objects and
// leaves out the fragment's other adopters (decision 155), and decides exactly as when it reads
// them whole — categories, statuses and every cross-reference's target.
func TestAdopt_NarrowedReadDecidesAsWholeKey(t *testing.T) {
	t.Parallel()
	for _, story := range []struct {
		name string
		run  func(t *testing.T, whole bool) []string
		min  int
	}{{"adopters", adoptionStory, 20}, {"polarities", adoptionPolarityStory, 5}} {
		var narrowed, whole []string
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); narrowed = story.run(t, false) }()
		go func() { defer wg.Done(); whole = story.run(t, true) }()
		wg.Wait()
		if d := cmp.Diff(whole, narrowed); d != "" {
			t.Errorf("%s: adoptions (-whole keys +narrowed):\n%s", story.name, d)
		}
		if len(whole) < story.min {
			t.Errorf("%s: the story placed %d outcomes, want every call's", story.name, len(whole))
		}
	}
}

// TestAdopt_DoesNotLockOtherAdopters: with another adopter's relationship held FOR UPDATE, an
// adopter of the same fragment is placed (its read leaves that relationship out), and one whose
// client reads keys whole gives up on the lock.
func TestAdopt_DoesNotLockOtherAdopters(t *testing.T) {
	t.Parallel()
	for _, whole := range []bool{false, true} {
		t.Run(fmt.Sprintf("whole=%v", whole), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			src := worksOnRequest(nextKey(), "nova", projects(0, 2)...)
			fragment := e.rememberReq(e.B, src).Fragments[0].FragmentID
			req := adoptingAll(src, fragment)
			req.IdempotencyKey = nextKey()
			held := e.rememberReq(e.C, req).RelationshipOutcomes[0].RelationshipID
			client := e.lockTimeoutClient()
			if whole {
				densemem.PlaceReadingWholeKeys(client)
			}
			holder, err := e.pool.Begin(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = holder.Rollback(context.WithoutCancel(e.ctx)) }()
			if _, err := holder.Exec(e.ctx, `SELECT 1 FROM relationships WHERE relationship_id = $1 FOR UPDATE`, held); err != nil {
				t.Fatal(err)
			}
			req.IdempotencyKey = nextKey()
			_, err = client.Remember(e.ctx, e.A, req)
			if whole != (err != nil) {
				t.Errorf("reading keys whole %v: Remember with another adopter's relationship locked returned %v", whole, err)
			}
		})
	}
}
