package storetest

import (
	"context"
	"encoding/json"
	"reflect"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Idempotency records (DESIGN I-24): a record written in a transaction is what every later read of
// its (team, profile, key) returns — IdempotencyGet, RememberPrepare and IntakeLock alike — and it is
// never replaced.
var idempotencyContracts = []contract{
	{"RecordIsReadBack", testIdempotencyReadBack},
	{"RecordIsNeverReplaced", testIdempotencyNeverReplaced},
	{"FencedWriteChecksItsRead", testFencedWrite},
}

// sameRecord reports whether got holds want's operation, hash, ingest ID and (as JSON) result.
func sameRecord(got *store.IdempotencyRecord, want store.IdempotencyRow) bool {
	if got == nil || got.Operation != want.Operation || got.RequestHash != want.RequestHash || got.IngestID != want.IngestID {
		return false
	}
	var a, b any
	return json.Unmarshal(got.Result, &a) == nil && json.Unmarshal(want.Result, &b) == nil && reflect.DeepEqual(a, b)
}

// readRecord reads key of profile in w's team the three ways the store offers.
func (w *world) readRecord(profile identity.ProfileID, key string) (get, prepared, locked *store.IdempotencyRecord) {
	w.t.Helper()
	ctx, s := w.e.ctx, w.e.s
	get, err := s.IdempotencyGet(ctx, w.team, profile, key)
	w.must(err, "IdempotencyGet")
	prep, err := s.RememberPrepare(ctx, store.RememberPrepareParams{Team: w.team, Profile: profile, IdempotencyKey: key})
	w.must(err, "RememberPrepare")
	w.must(s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: profile, IdempotencyKey: key})
		locked = il.Idempotency
		return err
	}), "IntakeLock")
	return get, prep.Idempotency, locked
}

// testIdempotencyReadBack writes a record the way a call does (under IntakeLock, with its rows) and
// reads it back under its own key only.
func testIdempotencyReadBack(e *env) {
	t := e.t
	w := e.world(e.team("tm_i"))
	row := store.IdempotencyRow{Team: w.team, Profile: w.a, Key: "key-1", Operation: "remember", RequestHash: "sha256:abc",
		IngestID: "ing_1", Result: json.RawMessage(`{"placement":{"items":[{"id":"item_1","status":"active"}]},"n":1.5}`),
		CreatedAt: t0}
	e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: row.Key})
		if err != nil {
			return err
		}
		if il.Idempotency != nil || !il.ProfileActive {
			t.Errorf("IntakeLock before the record: %+v, want no record and an active profile", il)
		}
		var ws store.WriteSet
		w.relRows(&ws, relSpec{})
		ws.Idempotency = &row
		return tx.WriteSetApply(ctx, ws)
	}), "writing the record")

	get, prepared, locked := w.readRecord(w.a, row.Key)
	for name, got := range map[string]*store.IdempotencyRecord{"IdempotencyGet": get, "RememberPrepare": prepared,
		"IntakeLock": locked} {
		if !sameRecord(got, row) {
			t.Errorf("%s(%s, %s) = %+v, want the record written: %+v", name, w.a, row.Key, got, row)
		}
	}
	for _, c := range []struct {
		profile identity.ProfileID
		key     string
	}{{w.b, row.Key}, {w.a, "key-2"}, {w.a, "KEY-1"}} {
		get, prepared, locked := w.readRecord(c.profile, c.key)
		if get != nil || prepared != nil || locked != nil {
			t.Errorf("reads of (%s, %q) found %+v / %+v / %+v, want none: the record is (%s, %q)'s", c.profile, c.key,
				get, prepared, locked, w.a, row.Key)
		}
	}
}

// testIdempotencyNeverReplaced writes a second record under a used key.
func testIdempotencyNeverReplaced(e *env) {
	t := e.t
	w := e.world(e.team("tm_i"))
	first := store.IdempotencyRow{Team: w.team, Profile: w.a, Key: "key-1", Operation: "remember", RequestHash: "h1",
		IngestID: "ing_1", Result: json.RawMessage(`{"first":true}`), CreatedAt: t0}
	w.apply(store.WriteSet{Idempotency: &first})
	second := first
	second.Operation, second.RequestHash, second.IngestID, second.Result = "forget", "h2", "ing_2", json.RawMessage(`{"first":false}`)
	var ws store.WriteSet
	mark := w.marker(&ws, "Marker")
	ws.Idempotency = &second
	e.checkErr(w.tryApply(ws), store.ErrIntegrity, "a second record under a used key")
	w.absent(mark, "a second record under a used key")
	if get, _, _ := w.readRecord(w.a, first.Key); !sameRecord(get, first) {
		t.Errorf("the record after a second write = %+v, want the first", get)
	}
}

