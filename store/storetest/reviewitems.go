package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Review items (issue 11): a review item is open until it is closed — resolved by a client's
// decision, superseded or expired — and a close is final. Its versions and its close read back as
// written; a close is fenced on the item's being open, so a second close of one item fails with
// ErrStaleVersion and leaves nothing of its transaction; closing the items of a relationship closes
// only its open ones; items belong to their team; and ReviewItemLock holds an item against another
// transaction's lock of it until commit (Locking/ReviewItemLockSerialisesDecisions).
var reviewItemContracts = []contract{
	{"WrittenItemReadsBack", testReviewItemReadsBack},
	{"CloseIsFencedOnOpen", testReviewItemCloseFenced},
	{"ClosesForCloseOnlyOpenItemsOfTheRelationship", testReviewItemClosesFor},
}

// itemRow returns a new open review item of ingest ing about r at version ver, naming related at
// versions relVers (nil: not recorded).
func (w *world) itemRow(ing string, r relationship.ID, ver int, related []string, relVers []int) store.ReviewItemRow {
	return store.ReviewItemRow{Team: w.team, ID: w.id("rev"), IngestID: ing, PlacementItemID: w.id("item"),
		Kind: "relationship_held", Profile: w.a, ObservationID: w.id("obs"), RelationshipID: r, Related: related,
		Choices: json.RawMessage(`[{"action":"keep"},{"action":"retract"}]`), RelationshipVersion: ver,
		RelatedVersions: relVers, CreatedAt: t0}
}

// decisionRow returns a decision of a on item it, recorded at when.
func (w *world) decisionRow(it store.ReviewItemRow, action string, when time.Time) store.DecisionRow {
	return store.DecisionRow{Team: w.team, ID: w.id("dec"), Profile: w.a, ReviewID: it.ID, ItemIngestID: it.IngestID,
		PlacementItemID: it.PlacementItemID, Action: action, Decision: json.RawMessage(`{"action":"` + action + `"}`),
		FragmentIDs: []string{}, Reason: "decided", Changes: json.RawMessage(`[]`), IngestID: w.id("ing"),
		IdempotencyKey: w.id("key"), CreatedAt: when}
}

// closeRows adds to ws a's decision on it and the close of it that names the decision; it returns
// the decision.
func (w *world) closeRows(ws *store.WriteSet, it store.ReviewItemRow, when time.Time) store.DecisionRow {
	d := w.decisionRow(it, "keep", when)
	ws.Decisions = append(ws.Decisions, d)
	ws.ItemCloses = append(ws.ItemCloses, store.ReviewItemClose{Team: w.team, ID: it.ID, Status: store.ReviewResolved,
		ClosedAt: when, DecisionID: d.ID})
	return d
}

// item reads review item it through ReviewItemGet.
func (w *world) item(it store.ReviewItemRow) (store.ReviewItem, error) {
	return w.e.s.ReviewItemGet(w.e.ctx, w.team, it.IngestID, it.PlacementItemID)
}

