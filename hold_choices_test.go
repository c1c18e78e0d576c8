package densemem_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// The hold choices of DESIGN §6.4 step 5 as the specification's seed flow uses them: "User: decision
// plus evidence → resolve", and "both valid" in another scope or in another time.

// TestBothValidInTime_SeedExample: the seed's example. A's current relationship says production
// deploys from main from 2026-01-05; A's new statement says it deploys from release, held for review.
// The user answers: both were valid, release from 2025-06-01 until 2026-01-05, before main began. The
// held statement is restated in that interval and is current beside main; main is neither superseded
// nor shortened; a view at a day of 2025 returns release, the current view main.
func TestBothValidInTime_SeedExample(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mainFrom := date("2026-01-05")
	prior := e.remember(e.A, deploy("production", "main").since(mainFrom))
	e.clock.Advance(time.Hour)
	pl := e.rememberOne(e.A, deploy("production", "release").request(nextKey()))
	held := only(t, pl)
	if held.Status != "needs_review" || held.Review == nil {
		t.Fatalf("release: %s/%s, want held against main", held.Category, held.Status)
	}
	from, to := date("2025-06-01"), mainFrom
	req := resolveRequest(pl.IngestID, held, densemem.ActionBothValid)
	req.Decision = &densemem.ResolveDecision{ValidFrom: &from, ValidTo: &to, Reason: "release until main began"}
	req.Evidence = []densemem.EvidenceInput{{Content: "Production deployed from release from 2025-06-01 until main took over.",
		SourceType: "conversation"}}
	res, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome == nil || res.Outcome.Status != "active" {
		t.Fatalf("outcome %+v, want release current in its own time", res.Outcome)
	}
	restated := e.trace(e.A, res.Outcome.RelationshipID).Relationship
	if restated.Object.Name != "release" || restated.ValidFrom == nil || !restated.ValidFrom.Equal(from) ||
		restated.ValidTo == nil || !restated.ValidTo.Equal(to) {
		t.Errorf("restated %s valid %v..%v, want release from %s until %s", restated.Object.Name, restated.ValidFrom, restated.ValidTo,
			from.Format(time.DateOnly), to.Format(time.DateOnly))
	}
	if st, _, vt, v := e.relationshipState(prior.RelationshipID); st != "active" || vt != nil || v != 1 {
		t.Errorf("main is %s until %v at version %d, want untouched: both_valid never supersedes or shortens the prior", st, vt, v)
	}
	if st, _, _, _ := e.relationshipState(held.RelationshipID); st != "rejected" {
		t.Errorf("the held statement is %s, want rejected (restated in its own time)", st)
	}
	e.checkOneCurrentValue(e.A, "production", "deploys_from", "")
	in2025 := date("2025-09-01")
	if r := e.recall(e.A, "production deploys", &in2025, nil); resultFor(r, res.Outcome.RelationshipID) == nil ||
		resultFor(r, prior.RelationshipID) != nil {
		t.Errorf("valid_at 2025-09-01: %d results, want release and not main", len(r.Results))
	}
	now := e.recall(e.A, "production deploys", nil, nil)
	if got := resultFor(now, prior.RelationshipID); got == nil || !got.Current {
		t.Errorf("the current view does not return main as current")
	}
	if got := resultFor(now, res.Outcome.RelationshipID); got != nil && got.Current {
		t.Errorf("the current view returns release as current: its time ended on 2026-01-05")
	}
	checkDecisionRow(t, e, res, held.Review.ReviewID, densemem.ActionBothValid)
	e.checkLedger()
}

