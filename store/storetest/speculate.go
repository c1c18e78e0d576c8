package storetest

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Key speculation: RememberPrepare reads, with Speculate, the live state of every key a request's
// statements can fall on; KeysSpeculated.Narrow returns from it exactly what KeysLock would read for
// the keys the caller computed, when it covers them; WriteSetApplyFenced with a KeysFence writes only
// while everything the fence names is as read, and refuses with ErrStaleVersion otherwise, writing
// nothing.
var speculationContracts = []contract{
	{"NarrowReadsWhatKeysLockLocks", testSpeculationMatchesKeysLock},
	{"WriteSetApplyFencedChecksEveryKeyFact", testKeysFenceChecks},
}

// predContributesTo is a cardinality-many predicate: its keys are read by object.
const predContributesTo = "contributes_to"

// speculationScene is a world with two keys of Ada: works_on (cardinality one: read whole) and
// contributes_to (cardinality many: read for the request's objects), in the unscoped scope.
type speculationScene struct {
	w                *world
	worksOn, contrib conflict.Key
	vega, nova       identity.EntityID
	// sc is the works_on disagreement (a: Falcon, b: Osprey, and its case); held is b's held Vega
	// with its open item, closed a superseded Osprey of a.
	sc           scene
	held, closed relationship.Relationship
	item         store.ReviewItemRow
	// falcon is a's contribution to Falcon; other ones: b's Osprey, b's held Nova, a's Nova, a's
	// Vega, and a closed Falcon of b.
	falcon, osprey, heldNova, nova2, vega2, closedFalcon relationship.Relationship
}

func (e *env) speculationScene(team identity.TeamID) *speculationScene {
	w := e.world(team)
	pred, err := e.s.PredicateAppend(e.ctx, store.PredicateAppendParams{Team: team, CreatedBy: "host", CreatedAt: t0,
		Predicate: relationship.Predicate{Key: predContributesTo, Kind: relationship.KindState, Cardinality: relationship.CardinalityMany,
			SubjectKinds: []string{kindPerson}, ObjectKinds: []string{kindProject}}})
	w.must(err, "PredicateAppend")
	s := &speculationScene{w: w, worksOn: w.key(w.ada, ""), contrib: conflict.Key{Team: team, Subject: w.ada, PredicateKey: pred.Key}}
	var ws store.WriteSet
	s.vega, s.nova = w.entityRows(&ws, kindProject, "Vega", t0), w.entityRows(&ws, kindProject, "Nova", t0)
	w.apply(ws)
	s.sc = w.disagreement("", t0, at(time.Hour))
	s.held = w.rel(relSpec{owner: w.b, object: s.vega, content: "Ada works on Vega."})
	s.held = w.change(s.held, relationship.StatusNeedsReview, s.held.Tier, nil, at(time.Minute))
	s.item = w.itemRow(w.id("ing"), s.held.ID, s.held.Version, []string{string(s.sc.rb.ID)}, []int{s.sc.rb.Version})
	s.item.Kind, s.item.Profile = "relationship_conflict", w.b
	w.apply(store.WriteSet{ReviewItems: []store.ReviewItemRow{s.item}})
	s.closed = w.rel(relSpec{owner: w.a, object: w.osprey, content: "Ada worked on Osprey."})
	s.closed = w.change(s.closed, relationship.StatusSuperseded, s.closed.Tier, nil, at(time.Minute))
	w.rel(relSpec{owner: w.a, scope: "eu", content: "Ada works on Falcon in the EU."}) // another key

	// contributes_to: relSpec writes works_on, so the rows are written with the predicate changed.
	contrib := func(owner identity.ProfileID, object identity.EntityID, content string) relationship.Relationship {
		var ws store.WriteSet
		r := w.relRows(&ws, relSpec{owner: owner, object: object, content: content})
		r.PredicateKey, r.PredicateVersion = pred.Key, pred.Version
		ws.Relationships[0].Relationship = r
		ws.Observations[0].PredicateKey, ws.Observations[0].PredicateVersion = pred.Key, pred.Version
		w.apply(ws)
		return r
	}
	s.falcon = contrib(w.a, w.falcon, "Ada contributes to Falcon.")
	s.osprey = contrib(w.b, w.osprey, "Ada contributes to Osprey.")
	s.heldNova = contrib(w.b, s.nova, "Ada may contribute to Nova.")
	s.heldNova = w.change(s.heldNova, relationship.StatusNeedsReview, s.heldNova.Tier, nil, at(time.Minute))
	s.nova2 = contrib(w.a, s.nova, "Ada contributes to Nova.")
	s.vega2 = contrib(w.a, s.vega, "Ada contributes to Vega.")
	s.closedFalcon = contrib(w.b, w.falcon, "Ada contributed to Falcon.")
	s.closedFalcon = w.change(s.closedFalcon, relationship.StatusRetracted, s.closedFalcon.Tier, nil, at(time.Minute))
	return s
}

