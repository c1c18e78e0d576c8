package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/densemem/densemem/store"
)

// nightly_runs is the run ledger (migrations 3 and 28): one row per team and run date, reserved by
// the first worker, counting every worker's pass.

const nightlyReserveSQL = `-- name: NightlyReserve
INSERT INTO {schema}.nightly_runs (team_id, run_date, worker_id, reserved_at) VALUES ($1, $2::date, $3, $4)
ON CONFLICT DO NOTHING`

// nightlyPassSQL counts a pass started. It runs after nightlyReserveSQL in the same transaction, as a
// statement of its own: its snapshot sees the row whether this pass inserted it or another
// transaction did (whose commit the INSERT waited for).
const nightlyPassSQL = `-- name: NightlyReservePass
UPDATE {schema}.nightly_runs SET passes_started = passes_started + 1 WHERE team_id = $1 AND run_date = $2::date`

// NightlyReserve reserves a team's run date and counts the pass started, in one transaction; false
// when the date was reserved before.
func (s *Store) NightlyReserve(ctx context.Context, p store.NightlyReserveParams) (bool, error) {
	var ct pgconn.CommandTag
	date := p.RunDate.Format(time.DateOnly)
	b := &pgx.Batch{}
	b.Queue(nightlyReserveSQL, p.Team, date, p.Worker, p.Now).Exec(func(tag pgconn.CommandTag) error {
		ct = tag
		return nil
	})
	b.Queue(nightlyPassSQL, p.Team, date)
	if err := s.send(ctx, p.Team, b, true); err != nil {
		return false, err
	}
	return ct.RowsAffected() == 1, nil
}

// nightlyFinishSQL adds a pass's outcome to its run date's row; its failures ($12) fill the room
// the row's list has left, in their order.
const nightlyFinishSQL = `-- name: NightlyFinish
UPDATE {schema}.nightly_runs r SET passes_finished = r.passes_finished + 1, finished_at = greatest(r.finished_at, $3),
    claimed = r.claimed + $4, resolved = r.resolved + $5, dismissed = r.dismissed + $6, marked_overdue = r.marked_overdue + $7,
    kept_open = r.kept_open + $8, exhausted = r.exhausted + $9, failed = r.failed + $10, unknown = r.unknown + $11,
    failures = r.failures || COALESCE((SELECT jsonb_agg(f.e ORDER BY f.n) FROM jsonb_array_elements($12::jsonb) WITH ORDINALITY f(e, n)
                                       WHERE f.n <= $13 - jsonb_array_length(r.failures)), '[]'::jsonb)
WHERE r.team_id = $1 AND r.run_date = $2::date`

// NightlyFinish records one pass's outcome in its run date's ledger row. Errors: ErrNotFound (the
// date was not reserved), ErrTimeout, ErrUnavailable, ErrInternal.
func (s *Store) NightlyFinish(ctx context.Context, p store.NightlyFinishParams) error {
	failures := p.Failures
	if failures == nil {
		failures = []store.NightlyFailure{}
	}
	js, err := json.Marshal(failures)
	if err != nil {
		return fmt.Errorf("%w: nightly failures: %w", store.ErrInternal, err)
	}
	c := p.Counts
	var ct pgconn.CommandTag
	b := &pgx.Batch{}
	b.Queue(nightlyFinishSQL, p.Team, p.RunDate.Format(time.DateOnly), p.Now, c.Claimed, c.Resolved, c.Dismissed, c.Overdue,
		c.KeptOpen, c.Exhausted, c.Failed, c.Unknown, string(js), store.MaxNightlyFailures).Exec(func(tag pgconn.CommandTag) error {
		ct = tag
		return nil
	})
	if err := s.send(ctx, p.Team, b, true); err != nil {
		return err
	}
	if ct.RowsAffected() == 0 {
		return fmt.Errorf("%w: nightly run of team %s on %s", store.ErrNotFound, p.Team, p.RunDate.Format(time.DateOnly))
	}
	return nil
}

// nightlyRunListSQL reads a page of a team's ledger backwards along the primary key.
const nightlyRunListSQL = `-- name: NightlyRunList
SELECT run_date, worker_id, reserved_at, passes_started, passes_finished, finished_at, claimed, resolved, dismissed,
       marked_overdue, kept_open, exhausted, failed, unknown, failures
FROM {schema}.nightly_runs
WHERE team_id = $1 AND run_date < COALESCE($2::date, 'infinity'::date)
ORDER BY run_date DESC
LIMIT $3`

// NightlyRunList returns a page of a team's run ledger, newest run date first. Errors: ErrTimeout,
// ErrUnavailable, ErrInternal.
func (s *Store) NightlyRunList(ctx context.Context, p store.NightlyRunListParams) (store.Page[store.NightlyRun], error) {
	var out store.Page[store.NightlyRun]
	if err := checkLimit(p.Limit); err != nil {
		return out, err
	}
	var before *string
	if p.Before != nil {
		d := p.Before.Format(time.DateOnly)
		before = &d
	}
	b := &pgx.Batch{}
	b.Queue(nightlyRunListSQL, p.Team, before, p.Limit+1).Query(func(rows pgx.Rows) (err error) {
		out.Items, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.NightlyRun, error) {
			r := store.NightlyRun{Team: p.Team}
			c := &r.Counts
			var failures []byte
			if err := row.Scan(&r.RunDate, &r.Worker, &r.ReservedAt, &r.PassesStarted, &r.PassesFinished, &r.FinishedAt,
				&c.Claimed, &c.Resolved, &c.Dismissed, &c.Overdue, &c.KeptOpen, &c.Exhausted, &c.Failed, &c.Unknown, &failures); err != nil {
				return r, err
			}
			r.RunDate = r.RunDate.UTC()
			if err := json.Unmarshal(failures, &r.Failures); err != nil {
				return r, fmt.Errorf("%w: nightly run %s failures: %w", store.ErrInternal, r.RunDate.Format(time.DateOnly), err)
			}
			return r, nil
		})
		return err
	})
	if err := s.send(ctx, p.Team, b, false); err != nil {
		return store.Page[store.NightlyRun]{}, err
	}
	return cut(out, p.Limit), nil
}
