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
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/failpoint"
)

// DefaultTxAttempts is how many times Tx runs its function when PostgreSQL reports a deadlock or a
// serialization failure.
const DefaultTxAttempts = 4

// DefaultStatementTimeout bounds every statement of a store call whose context carries no statement
// timeout (store.WithStatementTimeout).
const DefaultStatementTimeout = 5 * time.Second

// DefaultSchema is the PostgreSQL schema that holds Dense-Mem's tables unless Options.Schema says
// otherwise.
const DefaultSchema = "densemem"

// Store is the PostgreSQL store.
type Store struct {
	pool         *pgxpool.Pool
	ownsPool     bool // Open made the pool, so Close closes it
	attempts     int
	timeout      time.Duration
	schema       string
	quotedSchema string
	texts        sync.Map // SQL text with schemaToken -> rewritten text
	bindingKey   []byte   // the key of each transaction's team binding (Options.BindingKey)
	requireActor bool     // Options.RequireActor
}

var _ store.Store = (*Store)(nil)

// Options tune a Store. The zero value is valid.
type Options struct {
	// TxAttempts bounds Tx's retries on deadlock or serialization failure (default DefaultTxAttempts).
	TxAttempts int
	// StatementTimeout bounds every statement of a call whose context sets none
	// (default DefaultStatementTimeout).
	StatementTimeout time.Duration
	// Schema is the PostgreSQL schema the migrations created the tables in (default DefaultSchema).
	Schema string
	// BindingKey is the key that binds each transaction to its team (migration 25): one of the keys
	// the database holds (migrations.BindingKey reads the newest, migrations.RotateBindingKey adds
	// one). Without it the database admits no team to the runtime and reviewer roles (every call is
	// ErrMisconfigured); the owner role and superusers need none.
	BindingKey []byte
	// RequireActor refuses (ErrInternal) a call whose context names no actor (store.WithActor), so
	// that every transaction is bound to an actor as well as a team and the database judges its
	// writes by that actor (migration 26). densemem.Client names one on every call; densememtest
	// sets this to prove it. Off by default, for a host's own direct use of the store.
	RequireActor bool
}

// New returns a Store on an existing pool. The caller keeps ownership of the pool: Close leaves it
// open, and the caller closes it when done with the Store. opts may be nil.
func New(pool *pgxpool.Pool, opts *Options) *Store {
	s := &Store{pool: pool, attempts: DefaultTxAttempts, timeout: DefaultStatementTimeout, schema: DefaultSchema}
	if opts != nil && opts.TxAttempts > 0 {
		s.attempts = opts.TxAttempts
	}
	if opts != nil && opts.StatementTimeout > 0 {
		s.timeout = opts.StatementTimeout
	}
	if opts != nil && opts.Schema != "" {
		s.schema = opts.Schema
	}
	if opts != nil {
		s.bindingKey = slices.Clone(opts.BindingKey)
		s.requireActor = opts.RequireActor
	}
	s.quotedSchema = pgx.Identifier{s.schema}.Sanitize()
	return s
}

// settingsSQL opens every transaction, right behind its BEGIN in the same round trip: the call's
// statement timeout ($1), generic plans (see tx.go), the team ($2) whose rows row-level security
// admits for the runtime and reviewer roles, the actor ($3) and their binding ($4, which sendOn
// fills in: SessionBinding for the connection's backend), and the settings the library relies on,
// pinned so that a role's or database's defaults (ALTER ROLE ... SET, which a role may run on
// itself) cannot take it down: no lock or idle timeout but the statement's, row-level security on.
// (search_path is left alone: every statement names its relations and functions by schema, and a
// per-transaction search_path would make every cached plan stale at the next transaction.) They
// are set by densemem_begin (migration 27), so that on a Citus cluster the team, actor and binding
// reach the workers and the planner chooses its plans (decision 203). Queue it with its first
// three arguments only (settingsArgs).
const settingsSQL = "SELECT {schema}.densemem_begin($2, $1, $3, $4)"