// speculation is a request's: "Ada works for Falcon" (by names; the predicate by its alias) and
// "Ada contributes to Falcon" (by known IDs), naming the two closed relationships.
func (s *speculationScene) speculation() *store.KeySpeculation {
	w := s.w
	return &store.KeySpeculation{Named: []relationship.ID{s.closed.ID, s.closedFalcon.ID}, Statements: []store.SpeculatedStatement{
		{Subject: store.MentionLookup{Names: []store.NameLookup{lookup(kindPerson, "Ada")}}, Predicate: "works_for",
			Object: store.MentionLookup{Names: []store.NameLookup{lookup(kindProject, "Falcon")}}},
		{Subject: store.MentionLookup{Known: w.ada}, Predicate: predContributesTo, Object: store.MentionLookup{Known: w.falcon}},
	}}
}

// params are what the caller locks for the speculation's request: both keys, contributes_to by
// object (Falcon, and objects for a new entity).
func (s *speculationScene) params(objects ...identity.EntityID) store.KeysLockParams {
	p := store.KeysLockParams{Team: s.w.team, Keys: []conflict.Key{s.worksOn, s.contrib}, LiveOnly: true,
		Named: []relationship.ID{s.closed.ID, s.closedFalcon.ID}}
	for _, o := range append([]identity.EntityID{s.w.falcon}, objects...) {
		p.ByObject = append(p.ByObject, store.KeyObject{Key: s.contrib, Object: relationship.Object{EntityID: o}})
	}
	return p
}

// prepare reads the speculation (with the principal, for a fence).
func (s *speculationScene) prepare() store.RememberPrepared {
	w := s.w
	prep, err := w.e.s.RememberPrepare(w.e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a, IdempotencyKey: w.id("key"),
		Speculate: s.speculation()})
	w.must(err, "RememberPrepare with a speculation")
	if prep.Principal == nil {
		w.t.Fatalf("RememberPrepare: no principal for %s", w.a)
	}
	return prep
}

// locked reads p with KeysLock.
func (s *speculationScene) locked(p store.KeysLockParams) (kl store.KeysLocked) {
	w := s.w
	w.must(w.e.s.Tx(w.e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
		kl, err = tx.KeysLock(ctx, p)
		return err
	}), "KeysLock")
	return kl
}

func relIDs(kl store.KeysLocked) []relationship.ID {
	var out []relationship.ID
	for _, r := range kl.Relationships {
		out = append(out, r.ID)
	}
	return out
}

