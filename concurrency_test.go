package densemem_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/relationship"
)

// The tests of this file prove the concurrency claims of DESIGN §5 step 3 (concurrent identical
// calls yield one result) and step 9 (locks in one global order, plan recomputed after the locks):
// real goroutines, real transactions, released together by closing a channel, with assertions on
// the database state afterwards. Run them with
//
//	go test -race -count=3 -run Concurrent .

// raceTimeout bounds every call of these tests, so a lock or pool starvation fails the test with
// an error instead of hanging the binary.
const raceTimeout = 2 * time.Minute

// raceRepeats is how many fresh worlds a racy scenario is replayed in, to make both orders likely.
const raceRepeats = 5

// rememberResult is one Remember call's answer.
type rememberResult struct {
	pl  *densemem.Placement
	err error
}

// rememberConcurrently runs n concurrent Remember calls of p, the i-th with req(i), and returns their
// results in call order.
func rememberConcurrently(t *testing.T, e *env, p densemem.Principal, n int, req func(i int) densemem.RememberRequest) []rememberResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	reqs := make([]densemem.RememberRequest, n)
	for i := range n {
		reqs[i] = req(i)
	}
	out := make([]rememberResult, n)
	runTogether(n, func(i int) {
		out[i].pl, out[i].err = e.client.Remember(ctx, p, reqs[i])
	})
	return out
}

// onlyOutcome returns the only relationship outcome of a successful call, failing the test otherwise.
func onlyOutcome(t *testing.T, what string, r rememberResult) densemem.RelationshipOutcome {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", what, r.err)
	}
	if len(r.pl.RelationshipOutcomes) != 1 {
		t.Fatalf("%s: want 1 relationship outcome, got %d", what, len(r.pl.RelationshipOutcomes))
	}
	return r.pl.RelationshipOutcomes[0]
}