// settingsArgs are the arguments a settingsSQL is queued with (sendOn completes them with the
// binding): the call's statement timeout, the team, and the actor ctx names (store.WithActor).
func (s *Store) settingsArgs(ctx context.Context, team identity.TeamID) []any {
	return []any{s.statementTimeout(ctx), team, store.Actor(ctx)}
}

// bind completes the arguments of a queued settingsSQL (timeout, team, actor) with the binding of
// the team and actor for the backend pid; with Options.RequireActor a call that names no actor is
// refused before anything is sent.
func (s *Store) bind(args []any, pid uint32) ([]any, error) {
	if len(args) != 3 {
		return args, nil
	}
	team, _ := args[1].(identity.TeamID)
	actor, _ := args[2].(string)
	if actor == "" && s.requireActor {
		return nil, fmt.Errorf("%w: a call of team %s names no actor (store.WithActor), which this store requires", store.ErrInternal, team)
	}
	return append(args, SessionBinding(s.bindingKey, team, actor, pid)), nil
}

// statementTimeout returns the statement timeout of a call, in milliseconds as the setting wants it.
func (s *Store) statementTimeout(ctx context.Context) string {
	d := store.StatementTimeout(ctx)
	if d <= 0 {
		d = s.timeout
	}
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// send sends b in one round trip as a transaction of team: BEGIN (READ ONLY unless write), the
// settings (settingsSQL), b's statements, COMMIT (on one connection, through withReadConn).
func (s *Store) send(ctx context.Context, team identity.TeamID, b *pgx.Batch, write bool) error {
	full := &pgx.Batch{}
	if write {
		full.Queue("BEGIN ISOLATION LEVEL READ COMMITTED, READ WRITE")
	} else {
		full.Queue("BEGIN ISOLATION LEVEL READ COMMITTED, READ ONLY")
	}
	full.Queue(settingsSQL, s.settingsArgs(ctx, team)...)
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	full.Queue("COMMIT")
	return translate(s.withReadConn(ctx, func(conn *pgxpool.Conn) error {
		return s.sendOn(ctx, conn, full)
	}))
}

// schemaToken stands for the store's schema in every SQL text of this package: `{schema}.teams`.
// Texts are rewritten on their way to the server (sendOn, sql), so a statement that skipped the
// rewrite fails loudly with a syntax error instead of reaching a table of the same name elsewhere.
const schemaToken = "{schema}"

// sql returns text with the store's schema in place of schemaToken.
func (s *Store) sql(text string) string {
	if !strings.Contains(text, schemaToken) {
		return text
	}
	if out, ok := s.texts.Load(text); ok {
		return out.(string)
	}
	out := strings.ReplaceAll(text, schemaToken, s.quotedSchema)
	s.texts.Store(text, out)
	return out
}

// batchSender is a connection that sends batches (*pgx.Conn, *pgxpool.Conn).
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// backendPID returns the process ID of the server backend behind conn (0 when unknown).
func backendPID(conn batchSender) uint32 {
	switch c := conn.(type) {
	case *pgx.Conn:
		return c.PgConn().PID()
	case *pgxpool.Conn:
		return c.Conn().PgConn().PID()
	}
	return 0
}

// sendOn sends b on conn with every statement's schema token rewritten, and reads all its results.
func (s *Store) sendOn(ctx context.Context, conn batchSender, b *pgx.Batch) error {
	for _, q := range b.QueuedQueries {
		if q.SQL == settingsSQL {
			args, err := s.bind(q.Arguments, backendPID(conn))
			if err != nil {
				return err
			}
			q.Arguments = args
		}
		q.SQL = s.sql(q.SQL)
	}
	return conn.SendBatch(ctx, b).Close()
}

// PinConnParams sets on cfg, as connection parameters, the session settings the library relies on
// before each transaction's own: sent at connect, they override the role's and the database's
// defaults (ALTER ROLE ... SET, which the runtime and reviewer roles may run on themselves). Open
// calls it; a host that builds its pool for New should too.
func PinConnParams(cfg *pgx.ConnConfig) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range migrations.ConnParams() {
		cfg.RuntimeParams[k] = v
	}
}

