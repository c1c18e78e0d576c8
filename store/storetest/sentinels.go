package storetest

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Sentinel errors: each method returns the sentinel its documentation names, and a failed write
// leaves nothing of its transaction.
var sentinelContracts = []contract{
	{"NotFound", testNotFound},
	{"StaleRelationshipVersion", testStaleRelationshipVersion},
	{"StaleCaseVersion", testStaleCaseVersion},
	{"StalePolicyVersion", testStalePolicyVersion},
	{"PredicateCheckRefuses", testPredicateCheck},
	{"TransitionlessChangeIsIntegrity", testTransitionlessChange},
}

// testNotFound reads and changes rows that do not exist.
func testNotFound(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_n"))
	ghost := e.team("tm_ghost")

	e.checkErr(e.s.ProfileCreate(ctx, store.ProfileCreateParams{Team: ghost, Profile: "pf_a", Name: "a", CreatedAt: t0}),
		store.ErrNotFound, "ProfileCreate in a missing team")
	e.checkErr(e.s.ProfileSetStatus(ctx, store.ProfileSetStatusParams{Team: w.team, Profile: "pf_missing",
		Status: identity.ProfileDisabled, UpdatedAt: t0}), store.ErrNotFound, "ProfileSetStatus of a missing profile")
	_, err := e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: w.team, Profile: "pf_missing"})
	e.checkErr(err, store.ErrNotFound, "PrincipalLoad of a missing profile")
	_, err = e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: ghost, Profile: w.a})
	e.checkErr(err, store.ErrNotFound, "PrincipalLoad in a missing team")
	_, err = e.s.PolicyGet(ctx, ghost)
	e.checkErr(err, store.ErrNotFound, "PolicyGet of a missing team")
	_, err = e.s.PolicyAppend(ctx, store.PolicyAppendParams{ExpectVersion: 1, Policy: store.Policy{Team: ghost,
		ReviewTTL: reviewTTL, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "host", CreatedAt: t0}})
	e.checkErr(err, store.ErrNotFound, "PolicyAppend of a missing team")
	_, err = e.s.PredicateAppend(ctx, store.PredicateAppendParams{Team: ghost, CreatedBy: "host", CreatedAt: t0,
		Predicate: relationship.Predicate{Key: "leads", Kind: relationship.KindState, Cardinality: relationship.CardinalityOne}})
	e.checkErr(err, store.ErrNotFound, "PredicateAppend in a missing team")
	_, err = e.s.RelationshipGet(ctx, w.team, "rel_missing")
	e.checkErr(err, store.ErrNotFound, "RelationshipGet of a missing relationship")
	_, err = e.s.TraceLoad(ctx, traceParams(w.team, "rel_missing", 10))
	e.checkErr(err, store.ErrNotFound, "TraceLoad of a missing relationship")

	// Absence that is not an error.
	for _, p := range []store.RememberPrepareParams{{Team: w.team, Profile: "pf_missing"}, {Team: ghost, Profile: w.a}} {
		prep, err := e.s.RememberPrepare(ctx, p)
		e.must(err, "RememberPrepare")
		if prep.Principal != nil {
			t.Errorf("RememberPrepare(%s, %s).Principal = %+v, want nil", p.Team, p.Profile, prep.Principal)
		}
	}
	rec, err := e.s.IdempotencyGet(ctx, w.team, w.a, "never-used")
	e.must(err, "IdempotencyGet")
	if rec != nil {
		t.Errorf("IdempotencyGet of an unused key = %+v, want nil", rec)
	}
	e.must(e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: "pf_missing", IdempotencyKey: "k"})
		if err == nil && (il.ProfileActive || il.Idempotency != nil) {
			t.Errorf("IntakeLock of a missing profile = %+v, want it inactive without a record", il)
		}
		return err
	}), "IntakeLock of a missing profile")
}

// marker adds a new entity to ws, so a failed write set can be shown to have left nothing.
func (w *world) marker(ws *store.WriteSet, name string) identity.EntityID {
	return w.entityRows(ws, kindProject, name, t0)
}

// absent reports an entity the store holds although its write set failed.
func (w *world) absent(id identity.EntityID, what string) {
	w.t.Helper()
	prep, err := w.e.s.RememberPrepare(w.e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a,
		KnownEntities: []identity.EntityID{id}})
	w.must(err, "RememberPrepare")
	if len(prep.Known) != 0 {
		w.t.Errorf("%s: entity %s of the failed write set was written", what, id)
	}
}

// relAt reports r unless the store holds it at version and status.
func (w *world) relAt(r relationship.ID, version int, status relationship.Status, what string) {
	w.t.Helper()
	got, err := w.e.s.RelationshipGet(w.e.ctx, w.team, r)
	w.must(err, "RelationshipGet")
	if got.Version != version || got.Status != status {
		w.t.Errorf("%s: relationship %s is %s v%d, want %s v%d", what, r, got.Status, got.Version, status, version)
	}
}