// activeAmong returns the IDs among statuses whose status is active, sorted.
func activeAmong(statuses map[densemem.RelationshipID]string) []densemem.RelationshipID {
	var out []densemem.RelationshipID
	for id, s := range statuses {
		if s == string(relationship.StatusActive) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// countTransitionsTo counts the transitions to status in a history of "from->to:reason" entries
// (e.transitions).
func countTransitionsTo(history []string, status relationship.Status) int {
	n := 0
	for _, h := range history {
		_, rest, _ := strings.Cut(h, "->")
		if to, _, _ := strings.Cut(rest, ":"); to == string(status) {
			n++
		}
	}
	return n
}

// rememberBranches creates git_branch entities (as what throwaway environments deploy from), so later
// calls can name them by known_entity_id.
func rememberBranches(e *env, branches ...string) {
	for _, b := range branches {
		e.remember(e.A, deploy("sandbox-"+b, b))
	}
}

// entityNamingModes are the two ways the racing calls of a scenario name their entities: by name
// (the calls also share entity-name locks) and by known_entity_id (only the conflict-key lock orders
// them).
var entityNamingModes = []struct {
	name string
	byID bool
}{{"by name", false}, {"by id", true}}

// TestConcurrentSameIdempotencyKey: 20 identical calls with one idempotency key yield one result
// and one set of rows (DESIGN §5 step 3, I-24); a later different payload under the key is refused.
func TestConcurrentSameIdempotencyKey(t *testing.T) {
	slow(t)
	t.Parallel()
	const n = 20
	f := deploy("production", "main")

	// The rows one such call writes, measured on a world of its own.
	control := newEnv(t)
	controlBefore := control.counts()
	if _, err := control.client.Remember(control.ctx, control.A, f.request("same-key")); err != nil {
		t.Fatal(err)
	}
	oneCall := control.counts()
	for table, c := range controlBefore {
		oneCall[table] -= c
	}

	e := newEnv(t)
	before := e.counts()
	// Every goroutine gets the same request value: a host may retry one request from several places.
	req := f.request("same-key")
	results := rememberConcurrently(t, e, e.A, n, func(int) densemem.RememberRequest { return req })

	first := onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0])
	fresh := 0
	for i, r := range results {
		o := onlyOutcome(t, fmt.Sprintf("call %d", i), r)
		if !r.pl.Replayed {
			fresh++
		}
		if r.pl.IngestID != results[0].pl.IngestID {
			t.Errorf("call %d: ingest %s, call 0: %s", i, r.pl.IngestID, results[0].pl.IngestID)
		}
		if o.RelationshipID != first.RelationshipID || o.ObservationID != first.ObservationID ||
			o.Category != first.Category || o.Status != first.Status || o.Tier != first.Tier {
			t.Errorf("call %d: outcome %+v, call 0: %+v", i, o, first)
		}
		if len(r.pl.Fragments) != 1 || r.pl.Fragments[0].FragmentID != results[0].pl.Fragments[0].FragmentID {
			t.Errorf("call %d: fragments %+v, call 0: %+v", i, r.pl.Fragments, results[0].pl.Fragments)
		}
		for j, eo := range r.pl.Entities {
			if eo.EntityID != results[0].pl.Entities[j].EntityID {
				t.Errorf("call %d: entity %s is %s, call 0: %s", i, eo.Ref, eo.EntityID, results[0].pl.Entities[j].EntityID)
			}
		}
	}
	if fresh != 1 {
		t.Errorf("%d calls were not replayed, want exactly 1", fresh)
	}
	if first.Category != densemem.CategoryAccepted || first.Status != relationship.StatusActive {
		t.Errorf("outcome %+v, want an accepted active relationship", first)
	}

	after := e.counts()
	for table, c := range before {
		after[table] -= c
	}
	if !maps.Equal(after, oneCall) {
		t.Errorf("rows written by %d identical calls:\n%v\nrows written by one call:\n%v", n, after, oneCall)
	}
	for table, want := range map[string]int{"idempotency_records": 1, "relationships": 1, "evidence_fragments": 1,
		"observations": 1, "support_links": 1} {
		if after[table] != want {
			t.Errorf("%s: %d new rows, want %d", table, after[table], want)
		}
	}
	if ids := e.ledger().Entities(e.team, "environment", "production"); len(ids) != 1 {
		t.Errorf("environment production: entities %v, want exactly one", ids)
	}
	if ids := e.ledger().Entities(e.team, "git_branch", "main"); len(ids) != 1 {
		t.Errorf("git_branch main: entities %v, want exactly one", ids)
	}
	e.checkLedger()

	// The key now belongs to that request: another payload under it is refused and writes nothing.
	before = e.counts()
	_, err := e.client.Remember(e.ctx, e.A, deploy("production", "release").request("same-key"))
	if !errors.Is(err, densemem.ErrIdempotencyConflict) {
		t.Fatalf("different payload under a used key: err = %v, want ErrIdempotencyConflict", err)
	}
	if after := e.counts(); !maps.Equal(before, after) {
		t.Errorf("a refused call wrote rows: before %v, after %v", before, after)
	}
}

// TestConcurrentIdempotencyConflict: 20 calls share a key, half with one payload and half with
// another. One payload wins; its calls all get its one result, the other payload's calls all get
// ErrIdempotencyConflict.
func TestConcurrentIdempotencyConflict(t *testing.T) {
	slow(t)
	t.Parallel()
	for rep := range raceRepeats {
		t.Run(fmt.Sprint(rep), func(t *testing.T) {
			t.Parallel()
			const n = 20
			e := newEnv(t)
			payloads := [2]fact{deploy("production", "main"), deploy("production", "release")}
			results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
				return payloads[i%2].request("shared-key")
			})

			var ok, refused [2]int
			winner := -1
			var won rememberResult
			fresh := 0
			for i, r := range results {
				side := i % 2
				switch {
				case r.err == nil:
					ok[side]++
					o := onlyOutcome(t, fmt.Sprintf("call %d", i), r)
					if winner == -1 {
						winner, won = side, r
					}
					if r.pl.IngestID != won.pl.IngestID || o.RelationshipID != won.pl.RelationshipOutcomes[0].RelationshipID {
						t.Errorf("call %d (payload %d): ingest %s relationship %s, first success: ingest %s relationship %s",
							i, side, r.pl.IngestID, o.RelationshipID, won.pl.IngestID, won.pl.RelationshipOutcomes[0].RelationshipID)
					}
					if !r.pl.Replayed {
						fresh++
					}
				case errors.Is(r.err, densemem.ErrIdempotencyConflict):
					refused[side]++
				default:
					t.Errorf("call %d (payload %d): unexpected error %v", i, side, r.err)
				}
			}
			if winner == -1 {
				t.Fatalf("no call succeeded: refused %v", refused)
			}
			loser := 1 - winner
			t.Logf("payload %d won", winner)
			if ok[winner] != n/2 || refused[winner] != 0 {
				t.Errorf("winning payload %d: %d succeeded, %d refused; want all %d to succeed", winner, ok[winner], refused[winner], n/2)
			}
			if ok[loser] != 0 || refused[loser] != n/2 {
				t.Errorf("losing payload %d: %d succeeded, %d refused; want all %d refused", loser, ok[loser], refused[loser], n/2)
			}
			if fresh != 1 {
				t.Errorf("%d successful calls were not replayed, want exactly 1", fresh)
			}

			if got := e.count("idempotency_records"); got != 1 {
				t.Errorf("idempotency_records: %d, want 1", got)
			}
			if got := e.count("relationships"); got != 1 {
				t.Errorf("relationships: %d, want 1", got)
			}
			if got := e.ledger().Int(`SELECT count(DISTINCT ingest_id) FROM evidence_fragments`); got != 1 {
				t.Errorf("evidence fragments of %d ingests, want 1", got)
			}
			// The stored relationship is the winner's object, and the loser's object was never created.
			wantObject, otherObject := payloads[winner].object, payloads[loser].object
			if got := e.ledger().Int(`SELECT count(*) FROM relationships r JOIN entity_names n
				ON n.team_id = r.team_id AND n.entity_id = r.object_entity_id WHERE n.normalized_name = $1`, wantObject); got != 1 {
				t.Errorf("relationships to %s: %d, want 1", wantObject, got)
			}
			if ids := e.ledger().Entities(e.team, "git_branch", otherObject); len(ids) != 0 {
				t.Errorf("the refused payload's branch %s was created: %v", otherObject, ids)
			}
			e.checkLedger()
		})
	}
}

