package storetest

import (
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// known_at reconstruction (DESIGN §11, I-26): a read at known_at = T answers from what was recorded
// at or before T — each relationship in the state of its last transition recorded by then, the
// supports and case events recorded by then — by the recorded times the rows carry, not by when the
// store received them. Nothing recorded later leaks.
var knownAtContracts = []contract{
	{"RecallSearchAsRecorded", testRecallSearchKnownAt},
	{"RecallDetailsAsRecorded", testRecallDetailsKnownAt},
}

// knownAtStory is one relationship's history: r is recorded at t1 and superseded at t2 (valid until
// t2); later is recorded at t2; r gains a second support at t1+30m.
type knownAtStory struct {
	w          *world
	r, later   relationship.Relationship
	t1, t2, t3 time.Time
}

func (e *env) knownAtStory() knownAtStory {
	w := e.world(e.team("tm_k"))
	st := knownAtStory{w: w, t1: at(time.Hour), t2: at(2 * time.Hour), t3: at(3 * time.Hour)}
	st.r = w.rel(relSpec{when: st.t1, content: "Ada works on Falcon."})
	w.support(st.r, "Ada still works on Falcon.", st.t1.Add(30*time.Minute))
	st.r = w.change(st.r, relationship.StatusSuperseded, st.r.Tier, &st.t2, st.t2)
	st.later = w.rel(relSpec{owner: w.b, object: w.osprey, scope: "later", when: st.t2, content: "Ada works on Osprey."})
	return st
}

// search runs a recall of Ada (full text and entity name) at known, valid at valid (either nil), and
// returns every relationship found, reporting relationships whose two branches disagree.
func (st knownAtStory) search(known, valid *time.Time, now time.Time) map[relationship.ID]store.RankedRelationship {
	w := st.w
	w.t.Helper()
	view := now
	if known != nil {
		view = *known
	}
	rs, err := w.e.s.RecallSearch(w.e.ctx, store.RecallSearchParams{Team: w.team, Query: "Ada", Names: []string{"ada"},
		ExpandFrom: []identity.EntityID{w.ada}, At: view, KnownAt: known, ValidAt: valid, PerBranch: 50})
	w.must(err, "RecallSearch")
	found := map[relationship.ID]store.RankedRelationship{}
	for _, branch := range [][]store.RankedRelationship{rs.FullText, rs.EntityName} {
		for _, r := range branch {
			if prev, ok := found[r.ID]; ok && (prev.Status != r.Status || prev.Version != r.Version) {
				w.t.Errorf("RecallSearch's branches disagree on %s: %+v and %+v", r.ID, prev, r)
			}
			found[r.ID] = r
		}
	}
	return found
}

// testRecallSearchKnownAt recalls the story at instants before, between and after its changes.
func testRecallSearchKnownAt(e *env) {
	t := e.t
	st := e.knownAtStory()
	r, later := st.r.ID, st.later.ID
	mid := st.t1.Add(45 * time.Minute)
	after := st.t3
	before := st.t1.Add(-time.Minute)
	validMid := st.t1.Add(10 * time.Minute)

	type want struct {
		status  relationship.Status
		version int
		validTo *time.Time
	}
	for _, c := range []struct {
		name         string
		known, valid *time.Time
		now          time.Time
		want         map[relationship.ID]want
	}{
		{"known before anything", &before, nil, after, map[relationship.ID]want{}},
		{"known before anything, valid then", &before, &validMid, after, map[relationship.ID]want{}},
		{"known between the writes", &mid, nil, after, map[relationship.ID]want{r: {relationship.StatusActive, 1, nil}}},
		{"known between the writes, valid then", &mid, &validMid, after,
			map[relationship.ID]want{r: {relationship.StatusActive, 1, nil}}},
		{"known after the supersession", &after, nil, after, map[relationship.ID]want{later: {relationship.StatusActive, 1, nil}}},
		{"known after the supersession, valid before it", &after, &validMid, after, map[relationship.ID]want{
			r: {relationship.StatusSuperseded, 2, &st.t2}, later: {relationship.StatusActive, 1, nil}}},
		{"now", nil, nil, after, map[relationship.ID]want{later: {relationship.StatusActive, 1, nil}}},
		{"now, valid before the supersession", nil, &validMid, after, map[relationship.ID]want{
			r: {relationship.StatusSuperseded, 2, &st.t2}, later: {relationship.StatusActive, 1, nil}}},
	} {
		got := st.search(c.known, c.valid, c.now)
		var ids []relationship.ID
		for id := range got {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var wantIDs []relationship.ID
		for id := range c.want {
			wantIDs = append(wantIDs, id)
		}
		slices.Sort(wantIDs)
		if !slices.Equal(ids, wantIDs) {
			t.Errorf("%s: recalled %v, want %v", c.name, ids, wantIDs)
			continue
		}
		for id, w := range c.want {
			g := got[id]
			if g.Status != w.status || g.Version != w.version || !sameTime(g.ValidTo, w.validTo) {
				t.Errorf("%s: %s recalled as %s v%d valid to %v, want %s v%d valid to %v", c.name, id, g.Status, g.Version,
					g.ValidTo, w.status, w.version, w.validTo)
			}
		}
	}
}

func sameTime(a, b *time.Time) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Equal(*b))
}

