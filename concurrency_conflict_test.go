package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/relationship"
)

// The tests of this file prove the concurrency claims of cross-profile conflict handling: responses
// to a team case are fenced by the case version (DESIGN §7 "Responding from another profile"), two
// owners' incompatible first writes see each other through the conflict-key lock (§5 step 9, §6.5),
// and a lifecycle change repairs the case in the same transaction as the change (§6.7). Real
// goroutines, real transactions, released together by closing a channel, with assertions on the
// database state afterwards. Run them with
//
//	go test -race -count=3 -run 'ConcurrentConflict|ConcurrentIncompatible|ConcurrentForgetAndRespond' .

// lockGate lines the racing calls up inside their transactions. Released together by a closed channel,
// two calls still reach the database milliseconds apart (each first reads outside its transaction and
// runs the verifier), often enough for the first to commit before the second begins, so the locks
// under test would rarely be contended. The gate holds the racers' profile rows FOR UPDATE in a
// transaction of its own: every racing transaction then queues on IntakeLock's FOR SHARE read of its
// profile (or behind an advisory lock an earlier racer took), and the gate commits only once all of
// them wait, so they leave the gate together, right before their conflict-key locks and reads. This
// is synchronisation on database locks, not a sleep: who wins stays up to PostgreSQL.
type lockGate struct {
	t    *testing.T
	e    *env
	tx   pgx.Tx
	pid  uint32
	done atomic.Int32 // racing calls that have returned
}

// holdProfiles opens the gate transaction and locks the profiles' rows.
func holdProfiles(t *testing.T, e *env, ps ...densemem.Principal) *lockGate {
	t.Helper()
	tx, err := e.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g := &lockGate{t: t, e: e, tx: tx, pid: tx.Conn().PgConn().PID()}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = string(p.ProfileID)
	}
	var n int
	if err := tx.QueryRow(context.Background(), `SELECT count(*) FROM (SELECT 1 FROM profiles
		WHERE team_id = $1 AND profile_id = ANY($2) FOR UPDATE) l`, e.team, ids).Scan(&n); err != nil || n != len(ids) {
		_ = tx.Rollback(context.Background())
		t.Fatalf("gate: locked %d of %d profiles: %v", n, len(ids), err)
	}
	return g
}

// race runs fn(i) for i in 0..n-1 released together (runTogether), and commits the gate once all n
// transactions wait on a lock, or once every call that has not returned waits (a call that failed
// before its transaction must not hold the others back). It fails the test when ctx expires first.
func (g *lockGate) race(ctx context.Context, n int, fn func(i int)) {
	g.t.Helper()
	released := make(chan error, 1)
	go func() { released <- g.releaseWhenWaiting(ctx, n) }()
	runTogether(n, func(i int) {
		defer g.done.Add(1)
		fn(i)
	})
	if err := <-released; err != nil {
		g.t.Fatalf("gate: %v", err)
	}
}

