package densemem_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
)

// TestConcurrentWritersOnOneEntityNameOnCitus runs on the Citus cluster DENSEMEM_CITUS_URL names
// (skipped without one): 20 concurrent Remember calls of one team, as the runtime role, name one new
// environment in three spellings, each deploying from a branch of its own. Every call succeeds
// (none waits out its statement timeout on the entity-name lock), one entity is created, one
// statement is accepted and the others are held against it, as on one node
// (TestConcurrentSameNewEntity).
func TestConcurrentWritersOnOneEntityNameOnCitus(t *testing.T) {
	const n = 20
	e := newEnvOnPool(t, testdb.Citus(t))
	results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
		name := []string{"staging", "Staging", "STAGING"}[i%3]
		return deploy(name, fmt.Sprintf("feature-%02d", i)).request(fmt.Sprintf("staging-%02d", i))
	})
	if ids := e.ledger().Entities(e.team, "environment", "staging"); len(ids) != 1 {
		t.Fatalf("environment staging: entities %v, want exactly one", ids)
	}
	accepted, held := 0, 0
	for i, r := range results {
		switch o := onlyOutcome(t, fmt.Sprintf("call %d", i), r); o.Category {
		case densemem.CategoryAccepted:
			accepted++
		case densemem.CategoryNeedsReview:
			held++
		default:
			t.Errorf("call %d: category %s, want accepted or needs_review", i, o.Category)
		}
	}
	if accepted != 1 || held != n-1 {
		t.Errorf("%d accepted and %d held, want 1 and %d", accepted, held, n-1)
	}
}

