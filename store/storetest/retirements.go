package storetest

import (
	"context"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Fragment retirements (DESIGN §6.2): a retirement row retires one fragment once and is never
// rewritten; from its recorded time on, every read that counts or shows effective support sees the
// fragment's supports as retired: KeysLock marks them, RecallDetails leaves them out of the evidence
// of a read at or after that time (and keeps them for one before it), TraceLoad shows them with
// their retirement.
var retirementContracts = []contract{
	{"RetirementIsOnceAndAppendOnly", testRetirementOnce},
	{"RetiredSupportsAreMarkedAsOfTheirTime", testRetiredSupportsMarked},
	{"IntakeLockReadsRevisedSources", testIntakeLockReadsSources},
	{"RetiredFragmentsAreNotAdoptable", testAdoptableFragments},
}

// testIntakeLockReadsSources: IntakeLock with a source revision reads, under the source's lock, the
// source's owner (its first fragment's author), the previous revision's fragments and the named
// ones with their retirement, and the relationships they support with their keys, bounded by
// MaxRevisionRelationships (one more is read).
func testIntakeLockReadsSources(e *env) {
	w := e.world(e.team("tm_r"))
	const key = "doc:guide"
	// a's relationship from r1 (first: a owns the source), b's from its copy of r1, a's from r0.
	frag := func(r relationship.Relationship, rev string, when time.Time) evidence.FragmentID {
		var ws store.WriteSet
		w.evidenceRows(&ws, r, "Ada works on Falcon, per the guide "+rev+" "+string(r.Owner)+".", w.id("ing"), when)
		ws.Fragments[0].SourceKey, ws.Fragments[0].Revision = key, rev
		w.apply(ws)
		return ws.Fragments[0].ID
	}
	ra := w.rel(relSpec{owner: w.a})
	rb := w.rel(relSpec{owner: w.b, object: w.osprey, scope: "eu"})
	old := frag(ra, "r0", at(time.Minute))
	fa := frag(ra, "r1", at(2*time.Minute))
	fb := frag(rb, "r1", at(3*time.Minute))
	read := func(max int, supersedes ...evidence.FragmentID) store.SourceState {
		var out store.IntakeLocked
		w.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
			out, err = tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: "idem-src",
				Revisions: []store.SourceRevision{{Key: key, Previous: "r1", Supersedes: supersedes}}, MaxRevisionRelationships: max})
			return err
		}), "IntakeLock")
		if len(out.Sources) != 1 {
			e.t.Fatalf("IntakeLock read %d sources, want 1", len(out.Sources))
		}
		return out.Sources[0]
	}
	st := read(10, old)
	if st.Key != key || st.Owner != w.a {
		e.t.Errorf("source %q owned by %q, want %q owned by %s", st.Key, st.Owner, key, w.a)
	}
	got := map[evidence.FragmentID]store.SourceFragment{}
	for _, f := range st.Fragments {
		got[f.ID] = f
	}
	if len(got) != 3 || got[fa].Revision != "r1" || got[fb].Author != w.b || got[old].Revision != "r0" || got[fa].Retired {
		e.t.Errorf("fragments %+v, want a's and b's of r1 and the named r0 one, none retired", st.Fragments)
	}
	keys := map[relationship.ID]conflict.Key{}
	for _, r := range st.Relationships {
		keys[r.ID] = r.Key
	}
	if len(keys) != 2 || keys[ra.ID] != w.key(w.ada, "") || keys[rb.ID] != w.key(w.ada, "eu") {
		e.t.Errorf("relationships %+v, want a's and b's with their keys", st.Relationships)
	}
	if st := read(1); len(st.Relationships) != 2 {
		e.t.Errorf("with a bound of 1: %d relationships read, want 2 (one more than the bound)", len(st.Relationships))
	}
	w.apply(store.WriteSet{Retirements: []store.RetirementRow{w.retirementRow(fb, at(time.Hour))}})
	for _, f := range read(10).Fragments {
		if f.ID == fb && !f.Retired {
			e.t.Errorf("fragment %s read as not retired after its retirement", fb)
		}
	}
}

// retirementRow retires frag at when in one of w's calls.
func (w *world) retirementRow(frag evidence.FragmentID, when time.Time) store.RetirementRow {
	return store.RetirementRow{Team: w.team, ID: w.id("ret"), FragmentID: frag, Cause: store.RetiredBySourceRevision,
		ActorKind: store.ActorProfile, ActorProfile: w.a, Reason: "a newer revision", IngestID: w.id("ing"), CreatedAt: when}
}

// retiredStory writes r with two supports (fragments f1 at t0 and f2 at t0+1m) and retires f1 at t0+1h.
func (w *world) retiredStory() (r relationship.Relationship, f1, f2 evidence.FragmentID, ret store.RetirementRow) {
	var ws store.WriteSet
	r = w.relRows(&ws, relSpec{content: "Ada works on Falcon, revision one."})
	w.apply(ws)
	f1 = ws.Fragments[0].ID
	var more store.WriteSet
	w.evidenceRows(&more, r, "Ada works on Falcon, from the mail.", w.id("ing"), at(time.Minute))
	w.apply(more)
	f2 = more.Fragments[0].ID
	ret = w.retirementRow(f1, at(time.Hour))
	w.apply(store.WriteSet{Retirements: []store.RetirementRow{ret}})
	return r, f1, f2, ret
}

