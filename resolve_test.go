package densemem_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Resolve: a client's decision on one of its review items, carried out by the same ledger as every
// other change, appended to the decision ledger, replayable, refused when stale or not the caller's.

// heldItem is a same-owner hold: A's current "production deploys_from main" and A's later, undated
// "production deploys_from release", held for review against it.
type heldItem struct {
	prior, held densemem.RelationshipOutcome
	ingestID    string
}

// holdAgainstPrior remembers A's prior and A's conflicting statement, which is held for review.
func (e *env) holdAgainstPrior() heldItem {
	e.t.Helper()
	h := heldItem{prior: e.remember(e.A, deploy("production", "main"))}
	e.clock.Advance(time.Hour)
	pl := e.rememberOne(e.A, deploy("production", "release").request(nextKey()))
	h.held, h.ingestID = only(e.t, pl), pl.IngestID
	if h.held.Status != "needs_review" || h.held.Review == nil {
		e.t.Fatalf("second statement: %s/%s (%s), want held for review", h.held.Category, h.held.Status, h.held.Reason)
	}
	e.clock.Advance(time.Hour)
	return h
}

// resolveRequest is a decision on the item of out, placed by ingest.
func resolveRequest(ingest string, out densemem.RelationshipOutcome, action string) densemem.ResolveRequest {
	return densemem.ResolveRequest{IngestID: ingest, PlacementItemID: out.PlacementItemID, Action: action,
		IdempotencyKey: nextKey()}
}

// decisionRows returns the stored decision rows as JSON text, by decision ID.
func (l ledgerView) decisionRows() map[string]string {
	l.t.Helper()
	return l.Keyed(`SELECT decision_id, to_jsonb(d)::text FROM placement_decisions d`)
}

// reviewItemStatus reads an item's status through the list call of its owner.
func (e *env) reviewItemStatus(p densemem.Principal, reviewID string) string {
	e.t.Helper()
	for _, status := range []string{densemem.ReviewItemStatusOpen, densemem.ReviewItemStatusResolved,
		densemem.ReviewItemStatusSuperseded} {
		resp, err := e.client.ListReviewItems(e.ctx, p, densemem.ListReviewItemsRequest{Status: status, Limit: 100})
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range resp.ReviewItems {
			if it.ReviewID == reviewID {
				return it.Status
			}
		}
	}
	e.t.Fatalf("review item %s is not listed", reviewID)
	return ""
}

func TestResolveSameOwnerHold(t *testing.T) {
	t.Parallel()

	t.Run("supersede_prior makes the held statement current and closes the prior", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		now := e.clock.Now()
		res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior))
		if err != nil {
			t.Fatal(err)
		}
		want := []densemem.RelationshipChange{
			{RelationshipID: h.prior.RelationshipID,
				Before: densemem.RelationshipState{Status: "active", Tier: "validated_claim", Version: 1},
				After:  densemem.RelationshipState{Status: "superseded", Tier: "validated_claim", ValidTo: &now, Version: 2}},
			{RelationshipID: h.held.RelationshipID,
				Before: densemem.RelationshipState{Status: "needs_review", Tier: "validated_claim", Version: 1},
				After:  densemem.RelationshipState{Status: "active", Tier: "validated_claim", Version: 2}},
		}
		if d := diff(want, res.Changes, ignoreTransitionIDs); d != "" {
			t.Errorf("changes (-want +got):\n%s", d)
		}
		// The item previewed this change when it was issued (the prior's valid_to then showed the
		// issue time: an undated statement supersedes at the decision's time).
		if d := diff(res.Changes, impactOf(t, h.held, densemem.ActionSupersedePrior), ignoreTransitionIDs,
			cmpopts.IgnoreFields(densemem.RelationshipState{}, "ValidTo")); d != "" {
			t.Errorf("impact preview (-did +previewed):\n%s", d)
		}
		if d := diff([]string{"->active:accepted", "active->superseded:decided:supersede_prior"}, e.transitions(h.prior.RelationshipID)); d != "" {
			t.Errorf("prior's transitions (-want +got):\n%s", d)
		}
		if d := diff([]string{"->needs_review:held_for_review", "needs_review->active:decided:supersede_prior"},
			e.transitions(h.held.RelationshipID)); d != "" {
			t.Errorf("held statement's transitions (-want +got):\n%s", d)
		}
		if got := e.reviewItemStatus(e.A, h.held.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
			t.Errorf("review item is %s, want resolved", got)
		}
		checkDecisionRow(t, e, res, h.held.Review.ReviewID, densemem.ActionSupersedePrior)
		e.checkLedger()
	})

	t.Run("keep_prior_reject_new rejects the held statement and leaves the prior", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		req := resolveRequest(h.ingestID, h.held, densemem.ActionKeepPriorRejectNew)
		req.Decision = &densemem.ResolveDecision{Reason: "the user says main is still current"}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		want := []densemem.RelationshipChange{{RelationshipID: h.held.RelationshipID,
			Before: densemem.RelationshipState{Status: "needs_review", Tier: "validated_claim", Version: 1},
			After:  densemem.RelationshipState{Status: "rejected", Tier: "validated_claim", Version: 2}}}
		if d := diff(want, res.Changes, ignoreTransitionIDs); d != "" {
			t.Errorf("changes (-want +got):\n%s", d)
		}
		if d := diff(res.Changes, impactOf(t, h.held, densemem.ActionKeepPriorRejectNew), ignoreTransitionIDs); d != "" {
			t.Errorf("impact preview (-did +previewed):\n%s", d)
		}
		if st, _, vt, v := e.relationshipState(h.prior.RelationshipID); st != "active" || vt != nil || v != 1 {
			t.Errorf("prior %s (valid_to %v) at version %d, want active, open and untouched", st, vt, v)
		}
		checkDecisionRow(t, e, res, h.held.Review.ReviewID, densemem.ActionKeepPriorRejectNew)
		e.checkLedger()
	})

	t.Run("forget retracts the held statement", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionForget))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 1 || res.Changes[0].After.Status != "retracted" {
			t.Errorf("changes %+v, want the held statement retracted", res.Changes)
		}
		checkDecisionRow(t, e, res, h.held.Review.ReviewID, densemem.ActionForget)
	})

	t.Run("both_valid in another scope keeps the prior and places the statement beside it", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		before := e.allCounts()
		for _, d := range []*densemem.ResolveDecision{nil, {Scope: ptr("canary"), ValidFrom: ptr(e.clock.Now())}, {Scope: ptr("")}} {
			req := resolveRequest(h.ingestID, h.held, densemem.ActionBothValid)
			req.Decision = d
			if _, err := e.client.Resolve(e.ctx, e.A, req); !isFieldProblem(err, "decision") && !isFieldProblem(err, "decision.scope") {
				t.Errorf("both_valid with %+v: %v, want a validation error on the decision", d, err)
			}
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("refused decisions wrote rows: %s", d)
		}
		req := resolveRequest(h.ingestID, h.held, densemem.ActionBothValid)
		req.Decision = &densemem.ResolveDecision{Scope: ptr("Canary")}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.Status != "active" || res.Outcome.Category != densemem.CategoryAccepted {
			t.Fatalf("outcome %+v, want the statement accepted in its scope", res.Outcome)
		}
		if r := e.trace(e.A, res.Outcome.RelationshipID).Relationship; r.Scope != "canary" || r.Object.Name != "release" {
			t.Errorf("placed %s in scope %q, want release in canary", r.Object.Name, r.Scope)
		}
		if st, _, vt, v := e.relationshipState(h.prior.RelationshipID); st != "active" || vt != nil || v != 1 {
			t.Errorf("prior %s (valid_to %v) at version %d, want untouched", st, vt, v)
		}
		if st, _, _, _ := e.relationshipState(h.held.RelationshipID); st != "rejected" {
			t.Errorf("held statement %s, want rejected (restated in its scope)", st)
		}
		checkDecisionRow(t, e, res, h.held.Review.ReviewID, densemem.ActionBothValid)
		e.checkLedger()
	})

	t.Run("both_valid in a time the undated prior covers is refused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		before := e.allCounts()
		from, to := date("2026-05-20"), date("2026-05-01")
		for _, tc := range []struct {
			d    densemem.ResolveDecision
			path string
		}{
			{densemem.ResolveDecision{ValidFrom: &from}, "decision.valid_from"},
			{densemem.ResolveDecision{ValidTo: &to}, "decision.valid_to"},
			{densemem.ResolveDecision{ValidFrom: &from, ValidTo: &to}, "decision.valid_to"},
		} {
			req := resolveRequest(h.ingestID, h.held, densemem.ActionBothValid)
			req.Decision = &tc.d
			if _, err := e.client.Resolve(e.ctx, e.A, req); !isFieldProblem(err, tc.path) {
				t.Errorf("both_valid %+v: %v, want a validation error on %s", tc.d, err, tc.path)
			}
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("refused decisions wrote rows: %s", d)
		}
		if st, _, vt, v := e.relationshipState(h.prior.RelationshipID); st != "active" || vt != nil || v != 1 {
			t.Errorf("prior %s (valid_to %v) at version %d, want untouched", st, vt, v)
		}
	})
}