// TestRebalanceWhileWritingOnCitus runs on the Citus cluster DENSEMEM_CITUS_URL names (skipped
// without one), and measures rather than asserts time. A writer remembers fresh facts of one team,
// one call after another, as the runtime role, while the team's shard group moves to the other
// worker (citus_move_shard_placement) and then the team is isolated to shards of its own
// (isolate_tenant_to_new_shard), both with block_writes: a logical-replication transfer
// (force_logical) never finishes here, its apply worker refusing to replicate into a table with
// row-level security (decision 209). Every call the writer saw succeed is in the team's rows
// afterwards; the calls' longest duration around each operation (the pause a writer sees) is
// logged. Each operation is bounded by opTimeout.
func TestRebalanceWhileWritingOnCitus(t *testing.T) {
	const opTimeout = 5 * time.Minute
	admin := testdb.Citus(t)
	e := newEnvOnPool(t, admin)
	ctx := e.ctx

	type call struct {
		start time.Time
		took  time.Duration
		err   error
	}
	var (
		mu       sync.Mutex
		calls    []call
		done     = make(chan struct{})
		progress = make(chan struct{})
		wg       sync.WaitGroup
	)
	stop := sync.OnceFunc(func() {
		close(done)
		wg.Wait()
	})
	t.Cleanup(stop) // a failed operation ends the test: stop the writer too
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			start := time.Now()
			_, err := e.client.Remember(ctx, e.A, freshFact(i).request(fmt.Sprintf("rebalance-%d", i)))
			mu.Lock()
			calls = append(calls, call{start, time.Since(start), err})
			mu.Unlock()
			select {
			case progress <- struct{}{}:
			default:
			}
		}
	}()
	// waitCalls returns after the writer finished k more calls (it signals each one).
	waitCalls := func(k int) {
		for range k {
			<-progress
		}
	}
	placement := func() (shard int64, host string, port int) {
		t.Helper()
		if err := admin.QueryRow(ctx, `SELECT s.shardid, n.nodename, n.nodeport FROM pg_dist_shard s
			JOIN pg_dist_placement p ON p.shardid = s.shardid JOIN pg_dist_node n ON n.groupid = p.groupid
			WHERE s.shardid = get_shard_id_for_distribution_column('densemem.relationships', $1::text)`, string(e.team)).Scan(&shard, &host, &port); err != nil {
			t.Fatal(err)
		}
		return shard, host, port
	}
	type window struct {
		name       string
		from, till time.Time
	}
	var windows []window
	run := func(name, q string, args ...any) {
		t.Helper()
		from := time.Now()
		opCtx, cancel := context.WithTimeout(ctx, opTimeout)
		defer cancel()
		if _, err := admin.Exec(opCtx, q, args...); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		windows = append(windows, window{name, from, time.Now()})
	}

	waitCalls(50)
	shard, host, port := placement()
	var toHost string
	var toPort int
	if err := admin.QueryRow(ctx, `SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary'
		AND (nodename, nodeport) <> ($1::text, $2::int) ORDER BY nodeport LIMIT 1`, host, port).Scan(&toHost, &toPort); err != nil {
		t.Fatal(err)
	}
	run(fmt.Sprintf("move shard group %d %s:%d -> %s:%d", shard, host, port, toHost, toPort),
		"SELECT citus_move_shard_placement($1::bigint, $2::text, $3::int, $4::text, $5::int, shard_transfer_mode => 'block_writes')",
		shard, host, port, toHost, toPort)
	waitCalls(50)
	run("isolate the team", "SELECT isolate_tenant_to_new_shard('densemem.relationships', $1::text, 'CASCADE', shard_transfer_mode => 'block_writes')", string(e.team))
	waitCalls(50)
	stop()

	ok := 0
	for i, c := range calls {
		if c.err != nil {
			t.Errorf("call %d (at %s, %v): %v", i, c.start.Format("15:04:05.000"), c.took, c.err)
			continue
		}
		ok++
	}
	var stored int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM densemem.relationships WHERE team_id = $1", e.team).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != ok {
		t.Errorf("%d calls succeeded, the team holds %d relationships", ok, stored)
	}
	newShard, newHost, newPort := placement()
	t.Logf("%d Remember calls succeeded, %d relationships stored; the team's shard %d is now %d on %s:%d",
		ok, stored, shard, newShard, newHost, newPort)
	for _, w := range windows {
		var longest time.Duration
		n := 0
		for _, c := range calls {
			if c.start.Before(w.till) && c.start.Add(c.took).After(w.from) {
				longest = max(longest, c.took)
				n++
			}
		}
		t.Logf("%s: took %v; %d calls overlapped it, the longest %v", w.name, w.till.Sub(w.from).Round(time.Millisecond), n, longest)
	}
	var all []time.Duration
	for _, c := range calls {
		all = append(all, c.took)
	}
	slices.Sort(all)
	if len(all) > 0 {
		t.Logf("calls: median %v, p99 %v, max %v", all[len(all)/2], all[len(all)*99/100], all[len(all)-1])
	}
}

// TestEraseOnCitus runs on the Citus cluster DENSEMEM_CITUS_URL names (skipped without one): a
// profile with the erasure scope erases a fragment's content (densemem_erase, the owner's function,
// on the coordinator; its trigger and guard on the team's worker); the tombstone keeps the hash and
// length, and neither Trace nor Recall shows the content afterwards.
func TestEraseOnCitus(t *testing.T) {
	e := newEnvOnPool(t, testdb.Citus(t))
	eraser := e.mustProfile("privacy officer", "erasure")
	pl := e.rememberReq(e.A, withContent(deploy("production", "main"), secretContent).request(nextKey()))
	rel := only(t, pl).RelationshipID
	if !showsErased(t, e.trace(e.A, rel)) || !showsErased(t, e.recall(e.A, "production", nil, nil)) {
		t.Fatal("Trace and Recall do not show the content before the erasure: the checks below would prove nothing")
	}
	res := e.mustErase(eraser, pl.Fragments[0].FragmentID)
	if len(res.Tombstones) != 1 || res.Tombstones[0].ContentLength != len(secretContent) {
		t.Fatalf("erasure %+v, want one tombstone of %d bytes", res, len(secretContent))
	}
	if showsErased(t, e.trace(e.A, rel)) || showsErased(t, e.recall(e.A, "production", nil, nil)) {
		t.Error("Trace or Recall shows the erased content")
	}
}
