package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 11 records clients' decisions on review items (Client.Resolve) and gives review items a
// lifecycle. It is Go because it grants privileges to the configurable roles (as migration 9 does).
//
//   - placement_decisions: the append-only ledger of decisions, one row per decision on a review
//     item: who decided what, with which evidence and reason, under which idempotency key, and the
//     before and after of every relationship it changed. Owned by the owner; the runtime role may
//     SELECT and INSERT, the reviewer role SELECT; row-level security like every table.
//   - review_items: an item is open until it is resolved (by a decision), superseded (its question
//     went away) or expired. It records the versions of its relationship and of its related
//     relationships when it was issued (relationship_version 0 and related_versions NULL: not
//     recorded, as for every item issued before this migration), and the decision that resolved it.
//     The runtime role may UPDATE status, resolved_at and decision_id, and a guard trigger makes that
//     a one-way close: only an open item may change, it may only be closed, with its closing time,
//     and nothing else of it may change.
func decisionsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(11,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return decisionsUp(ctx, tx, r) }},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error { return decisionsDown(ctx, tx, r) }})
}

// decisionsSchemaSQL creates the decision ledger and the review item lifecycle.
var decisionsSchemaSQL = []string{
	`CREATE TABLE placement_decisions (
    team_id           text        NOT NULL REFERENCES teams (team_id),
    decision_id       text        NOT NULL,
    profile_id        text        NOT NULL,
    review_id         text        NOT NULL,
    item_ingest_id    text        NOT NULL,
    placement_item_id text        NOT NULL,
    action            text        NOT NULL,
    decision          jsonb       NOT NULL,
    fragment_ids      text[]      NOT NULL,
    reason            text        NOT NULL,
    changes           jsonb       NOT NULL,
    ingest_id         text        NOT NULL,
    idempotency_key   text        NOT NULL,
    created_at        timestamptz NOT NULL,
    PRIMARY KEY (team_id, decision_id),
    FOREIGN KEY (team_id, profile_id) REFERENCES profiles (team_id, profile_id),
    FOREIGN KEY (team_id, review_id) REFERENCES review_items (team_id, review_id)
)`,
	`CREATE INDEX placement_decisions_review ON placement_decisions (team_id, review_id)`,
	`CREATE TRIGGER placement_decisions_append_only BEFORE UPDATE OR DELETE ON placement_decisions
    FOR EACH ROW EXECUTE FUNCTION densemem_reject_mutation()`,
	`CREATE TRIGGER placement_decisions_no_truncate BEFORE TRUNCATE ON placement_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION densemem_reject_mutation()`,

	// The lifecycle's statuses (the constraint is the one 00001 created, named by default).
	`ALTER TABLE review_items DROP CONSTRAINT review_items_status_check`,
	`ALTER TABLE review_items ADD CONSTRAINT review_items_status_check
    CHECK (status IN ('open', 'resolved', 'superseded', 'expired'))`,
	`ALTER TABLE review_items
    ADD COLUMN decision_id text,
    ADD COLUMN relationship_version integer NOT NULL DEFAULT 0 CHECK (relationship_version >= 0),
    ADD COLUMN related_versions integer[]
        CHECK (related_versions IS NULL OR cardinality(related_versions) = cardinality(related_ids)),
    ADD FOREIGN KEY (team_id, decision_id) REFERENCES placement_decisions (team_id, decision_id)`,

	// densemem_guard_review_item: closing is the only change of a review item, and it is final.
	`CREATE FUNCTION densemem_guard_review_item() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF OLD.status <> 'open' THEN
        RAISE EXCEPTION 'densemem: review item % is % and may not change', OLD.review_id, OLD.status
            USING ERRCODE = 'DM001';
    END IF;
    IF NEW.status = 'open' THEN
        RAISE EXCEPTION 'densemem: review item % may only change by being closed (resolved, superseded or expired)',
            OLD.review_id USING ERRCODE = 'DM001';
    END IF;
    IF NEW.resolved_at IS NULL THEN
        RAISE EXCEPTION 'densemem: review item % closed without its closing time', OLD.review_id USING ERRCODE = 'DM001';
    END IF;
    IF to_jsonb(NEW) - 'status' - 'resolved_at' - 'decision_id'
       IS DISTINCT FROM to_jsonb(OLD) - 'status' - 'resolved_at' - 'decision_id' THEN
        RAISE EXCEPTION 'densemem: closing review item % may change only its status, resolved_at and decision_id',
            OLD.review_id USING ERRCODE = 'DM001';
    END IF;
    RETURN NEW;
END;
$$`,
	`CREATE TRIGGER review_items_lifecycle BEFORE UPDATE ON review_items
    FOR EACH ROW EXECUTE FUNCTION densemem_guard_review_item()`,
}

// decisionsUp runs migration 11 in tx for roles r (with their defaults).
func decisionsUp(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
		if err := m.execAll(decisionsSchemaSQL...); err != nil {
			return err
		}
		// The owner owns the new objects; PUBLIC may not call the new function (triggers need no EXECUTE).
		if err := m.execAll(
			fmt.Sprintf("ALTER TABLE placement_decisions OWNER TO %s", m.owner),
			fmt.Sprintf("ALTER FUNCTION densemem_guard_review_item() OWNER TO %s", m.owner),
			"REVOKE ALL ON FUNCTION densemem_guard_review_item() FROM PUBLIC"); err != nil {
			return err
		}
		if err := m.grantTable("placement_decisions", "SELECT, INSERT", "SELECT"); err != nil {
			return err
		}
		return m.grantTable("review_items", "SELECT, INSERT, UPDATE (status, resolved_at, decision_id)", "SELECT")
	})
}

// decisionsDownSQL undoes decisionsSchemaSQL. Items closed as superseded or expired become resolved,
// the only closed status before the migration.
var decisionsDownSQL = []string{
	`DROP TRIGGER review_items_lifecycle ON review_items`,
	`DROP FUNCTION densemem_guard_review_item()`,
	`ALTER TABLE review_items DROP COLUMN decision_id, DROP COLUMN relationship_version, DROP COLUMN related_versions`,
	`ALTER TABLE review_items DROP CONSTRAINT review_items_status_check`,
	`UPDATE review_items SET status = 'resolved' WHERE status IN ('superseded', 'expired')`,
	`ALTER TABLE review_items ADD CONSTRAINT review_items_status_check CHECK (status IN ('open', 'resolved'))`,
	`DROP TABLE placement_decisions`,
}

// decisionsDown undoes migration 11: the decision ledger and its rows are dropped, review items lose
// their versions and decisions, and the runtime role's privileges on them are migration 9's again.
func decisionsDown(ctx context.Context, tx *sql.Tx, r Roles) error {
	return withRoles(ctx, tx, r, false, func(m *rolesRun) error {
		if err := m.execAll(decisionsDownSQL...); err != nil {
			return err
		}
		return m.grantTable("review_items", "SELECT, INSERT, UPDATE (status, resolved_at)", "SELECT")
	})
}