// testRecallDetailsKnownAt reads evidence and cases of a story as recorded at instants between their
// writes.
func testRecallDetailsKnownAt(e *env) {
	t, ctx := e.t, e.ctx
	st := e.knownAtStory()
	w := st.w
	// A case of another scope opens at t2 and is dismissed at t3.
	sc := w.disagreement("case", st.t2, st.t2)
	dismissed := sc.cs
	dismissed.Version, dismissed.Status = 2, conflict.StatusDismissed
	w.apply(store.WriteSet{
		CaseUpdates: []store.CaseUpdate{{Team: w.team, ID: sc.cs.ID, ExpectVersion: 1, Version: 2,
			Status: conflict.StatusDismissed, UpdatedAt: st.t3}},
		CaseEvents: []store.CaseEventRow{w.eventRow(dismissed, conflict.StatusOpen, store.ActorProfile, w.a, "dismissed", st.t3)},
	})
	ids := []relationship.ID{st.r.ID, sc.ra.ID}
	for _, c := range []struct {
		name     string
		known    *time.Time
		evidence int
		cases    []conflict.Status
	}{
		{"before anything", ptr(st.t1.Add(-time.Minute)), 0, nil},
		{"after the first support", ptr(st.t1.Add(10 * time.Minute)), 1, nil},
		{"after the second support", ptr(st.t1.Add(40 * time.Minute)), 2, nil},
		{"after the case opened", ptr(st.t2.Add(time.Minute)), 3, []conflict.Status{conflict.StatusOpen}},
		{"after the case was dismissed", ptr(st.t3), 3, []conflict.Status{conflict.StatusDismissed}},
		{"now", nil, 3, []conflict.Status{conflict.StatusDismissed}},
	} {
		det, err := e.s.RecallDetails(ctx, store.RecallDetailsParams{Team: w.team, Relationships: ids, KnownAt: c.known, Cases: true})
		e.must(err, "RecallDetails")
		if len(det.Evidence) != c.evidence {
			t.Errorf("%s: %d pieces of evidence, want %d", c.name, len(det.Evidence), c.evidence)
		}
		var statuses []conflict.Status
		for _, cs := range det.Cases {
			statuses = append(statuses, cs.Status)
			want := map[conflict.Status]int{conflict.StatusOpen: 1, conflict.StatusDismissed: 2}[cs.Status]
			if cs.ID != sc.cs.ID || cs.Version != want {
				t.Errorf("%s: case %s at version %d, want %s at %d", c.name, cs.ID, cs.Version, sc.cs.ID, want)
			}
		}
		if !slices.Equal(statuses, c.cases) {
			t.Errorf("%s: cases %v, want %v", c.name, statuses, c.cases)
		}
		for _, ev := range det.Evidence {
			if c.known != nil && ev.CreatedAt.After(*c.known) {
				t.Errorf("%s: evidence %s recorded at %s leaked", c.name, ev.SupportID, ev.CreatedAt)
			}
		}
	}
}
