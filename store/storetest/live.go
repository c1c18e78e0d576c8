package storetest

import (
	"context"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Live reads: KeysLock with LiveOnly returns only the keys' active, pending_evidence and
// needs_review relationships and their supports (a key's closed history is not read), and the
// same cases as without it.
var liveContracts = []contract{
	{"KeysLockLiveOnlySkipsClosedHistory", testKeysLockLiveOnly},
}

func testKeysLockLiveOnly(e *env) {
	w := e.world(e.team("tm_live"))
	live := w.rel(relSpec{owner: w.a, content: "Ada works on Falcon."})
	closed := w.rel(relSpec{owner: w.b, object: w.osprey, content: "Ada works on Osprey."})
	closed = w.change(closed, relationship.StatusSuperseded, closed.Tier, nil, at(time.Minute))
	pending := w.rel(relSpec{owner: w.b, content: "Ada may work on Falcon."})
	w.change(pending, relationship.StatusPendingEvidence, relationship.TierCandidate, nil, at(2*time.Minute))
	read := func(liveOnly bool) (out store.KeysLocked) {
		e.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) (err error) {
			out, err = tx.KeysLock(ctx, store.KeysLockParams{Team: w.team, Keys: []conflict.Key{w.key(w.ada, "")}, LiveOnly: liveOnly})
			return err
		}), "KeysLock")
		return out
	}
	ids := func(kl store.KeysLocked) (rels, sups []relationship.ID) {
		for _, r := range kl.Relationships {
			rels = append(rels, r.ID)
		}
		for _, s := range kl.Supports {
			if !slices.Contains(sups, s.RelationshipID) {
				sups = append(sups, s.RelationshipID)
			}
		}
		slices.Sort(rels)
		slices.Sort(sups)
		return rels, sups
	}
	all, _ := ids(read(false))
	want := []relationship.ID{live.ID, pending.ID}
	slices.Sort(want)
	if !slices.Contains(all, closed.ID) {
		e.t.Fatalf("KeysLock without LiveOnly = %v, want the closed %s too", all, closed.ID)
	}
	rels, sups := ids(read(true))
	if !slices.Equal(rels, want) || !slices.Equal(sups, want) {
		e.t.Errorf("KeysLock LiveOnly: relationships %v, supports of %v; want %v for both", rels, sups, want)
	}
}