// impactOf returns the impact out's review item previewed for action.
func impactOf(t *testing.T, out densemem.RelationshipOutcome, action string) []densemem.RelationshipChange {
	t.Helper()
	for _, c := range out.Review.Choices {
		if c.Action == action {
			return c.Impact
		}
	}
	t.Fatalf("review item offers no %s: %+v", action, out.Review.Choices)
	return nil
}

// ignoreTransitionIDs leaves transition IDs out of a comparison of changes (allocated by the call).
var ignoreTransitionIDs = cmpopts.IgnoreFields(densemem.RelationshipChange{}, "TransitionID")

// checkDecisionRow asserts the decision ledger holds exactly the decision res reports: actor, item,
// action, ingest, key and the changes with their transition IDs.
func checkDecisionRow(t *testing.T, e *env, res *densemem.ResolveResult, reviewID, action string) {
	t.Helper()
	rows := e.ledger().decisionRows()
	if len(rows) != 1 {
		t.Fatalf("decision rows %v, want exactly one", rows)
	}
	var got struct {
		DecisionID string                        `json:"decision_id"`
		ProfileID  densemem.ProfileID            `json:"profile_id"`
		ReviewID   string                        `json:"review_id"`
		Action     string                        `json:"action"`
		IngestID   string                        `json:"ingest_id"`
		Changes    []densemem.RelationshipChange `json:"changes"`
	}
	if err := json.Unmarshal([]byte(rows[res.DecisionID]), &got); err != nil {
		t.Fatalf("decision %s: %v (rows %v)", res.DecisionID, err, rows)
	}
	want := got
	want.DecisionID, want.ProfileID, want.ReviewID, want.Action, want.IngestID, want.Changes =
		res.DecisionID, e.A.ProfileID, reviewID, action, res.IngestID, res.Changes
	if d := diff(want, got); d != "" {
		t.Errorf("decision row (-want +got):\n%s", d)
	}
}

func TestResolvePendingEvidenceReject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pl := e.rememberOne(e.A, insufficientDeploy("production", "main").request(nextKey()))
	out := only(t, pl)
	if out.Status != "pending_evidence" {
		t.Fatalf("insufficient evidence: %s, want pending_evidence", out.Status)
	}
	if v := out.Review.Verdict; v == nil || v.Verdict == "entailed" || v.Rationale == "" {
		t.Errorf("pending item verdict %+v, want the verifier's verdict that did not grant support", v)
	}
	res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(pl.IngestID, out, densemem.ActionReject))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 || res.Changes[0].Before.Status != "pending_evidence" || res.Changes[0].After.Status != "rejected" {
		t.Errorf("changes %+v, want pending_evidence -> rejected", res.Changes)
	}
	if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
		t.Errorf("review item is %s, want resolved", got)
	}
}

