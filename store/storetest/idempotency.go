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
	w := e.world("tm_i")
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
	w := e.world("tm_i")
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