// checkItem reports how got differs from want as written, in status, closing time and decision.
func (w *world) checkItem(got store.ReviewItem, want store.ReviewItemRow, status string, closed *time.Time, decision, what string) {
	w.t.Helper()
	var diffs []string
	g := got.ReviewItemRow
	if g.Team != want.Team || g.ID != want.ID || g.IngestID != want.IngestID || g.PlacementItemID != want.PlacementItemID ||
		g.Kind != want.Kind || g.Profile != want.Profile || g.ObservationID != want.ObservationID ||
		g.RelationshipID != want.RelationshipID || !g.CreatedAt.Equal(want.CreatedAt) {
		diffs = append(diffs, fmt.Sprintf("row %+v, want %+v", g, want))
	}
	if !slices.Equal(g.Related, want.Related) && (len(g.Related) > 0 || len(want.Related) > 0) {
		diffs = append(diffs, fmt.Sprintf("related %v, want %v", g.Related, want.Related))
	}
	if g.RelationshipVersion != want.RelationshipVersion || !slices.Equal(g.RelatedVersions, want.RelatedVersions) ||
		(g.RelatedVersions == nil) != (want.RelatedVersions == nil) {
		diffs = append(diffs, fmt.Sprintf("versions %d %#v, want %d %#v", g.RelationshipVersion, g.RelatedVersions,
			want.RelationshipVersion, want.RelatedVersions))
	}
	var gc, wc any
	if json.Unmarshal(g.Choices, &gc) != nil || json.Unmarshal(want.Choices, &wc) != nil || !reflect.DeepEqual(gc, wc) {
		diffs = append(diffs, fmt.Sprintf("choices %s, want %s", g.Choices, want.Choices))
	}
	if got.Status != status || got.DecisionID != decision || (got.ResolvedAt == nil) != (closed == nil) ||
		(closed != nil && !got.ResolvedAt.Equal(*closed)) {
		diffs = append(diffs, fmt.Sprintf("status %q closed at %v by decision %q, want %q at %v by %q", got.Status,
			got.ResolvedAt, got.DecisionID, status, closed, decision))
	}
	for _, d := range diffs {
		w.t.Errorf("%s: review item %s: %s", what, want.ID, d)
	}
}

// testReviewItemReadsBack: an item written with WriteSetApply reads back through ReviewItemGet and,
// as a transaction's first call, ReviewItemLock, open and with the versions it was issued with;
// an item issued without versions reads back 0 and nil; a missing item and another team's item are
// ErrNotFound.
func testReviewItemReadsBack(e *env) {
	w := e.world(e.team("tm_x"))
	r, prior := w.rel(relSpec{scope: "a"}), w.rel(relSpec{scope: "b"})
	it := w.itemRow("ing_items", r.ID, 1, []string{string(prior.ID)}, []int{1})
	bare := w.itemRow("ing_items", r.ID, 0, nil, nil)
	w.apply(store.WriteSet{ReviewItems: []store.ReviewItemRow{it, bare}})

	got, err := w.item(it)
	w.must(err, "ReviewItemGet")
	w.checkItem(got, it, store.ReviewOpen, nil, "", "ReviewItemGet")
	got, err = w.item(bare)
	w.must(err, "ReviewItemGet of an item without versions")
	w.checkItem(got, bare, store.ReviewOpen, nil, "", "ReviewItemGet of an item without versions")
	w.must(e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		got, err := tx.ReviewItemLock(ctx, w.team, it.IngestID, it.PlacementItemID)
		if err != nil {
			return err
		}
		w.checkItem(got, it, store.ReviewOpen, nil, "", "ReviewItemLock")
		return nil
	}), "ReviewItemLock as the first call of a transaction")

	_, err = e.s.ReviewItemGet(e.ctx, w.team, it.IngestID, "item_missing")
	e.checkErr(err, store.ErrNotFound, "ReviewItemGet of a missing item")
	err = e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ReviewItemLock(ctx, w.team, "ing_missing", it.PlacementItemID)
		return err
	})
	e.checkErr(err, store.ErrNotFound, "ReviewItemLock of a missing item")

	y := e.world(e.team("tm_y"))
	_, err = y.item(it)
	e.checkErr(err, store.ErrNotFound, "ReviewItemGet of another team's item")
	err = e.s.Tx(e.ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.ReviewItemLock(ctx, y.team, it.IngestID, it.PlacementItemID)
		return err
	})
	e.checkErr(err, store.ErrNotFound, "ReviewItemLock of another team's item")
}