func TestResolveReplayStaleAndNotOwner(t *testing.T) {
	t.Parallel()

	t.Run("a replayed key returns the first result and writes nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		req := resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior)
		first, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		before := e.allCounts()
		again, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed {
			t.Error("replay not marked Replayed")
		}
		again.Replayed = false
		if d := diff(first, again); d != "" {
			t.Errorf("replay (-first +again):\n%s", d)
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("replay wrote rows: %s", d)
		}
		req.Action = densemem.ActionForget
		if _, err := e.client.Resolve(e.ctx, e.A, req); !errors.Is(err, densemem.ErrIdempotencyConflict) {
			t.Errorf("same key, other request: %v, want ErrIdempotencyConflict", err)
		}
	})

	t.Run("a decided item and a moved prior are stale", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionKeepPriorRejectNew)); err != nil {
			t.Fatal(err)
		}
		before := e.allCounts()
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior)); !errors.Is(err, densemem.ErrStaleDecision) {
			t.Errorf("second decision: %v, want ErrStaleDecision", err)
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("a decision on a decided item wrote rows: %s", d)
		}

		h2 := e.holdAgainstPrior() // a second hold, against the same prior
		if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: h2.prior.RelationshipID,
			IdempotencyKey: nextKey()}); err != nil {
			t.Fatal(err)
		}
		before = e.allCounts()
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h2.ingestID, h2.held, densemem.ActionSupersedePrior)); !errors.Is(err, densemem.ErrStaleDecision) {
			t.Errorf("decision after the prior was forgotten: %v, want ErrStaleDecision", err)
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("stale decisions wrote rows: %s", d)
		}
	})

	t.Run("another profile's item is refused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		before := e.allCounts()
		for _, action := range []string{densemem.ActionSupersedePrior, densemem.ActionKeepPriorRejectNew, densemem.ActionForget} {
			if _, err := e.client.Resolve(e.ctx, e.B, resolveRequest(h.ingestID, h.held, action)); !errors.Is(err, densemem.ErrNotOwner) {
				t.Errorf("B's %s of A's item: %v, want ErrNotOwner", action, err)
			}
		}
		if d := countsDiff(before, e.allCounts()); d != "" {
			t.Errorf("refused decisions wrote rows: %s", d)
		}
	})

	t.Run("an action the item does not offer is refused", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		h := e.holdAgainstPrior()
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionReject)); !isFieldProblem(err, "action") {
			t.Errorf("reject on a hold: %v, want a validation error on action", err)
		}
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(h.ingestID+"x", h.held, densemem.ActionForget)); !errors.Is(err, densemem.ErrNotFound) {
			t.Errorf("unknown item: %v, want ErrNotFound", err)
		}
	})
}

// TestConcurrentResolveOneItem: ten goroutines decide one item at once, each under its own key.
// Exactly one decision lands; the others are stale and write nothing.
func TestConcurrentResolveOneItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	const n = 10
	errs := make([]error, n)
	runTogether(n, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		action := densemem.ActionSupersedePrior
		if i%2 == 1 {
			action = densemem.ActionKeepPriorRejectNew
		}
		_, errs[i] = e.client.Resolve(ctx, e.A, resolveRequest(h.ingestID, h.held, action))
	})
	checkOneDecisionWon(t, e, errs)
	e.checkLedger()
	e.ledger().checkSupersededOnce()
}

// TestReviewItemsCloseWhenTheQuestionGoes: an item about a relationship closes as superseded when
// the relationship leaves review another way: forgotten, or a pending one gaining its support.
func TestReviewItemsCloseWhenTheQuestionGoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: h.held.RelationshipID,
		IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	if got := e.reviewItemStatus(e.A, h.held.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
		t.Errorf("item of a forgotten held statement is %s, want superseded", got)
	}

	pending := only(t, e.rememberOne(e.A, insufficientDeploy("staging", "main").request(nextKey())))
	supported := e.remember(e.A, deploy("staging", "main"))
	if supported.RelationshipID != pending.RelationshipID || supported.Status != "active" {
		t.Fatalf("support for the pending statement: %+v, want it to make %s active", supported, pending.RelationshipID)
	}
	if got := e.reviewItemStatus(e.A, pending.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
		t.Errorf("item of a pending statement that gained support is %s, want superseded", got)
	}
}

func TestResolveRequestsFromTheSpecificationDecode(t *testing.T) {
	t.Parallel()
	examples := []string{specSelectEntityExample, specCorrectExample}
	for i, text := range examples {
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		var req densemem.ResolveRequest
		if err := dec.Decode(&req); err != nil {
			t.Fatalf("example %d: %v", i, err)
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var a, b map[string]any
		_ = json.Unmarshal([]byte(text), &a)
		_ = json.Unmarshal(out, &b)
		if !maps.EqualFunc(a, b, func(x, y any) bool { return fmt.Sprint(x) == fmt.Sprint(y) }) {
			t.Errorf("example %d does not survive a round trip:\n%s\n%s", i, text, out)
		}
		if !bytes.Contains(out, []byte(`"action":"`+req.Action+`"`)) {
			t.Errorf("example %d: action lost: %s", i, out)
		}
	}
}

// isFieldProblem reports whether err is a validation error naming path.
func isFieldProblem(err error, path string) bool {
	var ve *densemem.ValidationError
	return errors.As(err, &ve) && ve.Has(path)
}

// TestConcurrentForgetAndResolve: A forgets its held statement while deciding its review item. Both
// serialise on the key; whichever commits first, the other sees it: a decision after the forget is
// stale, a forget after the decision retracts the statement the decision made current. Neither
// deadlocks nor writes half.
func TestConcurrentForgetAndResolve(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	var forgetErr, resolveErr error
	runTogether(2, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if i == 0 {
			_, forgetErr = e.client.Forget(ctx, e.A, densemem.ForgetRequest{RelationshipID: h.held.RelationshipID,
				IdempotencyKey: nextKey()})
			return
		}
		_, resolveErr = e.client.Resolve(ctx, e.A, resolveRequest(h.ingestID, h.held, densemem.ActionSupersedePrior))
	})
	if forgetErr != nil {
		t.Fatalf("forget: %v", forgetErr)
	}
	st, _, _, _ := e.relationshipState(h.held.RelationshipID)
	item := e.reviewItemStatus(e.A, h.held.Review.ReviewID)
	switch {
	case resolveErr == nil: // decided first, then forgotten
		if st != "retracted" || item != densemem.ReviewItemStatusResolved {
			t.Errorf("decided first: statement %s, item %s; want retracted and resolved", st, item)
		}
		if prior, _, _, _ := e.relationshipState(h.prior.RelationshipID); prior != "superseded" {
			t.Errorf("decided first: prior %s, want superseded", prior)
		}
	case errors.Is(resolveErr, densemem.ErrStaleDecision): // forgotten first
		if st != "retracted" || item != densemem.ReviewItemStatusSuperseded {
			t.Errorf("forgotten first: statement %s, item %s; want retracted and superseded", st, item)
		}
	default:
		t.Errorf("resolve: %v, want success or ErrStaleDecision", resolveErr)
	}
	e.checkLedger()
}

