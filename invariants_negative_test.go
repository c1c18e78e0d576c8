package densemem_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem"
)

// The refusing side of invariants 6, 13 and 19 (issue 20 item 6): what each must not do, so that a
// rule weakened in the code fails a test named after its invariant.

// ---- Invariant 6 ----

// TestInvariant6_SplitOrMergeSelectingAnotherProfilesObservationMovesNothing: A's split or merge of
// the shared entity whose selection names, next to A's own observation, B's observation on it is
// refused with ErrNotOwner, and nothing moves: not B's observation, not A's own one either. Every
// row of the database is as it was, each mention still resolves to the shared entity (the ledger
// window), A's and B's previews list the same rows as before, and B's relationship is unchanged in
// Trace. A's split of its own observation alone then goes through, and still leaves B's rows alone.
func TestInvariant6_SplitOrMergeSelectingAnotherProfilesObservationMovesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	other := e.place(e.A, works("Marcus", "Billing").request(nextKey()))
	previewOf := func(p densemem.Principal) *densemem.ReassignPreview {
		t.Helper()
		pv, err := e.client.PreviewSplit(e.ctx, p, densemem.SplitRequest{EntityID: m.mark})
		if err != nil {
			t.Fatalf("preview split for %s: %v", p.ProfileID, err)
		}
		return pv
	}
	aPreview, bPreview := previewOf(e.A), previewOf(e.B)
	bTrace := e.trace(e.B, m.bDM.rel).Relationship
	var before map[string][]string
	e.snapshot(func(l ledgerView) {
		before = map[string][]string{}
		for _, table := range l.Tables() {
			before[table] = l.Rows(table)
		}
	})

	mixed := [][]string{{m.aBilling.obs, m.bDM.obs}, {m.bDM.obs, m.aBilling.obs}, {m.aDense.obs, m.aBilling.obs, m.bDM.obs}}
	for _, obs := range mixed {
		split := splitOff(m.mark, obs...)
		merge := densemem.MergeRequest{FromEntityID: m.mark, IntoEntityID: other.subject, ObservationIDs: obs,
			Evidence: split.Evidence, Reason: "one person after all", IdempotencyKey: nextKey()}
		for name, call := range map[string]func() error{
			"split":         func() error { _, err := e.client.Split(e.ctx, e.A, split); return err },
			"preview split": func() error { _, err := e.client.PreviewSplit(e.ctx, e.A, split); return err },
			"merge":         func() error { _, err := e.client.Merge(e.ctx, e.A, merge); return err },
			"preview merge": func() error { _, err := e.client.PreviewMerge(e.ctx, e.A, merge); return err },
		} {
			if err := call(); !errors.Is(err, densemem.ErrNotOwner) {
				t.Errorf("A's %s selecting %v (B's %s among them): %v, want ErrNotOwner", name, obs, m.bDM.obs, err)
			}
		}
	}

	var after map[string][]string
	e.snapshot(func(l ledgerView) {
		after = map[string][]string{}
		for _, table := range l.Tables() {
			after[table] = l.Rows(table)
		}
	})
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("refused splits and merges changed rows (-before +after):\n%s", d)
	}
	l := e.ledger()
	for _, obs := range []string{m.aDense.obs, m.aBilling.obs, m.bDM.obs} {
		if got := l.currentEntity(obs, "s"); got != string(m.mark) {
			t.Errorf("observation %s resolves to %s after the refusals, want %s", obs, got, m.mark)
		}
	}
	if d := diff(aPreview, previewOf(e.A)); d != "" {
		t.Errorf("A's preview changed (-before +after):\n%s", d)
	}
	if d := diff(bPreview, previewOf(e.B)); d != "" {
		t.Errorf("B's preview changed (-before +after):\n%s", d)
	}
	if d := diff(bTrace, e.trace(e.B, m.bDM.rel).Relationship); d != "" {
		t.Errorf("B's relationship changed in Trace (-before +after):\n%s", d)
	}

	// The allowed path next to it: A's own observation alone moves, B's rows stay.
	var bRows map[string]map[string]string
	e.snapshot(func(l ledgerView) { bRows = l.ProfileRows(e.B.ProfileID) })
	res := e.split(e.A, splitOff(m.mark, m.aBilling.obs))
	if got := l.currentEntity(m.aBilling.obs, "s"); got != string(res.ToEntityID) {
		t.Errorf("A's own selected observation resolves to %s, want the new entity %s", got, res.ToEntityID)
	}
	if got := l.currentEntity(m.bDM.obs, "s"); got != string(m.mark) {
		t.Errorf("B's observation resolves to %s after A's split, want %s", got, m.mark)
	}
	var bAfter map[string]map[string]string
	e.snapshot(func(l ledgerView) { bAfter = l.ProfileRows(e.B.ProfileID) })
	if d := diff(bRows, bAfter); d != "" {
		t.Errorf("A's split changed B's rows (-before +after):\n%s", d)
	}
	e.checkLedger()
}

