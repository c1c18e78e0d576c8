// Package postgres implements store.Store on PostgreSQL 15+ with pgx/v5, pgxpool and squirrel.
// Every statement filters by team; fixed statements are SQL constants whose first line is a
// "-- name:" comment so pg_stat_statements points back here. Driver errors become store sentinels
// at this edge.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/failpoint"
	"github.com/densemem/densemem/store"
)

// DefaultTxAttempts is how many times Tx runs its function when PostgreSQL reports a deadlock or a
// serialization failure.
const DefaultTxAttempts = 4

// Store is the PostgreSQL store.
type Store struct {
	pool     *pgxpool.Pool
	attempts int
}

var _ store.Store = (*Store)(nil)

// Options tune a Store. The zero value is valid.
type Options struct {
	// TxAttempts bounds Tx's retries on deadlock or serialization failure (default DefaultTxAttempts).
	TxAttempts int
}

// New returns a Store on an existing pool. The caller keeps ownership of the pool; opts may be nil.
func New(pool *pgxpool.Pool, opts *Options) *Store {
	s := &Store{pool: pool, attempts: DefaultTxAttempts}
	if opts != nil && opts.TxAttempts > 0 {
		s.attempts = opts.TxAttempts
	}
	return s
}

// Open connects a new pool to dsn and returns a Store on it; Close releases the pool.
func Open(ctx context.Context, dsn string) (*Store, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: open pool: %v", store.ErrUnavailable, redact(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate(err)
	}
	return New(pool, nil), nil
}

// Pool returns the underlying pool (for migrations and host-side reads).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the underlying pool.
func (s *Store) Close() { s.pool.Close() }

var psql = sq.StatementBuilder.PlaceholderFormat(sq.Dollar)

// Tx runs fn in one READ COMMITTED transaction, retrying on deadlock or serialization failure.
//
// The transaction costs no round trips of its own: BEGIN travels in the batch of fn's first Tx call
// and COMMIT in the batch of WriteSetApply (or alone, when fn wrote nothing). A failure anywhere rolls
// the transaction back; a connection left in an unknown state is closed, never reused. When the round
// trip that carried COMMIT fails without proof that the transaction did not commit, Tx returns
// store.ErrCommitUnknown and does not retry.
func (s *Store) Tx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var last error
	for attempt := 0; attempt < s.attempts; attempt++ {
		err := s.txOnce(ctx, fn)
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return translate(err)
		}
		last = err
	}
	return fmt.Errorf("%w after %d attempts: %v", store.ErrConflict, s.attempts, redact(last))
}

func (s *Store) txOnce(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// With a failpoint armed COMMIT is sent alone, so an injected failure lands before it; the lost
	// acknowledgement keeps it in the write batch, where production sends it.
	t := &tx{conn: conn.Conn(), foldCommit: !failpoint.Armed(ctx) || failpoint.Check(ctx, failCommitAckLost) != nil}
	defer func() {
		if err != nil && t.begun && !t.done {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, rerr := t.conn.Exec(rctx, "ROLLBACK")
			cancel()
			if rerr != nil {
				_ = t.conn.Close(context.WithoutCancel(ctx))
			}
		}
		if t.conn.PgConn().TxStatus() != 'I' && !t.conn.IsClosed() {
			_ = t.conn.Close(context.WithoutCancel(ctx))
		}
		conn.Release()
	}()
	if err = fn(ctx, t); err != nil {
		return err
	}
	if t.done || !t.begun {
		return nil
	}
	if err = failpoint.Check(ctx, "tx.before_commit"); err != nil {
		return err
	}
	_, err = t.conn.Exec(ctx, "COMMIT")
	if err = t.commitOutcome(ctx, failpoint.Armed(ctx), err); err != nil {
		return err
	}
	t.done = true
	return nil
}

// beginFunc runs fn in a plain pgx transaction; provisioning uses it, the write path uses Tx.
func (s *Store) beginFunc(ctx context.Context, fn func(pgx.Tx) error) error {
	return translate(pgx.BeginFunc(ctx, s.pool, fn))
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// translate maps a driver error onto the store's sentinels. Errors that already carry a sentinel, come
// from the caller's context, or are not the driver's pass through unchanged.
func translate(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{store.ErrNotFound, store.ErrForbidden, store.ErrNotOwner, store.ErrIdempotencyConflict,
		store.ErrStaleConflictVersion, store.ErrNotMaterialToConflict, store.ErrStaleVersion, store.ErrConflict,
		store.ErrUnavailable, store.ErrIntegrity, store.ErrCommitUnknown, failpoint.ErrInjected, context.Canceled,
		context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return err
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "DM003":
			return fmt.Errorf("%w: %s", store.ErrStaleVersion, pgErr.Message)
		case pgErr.Code == "DM001" || pgErr.Code == "DM002" || pgErr.Code[:2] == "23":
			return fmt.Errorf("%w: %s", store.ErrIntegrity, pgErr.Message)
		case pgErr.Code == "40P01" || pgErr.Code == "40001":
			return fmt.Errorf("%w: %s", store.ErrConflict, pgErr.Message)
		case pgErr.Code[:2] == "08" || pgErr.Code[:2] == "57" || pgErr.Code[:2] == "53":
			return fmt.Errorf("%w: %s", store.ErrUnavailable, pgErr.Message)
		}
		return fmt.Errorf("densemem store: database error %s: %s", pgErr.Code, pgErr.Message)
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.As(err, &connErr) || pgconn.Timeout(err) || errors.Is(err, pgx.ErrTxClosed) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, redact(err))
	}
	return err
}

// redact renders an error as text without keeping the driver value in the chain.
func redact(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
