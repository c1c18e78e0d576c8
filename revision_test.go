package densemem_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// Source revisions (DESIGN §13, decisions 111–114): the owner of a source_key submits a newer
// revision naming the one it replaces; the previous revision's fragments retire for the whole team,
// every relationship they supported is recomputed by system transitions in the same transaction,
// and nothing is edited.

// docKey is the versioned source of the tests: the deployment guide.
const docKey = "doc:deployment-guide"

// sourced is f's request with its evidence from revision rev of source key (replacing previous,
// when given).
func sourced(f fact, key, rev, previous string) densemem.RememberRequest {
	req := f.request(nextKey())
	req.Evidence[0].SourceKey, req.Evidence[0].SourceRevision, req.Evidence[0].PreviousSourceRevision = key, rev, previous
	return req
}

// withSecondSource adds to req a second evidence item from source group group, with content, cited by
// its relationship too.
func withSecondSource(req densemem.RememberRequest, content, group string) densemem.RememberRequest {
	req.Evidence = append(req.Evidence, densemem.EvidenceInput{Content: content, SourceType: "manual", SourceGroup: group})
	r := &req.Proposal.Relationships[0]
	r.Evidence = append(r.Evidence, densemem.Citation{EvidenceIndex: 1, Start: 0, End: len(content)})
	return req
}

// recalled reports whether a recall of query by p returns id.
func (e *env) recalled(p densemem.Principal, query string, id densemem.RelationshipID) bool {
	e.t.Helper()
	return resultFor(e.recall(p, query, nil, nil), id) != nil
}

// TestInvariant13_SourceRevisionRetiresTeamWide: A, B and C support relationships from revision v1 of
// one source (A stored it first: A owns it); B's and C's copies are their own fragments of the same
// source_key. A's revision v2 retires every v1 fragment, A's, B's and C's, by one retirement row
// each; A's and B's relationships, left without effective support, drop to pending_evidence by
// system transitions naming the retirement, and leave Recall; C's, still supported by an independent
// source, stays current as a validated claim instead of a fact. Trace still shows each retired
// fragment, marked retired, with why and by which fragment. No stored row is edited: every
// append-only ledger row before the revision is there after it, unchanged.
func TestInvariant13_SourceRevisionRetiresTeamWide(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v1 := deploy("production", "main")
	e.step()
	rA := only(t, e.rememberReq(e.A, sourced(v1, docKey, "v1", "")))
	e.step()
	rB := only(t, e.rememberReq(e.B, sourced(v1, docKey, "v1", "")))
	e.step()
	staging := withContent(deploy("staging", "main"), "The staging environment deploys from the main branch.")
	rC := only(t, e.rememberReq(e.C, withSecondSource(sourced(staging, docKey, "v1", ""),
		"Mail from ops: staging deploys from the main branch.", "mail:ops")))
	if rA.Tier != "validated_claim" || rB.Tier != "validated_claim" || rC.Tier != "fact" {
		t.Fatalf("before the revision: tiers %s, %s, %s; want validated_claim, validated_claim, fact", rA.Tier, rB.Tier, rC.Tier)
	}
	if !e.recalled(e.C, "production", rA.RelationshipID) || !e.recalled(e.C, "production", rB.RelationshipID) {
		t.Fatal("before the revision, recall of production misses A's or B's relationship")
	}
	var ledgers map[string]map[string]string
	var before map[string]int
	e.snapshot(func(l ledgerView) { before, ledgers = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })

	at := e.step()
	v2 := withContent(deploy("production", "release"), "The production environment deploys from the release branch.")
	pl := e.rememberReq(e.A, sourced(v2, docKey, "v2", "v1"))
	newRel := only(t, pl)
	if len(pl.Retired) != 3 || len(pl.Recomputed) != 3 {
		t.Fatalf("the revision retired %+v and recomputed %+v; want 3 fragments and 3 relationships", pl.Retired, pl.Recomputed)
	}
	if newRel.Status != "active" {
		t.Errorf("A's new revision's statement: %s (%s), want active", newRel.Status, newRel.Reason)
	}
	newFragment := pl.Fragments[0].FragmentID
	retirementOf := map[densemem.FragmentID]string{}
	for _, r := range pl.Retired {
		if r.ReplacedBy != newFragment {
			t.Errorf("fragment %s replaced by %s, want the new revision's %s", r.FragmentID, r.ReplacedBy, newFragment)
		}
		retirementOf[r.FragmentID] = r.RetirementID
	}

	// Tiers and statuses, by system transitions naming the retirement.
	e.checkRetired(pl, retirementOf, at, map[densemem.RelationshipID][2]string{
		rA.RelationshipID: {"pending_evidence", "candidate"}, rB.RelationshipID: {"pending_evidence", "candidate"},
		rC.RelationshipID: {"active", "validated_claim"}})
	if tr := e.trace(e.C, rC.RelationshipID); tr.Relationship.SourceCount != 1 || tr.Evidence[1].Retired != nil {
		t.Errorf("C's relationship counts %d source groups (evidence %+v), want 1: the mail", tr.Relationship.SourceCount, tr.Evidence)
	}

	// Recall stops returning what lost its support; the new revision's statement is there.
	got := recallIDs(e.recall(e.C, "production", nil, nil))
	if slices.Contains(got, rA.RelationshipID) || slices.Contains(got, rB.RelationshipID) || !slices.Contains(got, newRel.RelationshipID) {
		t.Errorf("recall of production after the revision: %v; want %s and neither %s nor %s", got, newRel.RelationshipID,
			rA.RelationshipID, rB.RelationshipID)
	}
	if res := resultFor(e.recall(e.A, "staging", nil, nil), rC.RelationshipID); res == nil || len(res.Evidence) != 1 {
		t.Errorf("recall of staging: %+v, want C's relationship with its one effective excerpt", res)
	}

	// Nothing edited: every ledger row is as it was; the revision only appended.
	var after map[string]int
	var ledgersAfter map[string]map[string]string
	e.snapshot(func(l ledgerView) { after, ledgersAfter = l.Counts(dataTables), l.AppendOnly(appendOnlyTables) })
	if bad := rowsKept(ledgers, ledgersAfter); len(bad) > 0 {
		t.Errorf("the revision changed ledger rows:\n%s", strings.Join(bad, "\n"))
	}
	if d := after["fragment_retirements"] - before["fragment_retirements"]; d != 3 {
		t.Errorf("retirement rows +%d, want +3", d)
	}
	e.checkLedger()
}

