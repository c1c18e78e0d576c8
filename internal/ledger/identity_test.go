package ledger

import (
	"testing"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// TestCorrectIdentity: bob's relationship on ent_s2, an entity stated distinct from ent_s, corrects
// alice's same statement on ent_s (not carol's other object, not bob's own, not a retracted one),
// and the identity case of ent_s opens over the pair; alice's row is untouched.
func TestCorrectIdentity(t *testing.T) {
	t.Parallel()
	l := newLedger(ProfileActor(bob))
	aliceA := rel("r_alice_a", alice, objA, nil, nil)
	carolB := rel("r_carol_b", carol, objB, nil, nil)
	bobOwn := rel("r_bob_a", bob, objA, nil, nil)
	gone := rel("r_gone", carol, objA, nil, nil)
	gone.Status = relationship.StatusRetracted
	load(l, []relationship.Relationship{aliceA, carolB, bobOwn, gone})

	mine := rel("r_new", bob, objA, nil, nil)
	mine.Subject = "ent_s2"
	l.Create(&mine, "obs_1", ReasonAccepted)
	xs := l.CorrectIdentity(&mine, key.Subject, "ver_1")
	if len(xs) != 1 || xs[0].To != aliceA.ID || xs[0].Kind != string(relationship.CrossReferenceCorrects) || xs[0].From != mine.ID {
		t.Fatalf("CorrectIdentity wrote %+v, want one corrects from %s to alice's %s", xs, mine.ID, aliceA.ID)
	}
	refs := l.MaintainIdentities()
	cs := l.WS.CaseInserts
	if len(cs) != 1 || cs[0].Kind != conflict.KindIdentityCorrection || cs[0].Key != conflict.IdentityKey(team, key.Subject) {
		t.Fatalf("cases %+v, want one identity_correction case keyed by ent_s", cs)
	}
	if refs[aliceA.ID] == nil || refs[mine.ID] == nil || refs[aliceA.ID].ID != cs[0].ID {
		t.Errorf("MaintainIdentities refs %+v, want both members in case %s", refs, cs[0].ID)
	}
	positions := map[identity.EntityID]bool{}
	for _, p := range l.WS.Positions {
		positions[p.Key.Object.EntityID] = true
	}
	if len(positions) != 2 || !positions[key.Subject] || !positions["ent_s2"] {
		t.Errorf("positions %v, want ent_s and ent_s2", positions)
	}
	for _, u := range l.WS.Updates {
		if u.ID == aliceA.ID {
			t.Errorf("alice's relationship was updated: %+v", u)
		}
	}
	// Maintaining again changes nothing: the case already holds the pair.
	before := len(l.WS.CaseEvents)
	l.MaintainIdentities()
	if len(l.WS.CaseEvents) != before {
		t.Errorf("a second maintenance wrote %d more events", len(l.WS.CaseEvents)-before)
	}
}

// TestMaintainIdentitiesRepairsLoadedCases: a forget of the only correction, with the live identity
// case and its member on another key loaded, dismisses the case in the same transaction.
func TestMaintainIdentitiesRepairsLoadedCases(t *testing.T) {
	t.Parallel()
	l := newLedger(ProfileActor(bob))
	aliceA := rel("r_alice_a", alice, objA, nil, nil)
	bobA := rel("r_bob_a", bob, objA, nil, nil)
	bobA.Subject = "ent_s2"
	idKey := conflict.IdentityKey(team, key.Subject)
	pkS := conflict.PositionKey{Object: relationship.Object{EntityID: key.Subject}, Polarity: relationship.PolarityPositive}
	pkS2 := conflict.PositionKey{Object: relationship.Object{EntityID: "ent_s2"}, Polarity: relationship.PolarityPositive}
	live := store.CaseRow{Team: team, ID: "cf_id", Kind: conflict.KindIdentityCorrection, Key: idKey, Status: conflict.StatusOpen,
		Version: 1, OpenedAt: now, ReviewDueAt: dueT, PolicyVersion: 3,
		Positions: map[conflict.PositionKey]conflict.PositionID{pkS: "pos_s", pkS2: "pos_s2"},
		Members: []conflict.MemberRef{{Position: pkS, Relationship: aliceA.ID, Version: 1, Owner: alice},
			{Position: pkS2, Relationship: bobA.ID, Version: 1, Owner: bob}}}
	l.Load(store.KeysLocked{Relationships: []relationship.Relationship{bobA}, Members: []relationship.Relationship{aliceA},
		Supports: []store.SupportRow{support(aliceA.ID, alice), support(bobA.ID, bob)}, Cases: []store.CaseRow{live}},
		[]relationship.Predicate{worksAt})
	l.Retract(l.Find(bobA.ID), "not that Ada")
	l.MaintainIdentities()
	if len(l.WS.CaseUpdates) != 1 || l.WS.CaseUpdates[0].Status != conflict.StatusDismissed || l.WS.CaseUpdates[0].ID != live.ID {
		t.Errorf("case updates %+v, want the identity case dismissed", l.WS.CaseUpdates)
	}
	if l.Find(aliceA.ID) == nil {
		t.Errorf("the member on another key is not found")
	}
}