// Open connects a new pool to dsn, checks that the schema is migrated to this library's version
// (CheckSchema), and returns a Store on it; Close releases the pool. An empty or malformed DSN is
// ErrMisconfigured, as are an unknown role or database and bad credentials; an unreachable server is
// ErrUnavailable; a missing or older schema is ErrNotMigrated.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, fmt.Errorf("%w: the DSN is empty (it would connect to whatever database libpq defaults to)", store.ErrMisconfigured)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, classify(err, store.ErrMisconfigured)
	}
	// Every call sets its own statement timeout inside its transaction; the session default also
	// bounds what runs before that (preparing a statement on a new connection).
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(DefaultStatementTimeout.Milliseconds(), 10)
	}
	PinConnParams(cfg.ConnConfig)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify(err, store.ErrMisconfigured)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, translate(err)
	}
	s := New(pool, opts)
	s.ownsPool = true
	if err := s.CheckSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// CheckSchema reports whether the store's schema is migrated to exactly this library's version:
// ErrNotMigrated when it is missing or older (run migrations.Up), ErrMisconfigured when it is newer
// (upgrade the library). Open calls it; a host that builds its Store with New should call it once at
// start-up.
func (s *Store) CheckSchema(ctx context.Context) error {
	v, err := migrations.Version(ctx, s.pool, &migrations.Options{Schema: s.schema})
	if err != nil {
		return translate(err)
	}
	switch latest := migrations.Latest(); {
	case v == 0:
		return fmt.Errorf("%w: schema %q has no Dense-Mem migrations: run migrations.Up (or `densemem migrate up`)",
			store.ErrNotMigrated, s.schema)
	case v < latest:
		return fmt.Errorf("%w: schema %q is at migration %d, this library needs %d: run migrations.Up (or `densemem migrate up`)",
			store.ErrNotMigrated, s.schema, v, latest)
	case v > latest:
		return fmt.Errorf("%w: schema %q is at migration %d, newer than this library's %d: upgrade the library",
			store.ErrMisconfigured, s.schema, v, latest)
	}
	return nil
}

// Pool returns the underlying pool (for migrations and host-side reads).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool of a Store made by Open. A Store made by New leaves its pool to the caller,
// who keeps ownership of it: Close does nothing then.
func (s *Store) Close() {
	if s.ownsPool {
		s.pool.Close()
	}
}

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
			return err
		}
		last = err
	}
	return classify(fmt.Errorf("still after %d attempts: %w", s.attempts, cause(last)), store.ErrConflict)
}

func (s *Store) txOnce(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return translate(err)
	}
	// With a failpoint armed COMMIT is sent alone, so an injected failure lands before it; the lost
	// acknowledgement keeps it in the write batch, where production sends it.
	t := &tx{s: s, conn: conn.Conn(), foldCommit: !failpoint.Armed(ctx) || failpoint.Check(ctx, failCommitAckLost) != nil,
		timeout: s.statementTimeout(ctx), actor: store.Actor(ctx)}
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
	b := &pgx.Batch{}
	b.Queue(checkDeferredSQL, t.team)
	b.Queue("COMMIT")
	err = s.sendOn(ctx, t.conn, b)
	if err = t.commitOutcome(ctx, failpoint.Armed(ctx), err); err != nil {
		return translate(err)
	}
	t.done = true
	return nil
}

// beginFunc runs fn in a plain pgx transaction of team; provisioning uses it, the write path uses Tx.
func (s *Store) beginFunc(ctx context.Context, team identity.TeamID, fn func(pgx.Tx) error) error {
	return s.txFunc(ctx, team, pgx.ReadWrite, fn)
}

// ReadTx runs fn in a read-only transaction bound to team, and to the actor ctx names
// (store.WithActor), as every call of the store is bound: a host's own queries of the schema's
// views and tables (densemem.semantic_edges, say) as the runtime role see that team's rows under
// row-level security, and nothing without a binding (migration 25).
func (s *Store) ReadTx(ctx context.Context, team identity.TeamID, fn func(pgx.Tx) error) error {
	return s.txFunc(ctx, team, pgx.ReadOnly, fn)
}

