// Package pgtrace counts the database round trips made through pgx connections, so benchmarks and
// tests can report and bound them.
//
// A Counter is a pgx tracer: set it as pgx.ConnConfig.Tracer (for a pool,
// pgxpool.Config.ConnConfig.Tracer). It counts one round trip per Query, QueryRow and Exec
// (BEGIN, COMMIT and ROLLBACK run through Exec and count too) and one per SendBatch, however many
// statements the batch queues. An empty batch is never sent and is not counted.
//
// The count is of statement round trips with a warm statement cache. Under pgx's default
// QueryExecModeCacheStatement, the first use of a statement text on a connection costs one more
// round trip to prepare it (per Query, or per SendBatch for all of the batch's new statements);
// pgx reports only the former to tracers, so a Counter counts neither. Pool pings and connection
// setup are not counted either.
package pgtrace

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Counter counts round trips. The zero value is ready to use; it is safe for concurrent use by
// every connection of a pool.
type Counter struct {
	n atomic.Int64
}

var (
	_ pgx.QueryTracer = (*Counter)(nil)
	_ pgx.BatchTracer = (*Counter)(nil)
)

// Load returns the number of round trips counted since the Counter was created or last Reset.
func (c *Counter) Load() int64 { return c.n.Load() }

// Reset sets the count to zero.
func (c *Counter) Reset() { c.n.Store(0) }

// TraceQueryStart counts one round trip for a Query, QueryRow or Exec.
func (c *Counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceQueryEnd does nothing: the round trip was counted when the statement started.
func (c *Counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts one round trip for a SendBatch, whatever the number of queued statements.
func (c *Counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}

// TraceBatchQuery does nothing: the statements of a batch share the batch's round trip.
func (c *Counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

// TraceBatchEnd does nothing: the round trip was counted when the batch started.
func (c *Counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