// TestInvariant6_SplitSelectingOnlyAnotherProfilesObservationMovesNothing: a profile that holds
// nothing on the entity (C) and one that holds something (A) both fail to split off an observation of
// B's alone, whatever it is; B's mention stays where it was.
func TestInvariant6_SplitSelectingOnlyAnotherProfilesObservationMovesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.twoMarks()
	before := e.allCounts()
	for _, p := range []densemem.Principal{e.A, e.C} {
		if _, err := e.client.Split(e.ctx, p, splitOff(m.mark, m.bDM.obs)); !errors.Is(err, densemem.ErrNotOwner) {
			t.Errorf("%s's split of B's observation: %v, want ErrNotOwner", p.ProfileID, err)
		}
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("refused splits wrote rows: %s", d)
	}
	if got := e.ledger().currentEntity(m.bDM.obs, "s"); got != string(m.mark) {
		t.Errorf("B's observation resolves to %s, want %s", got, m.mark)
	}
}

// ---- Invariant 13 ----

// TestInvariant13_RevisionRetiresAFragmentAnotherProfileAdopted: A's source fragment says that
// production deploys from main and staging from develop; A states the first. B adopts the fragment
// (evidence adopt_fragment_id) for the same statement, next to a source of its own, and C adopts it
// for the second, on a key where A holds nothing. A profile-local correction by A (A corrects its own
// statement with new evidence) changes none of B's or C's rows: their relationships, supports and
// transitions are byte for byte what they were, and Trace still shows the adopted fragment effective.
// A's source revision then retires that fragment team-wide: the system recomputes B's and C's
// relationships in the revision's transaction — B's falls from fact to validated_claim on its own
// source, C's, left without effective support, to pending_evidence and out of Recall — each by a
// system transition naming the retirement, and Trace marks the adopted support retired by A's
// revision.
func TestInvariant13_RevisionRetiresAFragmentAnotherProfileAdopted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cut := strings.Index(twoDeploysContent, " and ")
	mainSpan := densemem.Citation{EvidenceIndex: 0, Start: 0, End: cut}
	stagingSpan := densemem.Citation{EvidenceIndex: 0, Start: cut + len(" and "), End: len(twoDeploysContent)}
	cite := func(req densemem.RememberRequest, span densemem.Citation) densemem.RememberRequest {
		req.Proposal.Relationships[0].Evidence = []densemem.Citation{span}
		return req
	}
	e.step()
	pA := e.rememberReq(e.A, cite(sourced(withContent(deploy("production", "main"), twoDeploysContent), docKey, "v1", ""), mainSpan))
	a1, fragment := only(t, pA), pA.Fragments[0].FragmentID
	e.step()
	bReq := cite(adopting(deploy("production", "main"), fragment, twoDeploysContent), mainSpan)
	bReq = withSecondSource(bReq, "Mail from ops: the production environment deploys from the main branch.", "mail:ops")
	b1 := only(t, e.rememberReq(e.B, bReq))
	e.step()
	c1 := only(t, e.rememberReq(e.C, cite(adopting(deploy("staging", "develop"), fragment, twoDeploysContent), stagingSpan)))
	if b1.Tier != "fact" || c1.Tier != "validated_claim" || b1.Status != "active" || c1.Status != "active" {
		t.Fatalf("adoptions: B %s/%s (%s), C %s/%s (%s); want active fact (two groups) and active validated_claim", b1.Status,
			b1.Tier, b1.Reason, c1.Status, c1.Tier, c1.Reason)
	}
	adopted := func(p densemem.Principal, id densemem.RelationshipID) densemem.TraceEvidence {
		t.Helper()
		for _, ev := range e.trace(p, id).Evidence {
			if ev.FragmentID == fragment {
				if !ev.Adopted || ev.AuthorProfileID != e.A.ProfileID || ev.ProfileID != p.ProfileID {
					t.Errorf("%s: evidence %+v, want A's fragment adopted by %s", id, ev, p.ProfileID)
				}
				return ev
			}
		}
		t.Fatalf("%s: Trace lists no support from the adopted fragment %s", id, fragment)
		return densemem.TraceEvidence{}
	}
	othersRows := func() map[string]map[string]map[string]string {
		out := map[string]map[string]map[string]string{}
		e.snapshot(func(l ledgerView) {
			out["B"], out["C"] = l.ProfileRows(e.B.ProfileID), l.ProfileRows(e.C.ProfileID)
		})
		return out
	}

	// 1. A's profile-local correction: A's statement is superseded by A's new one; B's and C's are not touched.
	before := othersRows()
	e.step()
	a2 := only(t, e.rememberReq(e.A, correcting(deploy("production", "release").since(date("2026-05-01")), a1.RelationshipID)))
	if a2.Category != densemem.CategorySupersededPrior || a2.Status != "active" {
		t.Fatalf("A's correction: %s/%s (%s), want A1 superseded", a2.Category, a2.Status, a2.Reason)
	}
	if st, _, _, _ := e.relationshipState(a1.RelationshipID); st != "superseded" {
		t.Fatalf("A1 after A's correction: %s, want superseded", st)
	}
	if d := diff(before, othersRows()); d != "" {
		t.Errorf("A's profile-local correction changed B's or C's rows (-before +after):\n%s", d)
	}
	for p, id := range map[densemem.Principal]densemem.RelationshipID{e.B: b1.RelationshipID, e.C: c1.RelationshipID} {
		if ev := adopted(p, id); ev.Retired != nil {
			t.Errorf("%s: after A's correction the adopted fragment is retired (%+v): a correction retires nothing", id, ev.Retired)
		}
	}
	if n := e.count("fragment_retirements"); n != 0 {
		t.Errorf("A's correction wrote %d fragment retirements, want none", n)
	}

	// 2. A's source revision retires the fragment for every profile that adopted it. Its new revision
	// states nothing on production's or staging's key.
	at := e.step()
	v2 := withContent(deploy("qa", "main"), "The qa environment deploys from the main branch.")
	pl := e.rememberReq(e.A, sourced(v2, docKey, "v2", "v1"))
	if len(pl.Retired) != 1 || pl.Retired[0].FragmentID != fragment {
		t.Fatalf("the revision retired %+v, want exactly A's fragment %s", pl.Retired, fragment)
	}
	recomputed := map[densemem.RelationshipID]bool{}
	for _, ch := range pl.Recomputed {
		recomputed[ch.RelationshipID] = true
	}
	for _, id := range []densemem.RelationshipID{b1.RelationshipID, c1.RelationshipID} {
		if !recomputed[id] {
			t.Errorf("the revision's recomputed relationships %+v lack %s", pl.Recomputed, id)
		}
	}
	retirement := pl.Retired[0].RetirementID
	for _, c := range []struct {
		p            densemem.Principal
		id           densemem.RelationshipID
		status, tier string
		sources      int
	}{
		{e.B, b1.RelationshipID, "active", "validated_claim", 1},
		{e.C, c1.RelationshipID, "pending_evidence", "candidate", 0},
	} {
		tr := e.trace(c.p, c.id)
		r := tr.Relationship
		if string(r.Status) != c.status || string(r.Tier) != c.tier || r.SourceCount != c.sources || r.OwnerProfileID != c.p.ProfileID {
			t.Errorf("%s after A's revision: %s %s with %d sources (owner %s); want %s %s with %d, still %s's", c.id, r.Status,
				r.Tier, r.SourceCount, r.OwnerProfileID, c.status, c.tier, c.sources, c.p.ProfileID)
		}
		last := tr.Transitions[len(tr.Transitions)-1]
		if last.ActorKind != "system" || last.Reason != "support_retired:"+retirement || !last.CreatedAt.Equal(at) {
			t.Errorf("%s: last transition %+v, want the system's at %v naming retirement %s", c.id, last, at, retirement)
		}
		ev := adopted(c.p, c.id)
		if ev.Retired == nil || ev.Retired.RetirementID != retirement || ev.Retired.Cause != "source_revision" ||
			ev.Retired.ActorProfileID != e.A.ProfileID {
			t.Errorf("%s: adopted evidence retired %+v, want retirement %s by A's source revision", c.id, ev.Retired, retirement)
		}
	}
	for _, ev := range e.trace(e.B, b1.RelationshipID).Evidence {
		if ev.FragmentID != fragment && ev.Retired != nil {
			t.Errorf("B's own source %s was retired by A's revision: %+v", ev.FragmentID, ev.Retired)
		}
	}
	if e.recalled(e.admin, "staging", c1.RelationshipID) {
		t.Errorf("recall of staging still returns C's %s, left without effective support", c1.RelationshipID)
	}
	e.checkLedger()
}

