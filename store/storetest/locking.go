package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Locking (DESIGN §5.9, decisions 8, 45, 54): transactions that lock the same entity name, idempotency
// key or conflict key run one after the other, each reading what the previous one committed — also
// when one of them has more keys than its bound and takes its team's lock of the class instead; due
// cases are claimed by one worker each; a policy version and a run date are reserved once.
//
// Every contract here releases Concurrency goroutines together. A goroutine that holds the contended
// lock keeps its transaction open until every goroutine has reached the contended call, so without
// the lock they would all read before anyone writes; with it, the readers wait. Nothing sleeps.
var lockingContracts = []contract{
	{"IntakeLockSerialisesEntityName", testIntakeLockSerialisesName},
	{"IntakeLockSerialisesIdempotencyKey", testIntakeLockSerialisesKey},
	{"KeysLockSerialisesNewRelationships", testKeysLockSerialisesNew},
	{"KeysLockSerialisesChanges", testKeysLockSerialisesChanges},
	{"CaseClaimDueClaimsEachCaseOnce", testClaimsExclusive},
	{"PolicyAppendHasOneWinner", testPolicyAppendOneWinner},
	{"NightlyReserveHasOneWinner", testNightlyReserveOneWinner},
	{"ReviewItemLockSerialisesDecisions", testReviewItemLockSerialisesDecisions},
}

// gate tells goroutines when all n of them have reached the contended call.
type gate struct {
	mu      sync.Mutex
	arrived map[int]bool
	n       int
	all     chan struct{}
}

func newGate(n int) *gate { return &gate{arrived: map[int]bool{}, n: n, all: make(chan struct{})} }

// arrive records that goroutine i reached the contended call; a retried transaction arrives again,
// which changes nothing.
func (g *gate) arrive(i int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.arrived[i] {
		g.arrived[i] = true
		if len(g.arrived) == g.n {
			close(g.all)
		}
	}
}

// wait blocks until every goroutine has arrived, or ctx ends.
func (g *gate) wait(ctx context.Context) error {
	select {
	case <-g.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("storetest: waiting for the other goroutines: %w", ctx.Err())
	}
}

// race runs fn in n goroutines released together and returns their errors. A goroutine that ends
// without reaching the gate arrives on its way out, so the others never wait for it.
func (e *env) race(n int, g *gate, fn func(ctx context.Context, i int) error) []error {
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(e.ctx, i)
			if g != nil {
				g.arrive(i)
			}
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// noErrors reports every goroutine's error.
func (e *env) noErrors(errs []error, what string) {
	e.t.Helper()
	for i, err := range errs {
		if err != nil {
			e.t.Errorf("%s, goroutine %d: %v", what, i, err)
		}
	}
}

// testIntakeLockSerialisesName: writers of one new entity name, each of which creates the entity
// unless IntakeLock shows it, create it once; every other writer sees it among its candidates.
func testIntakeLockSerialisesName(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	name := lookup(kindProject, "Kestrel")
	g := newGate(n)
	saw := make([][]identity.EntityID, n)
	created := make([]identity.EntityID, n)
	errs := e.race(n, g, func(ctx context.Context, i int) error {
		return e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			saw[i], created[i] = nil, ""
			p := store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: fmt.Sprintf("k%d", i),
				NameLocks: []store.NameLookup{name}, Names: []store.NameLookup{name}}
			if i%2 == 1 {
				// Past its bound: the team's name lock, taken exclusively, instead of the names' locks.
				p.NameLocks = append(p.NameLocks, lookup(kindProject, fmt.Sprintf("Other %d", i)))
				p.MaxLocks = 1
			}
			g.arrive(i)
			il, err := tx.IntakeLock(ctx, p)
			if err != nil {
				return err
			}
			if err := g.wait(ctx); err != nil {
				return err
			}
			saw[i] = entityIDs(il.Candidates)
			if len(il.Candidates) > 0 {
				return nil
			}
			id := identity.EntityID(fmt.Sprintf("ent_kestrel_%d", i))
			created[i] = id
			return tx.WriteSetApply(ctx, store.WriteSet{
				Entities: []store.EntityRow{{Team: w.team, ID: id, Kind: kindProject, Context: map[string]string{},
					CreatedBy: w.a, IngestID: fmt.Sprintf("ing_%d", i), CreatedAt: t0}},
				EntityNames: []store.EntityNameRow{w.nameRow(id, "Kestrel", identity.NameCanonical, t0)},
			})
		})
	})
	e.noErrors(errs, "writers of one name")
	var winners []identity.EntityID
	for _, id := range created {
		if id != "" {
			winners = append(winners, id)
		}
	}
	if len(winners) != 1 {
		e.t.Fatalf("%d writers of one new name created it (%v), want exactly 1: IntakeLock did not serialise them", len(winners), winners)
	}
	for i := range n {
		if created[i] == "" && !slices.Equal(saw[i], winners) {
			e.t.Errorf("writer %d saw candidates %v after the name lock, want the committed %v", i, saw[i], winners)
		}
	}
	prep, err := e.s.RememberPrepare(e.ctx, store.RememberPrepareParams{Team: w.team, Profile: w.a, Names: []store.NameLookup{name}})
	e.must(err, "RememberPrepare")
	if !slices.Equal(entityIDs(prep.Candidates), winners) {
		e.t.Errorf("entities named Kestrel = %v, want %v", entityIDs(prep.Candidates), winners)
	}
}

