package densemem_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The nightly review's floor: what the database allows for the rows one case's review touches, with
// none of the library around them. A floor transaction reads what the reviewer reads for a prototype
// case (one advisory lock; the key's 3 live relationships FOR UPDATE and their 3 supports; the case
// FOR UPDATE with its 3 members and 2 positions) and writes what it writes (one relationship updated
// and one transition inserted; the case updated and one event inserted), in plain indexed tables
// without triggers or row-level security, all statements and the COMMIT in one round trip: the
// fewest a transaction can take.

// floorSchema creates the floor's tables and n cases' rows.
var floorSchema = []string{
	`CREATE TABLE floor_rel (case_id int, n int, status text NOT NULL, version int NOT NULL, body text NOT NULL, PRIMARY KEY (case_id, n))`,
	`CREATE TABLE floor_sup (case_id int, n int, fragment text NOT NULL, authority text NOT NULL, PRIMARY KEY (case_id, n))`,
	`CREATE TABLE floor_case (case_id int PRIMARY KEY, status text NOT NULL, version int NOT NULL, claim text NOT NULL)`,
	`CREATE TABLE floor_member (case_id int, n int, position int NOT NULL, PRIMARY KEY (case_id, n))`,
	`CREATE TABLE floor_position (case_id int, n int, label text NOT NULL, PRIMARY KEY (case_id, n))`,
	`CREATE TABLE floor_trn (case_id int, n int, to_status text NOT NULL, reason text NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (case_id, n))`,
	`CREATE TABLE floor_evt (case_id int, version int, status text NOT NULL, positions jsonb NOT NULL, created_at timestamptz NOT NULL, PRIMARY KEY (case_id, version))`,
	`INSERT INTO floor_rel SELECT c, k, 'active', 1, repeat('x', 200) FROM generate_series(1, $1::int) c, generate_series(0, 2) k`,
	`INSERT INTO floor_sup SELECT c, k, 'frg_' || c || '_' || k, 'member' FROM generate_series(1, $1::int) c, generate_series(0, 2) k`,
	`INSERT INTO floor_case SELECT c, 'open', 1, 'claim' FROM generate_series(1, $1::int) c`,
	`INSERT INTO floor_member SELECT c, k, k / 2 FROM generate_series(1, $1::int) c, generate_series(0, 2) k`,
	`INSERT INTO floor_position SELECT c, k, 'p' || k FROM generate_series(1, $1::int) c, generate_series(0, 1) k`,
	`VACUUM (ANALYZE) floor_rel, floor_sup, floor_case, floor_member, floor_position, floor_trn, floor_evt`,
}

// floorTx queues one floor transaction for case c.
func floorTx(b *pgx.Batch, c int, now time.Time) {
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1::bigint)", int64(c))
	b.Queue("SELECT n, status, version, body FROM floor_rel WHERE case_id = $1 ORDER BY n FOR UPDATE", c)
	b.Queue("SELECT n, fragment, authority FROM floor_sup WHERE case_id = $1 ORDER BY n", c)
	b.Queue("SELECT status, version, claim FROM floor_case WHERE case_id = $1 FOR UPDATE", c)
	b.Queue("SELECT n, position FROM floor_member WHERE case_id = $1 ORDER BY n", c)
	b.Queue("SELECT n, label FROM floor_position WHERE case_id = $1 ORDER BY n", c)
	b.Queue("UPDATE floor_rel SET status = 'superseded', version = version + 1 WHERE case_id = $1 AND n = 0 AND version = 1", c)
	b.Queue("INSERT INTO floor_trn VALUES ($1, 0, 'superseded', 'conflict_resolved', $2)", c, now)
	b.Queue("UPDATE floor_case SET status = 'resolved', version = version + 1 WHERE case_id = $1 AND claim = 'claim'", c)
	b.Queue(`INSERT INTO floor_evt VALUES ($1, 2, 'resolved', '[{"position": 0}, {"position": 1}]', $2)`, c, now)
	b.Queue("COMMIT")
}

// runFloor creates the floor's tables for n cases in pool's database and runs one floor transaction
// per case with the given number of concurrent workers, returning the time they took.
func runFloor(tb testing.TB, pool *pgxpool.Pool, workers, n int) time.Duration {
	tb.Helper()
	ctx := context.Background()
	for _, stmt := range floorSchema {
		var args []any
		if stmt[0] == 'I' {
			args = []any{n}
		}
		if _, err := pool.Exec(ctx, stmt, args...); err != nil {
			tb.Fatalf("%s: %v", stmt, err)
		}
	}
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = pool.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
				for {
					c := int(next.Add(1))
					if c > n {
						return nil
					}
					b := &pgx.Batch{}
					floorTx(b, c, time.Now())
					if err := conn.SendBatch(ctx, b).Close(); err != nil {
						return fmt.Errorf("floor case %d: %w", c, err)
					}
				}
			})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		if err != nil {
			tb.Fatal(err)
		}
	}
	var resolved int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM floor_case WHERE status = 'resolved'").Scan(&resolved); err != nil || resolved != n {
		tb.Fatalf("floor: %d cases resolved, want %d (%v)", resolved, n, err)
	}
	return elapsed
}