// ---- Invariant 19 ----

// floorCase opens a case before its deadline on production deploys_from: A states main backed by
// mainGroups independent sources (0: by one source only, which backs release too, so it counts for
// neither), and B states release since the cutoff backed by releaseGroups independent sources (plus
// that shared one when mainGroups is 0). It checks the groups Recall counts for each position and
// returns A's relationship and the case.
func (e *env) floorCase(mainGroups, releaseGroups int) (densemem.RelationshipID, string) {
	e.t.Helper()
	main := deploy("production", "main")
	release := deploy("production", "release").since(releaseCutoff)
	statement := func(f fact, sources []string) densemem.RememberRequest {
		req := f.request(nextKey())
		req.Evidence, req.Proposal.Relationships[0].Evidence = nil, nil
		for i, src := range sources {
			content := src + ": " + f.content
			req.Evidence = append(req.Evidence, densemem.EvidenceInput{Content: content, SourceType: "manual", SourceGroup: src})
			req.Proposal.Relationships[0].Evidence = append(req.Proposal.Relationships[0].Evidence,
				densemem.Citation{EvidenceIndex: i, Start: 0, End: len(content)})
		}
		return req
	}
	sources := func(side string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("%s-source-%d", side, i+1))
		}
		return out
	}
	mainSources, releaseSources := sources("main", mainGroups), sources("release", releaseGroups)
	if mainGroups == 0 {
		mainSources, releaseSources = []string{"ops-wiki"}, append(releaseSources, "ops-wiki")
	}
	e.step()
	a := only(e.t, e.rememberReq(e.A, statement(main, mainSources)))
	e.step()
	b := only(e.t, e.rememberReq(e.B, statement(release, releaseSources)))
	if a.Status != "active" || b.Status != "active" || b.Conflict == nil {
		e.t.Fatalf("A's main %s (%s), B's release %s (%s) with conflict %+v: want both active and a case", a.Status, a.Reason,
			b.Status, b.Reason, b.Conflict)
	}
	counted := map[string]int{}
	for _, c := range e.recall(e.admin, "production", nil, nil).Conflicts {
		if c.ConflictID == b.Conflict.ConflictID {
			for _, p := range c.Positions {
				counted[p.Object.Name] = p.CountedSourceGroups
			}
		}
	}
	if d := cmp.Diff(map[string]int{"main": mainGroups, "release": releaseGroups}, counted); d != "" {
		e.t.Fatalf("counted source groups by position (-want +got):\n%s", d)
	}
	return a.RelationshipID, b.Conflict.ConflictID
}