// TestConcurrentSameNewEntity: 20 calls with different idempotency keys name the same new subject.
// The entity-name locks make exactly one of them create it; the others reuse it.
func TestConcurrentSameNewEntity(t *testing.T) {
	slow(t)
	t.Parallel()
	const n = 20

	t.Run("different objects", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
			// Spellings that normalise to one name take one lock.
			name := []string{"staging", "Staging", "STAGING"}[i%3]
			return deploy(name, fmt.Sprintf("feature-%02d", i)).request(fmt.Sprintf("staging-%02d", i))
		})
		ids := e.ledger().Entities(e.team, "environment", "staging")
		if len(ids) != 1 {
			t.Fatalf("environment staging: entities %v, want exactly one", ids)
		}
		accepted, held := 0, 0
		var activeID densemem.RelationshipID
		for i, r := range results {
			o := onlyOutcome(t, fmt.Sprintf("call %d", i), r)
			if got := r.pl.Entities[0].EntityID; string(got) != ids[0] {
				t.Errorf("call %d: subject resolved to %s, want %s", i, got, ids[0])
			}
			switch o.Category {
			case densemem.CategoryAccepted:
				accepted++
				activeID = o.RelationshipID
			case densemem.CategoryNeedsReview:
				held++
			default:
				t.Errorf("call %d: category %s, want accepted or needs_review", i, o.Category)
			}
		}
		// Cardinality one, undated: the first placement is current, every later one is held against it.
		if accepted != 1 || held != n-1 {
			t.Errorf("%d accepted and %d held, want 1 and %d", accepted, held, n-1)
		}
		for i, r := range results {
			if o := r.pl.RelationshipOutcomes[0]; o.Category == densemem.CategoryNeedsReview &&
				!slices.Equal(o.Related, []densemem.RelationshipID{activeID}) {
				t.Errorf("call %d: held against %v, want [%s]", i, o.Related, activeID)
			}
		}
		if active := activeAmong(e.ledger().KeyStatuses(e.A, "staging", "deploys_from", "")); len(active) != 1 {
			t.Errorf("active relationships of staging: %v, want exactly one", active)
		}
		if got := e.count("entities"); got != n+1 {
			t.Errorf("entities: %d, want %d (one environment, %d branches)", got, n+1, n)
		}
		e.checkLedger()
	})

	t.Run("same object", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
			return deploy("qa", "main").request(fmt.Sprintf("qa-%02d", i))
		})
		for _, name := range [][2]string{{"environment", "qa"}, {"git_branch", "main"}} {
			if ids := e.ledger().Entities(e.team, name[0], name[1]); len(ids) != 1 {
				t.Errorf("%s %s: entities %v, want exactly one", name[0], name[1], ids)
			}
		}
		if got := e.count("entities"); got != 2 {
			t.Errorf("entities: %d, want 2", got)
		}
		accepted, supported := 0, 0
		rel := onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0]).RelationshipID
		for i, r := range results {
			o := onlyOutcome(t, fmt.Sprintf("call %d", i), r)
			if o.RelationshipID != rel {
				t.Errorf("call %d: relationship %s, call 0: %s", i, o.RelationshipID, rel)
			}
			switch o.Category {
			case densemem.CategoryAccepted:
				accepted++
			case densemem.CategorySupported:
				supported++
			default:
				t.Errorf("call %d: category %s", i, o.Category)
			}
		}
		if accepted != 1 || supported != n-1 {
			t.Errorf("%d accepted and %d supported, want 1 and %d", accepted, supported, n-1)
		}
		if got := e.count("relationships"); got != 1 {
			t.Errorf("relationships: %d, want 1", got)
		}
		if got := e.count("support_links"); got != n {
			t.Errorf("support_links: %d, want %d", got, n)
		}
		e.checkLedger()
	})
}