// testStaleRelationshipVersion: an update expecting a version the relationship has left fails with
// ErrStaleVersion, and nothing of its write set remains.
func testStaleRelationshipVersion(e *env) {
	w := e.world(e.team("tm_s"))
	r1 := w.rel(relSpec{})
	r2 := w.change(r1, relationship.StatusActive, relationship.TierFact, nil, at(time.Minute)) // now at version 2
	var ws store.WriteSet
	mark := w.marker(&ws, "Marker")
	w.changeRows(&ws, r1, relationship.StatusRetracted, r1.Tier, nil, at(2*time.Minute)) // expects version 1
	e.checkErr(w.tryApply(ws), store.ErrStaleVersion, "update of a stale relationship version")
	w.absent(mark, "stale relationship version")
	w.relAt(r1.ID, r2.Version, relationship.StatusActive, "stale relationship version")

	// An update of a relationship that does not exist has no version to match either.
	ws = store.WriteSet{}
	mark = w.marker(&ws, "Marker2")
	ghost := r1
	ghost.ID = "rel_missing"
	w.changeRows(&ws, ghost, relationship.StatusRetracted, ghost.Tier, nil, at(2*time.Minute))
	e.checkErr(w.tryApply(ws), store.ErrStaleVersion, "update of a missing relationship")
	w.absent(mark, "update of a missing relationship")
}

// testStaleCaseVersion: a case update expecting a version the case has left fails with
// ErrStaleVersion, and nothing of its write set remains.
func testStaleCaseVersion(e *env) {
	w := e.world(e.team("tm_s"))
	sc := w.disagreement("", t0, t0)
	var ws store.WriteSet
	mark := w.marker(&ws, "Marker")
	next := sc.cs
	next.Version, next.Status = 3, conflict.StatusDismissed
	ws.CaseUpdates = []store.CaseUpdate{{Team: w.team, ID: sc.cs.ID, ExpectVersion: 2, Version: 3,
		Status: conflict.StatusDismissed, UpdatedAt: at(time.Minute)}}
	ws.CaseEvents = []store.CaseEventRow{w.eventRow(next, conflict.StatusOpen, store.ActorProfile, w.a, "dismissed", at(time.Minute))}
	e.checkErr(w.tryApply(ws), store.ErrStaleVersion, "update of a stale case version")
	w.absent(mark, "stale case version")
	if c := w.listedCase(sc.cs.ID); c == nil || c.Case.Version != 1 || c.Case.Status != conflict.StatusOpen {
		e.t.Errorf("case %s after a stale update = %+v, want open v1", sc.cs.ID, c)
	}
}

// testStalePolicyVersion: PolicyAppend appends only over the version it expects.
func testStalePolicyVersion(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_s"))
	pol := store.Policy{Team: w.team, ReviewTTL: 3 * 24 * time.Hour, AutoWriteThreshold: 0.5, TimeZone: "Asia/Tokyo",
		CreatedBy: "host", CreatedAt: at(time.Minute)}
	got, err := e.s.PolicyAppend(ctx, store.PolicyAppendParams{Policy: pol, ExpectVersion: 1})
	e.must(err, "PolicyAppend over version 1")
	if got.Version != 2 {
		t.Errorf("PolicyAppend over version 1 = version %d, want 2", got.Version)
	}
	stale := pol
	stale.ReviewTTL, stale.TimeZone = 20*24*time.Hour, "UTC"
	_, err = e.s.PolicyAppend(ctx, store.PolicyAppendParams{Policy: stale, ExpectVersion: 1})
	e.checkErr(err, store.ErrStaleVersion, "PolicyAppend over a replaced version")
	_, err = e.s.PolicyAppend(ctx, store.PolicyAppendParams{Policy: stale, ExpectVersion: 3})
	e.checkErr(err, store.ErrStaleVersion, "PolicyAppend over a version not yet written")
	cur, err := e.s.PolicyGet(ctx, w.team)
	e.must(err, "PolicyGet")
	if cur.Version != 2 || cur.ReviewTTL != pol.ReviewTTL || cur.TimeZone != pol.TimeZone || cur.AutoWriteThreshold != 0.5 {
		t.Errorf("PolicyGet after a stale append = %+v, want version 2 as appended", cur)
	}
	pr, err := e.s.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: w.team, Profile: w.a})
	e.must(err, "PrincipalLoad")
	if pr.Policy.Version != 2 {
		t.Errorf("PrincipalLoad's policy = version %d, want the version in force, 2", pr.Policy.Version)
	}
}

