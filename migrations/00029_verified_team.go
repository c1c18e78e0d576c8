package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 29 makes the binding check of row-level security cheaper (issue 22 item 2, decision 242).
// Migration 25's policies verified the binding in every table reference of every statement: the
// bound_team view's InitPlan scanned binding_keys and computed the HMAC, 30 references per Remember
// and per Recall. Now the binding is verified once per transaction and remembered where the runtime
// and reviewer roles cannot write:
//
//   - binding_seed, a sequence only the owner may read, holds a random positive number S (set by
//     this migration, drawn again by RotateBindingKey). It is a secret like the binding keys: the
//     name of the setting below is made of it.
//   - densemem_verified_team(), SECURITY DEFINER: verifies the binding (densemem_bound_team(), the
//     HMAC check, which raises when the binding does not verify), records the transaction's team and
//     actor in the setting densemem.b<S>, local to the transaction (so a later transaction of the
//     session, a rolled-back savepoint or RESET ALL finds nothing and verifies again), and returns
//     the team. The pair is spelt with the team's length first, so no two pairs give one string.
//   - The view verified_team, which every team policy reads in an InitPlan: the team when
//     densemem.b<S> holds the transaction's team and actor (the view reads S with its owner's
//     privileges and exposes only the team), else densemem_verified_team(). A role that does not
//     know S cannot name that setting, and PostgreSQL lists no placeholder setting (pg_settings and
//     SHOW ALL leave them out), so the only way to it is to guess S, one statement per guess.
//     Changing densemem.team or densemem.actor after the check makes the pair differ, and the next
//     reference verifies again (and raises).
//
// On a Citus cluster Distribute replaces these policies by its own forms, which call
// densemem_bound_team() (decision 205); the view and the function are not used there.
func verifiedTeamMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(29,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.verifiedTeamUp() })
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.verifiedTeamDown() })
		}})
}

// verifiedTeamSQL is densemem_verified_team() and the view verified_team; %[1]s is the schema.
const verifiedTeamSQL = `CREATE FUNCTION %[1]s.densemem_verified_team() RETURNS text
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SECURITY DEFINER SET search_path = %[1]s, pg_temp AS $$
DECLARE
    t text := %[1]s.densemem_bound_team();
BEGIN
    IF t IS NOT NULL THEN
        PERFORM set_config('densemem.b' || (SELECT last_value FROM %[1]s.binding_seed),
            length(t) || ':' || t || ':' || COALESCE(current_setting('densemem.actor', true), ''), true);
    END IF;
    RETURN t;
END
$$`

// verifiedTeamViewSQL is the view the team policies read (every operator named with its schema, as
// in migration 25's view; parenthesised, since OPERATOR() binds all alike).
const verifiedTeamViewSQL = `CREATE VIEW %[1]s.verified_team WITH (security_barrier) AS
SELECT CASE WHEN pg_catalog.current_setting('densemem.b' OPERATOR(pg_catalog.||) k.last_value, true) OPERATOR(pg_catalog.=)
                 (pg_catalog.length(s.t) OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) s.t OPERATOR(pg_catalog.||) ':'
                  OPERATOR(pg_catalog.||) COALESCE(pg_catalog.current_setting('densemem.actor', true), ''))
            THEN s.t ELSE %[1]s.densemem_verified_team() END AS team_id
FROM %[1]s.binding_seed k, (SELECT pg_catalog.current_setting('densemem.team', true) AS t) s`

func (m *rolesRun) verifiedTeamUp() error {
	s := m.schema
	if err := m.execAll(
		"CREATE SEQUENCE binding_seed AS bigint MINVALUE 1 NO CYCLE",
		fmt.Sprintf("ALTER SEQUENCE binding_seed OWNER TO %s", m.owner),
		fmt.Sprintf("REVOKE ALL ON SEQUENCE binding_seed FROM PUBLIC, %s, %s", m.runtime, m.reviewer),
		fmt.Sprintf(verifiedTeamSQL, s),
		fmt.Sprintf("ALTER FUNCTION %s.densemem_verified_team() OWNER TO %s", s, m.owner),
		fmt.Sprintf("REVOKE ALL ON FUNCTION %s.densemem_verified_team() FROM PUBLIC", s),
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION %s.densemem_verified_team() TO %s, %s", s, m.runtime, m.reviewer),
		fmt.Sprintf(verifiedTeamViewSQL, s),
		fmt.Sprintf("ALTER VIEW %s.verified_team OWNER TO %s", s, m.owner),
		fmt.Sprintf("REVOKE ALL ON %s.verified_team FROM PUBLIC", s),
		fmt.Sprintf("GRANT SELECT ON %s.verified_team TO %s, %s", s, m.runtime, m.reviewer),
	); err != nil {
		return err
	}
	if err := reseedBinding(m.ctx, m.tx, s); err != nil {
		return err
	}
	return m.rewritePolicies(fmt.Sprintf("(team_id = (SELECT v.team_id FROM %s.verified_team v))", s))
}

func (m *rolesRun) verifiedTeamDown() error {
	if err := m.rewritePolicies(fmt.Sprintf("(team_id = (SELECT b.team_id FROM %s.bound_team b))", m.schema)); err != nil {
		return err
	}
	return m.execAll(fmt.Sprintf("DROP VIEW %s.verified_team", m.schema),
		fmt.Sprintf("DROP FUNCTION %s.densemem_verified_team()", m.schema), "DROP SEQUENCE binding_seed")
}

// reseedBinding draws the binding seed of migration 29 anew (a random positive 63-bit number) in
// schema (a quoted identifier), when the schema has one: the setting a transaction's verified team
// is recorded in changes its name, and a transaction that verified before verifies once more.
func reseedBinding(ctx context.Context, tx execer, schema string) error {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	seed := int64(binary.BigEndian.Uint64(b[:])>>1) | 1
	_, err := tx.ExecContext(ctx, fmt.Sprintf(`SELECT pg_catalog.setval(s, $1) FROM pg_catalog.to_regclass(%s) s WHERE s IS NOT NULL`,
		literal(schema+".binding_seed")), seed)
	return err
}