// testReviewItemCloseFenced: a close resolves an open item with its closing time and decision; a
// second close of it fails with ErrStaleVersion and leaves nothing of its transaction — not the close
// of another open item, not the idempotency record — and the item keeps its first close.
func testReviewItemCloseFenced(e *env) {
	w := e.world(e.team("tm_x"))
	r := w.rel(relSpec{})
	it, other := w.itemRow("ing_i", r.ID, 1, nil, nil), w.itemRow("ing_i", r.ID, 1, nil, nil)
	w.apply(store.WriteSet{ReviewItems: []store.ReviewItemRow{it, other}})

	var first store.WriteSet
	closed := at(time.Minute)
	d := w.closeRows(&first, it, closed)
	w.apply(first)
	got, err := w.item(it)
	w.must(err, "ReviewItemGet after the close")
	w.checkItem(got, it, store.ReviewResolved, &closed, d.ID, "after the close")

	var second store.WriteSet
	w.closeRows(&second, other, at(2*time.Minute))
	w.closeRows(&second, it, at(2*time.Minute))
	second.Idempotency = &store.IdempotencyRow{Team: w.team, Profile: w.a, Key: "k-second-close", Operation: "resolve",
		RequestHash: "h", IngestID: "ing_second", Result: json.RawMessage(`{}`), CreatedAt: at(2 * time.Minute)}
	e.checkErr(w.tryApply(second), store.ErrStaleVersion, "second close of a resolved item")
	got, err = w.item(it)
	w.must(err, "ReviewItemGet after the second close")
	w.checkItem(got, it, store.ReviewResolved, &closed, d.ID, "after a failed second close")
	got, err = w.item(other)
	w.must(err, "ReviewItemGet of the other item")
	w.checkItem(got, other, store.ReviewOpen, nil, "", "the other item closed in the failed transaction")
	rec, err := e.s.IdempotencyGet(e.ctx, w.team, w.a, "k-second-close")
	w.must(err, "IdempotencyGet")
	if rec != nil {
		e.t.Errorf("idempotency record %+v of the failed transaction is present", rec)
	}

	// A superseded item is closed too: a decision on it fails the same way.
	var sup store.WriteSet
	sup.ItemClosesFor = []store.ReviewItemCloseFor{{Team: w.team, RelationshipID: r.ID, Status: store.ReviewSuperseded,
		ClosedAt: at(3 * time.Minute)}}
	w.apply(sup)
	var late store.WriteSet
	w.closeRows(&late, other, at(4*time.Minute))
	e.checkErr(w.tryApply(late), store.ErrStaleVersion, "close of a superseded item")
}

// testReviewItemClosesFor: closing the items of a relationship closes its open items, without a
// decision, and leaves its closed items, other relationships' items and another team's items alone;
// a relationship without items is no error.
func testReviewItemClosesFor(e *env) {
	x, y := e.world(e.team("tm_x")), e.world(e.team("tm_y"))
	type items struct{ a1, a2, done, b, none store.ReviewItemRow }
	build := func(w *world) (items, store.DecisionRow) {
		r, r2 := w.rel(relSpec{scope: "a"}), w.rel(relSpec{scope: "b"})
		its := items{a1: w.itemRow("ing_c", r.ID, 1, nil, nil), a2: w.itemRow("ing_c", r.ID, 1, []string{string(r2.ID)}, []int{1}),
			done: w.itemRow("ing_c", r.ID, 1, nil, nil), b: w.itemRow("ing_c", r2.ID, 1, nil, nil), none: w.itemRow("ing_c", "", 0, nil, nil)}
		w.apply(store.WriteSet{ReviewItems: []store.ReviewItemRow{its.a1, its.a2, its.done, its.b, its.none}})
		var ws store.WriteSet
		d := w.closeRows(&ws, its.done, at(time.Minute))
		w.apply(ws)
		return its, d
	}
	xi, xd := build(x)
	yi, yd := build(y)
	if xi.a1.ID != yi.a1.ID || xi.a1.RelationshipID != yi.a1.RelationshipID {
		e.t.Fatalf("storetest: the two teams were meant to share item and relationship IDs")
	}

	when := at(2 * time.Minute)
	x.apply(store.WriteSet{ItemClosesFor: []store.ReviewItemCloseFor{
		{Team: x.team, RelationshipID: xi.a1.RelationshipID, Status: store.ReviewSuperseded, ClosedAt: when},
		{Team: x.team, RelationshipID: "rel_without_items", Status: store.ReviewSuperseded, ClosedAt: when}}})

	done := at(time.Minute)
	for _, c := range []struct {
		w        *world
		it       store.ReviewItemRow
		status   string
		closed   *time.Time
		decision string
	}{
		{x, xi.a1, store.ReviewSuperseded, &when, ""},
		{x, xi.a2, store.ReviewSuperseded, &when, ""},
		{x, xi.done, store.ReviewResolved, &done, xd.ID},
		{x, xi.b, store.ReviewOpen, nil, ""},
		{x, xi.none, store.ReviewOpen, nil, ""},
		{y, yi.a1, store.ReviewOpen, nil, ""},
		{y, yi.a2, store.ReviewOpen, nil, ""},
		{y, yi.done, store.ReviewResolved, &done, yd.ID},
	} {
		got, err := c.w.item(c.it)
		if err != nil {
			e.t.Errorf("ReviewItemGet %s of %s: %v", c.it.ID, c.w.team, err)
			continue
		}
		c.w.checkItem(got, c.it, c.status, c.closed, c.decision, "after closing the items of "+string(xi.a1.RelationshipID)+
			" in "+string(x.team))
	}
}