func testSpeculationMatchesKeysLock(e *env) {
	s := e.speculationScene("tm_spec")
	w := s.w
	spec := s.prepare().Speculated
	keys := map[conflict.Key]bool{}
	for _, k := range spec.Keys {
		keys[k.Key] = k.Wide
	}
	if wide, ok := keys[s.worksOn]; !ok || !wide || len(spec.Keys) != 2 {
		e.t.Errorf("speculated keys %+v: want works_on read whole (its alias named it) and contributes_to by object", spec.Keys)
	}
	none := func(identity.EntityID) bool { return false }
	fresh := identity.EntityID("ent_created_by_the_call")
	for _, tc := range []struct {
		what    string
		p       store.KeysLockParams
		created func(identity.EntityID) bool
	}{
		{"both keys, contributes_to for Falcon", s.params(), none},
		{"both keys, contributes_to for Falcon and an entity the call creates", s.params(fresh),
			func(id identity.EntityID) bool { return id == fresh }},
		{"works_on alone", store.KeysLockParams{Team: w.team, Keys: []conflict.Key{s.worksOn}, LiveOnly: true}, none},
	} {
		got, ok := spec.Narrow(tc.p, tc.created)
		if !ok {
			e.t.Errorf("%s: Narrow reports no cover", tc.what)
			continue
		}
		if diff := cmp.Diff(s.locked(tc.p), got, cmpopts.EquateEmpty()); diff != "" {
			e.t.Errorf("%s: Narrow differs from KeysLock (-locked +narrowed):\n%s", tc.what, diff)
		}
	}
	want := []relationship.ID{s.sc.ra.ID, s.sc.rb.ID, s.held.ID, s.falcon.ID, s.heldNova.ID, s.nova2.ID, s.closed.ID, s.closedFalcon.ID}
	got, _ := spec.Narrow(s.params(), none)
	if diff := cmp.Diff(want, relIDs(got), cmpopts.SortSlices(func(a, b relationship.ID) bool { return a < b })); diff != "" {
		e.t.Errorf("narrowed relationships (-want +got):\n%s", diff)
	}
	if len(got.Cases) != 1 || len(got.Items) != 1 {
		e.t.Errorf("narrowed state: %d cases and %d items, want the case and the held statement's item", len(got.Cases), len(got.Items))
	}
	for _, tc := range []struct {
		what string
		p    store.KeysLockParams
	}{
		{"a key not speculated on", store.KeysLockParams{Team: w.team, Keys: []conflict.Key{w.key(w.ada, "eu")}, LiveOnly: true}},
		{"a key read by object, wanted whole", store.KeysLockParams{Team: w.team, Keys: []conflict.Key{s.contrib}, LiveOnly: true}},
		{"an object not speculated on", s.params(w.osprey)},
		{"a read of every status", func() store.KeysLockParams { p := s.params(); p.LiveOnly = false; return p }()},
	} {
		if _, ok := spec.Narrow(tc.p, none); ok {
			e.t.Errorf("%s: Narrow reports a cover", tc.what)
		}
	}
}