// testFencedWrite plans a write from RememberPrepare's read and writes it with WriteSetApplyFenced:
// each change of what the read saw (an entity of a look-alike name, a record under the key, the
// profile disabled) fails the fence with ErrStaleVersion and writes nothing; the read as it was
// writes the rows and the record.
func testFencedWrite(e *env) {
	t := e.t
	w := e.world(e.team("tm_f"))
	names := []store.NameLookup{lookup(kindPerson, "Grace")}
	fenced := func(key string) (store.WriteSet, store.WriteFence, identity.EntityID) {
		prep, err := e.s.RememberPrepare(e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a, IdempotencyKey: key,
			Names: names})
		w.must(err, "RememberPrepare")
		if prep.Principal == nil {
			t.Fatalf("RememberPrepare: no principal for %s", w.a)
		}
		var ws store.WriteSet
		mark := w.marker(&ws, "Marker "+key)
		ws.Idempotency = &store.IdempotencyRow{Team: w.team, Profile: w.a, Key: key, Operation: "remember", RequestHash: "h",
			IngestID: w.id("ing"), Result: json.RawMessage(`{}`), CreatedAt: t0}
		return ws, store.WriteFence{Team: w.team, Profile: w.a, IdempotencyKey: key, NameLocks: names,
			ProfileStatus: prep.Principal.Profile.Status, ProfileScopes: prep.Principal.Profile.Scopes, Names: names,
			Candidates: prep.Candidates}, mark
	}
	apply := func(ws store.WriteSet, f store.WriteFence) error {
		return e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error { return tx.WriteSetApplyFenced(ctx, f, ws) })
	}

	// The read as it was: written.
	ws, f, mark := fenced("key-ok")
	w.must(apply(ws, f), "WriteSetApplyFenced on an unchanged read")
	if get, _, _ := w.readRecord(w.a, "key-ok"); !sameRecord(get, *ws.Idempotency) {
		t.Errorf("the fenced write's record = %+v, want %+v", get, ws.Idempotency)
	}
	prep, err := e.s.RememberPrepare(e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a,
		KnownEntities: []identity.EntityID{mark}})
	w.must(err, "RememberPrepare")
	if len(prep.Known) != 1 {
		t.Errorf("the fenced write's entity %s was not written", mark)
	}

	// A record under the key since the read.
	ws, f, mark = fenced("key-used")
	w.apply(store.WriteSet{Idempotency: &store.IdempotencyRow{Team: w.team, Profile: w.a, Key: "key-used", Operation: "forget",
		RequestHash: "h2", IngestID: w.id("ing"), Result: json.RawMessage(`{}`), CreatedAt: t0}})
	e.checkErr(apply(ws, f), store.ErrStaleVersion, "a fenced write after a record under its key")
	w.absent(mark, "a fenced write after a record under its key")

	// An entity whose name has the read's skeleton since the read (a look-alike: Cyrillic а).
	ws, f, mark = fenced("key-name")
	var other store.WriteSet
	w.entityRows(&other, kindPerson, "Grаce", t0)
	w.apply(other)
	e.checkErr(apply(ws, f), store.ErrStaleVersion, "a fenced write after a look-alike entity")
	w.absent(mark, "a fenced write after a look-alike entity")

	// The read again, with that entity: written.
	ws, f, _ = fenced("key-name")
	w.must(apply(ws, f), "WriteSetApplyFenced on a read with the look-alike entity")

	// The profile disabled since the read.
	ws, f, mark = fenced("key-disabled")
	w.must(e.s.ProfileSetStatus(e.ctx, store.ProfileSetStatusParams{Team: w.team, Profile: w.a, Status: identity.ProfileDisabled,
		UpdatedAt: t0}), "ProfileSetStatus")
	e.checkErr(apply(ws, f), store.ErrStaleVersion, "a fenced write after its profile was disabled")
	w.absent(mark, "a fenced write after its profile was disabled")
}
