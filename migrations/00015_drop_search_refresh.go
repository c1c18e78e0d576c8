package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 15 drops search_refresh_queue (decision 91). Recall reads the relationships and their
// evidence through indexes in the reading transaction, so there is no derived search index to
// refresh, and a queue nothing drains only grows. Its rows were rebuildable intents, never a ledger:
// nothing of the audit trail goes with them. Down recreates the empty table with its privileges.
func dropSearchRefreshMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(15,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error { return m.exec("DROP TABLE search_refresh_queue") })
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return searchRefreshDown(ctx, tx, r) }})
}

// searchRefreshDown recreates search_refresh_queue as migrations 1 and 9 left it.
func searchRefreshDown(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
		if err := m.exec(`CREATE TABLE search_refresh_queue (
    team_id         text        NOT NULL,
    refresh_id      bigint      GENERATED ALWAYS AS IDENTITY,
    relationship_id text        NOT NULL,
    reason          text        NOT NULL,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (team_id, refresh_id)
)`); err != nil {
			return err
		}
		if err := m.exec("ALTER TABLE search_refresh_queue OWNER TO %s", m.owner); err != nil {
			return err
		}
		return m.grantTable("search_refresh_queue", "SELECT, INSERT, DELETE", "SELECT, INSERT")
	})
}