func TestResolveAddEvidence(t *testing.T) {
	t.Parallel()

	// pendingItem remembers A's "production deploys_from main" on evidence that does not state it.
	pendingItem := func(e *env) (densemem.RelationshipOutcome, string) {
		pl := e.rememberOne(e.A, insufficientDeploy("production", "main").request(nextKey()))
		out := only(e.t, pl)
		if out.Status != "pending_evidence" {
			e.t.Fatalf("insufficient evidence: %s, want pending_evidence", out.Status)
		}
		e.clock.Advance(time.Hour)
		return out, pl.IngestID
	}
	evidenceFor := func(content string) []densemem.EvidenceInput {
		return []densemem.EvidenceInput{{Content: content, SourceType: "manual", SourceGroup: "user-resolution"}}
	}

	t.Run("evidence that states it makes the pending statement current and resolves the item", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := pendingItem(e)
		req := resolveRequest(ingest, out, densemem.ActionAddEvidence)
		req.Evidence = evidenceFor("The user confirmed: the production environment deploys from the main branch.")
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.RelationshipID != out.RelationshipID || res.Outcome.Status != "active" {
			t.Fatalf("outcome %+v, want %s active", res.Outcome, out.RelationshipID)
		}
		if d := diff([]string{"->pending_evidence:evidence_insufficient", "pending_evidence->active:evidence_accepted"},
			e.transitions(out.RelationshipID)); d != "" {
			t.Errorf("transitions (-want +got):\n%s", d)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
			t.Errorf("review item is %s, want resolved", got)
		}
		if len(res.FragmentIDs) != 1 {
			t.Fatalf("fragments %v, want the one evidence item", res.FragmentIDs)
		}
		// The decision's evidence supports the relationship, as Trace shows.
		found := false
		for _, ev := range e.trace(e.A, out.RelationshipID).Evidence {
			found = found || ev.FragmentID == res.FragmentIDs[0]
		}
		if !found {
			t.Errorf("trace of %s does not show the decision's fragment %s", out.RelationshipID, res.FragmentIDs[0])
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionAddEvidence)
		e.checkLedger()
	})

	t.Run("evidence that does not state it is recorded and leaves the item open", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := pendingItem(e)
		before := e.allCounts()
		req := resolveRequest(ingest, out, densemem.ActionAddEvidence)
		req.Evidence = evidenceFor("The production environment deploys from somewhere.")
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.Category != densemem.CategoryPendingEvidence || len(res.Changes) != 0 {
			t.Errorf("outcome %+v, changes %+v; want still pending and no change", res.Outcome, res.Changes)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusOpen {
			t.Errorf("review item is %s, want still open", got)
		}
		delta := countDelta(before, e.allCounts())
		for _, table := range []string{"relationships", "review_items", "relationship_transitions", "support_links"} {
			if delta[table] != 0 {
				t.Errorf("%s grew by %d, want 0 (no second pending statement)", table, delta[table])
			}
		}
		for _, table := range []string{"evidence_fragments", "observations", "verification_events", "placement_decisions"} {
			if delta[table] != 1 {
				t.Errorf("%s grew by %d, want 1", table, delta[table])
			}
		}
		// The item can still be answered.
		req2 := resolveRequest(ingest, out, densemem.ActionReject)
		if _, err := e.client.Resolve(e.ctx, e.A, req2); err != nil {
			t.Errorf("reject after unsupported evidence: %v", err)
		}
	})

	t.Run("accept goes through the verifier like add_evidence", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := pendingItem(e)
		req := resolveRequest(ingest, out, densemem.ActionAccept)
		req.Evidence = evidenceFor("The user confirmed: the production environment deploys from the main branch.")
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.RelationshipID != out.RelationshipID || res.Outcome.Status != "active" {
			t.Fatalf("outcome %+v, want %s active", res.Outcome, out.RelationshipID)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
			t.Errorf("review item is %s, want resolved", got)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionAccept)
		e.checkLedger()
	})

	t.Run("a bare accept grants nothing and leaves the question open", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := pendingItem(e)
		before := e.allCounts()
		res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(ingest, out, densemem.ActionAccept))
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != nil || len(res.Changes) != 0 {
			t.Errorf("outcome %+v, changes %+v; want nothing changed", res.Outcome, res.Changes)
		}
		if status, tier, _, _ := e.relationshipState(out.RelationshipID); status != "pending_evidence" || tier != "candidate" {
			t.Errorf("after a bare accept %s is %s/%s, want pending_evidence/candidate", out.RelationshipID, status, tier)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusOpen {
			t.Errorf("review item is %s, want still open", got)
		}
		delta := countDelta(before, e.allCounts())
		for table, n := range delta {
			if want := map[string]int{"placement_decisions": 1, "idempotency_records": 1}[table]; n != want {
				t.Errorf("%s grew by %d, want %d: a bare accept records the decision and nothing else", table, n, want)
			}
		}
	})

	t.Run("add_evidence without evidence is refused before anything", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := pendingItem(e)
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(ingest, out, densemem.ActionAddEvidence)); !isFieldProblem(err, "evidence") {
			t.Errorf("bare add_evidence: %v, want a validation error on evidence", err)
		}
	})
}

// TestHeldStatementBecomesCurrentWhenItsPriorGoes: DESIGN §6.7. When the owner forgets the prior a
// statement was held against, the held statement is re-planned in the same transaction: nothing of
// the owner contradicts it any more, so it becomes current, and its review item closes.
func TestHeldStatementBecomesCurrentWhenItsPriorGoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: h.prior.RelationshipID,
		IdempotencyKey: nextKey()}); err != nil {
		t.Fatal(err)
	}
	if d := diff([]string{"->needs_review:held_for_review", "needs_review->active:prior_gone"},
		e.transitions(h.held.RelationshipID)); d != "" {
		t.Errorf("held statement's transitions (-want +got):\n%s", d)
	}
	if got := e.reviewItemStatus(e.A, h.held.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
		t.Errorf("review item is %s, want superseded", got)
	}
	ids := recallIDs(e.recall(e.A, "production", nil, nil))
	if d := diff([]densemem.RelationshipID{h.held.RelationshipID}, ids); d != "" {
		t.Errorf("current recall (-want +got):\n%s", d)
	}
	e.checkLedger()
}

