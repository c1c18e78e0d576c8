package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Atomicity (DESIGN I-27): a write set that fails leaves nothing of any of its rows, whether the
// failure is a stale version fence or an integrity rule checked at commit; a function that fails
// ends its transaction with its own error.
var atomicityContracts = []contract{
	{"StaleFenceLeavesNothing", func(e *env) { testFailedWriteSet(e, "stale", store.ErrStaleVersion) }},
	{"IntegrityAtCommitLeavesNothing", func(e *env) { testFailedWriteSet(e, "integrity", store.ErrIntegrity) }},
	{"FailedFunctionLeavesNothing", testFailedFunction},
}

// allRows is a write set holding a row of every kind, and what it names.
type allRows struct {
	ws     store.WriteSet
	heron  identity.EntityID
	rels   []relationship.ID
	prior  relationship.Relationship // an existing relationship the set supersedes
	cs     store.CaseRow
	key    conflict.Key
	idem   string
	review string
}

// everyRow builds, over w's existing relationship prior, a write set with a row of every kind: an
// entity and its name, a literal value, two relationships of a new key with their evidence, an entity
// resolution event, transitions, a cross-reference, a case with positions, members and its event, a
// review item, an idempotency record and an update of prior.
func (w *world) everyRow(prior relationship.Relationship, when time.Time) allRows {
	var a allRows
	ws := &a.ws
	a.prior, a.idem = prior, "k-every-row"
	a.heron = w.entityRows(ws, kindProject, "Heron", when)
	ws.Values = []store.ValueRow{{Team: w.team, ID: "val_every", Type: "number", Text: "42", CreatedAt: when}}
	ra := w.relRows(ws, relSpec{owner: w.a, object: a.heron, scope: "every", when: when, content: "Ada works on Heron."})
	rb := w.relRows(ws, relSpec{owner: w.b, object: w.osprey, scope: "every", when: when, content: "Ada works on Osprey."})
	a.rels = []relationship.ID{ra.ID, rb.ID}
	ws.Resolutions = []store.ResolutionRow{{Team: w.team, ID: w.id("res"), ObservationID: ws.Observations[0].ID,
		MentionRef: "o", MentionName: "Heron", EntityKind: kindProject, EntityID: a.heron, Decision: identity.DecisionCreated,
		Candidates: []identity.EntityID{}, Profile: w.a, IngestID: ws.Observations[0].IngestID, CreatedAt: when}}
	ws.CrossRefs = []store.CrossReferenceRow{{Team: w.team, ID: w.id("xref"), Kind: "challenges", From: rb.ID, FromVersion: 1,
		To: ra.ID, ToVersion: 1, Author: w.b, VerificationID: ws.Verifications[1].ID, IngestID: "ing_every", CreatedAt: when}}
	a.key = w.key(w.ada, "every")
	a.cs = w.caseRows(ws, a.key, []relationship.Relationship{ra, rb}, when, when)
	a.review = w.id("rev")
	ws.ReviewItems = []store.ReviewItemRow{{Team: w.team, ID: a.review, IngestID: "ing_every", PlacementItemID: "item_1",
		Kind: "relationship_held", Profile: w.a, ObservationID: ws.Observations[0].ID, RelationshipID: ra.ID,
		Related: []string{string(rb.ID)}, Choices: json.RawMessage(`[{"action":"keep"}]`), CreatedAt: when}}
	w.changeRows(ws, prior, relationship.StatusSuperseded, prior.Tier, &when, when)
	ws.Idempotency = &store.IdempotencyRow{Team: w.team, Profile: w.a, Key: a.idem, Operation: "remember", RequestHash: "h",
		IngestID: "ing_every", Result: json.RawMessage(`{"placed":2}`), CreatedAt: when}
	return a
}

