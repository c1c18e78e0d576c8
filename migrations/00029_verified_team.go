package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"

	"github.com/pressly/goose/v3"
)

// Migration 29 makes the binding check of row-level security cheap (issue 22 item 2, decision 242).
// Migration 25's policies verified the binding in every table reference of every statement: the
// bound_team view's InitPlan scanned binding_keys and computed the HMAC, about 15 µs of the
// server's time per reference, 30 references per Remember and per Recall, which cost the calls a
// quarter of their time. Now each team policy reads the team from densemem_verified_team(), which
// verifies the binding once per transaction and remembers that it did where the runtime and reviewer
// roles cannot write:
//
//   - binding_seed, a sequence only the owner may read, holds a random positive number S (set by
//     this migration, drawn again by RotateBindingKey). It is a secret like the binding keys: the
//     name of the setting below is made of it.
//   - densemem_verified_team(), SECURITY DEFINER: when the setting densemem.b<S> holds the
//     transaction's team and actor (densemem.team, densemem.actor, spelt with the team's length
//     first so no two pairs give one string), it returns the team; otherwise it calls
//     densemem_bound_team() (the HMAC check, which raises when the binding does not verify) and
//     records the pair in densemem.b<S>, local to the transaction (so a later transaction of the
//     session, a rolled-back savepoint, or RESET ALL finds nothing and verifies again). A role that
//     does not know S cannot name that setting, and PostgreSQL lists no placeholder setting
//     (pg_settings and SHOW ALL leave them out), so the only way to it is to guess S: each guess is
//     one statement. Changing densemem.team or densemem.actor after the check makes the pair differ,
//     and the next reference verifies the binding again (and raises).
//   - The function runs without a SET clause (a SET clause saves and restores the setting at each
//     call, a third of its cost): every name in it is qualified, so no search_path (and no temporary
//     object) can redirect it.
//
// On a Citus cluster Distribute replaces these policies by its own forms, which call
// densemem_bound_team() (decision 205); this function is not used there.
func verifiedTeamMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(29,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.verifiedTeamUp() })
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.verifiedTeamDown() })
		}})
}

// verifiedTeamSQL is densemem_verified_team(); %[1]s is the schema, %[2]s the literal of the seed's
// qualified name.
const verifiedTeamSQL = `CREATE FUNCTION %[1]s.densemem_verified_team() RETURNS pg_catalog.text
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SECURITY DEFINER AS $$
DECLARE
    t pg_catalog.text := pg_catalog.current_setting('densemem.team', true);
    k pg_catalog.text;
    v pg_catalog.text;
BEGIN
    IF t IS NULL OR t OPERATOR(pg_catalog.=) '' THEN
        RETURN NULL;
    END IF;
    k := 'densemem.b' OPERATOR(pg_catalog.||) pg_catalog.pg_sequence_last_value(%[2]s::pg_catalog.regclass);
    v := pg_catalog.length(t) OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) t OPERATOR(pg_catalog.||) ':'
        OPERATOR(pg_catalog.||) COALESCE(pg_catalog.current_setting('densemem.actor', true), '');
    IF pg_catalog.current_setting(k, true) OPERATOR(pg_catalog.=) v THEN
        RETURN t;
    END IF;
    t := %[1]s.densemem_bound_team();
    PERFORM pg_catalog.set_config(k, v, true);
    RETURN t;
END
$$`

func (m *rolesRun) verifiedTeamUp() error {
	s := m.schema
	seed := literal(s + ".binding_seed")
	if err := m.execAll(
		"CREATE SEQUENCE binding_seed AS bigint MINVALUE 1 NO CYCLE",
		fmt.Sprintf("ALTER SEQUENCE binding_seed OWNER TO %s", m.owner),
		fmt.Sprintf("REVOKE ALL ON SEQUENCE binding_seed FROM PUBLIC, %s, %s", m.runtime, m.reviewer),
		fmt.Sprintf(verifiedTeamSQL, s, seed),
		fmt.Sprintf("ALTER FUNCTION %s.densemem_verified_team() OWNER TO %s", s, m.owner),
		fmt.Sprintf("REVOKE ALL ON FUNCTION %s.densemem_verified_team() FROM PUBLIC", s),
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION %s.densemem_verified_team() TO %s, %s", s, m.runtime, m.reviewer),
	); err != nil {
		return err
	}
	if err := reseedBinding(m.ctx, m.tx, s); err != nil {
		return err
	}
	return m.rewritePolicies(fmt.Sprintf("(team_id = (SELECT %s.densemem_verified_team()))", s))
}

func (m *rolesRun) verifiedTeamDown() error {
	if err := m.rewritePolicies(fmt.Sprintf("(team_id = (SELECT b.team_id FROM %s.bound_team b))", m.schema)); err != nil {
		return err
	}
	return m.execAll(fmt.Sprintf("DROP FUNCTION %s.densemem_verified_team()", m.schema), "DROP SEQUENCE binding_seed")
}

// reseedBinding draws the binding seed of migration 29 anew (a random positive 63-bit number) in
// schema (a quoted identifier), when the schema has one: the setting a transaction's verified team is recorded in changes its name,
// and a transaction that verified before verifies once more.
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