func TestResolveIdentityAndPredicateReview(t *testing.T) {
	t.Parallel()

	// ambiguousMain: two "main" branches (repositories a and b), then A's "dev deploys_from main"
	// naming neither, held for identity review.
	ambiguousMain := func(e *env) (out densemem.RelationshipOutcome, ingest string, mainA, mainB densemem.EntityID) {
		withRepo := func(f fact, repo string) densemem.RememberRequest {
			req := f.request(nextKey())
			if repo != "" {
				req.Proposal.Entities[1].IdentityContext = map[string]string{"repository": repo}
			}
			return req
		}
		mainA = entityID(e.t, e.rememberReq(e.A, withRepo(deploy("production", "main"), "a")), "o")
		mainB = entityID(e.t, e.rememberReq(e.A, withRepo(deploy("staging", "main"), "b")), "o")
		pl := e.rememberReq(e.A, withRepo(deploy("dev", "main"), ""))
		out = only(e.t, pl)
		if out.Category != densemem.CategoryIdentityReview {
			e.t.Fatalf("dev deploys_from main: %s, want identity review", out.Category)
		}
		// The item says which mention is ambiguous, so a decision can name it.
		want := []densemem.ReviewMention{{Ref: "o", Name: "main", EntityKind: "git_branch",
			CandidateIDs: sortedEntityIDs(mainA, mainB)}}
		if d := diff(want, out.Review.Mentions); d != "" {
			e.t.Errorf("identity item mentions (-want +got):\n%s", d)
		}
		return out, pl.IngestID, mainA, mainB
	}
	// unknownPredicate: A's "production builds from main", a phrase no predicate registers.
	unknownPredicate := func(e *env) (densemem.RelationshipOutcome, string) {
		f := deploy("production", "main")
		f.predicate, f.content = "builds from", "The production environment builds from the main branch."
		pl := e.rememberReq(e.A, f.request(nextKey()))
		out := only(e.t, pl)
		if out.Category != densemem.CategoryPredicateReview {
			e.t.Fatalf("builds from: %s, want predicate review", out.Category)
		}
		return out, pl.IngestID
	}

	t.Run("select_entity places the claim on the chosen candidate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest, mainA, _ := ambiguousMain(e)
		bad := resolveRequest(ingest, out, densemem.ActionSelectEntity)
		bad.Decision = &densemem.ResolveDecision{MentionRef: "o", EntityID: entityID(t, e.rememberReq(e.A,
			deploy("qa", "develop").request(nextKey())), "o")}
		if _, err := e.client.Resolve(e.ctx, e.A, bad); !isFieldProblem(err, "decision.entity_id") {
			t.Errorf("an entity the item did not offer: %v, want a validation error on decision.entity_id", err)
		}
		req := resolveRequest(ingest, out, densemem.ActionSelectEntity)
		req.Decision = &densemem.ResolveDecision{MentionRef: "o", EntityID: mainA}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.Status != "active" {
			t.Fatalf("outcome %+v, want an active relationship", res.Outcome)
		}
		if obj := e.trace(e.A, res.Outcome.RelationshipID).Relationship.Object.EntityID; obj != mainA {
			t.Errorf("object %s, want the chosen %s", obj, mainA)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
			t.Errorf("review item is %s, want resolved", got)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionSelectEntity)
		e.checkLedger()
	})

	t.Run("confirm_new_entity creates an entity distinct from every candidate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest, mainA, mainB := ambiguousMain(e)
		bare := resolveRequest(ingest, out, densemem.ActionConfirmNewEntity)
		bare.Decision = &densemem.ResolveDecision{MentionRef: "o"}
		if _, err := e.client.Resolve(e.ctx, e.A, bare); !isFieldProblem(err, "evidence") {
			t.Errorf("confirm_new_entity without evidence: %v, want a validation error on evidence", err)
		}
		req := resolveRequest(ingest, out, densemem.ActionConfirmNewEntity)
		req.Decision = &densemem.ResolveDecision{MentionRef: "o", DistinctFromEntityIDs: []densemem.EntityID{mainA}}
		req.Evidence = []densemem.EvidenceInput{{Content: "Dev deploys from the main branch of the docs repository, not a or b.",
			SourceType: "manual"}}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.Status != "active" {
			t.Fatalf("outcome %+v, want an active relationship", res.Outcome)
		}
		obj := e.trace(e.A, res.Outcome.RelationshipID).Relationship.Object
		if obj.EntityID == mainA || obj.EntityID == mainB || obj.Name != "main" {
			t.Errorf("object %+v, want a new entity named main", obj)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionConfirmNewEntity)
		row := e.ledger().decisionRows()[res.DecisionID]
		if !strings.Contains(row, string(mainA)) {
			t.Errorf("decision row %s does not record distinct_from_entity_ids", row)
		}
	})

	t.Run("select_predicate places the claim under the chosen predicate", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := unknownPredicate(e)
		bad := resolveRequest(ingest, out, densemem.ActionSelectPredicate)
		bad.Decision = &densemem.ResolveDecision{PredicateKey: "builds_from"}
		if _, err := e.client.Resolve(e.ctx, e.A, bad); !isFieldProblem(err, "decision.predicate_key") {
			t.Errorf("a predicate the item did not offer: %v, want a validation error on decision.predicate_key", err)
		}
		req := resolveRequest(ingest, out, densemem.ActionSelectPredicate)
		req.Decision = &densemem.ResolveDecision{PredicateKey: "deploys_from"}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome == nil || res.Outcome.Status != "active" {
			t.Fatalf("outcome %+v, want an active relationship", res.Outcome)
		}
		tr := e.trace(e.A, res.Outcome.RelationshipID)
		if tr.Relationship.Predicate != "deploys_from" || len(tr.Evidence) != 1 ||
			tr.Evidence[0].Content != "The production environment builds from the main branch." {
			t.Errorf("placed %s with evidence %+v, want deploys_from cited in the original evidence", tr.Relationship.Predicate, tr.Evidence)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionSelectPredicate)
	})

	t.Run("reject_mapping resolves the item and places nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := unknownPredicate(e)
		before := e.allCounts()
		res, err := e.client.Resolve(e.ctx, e.A, resolveRequest(ingest, out, densemem.ActionRejectMapping))
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(map[string]int{"placement_decisions": 1, "idempotency_records": 1}, nonZero(countDelta(before, e.allCounts()))); d != "" {
			t.Errorf("rows written (-want +got):\n%s", d)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
			t.Errorf("review item is %s, want resolved", got)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionRejectMapping)
	})

	t.Run("propose_vocabulary_change records the proposal and leaves the item open", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		out, ingest := unknownPredicate(e)
		if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(ingest, out, densemem.ActionProposeVocabularyChange)); !isFieldProblem(err, "decision.predicate_key") {
			t.Errorf("a proposal without a predicate: %v, want a validation error on decision.predicate_key", err)
		}
		req := resolveRequest(ingest, out, densemem.ActionProposeVocabularyChange)
		req.Decision = &densemem.ResolveDecision{PredicateKey: "builds_from", Reason: "build pipelines are not deployments"}
		res, err := e.client.Resolve(e.ctx, e.A, req)
		if err != nil {
			t.Fatal(err)
		}
		if got := e.reviewItemStatus(e.A, out.Review.ReviewID); got != densemem.ReviewItemStatusOpen {
			t.Errorf("review item is %s, want still open", got)
		}
		checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionProposeVocabularyChange)
		// The proposal is there for the vocabulary scope: the host lists the team's open items with it.
		items, err := e.client.ListReviewItems(e.ctx, densemem.HostPrincipal(e.team), densemem.ListReviewItemsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var proposals []densemem.TraceDecision
		for _, it := range items.ReviewItems {
			if it.ReviewID == out.Review.ReviewID {
				proposals = it.Proposals
			}
		}
		if len(proposals) != 1 || proposals[0].Decision == nil || proposals[0].Decision.PredicateKey != "builds_from" ||
			proposals[0].ProfileID != e.A.ProfileID || proposals[0].DecisionID != res.DecisionID {
			t.Errorf("listed proposals %+v, want A's builds_from", proposals)
		}
		// The item can still be answered once the vocabulary has the predicate.
		req2 := resolveRequest(ingest, out, densemem.ActionSelectPredicate)
		req2.Decision = &densemem.ResolveDecision{PredicateKey: "deploys_from"}
		if _, err := e.client.Resolve(e.ctx, e.A, req2); err != nil {
			t.Errorf("select_predicate after a proposal: %v", err)
		}
	})
}