// check reports every row of a that the store holds (written false) or lacks (written true).
func (w *world) check(a allRows, written bool, what string) {
	w.t.Helper()
	t, ctx, s := w.t, w.e.ctx, w.e.s
	state := map[bool]string{true: "missing after a committed write set", false: "present after a failed write set"}[written]
	prep, err := s.RememberPrepare(ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a, IdempotencyKey: a.idem,
		Names: []store.NameLookup{lookup(kindProject, "Heron")}, KnownEntities: []identity.EntityID{a.heron}})
	w.must(err, "RememberPrepare")
	if (len(prep.Candidates) == 1) != written || (len(prep.Known) == 1) != written {
		t.Errorf("%s: entity Heron %s (candidates %v, known %v)", what, state, entityIDs(prep.Candidates), entityIDs(prep.Known))
	}
	if (prep.Idempotency != nil) != written {
		t.Errorf("%s: idempotency record %s", what, state)
	}
	for _, id := range a.rels {
		_, err := s.RelationshipGet(ctx, w.team, id)
		if (err == nil) != written {
			t.Errorf("%s: relationship %s %s (err %v)", what, id, state, err)
		}
	}
	prior, err := s.RelationshipGet(ctx, w.team, a.prior.ID)
	w.must(err, "RelationshipGet")
	if (prior.Status == relationship.StatusSuperseded && prior.Version == 2) != written {
		t.Errorf("%s: the update of %s %s (it is %s v%d)", what, a.prior.ID, state, prior.Status, prior.Version)
	}
	if (w.listedCase(a.cs.ID) != nil) != written {
		t.Errorf("%s: case %s %s", what, a.cs.ID, state)
	}
	items, err := s.ReviewItemList(ctx, store.ReviewItemListParams{Team: w.team, Status: "open", Limit: 10})
	w.must(err, "ReviewItemList")
	if (len(items.Items) == 1) != written {
		t.Errorf("%s: review item %s %s (%d listed)", what, a.review, state, len(items.Items))
	}
	rs, err := s.RecallSearch(ctx, store.RecallSearchParams{Team: w.team, Query: "Heron", Names: []string{"heron"},
		At: at(24 * time.Hour), PerBranch: 10})
	w.must(err, "RecallSearch")
	if (len(rs.FullText) > 0) != written || (len(rs.EntityName) > 0) != written {
		t.Errorf("%s: recall of Heron %s (%+v, %+v)", what, state, rs.FullText, rs.EntityName)
	}
	td, err := s.TraceLoad(ctx, traceParams(w.team, a.prior.ID, 50))
	w.must(err, "TraceLoad")
	if (len(td.Transitions) == 2) != written {
		t.Errorf("%s: the transition of %s %s (%d transitions)", what, a.prior.ID, state, len(td.Transitions))
	}
	if written {
		ta, err := s.TraceLoad(ctx, traceParams(w.team, a.rels[0], 50))
		w.must(err, "TraceLoad")
		if len(ta.Resolutions) != 1 || len(ta.CrossReferences) != 1 || len(ta.Cases) != 1 || len(ta.Supports) != 1 ||
			len(ta.ReviewItems) != 1 {
			t.Errorf("%s: trace of %s shows %d resolutions, %d cross-references, %d cases, %d supports, %d review items; "+
				"want one of each", what, a.rels[0], len(ta.Resolutions), len(ta.CrossReferences), len(ta.Cases),
				len(ta.Supports), len(ta.ReviewItems))
		}
	}
	var kl store.KeysLocked
	w.must(s.Tx(ctx, func(ctx context.Context, tx store.Tx) (err error) {
		kl, err = tx.KeysLock(ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{a.key}})
		return err
	}), "KeysLock")
	if (len(kl.Relationships) == 2 && len(kl.Cases) == 1) != written {
		t.Errorf("%s: the key's rows %s (%d relationships, %d cases)", what, state, len(kl.Relationships), len(kl.Cases))
	}
}

// testFailedWriteSet applies a write set with a row of every kind and one fault (a stale update, or
// a relationship without its transition, refused at commit), expects want and nothing written, then
// applies the same rows without the fault and expects every one of them.
func testFailedWriteSet(e *env, fault string, want error) {
	w := e.world(e.team("tm_f"))
	prior := w.rel(relSpec{scope: "prior"})
	stale := w.rel(relSpec{owner: w.b, scope: "stale"})
	stale = w.change(stale, relationship.StatusActive, relationship.TierFact, nil, at(time.Minute))
	a := w.everyRow(prior, at(time.Hour))

	bad := a.ws
	switch fault {
	case "stale":
		// An update expecting version 1 of a relationship now at version 2; everything else is valid.
		old := stale
		old.Version, old.Tier = 1, relationship.TierValidatedClaim
		var f store.WriteSet
		w.changeRows(&f, old, relationship.StatusRetracted, old.Tier, nil, at(time.Hour))
		bad.Updates = append(append([]store.RelationshipUpdate{}, a.ws.Updates...), f.Updates...)
		bad.Transitions = append(append([]store.TransitionRow{}, a.ws.Transitions...), f.Transitions...)
	default:
		// A relationship without its first transition, refused when the transaction commits.
		var f store.WriteSet
		w.relRows(&f, relSpec{scope: "orphan", when: at(time.Hour)})
		bad.Relationships = append(append([]store.RelationshipRow{}, a.ws.Relationships...), f.Relationships...)
		bad.Fragments = append(append([]store.FragmentRow{}, a.ws.Fragments...), f.Fragments...)
		bad.Observations = append(append([]store.ObservationRow{}, a.ws.Observations...), f.Observations...)
		bad.Verifications = append(append([]store.VerificationRow{}, a.ws.Verifications...), f.Verifications...)
		bad.Supports = append(append([]store.SupportLinkRow{}, a.ws.Supports...), f.Supports...)
	}
	e.checkErr(w.tryApply(bad), want, "a write set with a "+fault+" fault")
	w.check(a, false, "after the "+fault+" fault")
	w.relAt(stale.ID, 2, relationship.StatusActive, "after the "+fault+" fault")

	// Without the fault the same rows commit: the fault alone failed the set.
	e.must(w.tryApply(a.ws), "the write set without its fault")
	w.check(a, true, "without the fault")
}

// testFailedFunction: when the function given to Tx fails, Tx returns its error, does not run it
// again, and the transaction's locks are released.
func testFailedFunction(e *env) {
	w := e.world(e.team("tm_f"))
	errBoom := errors.New("storetest: the function failed")
	calls := 0
	err := e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		calls++
		if _, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: "k",
			NameLocks: []store.NameLookup{lookup(kindProject, "Heron")}}); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) || calls != 1 {
		e.t.Errorf("Tx with a failing function: err = %v after %d calls, want the function's error after 1", err, calls)
	}
	// The locks it took went with it: another transaction takes them at once.
	e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: "k",
			NameLocks: []store.NameLookup{lookup(kindProject, "Heron")}})
		return err
	}), "the same locks after a failed function")
}