// txFunc runs fn in a pgx transaction of team in access mode, opened by the settings every
// transaction of the store opens with.
func (s *Store) txFunc(ctx context.Context, team identity.TeamID, mode pgx.TxAccessMode, fn func(pgx.Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: mode}
	return translate(pgx.BeginTxFunc(ctx, s.pool, opts, func(tx pgx.Tx) error {
		args, err := s.bind(s.settingsArgs(ctx, team), tx.Conn().PgConn().PID())
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.sql(settingsSQL), args...); err != nil {
			return err
		}
		return fn(tx)
	}))
}

func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// classified is a driver failure filed under one or more store sentinels, with the driver's error as
// its cause: errors.Is finds the sentinels, errors.As the *pgconn.PgError, and the message says each
// once ("densemem: store unavailable: <the driver's words>").
type classified struct {
	sentinels []error
	cause     error
}

func (e *classified) Error() string { return e.sentinels[0].Error() + ": " + e.cause.Error() }

func (e *classified) Unwrap() []error { return append(slices.Clone(e.sentinels), e.cause) }

func classify(cause error, sentinels ...error) error {
	return &classified{sentinels: sentinels, cause: cause}
}

// cause returns the driver's error inside err: the cause of a classified error, else err.
func cause(err error) error {
	var c *classified
	if errors.As(err, &c) {
		return c.cause
	}
	return err
}

// translate maps a driver error onto the store's sentinels, keeping the driver's error in the chain
// as the cause (errors.As reaches *pgconn.PgError). Errors that already carry a sentinel or come from
// the caller's context pass through unchanged; anything the mapping does not expect is ErrInternal.
func translate(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{store.ErrNotFound, store.ErrForbidden, store.ErrNotOwner, store.ErrIdempotencyConflict,
		store.ErrStaleConflictVersion, store.ErrNotMaterialToConflict, store.ErrStaleVersion, store.ErrConflict,
		store.ErrUnavailable, store.ErrIntegrity, store.ErrTimeout, store.ErrInternal, store.ErrCommitUnknown,
		store.ErrMisconfigured, store.ErrNotMigrated, failpoint.ErrInjected, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return err
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return classify(err, sentinelOf(pgErr))
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.As(err, &connErr) || pgconn.Timeout(err) || errors.Is(err, pgx.ErrTxClosed) {
		return classify(err, store.ErrUnavailable)
	}
	return classify(err, store.ErrInternal)
}

// sentinelOf files a server error by its SQLSTATE.
func sentinelOf(pgErr *pgconn.PgError) error {
	code := pgErr.Code
	switch {
	case code == "DM003":
		return store.ErrStaleVersion
	case code == "DME01": // an erasure key used by a concurrent erasure (migration 18)
		return store.ErrIdempotencyConflict
	case code == "DME02": // an erasure names a fragment the team does not hold
		return store.ErrNotFound
	case code == "DME03": // an erasure by a profile without the erasure scope
		return store.ErrForbidden
	case code == "DM001" || code == "DM002" || code == "DM004" || strings.HasPrefix(code, "23"):
		return store.ErrIntegrity
	case code == "40P01" || code == "40001":
		return store.ErrConflict
	case code == "55P03" || (code == "57014" && strings.Contains(pgErr.Message, "timeout")):
		// lock_not_available (lock_timeout) or a statement cancelled by statement_timeout.
		return store.ErrTimeout
	case code == "42P01" || code == "3F000" || code == "42883" || code == "42703":
		// A table, schema, function or column the library needs is missing: the schema is older than
		// the library (or was never migrated).
		return store.ErrNotMigrated
	case strings.HasPrefix(code, "28") || code == "3D000" || code == "42501" || code == "0A000":
		// Bad credentials or role, unknown database, missing privilege: retrying cannot help.
		return store.ErrMisconfigured
	case strings.HasPrefix(code, "08") || strings.HasPrefix(code, "57") || strings.HasPrefix(code, "53"):
		return store.ErrUnavailable
	}
	return store.ErrInternal
}

// idStrings returns a list of IDs (any string type) as the strings PostgreSQL's text[] takes.
func idStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, id := range in {
		out[i] = string(id)
	}
	return out
}