// testRetirementOnce: a fragment retires at most once (a second retirement of it fails with
// ErrIntegrity and writes nothing), and a retirement row is never rewritten under its ID.
func testRetirementOnce(e *env) {
	w := e.world(e.team("tm_r"))
	_, f1, f2, ret := w.retiredStory()
	again := w.retirementRow(f1, at(2*time.Hour))
	var ws store.WriteSet
	mark := w.marker(&ws, "Marker retired again")
	ws.Retirements = []store.RetirementRow{again}
	e.checkErr(w.tryApply(ws), store.ErrIntegrity, "retiring a fragment twice")
	w.absent(mark, "retiring a fragment twice")
	rewritten := ret
	rewritten.FragmentID, rewritten.Reason = f2, "rewritten"
	ws = store.WriteSet{}
	mark = w.marker(&ws, "Marker retirement rewritten")
	ws.Retirements = []store.RetirementRow{rewritten}
	e.checkErr(w.tryApply(ws), store.ErrIntegrity, "writing a retirement again under its ID")
	w.absent(mark, "writing a retirement again under its ID")
}

// testRetiredSupportsMarked: KeysLock, RecallDetails (now, and as known before and after the
// retirement) and TraceLoad see f1's support as retired and f2's as effective.
func testRetiredSupportsMarked(e *env) {
	w := e.world(e.team("tm_r"))
	r, f1, f2, ret := w.retiredStory()
	var kl store.KeysLocked
	w.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
		kl, err = tx.KeysLock(ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{w.key(w.ada, "")}})
		return err
	}), "KeysLock")
	got := map[evidence.FragmentID]string{}
	for _, s := range kl.Supports {
		got[s.FragmentID] = s.Retirement
	}
	if len(got) != 2 || got[f1] != ret.ID || got[f2] != "" {
		e.t.Errorf("KeysLock supports' retirements %v, want %s: %s and %s: none", got, f1, ret.ID, f2)
	}
	for _, c := range []struct {
		name  string
		known *time.Time
		want  []evidence.FragmentID
	}{
		{"now", nil, []evidence.FragmentID{f2}},
		{"known before the retirement", ptr(at(30 * time.Minute)), []evidence.FragmentID{f1, f2}},
		{"known at the retirement", ptr(at(time.Hour)), []evidence.FragmentID{f2}},
	} {
		det, err := e.s.RecallDetails(e.ctx, store.RecallDetailsParams{Team: w.team, Relationships: []relationship.ID{r.ID}, KnownAt: c.known})
		w.must(err, "RecallDetails")
		var frags []evidence.FragmentID
		for _, ev := range det.Evidence {
			frags = append(frags, ev.FragmentID)
		}
		if len(frags) != len(c.want) || (len(frags) > 0 && frags[0] != c.want[0]) || (len(frags) > 1 && frags[1] != c.want[1]) {
			e.t.Errorf("RecallDetails %s: evidence of fragments %v, want %v", c.name, frags, c.want)
		}
	}
	td, err := e.s.TraceLoad(e.ctx, traceParams(w.team, r.ID, 50))
	w.must(err, "TraceLoad")
	if len(td.Supports) != 2 || td.Supports[0].Retirement == nil || td.Supports[0].Retirement.ID != ret.ID ||
		td.Supports[0].Retirement.Reason != ret.Reason || !td.Supports[0].Retirement.CreatedAt.Equal(ret.CreatedAt) ||
		td.Supports[1].Retirement != nil {
		e.t.Errorf("TraceLoad supports %+v, want the first retired by %s, the second not", td.Supports, ret.ID)
	}
	effective := 0
	for _, k := range td.SupportKeys {
		if k.Effective {
			effective++
		}
	}
	if len(td.SupportKeys) != 2 || effective != 1 {
		e.t.Errorf("TraceLoad support keys %+v, want two, one effective", td.SupportKeys)
	}
}

// testAdoptableFragments: RememberPrepare reads the adoptable fragments among the named ones with
// their content, IntakeLock again without it; a retired fragment, a missing one and another team's
// are not adoptable.
func testAdoptableFragments(e *env) {
	w := e.world(e.team("tm_adopt"))
	other := e.world(e.team("tm_adopt_other"))
	_, f1, f2, _ := w.retiredStory() // f1 retired, f2 not
	var ows store.WriteSet
	other.relRows(&ows, relSpec{content: "Another team's evidence."})
	other.apply(ows)
	named := []evidence.FragmentID{f1, f2, "frg_missing", ows.Fragments[0].ID}
	prep, err := e.s.RememberPrepare(e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.b, IdempotencyKey: "k",
		AdoptFragments: named})
	e.must(err, "RememberPrepare")
	if len(prep.Adoptable) != 1 || prep.Adoptable[0].ID != f2 || prep.Adoptable[0].Content != "Ada works on Falcon, from the mail." {
		e.t.Errorf("RememberPrepare adoptable = %+v, want only %s with its content", prep.Adoptable, f2)
	}
	e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.b, IdempotencyKey: "k",
			AdoptFragments: named})
		if err == nil && (len(locked.Adoptable) != 1 || locked.Adoptable[0].ID != f2 || locked.Adoptable[0].Content != "") {
			e.t.Errorf("IntakeLock adoptable = %+v, want only %s, without content", locked.Adoptable, f2)
		}
		return err
	}), "IntakeLock")
}
