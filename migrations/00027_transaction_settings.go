package migrations

import (
	"context"
	"database/sql"
	"strings"

	"github.com/pressly/goose/v3"
)

// Migration 27 gives the store one function that opens every transaction, so that the transaction's
// team reaches every node that runs one of its statements (issue 25, decision 203). set_config
// changes the setting of the session that calls it only; on a Citus cluster the row-level security
// of a shard is evaluated by a worker's backend, which never sees it, and the runtime role silently
// reads no rows. Citus replays a SET LOCAL on the worker connections of the transaction when
// citus.propagate_set_commands is 'local'; SET takes no parameter, so the function spells the team
// as a quoted literal with EXECUTE.
//
//   - densemem_begin(team, statement_timeout, actor, binding): the transaction's statement timeout
//     and the settings migration 25 pins (no lock or idle timeout, row-level security on); on plain
//     PostgreSQL, generic plans
//     and densemem.team, densemem.actor and densemem.binding by set_config, as before; on a Citus
//     coordinator (pg_dist_partition exists), the planner's choice of plans (forced generic plans
//     break INSERT … SELECT on distributed tables), citus.propagate_set_commands = 'local' and the
//     team, actor and binding by SET LOCAL, so that they reach the workers. The runtime and reviewer roles may execute it; it sets nothing they could not set
//     themselves.
//   - densemem_check_deferred(team): on a Citus node, SET CONSTRAINTS ALL IMMEDIATE, so that the
//     deferred constraint triggers (a relationship and its transitions, a case and its events)
//     fire now rather than at COMMIT; elsewhere nothing. The store calls it right before COMMIT of
//     a write transaction; Distribute delegates it to the team's worker (decision 207). A worker
//     that fails a deferred check at COMMIT is reported by the coordinator as "could not commit
//     transaction" (SQLSTATE XX000), the check's own error only as a warning; fired by a statement,
//     the check's error is that statement's, with its SQLSTATE.
//   - densemem_erase_fragments: densemem_erase's rows as one JSON array, so that the store can call
//     it once from a statement on a team table, which Citus routes to the team's worker (decision
//     208): called on the coordinator, the owner's function writes the team's shards over
//     connections of its own, and the runtime role's next statement in the transaction is refused
//     ("cannot perform query on placements that were modified in this transaction by a different
//     user").
//   - densemem_teams_with_due_cases: the same query in PL/pgSQL instead of SQL. Citus cannot plan a
//     SQL function's statement on a distributed table with the function's parameter in it ("could
//     not create distributed plan"); PL/pgSQL hands it the value.
func transactionSettingsMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(27,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				// Every function pins its search_path with pg_temp last (migration 25).
				pinned := strings.NewReplacer("SET search_path FROM CURRENT", "SET search_path = "+m.schema+", pg_temp")
				for _, q := range []string{transactionSettingsSQL, checkDeferredSQL, eraseFragmentsSQL, dueTeamsPLpgSQL} {
					if err := m.execAll(pinned.Replace(q)); err != nil {
						return err
					}
				}
				for _, f := range []string{"densemem_begin(text, text, text, text)", "densemem_check_deferred(text)", eraseFragments} {
					if err := m.execAll("ALTER FUNCTION "+f+" OWNER TO "+m.owner,
						"REVOKE ALL ON FUNCTION "+f+" FROM PUBLIC",
						"GRANT EXECUTE ON FUNCTION "+f+" TO "+m.runtime+", "+m.reviewer); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error {
				return m.execAll("DROP FUNCTION densemem_begin(text, text, text, text)",
					"DROP FUNCTION densemem_check_deferred(text)", "DROP FUNCTION "+eraseFragments,
					strings.ReplaceAll(dueTeamsSQL, "SET search_path FROM CURRENT", "SET search_path = "+m.schema+", pg_temp"))
			})
		}})
}

const transactionSettingsSQL = `CREATE FUNCTION densemem_begin(p_team text, p_statement_timeout text, p_actor text,
    p_binding text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM set_config('statement_timeout', p_statement_timeout, true), set_config('lock_timeout', '0', true),
        set_config('idle_in_transaction_session_timeout', '0', true), set_config('row_security', 'on', true);
    IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
        PERFORM set_config('plan_cache_mode', 'force_generic_plan', true), set_config('densemem.team', p_team, true),
            set_config('densemem.actor', p_actor, true), set_config('densemem.binding', p_binding, true);
        RETURN;
    END IF;
    EXECUTE 'SET LOCAL citus.propagate_set_commands = local';
    EXECUTE format('SET LOCAL densemem.team = %L', p_team);
    EXECUTE format('SET LOCAL densemem.actor = %L', p_actor);
    EXECUTE format('SET LOCAL densemem.binding = %L', p_binding);
END
$$`

const dueTeamsPLpgSQL = `CREATE OR REPLACE FUNCTION densemem_teams_with_due_cases(p_now timestamptz) RETURNS SETOF text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN QUERY SELECT DISTINCT c.team_id FROM conflict_cases c
        WHERE c.status IN ('open', 'overdue') AND c.next_review_at <= p_now
        ORDER BY c.team_id;
END
$$`

// dueTeamsSQL is migration 9's text of the function, restored by the down migration.
const dueTeamsSQL = `CREATE OR REPLACE FUNCTION densemem_teams_with_due_cases(p_now timestamptz) RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT DISTINCT team_id FROM conflict_cases
    WHERE status IN ('open', 'overdue') AND next_review_at <= p_now
    ORDER BY team_id
$$`

const checkDeferredSQL = `CREATE FUNCTION densemem_check_deferred(p_team text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        SET CONSTRAINTS ALL IMMEDIATE;
    END IF;
END
$$`

// eraseFragments is densemem_erase_fragments' signature.
const eraseFragments = "densemem_erase_fragments(text, text, text, text, text, text, text, text[], timestamptz)"

const eraseFragmentsSQL = `CREATE FUNCTION densemem_erase_fragments(p_team text, p_erasure text, p_actor_kind text,
    p_actor_profile text, p_reason text, p_key text, p_hash text, p_fragments text[], p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    v_out jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(to_jsonb(e) ORDER BY e.fragment_id), '[]'::jsonb) INTO v_out
    FROM densemem_erase(p_team, p_erasure, p_actor_kind, p_actor_profile, p_reason, p_key, p_hash, p_fragments, p_now) e;
    RETURN v_out;
END
$$`
