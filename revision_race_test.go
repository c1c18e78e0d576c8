package densemem_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// TestSourceRevisionRacingResponseAndReviewer: A's revision of the source behind its side of a case
// races B's conflict response (new evidence for B's side at the version B read) and the nightly
// reviewer of the overdue case. Whatever order they commit in, the end state is one the three calls
// could have reached one after another: the ledger agrees with every row (checkLedger), no current
// relationship is left without effective support, A's relationship is either pending_evidence (the
// revision recomputed it) or superseded (the reviewer resolved first), and B's response either
// joined the case or was refused as stale.
func TestSourceRevisionRacingResponseAndReviewer(t *testing.T) {
	slow(t)
	t.Parallel()
	for round := range 3 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, quiet)
			e.step()
			rA := only(t, e.rememberReq(e.A, sourced(deploy("production", "main"), docKey, "v1", "")))
			e.step()
			rB := e.remember(e.B, withContent(deploy("production", "hotfix"), "Chat: the production environment deploys from the hotfix branch."))
			e.step()
			e.remember(e.C, withContent(deploy("production", "main"), "Runbook: the production environment deploys from the main branch."))
			if rB.Conflict == nil {
				t.Fatalf("no case: %+v", rB)
			}
			cs := e.ledger().Case(rB.Conflict.ConflictID)
			pol, err := e.client.TeamPolicy(e.ctx, e.admin)
			if err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(pol.ReviewTTL + time.Hour)

			v2 := withContent(deploy("staging", "main"), "The staging environment deploys from the main branch.")
			response := responding(withContent(deploy("production", "hotfix"),
				"Pager note: the production environment deploys from the hotfix branch."), cs.ID, cs.Version)
			var errs [3]error
			runTogether(3, func(i int) {
				switch i {
				case 0:
					_, errs[0] = e.client.Remember(e.ctx, e.A, sourced(v2, docKey, "v2", "v1"))
				case 1:
					_, errs[1] = e.client.Remember(e.ctx, e.B, response)
				case 2:
					_, errs[2] = e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team}})
				}
			})
			if errs[0] != nil || errs[2] != nil {
				t.Fatalf("revision: %v; review: %v", errs[0], errs[2])
			}
			if errs[1] != nil && !errors.Is(errs[1], densemem.ErrStaleConflictVersion) {
				t.Fatalf("response: %v, want success or ErrStaleConflictVersion", errs[1])
			}
			e.checkLedger()
			e.checkEffectiveSupport()
			a := e.ledger().Relationship(rA.RelationshipID)
			if a.Status != "pending_evidence" && a.Status != "superseded" {
				t.Errorf("A's relationship is %s, want pending_evidence (recomputed) or superseded (resolved first)", a.Status)
			}
			retired := 0
			for _, tr := range e.ledger().Transitions(rA.RelationshipID) {
				if tr.ActorKind == "system" {
					retired++
				}
			}
			if (a.Status == "pending_evidence") != (retired == 1) || retired > 1 {
				t.Errorf("A's relationship is %s with %d system transitions", a.Status, retired)
			}
		})
	}
}

// checkEffectiveSupport asserts that no current (active or held) relationship is left without an
// effective support: each has a support link whose fragment is not retired.
func (e *env) checkEffectiveSupport() {
	e.t.Helper()
	bad := e.ledger().Strings(`SELECT r.relationship_id || ' ' || r.status FROM relationships r
		WHERE r.status IN ('active', 'needs_review') AND NOT EXISTS (
		    SELECT 1 FROM support_links s WHERE s.team_id = r.team_id AND s.relationship_id = r.relationship_id
		    AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = s.team_id AND fr.fragment_id = s.fragment_id))`)
	if len(bad) > 0 {
		e.t.Errorf("current relationships without effective support: %v", bad)
	}
}
