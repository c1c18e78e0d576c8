package storetest

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Observations: an observation written with WriteSetApply reads back through ObservationGet as it
// was written, with the fragments of its ingest (contents included, by evidence index) and its own
// resolution events (oldest first); it belongs to its team.
var observationContracts = []contract{
	{"WrittenObservationReadsBack", testObservationReadsBack},
}

// jsonEqual compares JSON documents by value (a store may keep them normalised, as jsonb does) and
// tells nil, "no document", from any document.
var jsonEqual = cmp.Comparer(func(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var av, bv any
	return json.Unmarshal(a, &av) == nil && json.Unmarshal(b, &bv) == nil && reflect.DeepEqual(av, bv)
})

// testObservationReadsBack: one ingest writes two fragments (listed out of evidence order), an
// observation citing both — its predicate unresolved, its object a literal, its validity bounded —
// with two resolution events (listed newest first, one ambiguous between two candidates), and a
// second observation of the ingest with a resolved predicate, an entity object, no validity and a
// resolution event of its own. ObservationGet returns each with the ingest's two fragments and only
// its own events, times as stored (to the microsecond). Another ingest's fragments stay out; another
// team and an unknown ID get ErrNotFound.
func testObservationReadsBack(e *env) {
	w := e.world(e.team("tm_x"))
	w.rel(relSpec{content: "Another ingest's fragment."}) // a fragment of another ingest, left out
	ing := w.id("ing")
	when := at(time.Hour + 123456*time.Microsecond)
	later := when.Add(time.Second + time.Microsecond)
	from, to := at(-24*time.Hour+7*time.Microsecond), at(48*time.Hour)

	fragRow := func(idx int, content string, st evidence.SourceType, auth evidence.Authority, key, rev string) store.FragmentRow {
		return store.FragmentRow{Team: w.team, ID: evidence.FragmentID(w.id("frg")), IngestID: ing, EvidenceIndex: idx,
			Author: w.a, SourceType: st, Authority: auth, SourceGroup: "grp_" + key, SourceKey: key, Revision: rev,
			ContentHash: evidence.ContentHash(content), Content: content, CreatedAt: when}
	}
	f0 := fragRow(0, "Ada's budget for Falcon is 1200.", evidence.SourceDocument, evidence.AuthorityAuthoritative,
		"doc:budget", "r7")
	f1 := fragRow(1, "Ada said so in the stand-up — twice.", evidence.SourceConversation, evidence.AuthorityStandard, "", "")

	obs := store.ObservationRow{Team: w.team, ID: w.id("obs"), IngestID: ing, Profile: w.a, ProposalID: "p1",
		SubjectRef: "s", SubjectName: "Ada", PredicatePhrase: "has budget", ObjectRef: "v", ObjectName: "1200",
		ObjectValue: json.RawMessage(`{"type":"number","value":"1200"}`), Polarity: relationship.PolarityNegative,
		Modality: relationship.ModalityPlan, Scope: "finance", ValidFrom: &from, ValidTo: &to,
		Citations: json.RawMessage(`[{"evidence_index":0,"start":0,"end":5},{"evidence_index":1,"start":4,"end":8}]`),
		CreatedAt: when}
	other := store.ObservationRow{Team: w.team, ID: w.id("obs"), IngestID: ing, Profile: w.a, ProposalID: "p2",
		SubjectRef: "s", SubjectName: "Ada", PredicatePhrase: "works on", PredicateKey: w.pred.Key,
		PredicateVersion: w.pred.Version, ObjectRef: "o", ObjectName: "Falcon", Polarity: relationship.PolarityPositive,
		Modality: relationship.ModalityStatement, Citations: json.RawMessage(`[{"evidence_index":1,"start":0,"end":3}]`),
		CreatedAt: when}

	resRow := func(o store.ObservationRow, ref, name, kind string, id identity.EntityID, d identity.Decision,
		cands []identity.EntityID, created time.Time) store.ResolutionRow {
		return store.ResolutionRow{Team: w.team, ID: w.id("res"), ObservationID: o.ID, MentionRef: ref, MentionName: name,
			EntityKind: kind, EntityID: id, Decision: d, Candidates: cands, Profile: w.a, IngestID: ing, CreatedAt: created}
	}
	resLater := resRow(obs, "s", "Ada", kindPerson, w.ada, identity.DecisionKnown, nil, later)
	resFirst := resRow(obs, "s", "Ada", kindPerson, "", identity.DecisionAmbiguous,
		[]identity.EntityID{w.falcon, w.osprey}, when)
	resOther := resRow(other, "o", "Falcon", kindProject, w.falcon, identity.DecisionReused, nil, when)
	// A mention's identity context and the entities it is distinct from read back as written.
	resLater.Context, resLater.DistinctFrom = map[string]string{"team": "billing"}, []identity.EntityID{w.osprey}

	w.apply(store.WriteSet{
		Fragments:    []store.FragmentRow{f1, f0},
		Observations: []store.ObservationRow{obs, other},
		Resolutions:  []store.ResolutionRow{resLater, resOther, resFirst},
	})

	for _, c := range []struct {
		what string
		want store.StoredObservation
	}{
		{"the observation", store.StoredObservation{Observation: obs, Fragments: []store.FragmentRow{f0, f1},
			Resolutions: []store.ResolutionRow{resFirst, resLater}}},
		{"the other observation of the ingest", store.StoredObservation{Observation: other,
			Fragments: []store.FragmentRow{f0, f1}, Resolutions: []store.ResolutionRow{resOther}}},
	} {
		got, err := e.s.ObservationGet(e.ctx, w.team, c.want.Observation.ID)
		w.must(err, "ObservationGet of "+c.what)
		// Times compare with time.Time.Equal (the instant, as stored, whatever the location).
		if d := cmp.Diff(c.want, got, jsonEqual); d != "" {
			e.t.Errorf("ObservationGet of %s %s (-want +got):\n%s", c.what, c.want.Observation.ID, d)
		}
	}

	_, err := e.s.ObservationGet(e.ctx, w.team, "obs_missing")
	e.checkErr(err, store.ErrNotFound, "ObservationGet of an unknown observation")
	y := e.world(e.team("tm_y"))
	_, err = e.s.ObservationGet(e.ctx, y.team, obs.ID)
	e.checkErr(err, store.ErrNotFound, "ObservationGet of another team's observation")
}