// TestConcurrentDatedSupersession: concurrent dated replacements of one undated prior supersede it
// exactly once (DESIGN §5 step 9, §6.4 rule 4).
//
// Slow (about 19 s alone under -race at load 9; skipped under -short): raceRepeats fresh worlds per
// entity-naming mode, each racing real transactions.
func TestConcurrentDatedSupersession(t *testing.T) {
	slow(t)
	t.Parallel()
	for _, mode := range entityNamingModes {
		for rep := range raceRepeats {
			t.Run(fmt.Sprintf("same replacement/%s/%d", mode.name, rep), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				prior := e.remember(e.A, deploy("production", "main"))
				if mode.byID {
					rememberBranches(e, "release")
				}
				e.clock.Advance(time.Second)
				results := rememberConcurrently(t, e, e.A, 2, func(i int) densemem.RememberRequest {
					req := deploy("production", "release").since(date("2026-05-01")).request(fmt.Sprintf("release-%d", i))
					if mode.byID {
						req = byID(t, e, req)
					}
					return req
				})
				a, b := onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0]), onlyOutcome(t, fmt.Sprintf("call %d", 1), results[1])
				if a.RelationshipID != b.RelationshipID {
					t.Errorf("two successors: %s and %s", a.RelationshipID, b.RelationshipID)
				}
				cats := []densemem.Category{a.Category, b.Category}
				slices.Sort(cats)
				if want := []densemem.Category{densemem.CategorySupersededPrior, densemem.CategorySupported}; !slices.Equal(cats, want) {
					t.Errorf("categories %v, want %v", cats, want)
				}
				for _, o := range []densemem.RelationshipOutcome{a, b} {
					if o.Category == densemem.CategorySupersededPrior && !slices.Equal(o.Related, []densemem.RelationshipID{prior.RelationshipID}) {
						t.Errorf("superseding outcome names %v, want [%s]", o.Related, prior.RelationshipID)
					}
					if o.Status != relationship.StatusActive {
						t.Errorf("outcome %s status %s, want active", o.Category, o.Status)
					}
				}

				status, _, validTo, version := e.relationshipState(prior.RelationshipID)
				if status != "superseded" || version != 2 || validTo == nil || !validTo.Equal(date("2026-05-01")) {
					t.Errorf("prior: %s version %d valid_to %v, want superseded version 2 valid_to 2026-05-01", status, version, validTo)
				}
				if got := countTransitionsTo(e.transitions(prior.RelationshipID), relationship.StatusSuperseded); got != 1 {
					t.Errorf("prior has %d transitions to superseded, want 1: %v", got, e.transitions(prior.RelationshipID))
				}
				statuses := e.ledger().KeyStatuses(e.A, "production", "deploys_from", "")
				if active := activeAmong(statuses); !slices.Equal(active, []densemem.RelationshipID{a.RelationshipID}) {
					t.Errorf("active relationships %v, want only the successor %s (all: %v)", active, a.RelationshipID, statuses)
				}
				if len(statuses) != 2 {
					t.Errorf("relationships on the key: %v, want the prior and one successor", statuses)
				}
				if got := e.ledger().Int(`SELECT count(*) FROM support_links WHERE relationship_id = ANY($1)`,
					[]string{string(prior.RelationshipID), string(a.RelationshipID)}); got != 3 {
					t.Errorf("support links of the prior and the successor: %d, want 3 (prior 1, successor 2)", got)
				}
				e.checkLedger()
				e.ledger().checkSupersededOnce()
			})
		}
	}

	for _, mode := range entityNamingModes {
		for rep := range raceRepeats {
			t.Run(fmt.Sprintf("different replacements/%s/%d", mode.name, rep), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				prior := e.remember(e.A, deploy("production", "main"))
				if mode.byID {
					rememberBranches(e, "release", "hotfix")
				}
				e.clock.Advance(time.Second)
				facts := []fact{
					deploy("production", "release").since(date("2026-05-01")),
					deploy("production", "hotfix").since(date("2026-05-02")),
				}
				results := rememberConcurrently(t, e, e.A, 2, func(i int) densemem.RememberRequest {
					req := facts[i].request(fmt.Sprintf("replacement-%d", i))
					if mode.byID {
						req = byID(t, e, req)
					}
					return req
				})
				release, hotfix := onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0]), onlyOutcome(t, fmt.Sprintf("call %d", 1), results[1])

				// Whatever the order, the later-dated hotfix ends current: it supersedes whichever of main
				// and release is current when it commits; release either superseded main first or is held
				// against hotfix.
				if hotfix.Category != densemem.CategorySupersededPrior || hotfix.Status != relationship.StatusActive {
					t.Errorf("hotfix: %+v, want superseded_prior and active", hotfix)
				}
				switch release.Category {
				case densemem.CategorySupersededPrior: // release first: main <- release <- hotfix
					t.Log("order: release, then hotfix")
					if !slices.Equal(release.Related, []densemem.RelationshipID{prior.RelationshipID}) ||
						!slices.Equal(hotfix.Related, []densemem.RelationshipID{release.RelationshipID}) {
						t.Errorf("release first: release supersedes %v, hotfix %v", release.Related, hotfix.Related)
					}
					if st, _, to, v := e.relationshipState(release.RelationshipID); st != "superseded" || v != 2 ||
						to == nil || !to.Equal(date("2026-05-02")) {
						t.Errorf("release: %s version %d valid_to %v, want superseded version 2 valid_to 2026-05-02", st, v, to)
					}
					if st, _, to, _ := e.relationshipState(prior.RelationshipID); st != "superseded" || to == nil || !to.Equal(date("2026-05-01")) {
						t.Errorf("prior: %s valid_to %v, want superseded at 2026-05-01", st, to)
					}
				case densemem.CategoryNeedsReview: // hotfix first: main <- hotfix, release held
					t.Log("order: hotfix, then release")
					if !slices.Equal(hotfix.Related, []densemem.RelationshipID{prior.RelationshipID}) ||
						!slices.Equal(release.Related, []densemem.RelationshipID{hotfix.RelationshipID}) {
						t.Errorf("hotfix first: hotfix supersedes %v, release held against %v", hotfix.Related, release.Related)
					}
					if st, _, _, v := e.relationshipState(release.RelationshipID); st != "needs_review" || v != 1 {
						t.Errorf("release: %s version %d, want needs_review version 1", st, v)
					}
					if st, _, to, _ := e.relationshipState(prior.RelationshipID); st != "superseded" || to == nil || !to.Equal(date("2026-05-02")) {
						t.Errorf("prior: %s valid_to %v, want superseded at 2026-05-02", st, to)
					}
				default:
					t.Errorf("release: %+v, want superseded_prior or needs_review", release)
				}

				if _, _, _, v := e.relationshipState(prior.RelationshipID); v != 2 {
					t.Errorf("prior version %d, want 2", v)
				}
				if got := countTransitionsTo(e.transitions(prior.RelationshipID), relationship.StatusSuperseded); got != 1 {
					t.Errorf("prior has %d transitions to superseded, want 1: %v", got, e.transitions(prior.RelationshipID))
				}
				statuses := e.ledger().KeyStatuses(e.A, "production", "deploys_from", "")
				if active := activeAmong(statuses); !slices.Equal(active, []densemem.RelationshipID{hotfix.RelationshipID}) {
					t.Errorf("active relationships %v, want only hotfix %s (all: %v)", active, hotfix.RelationshipID, statuses)
				}
				e.checkLedger()
				e.ledger().checkSupersededOnce()
			})
		}
	}
}

