package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Identity: IdentityRead shows what a split or merge of one entity moves for one profile: the
// entity, the profile's observations whose current (latest) resolution event of some mention names
// it, the selected observations whatever their profile, and the profile's live relationships on the
// entity with their supports, each list bounded by the limit; Tx.IdentityRead reads the same inside
// a transaction. Another team's rows never show.
var reassignContracts = []contract{
	{"ReadShowsTheProfilesMovableRows", testIdentityRead},
}

// testIdentityRead: A's two statements about Ada and B's one; the mention of A's second observation
// later moved to Osprey, and A's second relationship is retracted. IdentityRead for A shows only
// A's first observation as movable, the selected ones (A's moved one, B's) with their current events,
// and only A's live relationship; with limit 1 and two live relationships of A, the list is cut and
// says so.
func testIdentityRead(e *env) {
	w := e.world(e.team("tm_x"))
	r1, r2 := w.rel(relSpec{}), w.rel(relSpec{object: w.osprey})
	r3 := w.rel(relSpec{content: "Ada works on Falcon, again."})
	rb := w.rel(relSpec{owner: w.b})
	w.change(r2, relationship.StatusRetracted, r2.Tier, nil, at(time.Hour))
	obs := map[relationship.ID]string{}
	for _, r := range []relationship.Relationship{r1, r2, r3, rb} {
		got, err := e.s.TraceLoad(e.ctx, store.TraceLoadParams{Team: w.team, RelationshipID: r.ID, Limit: 10, CaseSupports: 1})
		w.must(err, "TraceLoad")
		obs[r.ID] = got.Observations[0].ID
	}
	ev := func(o string, entity identity.EntityID, p identity.ProfileID, when time.Time) store.ResolutionRow {
		return store.ResolutionRow{Team: w.team, ID: w.id("res"), ObservationID: o, MentionRef: "s", MentionName: "Ada",
			EntityKind: kindPerson, EntityID: entity, Decision: identity.DecisionReused, Profile: p, IngestID: w.id("ing"), CreatedAt: when}
	}
	moved := ev(obs[r2.ID], w.osprey, w.a, at(2*time.Hour))
	cur1, cur3, curB := ev(obs[r1.ID], w.ada, w.a, t0), ev(obs[r3.ID], w.ada, w.a, t0), ev(obs[rb.ID], w.ada, w.b, t0)
	w.apply(store.WriteSet{Resolutions: []store.ResolutionRow{cur1, ev(obs[r2.ID], w.ada, w.a, t0), moved, cur3, curB}})

	params := store.IdentityReadParams{Team: w.team, Profile: w.a, Entity: w.ada, Selected: []string{obs[rb.ID], obs[r2.ID], "obs_missing"}, Limit: 10}
	got, err := e.s.IdentityRead(e.ctx, params)
	w.must(err, "IdentityRead")
	checkIdentityRead(e, "IdentityRead", got, w.ada, []string{obs[r1.ID], obs[r3.ID]}, []relationship.ID{r1.ID, r3.ID}, false)
	if len(got.Selected) != 2 || got.Selected[0].ID != obs[rb.ID] || got.Selected[0].Profile != w.b ||
		got.Selected[1].ID != obs[r2.ID] || !got.Selected[1].EverEntity || got.Selected[1].Current[0].EntityID != w.osprey {
		e.t.Errorf("IdentityRead selected %+v, want B's observation, then A's moved one (once Ada, now Osprey)", got.Selected)
	}
	for _, r := range got.Relationships {
		if len(r.Supports) != 1 || r.Supports[0].ObservationID != obs[r.Relationship.ID] || r.ObservationID != obs[r.Relationship.ID] {
			e.t.Errorf("IdentityRead relationship %s: observation %s, supports %+v, want its own observation's one support",
				r.Relationship.ID, r.ObservationID, r.Supports)
		}
	}

	params.Limit = 1
	cut, err := e.s.IdentityRead(e.ctx, params)
	w.must(err, "IdentityRead with limit 1")
	checkIdentityRead(e, "IdentityRead with limit 1", cut, w.ada, []string{obs[r1.ID]}, []relationship.ID{r1.ID}, true)
	if !cut.MovableTruncated {
		e.t.Errorf("IdentityRead with limit 1 lists %d of 2 movable observations without saying it is cut", len(cut.Movable))
	}

	params.Limit = 10
	var inTx store.IdentityRead
	w.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		inTx, err = tx.IdentityRead(ctx, params)
		return err
	}), "Tx.IdentityRead")
	checkIdentityRead(e, "Tx.IdentityRead", inTx, w.ada, []string{obs[r1.ID], obs[r3.ID]}, []relationship.ID{r1.ID, r3.ID}, false)

	y := e.world(e.team("tm_y")) // built alike: its Ada has the same ID, none of x's rows
	other, err := e.s.IdentityRead(e.ctx, store.IdentityReadParams{Team: y.team, Profile: y.a, Entity: w.ada, Selected: params.Selected, Limit: 10})
	w.must(err, "IdentityRead in another team")
	if len(other.Movable)+len(other.Selected)+len(other.Relationships) != 0 {
		e.t.Errorf("IdentityRead in another team shows team %s's rows: %+v", w.team, other)
	}
	missing, err := e.s.IdentityRead(e.ctx, store.IdentityReadParams{Team: w.team, Profile: w.a, Entity: "ent_missing", Limit: 1})
	w.must(err, "IdentityRead of a missing entity")
	if missing.Entity != nil {
		e.t.Errorf("IdentityRead of a missing entity: %+v, want none", missing.Entity)
	}
}

// checkIdentityRead compares a read's entity, movable observations and relationships with the
// expected IDs.
func checkIdentityRead(e *env, what string, got store.IdentityRead, entity identity.EntityID, movable []string,
	rels []relationship.ID, relsCut bool) {
	e.t.Helper()
	if got.Entity == nil || got.Entity.ID != entity {
		e.t.Errorf("%s: entity %+v, want %s", what, got.Entity, entity)
	}
	var ids []string
	for _, o := range got.Movable {
		ids = append(ids, o.ID)
		if len(o.Current) != 1 || o.Current[0].EntityID != entity {
			e.t.Errorf("%s: movable observation %s has current events %+v, want one naming %s", what, o.ID, o.Current, entity)
		}
	}
	var relIDs []relationship.ID
	for _, r := range got.Relationships {
		relIDs = append(relIDs, r.Relationship.ID)
	}
	if !slices.Equal(ids, movable) || !slices.Equal(relIDs, rels) || got.RelationshipsTruncated != relsCut {
		e.t.Errorf("%s: movable %v, relationships %v (cut %v), want %v, %v (cut %v)", what, ids, relIDs,
			got.RelationshipsTruncated, movable, rels, relsCut)
	}
}