// checkRetired checks, through Trace, each relationship's status and tier after the revision pl
// made at at, its last transition (the system's, naming the retirement of its first evidence) and
// that evidence's retirement (cause, actor, call, time, replacing fragment, reason).
func (e *env) checkRetired(pl *densemem.Placement, retirementOf map[densemem.FragmentID]string, at time.Time,
	want map[densemem.RelationshipID][2]string) {
	e.t.Helper()
	newFragment := pl.Fragments[0].FragmentID
	for id, st := range want {
		tr := e.trace(e.C, id)
		if string(tr.Relationship.Status) != st[0] || string(tr.Relationship.Tier) != st[1] {
			e.t.Errorf("%s after the revision: %s %s, want %s %s", id, tr.Relationship.Status, tr.Relationship.Tier, st[0], st[1])
		}
		last := tr.Transitions[len(tr.Transitions)-1]
		retired := tr.Evidence[0].Retired
		if retired == nil {
			e.t.Errorf("%s: Trace shows its v1 evidence %+v not retired", id, tr.Evidence[0])
			continue
		}
		if last.ActorKind != "system" || last.Reason != "support_retired:"+retired.RetirementID || !last.CreatedAt.Equal(at) {
			e.t.Errorf("%s: last transition %+v, want the system's at %v naming retirement %s", id, last, at, retired.RetirementID)
		}
		if retired.Cause != "source_revision" || retired.ReplacedByFragmentID != newFragment || retired.ActorProfileID != e.A.ProfileID ||
			retired.IngestID != pl.IngestID || !retired.RetiredAt.Equal(at) || !strings.Contains(retired.Reason, `"v2"`) ||
			retirementOf[tr.Evidence[0].FragmentID] != retired.RetirementID {
			e.t.Errorf("%s: retired evidence %+v, want retired by A's revision %s at %v, replaced by %s", id, retired, pl.IngestID, at, newFragment)
		}
	}
}

// TestSourceRevisionRepairsAndDismissesCases: a case between A's statement from v1 and B's
// contradicting one loses A's side when A revises v1: with C's independent support of A's position
// the case stays open with its membership repaired (A's relationship removed, one event), and with
// nothing left on that side it is dismissed, in the revision's transaction.
func TestSourceRevisionRepairsAndDismissesCases(t *testing.T) {
	t.Parallel()
	for _, withC := range []bool{true, false} {
		e := newEnv(t)
		e.step()
		rA := only(t, e.rememberReq(e.A, sourced(deploy("production", "main"), docKey, "v1", "")))
		e.step()
		rB := e.remember(e.B, withContent(deploy("production", "hotfix"), "Chat: the production environment deploys from the hotfix branch."))
		if rB.Conflict == nil {
			t.Fatalf("B's contradiction opened no case: %+v", rB)
		}
		caseID := rB.Conflict.ConflictID
		var rC densemem.RelationshipOutcome
		if withC {
			e.step()
			rC = e.remember(e.C, withContent(deploy("production", "main"), "Runbook: the production environment deploys from the main branch."))
		}
		e.step()
		other := withContent(deploy("staging", "main"), "The staging environment deploys from the main branch.")
		e.rememberReq(e.A, sourced(other, docKey, "v2", "v1"))
		cs := e.ledger().Case(caseID)
		if withC {
			if cs.Status != "open" || slices.Contains(cs.CurrentRelationships(), rA.RelationshipID) ||
				!slices.Contains(cs.CurrentRelationships(), rC.RelationshipID) || cs.Reasons()[len(cs.Reasons())-1] != "membership_changed" {
				t.Errorf("with C: case %s is %s with members %v (events %v); want open without A's %s", caseID, cs.Status,
					cs.CurrentRelationships(), cs.Reasons(), rA.RelationshipID)
			}
			conflicts := e.recall(e.C, "production", nil, nil).Conflicts
			if len(conflicts) != 1 {
				t.Fatalf("recall conflicts %+v, want the one case", conflicts)
			}
			for _, p := range conflicts[0].Positions {
				if p.CountedSourceGroups != 1 {
					t.Errorf("position %s counts %d groups, want 1 (the retired fragment no longer counts)", p.PositionID, p.CountedSourceGroups)
				}
			}
		} else if cs.Status != "dismissed" || len(cs.CurrentRelationships()) != 0 {
			t.Errorf("without C: case %s is %s with members %v, want dismissed", caseID, cs.Status, cs.CurrentRelationships())
		}
		if !e.recalled(e.C, "production", rB.RelationshipID) || e.recalled(e.C, "production", rA.RelationshipID) {
			t.Errorf("recall of production: want B's %s and not A's %s", rB.RelationshipID, rA.RelationshipID)
		}
		e.checkLedger()
	}
}

