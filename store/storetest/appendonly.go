package storetest

import (
	"context"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Append-only ledgers (DESIGN §4, I-23): a ledger row, once written, is never replaced. Through the
// interface the only way to try is to write a row again under its identity; that fails with
// ErrIntegrity and the original stays as it was. Names and literal values are shared rows: writing
// an existing one again is no error and changes nothing.
var appendOnlyContracts = []contract{
	{"LedgerRowsAreNeverRewritten", testLedgerRowsNeverRewritten},
	{"SharedRowsAreLeftAsTheyAre", testSharedRowsLeftAsTheyAre},
}

// testLedgerRowsNeverRewritten writes every ledger row of one relationship's history again, one
// kind at a time, with other content under the same identity.
func testLedgerRowsNeverRewritten(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world("tm_a")
	var first store.WriteSet
	r := w.relRows(&first, relSpec{content: "Ada works on Falcon, the original words."})
	w.apply(first)
	sc := w.disagreement("eu", t0, t0)
	var xref store.WriteSet
	xref.CrossRefs = []store.CrossReferenceRow{{Team: w.team, ID: "xref_1", Kind: "challenges", From: sc.ra.ID, FromVersion: 1,
		To: sc.rb.ID, ToVersion: 1, Author: w.a, IngestID: "ing_x", CreatedAt: t0}}
	w.apply(xref)

	later := at(time.Hour)
	for _, c := range []struct {
		name  string
		build func(ws *store.WriteSet)
	}{
		{"a fragment", func(ws *store.WriteSet) {
			f := first.Fragments[0]
			f.Content, f.ContentHash, f.CreatedAt = "Rewritten words.", "rewritten", later
			ws.Fragments = append(ws.Fragments, f)
		}},
		{"an observation", func(ws *store.WriteSet) {
			o := first.Observations[0]
			o.SubjectName, o.CreatedAt = "Someone else", later
			ws.Observations = append(ws.Observations, o)
		}},
		{"a verification event", func(ws *store.WriteSet) {
			v := first.Verifications[0]
			v.Rationale, v.CreatedAt = "rewritten", later
			ws.Verifications = append(ws.Verifications, v)
		}},
		{"a support link", func(ws *store.WriteSet) {
			s := first.Supports[0]
			s.SourceGroup, s.CreatedAt = "grp_rewritten", later
			ws.Supports = append(ws.Supports, s)
		}},
		{"a relationship", func(ws *store.WriteSet) {
			rr := first.Relationships[0]
			rr.Relationship.Object.EntityID, rr.CreatedAt = w.osprey, later
			ws.Relationships = append(ws.Relationships, rr)
		}},
		{"a transition under its ID", func(ws *store.WriteSet) {
			tr := first.Transitions[0]
			tr.Reason, tr.CreatedAt = "rewritten", later
			ws.Transitions = append(ws.Transitions, tr)
		}},
		{"a transition under a new ID at a recorded version", func(ws *store.WriteSet) {
			tr := first.Transitions[0]
			tr.ID, tr.Reason, tr.CreatedAt = "trn_again", "rewritten", later
			ws.Transitions = append(ws.Transitions, tr)
		}},
		{"a cross-reference", func(ws *store.WriteSet) {
			x := xref.CrossRefs[0]
			x.Kind, x.CreatedAt = "confirms", later
			ws.CrossRefs = append(ws.CrossRefs, x)
		}},
		{"a case event at a recorded version", func(ws *store.WriteSet) {
			ev := w.eventRow(sc.cs, "", store.ActorProfile, w.a, "rewritten", later)
			ws.CaseEvents = append(ws.CaseEvents, ev)
		}},
		{"an entity", func(ws *store.WriteSet) {
			ws.Entities = append(ws.Entities, store.EntityRow{Team: w.team, ID: w.falcon, Kind: kindPerson,
				Context: map[string]string{}, CreatedBy: w.b, IngestID: "ing_again", CreatedAt: later})
		}},
	} {
		var ws store.WriteSet
		mark := w.marker(&ws, "Marker "+c.name)
		c.build(&ws)
		e.checkErr(w.tryApply(ws), store.ErrIntegrity, "writing "+c.name+" again")
		w.absent(mark, "writing "+c.name+" again")
	}

	// Everything reads as first written.
	td, err := e.s.TraceLoad(ctx, traceParams(w.team, r.ID, 50))
	e.must(err, "TraceLoad")
	f, o, v, s, tr := first.Fragments[0], first.Observations[0], first.Verifications[0], first.Supports[0], first.Transitions[0]
	if len(td.Supports) != 1 || td.Supports[0].Content != f.Content || td.Supports[0].SourceGroup != s.SourceGroup ||
		!td.Supports[0].CreatedAt.Equal(t0) {
		t.Errorf("supports after rewrites = %+v, want the one written first", td.Supports)
	}
	if len(td.Observations) != 1 || td.Observations[0].SubjectName != o.SubjectName {
		t.Errorf("observations after rewrites = %+v, want the one written first", td.Observations)
	}
	if len(td.Verifications) != 1 || td.Verifications[0].Rationale != v.Rationale {
		t.Errorf("verifications after rewrites = %+v, want the one written first", td.Verifications)
	}
	if len(td.Transitions) != 1 || td.Transitions[0].ID != tr.ID || td.Transitions[0].Reason != tr.Reason {
		t.Errorf("transitions after rewrites = %+v, want the one written first", td.Transitions)
	}
	if td.Relationship.Relationship.Object.EntityID != w.falcon || td.Relationship.ObjectName != "Falcon" ||
		td.Relationship.ObjectKind != kindProject {
		t.Errorf("relationship after rewrites = %+v, want Ada works on Falcon (a project)", td.Relationship)
	}
	xtd, err := e.s.TraceLoad(ctx, traceParams(w.team, sc.rb.ID, 50))
	e.must(err, "TraceLoad")
	if len(xtd.CrossReferences) != 1 || xtd.CrossReferences[0].Kind != "challenges" {
		t.Errorf("cross-references after rewrites = %+v, want the challenge written first", xtd.CrossReferences)
	}
	if len(xtd.Cases) != 1 || len(xtd.Cases[0].Events) != 1 || xtd.Cases[0].Events[0].Reason != "opened" {
		t.Errorf("case events after rewrites = %+v, want the opening event alone", xtd.Cases)
	}
}

// testSharedRowsLeftAsTheyAre writes an existing entity name and an existing literal value again.
func testSharedRowsLeftAsTheyAre(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world("tm_a")
	value := store.ValueRow{Team: w.team, ID: "val_blue", Type: "string", Text: "blue", CreatedAt: t0}
	var ws store.WriteSet
	ws.Values = []store.ValueRow{value}
	r := w.relRows(&ws, relSpec{scope: "colour"})
	ws.Relationships[0].Relationship.Object = relationship.Object{ValueID: value.ID}
	w.apply(ws)
	r.Object = relationship.Object{ValueID: value.ID}

	again := value
	again.CreatedAt = at(time.Hour)
	name := w.nameRow(w.ada, "Ada", identity.NameCanonical, at(time.Hour))
	e.must(w.tryApply(store.WriteSet{Values: []store.ValueRow{again}, EntityNames: []store.EntityNameRow{name}}),
		"writing an existing value and name again")

	det, err := e.s.RecallDetails(ctx, store.RecallDetailsParams{Team: w.team, Relationships: []relationship.ID{r.ID}})
	e.must(err, "RecallDetails")
	if len(det.Views) != 1 || det.Views[0].ObjectName != "blue" || det.Views[0].ObjectKind != "value:string" {
		t.Errorf("the relationship's object after writing its value again = %+v, want the value blue", det.Views)
	}
	e.must(e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: "k",
			Names: []store.NameLookup{lookup(kindPerson, "Ada")}})
		if err == nil && (len(il.Candidates) != 1 || len(il.Candidates[0].Names) != 1 ||
			il.Candidates[0].CanonicalName() != "Ada") {
			t.Errorf("Ada after writing her name again = %+v, want one entity with one canonical name", il.Candidates)
		}
		return err
	}), "IntakeLock")
}