// testReviewItemLockSerialisesDecisions: deciders of one review item, each of which resolves it
// unless ReviewItemLock shows it closed, resolve it once; none fails on the close's fence, and every
// other decider sees the winner's decision.
func testReviewItemLockSerialisesDecisions(e *env) {
	w := e.world(e.team("tm_l"))
	r := w.rel(relSpec{})
	it := w.itemRow("ing_l", r.ID, 1, nil, nil)
	w.apply(store.WriteSet{ReviewItems: []store.ReviewItemRow{it}})
	const n = Concurrency
	g := newGate(n)
	saw := make([]string, n)
	decided := make([]string, n)
	errs := e.race(n, g, func(ctx context.Context, i int) error {
		return e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			saw[i], decided[i] = "", ""
			g.arrive(i)
			cur, err := tx.ReviewItemLock(ctx, w.team, it.IngestID, it.PlacementItemID)
			if err != nil {
				return err
			}
			if err := g.wait(ctx); err != nil {
				return err
			}
			if cur.Status != store.ReviewOpen {
				saw[i] = cur.DecisionID
				return nil
			}
			var ws store.WriteSet
			decided[i] = w.closeRows(&ws, it, at(time.Duration(i+1)*time.Second)).ID
			return tx.WriteSetApply(ctx, ws)
		})
	})
	for i, err := range errs {
		if errors.Is(err, store.ErrStaleVersion) {
			e.t.Errorf("decider %d: %v: it saw open an item another decider closed, so ReviewItemLock did not serialise them", i, err)
		} else if err != nil {
			e.t.Errorf("decider %d: %v", i, err)
		}
	}
	var winners []string
	for _, d := range decided {
		if d != "" {
			winners = append(winners, d)
		}
	}
	if len(winners) != 1 {
		e.t.Fatalf("%d deciders resolved the item (%v), want exactly 1", len(winners), winners)
	}
	for i := range n {
		if decided[i] == "" && saw[i] != winners[0] {
			e.t.Errorf("decider %d saw decision %q under the item lock, want the committed %s", i, saw[i], winners[0])
		}
	}
	got, err := w.item(it)
	w.must(err, "ReviewItemGet after the deciders")
	if got.Status != store.ReviewResolved || got.DecisionID != winners[0] {
		e.t.Errorf("item after the deciders: %s by %q, want resolved by %s", got.Status, got.DecisionID, winners[0])
	}
}