// sortedEntityIDs returns ids sorted.
func sortedEntityIDs(ids ...densemem.EntityID) []densemem.EntityID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// nonZero returns the entries of m that are not zero.
func nonZero(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// specSelectEntityExample is the specification's "Identity Review" request, verbatim; the tests fill
// in the elided IDs.
const specSelectEntityExample = `{
  "ingest_id": "ing_01J...",
  "placement_item_id": "item_identity_1",
  "action": "select_entity",
  "decision": {
    "mention_ref": "mark",
    "entity_id": "ent_mark_huang"
  },
  "evidence": [
    {
      "content": "I mean Mark Huang, the Dense-Mem maintainer.",
      "source_type": "manual",
      "authority": "authoritative",
      "source_group": "user-resolution:ing_01J..."
    }
  ],
  "idempotency_key": "identity-resolution-1"
}`

// specCorrectExample is the specification's "Correct With New Evidence" request: its fields and
// values as given (some lines joined); the tests fill in the elided IDs.
const specCorrectExample = `{
  "ingest_id": "ing_01J...",
  "placement_item_id": "item_relationship_1",
  "action": "correct",
  "evidence": [
    {
      "content": "The user confirmed that production now deploys from release.",
      "source_type": "manual",
      "authority": "authoritative",
      "source_group": "user-resolution:ing_01J..."
    }
  ],
  "proposal": {
    "entities": [
      {"ref": "production", "name": "production", "entity_kind": "environment", "identity_context": {"system": "Dense-Mem"}},
      {"ref": "release", "name": "release", "entity_kind": "git_branch", "identity_context": {"repository": "Dense-Mem"}}
    ],
    "relationships": [
      {
        "proposal_id": "production_deploys_from_release",
        "subject_ref": "production",
        "predicate": "deploys_from",
        "object_ref": "release",
        "polarity": "+",
        "modality": "statement",
        "evidence": [{"evidence_index": 0, "start": 0, "end": 60}]
      }
    ]
  },
  "idempotency_key": "deployment-correction-1"
}`

// TestResolveCorrectFromTheSpecification: the specification's correct example, decoded from its
// JSON text and executed on A's held "production deploys_from release": the correction becomes A's
// current relationship and supersedes A's prior explicitly; the held statement is rejected.
func TestResolveCorrectFromTheSpecification(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.holdAgainstPrior()
	var req densemem.ResolveRequest
	dec := json.NewDecoder(strings.NewReader(specCorrectExample))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatal(err)
	}
	req.IngestID, req.PlacementItemID = h.ingestID, h.held.PlacementItemID
	res, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome == nil || res.Outcome.Category != densemem.CategorySupersededPrior || res.Outcome.Status != "active" {
		t.Fatalf("outcome %+v, want the correction active, superseding the prior", res.Outcome)
	}
	corrected := res.Outcome.RelationshipID
	now := e.clock.Now()
	want := []densemem.RelationshipChange{
		{RelationshipID: corrected, After: densemem.RelationshipState{Status: "active", Tier: "validated_claim", Version: 1}},
		{RelationshipID: h.prior.RelationshipID,
			Before: densemem.RelationshipState{Status: "active", Tier: "validated_claim", Version: 1},
			After:  densemem.RelationshipState{Status: "superseded", Tier: "validated_claim", ValidTo: &now, Version: 2}},
		{RelationshipID: h.held.RelationshipID,
			Before: densemem.RelationshipState{Status: "needs_review", Tier: "validated_claim", Version: 1},
			After:  densemem.RelationshipState{Status: "rejected", Tier: "validated_claim", Version: 2}},
	}
	sortChanges := cmpopts.SortSlices(func(a, b densemem.RelationshipChange) bool { return a.RelationshipID < b.RelationshipID })
	if d := diff(want, res.Changes, ignoreTransitionIDs, sortChanges); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	tr := e.trace(e.A, corrected)
	if len(tr.Evidence) != 1 || tr.Evidence[0].Content != "The user confirmed that production now deploys from release." {
		t.Errorf("the correction's evidence %+v, want the user's confirmation", tr.Evidence)
	}
	prior := e.trace(e.A, h.prior.RelationshipID)
	if last := prior.Transitions[len(prior.Transitions)-1]; last.RelatedRelationshipID != corrected || last.Reason != "superseded" {
		t.Errorf("prior's last transition %+v, want superseded by %s", last, corrected)
	}
	if got := e.reviewItemStatus(e.A, h.held.Review.ReviewID); got != densemem.ReviewItemStatusResolved {
		t.Errorf("review item is %s, want resolved", got)
	}
	checkDecisionRow(t, e, res, h.held.Review.ReviewID, densemem.ActionCorrect)
	e.checkLedger()

	// Replaying the same JSON returns the first result and writes nothing.
	before := e.allCounts()
	again, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil || !again.Replayed || again.DecisionID != res.DecisionID {
		t.Errorf("replay: %+v, %v; want the first result replayed", again, err)
	}
	if d := countsDiff(before, e.allCounts()); d != "" {
		t.Errorf("replay wrote rows: %s", d)
	}
}