// testPredicateCheck: PredicateAppend hands its Check the latest version of every key of the team,
// returns the Check's error as is and appends nothing when it refuses, and appends as usual when it
// accepts.
func testPredicateCheck(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_p"))
	refused := errors.New("storetest: refused")
	v2 := w.pred
	v2.Description = "works on, v2"
	_, err := e.s.PredicateAppend(ctx, store.PredicateAppendParams{Team: w.team, CreatedBy: "host", CreatedAt: at(time.Minute),
		Predicate: v2})
	e.must(err, "PredicateAppend of version 2")
	var seen [][]relationship.Predicate
	check := func(ok bool) func([]relationship.Predicate) error {
		return func(registered []relationship.Predicate) error {
			seen = append(seen, registered)
			if !ok {
				return refused
			}
			return nil
		}
	}
	other := relationship.Predicate{Key: "mentors", Kind: relationship.KindState, Cardinality: relationship.CardinalityMany,
		Aliases: []string{"coaches"}}
	_, err = e.s.PredicateAppend(ctx, store.PredicateAppendParams{Team: w.team, CreatedBy: "host", CreatedAt: at(2 * time.Minute),
		Predicate: other, Check: check(false)})
	if err != refused {
		t.Errorf("PredicateAppend refused by its Check = %v, want the Check's error as is", err)
	}
	if len(seen) != 1 || len(seen[0]) != 1 || seen[0][0].Key != predWorksOn || seen[0][0].Version != 2 ||
		!slices.Equal(seen[0][0].Aliases, w.pred.Aliases) {
		t.Errorf("Check saw %+v, want the latest version of %s only (version 2)", seen, predWorksOn)
	}
	preds, err := e.s.PredicateList(ctx, w.team)
	e.must(err, "PredicateList")
	if len(preds) != 1 {
		t.Errorf("PredicateList after a refused append = %+v, want only %s", preds, predWorksOn)
	}
	got, err := e.s.PredicateAppend(ctx, store.PredicateAppendParams{Team: w.team, CreatedBy: "host", CreatedAt: at(3 * time.Minute),
		Predicate: other, Check: check(true)})
	e.must(err, "PredicateAppend accepted by its Check")
	if got.Version != 1 {
		t.Errorf("PredicateAppend accepted by its Check = version %d, want 1", got.Version)
	}
	if preds, err = e.s.PredicateList(ctx, w.team); err != nil || len(preds) != 2 {
		t.Errorf("PredicateList after an accepted append = %+v, %v; want two keys", preds, err)
	}
}

// testTransitionlessChange: a relationship's current state never changes without the transition
// that records the change, nor a case's without its event; such a write set fails with ErrIntegrity
// (at the latest at commit) and leaves nothing.
func testTransitionlessChange(e *env) {
	w := e.world(e.team("tm_i"))
	r := w.rel(relSpec{})
	sc := w.disagreement("eu", t0, t0)
	for _, c := range []struct {
		name  string
		build func(ws *store.WriteSet)
	}{
		{"an update without its transition", func(ws *store.WriteSet) {
			w.changeRows(ws, r, relationship.StatusRetracted, r.Tier, nil, at(time.Minute))
			ws.Transitions = nil
		}},
		{"a new relationship without its first transition", func(ws *store.WriteSet) {
			w.relRows(ws, relSpec{object: w.osprey, scope: "new"})
			ws.Transitions = nil
		}},
		{"a transition without its update", func(ws *store.WriteSet) {
			w.changeRows(ws, r, relationship.StatusRetracted, r.Tier, nil, at(time.Minute))
			ws.Updates = nil
		}},
		{"a transition recording another state than the update's", func(ws *store.WriteSet) {
			w.changeRows(ws, r, relationship.StatusRetracted, r.Tier, nil, at(time.Minute))
			ws.Transitions[0].ToStatus = relationship.StatusSuperseded
		}},
		{"a case event without its case change", func(ws *store.WriteSet) {
			next := sc.cs
			next.Version = 2
			ws.CaseEvents = []store.CaseEventRow{w.eventRow(next, conflict.StatusOpen, store.ActorProfile, w.a, "membership_changed",
				at(time.Minute))}
		}},
	} {
		var ws store.WriteSet
		mark := w.marker(&ws, "Marker "+c.name)
		c.build(&ws)
		e.checkErr(w.tryApply(ws), store.ErrIntegrity, c.name)
		w.absent(mark, c.name)
		w.relAt(r.ID, 1, relationship.StatusActive, c.name)
		if cs := w.listedCase(sc.cs.ID); cs == nil || cs.Case.Version != 1 {
			e.t.Errorf("%s: case %s = %+v, want it at version 1", c.name, sc.cs.ID, cs)
		}
	}
}