// testIntakeLockSerialisesKey: callers of one idempotency key, each of which records its result
// unless IntakeLock shows a record, record it once; every other caller sees that record.
func testIntakeLockSerialisesKey(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	g := newGate(n)
	saw := make([]string, n)
	wrote := make([]bool, n)
	errs := e.race(n, g, func(ctx context.Context, i int) error {
		return e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			saw[i], wrote[i] = "", false
			g.arrive(i)
			il, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: w.team, Profile: w.a, IdempotencyKey: "same-key"})
			if err != nil {
				return err
			}
			if err := g.wait(ctx); err != nil {
				return err
			}
			if il.Idempotency != nil {
				saw[i] = il.Idempotency.RequestHash
				return nil
			}
			wrote[i] = true
			hash := fmt.Sprintf("h%d", i)
			return tx.WriteSetApply(ctx, store.WriteSet{Idempotency: &store.IdempotencyRow{Team: w.team, Profile: w.a,
				Key: "same-key", Operation: "remember", RequestHash: hash, IngestID: "ing_" + hash,
				Result: []byte(`{}`), CreatedAt: t0}})
		})
	})
	e.noErrors(errs, "callers of one idempotency key")
	winner := slices.Index(wrote, true)
	if winner < 0 || slices.Index(wrote[winner+1:], true) >= 0 {
		e.t.Fatalf("callers that recorded the key: %v, want exactly one: IntakeLock did not serialise them", wrote)
	}
	for i := range n {
		if i != winner && saw[i] != fmt.Sprintf("h%d", winner) {
			e.t.Errorf("caller %d saw record %q after the key lock, want h%d", i, saw[i], winner)
		}
	}
}

// lockKey is writer i's KeysLock of key: the writer arrives at the gate, takes the lock, and then
// waits until every writer has arrived, so the others contend for the lock it holds. Every odd writer
// asks past its bound, so it takes the team's key lock exclusively instead of the key's.
func (w *world) lockKey(ctx context.Context, tx store.Tx, g *gate, i int, key conflict.Key) (store.KeysLocked, error) {
	p := store.KeysLockParams{Team: w.team, Keys: []conflict.Key{key}}
	if i%2 == 1 {
		p.Keys = append(p.Keys, w.key(w.ada, fmt.Sprintf("other-%d", i)))
		p.MaxLocks = 1
	}
	g.arrive(i)
	kl, err := tx.KeysLock(ctx, p)
	if err != nil {
		return kl, err
	}
	return kl, g.wait(ctx)
}

// testKeysLockSerialisesNew: writers of one conflict key, each of which adds a relationship to the
// key unless KeysLock shows one, add it once; every other writer sees it. Only the key's lock can
// order them: there is no row to lock before the first one commits.
func testKeysLockSerialisesNew(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	key := w.key(w.ada, "fresh")
	g := newGate(n)
	saw := make([][]relationship.ID, n)
	created := make([]relationship.ID, n)
	errs := e.race(n, g, func(ctx context.Context, i int) error {
		return e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			saw[i], created[i] = nil, ""
			kl, err := w.lockKey(ctx, tx, g, i, key)
			if err != nil {
				return err
			}
			for _, r := range kl.Relationships {
				saw[i] = append(saw[i], r.ID)
			}
			if len(kl.Relationships) > 0 {
				return nil
			}
			var ws store.WriteSet
			created[i] = w.relRows(&ws, relSpec{owner: []identity.ProfileID{w.a, w.b}[i%2], scope: key.Scope}).ID
			return tx.WriteSetApply(ctx, ws)
		})
	})
	e.noErrors(errs, "writers of one key")
	var winners []relationship.ID
	for _, id := range created {
		if id != "" {
			winners = append(winners, id)
		}
	}
	if len(winners) != 1 {
		e.t.Fatalf("%d writers of one key added its first relationship (%v), want exactly 1: KeysLock did not serialise them",
			len(winners), winners)
	}
	for i := range n {
		if created[i] == "" && !slices.Equal(saw[i], winners) {
			e.t.Errorf("writer %d saw %v under the key lock, want the committed %v", i, saw[i], winners)
		}
	}
}

