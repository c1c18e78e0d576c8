package migrations

import (
	"context"
	"database/sql"

	"github.com/pressly/goose/v3"
)

// Migration 22 lets the nightly reviewer re-ask a question its resolution moved (DESIGN §6.7, §9):
// when it supersedes a losing relationship that an owner's statement was held against, the held
// statement's open item no longer asks about the state that is, and in the same transaction the
// reviewer closes that item as superseded and issues the one that asks the new question. It never
// changes the held statement itself. It is Go because it grants privileges to the configurable roles.
//
//   - review_items: the reviewer role may SELECT, INSERT and UPDATE (status, resolved_at), and a row
//     trigger admits from a role that may not insert relationships (the reviewer, as migration 9's
//     fence tells it) only an open relationship_conflict item without a decision, and only a close
//     as superseded (migration 11's guard keeps closing one-way and final).
func reviewerReviewItemsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(22,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(reviewerReviewItemsSQL...); err != nil {
					return err
				}
				if err := m.exec("ALTER FUNCTION densemem_reviewer_review_items() OWNER TO %s", m.owner); err != nil {
					return err
				}
				return m.grantTable("review_items", "SELECT, INSERT, UPDATE (status, resolved_at, decision_id)",
					"SELECT, INSERT, UPDATE (status, resolved_at)")
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error {
				if err := m.execAll(reviewerReviewItemsDownSQL...); err != nil {
					return err
				}
				return m.grantTable("review_items", "SELECT, INSERT, UPDATE (status, resolved_at, decision_id)", "SELECT")
			})
		}})
}

var reviewerReviewItemsSQL = []string{
	// densemem_reviewer_review_items: what the reviewer may write of review items.
	`CREATE FUNCTION densemem_reviewer_review_items() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF has_table_privilege('relationships', 'INSERT') THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' AND NEW.status = 'open' AND NEW.kind = 'relationship_conflict' AND NEW.decision_id IS NULL THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.status = 'superseded' AND NEW.decision_id IS NULL THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'densemem: the conflict reviewer may only issue a held statement''s question and close one as superseded'
        USING ERRCODE = 'DM004';
END;
$$`,
	`REVOKE ALL ON FUNCTION densemem_reviewer_review_items() FROM PUBLIC`,
	`CREATE TRIGGER review_items_reviewer BEFORE INSERT OR UPDATE OR DELETE ON review_items
    FOR EACH ROW EXECUTE FUNCTION densemem_reviewer_review_items()`,
}

var reviewerReviewItemsDownSQL = []string{
	`DROP TRIGGER review_items_reviewer ON review_items`,
	`DROP FUNCTION densemem_reviewer_review_items()`,
}