// TestBothValidInTime_RefusesOverlap: an interval that overlaps the prior's validity is refused with a
// *ValidationError naming the fields the decision set, and nothing is written.
func TestBothValidInTime_RefusesOverlap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mainFrom := date("2026-01-05")
	e.remember(e.A, deploy("production", "main").since(mainFrom))
	pl := e.rememberOne(e.A, deploy("production", "release").request(nextKey()))
	held := only(t, pl)
	before := e.allCounts()
	from, late, after := date("2025-06-01"), date("2026-02-01"), date("2026-03-01")
	for _, tc := range []struct {
		d     densemem.ResolveDecision
		paths []string
	}{
		{densemem.ResolveDecision{ValidFrom: &from, ValidTo: &late}, []string{"decision.valid_from", "decision.valid_to"}},
		{densemem.ResolveDecision{ValidFrom: &after}, []string{"decision.valid_from"}},
		{densemem.ResolveDecision{ValidTo: &late}, []string{"decision.valid_to"}},
		{densemem.ResolveDecision{ValidFrom: &late, ValidTo: &from}, []string{"decision.valid_to"}}, // ends before it begins
		{densemem.ResolveDecision{ValidFrom: &from, Scope: ptr("canary")}, []string{"decision"}},
	} {
		req := resolveRequest(pl.IngestID, held, densemem.ActionBothValid)
		req.Decision = &tc.d
		_, err := e.client.Resolve(e.ctx, e.A, req)
		for _, p := range tc.paths {
			if !isFieldProblem(err, p) {
				t.Errorf("both_valid %+v: %v, want a validation error naming %s", tc.d, err, p)
			}
		}
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("refused decisions wrote rows: %s", d)
	}
}

// TestDecisionsCarryTheirEvidence: every action takes the user's evidence (invariant 3): it is stored
// verbatim with its provenance (author, source type, authority, source group) and linked from the
// decision row, and it supports a statement only where the action makes it current and the verifier
// grants it — supersede_prior the held statement, keep_prior_reject_new the prior — never a statement
// the decision closes.
func TestDecisionsCarryTheirEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		action string
		// content is the user's evidence; supports is the statement it must support ("held", "prior"
		// or "" for none).
		content, supports string
	}{
		{densemem.ActionSupersedePrior, "The user confirmed: the production environment deploys from the release branch now.", "held"},
		{densemem.ActionSupersedePrior, "The user said to switch over.", ""}, // names neither: no support, still decided
		{densemem.ActionKeepPriorRejectNew, "The user confirmed the production environment still deploys from the main branch.", "prior"},
		{densemem.ActionForget, "The user asked to forget the release statement.", ""},
	} {
		t.Run(tc.action+"/"+tc.supports, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			h := e.holdAgainstPrior()
			req := resolveRequest(h.ingestID, h.held, tc.action)
			req.Evidence = []densemem.EvidenceInput{{Content: tc.content, SourceType: "conversation", Authority: "authoritative",
				SourceGroup: "user-resolution:" + h.ingestID}}
			res, err := e.client.Resolve(e.ctx, e.A, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.FragmentIDs) != 1 {
				t.Fatalf("fragments %v, want the decision's one", res.FragmentIDs)
			}
			frag := res.FragmentIDs[0]
			stored := e.ledger().Keyed(`SELECT f.fragment_id, f.author_profile_id || '|' || f.source_type || '|' || f.authority || '|' ||
				f.source_group || '|' || c.content FROM evidence_fragments f JOIN fragment_contents c USING (team_id, fragment_id)
				WHERE f.fragment_id = $1`, string(frag))
			want := string(e.A.ProfileID) + "|conversation|authoritative|user-resolution:" + h.ingestID + "|" + tc.content
			if stored[string(frag)] != want {
				t.Errorf("stored fragment %q, want %q", stored[string(frag)], want)
			}
			// The decision row links it, and Trace shows the decision with it.
			var decided *densemem.TraceDecision
			for _, it := range e.trace(e.A, h.held.RelationshipID).ReviewItems {
				if it.ReviewID == h.held.Review.ReviewID {
					decided = it.Decision
				}
			}
			if decided == nil || !slices.Equal(decided.FragmentIDs, []densemem.FragmentID{frag}) {
				t.Fatalf("the decision in Trace %+v, want it to link fragment %s", decided, frag)
			}
			supported := map[string]densemem.RelationshipID{"held": h.held.RelationshipID, "prior": h.prior.RelationshipID}
			for name, id := range supported {
				has := slices.ContainsFunc(e.trace(e.A, id).Evidence, func(ev densemem.TraceEvidence) bool { return ev.FragmentID == frag })
				if has != (name == tc.supports) {
					t.Errorf("the %s statement has the decision's evidence as support: %v, want %v", name, has, name == tc.supports)
				}
			}
			wantHeld := map[string]string{densemem.ActionSupersedePrior: "active", densemem.ActionKeepPriorRejectNew: "rejected",
				densemem.ActionReject: "rejected", densemem.ActionForget: "retracted"}[tc.action]
			if st, _, _, _ := e.relationshipState(h.held.RelationshipID); st != wantHeld {
				t.Errorf("held statement %s, want %s", st, wantHeld)
			}
			e.checkOneCurrentValue(e.A, "production", "deploys_from", "")
			e.checkLedger()
		})
	}
}