// TestConcurrentFirstWritesOneActive: two undated, incompatible first statements of one owner on an
// empty cardinality-one key cannot both become current: one is accepted, the other held against it.
func TestConcurrentFirstWritesOneActive(t *testing.T) {
	slow(t)
	t.Parallel()
	// new subject: both calls race on creating the environment too; known subject: it exists (through
	// another scope of the key, so the unscoped key is empty); by id: every entity exists and is named
	// by known_entity_id, so no entity-name lock orders the calls.
	for _, mode := range []string{"new subject", "known subject", "by id"} {
		for rep := range raceRepeats {
			t.Run(fmt.Sprintf("%s/%d", mode, rep), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				if mode != "new subject" {
					other := deploy("production", "develop")
					other.scope = "eu"
					e.remember(e.A, other)
				}
				if mode == "by id" {
					rememberBranches(e, "main", "release")
				}
				objects := []string{"main", "release"}
				results := rememberConcurrently(t, e, e.A, 2, func(i int) densemem.RememberRequest {
					req := deploy("production", objects[i]).request(fmt.Sprintf("first-%d", i))
					if mode == "by id" {
						req = byID(t, e, req)
					}
					return req
				})
				outs := []densemem.RelationshipOutcome{onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0]), onlyOutcome(t, fmt.Sprintf("call %d", 1), results[1])}
				won := slices.IndexFunc(outs, func(o densemem.RelationshipOutcome) bool { return o.Category == densemem.CategoryAccepted })
				if won == -1 {
					t.Fatalf("no call was accepted: %+v", outs)
				}
				acc, held := outs[won], outs[1-won]
				t.Logf("order: %s first", objects[won])
				if acc.Status != relationship.StatusActive {
					t.Errorf("accepted outcome status %s, want active", acc.Status)
				}
				if held.Category != densemem.CategoryNeedsReview || held.Status != relationship.StatusNeedsReview ||
					!slices.Equal(held.Related, []densemem.RelationshipID{acc.RelationshipID}) || held.Review == nil {
					t.Errorf("other outcome %+v, want needs_review held against %s with a review", held, acc.RelationshipID)
				}
				if st, _, _, v := e.relationshipState(acc.RelationshipID); st != "active" || v != 1 {
					t.Errorf("accepted relationship stored as %s version %d, want active version 1", st, v)
				}
				if held.RelationshipID != "" {
					if st, _, _, v := e.relationshipState(held.RelationshipID); st != "needs_review" || v != 1 {
						t.Errorf("held relationship stored as %s version %d, want needs_review version 1", st, v)
					}
				}
				statuses := e.ledger().KeyStatuses(e.A, "production", "deploys_from", "")
				if active := activeAmong(statuses); !slices.Equal(active, []densemem.RelationshipID{acc.RelationshipID}) {
					t.Errorf("active relationships on the key %v, want only %s (all: %v)", active, acc.RelationshipID, statuses)
				}
				if len(statuses) != 2 {
					t.Errorf("relationships on the key: %v, want 2", statuses)
				}
				if ids := e.ledger().Entities(e.team, "environment", "production"); len(ids) != 1 {
					t.Errorf("environment production: entities %v, want exactly one", ids)
				}
				e.checkLedger()
			})
		}
	}
}

