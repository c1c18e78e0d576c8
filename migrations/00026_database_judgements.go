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
//     resolution did not prefer (checked at commit);
//   - in a transaction bound to an actor (densemem_bound_actor(), store.WithActor), restrictive
//     row-level security policies admit only the writes that actor may make: evidence, relationships
//     and support links of its own profile; lifecycle transitions of its own relationships (the
//     system's only beside a retirement of the same transaction, the reviewer's only as the
//     reviewer); profiles only as the host; policies and predicates only as the host or a profile
//     holding the vocabulary scope; and an erasure's ledger row only under its own actor.
//     A transaction bound to its team only (the empty actor) is judged by the rules above alone.
func databaseJudgementsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(26,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				if err := m.execAll(databaseJudgementsSQL(m.schema)...); err != nil {
					return err
				}
				if err := m.execAll(actorPoliciesSQL(m.schema, m.runtime, m.reviewer)...); err != nil {
					return err
				}
				for _, f := range []string{"densemem_case_has_event()", "densemem_item_has_decision()", "densemem_reviewer_supersedes_losers()",
					"densemem_erasure_by_actor()"} {
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
				for _, p := range actorPolicies {
					if err := m.exec("DROP POLICY %s ON %s", p[0], p[1]); err != nil {
						return err
					}
				}
				return m.execAll(
					"DROP TRIGGER privacy_erasures_by_actor ON privacy_erasures",
					"DROP FUNCTION densemem_erasure_by_actor()",
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
		// Each trigger fires only for the rows its check is about (its WHEN clause, evaluated without a
		// call), so the other updates of these tables cost nothing.
		`CREATE CONSTRAINT TRIGGER conflict_cases_have_events AFTER UPDATE ON conflict_cases
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN ((NEW.version, NEW.status) IS DISTINCT FROM (OLD.version, OLD.status))
    EXECUTE FUNCTION densemem_case_has_event()`,
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
    FOR EACH ROW WHEN (NEW.status = 'resolved' AND NEW.status IS DISTINCT FROM OLD.status)
    EXECUTE FUNCTION densemem_item_has_decision()`,
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
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.status = 'superseded' AND OLD.status = 'active')
    EXECUTE FUNCTION densemem_reviewer_supersedes_losers()`,
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

// actorPolicies are migration 26's restrictive policies: name, table.
var actorPolicies = [][2]string{
	{"actor_authors_evidence", "evidence_fragments"},
	{"actor_owns_relationship", "relationships"},
	{"actor_owns_supported", "support_links"},
	{"actor_moves_own", "relationship_transitions"},
	{"host_inserts_profiles", "profiles"},
	{"host_updates_profiles", "profiles"},
	{"vocabulary_appends_policies", "team_policies"},
	{"vocabulary_appends_predicates", "predicate_definitions"},
}

// actorPoliciesSQL are the restrictive policies of actorPolicies for schema s and the runtime and
// reviewer roles (quoted), and the erasure's actor check. Each reads the actor setting as an
// InitPlan, evaluated once per statement, in the same row check as the table's permissive policy,
// whose densemem_bound_team() InitPlan verifies the binding of the team and that same actor (no
// statement of the caller runs between the two): a verified actor without a second verification.
// The empty actor (a transaction bound to its team only) passes; the owner has a policy of its own.
func actorPoliciesSQL(s, runtime, reviewer string) []string {
	actor := "(SELECT COALESCE(current_setting('densemem.actor', true), ''))"
	vocabulary := func(table string) string {
		return fmt.Sprintf(`%[1]s IN ('', 'host') OR EXISTS (SELECT 1 FROM %[2]s.profiles p WHERE p.team_id = %[3]s.team_id
            AND 'profile:' || p.profile_id = %[1]s AND p.status = 'active' AND 'vocabulary' = ANY (p.scopes))`, actor, s, table)
	}
	owns := func(table, profile string) string {
		return fmt.Sprintf(`%[1]s = '' OR EXISTS (SELECT 1 FROM %[2]s.relationships r WHERE r.team_id = %[3]s.team_id
            AND r.relationship_id = %[3]s.relationship_id AND r.owner_profile_id = %[3]s.%[4]s AND 'profile:' || r.owner_profile_id = %[1]s)`,
			actor, s, table, profile)
	}
	return []string{
		fmt.Sprintf(`CREATE POLICY actor_authors_evidence ON %s.evidence_fragments AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s IN ('', 'profile:' || author_profile_id))`, s, runtime, actor),
		fmt.Sprintf(`CREATE POLICY actor_owns_relationship ON %s.relationships AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s IN ('', 'profile:' || owner_profile_id))`, s, runtime, actor),
		fmt.Sprintf(`CREATE POLICY actor_owns_supported ON %s.support_links AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s)`, s, runtime, owns("support_links", "profile_id")),
		fmt.Sprintf(`CREATE POLICY actor_moves_own ON %[1]s.relationship_transitions AS RESTRICTIVE FOR INSERT TO %[2]s, %[3]s
    WITH CHECK (CASE actor_kind
        WHEN 'profile' THEN %[4]s
        WHEN 'system' THEN %[5]s = '' OR EXISTS (SELECT 1 FROM %[1]s.fragment_retirements fr
            WHERE fr.team_id = relationship_transitions.team_id AND fr.xmin = xid(pg_current_xact_id()))
        WHEN 'system_conflict_reviewer' THEN %[5]s IN ('', 'reviewer')
        ELSE false END)`, s, runtime, reviewer, owns("relationship_transitions", "actor_profile_id"), actor),
		fmt.Sprintf(`CREATE POLICY host_inserts_profiles ON %s.profiles AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s IN ('', 'host'))`, s, runtime, actor),
		fmt.Sprintf(`CREATE POLICY host_updates_profiles ON %s.profiles AS RESTRICTIVE FOR UPDATE TO %s
    USING (true) WITH CHECK (%s IN ('', 'host'))`, s, runtime, actor),
		fmt.Sprintf(`CREATE POLICY vocabulary_appends_policies ON %s.team_policies AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s)`, s, runtime, vocabulary("team_policies")),
		fmt.Sprintf(`CREATE POLICY vocabulary_appends_predicates ON %s.predicate_definitions AS RESTRICTIVE FOR INSERT TO %s
    WITH CHECK (%s)`, s, runtime, vocabulary("predicate_definitions")),
		// densemem_erase runs as the owner, past the policies: its ledger row names its actor, which
		// must be the bound one.
		fmt.Sprintf(`CREATE FUNCTION densemem_erasure_by_actor() RETURNS trigger
LANGUAGE plpgsql SET search_path = %[1]s, pg_temp AS $$
DECLARE
    a text := %[1]s.densemem_bound_actor();
BEGIN
    IF a <> '' AND a IS DISTINCT FROM (CASE NEW.actor_kind WHEN 'host' THEN 'host' ELSE 'profile:' || NEW.actor_profile_id END) THEN
        RAISE EXCEPTION 'densemem: an erasure by %% %% in a transaction bound to %%', NEW.actor_kind, NEW.actor_profile_id, a
            USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
END;
$$`, s),
		`CREATE TRIGGER privacy_erasures_by_actor BEFORE INSERT ON privacy_erasures
    FOR EACH ROW EXECUTE FUNCTION densemem_erasure_by_actor()`,
	}
}