// TestResolveSelectEntityFromTheSpecification: the specification's identity example, decoded from
// its JSON text: A's "mark" mention matched two people; A selects one, with evidence that says so.
func TestResolveSelectEntityFromTheSpecification(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mark := func(team, project string) densemem.RememberRequest {
		f := fact{subject: "Mark", subjectKind: "person", predicate: "works_on", object: project, objectKind: "project",
			content: fmt.Sprintf("Mark works on %s.", project)}
		req := f.request(nextKey())
		if team != "" {
			req.Proposal.Entities[0].IdentityContext = map[string]string{"team": team}
		}
		req.Proposal.Entities[0].Ref = "mark"
		req.Proposal.Relationships[0].SubjectRef = "mark"
		return req
	}
	markHuang := entityID(t, e.rememberReq(e.A, mark("dense-mem", "Dense-Mem")), "mark")
	entityID(t, e.rememberReq(e.A, mark("billing", "Billing")), "mark")
	pl := e.rememberReq(e.A, mark("", "Dense-Mem docs"))
	out := only(t, pl)
	if out.Category != densemem.CategoryIdentityReview {
		t.Fatalf("Mark works on Dense-Mem docs: %s, want identity review", out.Category)
	}
	text := strings.NewReplacer("ing_01J...", pl.IngestID, "item_identity_1", out.PlacementItemID,
		"ent_mark_huang", string(markHuang)).Replace(specSelectEntityExample)
	var req densemem.ResolveRequest
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatal(err)
	}
	res, err := e.client.Resolve(e.ctx, e.A, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome == nil || res.Outcome.Status != "active" {
		t.Fatalf("outcome %+v, want an active relationship", res.Outcome)
	}
	tr := e.trace(e.A, res.Outcome.RelationshipID)
	if subj := tr.Relationship.Subject.EntityID; subj != markHuang {
		t.Errorf("subject %s, want the selected %s", subj, markHuang)
	}
	// Trace leads from the relationship back to the decision that created it (invariant 9).
	if first := tr.Transitions[0]; first.DecisionID != res.DecisionID {
		t.Errorf("creation transition names decision %q, want %s", first.DecisionID, res.DecisionID)
	}
	if len(res.FragmentIDs) != 2 {
		t.Errorf("fragments %v, want the cited evidence and the decision's", res.FragmentIDs)
	}
	checkDecisionRow(t, e, res, out.Review.ReviewID, densemem.ActionSelectEntity)
}

// TestConcurrentPlacingDecisions: ten decisions of one pending item at once, half bringing evidence
// (add_evidence, through the verifier and placement), half rejecting it. One lands; the others are
// stale and write nothing, and the relationship moved exactly once.
func TestConcurrentPlacingDecisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pl := e.rememberOne(e.A, insufficientDeploy("production", "main").request(nextKey()))
	out := only(t, pl)
	const n = 10
	errs := make([]error, n)
	runTogether(n, func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		req := resolveRequest(pl.IngestID, out, densemem.ActionReject)
		if i%2 == 0 {
			req.Action = densemem.ActionAddEvidence
			req.Evidence = []densemem.EvidenceInput{{Content: fmt.Sprintf("Check %d: the production environment deploys from the main branch.", i),
				SourceType: "manual"}}
		}
		_, errs[i] = e.client.Resolve(ctx, e.A, req)
	})
	checkOneDecisionWon(t, e, errs)
	if trs := e.transitions(out.RelationshipID); len(trs) != 2 {
		t.Errorf("transitions %v, want the creation and one decision", trs)
	}
	e.checkLedger()
}

// decisionFor sets up, in e, an open review item of A's that offers action and returns a valid
// decision of it: a hold for the hold choices, a pending statement for add_evidence and reject, an
// ambiguous mention for the identity choices, an unknown predicate for the predicate choices.
func (e *env) decisionFor(action string) densemem.ResolveRequest {
	e.t.Helper()
	item := func(pl *densemem.Placement) (densemem.RelationshipOutcome, string) { return only(e.t, pl), pl.IngestID }
	var out densemem.RelationshipOutcome
	var ingest string
	switch action {
	case densemem.ActionSupersedePrior, densemem.ActionKeepPriorRejectNew, densemem.ActionCorrect, densemem.ActionForget,
		densemem.ActionBothValid:
		h := e.holdAgainstPrior()
		out, ingest = h.held, h.ingestID
	case densemem.ActionAddEvidence, densemem.ActionReject, densemem.ActionAccept:
		out, ingest = item(e.rememberOne(e.A, insufficientDeploy("production", "main").request(nextKey())))
	case densemem.ActionSelectEntity, densemem.ActionConfirmNewEntity:
		repo := func(env, r string) densemem.RememberRequest {
			req := deploy(env, "main").request(nextKey())
			if r != "" {
				req.Proposal.Entities[1].IdentityContext = map[string]string{"repository": r}
			}
			return req
		}
		e.rememberReq(e.A, repo("production", "a"))
		e.rememberReq(e.A, repo("staging", "b"))
		out, ingest = item(e.rememberReq(e.A, repo("dev", "")))
	default: // the predicate choices
		f := deploy("production", "main")
		f.predicate, f.content = "builds from", "The production environment builds from the main branch."
		out, ingest = item(e.rememberReq(e.A, f.request(nextKey())))
	}
	if out.Review == nil {
		e.t.Fatalf("%s: no review item to decide: %+v", action, out)
	}
	e.clock.Advance(time.Minute)
	req := resolveRequest(ingest, out, action)
	evidence := func(content string) []densemem.EvidenceInput {
		return []densemem.EvidenceInput{{Content: content, SourceType: "manual"}}
	}
	switch action {
	case densemem.ActionCorrect:
		content := "The user confirmed that production deploys from the release branch."
		req.Evidence = evidence(content)
		proposal := deploy("production", "release").request("").Proposal
		proposal.Relationships[0].Evidence = []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}
		req.Proposal = &proposal
	case densemem.ActionAddEvidence, densemem.ActionAccept:
		req.Evidence = evidence("The production environment deploys from the main branch.")
	case densemem.ActionSelectEntity:
		req.Decision = &densemem.ResolveDecision{MentionRef: "o", EntityID: out.Review.Mentions[0].CandidateIDs[0]}
	case densemem.ActionConfirmNewEntity:
		req.Decision = &densemem.ResolveDecision{MentionRef: "o"}
		req.Evidence = evidence("Dev deploys from the main branch of the docs repository.")
	case densemem.ActionSelectPredicate:
		req.Decision = &densemem.ResolveDecision{PredicateKey: "deploys_from"}
	case densemem.ActionBothValid:
		req.Decision = &densemem.ResolveDecision{Scope: ptr("canary")}
	case densemem.ActionProposeVocabularyChange:
		req.Decision = &densemem.ResolveDecision{PredicateKey: "builds_from", Reason: "builds are not deployments"}
	}
	return req
}