// TestConcurrentForgetAndSupersede: A forgets its relationship while it remembers a dated
// replacement of it. The two serialise on the conflict key; either order leaves a consistent ledger.
func TestConcurrentForgetAndSupersede(t *testing.T) {
	slow(t)
	t.Parallel()
	for rep := range raceRepeats {
		t.Run(fmt.Sprint(rep), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			prior := e.remember(e.A, deploy("production", "main"))
			e.clock.Advance(time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
			defer cancel()
			forgetReq := densemem.ForgetRequest{RelationshipID: prior.RelationshipID, Reason: "wrong branch", IdempotencyKey: "forget-main"}
			rememberReq := deploy("production", "release").since(date("2026-05-01")).request("release")
			var forgot *densemem.ForgetResult
			var placed *densemem.Placement
			var forgetErr, rememberErr error
			runTogether(2, func(i int) {
				if i == 0 {
					forgot, forgetErr = e.client.Forget(ctx, e.A, forgetReq)
				} else {
					placed, rememberErr = e.client.Remember(ctx, e.A, rememberReq)
				}
			})
			if forgetErr != nil {
				t.Fatalf("forget: %v", forgetErr)
			}
			next := onlyOutcome(t, fmt.Sprintf("call %d", 1), rememberResult{placed, rememberErr})

			st, _, validTo, version := e.relationshipState(prior.RelationshipID)
			if st != "retracted" || forgot.Status != relationship.StatusRetracted || forgot.Version != version || forgot.AlreadyRetracted {
				t.Errorf("prior stored %s version %d; forget answered %+v", st, version, forgot)
			}
			history := e.transitions(prior.RelationshipID)
			switch next.Category {
			case densemem.CategoryAccepted: // forget first: nothing current to supersede
				t.Log("order: forget, then remember")
				if version != 2 || validTo != nil || !slices.Equal(history, []string{"->active:accepted", "active->retracted:forget: wrong branch"}) {
					t.Errorf("forget first: prior version %d valid_to %v history %v", version, validTo, history)
				}
			case densemem.CategorySupersededPrior: // supersession first, then the superseded prior is retracted
				t.Log("order: remember, then forget")
				if version != 3 || validTo == nil || !validTo.Equal(date("2026-05-01")) ||
					!slices.Equal(history, []string{"->active:accepted", "active->superseded:superseded", "superseded->retracted:forget: wrong branch"}) {
					t.Errorf("supersession first: prior version %d valid_to %v history %v", version, validTo, history)
				}
			default:
				t.Errorf("replacement: %+v, want accepted or superseded_prior", next)
			}
			if next.Status != relationship.StatusActive {
				t.Errorf("replacement status %s, want active", next.Status)
			}
			statuses := e.ledger().KeyStatuses(e.A, "production", "deploys_from", "")
			if active := activeAmong(statuses); !slices.Equal(active, []densemem.RelationshipID{next.RelationshipID}) {
				t.Errorf("active relationships %v, want only the replacement %s (all: %v)", active, next.RelationshipID, statuses)
			}
			e.checkLedger()
			e.ledger().checkSupersededOnce()
		})
	}
}

