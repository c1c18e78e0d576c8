package storetest

import (
	"context"
	"testing"
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

// ledgerHistory is what testLedgerRowsNeverRewritten writes again: one relationship r's history as
// first written, and a disagreement sc with a cross-reference challenging sc.rb.
type ledgerHistory struct {
	first, xref store.WriteSet
	r           relationship.Relationship
	sc          scene
}

// ledgerHistory writes, each in a transaction of its own, r with its evidence and first transition,
// a disagreement in scope eu, and the cross-reference from its ra to its rb.
func (w *world) ledgerHistory() ledgerHistory {
	w.t.Helper()
	var h ledgerHistory
	h.r = w.relRows(&h.first, relSpec{content: "Ada works on Falcon, the original words."})
	w.apply(h.first)
	h.sc = w.disagreement("eu", t0, t0)
	h.xref.CrossRefs = []store.CrossReferenceRow{{Team: w.team, ID: "xref_1", Kind: "challenges", From: h.sc.ra.ID, FromVersion: 1,
		To: h.sc.rb.ID, ToVersion: 1, Author: w.a, IngestID: "ing_x", CreatedAt: t0}}
	w.apply(h.xref)
	return h
}

// rewrite adds to a write set one ledger row of a history again, with other content under its identity.
type rewrite struct {
	name  string
	build func(ws *store.WriteSet)
}

// rewrites returns the rewrite of every kind of ledger row of h, recorded at later.
func (w *world) rewrites(h ledgerHistory, later time.Time) []rewrite {
	first := h.first
	return []rewrite{
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
			x := h.xref.CrossRefs[0]
			x.Kind, x.CreatedAt = "confirms", later
			ws.CrossRefs = append(ws.CrossRefs, x)
		}},
		{"a case event at a recorded version", func(ws *store.WriteSet) {
			ev := w.eventRow(h.sc.cs, "", store.ActorProfile, w.a, "rewritten", later)
			ws.CaseEvents = append(ws.CaseEvents, ev)
		}},
		{"an entity", func(ws *store.WriteSet) {
			ws.Entities = append(ws.Entities, store.EntityRow{Team: w.team, ID: w.falcon, Kind: kindPerson,
				Context: map[string]string{}, CreatedBy: w.b, IngestID: "ing_again", CreatedAt: later})
		}},
	}
}

// testLedgerRowsNeverRewritten writes every ledger row of one relationship's history again, one
// kind at a time, with other content under the same identity.
func testLedgerRowsNeverRewritten(e *env) {
	w := e.world(e.team("tm_a"))
	h := w.ledgerHistory()
	for _, c := range w.rewrites(h, at(time.Hour)) {
		var ws store.WriteSet
		mark := w.marker(&ws, "Marker "+c.name)
		c.build(&ws)
		e.checkErr(w.tryApply(ws), store.ErrIntegrity, "writing "+c.name+" again")
		w.absent(mark, "writing "+c.name+" again")
	}
	// Everything reads as first written.
	w.checkFirstWritten(h)
}

// asWritten is a check that rows read as first written: ok says whether got does.
type asWritten struct {
	rows string
	got  any
	ok   bool
	want string
}

// reportRewritten reports each check whose rows do not read as first written.
func reportRewritten(t *testing.T, checks []asWritten) {
	t.Helper()
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s after rewrites = %+v, want %s", c.rows, c.got, c.want)
		}
	}
}

// checkFirstWritten reports every row of h that does not read as first written: the supports,
// observations, verifications, transitions and relationship in r's trace, then the cross-references
// and case events in sc.rb's.
func (w *world) checkFirstWritten(h ledgerHistory) {
	w.t.Helper()
	e := w.e
	td, err := e.s.TraceLoad(e.ctx, traceParams(w.team, h.r.ID, 50))
	e.must(err, "TraceLoad")
	f, o, v, s, tr := h.first.Fragments[0], h.first.Observations[0], h.first.Verifications[0], h.first.Supports[0],
		h.first.Transitions[0]
	rel := td.Relationship
	reportRewritten(w.t, []asWritten{
		{"supports", td.Supports, len(td.Supports) == 1 && td.Supports[0].Content == f.Content &&
			td.Supports[0].SourceGroup == s.SourceGroup && td.Supports[0].CreatedAt.Equal(t0), "the one written first"},
		{"observations", td.Observations, len(td.Observations) == 1 && td.Observations[0].SubjectName == o.SubjectName,
			"the one written first"},
		{"verifications", td.Verifications, len(td.Verifications) == 1 && td.Verifications[0].Rationale == v.Rationale,
			"the one written first"},
		{"transitions", td.Transitions, len(td.Transitions) == 1 && td.Transitions[0].ID == tr.ID &&
			td.Transitions[0].Reason == tr.Reason, "the one written first"},
		{"relationship", rel, rel.Relationship.Object.EntityID == w.falcon && rel.ObjectName == "Falcon" &&
			rel.ObjectKind == kindProject, "Ada works on Falcon (a project)"},
	})
	xtd, err := e.s.TraceLoad(e.ctx, traceParams(w.team, h.sc.rb.ID, 50))
	e.must(err, "TraceLoad")
	reportRewritten(w.t, []asWritten{
		{"cross-references", xtd.CrossReferences, len(xtd.CrossReferences) == 1 && xtd.CrossReferences[0].Kind == "challenges",
			"the challenge written first"},
		{"case events", xtd.Cases, len(xtd.Cases) == 1 && len(xtd.Cases[0].Events) == 1 && xtd.Cases[0].Events[0].Reason == "opened",
			"the opening event alone"},
	})
}

// testSharedRowsLeftAsTheyAre writes an existing entity name and an existing literal value again.
func testSharedRowsLeftAsTheyAre(e *env) {
	t, ctx := e.t, e.ctx
	w := e.world(e.team("tm_a"))
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