// TestInvariant19_PreDeadlineFloorNeedsFourGroupsAndMoreThanThreeQuarters: before the review
// deadline the real nightly run resolves a case only when one position has at least four independent
// source groups and more than 75% of the counted ones: 3 against 0 (all of them, one group short), 4
// against 2 (67%) and 6 against 2 (exactly 75%) stay open, with A's statement current and no
// resolution event; 4 against 1 (80%) resolves, superseding A's statement by the reviewer.
func TestInvariant19_PreDeadlineFloorNeedsFourGroupsAndMoreThanThreeQuarters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		main, release int
		resolves      bool
	}{
		{"3 groups against 0", 0, 3, false},
		{"4 groups against 2 (67%)", 2, 4, false},
		{"6 groups against 2 (exactly 75%)", 2, 6, false},
		{"4 groups against 1 (80%)", 1, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a1, caseID := e.floorCase(c.main, c.release)
			rep := e.reviewTeamAs("w1")
			cs := e.ledger().Case(caseID)
			if !e.clock.Now().Before(cs.ReviewDueAt) {
				t.Fatalf("the run at %v is not before the deadline %v", e.clock.Now(), cs.ReviewDueAt)
			}
			status, _, validTo, _ := e.relationshipState(a1)
			reasons := strings.Join(cs.Reasons(), ",")
			if !c.resolves {
				resolvedEvent := slices.ContainsFunc(cs.Events, func(ev caseEvent) bool { return ev.Resulting == "resolved" })
				if rep.Claimed != 1 || rep.KeptOpen != 1 || rep.Resolved != 0 || cs.Status != "open" || status != "active" ||
					validTo != nil || resolvedEvent {
					t.Errorf("report %+v; case %s (events %s); A's main %s valid_to %v: want kept open, A's main current", rep,
						cs.Status, reasons, status, validTo)
				}
				return
			}
			if rep.Resolved != 1 || cs.Status != "resolved" || status != "superseded" || !strings.HasSuffix(reasons, "pre_ttl_floor_met") {
				t.Errorf("report %+v; case %s (events %s); A's main %s: want resolved by the pre-deadline floor, A's main superseded",
					rep, cs.Status, reasons, status)
			}
			trs := e.trace(e.admin, a1).Transitions
			if last := trs[len(trs)-1]; last.ToStatus != "superseded" || last.ActorKind != reviewerActorKind {
				t.Errorf("A's main: last transition %+v, want the reviewer's supersession", last)
			}
		})
	}
}