// TestConcurrentCrossAliasesCreateOneEntity: two calls name one new environment, each by the other's
// alias ("production" alias "prod", and "prod" alias "production"). Run one after the other, in either
// order, the second reuses the entity the first created (its canonical name is the first's alias), so
// concurrent calls must not end with two entities either (DESIGN §5 step 9a: twin entities).
func TestConcurrentCrossAliasesCreateOneEntity(t *testing.T) {
	slow(t)
	t.Parallel()
	mentions := [2][2]string{{"production", "prod"}, {"prod", "production"}}
	// The objects differ: a shared object name would take a shared name lock and serialise the calls.
	branches := [2]string{"main", "release"}
	request := func(i int) densemem.RememberRequest {
		name, alias, branch := mentions[i][0], mentions[i][1], branches[i]
		content := fmt.Sprintf("The %s environment (%s) deploys from the %s branch.", name, alias, branch)
		return densemem.RememberRequest{
			IdempotencyKey: fmt.Sprintf("alias-%d", i),
			Evidence:       []densemem.EvidenceInput{{Content: content, SourceType: "manual"}},
			Proposal: densemem.Proposal{
				Entities: []densemem.ProposedEntity{
					{Ref: "s", Name: name, EntityKind: "environment", Aliases: []string{alias}},
					{Ref: "o", Name: branch, EntityKind: "git_branch"},
				},
				Relationships: []densemem.ProposedRelationship{{ProposalID: "p1", SubjectRef: "s", Predicate: "deploys_from",
					ObjectRef: "o", Evidence: []densemem.Citation{{EvidenceIndex: 0, Start: 0, End: len(content)}}}},
			},
		}
	}

	for _, order := range [][2]int{{0, 1}, {1, 0}} {
		t.Run(fmt.Sprintf("sequential/%d-then-%d", order[0], order[1]), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			for _, i := range order {
				if _, err := e.client.Remember(e.ctx, e.A, request(i)); err != nil {
					t.Fatal(err)
				}
			}
			if got := e.ledger().Int(`SELECT count(*) FROM entities WHERE entity_kind = 'environment'`); got != 1 {
				t.Errorf("environments: %d, want 1", got)
			}
		})
	}

	for rep := range raceRepeats {
		t.Run(fmt.Sprintf("concurrent/%d", rep), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			results := rememberConcurrently(t, e, e.A, 2, request)
			a, b := onlyOutcome(t, fmt.Sprintf("call %d", 0), results[0]), onlyOutcome(t, fmt.Sprintf("call %d", 1), results[1])
			if got := e.ledger().Int(`SELECT count(*) FROM entities WHERE entity_kind = 'environment'`); got != 1 {
				t.Errorf("environments: %d, want 1 (subjects: %s and %s; outcomes %s and %s)", got,
					results[0].pl.Entities[0].EntityID, results[1].pl.Entities[0].EntityID, a.Category, b.Category)
			}
			for _, name := range []string{"production", "prod"} {
				if ids := e.ledger().Entities(e.team, "environment", name); len(ids) != 1 {
					t.Errorf("environments named %s: %v, want exactly one", name, ids)
				}
			}
			e.checkLedger()
		})
	}
}

