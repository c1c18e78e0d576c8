// Package storetest is the conformance suite of the store seam. Run exercises the contracts a
// store.Store implementation promises — team scoping, sentinel errors, atomic write sets, append-only
// ledgers, idempotency records, locking, known_at reconstruction, the nightly reviewer's claims and
// leases, trace paging, the review item lifecycle, observations read back as written — through the
// store.Store and store.Tx interfaces alone.
//
// An implementation runs it from a test of its own:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			New: func(t *testing.T) store.Store { return newEmptyMigratedStore(t) },
//		})
//	}
//
// The suite assumes no SQL and no schema: it builds every row it needs through the store's own
// writes (TeamCreate, ProfileCreate, PredicateAppend, and Tx with IntakeLock, KeysLock and
// WriteSetApply) and observes the outcome only through the store's reads. Every subtest runs in
// parallel on a store of its own. The concurrency subtests release up to Concurrency goroutines
// together, each in a transaction of its own, and widen the race by holding a transaction open until
// every goroutine has asked for the same lock; they never sleep. They are only as good as their
// repetitions: run them with -race -count=20 before trusting an implementation.
//
// store/postgres runs the suite in its tests (store/postgres/conformance_test.go). A second
// implementation must pass it; see the store package's documentation for what that promises.
package storetest

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Concurrency is the most calls the concurrency subtests run at once (Tx calls held open together,
// among them); a store handed to the suite must serve that many without one waiting for another's
// connection, or those subtests wait until they time out.
const Concurrency = 6

// subtestTimeout bounds every subtest, so a lock that is never released fails the subtest instead of
// hanging the test binary.
const subtestTimeout = 2 * time.Minute

// Harness is what an implementation hands the suite.
type Harness struct {
	// New returns a fresh, empty store, ready for use (migrated), for one subtest. The suite calls it
	// once per subtest, possibly from parallel subtests; the implementation releases what it made
	// when t ends (t.Cleanup).
	New func(t *testing.T) store.Store
	// Reviewer, when set, returns the store the nightly reviewer's calls go through, on the same data
	// as s (for store/postgres: the reviewer role's store on s's database). The suite sends the
	// reviewer's calls (NightlyReserve, CaseClaimDue, CaseEscalateExhausted, TeamsWithDueCases and the
	// fenced review transactions) through it, and checks the boundary between the two stores: the
	// profile store may not resolve a case or record the reviewer's transitions, the reviewer's store
	// may write nothing but the reviewer's rows. When nil, the reviewer's calls go through s itself and
	// the boundary subtest is skipped.
	Reviewer func(t *testing.T, s store.Store) store.Store
	// SharedDatabase says that New's stores share one database for the whole run (a distributed
	// cluster, which cannot clone a database per subtest): every subtest then names its teams with a
	// suffix of its own, and a read over every team (TeamsWithDueCases) is judged on the subtest's
	// teams only.
	SharedDatabase bool
}

// env is one subtest's stores and context.
type env struct {
	t   *testing.T
	ctx context.Context
	// s is the store of profile calls; rv is the reviewer's (s when the harness has none).
	s, rv store.Store
	// separate reports that the harness gave the reviewer a store of its own.
	separate bool
	// suffix ends every team ID of the subtest (team), "" unless the harness shares its database.
	suffix string
}

// runID tells this process's teams from those of earlier runs on a shared database; teamSeq tells
// the subtests' apart.
var (
	runID   = strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	teamSeq atomic.Int64
)

// team is the subtest's ID for the team the contract calls name.
func (e *env) team(name identity.TeamID) identity.TeamID { return name + identity.TeamID(e.suffix) }

// ownTeams keeps the subtest's teams of teams (all of them unless the database is shared).
func (e *env) ownTeams(teams []identity.TeamID) []identity.TeamID {
	if e.suffix == "" {
		return teams
	}
	var out []identity.TeamID
	for _, t := range teams {
		if strings.HasSuffix(string(t), e.suffix) {
			out = append(out, t)
		}
	}
	return out
}

// contract is one named subtest.
type contract struct {
	name string
	run  func(e *env)
}

// group is a family of contracts, run as one parent subtest.
type group struct {
	name      string
	contracts []contract
}

// Run runs every contract subtest against stores made by h. Subtests are named
// Group/Contract (TeamScoping/ReadsOfAnotherTeam, Locking/KeysLockSerialisesChanges, ...), so one
// family can be selected with -run.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("storetest: Harness.New is nil")
	}
	groups := []group{
		{"TeamScoping", scopingContracts},
		{"Sentinels", sentinelContracts},
		{"AppendOnly", appendOnlyContracts},
		{"Atomicity", atomicityContracts},
		{"Idempotency", idempotencyContracts},
		{"Locking", lockingContracts},
		{"KnownAt", knownAtContracts},
		{"Claims", claimContracts},
		{"Trace", traceContracts},
		{"Lists", listContracts},
		{"ReviewItems", reviewItemContracts},
		{"Observations", observationContracts},
		{"IdentityCases", identityContracts},
		{"Live", liveContracts},
		{"ReviewFence", reviewFenceContracts},
		{"KeySpeculation", speculationContracts},
		{"Identity", reassignContracts},
		{"Retirements", retirementContracts},
		{"RecallPrincipal", recallPrincipalContracts},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.contracts {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(newEnv(t, h))
				})
			}
		})
	}
}

func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), subtestTimeout)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, s: h.New(t)}
	if h.SharedDatabase {
		e.suffix = "_" + runID + "_" + strconv.FormatInt(teamSeq.Add(1), 36)
	}
	e.rv = e.s
	if h.Reviewer != nil {
		e.rv, e.separate = h.Reviewer(t, e.s), true
	}
	return e
}
