package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 14 records a profile's late split and merge of entities (Client.Split, Client.Merge). It
// is Go because it grants privileges to the configurable roles (as migrations 9 and 11 do).
//
//   - identity_decisions: the append-only ledger of splits and merges, one row per confirmed split or
//     merge: who moved which of its observations from which entity to which (a new one for a split),
//     with which evidence and reason, under which idempotency key, and the before and after of every
//     relationship it re-derived. Owned by the owner; the runtime role may SELECT and INSERT, the
//     reviewer role SELECT; row-level security like every table. An index on the ingest lets Trace
//     name the decision behind a transition in one probe.
//   - entity_resolution_events: a resolution event may now record that a split or a merge moved the
//     mention (decisions 'split' and 'merged'); the events stay append-only, the latest is current.
func identityDecisionsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(14,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return identityDecisionsUp(ctx, tx, r) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return identityDecisionsDown(ctx, tx, r) }})
}

// identityDecisionsSchemaSQL creates the identity decision ledger and widens the resolution decisions.
var identityDecisionsSchemaSQL = []string{
	`CREATE TABLE identity_decisions (
    team_id          text        NOT NULL REFERENCES teams (team_id),
    decision_id      text        NOT NULL,
    profile_id       text        NOT NULL,
    action           text        NOT NULL CHECK (action IN ('split', 'merge')),
    from_entity_id   text        NOT NULL,
    to_entity_id     text        NOT NULL,
    observation_ids  text[]      NOT NULL,
    fragment_ids     text[]      NOT NULL,
    reason           text        NOT NULL,
    changes          jsonb       NOT NULL,
    ingest_id        text        NOT NULL,
    idempotency_key  text        NOT NULL,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, decision_id),
    CHECK (from_entity_id <> to_entity_id),
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id),
    FOREIGN KEY (team_id, from_entity_id) REFERENCES entities (team_id, entity_id),
    FOREIGN KEY (team_id, to_entity_id) REFERENCES entities (team_id, entity_id)
)`,
	`CREATE INDEX identity_decisions_ingest ON identity_decisions (team_id, ingest_id)`,
	`CREATE TRIGGER identity_decisions_append_only BEFORE UPDATE OR DELETE ON identity_decisions
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER identity_decisions_no_truncate BEFORE TRUNCATE ON identity_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation()`,
	`ALTER TABLE entity_resolution_events DROP CONSTRAINT entity_resolution_events_decision_check`,
	`ALTER TABLE entity_resolution_events ADD CONSTRAINT entity_resolution_events_decision_check
    CHECK (decision IN ('known', 'reused', 'created', 'ambiguous', 'split', 'merged'))`,
}

// identityDecisionsUp runs migration 14 in tx for roles r (with their defaults).
func identityDecisionsUp(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
		if err := m.execAll(identityDecisionsSchemaSQL...); err != nil {
			return err
		}
		if err := m.exec("ALTER TABLE identity_decisions OWNER TO %s", m.owner); err != nil {
			return err
		}
		return m.grantTable("identity_decisions", "SELECT, INSERT", "SELECT")
	})
}

// identityDecisionsDownSQL undoes identityDecisionsSchemaSQL. Resolution events a split or merge
// appended are append-only and stay as they are: the old check comes back NOT VALID, refusing new
// 'split' and 'merged' events without rewriting history.
var identityDecisionsDownSQL = []string{
	`ALTER TABLE entity_resolution_events DROP CONSTRAINT entity_resolution_events_decision_check`,
	`ALTER TABLE entity_resolution_events ADD CONSTRAINT entity_resolution_events_decision_check
    CHECK (decision IN ('known', 'reused', 'created', 'ambiguous')) NOT VALID`,
	`DROP TABLE identity_decisions`,
}

// identityDecisionsDown undoes migration 14: the identity decision ledger and its rows are dropped.
func identityDecisionsDown(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, false, func(m *rolesRun) error { return m.execAll(identityDecisionsDownSQL...) })
}
