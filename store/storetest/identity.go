package storetest

import (
	"context"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Identity corrections: an identity_correction case's members lie on other keys than its own, so
// KeysLock returns them (locked, with their supports) when asked with Members; and IntakeLock reads
// the entities an entity's mentions were stated distinct from, the identity cases a change on it may
// touch.
var identityContracts = []contract{
	{"KeysLockReturnsCaseMembersOnOtherKeys", testKeysLockCaseMembers},
	{"IntakeLockReadsDistinctions", testIntakeLockDistinctions},
}

// identityScene is Ada (combined) working on Falcon for a, and b's Ada Two, stated distinct from Ada,
// working on Falcon too, with the identity case of Ada over both.
type identityScene struct {
	adaTwo identity.EntityID
	ra, rb relationship.Relationship
	cs     store.CaseRow
}

func (w *world) identityScene() identityScene {
	w.t.Helper()
	var ws store.WriteSet
	var sc identityScene
	sc.adaTwo = w.entityRows(&ws, kindPerson, "Ada Two", t0)
	sc.ra = w.relRows(&ws, relSpec{owner: w.a, content: "Ada works on Falcon."})
	sc.rb = w.relRows(&ws, relSpec{owner: w.b, subject: sc.adaTwo, content: "Ada of the other team works on Falcon."})
	ws.Resolutions = append(ws.Resolutions, store.ResolutionRow{Team: w.team, ID: w.id("res"),
		ObservationID: ws.Observations[len(ws.Observations)-1].ID, MentionRef: "s", MentionName: "Ada", EntityKind: kindPerson,
		EntityID: sc.adaTwo, Decision: identity.DecisionCreated, Context: map[string]string{"team": "other"},
		DistinctFrom: []identity.EntityID{w.ada}, Profile: w.b, IngestID: w.id("ing"), CreatedAt: t0})
	sc.cs = w.caseRows(&ws, conflict.IdentityKey(w.team, w.ada), []relationship.Relationship{sc.ra, sc.rb}, t0, t0)
	w.apply(ws)
	return sc
}

func testKeysLockCaseMembers(e *env) {
	w := e.world(e.team("tm_identity"))
	sc := w.identityScene()
	idKey := conflict.IdentityKey(w.team, w.ada)
	read := func(p store.KeysLockParams) (out store.KeysLocked) {
		p.Team = w.team
		e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
			out, err = tx.KeysLock(ctx, p)
			return err
		}), "KeysLock")
		return out
	}
	ids := func(rs []relationship.Relationship) []relationship.ID {
		var out []relationship.ID
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	supported := func(kl store.KeysLocked, id relationship.ID) bool {
		return slices.ContainsFunc(kl.Supports, func(s store.SupportRow) bool { return s.RelationshipID == id })
	}

	kl := read(store.KeysLockParams{Keys: []conflict.Key{idKey}, Members: true})
	if len(kl.Cases) != 1 || kl.Cases[0].ID != sc.cs.ID || len(kl.Cases[0].Members) != 2 {
		e.t.Fatalf("KeysLock of the identity key: cases %+v, want the identity case with two members", kl.Cases)
	}
	if got, want := ids(kl.Members), ids([]relationship.Relationship{sc.ra, sc.rb}); !slices.Equal(got, want) {
		e.t.Errorf("KeysLock Members = %v, want both members %v", got, want)
	}
	if len(kl.Relationships) != 0 || !supported(kl, sc.ra.ID) || !supported(kl, sc.rb.ID) {
		e.t.Errorf("KeysLock: relationships %v, supports %+v; want no key relationships and both members' supports",
			ids(kl.Relationships), kl.Supports)
	}
	// A member on one of the keys is returned once, as a relationship of its key.
	kl = read(store.KeysLockParams{Keys: []conflict.Key{idKey, w.key(w.ada, "")}, Members: true})
	if !slices.Equal(ids(kl.Relationships), []relationship.ID{sc.ra.ID}) || !slices.Equal(ids(kl.Members), []relationship.ID{sc.rb.ID}) {
		e.t.Errorf("KeysLock with ra's key: relationships %v, members %v; want ra on its key, rb as a member",
			ids(kl.Relationships), ids(kl.Members))
	}
	if kl = read(store.KeysLockParams{Keys: []conflict.Key{idKey}}); len(kl.Members) != 0 {
		e.t.Errorf("KeysLock without Members returned members %v", ids(kl.Members))
	}
}

func testIntakeLockDistinctions(e *env) {
	w := e.world(e.team("tm_identity"))
	sc := w.identityScene()
	read := func(entity identity.EntityID) (out store.IntakeLocked) {
		e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
			out, err = tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.b, IdempotencyKey: "k",
				DistinctionsOf: entity})
			return err
		}), "IntakeLock")
		return out
	}
	if got := read(sc.adaTwo).Distinctions; !slices.Equal(got, []identity.EntityID{w.ada}) {
		e.t.Errorf("distinctions of Ada Two = %v, want [%s]", got, w.ada)
	}
	if got := read(w.ada).Distinctions; len(got) != 0 {
		e.t.Errorf("distinctions of Ada = %v, want none", got)
	}
}
