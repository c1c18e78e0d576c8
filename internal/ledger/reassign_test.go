package ledger

import (
	"testing"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// idSupport is a stored support link of id from observation obs.
func idSupport(id relationship.ID, obs string) store.IdentitySupport {
	return store.IdentitySupport{SupportLinkRow: store.SupportLinkRow{Team: team, ID: "sup_" + obs, RelationshipID: id,
		FragmentID: evidence.FragmentID("frg_" + obs), ObservationID: obs, VerificationID: "ver_" + obs, Start: 0, End: 5,
		SourceGroup: "group:" + obs, ContentHash: "hash:" + obs, Authority: "standard", Author: alice, Profile: alice}}
}

// TestMoves: a relationship moves when a moved observation supports it, or created it when it has no
// supports; the supports split into those that move and those that stay.
func TestMoves(t *testing.T) {
	moved := map[string]bool{"obs_m": true}
	for _, c := range []struct {
		name       string
		rel        store.IdentityRelationship
		move, stay int
		ok         bool
	}{
		{"supported by a moved observation", store.IdentityRelationship{ObservationID: "obs_s",
			Supports: []store.IdentitySupport{idSupport("r", "obs_m")}}, 1, 0, true},
		{"supported from both sides", store.IdentityRelationship{ObservationID: "obs_m",
			Supports: []store.IdentitySupport{idSupport("r", "obs_m"), idSupport("r", "obs_s")}}, 1, 1, true},
		{"created by a moved observation, supported by another", store.IdentityRelationship{ObservationID: "obs_m",
			Supports: []store.IdentitySupport{idSupport("r", "obs_s")}}, 0, 1, false},
		{"pending, created by a moved observation", store.IdentityRelationship{ObservationID: "obs_m"}, 0, 0, true},
		{"pending, created by another", store.IdentityRelationship{ObservationID: "obs_s"}, 0, 0, false},
	} {
		move, stay, ok := Moves(c.rel, moved)
		if len(move) != c.move || len(stay) != c.stay || ok != c.ok {
			t.Errorf("%s: %d move, %d stay, %v; want %d, %d, %v", c.name, len(move), len(stay), ok, c.move, c.stay, c.ok)
		}
	}
}

// TestReassignSplitsAMixedStatement: a split of one of a relationship's two supporting observations
// creates the new entity, moves the mention, retracts the relationship naming the restatement on the
// new entity, and restates it there and on the old entity, each with its own support, both active and
// each first transition naming the relationship it came from.
func TestReassignSplitsAMixedStatement(t *testing.T) {
	l := newLedger(ProfileActor(alice))
	r := rel("rel_old", alice, objA, nil, nil)
	load(l, []relationship.Relationship{r})
	to := identity.Entity{ID: "ent_new", Kind: "person", Names: []identity.Name{{Name: "Sam", Normalized: "sam", Kind: identity.NameCanonical}}}
	got, _ := l.Reassign(Reassignment{DecisionID: "dec_1", Action: store.IdentitySplit, From: key.Subject, To: to, Create: true,
		Observations: []store.IdentityObservation{{ID: "obs_m", Profile: alice, Current: []store.ResolutionRow{
			{ObservationID: "obs_m", MentionRef: "s", EntityID: key.Subject}, {ObservationID: "obs_m", MentionRef: "o", EntityID: "ent_a"}}}},
		Relationships: []store.IdentityRelationship{{Relationship: r, ObservationID: "obs_s",
			Supports: []store.IdentitySupport{idSupport("rel_old", "obs_m"), idSupport("rel_old", "obs_s")}}}})
	if len(got) != 1 || got[0].From != "rel_old" || got[0].Moved == "" || got[0].Stayed == "" {
		t.Fatalf("re-derived %+v, want rel_old restated on both entities", got)
	}
	if len(l.WS.Entities) != 1 || l.WS.Entities[0].ID != "ent_new" || len(l.WS.Resolutions) != 1 ||
		l.WS.Resolutions[0].EntityID != "ent_new" || l.WS.Resolutions[0].Decision != DecisionSplit {
		t.Errorf("entities %+v, resolutions %+v: want the new entity and one split event for mention s", l.WS.Entities, l.WS.Resolutions)
	}
	want := map[relationship.ID]relationship.Status{"rel_old": relationship.StatusRetracted, got[0].Moved: relationship.StatusActive,
		got[0].Stayed: relationship.StatusActive}
	for _, tr := range l.WS.Transitions {
		if tr.ToStatus != want[tr.RelationshipID] || tr.Reason != "split:dec_1" {
			t.Errorf("transition %+v, want %s with reason split:dec_1", tr, want[tr.RelationshipID])
		}
		if tr.FromVersion == 0 && tr.Related != "rel_old" || tr.RelationshipID == "rel_old" && tr.Related != got[0].Moved {
			t.Errorf("transition %+v does not name its lineage", tr)
		}
	}
	if len(l.WS.Transitions) != 3 || len(l.WS.Supports) != 2 {
		t.Errorf("%d transitions and %d supports, want 3 and 2", len(l.WS.Transitions), len(l.WS.Supports))
	}
}

// TestReassignKeepsRetiredCopiesIneffective: a split moving a statement whose moved support's
// fragment is retired restates it pending (tier candidate) on the new entity: the copy of a retired
// support is no more effective than the support; the statement staying with its effective support
// stays active.
func TestReassignKeepsRetiredCopiesIneffective(t *testing.T) {
	l := newLedger(ProfileActor(alice))
	r := rel("rel_old", alice, objA, nil, nil)
	load(l, []relationship.Relationship{r})
	retired := idSupport("rel_old", "obs_m")
	retired.Retirement = "ret_1"
	to := identity.Entity{ID: "ent_new", Kind: "person", Names: []identity.Name{{Name: "Sam", Normalized: "sam", Kind: identity.NameCanonical}}}
	got, _ := l.Reassign(Reassignment{DecisionID: "dec_1", Action: store.IdentitySplit, From: key.Subject, To: to, Create: true,
		Observations: []store.IdentityObservation{{ID: "obs_m", Profile: alice, Current: []store.ResolutionRow{
			{ObservationID: "obs_m", MentionRef: "s", EntityID: key.Subject}, {ObservationID: "obs_m", MentionRef: "o", EntityID: "ent_a"}}}},
		Relationships: []store.IdentityRelationship{{Relationship: r, ObservationID: "obs_s",
			Supports: []store.IdentitySupport{retired, idSupport("rel_old", "obs_s")}}}})
	if len(got) != 1 || got[0].Moved == "" || got[0].Stayed == "" {
		t.Fatalf("re-derived %+v, want rel_old restated on both entities", got)
	}
	for _, tr := range l.WS.Transitions {
		switch tr.RelationshipID {
		case got[0].Moved:
			if tr.ToStatus != relationship.StatusPendingEvidence || tr.ToTier != relationship.TierCandidate {
				t.Errorf("the moved restatement %s/%s, want pending_evidence/candidate: its only support is retired", tr.ToStatus, tr.ToTier)
			}
		case got[0].Stayed:
			if tr.ToStatus != relationship.StatusActive || tr.ToTier != relationship.TierValidatedClaim {
				t.Errorf("the staying restatement %s/%s, want active/validated_claim", tr.ToStatus, tr.ToTier)
			}
		}
	}
}