// TestSourceRevisionRefused: a revision by a profile that does not own the source, of a revision
// that has nothing left to retire, naming another profile's fragment, or mixed with a profile-local
// correction or a conflict response is refused with a *ValidationError naming the field, and
// nothing is written.
func TestSourceRevisionRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.step()
	pA := e.rememberReq(e.A, sourced(deploy("production", "main"), docKey, "v1", ""))
	rA := only(t, pA)
	pB := e.rememberReq(e.B, sourced(deploy("production", "main"), docKey, "v1", ""))
	v2 := withContent(deploy("production", "release"), "The production environment deploys from the release branch.")
	named := func(ids ...densemem.FragmentID) densemem.RememberRequest {
		req := sourced(v2, docKey, "v2", "v1")
		req.Evidence[0].SupersedesFragmentIDs = ids
		return req
	}
	mixed := sourced(v2, docKey, "v2", "v1")
	mixed.Proposal.Relationships[0].CorrectsRelationshipID = rA.RelationshipID
	answering := sourced(v2, docKey, "v2", "v1")
	answering.Proposal.Relationships[0].ConflictResponse = &densemem.ConflictResponse{ConflictID: "cf_x", ExpectedVersion: 1}
	before := e.counts()
	for _, c := range []struct {
		name string
		by   densemem.Principal
		req  densemem.RememberRequest
		path string
	}{
		{"not the source's owner", e.B, sourced(v2, docKey, "v2", "v1"), "evidence[0].source_key"},
		{"an unknown previous revision", e.A, sourced(v2, docKey, "v2", "v0"), "evidence[0].previous_source_revision"},
		{"an unknown source", e.A, sourced(v2, "doc:other", "v2", "v1"), "evidence[0].previous_source_revision"},
		{"another profile's fragment", e.A, named(pB.Fragments[0].FragmentID), "evidence[0].supersedes_fragment_ids[0]"},
		{"a fragment that does not exist", e.A, named("frg_missing"), "evidence[0].supersedes_fragment_ids[0]"},
		{"with a correction", e.A, mixed, "proposal.relationships[0].corrects_relationship_id"},
		{"with a conflict response", e.A, answering, "proposal.relationships[0].conflict_response"},
		{"the same revision", e.A, sourced(v2, docKey, "v1", "v1"), "evidence[0].source_revision"},
		{"supersedes without a revision", e.A, func() densemem.RememberRequest {
			req := sourced(v2, docKey, "v2", "")
			req.Evidence[0].SupersedesFragmentIDs = []densemem.FragmentID{pA.Fragments[0].FragmentID}
			return req
		}(), "evidence[0].supersedes_fragment_ids"},
	} {
		_, err := e.client.Remember(e.ctx, c.by, c.req)
		var ve *densemem.ValidationError
		if !errors.As(err, &ve) || !ve.Has(c.path) {
			t.Errorf("%s: %v, want a validation error at %s", c.name, err, c.path)
		}
	}
	if d := countsDiff(before, e.counts()); d != "" {
		t.Errorf("refused revisions wrote rows: %s", d)
	}
	// The owner's own revision, naming its own fragment of the source, goes through.
	pl := e.rememberReq(e.A, named(pA.Fragments[0].FragmentID))
	if len(pl.Retired) != 2 {
		t.Errorf("the owner's revision retired %+v, want A's and B's v1 fragments", pl.Retired)
	}
	// A second revision of v1 has nothing left to retire.
	_, err := e.client.Remember(e.ctx, e.A, sourced(v2, docKey, "v3", "v1"))
	var ve *densemem.ValidationError
	if !errors.As(err, &ve) || !ve.Has("evidence[0].previous_source_revision") {
		t.Errorf("revising an already retired revision: %v, want a validation error", err)
	}
}

// asValidation is errors.As for a *densemem.ValidationError.
func asValidation(err error, ve **densemem.ValidationError) bool { return errors.As(err, ve) }