// TestRejectCarriesItsEvidence: reject on a pending item stores the user's evidence and links it from
// the decision; it supports nothing (the statement it rejects is closed).
func TestRejectCarriesItsEvidence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	f := deploy("production", "release")
	f.content = "The production environment deploys from somewhere new."
	pl := e.rememberOne(e.A, f.request(nextKey()))
	pending := only(t, pl)
	if pending.Status != "pending_evidence" || pending.Review == nil {
		t.Fatalf("outcome %s/%s, want pending evidence", pending.Category, pending.Status)
	}
	req := resolveRequest(pl.IngestID, pending, densemem.ActionReject)
	req.Evidence = []densemem.EvidenceInput{{Content: "The user said the release statement was a typo.", SourceType: "conversation"}}
	res, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FragmentIDs) != 1 {
		t.Fatalf("fragments %v, want the decision's one", res.FragmentIDs)
	}
	if n := e.ledger().Int(`SELECT count(*) FROM support_links WHERE fragment_id = $1`, string(res.FragmentIDs[0])); n != 0 {
		t.Errorf("the rejecting decision's evidence supports %d statements, want none", n)
	}
	if got := e.ledger().Strings(`SELECT unnest(fragment_ids) FROM placement_decisions WHERE decision_id = $1`, res.DecisionID); !slices.Equal(got,
		[]string{string(res.FragmentIDs[0])}) {
		t.Errorf("the decision row links %v, want %s", got, res.FragmentIDs[0])
	}
	if st, _, _, _ := e.relationshipState(pending.RelationshipID); st != "rejected" {
		t.Errorf("pending statement %s, want rejected", st)
	}
	e.checkLedger()
}

// TestDecisionEvidenceIsNeverASourceRevision: a decision's evidence documents the decision; a source
// revision goes through Remember, and is refused naming the field.
func TestDecisionEvidenceIsNeverASourceRevision(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	req := resolveRequest(h.ingestID, h.held, densemem.ActionReject)
	req.Evidence = []densemem.EvidenceInput{{Content: "v2 of the runbook", SourceType: "document", SourceKey: "runbook",
		SourceRevision: "v2", PreviousSourceRevision: "v1"}}
	if _, err := e.client.Resolve(e.ctx, e.A, req); !isFieldProblem(err, "evidence[0].previous_source_revision") {
		t.Errorf("a decision revising a source: %v, want a validation error on evidence[0].previous_source_revision", err)
	}
	var ve *densemem.ValidationError
	if _, err := e.client.Resolve(e.ctx, e.A, req); !errors.As(err, &ve) {
		t.Errorf("error %T, want *ValidationError", err)
	}
}

// checkOneCurrentValue fails the test when p holds two active relationships of one key whose
// validity intervals overlap (read through Trace from the ledger window's list of the key).
func (e *env) checkOneCurrentValue(p densemem.Principal, subject, predicate, scope string) {
	e.t.Helper()
	var active []*densemem.TraceResult
	for id, status := range e.ledger().KeyStatuses(p, subject, predicate, scope) {
		if status == "active" {
			active = append(active, e.trace(p, id))
		}
	}
	for i := range active {
		for j := i + 1; j < len(active); j++ {
			a, b := active[i].Relationship, active[j].Relationship
			if overlaps(densemem.ValidityInterval{From: a.ValidFrom, To: a.ValidTo}, densemem.ValidityInterval{From: b.ValidFrom, To: b.ValidTo}) {
				e.t.Errorf("%s holds %s (%s) and %s (%s) current at once on %s %s", p.ProfileID, a.RelationshipID, a.Object.Name,
					b.RelationshipID, b.Object.Name, subject, predicate)
			}
		}
	}
}