// testKeysLockSerialisesChanges: writers of one conflict key, each of which changes a relationship of
// the key at the version KeysLock returned, all succeed one after the other.
func testKeysLockSerialisesChanges(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	r := w.rel(relSpec{scope: "hot"})
	key := w.key(w.ada, "hot")
	g := newGate(n)
	saw := make([]int, n)
	errs := e.race(n, g, func(ctx context.Context, i int) error {
		return e.s.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
			saw[i] = 0
			kl, err := w.lockKey(ctx, tx, g, i, key)
			if err != nil {
				return err
			}
			i0 := slices.IndexFunc(kl.Relationships, func(x relationship.Relationship) bool { return x.ID == r.ID })
			if i0 < 0 {
				return fmt.Errorf("KeysLock did not return %s", r.ID)
			}
			cur := kl.Relationships[i0]
			saw[i] = cur.Version
			tier := relationship.TierFact
			if cur.Tier == relationship.TierFact {
				tier = relationship.TierValidatedClaim
			}
			return tx.WriteSetApply(ctx, store.WriteSet{
				Updates: []store.RelationshipUpdate{{Team: w.team, ID: r.ID, ExpectVersion: cur.Version, Status: cur.Status,
					Tier: tier, UpdatedAt: t0}},
				Transitions: []store.TransitionRow{{Team: w.team, ID: fmt.Sprintf("trn_race_%d", i), RelationshipID: r.ID,
					FromStatus: cur.Status, ToStatus: cur.Status, FromTier: cur.Tier, ToTier: tier, FromVersion: cur.Version,
					ToVersion: cur.Version + 1, Reason: "race", ActorKind: store.ActorProfile, ActorProfile: w.a,
					IngestID: fmt.Sprintf("ing_%d", i), CreatedAt: t0}},
			})
		})
	})
	for i, err := range errs {
		if errors.Is(err, store.ErrStaleVersion) {
			e.t.Errorf("writer %d: %v: it read a version another writer of the key changed, so KeysLock did not serialise them", i, err)
		} else if err != nil {
			e.t.Errorf("writer %d: %v", i, err)
		}
	}
	slices.Sort(saw)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(saw, want) {
		e.t.Errorf("versions the writers read under the key lock = %v, want each of %v once", saw, want)
	}
	w.relAt(r.ID, n+1, relationship.StatusActive, "after the writers of one key")
}

// testClaimsExclusive: workers claiming one team's due cases at once claim each case exactly once.
func testClaimsExclusive(e *env) {
	w := e.world(e.team("tm_l"))
	const cases = 2*Concurrency + 1
	var ws store.WriteSet
	for i := range cases {
		w.caseRows(&ws, w.key(w.ada, fmt.Sprintf("c%02d", i)), nil, t0, t0.Add(time.Duration(i)*time.Second))
	}
	w.apply(ws)
	now := at(time.Hour)
	claims := make([][]conflict.ID, Concurrency)
	errs := e.race(Concurrency, nil, func(ctx context.Context, i int) error {
		for {
			got, err := e.rv.CaseClaimDue(ctx, store.CaseClaimDueParams{Team: w.team, Now: now, RunDate: runDate, Batch: 2,
				Lease: 5 * time.Minute, Token: fmt.Sprintf("tok_%d", i), MaxAttempts: 5})
			if err != nil || len(got) == 0 {
				return err
			}
			for _, c := range got {
				claims[i] = append(claims[i], c.ID)
			}
		}
	})
	e.noErrors(errs, "concurrent claims")
	by := map[conflict.ID][]int{}
	for i, ids := range claims {
		for _, id := range ids {
			by[id] = append(by[id], i)
		}
	}
	for _, c := range ws.CaseInserts {
		if len(by[c.ID]) != 1 {
			e.t.Errorf("case %s was claimed by workers %v, want exactly one", c.ID, by[c.ID])
		}
	}
	if len(by) != cases {
		e.t.Errorf("%d cases claimed, want %d", len(by), cases)
	}
	got, err := e.rv.CaseClaimDue(e.ctx, store.CaseClaimDueParams{Team: w.team, Now: now, RunDate: runDate, Batch: cases,
		Lease: 5 * time.Minute, Token: "tok_late", MaxAttempts: 5})
	e.must(err, "CaseClaimDue")
	if len(got) != 0 {
		e.t.Errorf("a late worker claimed %+v while every case was held", got)
	}
}