// TestConcurrentSharedRequest: a Client is safe for concurrent use, so one request value may be
// handed to several concurrent Remember calls (a host retrying from several places). Remember takes
// the request by value and must neither write to memory the caller shares with it (a data race under
// -race) nor change what the caller holds.
func TestConcurrentSharedRequest(t *testing.T) {
	slow(t)
	t.Parallel()
	const n = 8
	e := newEnv(t)
	validFrom := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	req := deploy("production", "release").since(validFrom).request("shared-dated")
	callerPtr := req.Proposal.Relationships[0].ValidFrom
	results := rememberConcurrently(t, e, e.A, n, func(int) densemem.RememberRequest { return req })
	for i, r := range results {
		o := onlyOutcome(t, fmt.Sprintf("call %d", i), r)
		if r.pl.IngestID != results[0].pl.IngestID || o.RelationshipID != results[0].pl.RelationshipOutcomes[0].RelationshipID {
			t.Errorf("call %d: ingest %s relationship %s, call 0: ingest %s relationship %s", i, r.pl.IngestID,
				o.RelationshipID, results[0].pl.IngestID, results[0].pl.RelationshipOutcomes[0].RelationshipID)
		}
	}
	if got := req.Proposal.Relationships[0].ValidFrom; got != callerPtr || !got.Equal(validFrom) {
		t.Errorf("Remember changed the caller's request: valid_from pointer %p (was %p), value %v", got, callerPtr, got)
	}
	if got := e.count("relationships"); got != 1 {
		t.Errorf("relationships: %d, want 1", got)
	}
}

// TestConcurrentForgetTwice: ten concurrent Forgets of one relationship, each with its own
// idempotency key, retract it exactly once; the others report it already retracted.
func TestConcurrentForgetTwice(t *testing.T) {
	slow(t)
	t.Parallel()
	const n = 10
	e := newEnv(t)
	rel := e.remember(e.A, deploy("production", "main"))
	ctx, cancel := context.WithTimeout(context.Background(), raceTimeout)
	defer cancel()
	results := make([]*densemem.ForgetResult, n)
	errs := make([]error, n)
	runTogether(n, func(i int) {
		results[i], errs[i] = e.client.Forget(ctx, e.A, densemem.ForgetRequest{RelationshipID: rel.RelationshipID,
			IdempotencyKey: fmt.Sprintf("forget-%d", i)})
	})
	retracted := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("forget %d: %v", i, errs[i])
		}
		if !r.AlreadyRetracted {
			retracted++
		}
		if r.Status != relationship.StatusRetracted || r.Version != 2 {
			t.Errorf("forget %d: %+v, want retracted at version 2", i, r)
		}
	}
	if retracted != 1 {
		t.Errorf("%d calls retracted the relationship, want exactly 1", retracted)
	}
	if st, _, _, v := e.relationshipState(rel.RelationshipID); st != "retracted" || v != 2 {
		t.Errorf("stored %s version %d, want retracted version 2", st, v)
	}
	if got := countTransitionsTo(e.transitions(rel.RelationshipID), relationship.StatusRetracted); got != 1 {
		t.Errorf("%d transitions to retracted, want 1: %v", got, e.transitions(rel.RelationshipID))
	}
	if got := e.count("idempotency_records"); got != n+1 {
		t.Errorf("idempotency records: %d, want %d (one remember, %d forgets)", got, n+1, n)
	}
	e.checkLedger()
}
