package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 28 makes nightly_runs a run ledger (issue 27): besides the reservation of a team's run
// date, each row records what the workers that reviewed the team on that date did, so an operator
// sees every run, the ones that decided nothing and the failures short of exhaustion included.
//
//   - passes_started counts the workers' passes over the team on that date (each NightlyReserve, the
//     reserving one and the helpers), passes_finished those that recorded their outcome; a pass that
//     crashed never records, so a row with fewer finished than started passes shows a pass that did
//     not finish (or is still running). Rows reserved before this migration have 0 of both.
//   - finished_at is the latest recorded pass's end; the counts add up every recorded pass's (cases
//     claimed, resolved, dismissed, marked overdue, kept open, escalated after exhausting the day's
//     attempts, failed, of unknown outcome).
//   - failures is a bounded JSON list (at most 20) of the first failures of the date: a case's ID,
//     its attempt and the error's text (truncated by the writer), or a pass's own error without a
//     case ID.
//
// The reviewer role may update these columns; the runtime role keeps reading only. Row-level
// security is the table's own (the bound team), unchanged.
func nightlyLedgerMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(28,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error {
				return m.execAll(`ALTER TABLE nightly_runs
    ADD COLUMN passes_started  integer     NOT NULL DEFAULT 0 CHECK (passes_started >= 0),
    ADD COLUMN passes_finished integer     NOT NULL DEFAULT 0 CHECK (passes_finished >= 0),
    ADD COLUMN finished_at     timestamptz,
    ADD COLUMN claimed         integer     NOT NULL DEFAULT 0 CHECK (claimed >= 0),
    ADD COLUMN resolved        integer     NOT NULL DEFAULT 0 CHECK (resolved >= 0),
    ADD COLUMN dismissed       integer     NOT NULL DEFAULT 0 CHECK (dismissed >= 0),
    ADD COLUMN marked_overdue  integer     NOT NULL DEFAULT 0 CHECK (marked_overdue >= 0),
    ADD COLUMN kept_open       integer     NOT NULL DEFAULT 0 CHECK (kept_open >= 0),
    ADD COLUMN exhausted       integer     NOT NULL DEFAULT 0 CHECK (exhausted >= 0),
    ADD COLUMN failed          integer     NOT NULL DEFAULT 0 CHECK (failed >= 0),
    ADD COLUMN unknown         integer     NOT NULL DEFAULT 0 CHECK (unknown >= 0),
    ADD COLUMN failures        jsonb       NOT NULL DEFAULT '[]'
        CHECK (jsonb_typeof(failures) = 'array' AND jsonb_array_length(failures) <= 20)`,
					fmt.Sprintf("GRANT UPDATE (%s) ON nightly_runs TO %s", nightlyLedgerColumns, m.reviewer))
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error {
				return m.execAll(fmt.Sprintf("REVOKE UPDATE (%s) ON nightly_runs FROM %s", nightlyLedgerColumns, m.reviewer),
					`ALTER TABLE nightly_runs DROP COLUMN passes_started, DROP COLUMN passes_finished, DROP COLUMN finished_at,
    DROP COLUMN claimed, DROP COLUMN resolved, DROP COLUMN dismissed, DROP COLUMN marked_overdue, DROP COLUMN kept_open,
    DROP COLUMN exhausted, DROP COLUMN failed, DROP COLUMN unknown, DROP COLUMN failures`)
			})
		}})
}

// nightlyLedgerColumns are the columns of nightly_runs the reviewer role may update.
const nightlyLedgerColumns = "passes_started, passes_finished, finished_at, claimed, resolved, dismissed, marked_overdue, " +
	"kept_open, exhausted, failed, unknown, failures"