// testPolicyAppendOneWinner: callers appending over the same policy version: one appends, the
// others fail with ErrStaleVersion.
func testPolicyAppendOneWinner(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	got := make([]store.Policy, n)
	errs := e.race(n, nil, func(ctx context.Context, i int) (err error) {
		got[i], err = e.s.PolicyAppend(ctx, store.PolicyAppendParams{ExpectVersion: 1, Policy: store.Policy{Team: w.team,
			ReviewTTL: time.Duration(i+1) * 24 * time.Hour, AutoWriteThreshold: 0.7, TimeZone: "UTC", CreatedBy: "host",
			CreatedAt: at(time.Minute)}})
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			e.t.Errorf("appenders %d and %d both appended over version 1", winner, i)
		case !errors.Is(err, store.ErrStaleVersion):
			e.t.Errorf("appender %d: err = %v, want nil or ErrStaleVersion", i, err)
		}
	}
	if winner < 0 {
		e.t.Fatal("no appender over version 1 succeeded")
	}
	cur, err := e.s.PolicyGet(e.ctx, w.team)
	e.must(err, "PolicyGet")
	if got[winner].Version != 2 || cur.Version != 2 || cur.ReviewTTL != got[winner].ReviewTTL {
		e.t.Errorf("policy in force = v%d (TTL %s), want the winner's v2 (TTL %s)", cur.Version, cur.ReviewTTL, got[winner].ReviewTTL)
	}
}

// testNightlyReserveOneWinner: workers reserving one team's run date at once: one reserves it.
func testNightlyReserveOneWinner(e *env) {
	w := e.world(e.team("tm_l"))
	const n = Concurrency
	reserved := make([]bool, n)
	errs := e.race(n, nil, func(ctx context.Context, i int) (err error) {
		reserved[i], err = e.rv.NightlyReserve(ctx, store.NightlyReserveParams{Team: w.team, RunDate: runDate,
			Worker: fmt.Sprintf("w%d", i), Now: at(time.Minute)})
		return err
	})
	e.noErrors(errs, "concurrent reservations")
	first := slices.Index(reserved, true)
	if first < 0 || slices.Index(reserved[first+1:], true) >= 0 {
		e.t.Errorf("reservations of one run date: %v, want exactly one true", reserved)
	}
	// Every worker's pass is counted started, and each one's outcome recorded at once adds up; the
	// failures stop at the ledger's bound.
	errs = e.race(n, nil, func(ctx context.Context, i int) error {
		var fs []store.NightlyFailure
		for j := range 4 {
			fs = append(fs, store.NightlyFailure{ConflictID: conflict.ID(fmt.Sprintf("cf_%d_%d", i, j)), Attempt: 1, Error: "x"})
		}
		return e.rv.NightlyFinish(ctx, store.NightlyFinishParams{Team: w.team, RunDate: runDate, Now: at(time.Duration(i) * time.Minute),
			Counts: store.NightlyCounts{Claimed: 5, Resolved: 1, Failed: 4}, Failures: fs})
	})
	e.noErrors(errs, "concurrent finishes")
	page, err := e.s.NightlyRunList(e.ctx, store.NightlyRunListParams{Team: w.team, Limit: 1})
	e.must(err, "NightlyRunList")
	if len(page.Items) != 1 {
		e.t.Fatalf("the ledger holds %d runs, want 1", len(page.Items))
	}
	r := page.Items[0]
	if r.PassesStarted != n || r.PassesFinished != n || r.Counts.Claimed != 5*n || r.Counts.Resolved != n || r.Counts.Failed != 4*n ||
		len(r.Failures) != min(4*n, store.MaxNightlyFailures) || r.FinishedAt == nil || !r.FinishedAt.Equal(at(time.Duration(n-1)*time.Minute)) {
		e.t.Errorf("the ledger after %d concurrent passes = %+v (%d failures), want every pass counted", n, r, len(r.Failures))
	}
}
