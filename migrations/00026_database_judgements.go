package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 26 makes the database refuse what it can judge of the writes the grants allow and the
// API forbids (issue 22 item 3), for every role, the owner included:
//
//   - a conflict case's status or version changes only with the case event of that version and
//     status, recorded in the same transaction (checked at commit);
//   - a review item is closed as resolved only with its decision: decision_id names a decision
//     about that item;
//   - a role that may not insert relationships (the reviewer) supersedes a relationship only when,
//     in the same transaction, it resolved a case the relationship is a member of, on a position the
//     resolution did not prefer (checked at commit).
//
// What it cannot judge without knowing the acting profile (the team binding names the team only,
// decision 176) stays with the library: see docs/deployment.md.
func databaseJudgementsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(26,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(databaseJudgementsSQL(m.schema)...); err != nil {
					return err
				}
				for _, f := range []string{"densemem_case_has_event()", "densemem_item_has_decision()", "densemem_reviewer_supersedes_losers()"} {
					if err := m.execAll(fmt.Sprintf("ALTER FUNCTION %s OWNER TO %s", f, m.owner),
						fmt.Sprintf("REVOKE ALL ON FUNCTION %s FROM PUBLIC", f)); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, false, func(m *rolesRun) error {
				return m.execAll(
					"DROP TRIGGER conflict_cases_have_events ON conflict_cases",
					"DROP TRIGGER review_items_with_decisions ON review_items",
					"DROP TRIGGER relationships_reviewer_losers ON relationships",
					"DROP FUNCTION densemem_case_has_event()",
					"DROP FUNCTION densemem_item_has_decision()",
					"DROP FUNCTION densemem_reviewer_supersedes_losers()")
			})
		}})
}

// databaseJudgementsSQL are migration 26's functions and triggers for schema s (quoted); each
// function's search_path is the schema then pg_temp, and every relation it names is qualified.
func databaseJudgementsSQL(s string) []string {
	return []string{
		// An AFTER row check keyed by its row's team: it runs as the owner (migration 25's afterRowChecks).
		fmt.Sprintf(`CREATE FUNCTION densemem_case_has_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = %[1]s, pg_temp AS $$
BEGIN
    IF (NEW.version, NEW.status) IS DISTINCT FROM (OLD.version, OLD.status)
       AND NOT EXISTS (SELECT 1 FROM %[1]s.conflict_events e WHERE e.team_id = NEW.team_id AND e.conflict_id = NEW.conflict_id
                       AND e.case_version = NEW.version AND e.resulting_status = NEW.status) THEN
        RAISE EXCEPTION 'densemem: conflict case %% became %% at version %% with no case event', NEW.conflict_id, NEW.status, NEW.version
            USING ERRCODE = 'DM002';
    END IF;
    RETURN NULL;
END;
$$`, s),
		`CREATE CONSTRAINT TRIGGER conflict_cases_have_events AFTER UPDATE ON conflict_cases
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION densemem_case_has_event()`,
		// An UPDATE's row passed row-level security and no role may change its team: it runs as the owner.
		fmt.Sprintf(`CREATE FUNCTION densemem_item_has_decision() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = %[1]s, pg_temp AS $$
BEGIN
    IF NEW.status = 'resolved' AND NEW.status IS DISTINCT FROM OLD.status
       AND NOT EXISTS (SELECT 1 FROM %[1]s.placement_decisions d WHERE d.team_id = NEW.team_id
                       AND d.decision_id = NEW.decision_id AND d.review_id = NEW.review_id) THEN
        RAISE EXCEPTION 'densemem: review item %% resolved without its decision', NEW.review_id USING ERRCODE = 'DM002';
    END IF;
    RETURN NEW;
END;
$$`, s),
		// Named to fire after the lifecycle's and the reviewer's triggers, whose refusals say more.
		`CREATE TRIGGER review_items_with_decisions BEFORE UPDATE ON review_items
    FOR EACH ROW EXECUTE FUNCTION densemem_item_has_decision()`,
		fmt.Sprintf(`CREATE FUNCTION densemem_reviewer_supersedes_losers() RETURNS trigger
LANGUAGE plpgsql SET search_path = %[1]s, pg_temp AS $$
BEGIN
    IF NEW.status = 'superseded' AND OLD.status = 'active'
       AND NOT has_table_privilege('%[2]s.relationships', 'INSERT')
       AND NOT EXISTS (
           SELECT 1 FROM %[1]s.conflict_position_members m
           JOIN %[1]s.conflict_cases c ON c.team_id = m.team_id AND c.conflict_id = m.conflict_id
           WHERE m.team_id = NEW.team_id AND m.relationship_id = NEW.relationship_id
             AND c.status = 'resolved' AND c.preferred_position_id IS DISTINCT FROM m.position_id
             AND c.xmin = xid(pg_current_xact_id())) THEN
        RAISE EXCEPTION 'densemem: the conflict reviewer may supersede relationship %% only as a loser of a case it resolves',
            NEW.relationship_id USING ERRCODE = 'DM004';
    END IF;
    RETURN NULL;
END;
$$`, s, unquote(s)),
		`CREATE CONSTRAINT TRIGGER relationships_reviewer_losers AFTER UPDATE ON relationships
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION densemem_reviewer_supersedes_losers()`,
	}
}

// unquote returns a quoted lower-case identifier's name (schemaPattern's names need no quotes inside
// a string literal).
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