func testKeysFenceChecks(e *env) {
	s := e.speculationScene("tm_kf")
	w := s.w
	// fenced plans a write from a fresh speculation: a marker entity, behind the intake fence and
	// the keys' fence.
	fenced := func() (store.WriteSet, store.WriteFence, identity.EntityID) {
		prep := s.prepare()
		p := s.params()
		kl, ok := prep.Speculated.Narrow(p, func(identity.EntityID) bool { return false })
		if !ok {
			w.t.Fatalf("Narrow reports no cover")
		}
		kf := store.NewKeysFence(p, kl)
		var ws store.WriteSet
		mark := w.marker(&ws, w.id("Marker"))
		return ws, store.WriteFence{Team: w.team, Profile: w.a, IdempotencyKey: w.id("key"), ProfileStatus: prep.Principal.Profile.Status,
			ProfileScopes: prep.Principal.Profile.Scopes, Keys: &kf}, mark
	}
	apply := func(ws store.WriteSet, f store.WriteFence) error {
		return e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error { return tx.WriteSetApplyFenced(ctx, f, ws) })
	}
	ws, fence, mark := fenced()
	for _, tc := range []struct {
		what   string
		change func(f *store.KeysFence)
	}{
		{"a relationship the read did not see", func(f *store.KeysFence) {
			f.Relationships, f.Versions = f.Relationships[1:], f.Versions[1:]
		}},
		{"a relationship at another version", func(f *store.KeysFence) { f.Versions[0]++ }},
		{"another relationship", func(f *store.KeysFence) { f.Relationships[0] = "rel_other" }},
		{"a support the read did not see", func(f *store.KeysFence) { f.Supports-- }},
		{"a retirement the read did not see", func(f *store.KeysFence) { f.Retired++ }},
		{"a case the read did not see", func(f *store.KeysFence) { f.Cases, f.CaseVersions = nil, nil }},
		{"a case at another version", func(f *store.KeysFence) { f.CaseVersions[0]++ }},
		{"an item the read did not see", func(f *store.KeysFence) { f.Items = nil }},
		{"another item", func(f *store.KeysFence) { f.Items[0] = "rev_other" }},
	} {
		kf := *fence.Keys
		kf.Relationships, kf.Versions = append([]relationship.ID(nil), kf.Relationships...), append([]int(nil), kf.Versions...)
		kf.Cases, kf.CaseVersions = append([]conflict.ID(nil), kf.Cases...), append([]int(nil), kf.CaseVersions...)
		kf.Items = append([]string(nil), kf.Items...)
		tc.change(&kf)
		f := fence
		f.Keys = &kf
		e.checkErr(apply(ws, f), store.ErrStaleVersion, "a fence expecting "+tc.what)
		w.absent(mark, "a fence expecting "+tc.what)
	}
	e.must(apply(ws, fence), "the fenced write as read")

	// Changes made between the read and the write, each on a fresh read.
	for _, tc := range []struct {
		what   string
		change func() store.WriteSet
		stale  bool
	}{
		{"a support of a relationship read", func() store.WriteSet {
			var ws store.WriteSet
			w.evidenceRows(&ws, s.falcon, "Ada contributes to Falcon, again.", w.id("ing"), at(time.Hour))
			return ws
		}, true},
		{"a new statement about an object read", func() store.WriteSet {
			var ws store.WriteSet
			r := w.relRows(&ws, relSpec{owner: w.b, object: w.falcon, content: "Ada contributes to Falcon, says b."})
			r.PredicateKey = predContributesTo
			ws.Relationships[0].Relationship = r
			return ws
		}, true},
		{"a new statement on the key read whole", func() store.WriteSet {
			var ws store.WriteSet
			w.relRows(&ws, relSpec{owner: w.b, object: s.nova, content: "Ada works on Nova."})
			return ws
		}, true},
		{"a change of the case", func() store.WriteSet {
			cs := w.lockedCase(w.e.s, s.worksOn, s.sc.cs.ID)
			next := *cs
			next.Version++
			return store.WriteSet{CaseUpdates: []store.CaseUpdate{{Team: w.team, ID: cs.ID, ExpectVersion: cs.Version,
				Version: next.Version, Status: cs.Status, UpdatedAt: at(time.Hour)}},
				CaseEvents: []store.CaseEventRow{w.eventRow(next, cs.Status, store.ActorProfile, w.b, "reviewed", at(time.Hour))}}
		}, true},
		{"the held statement's item closed", func() store.WriteSet {
			var ws store.WriteSet
			w.closeRows(&ws, s.item, at(time.Hour))
			return ws
		}, true},
		{"a new statement about an object the read did not need", func() store.WriteSet {
			var ws store.WriteSet
			r := w.relRows(&ws, relSpec{owner: w.b, object: s.vega, content: "Ada contributes to Vega, says b."})
			r.PredicateKey = predContributesTo
			ws.Relationships[0].Relationship = r
			return ws
		}, false},
	} {
		ws, f, mark := fenced()
		w.apply(tc.change())
		err := apply(ws, f)
		if !tc.stale {
			e.must(err, "a fenced write after "+tc.what)
			continue
		}
		e.checkErr(err, store.ErrStaleVersion, "a fenced write after "+tc.what)
		w.absent(mark, "a fenced write after "+tc.what)
	}
}
