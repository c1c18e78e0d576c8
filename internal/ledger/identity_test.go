package ledger

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

// TestReviewResolvesAnIdentityCase: the reviewer's resolution of an identity case supersedes, at the
// cutoff, every member of the side that lost — alice's statements on ent_s when bob's distinct
// identities won together, bob's corrections when alice's identity won — though they lie on keys the
// transaction did not lock (loaded as the case's members); the winners, the supports, the
// cross-references and the resolutions are not written, and no key is touched.
func TestReviewResolvesAnIdentityCase(t *testing.T) {
	t.Parallel()
	aliceA := rel("r_alice_a", alice, objA, nil, nil)
	aliceB := rel("r_alice_b", alice, objB, nil, nil)
	bobA := rel("r_bob_a", bob, objA, nil, nil)
	bobA.Subject = "ent_s2"
	bobB := rel("r_bob_b", bob, objB, nil, nil)
	bobB.Subject = "ent_s3"
	idKey := conflict.IdentityKey(team, key.Subject)
	pk := func(e identity.EntityID) conflict.PositionKey {
		return conflict.PositionKey{Object: relationship.Object{EntityID: e}, Polarity: relationship.PolarityPositive}
	}
	tests := []struct {
		name      string
		winner    identity.EntityID
		losers    []relationship.ID
		winners   []relationship.ID
		preferred conflict.PositionID
	}{
		{"the distinct identities won together", "ent_s3", []relationship.ID{aliceA.ID, aliceB.ID},
			[]relationship.ID{bobA.ID, bobB.ID}, "pos_s3"},
		{"the combined identity won", key.Subject, []relationship.ID{bobA.ID, bobB.ID},
			[]relationship.ID{aliceA.ID, aliceB.ID}, "pos_s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			live := store.CaseRow{Team: team, ID: "cf_id", Kind: conflict.KindIdentityCorrection, Key: idKey, Status: conflict.StatusOpen,
				Version: 1, OpenedAt: now, ReviewDueAt: dueT, PolicyVersion: 3, ClaimToken: "tok_1",
				Positions: map[conflict.PositionKey]conflict.PositionID{pk(key.Subject): "pos_s", pk("ent_s2"): "pos_s2", pk("ent_s3"): "pos_s3"},
				Members: []conflict.MemberRef{{Position: pk(key.Subject), Relationship: aliceA.ID, Version: 1, Owner: alice},
					{Position: pk(key.Subject), Relationship: aliceB.ID, Version: 1, Owner: alice},
					{Position: pk("ent_s2"), Relationship: bobA.ID, Version: 1, Owner: bob},
					{Position: pk("ent_s3"), Relationship: bobB.ID, Version: 1, Owner: bob}}}
			members := []relationship.Relationship{aliceA, aliceB, bobA, bobB}
			var sups []store.SupportRow
			for _, r := range members {
				sups = append(sups, support(r.ID, r.Owner))
			}
			l := newLedger(ReviewerActor)
			l.Load(store.KeysLocked{Members: members, Supports: sups, Cases: []store.CaseRow{live}}, []relationship.Predicate{worksAt})
			got := l.Review(l.Key(idKey), l.Case(live.ID), "tok_1", now.Add(24*time.Hour), func(ps []conflict.Position) conflict.Decision {
				if len(ps) != 3 {
					t.Errorf("decide got %d positions, want the three identities", len(ps))
				}
				w := slices.IndexFunc(ps, func(p conflict.Position) bool { return p.Key == pk(tt.winner) })
				return conflict.Decision{Outcome: conflict.OutcomeResolve, Winner: w, Cutoff: *feb,
					Basis: conflict.BasisEvidenceTime, Reason: conflict.ReasonPostTTLMajority}
			})
			if got != conflict.OutcomeResolve {
				t.Fatalf("outcome %s, want resolve", got)
			}
			var superseded []relationship.ID
			for _, u := range l.WS.Updates {
				if u.Status != relationship.StatusSuperseded || u.ValidTo == nil || !u.ValidTo.Equal(*feb) || u.ExpectVersion != 1 {
					t.Errorf("update %+v, want superseded at %v from version 1", u, *feb)
				}
				superseded = append(superseded, u.ID)
			}
			if d := cmp.Diff(tt.losers, superseded); d != "" {
				t.Errorf("superseded (-want +got):\n%s", d)
			}
			for _, tr := range l.WS.Transitions {
				if tr.ActorKind != store.ActorSystemConflictReviewer || tr.Reason != "conflict_resolved:cf_id" {
					t.Errorf("transition %+v, want the reviewer's conflict_resolved:cf_id", tr)
				}
			}
			for _, id := range tt.winners {
				if r := l.Find(id); r.Status != relationship.StatusActive || r.Version != 1 {
					t.Errorf("winner %s changed: %+v", id, r)
				}
			}
			if n := len(l.WS.Supports) + len(l.WS.CrossRefs) + len(l.WS.Relationships); n != 0 {
				t.Errorf("the review wrote %d supports, cross-references or relationships, want none", n)
			}
			if ks := l.Touched(); len(ks) != 0 {
				t.Errorf("the review touched keys %v, want none: the losers' keys are not locked", ks)
			}
			if rv := l.WS.CaseReviews; len(rv) != 1 || rv[0].Status != conflict.StatusResolved || rv[0].Preferred != tt.preferred {
				t.Errorf("case review %+v, want resolved preferring %s", rv, tt.preferred)
			}
		})
	}
}