func (g *lockGate) releaseWhenWaiting(ctx context.Context, n int) error {
	defer func() { _ = g.tx.Rollback(context.Background()) }() // no-op after a commit
	for {
		var waiting int
		err := g.e.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> $1 AND wait_event_type = 'Lock'`, g.pid).Scan(&waiting)
		if err != nil {
			return fmt.Errorf("waiting for %d racers: %w", n, err)
		}
		if waiting+int(g.done.Load()) >= n {
			return g.tx.Commit(context.Background())
		}
	}
}

// recallProductionCase reads the live case of production's deploys_from through Recall, as a responding
// host would, and returns its ID and version.
func recallProductionCase(t *testing.T, e *env, p densemem.Principal) (string, int) {
	t.Helper()
	resp := e.recall(p, "production", nil, nil)
	if len(resp.Conflicts) != 1 {
		t.Fatalf("recall of production lists %d conflicts, want 1: %+v", len(resp.Conflicts), resp.Conflicts)
	}
	return resp.Conflicts[0].ConflictID, resp.Conflicts[0].Version
}

// productionCase is the opening state every response and forget scenario starts from.
type productionCase struct {
	a, b    densemem.RelationshipOutcome // A1: production -> main (undated); B1: production -> release since 2026-05-01
	caseID  string
	version int
}

// openProductionCase gives A production→main (undated) and B production→release since 2026-05-01:
// B's dated, verifier-confirmed statement corrects A's and opens the case at version 1 (DESIGN §6.5,
// §7).
func openProductionCase(t *testing.T, e *env) productionCase {
	t.Helper()
	var o productionCase
	o.a = e.remember(e.A, deploy("production", "main"))
	o.b = e.remember(e.B, deploy("production", "release").since(date("2026-05-01")))
	if o.b.Category != densemem.CategoryAccepted || o.b.Conflict == nil || o.b.Conflict.Version != 1 || o.b.Conflict.Status != "open" {
		t.Fatalf("B's placement %+v (conflict %+v), want accepted and opening a case at version 1", o.b, o.b.Conflict)
	}
	if len(o.b.CrossReferences) != 1 || o.b.CrossReferences[0].Kind != "corrects" || o.b.CrossReferences[0].ToRelationshipID != o.a.RelationshipID {
		t.Fatalf("B's cross-references %+v, want one corrects to %s", o.b.CrossReferences, o.a.RelationshipID)
	}
	e.clock.Advance(time.Second)
	o.caseID, o.version = o.b.Conflict.ConflictID, o.b.Conflict.Version
	return o
}

// productionResponse is responder i's statement that production deploys from object, in its own words,
// answering caseID at version.
func productionResponse(i int, object, caseID string, version int, key string) densemem.RememberRequest {
	f := deploy("production", object)
	f.content = fmt.Sprintf("Responder %d checked today: the production environment deploys from the %s branch.", i, object)
	req := f.request(key)
	req.Proposal.Relationships[0].ConflictResponse = &densemem.ConflictResponse{ConflictID: caseID, ExpectedVersion: version}
	return req
}

// crossReferenceTargets returns "kind->to" for the cross-references of an outcome, sorted.
func crossReferenceTargets(xs []densemem.CrossReferenceOutcome) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.Kind + "->" + string(x.ToRelationshipID)
	}
	slices.Sort(out)
	return out
}

// TestConcurrentConflictResponsesOneWins: ten profiles answer one case at the version they all read.
// The version fence lets exactly one response through; the nine others fail with
// ErrStaleConflictVersion and write nothing (DESIGN §7: "nothing written for the whole call").
func TestConcurrentConflictResponsesOneWins(t *testing.T) {
	slow(t)
	t.Parallel()
	// Responder i states objects[i%2]: half side with B (release), half with A (main).
	objects := [2]string{"release", "main"}

	// What one response writes, per side, measured on a world of its own.
	var single [2]map[string]int
	for side, object := range objects {
		ce := newEnv(t)
		cf := openProductionCase(t, ce)
		r := ce.mustProfile("responder", "read", "write")
		before := ce.allCounts()
		pl, err := ce.client.Remember(ce.ctx, r, productionResponse(0, object, cf.caseID, cf.version, "control"))
		o := onlyOutcome(t, "control response "+object, rememberResult{pl, err})
		if o.Category != densemem.CategoryAccepted || o.Conflict == nil || o.Conflict.Version != 2 {
			t.Fatalf("control response %s: %+v (conflict %+v), want accepted at case version 2", object, o, o.Conflict)
		}
		single[side] = countDelta(before, ce.allCounts())
		ce.checkLedger()
	}
	// The computed expectation the control worlds must agree with: one evidence item, one observation
	// with its verification and two resolution events, one relationship with its support, transition
	// and refresh intent, one idempotency record, a challenges and a confirms cross-reference, one new
	// member of an existing position, one case event, the recall postings of the evidence's nine
	// lexemes (migration 23); no entity, name, value, position or case row.
	computed := map[string]int{"evidence_fragments": 1, "fragment_contents": 1, "recall_postings": 9, "observations": 1, "verification_events": 1,
		"entity_resolution_events": 2, "relationships": 1, "support_links": 1, "relationship_transitions": 1,
		"idempotency_records": 1, "relationship_cross_references": 2,
		"conflict_position_members": 1, "conflict_events": 1}
	for side := range single {
		for table, got := range single[side] {
			if got != computed[table] {
				t.Errorf("one %s response wrote %d rows to %s, computed %d", objects[side], got, table, computed[table])
			}
		}
	}

	// by name: the responses also share entity-name locks; by id: they name every entity by
	// known_entity_id, so only the conflict-key lock and the case row lock order them.
	for _, mode := range []string{"by name", "by id"} {
		for rep := range 3 {
			t.Run(fmt.Sprintf("%s/%d", mode, rep), func(t *testing.T) {
				t.Parallel()
				raceTenResponders(t, mode, objects, single)
			})
		}
	}
}

// raceTenResponders is one world of TestConcurrentConflictResponsesOneWins; single holds the rows one
// response of each side writes.
func raceTenResponders(t *testing.T, mode string, objects [2]string, single [2]map[string]int) {
	const n = 10 // responders; with the gate and the poll they use every connection of the test pool
	e := newEnv(t)
	cf := openProductionCase(t, e)
	responders := make([]densemem.Principal, n)
	reqs := make([]densemem.RememberRequest, n)
	for i := range n {
		responders[i] = e.mustProfile(fmt.Sprintf("responder-%02d", i), "read", "write")
		id, version := recallProductionCase(t, e, responders[i])
		if id != cf.caseID || version != 1 {
			t.Fatalf("responder %d read case %s at version %d, want %s at 1", i, id, version, cf.caseID)
		}
		reqs[i] = productionResponse(i, objects[i%2], id, version, fmt.Sprintf("respond-%02d", i))
		if mode == "by id" {
			reqs[i] = byID(t, e, reqs[i])
		}
	}
	before := e.allCounts()

	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	results := make([]rememberResult, n)
	holdProfiles(t, e, responders...).race(ctx, n, func(i int) {
		results[i].pl, results[i].err = e.client.Remember(ctx, responders[i], reqs[i])
	})

	winner := -1
	for i, r := range results {
		switch {
		case r.err == nil:
			if winner != -1 {
				t.Errorf("responders %d and %d both succeeded at expected version 1", winner, i)
			}
			winner = i
		case errors.Is(r.err, densemem.ErrStaleConflictVersion):
		default:
			t.Errorf("responder %d: %v, want success or ErrStaleConflictVersion", i, r.err)
		}
	}
	if winner == -1 {
		t.Fatalf("no response succeeded")
	}
	side := winner % 2
	t.Logf("responder %d (%s) won", winner, objects[side])
	w := onlyOutcome(t, "winner", results[winner])
	if w.Category != densemem.CategoryAccepted || w.Status != relationship.StatusActive {
		t.Errorf("winner: %s %s, want accepted and active", w.Category, w.Status)
	}
	if w.Conflict == nil || w.Conflict.ConflictID != cf.caseID || w.Conflict.Version != 2 || w.Conflict.Status != "open" {
		t.Errorf("winner's conflict %+v, want %s at version 2, open", w.Conflict, cf.caseID)
	}
	// Undated: it challenges the incompatible side and confirms its own (DESIGN §6.5).
	wantX := []string{"challenges->" + string(cf.a.RelationshipID), "confirms->" + string(cf.b.RelationshipID)}
	if objects[side] == "main" {
		wantX = []string{"challenges->" + string(cf.b.RelationshipID), "confirms->" + string(cf.a.RelationshipID)}
	}
	slices.Sort(wantX)
	if got := crossReferenceTargets(w.CrossReferences); !slices.Equal(got, wantX) {
		t.Errorf("winner's cross-references %v, want %v", got, wantX)
	}

	// The rows written are one response's rows, all of them the winner's.
	delta := countDelta(before, e.allCounts())
	if !maps.Equal(delta, single[side]) {
		t.Errorf("rows written by %d racing responses:\n  %v\nrows written by one %s response:\n  %v", n, delta,
			objects[side], single[side])
	}
	for _, table := range e.ledger().IngestTables() {
		if got := e.ledger().Int(fmt.Sprintf("SELECT count(*) FROM %s WHERE ingest_id = $1", table), results[winner].pl.IngestID); got != delta[table] {
			t.Errorf("%s: %d new rows, %d of them from the winner's ingest", table, delta[table], got)
		}
	}
	for i, p := range responders {
		if i == winner {
			continue
		}
		if got := e.ledger().WrittenBy(p); len(got) != 0 {
			t.Errorf("stale responder %d wrote rows: %v", i, got)
		}
	}

	var c caseRow
	e.snapshot(func(l ledgerView) { c = l.OnlyCase() })
	if c.ID != cf.caseID || c.Status != "open" || c.Version != 2 || len(c.Events) != 2 {
		t.Fatalf("case %s %s at version %d with %d events %v, want %s open at version 2 with 2 events", c.ID, c.Status,
			c.Version, len(c.Events), c.Reasons(), cf.caseID)
	}
	if ev := c.Events[1]; ev.Reason != "membership_changed" || ev.Actor != string(responders[winner].ProfileID) ||
		ev.IngestID != results[winner].pl.IngestID || ev.Prior != "open" || ev.Resulting != "open" {
		t.Errorf("event 2: %+v, want membership_changed by the winner %s in its ingest", ev, responders[winner].ProfileID)
	}
	want := []densemem.RelationshipID{cf.a.RelationshipID, cf.b.RelationshipID, w.RelationshipID}
	slices.Sort(want)
	if got := c.CurrentRelationships(); !slices.Equal(got, want) {
		t.Errorf("current members %v, want A1, B1 and the winner's %v", got, want)
	}
	if got := e.count("conflict_positions"); got != 2 {
		t.Errorf("positions: %d, want 2", got)
	}
	e.checkLedger()
}

// TestConcurrentIncompatibleFirstWritesOneCase: A and B write incompatible first relationships on an
// empty cardinality-one key at the same moment. The conflict-key lock orders them (DESIGN §5 step 9b),
// so the second sees the first: both stay active (another owner's relationship never holds a caller's
// as needs_review, §6.5), the second challenges the first, and exactly one case opens.
func TestConcurrentIncompatibleFirstWritesOneCase(t *testing.T) {
	slow(t)
	t.Parallel()
	// known subject: production exists (C's statement in scope "eu", a different key), the branches are
	// created by the racing calls; by id: every entity exists and both calls name them by
	// known_entity_id, so only the conflict-key lock orders them; new subject: both calls race on
	// creating production too.
	for _, mode := range []string{"known subject", "by id", "new subject"} {
		for rep := range 5 {
			t.Run(fmt.Sprintf("%s/%d", mode, rep), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				if mode != "new subject" {
					other := deploy("production", "develop")
					other.scope = "eu"
					e.remember(e.C, other)
				}
				if mode == "by id" {
					e.remember(e.C, deploy("sandbox-main", "main"))
					e.remember(e.C, deploy("sandbox-release", "release"))
				}
				writers := []densemem.Principal{e.A, e.B}
				objects := []string{"main", "release"}
				reqs := make([]densemem.RememberRequest, 2)
				for i := range reqs {
					reqs[i] = deploy("production", objects[i]).request(fmt.Sprintf("first-%d", i))
					if mode == "by id" {
						reqs[i] = byID(t, e, reqs[i])
					}
				}
				before := e.allCounts()

				ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
				defer cancel()
				results := make([]rememberResult, 2)
				holdProfiles(t, e, writers...).race(ctx, 2, func(i int) {
					results[i].pl, results[i].err = e.client.Remember(ctx, writers[i], reqs[i])
				})
				outs := []densemem.RelationshipOutcome{onlyOutcome(t, "A", results[0]), onlyOutcome(t, "B", results[1])}
				for i, o := range outs {
					if o.Category != densemem.CategoryAccepted || o.Status != relationship.StatusActive {
						t.Errorf("%s: %s %s, want accepted and active", []string{"A", "B"}[i], o.Category, o.Status)
					}
				}
				// The second writer is the one whose placement saw the first: it wrote the cross-reference
				// and opened the case.
				second := slices.IndexFunc(outs, func(o densemem.RelationshipOutcome) bool { return len(o.CrossReferences) > 0 })
				if second == -1 {
					t.Fatalf("neither placement wrote a cross-reference: %+v", outs)
				}
				first := 1 - second
				t.Logf("order: %s first", []string{"A", "B"}[first])
				f, s := outs[first], outs[second]
				if f.Conflict != nil || len(f.CrossReferences) != 0 {
					t.Errorf("first writer saw a disagreement: cross-references %+v, conflict %+v", f.CrossReferences, f.Conflict)
				}
				if got, want := crossReferenceTargets(s.CrossReferences), []string{"challenges->" + string(f.RelationshipID)}; !slices.Equal(got, want) {
					t.Errorf("second writer's cross-references %v, want %v", got, want)
				}
				if s.Conflict == nil || s.Conflict.Version != 1 || s.Conflict.Status != "open" {
					t.Errorf("second writer's conflict %+v, want a case opened at version 1", s.Conflict)
				}

				if got := e.count("relationship_cross_references"); got != 1 {
					t.Fatalf("cross-references: %d, want exactly 1", got)
				}
				// The only cross-reference, as the second writer's relationship's trace shows it.
				if xs := e.trace(e.admin, s.RelationshipID).CrossReferences; len(xs) != 1 {
					t.Errorf("cross-references of the second writer's relationship: %+v, want the one stored", xs)
				} else if x := xs[0]; x.Kind != "challenges" || x.FromRelationshipID != s.RelationshipID ||
					x.ToRelationshipID != f.RelationshipID || x.AuthorProfileID != writers[second].ProfileID {
					t.Errorf("cross-reference %s %s -> %s by %s, want challenges %s -> %s by %s", x.Kind, x.FromRelationshipID,
						x.ToRelationshipID, x.AuthorProfileID, s.RelationshipID, f.RelationshipID, writers[second].ProfileID)
				}

				var c caseRow
				e.snapshot(func(l ledgerView) { c = l.OnlyCase() })
				if c.Status != "open" || c.Version != 1 || !slices.Equal(c.Reasons(), []string{"opened"}) {
					t.Errorf("case %s %s at version %d with events %v, want open at version 1 with one opened event", c.ID,
						c.Status, c.Version, c.Reasons())
				}
				if s.Conflict != nil && s.Conflict.ConflictID != c.ID {
					t.Errorf("second writer names case %s, stored case is %s", s.Conflict.ConflictID, c.ID)
				}
				if c.OpenedBy != string(writers[second].ProfileID) || (len(c.Events) > 0 && c.Events[0].Actor != c.OpenedBy) {
					t.Errorf("case opened by %s (event actor %v), want the second writer %s", c.OpenedBy, c.Events, writers[second].ProfileID)
				}
				want := []densemem.RelationshipID{f.RelationshipID, s.RelationshipID}
				slices.Sort(want)
				if got := c.CurrentRelationships(); !slices.Equal(got, want) {
					t.Errorf("members %v, want %v", got, want)
				}
				if got := e.count("conflict_positions"); got != 2 {
					t.Errorf("positions: %d, want 2", got)
				}
				if got := e.count("conflict_position_members"); got != 2 {
					t.Errorf("membership rows: %d, want 2", got)
				}
				for _, o := range outs {
					if st, _, _, v := e.relationshipState(o.RelationshipID); st != "active" || v != 1 {
						t.Errorf("relationship %s stored %s version %d, want active version 1", o.RelationshipID, st, v)
					}
				}
				if got := e.ledger().Int(`SELECT count(*) FROM relationships r JOIN entity_names n
					ON n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
					WHERE n.normalized_name = 'production' AND r.predicate_key = 'deploys_from' AND r.scope = ''`); got != 2 {
					t.Errorf("relationships on the key: %d, want 2", got)
				}
				if got := e.count("review_items"); got != 0 {
					t.Errorf("review items: %d, want none", got)
				}
				if got := e.ledger().Int(`SELECT count(*) FROM entities WHERE entity_kind = 'environment'`); got != 1 &&
					mode != "by id" {
					t.Errorf("environments: %d, want 1", got)
				}
				delta := countDelta(before, e.allCounts())
				if delta["relationships"] != 2 || delta["idempotency_records"] != 2 || delta["conflict_cases"] != 1 ||
					delta["conflict_events"] != 1 {
					t.Errorf("rows written: %v", delta)
				}
				e.checkLedger()
			})
		}
	}
}

// TestConcurrentForgetAndRespond: A forgets A1 while C answers the case at the version it read. Both
// serialise on the conflict key; the outcomes the code allows, by the order of commit:
//
//   - forget first: A1 leaves the case's only disagreement, so the forget dismisses the case
//     (version 2, DESIGN §6.7); C's response then finds the case no longer live and fails with
//     ErrStaleConflictVersion, writing nothing (§7).
//   - response first: C1 joins its side (version 2); the forget then repairs the case at version 3.
//     If C sided with B (release), only one position is left: dismissed. If C sided with A (main),
//     C1 keeps main material against release: the case stays open with B1 and C1.
//
// There is no third outcome: the response never succeeds against a dismissed case, and the forget
// never fails.
func TestConcurrentForgetAndRespond(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, object := range []string{"release", "main"} {
		for rep := range 5 {
			t.Run(fmt.Sprintf("C says %s/%d", object, rep), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				cf := openProductionCase(t, e)
				id, version := recallProductionCase(t, e, e.C)
				if id != cf.caseID || version != 1 {
					t.Fatalf("C read case %s at version %d, want %s at 1", id, version, cf.caseID)
				}
				respond := productionResponse(0, object, id, version, "respond")
				forget := densemem.ForgetRequest{RelationshipID: cf.a.RelationshipID, Reason: "wrong branch", IdempotencyKey: "forget-a1"}
				beforeC := e.ledger().WrittenBy(e.C)

				ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
				defer cancel()
				var forgot *densemem.ForgetResult
				var placed *densemem.Placement
				var forgetErr, respondErr error
				holdProfiles(t, e, e.A, e.C).race(ctx, 2, func(i int) {
					if i == 0 {
						forgot, forgetErr = e.client.Forget(ctx, e.A, forget)
					} else {
						placed, respondErr = e.client.Remember(ctx, e.C, respond)
					}
				})
				if forgetErr != nil {
					t.Fatalf("forget: %v", forgetErr)
				}
				if st, _, _, v := e.relationshipState(cf.a.RelationshipID); st != "retracted" || v != 2 ||
					forgot.Status != relationship.StatusRetracted || forgot.Version != 2 || forgot.AlreadyRetracted {
					t.Errorf("A1 stored %s version %d; forget answered %+v", st, v, forgot)
				}
				var c caseRow
				e.snapshot(func(l ledgerView) { c = l.OnlyCase() })
				if c.ID != cf.caseID {
					t.Fatalf("case %s, want %s", c.ID, cf.caseID)
				}

				switch {
				case respondErr == nil: // the response committed first, at version 2
					t.Log("order: respond, then forget")
					o := onlyOutcome(t, "response", rememberResult{placed, nil})
					if o.Category != densemem.CategoryAccepted || o.Status != relationship.StatusActive ||
						o.Conflict == nil || o.Conflict.Version != 2 || o.Conflict.Status != "open" {
						t.Errorf("response: %s %s conflict %+v, want accepted, active, case at version 2 open", o.Category, o.Status, o.Conflict)
					}
					wantStatus, wantReason := "dismissed", "dismissed_no_material_disagreement"
					var wantMembers []densemem.RelationshipID
					if object == "main" {
						wantStatus, wantReason = "open", "membership_changed"
						wantMembers = []densemem.RelationshipID{cf.b.RelationshipID, o.RelationshipID}
						slices.Sort(wantMembers)
					}
					if c.Status != wantStatus || c.Version != 3 ||
						!slices.Equal(c.Reasons(), []string{"opened", "membership_changed", wantReason}) {
						t.Errorf("case %s at version %d, events %v; want %s at version 3 after opened, membership_changed, %s",
							c.Status, c.Version, c.Reasons(), wantStatus, wantReason)
					}
					if got := c.CurrentRelationships(); !slices.Equal(got, wantMembers) {
						t.Errorf("current members %v, want %v", got, wantMembers)
					}
					if len(c.Events) == 3 && (c.Events[1].Actor != string(e.C.ProfileID) || c.Events[2].Actor != string(e.A.ProfileID)) {
						t.Errorf("event actors %s, %s; want C then A", c.Events[1].Actor, c.Events[2].Actor)
					}
					if forgot.Conflict == nil || forgot.Conflict.ConflictID != c.ID || forgot.Conflict.Version != 3 ||
						forgot.Conflict.Status != wantStatus {
						t.Errorf("forget's conflict %+v, want %s at version 3 %s", forgot.Conflict, c.ID, wantStatus)
					}
					if st, _, _, v := e.relationshipState(o.RelationshipID); st != "active" || v != 1 {
						t.Errorf("C1 stored %s version %d, want active version 1", st, v)
					}

				case errors.Is(respondErr, densemem.ErrStaleConflictVersion): // the forget committed first
					t.Log("order: forget, then respond (stale)")
					if c.Status != "dismissed" || c.Version != 2 ||
						!slices.Equal(c.Reasons(), []string{"opened", "dismissed_no_material_disagreement"}) {
						t.Errorf("case %s at version %d, events %v; want dismissed at version 2 after opened, dismissed", c.Status,
							c.Version, c.Reasons())
					}
					if len(c.Events) == 2 && c.Events[1].Actor != string(e.A.ProfileID) {
						t.Errorf("dismissal by %s, want A", c.Events[1].Actor)
					}
					if forgot.Conflict == nil || forgot.Conflict.ConflictID != c.ID || forgot.Conflict.Version != 2 ||
						forgot.Conflict.Status != "dismissed" {
						t.Errorf("forget's conflict %+v, want %s at version 2 dismissed", forgot.Conflict, c.ID)
					}
					if got := e.ledger().WrittenBy(e.C); !maps.Equal(got, beforeC) {
						t.Errorf("the stale response wrote rows: before %v, after %v", beforeC, got)
					}

				default:
					t.Fatalf("response: %v, want success or ErrStaleConflictVersion", respondErr)
				}
				if st, _, _, v := e.relationshipState(cf.b.RelationshipID); st != "active" || v != 1 {
					t.Errorf("B1 stored %s version %d, want active version 1 (another owner's change never touches it)", st, v)
				}
				e.checkLedger()
			})
		}
	}
}
