package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
	"github.com/densemem/densemem/store/storetest"
)

// TestConformanceOnCitus runs the store conformance suite on the Citus cluster DENSEMEM_CITUS_URL
// names (skipped without one), as production connects: profile calls as the runtime role and the
// nightly reviewer's as the reviewer role, under row-level security, on the one distributed
// database every subtest shares (each on teams of its own). Every statement that Citus runs on more
// than one shard is reported (citus.multi_task_query_log_level) and fails the test unless it reads
// every team by design (designedFanOut).
func TestConformanceOnCitus(t *testing.T) {
	admin := testdb.Citus(t)
	fanOut := &multiShardLog{seen: map[string]int{}}
	runtime := fanOut.pool(t, admin, migrations.DefaultRuntimeRole)
	reviewer := fanOut.pool(t, admin, migrations.DefaultReviewerRole)
	opts := &postgres.Options{BindingKey: bindingKey(t, admin)}
	t.Run("storetest", func(t *testing.T) {
		storetest.Run(t, storetest.Harness{
			New:            func(*testing.T) store.Store { return postgres.New(runtime, opts) },
			Reviewer:       func(*testing.T, store.Store) store.Store { return postgres.New(reviewer, opts) },
			SharedDatabase: true,
		})
	})
	for stmt, n := range fanOut.seen {
		if _, ok := designedFanOut[stmt]; ok {
			t.Logf("multi-shard statement, %d time(s), by design: %s", n, stmt)
			continue
		}
		t.Errorf("multi-shard statement, %d time(s), for a single-team call: %s", n, stmt)
	}
}

// designedFanOut are the statements that read every team by design (docs/scaling.md), by name.
var designedFanOut = map[string]string{
	"TeamsWithDueCases": "the nightly due-teams scan",
}

// multiShardLog collects the statements Citus reports as multi-shard, by their -- name: line (or
// their first line): a connection's notices are held until the statement whose results carried
// them ends (the tracer below), then filed under it.
type multiShardLog struct {
	mu      sync.Mutex
	seen    map[string]int
	pending map[*pgconn.PgConn]int
}

// pool opens a pool as role on admin's database whose connections report every multi-shard
// statement to l.
func (l *multiShardLog) pool(t *testing.T, admin *pgxpool.Pool, role string) *pgxpool.Pool {
	p := testdb.AsRole(t, admin, role)
	cfg := p.Config().Copy()
	p.Close()
	cfg.ConnConfig.RuntimeParams["citus.multi_task_query_log_level"] = "warning"
	cfg.ConnConfig.OnNotice = func(c *pgconn.PgConn, n *pgconn.Notice) {
		if !strings.Contains(n.Message, "multi-task") {
			return
		}
		l.mu.Lock()
		if l.pending == nil {
			l.pending = map[*pgconn.PgConn]int{}
		}
		l.pending[c]++
		l.mu.Unlock()
	}
	cfg.ConnConfig.Tracer = l
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// file files the connection's pending notices under the statement sql.
func (l *multiShardLog) file(conn *pgx.Conn, sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.pending[conn.PgConn()]
	if n == 0 {
		return
	}
	delete(l.pending, conn.PgConn())
	name := strings.TrimSpace(sql)
	if i := strings.Index(name, "-- name: "); i >= 0 {
		name = name[i+len("-- name: "):]
	}
	if i := strings.IndexByte(name, '\n'); i >= 0 {
		name = name[:i]
	}
	l.seen[name] += n
}

// sqlKey holds a query's text in its context from TraceQueryStart to TraceQueryEnd.
type sqlKey struct{}

func (l *multiShardLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (l *multiShardLog) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	l.file(conn, sql)
}

func (l *multiShardLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (l *multiShardLog) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	l.file(conn, data.SQL)
}

func (l *multiShardLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