// everyResolveAction are the actions Resolve carries out, each of which some review item offers.
var everyResolveAction = []string{densemem.ActionSupersedePrior, densemem.ActionKeepPriorRejectNew, densemem.ActionCorrect,
	densemem.ActionForget, densemem.ActionAddEvidence, densemem.ActionReject, densemem.ActionSelectEntity,
	densemem.ActionConfirmNewEntity, densemem.ActionSelectPredicate, densemem.ActionRejectMapping,
	densemem.ActionProposeVocabularyChange, densemem.ActionBothValid, densemem.ActionAccept}

// TestPendingItemGivesWayToAHold: a pending statement that gains support but conflicts with the
// owner's prior is held: its pending item closes as superseded and the new hold item, about the same
// relationship in the same write, stays open.
func TestPendingItemGivesWayToAHold(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.remember(e.A, deploy("production", "main"))
	pending := only(t, e.rememberOne(e.A, insufficientDeploy("production", "release").request(nextKey())))
	held := e.remember(e.A, deploy("production", "release"))
	if held.RelationshipID != pending.RelationshipID || held.Status != "needs_review" || held.Review == nil {
		t.Fatalf("support for the pending statement: %+v, want it held for review with a new item", held)
	}
	if got := e.reviewItemStatus(e.A, pending.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
		t.Errorf("pending item is %s, want superseded", got)
	}
	if got := e.reviewItemStatus(e.A, held.Review.ReviewID); got != densemem.ReviewItemStatusOpen {
		t.Errorf("hold item is %s, want open", got)
	}
}

// TestResolveAfterTheReviewerClosedThePrior: when the nightly reviewer supersedes the prior A's
// statement was held against (A lost the team's case), the held statement's question is gone: in the
// review's transaction the reviewer closes A's item as superseded and issues the new question — is
// the held statement current, now that nothing of A's contradicts it? — without changing A's
// statement (DESIGN §6.7, §9; decision 90 amended). The old item is refused as stale; the new one
// answers as its choices say.
func TestResolveAfterTheReviewerClosedThePrior(t *testing.T) {
	t.Parallel()
	for _, action := range []string{densemem.ActionSupersedePrior, densemem.ActionReject} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			s := e.openStaleDeployCase(false, true)
			pl := e.rememberOne(e.A, deploy("production", "hotfix").request(nextKey()))
			held := only(t, pl)
			if held.Status != "needs_review" || held.Review == nil {
				t.Fatalf("A's hotfix: %s/%s, want held against A1", held.Category, held.Status)
			}
			e.clock.Advance(defaultReviewTTL + 24*time.Hour)
			if rep := e.reviewTeamAs("night"); rep.Resolved != 1 {
				t.Fatalf("nightly: %+v, want the case resolved", rep)
			}
			if status, _, _, _ := e.relationshipState(s.A1); status != "superseded" {
				t.Fatalf("A1 is %s after the resolution, want superseded", status)
			}
			if status, _, _, _ := e.relationshipState(held.RelationshipID); status != "needs_review" {
				t.Fatalf("the reviewer changed A's held statement: %s, want needs_review", status)
			}
			if got := e.reviewItemStatus(e.A, held.Review.ReviewID); got != densemem.ReviewItemStatusSuperseded {
				t.Errorf("the old item is %s, want superseded", got)
			}
			if _, err := e.client.Resolve(e.ctx, e.A, resolveRequest(pl.IngestID, held, densemem.ActionSupersedePrior)); !errors.Is(err, densemem.ErrStaleDecision) {
				t.Fatalf("deciding the superseded item: %v, want ErrStaleDecision", err)
			}
			items, err := e.client.ListReviewItems(e.ctx, e.A, densemem.ListReviewItemsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var next *densemem.ReviewItem
			for i := range items.ReviewItems {
				if items.ReviewItems[i].RelationshipID == held.RelationshipID {
					next = &items.ReviewItems[i]
				}
			}
			if next == nil || len(next.RelatedRelationshipID) != 0 || next.Prompt == nil {
				t.Fatalf("open items %+v, want A's new question about the held statement, with no prior", items.ReviewItems)
			}
			var offered []string
			for _, c := range next.Prompt.Choices {
				offered = append(offered, c.Action)
			}
			if d := diff([]string{densemem.ActionSupersedePrior, densemem.ActionReject}, offered); d != "" {
				t.Errorf("choices (-want +got):\n%s", d)
			}
			res, err := e.client.Resolve(e.ctx, e.A, densemem.ResolveRequest{IngestID: next.IngestID, PlacementItemID: next.PlacementItemID,
				Action: action, IdempotencyKey: nextKey()})
			if err != nil {
				t.Fatalf("%s on the new question: %v", action, err)
			}
			want := map[string]string{densemem.ActionSupersedePrior: "active", densemem.ActionReject: "rejected"}[action]
			if status, _, _, _ := e.relationshipState(held.RelationshipID); status != want {
				t.Errorf("held statement is %s, want %s", status, want)
			}
			if len(res.Changes) != 1 || res.Changes[0].RelationshipID != held.RelationshipID {
				t.Errorf("changes %+v, want only the held statement's (A1 is already closed)", res.Changes)
			}
			if got := e.reviewItemStatus(e.A, next.ReviewID); got != densemem.ReviewItemStatusResolved {
				t.Errorf("item is %s, want resolved", got)
			}
			e.checkLedger()
		})
	}
}

// checkOneDecisionWon checks the outcome of concurrent decisions on one item: exactly one landed,
// every other one failed with ErrStaleDecision, and one decision row was written.
func checkOneDecisionWon(t *testing.T, e *env, errs []error) {
	t.Helper()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, densemem.ErrStaleDecision):
			t.Errorf("decision %d: %v, want success or ErrStaleDecision", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d decisions landed, want 1", won)
	}
	if rows := e.ledger().decisionRows(); len(rows) != 1 {
		t.Errorf("%d decision rows, want 1", len(rows))
	}
}
