package migrations

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
)

// Migration 25 makes the database boundary hold against the library's own runtime and reviewer
// credentials (issue 22).
//
//   - No function can be redirected: every function of the schema runs with search_path
//     "<schema>, pg_temp" (pg_temp last, so a session's temporary table never shadows a table of the
//     schema), and the text arguments of its privilege checks name the schema.
//   - The team is bound, not claimed: binding_keys holds the HMAC keys only the owner may read;
//     densemem_bound_team(), SECURITY DEFINER, returns densemem.team only when densemem.binding is
//     the HMAC-SHA256 of "<team>:<actor>:<backend pid>" under one of them, the actor being
//     densemem.actor (store.WithActor; densemem_bound_actor() returns it, and migration 26's checks
//     use it), or when the session's login role is the
//     owner or a superuser, who see every row anyway), and refuses the transaction otherwise.
//     Row-level security and every SECURITY DEFINER function that checked densemem.team use it.
//     The store computes the binding with the key the host holds (postgres.Options.BindingKey) and
//     sends it in the batch that already opens each transaction. The migration creates a random key;
//     BindingKey reads it and RotateBindingKey adds another (decision 174).
func databaseBoundaryMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(25,
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.databaseBoundaryUp() })
		}},
		&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			return withRoles(ctx, tx, r, true, func(m *rolesRun) error { return m.databaseBoundaryDown() })
		}})
}

// teamSettingPattern matches the raw team setting the functions of migrations 9 to 23 trusted.
var teamSettingPattern = regexp.MustCompile(`current_setting\('densemem\.team'(::text)?, true\)`)

// privilegeCheckPattern matches a privilege check whose relation is named without its schema.
var privilegeCheckPattern = regexp.MustCompile(`(has_(?:table|column)_privilege\()'([a-z_]+)'`)

func (m *rolesRun) databaseBoundaryUp() error {
	s := m.schema
	if err := m.execAll(
		`CREATE TABLE binding_keys (
    key_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    secret     bytea       NOT NULL CHECK (length(secret) BETWEEN 16 AND 64),
    inner_pad  bytea       NOT NULL CHECK (length(inner_pad) = 64),
    outer_pad  bytea       NOT NULL CHECK (length(outer_pad) = 64),
    created_at timestamptz NOT NULL DEFAULT now()
)`,
		fmt.Sprintf("ALTER TABLE binding_keys OWNER TO %s", m.owner),
		fmt.Sprintf("REVOKE ALL ON binding_keys FROM PUBLIC, %s, %s", m.runtime, m.reviewer),
		fmt.Sprintf(`CREATE FUNCTION densemem_bound_team() RETURNS text
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SECURITY DEFINER SET search_path = %[1]s, pg_temp AS $$
DECLARE
    t text := current_setting('densemem.team', true);
BEGIN
    IF t IS NULL OR t = '' THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM %[1]s.binding_keys k
               WHERE encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(t || ':' || COALESCE(current_setting('densemem.actor', true), '') || ':' || pg_backend_pid(), 'UTF8'))), 'hex')
                     = current_setting('densemem.binding', true))
       OR pg_has_role(session_user, %[2]s, 'MEMBER') THEN
        RETURN t;
    END IF;
    RAISE EXCEPTION 'densemem: team %% is not bound to this transaction', t
        USING ERRCODE = '42501', HINT = 'The store needs the binding key the database holds (postgres.Options.BindingKey, --binding-key; docs/deployment.md).';
END;
$$`, s, literal(m.r.Owner)),
		fmt.Sprintf("ALTER FUNCTION densemem_bound_team() OWNER TO %s", m.owner),
		"REVOKE ALL ON FUNCTION densemem_bound_team() FROM PUBLIC",
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION densemem_bound_team() TO %s, %s", m.runtime, m.reviewer),
		// The actor the binding names with the team (store.WithActor): '' for the owner and
		// superusers and for a transaction bound to its team only, NULL without a team; raises as
		// densemem_bound_team does when the binding does not verify.
		fmt.Sprintf(`CREATE FUNCTION densemem_bound_actor() RETURNS text
LANGUAGE plpgsql STABLE PARALLEL RESTRICTED SECURITY DEFINER SET search_path = %[1]s, pg_temp AS $$
BEGIN
    IF %[1]s.densemem_bound_team() IS NULL THEN
        RETURN NULL;
    END IF;
    IF pg_has_role(session_user, %[2]s, 'MEMBER') THEN
        RETURN '';
    END IF;
    RETURN COALESCE(current_setting('densemem.actor', true), '');
END;
$$`, s, literal(m.r.Owner)),
		fmt.Sprintf("ALTER FUNCTION densemem_bound_actor() OWNER TO %s", m.owner),
		"REVOKE ALL ON FUNCTION densemem_bound_actor() FROM PUBLIC",
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION densemem_bound_actor() TO %s, %s", m.runtime, m.reviewer),
	); err != nil {
		return err
	}
	if _, err := addBindingKey(m.ctx, m.tx, nil); err != nil {
		return err
	}
	// The row-level checks that run after their row passed row-level security (AFTER triggers: their
	// reads are keyed by the row's team) run as the owner, so a statement writing n rows does not
	// verify the binding n more times.
	for _, f := range afterRowChecks {
		if err := m.exec(`DO $$ BEGIN
			IF to_regprocedure(%[1]s) IS NOT NULL THEN EXECUTE format('ALTER FUNCTION %%s SECURITY DEFINER', %[1]s); END IF;
			END $$`, literal(f)); err != nil {
			return err
		}
	}
	// The view policies read the bound team through: the same check as densemem_bound_team(), but
	// planned into each statement's InitPlan rather than called (no function call, no SPI query:
	// about half the cost per statement and table, issue 22's cost bound). It runs with its owner's
	// privileges, so it reads binding_keys for a role that may not; it exposes only the team. Only a
	// binding that does not verify calls densemem_bound_team(), which raises.
	if err := m.execAll(fmt.Sprintf(`CREATE VIEW %[1]s.bound_team WITH (security_barrier) AS
SELECT CASE WHEN s.t IS NULL OR s.t OPERATOR(pg_catalog.=) '' THEN NULL
            WHEN EXISTS (SELECT 1 FROM %[1]s.binding_keys k
                WHERE pg_catalog.encode(pg_catalog.sha256(k.outer_pad OPERATOR(pg_catalog.||) pg_catalog.sha256(k.inner_pad
                        OPERATOR(pg_catalog.||) pg_catalog.convert_to(s.t OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||)
                        COALESCE(pg_catalog.current_setting('densemem.actor', true), '') OPERATOR(pg_catalog.||) ':'
                        OPERATOR(pg_catalog.||) pg_catalog.pg_backend_pid(), 'UTF8'))), 'hex')
                      OPERATOR(pg_catalog.=) pg_catalog.current_setting('densemem.binding', true))
              OR pg_catalog.pg_has_role(session_user, %[2]s, 'MEMBER') THEN s.t
            ELSE %[1]s.densemem_bound_team() END AS team_id
FROM (SELECT pg_catalog.current_setting('densemem.team', true) AS t) s`, s, literal(m.r.Owner)),
		fmt.Sprintf("ALTER VIEW %s.bound_team OWNER TO %s", s, m.owner),
		fmt.Sprintf("REVOKE ALL ON %s.bound_team FROM PUBLIC", s),
		fmt.Sprintf("GRANT SELECT ON %s.bound_team TO %s, %s", s, m.runtime, m.reviewer)); err != nil {
		return err
	}
	// Every team policy admits the bound team only.
	if err := m.rewritePolicies(fmt.Sprintf("(team_id = (SELECT b.team_id FROM %s.bound_team b))", s)); err != nil {
		return err
	}
	// Every function: the bound team instead of the setting, the schema in its privilege checks,
	// pg_temp last.
	if err := m.rewriteFunctions(func(fn, def string) string {
		if strings.HasPrefix(fn, "densemem_bound_team(") || strings.HasPrefix(fn, "densemem_bound_actor(") {
			return def
		}
		def = teamSettingPattern.ReplaceAllString(def, s+".densemem_bound_team()")
		return privilegeCheckPattern.ReplaceAllString(def, "${1}'"+unquote(s)+".${2}'")
	}, s+", pg_temp"); err != nil {
		return err
	}
	// The search function disables scan and join kinds; a plan it cannot make without one (the
	// binding check's scan of binding_keys, called from inside it) is costed past jit_above_cost,
	// and compiling it took 120 ms per call. Nothing it runs is long enough for JIT to pay.
	return m.exec("ALTER FUNCTION densemem_search_hits SET jit = off")
}

// afterRowChecks are the functions of AFTER row triggers that read tables by their row's keys
// (none asks which role runs it).
var afterRowChecks = []string{"densemem_relationship_has_transition()", "densemem_transition_has_relationship()",
	"densemem_case_event_has_case()", "densemem_postings_insert()", "densemem_postings_update()"}

func (m *rolesRun) databaseBoundaryDown() error {
	for _, f := range afterRowChecks {
		if err := m.exec("ALTER FUNCTION %s SECURITY INVOKER", f); err != nil {
			return err
		}
	}
	if err := m.rewritePolicies("(team_id = current_setting('densemem.team', true))"); err != nil {
		return err
	}
	bound := regexp.MustCompile(regexp.QuoteMeta(m.schema) + `\.densemem_bound_team\(\)`)
	if err := m.rewriteFunctions(func(_, def string) string {
		return bound.ReplaceAllString(def, "current_setting('densemem.team', true)")
	}, m.schema); err != nil {
		return err
	}
	return m.execAll("DROP VIEW bound_team", "DROP FUNCTION densemem_bound_actor()", "DROP FUNCTION densemem_bound_team()",
		"DROP TABLE binding_keys")
}

// rewritePolicies sets every team_isolation policy of the schema to check expr.
func (m *rolesRun) rewritePolicies(expr string) error {
	rows, err := m.tx.QueryContext(m.ctx, `SELECT tablename::text FROM pg_policies
		WHERE schemaname = current_schema() AND policyname = 'team_isolation' ORDER BY 1`)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := m.exec("ALTER POLICY team_isolation ON %s USING %s WITH CHECK %s", ident(t), expr, expr); err != nil {
			return err
		}
	}
	return nil
}

// rewriteFunctions replaces each function of the schema (not an extension's) whose definition fix
// changes, and pins every function's search_path to path.
func (m *rolesRun) rewriteFunctions(fix func(fn, def string) string, path string) error {
	rows, err := m.tx.QueryContext(m.ctx, `SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p
		WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind = 'f'
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e') ORDER BY 1`)
	if err != nil {
		return err
	}
	var fns, defs []string
	for rows.Next() {
		var f, def string
		if err := rows.Scan(&f, &def); err != nil {
			rows.Close()
			return err
		}
		fns, defs = append(fns, f), append(defs, def)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i, f := range fns {
		if fixed := fix(f, defs[i]); fixed != defs[i] {
			if _, err := m.tx.ExecContext(m.ctx, fixed); err != nil {
				return fmt.Errorf("replace %s: %w", f, err)
			}
		}
		if err := m.exec("ALTER FUNCTION %s SET search_path = %s", f, path); err != nil {
			return err
		}
	}
	return nil
}

// ConnParams returns the session settings the runtime and reviewer roles' connections must start
// with, as connection parameters (which override role and database defaults, and which a role may
// set on itself with ALTER ROLE ... SET): row-level security on, since a statement on a table with a
// policy is refused when it is prepared with it off, before the transaction's own settings apply;
// read-write sessions; and no lock or idle-in-transaction timeout (each transaction pins them again,
// with its statement timeout). postgres.Open and postgres.PinConnParams set them.
func ConnParams() map[string]string {
	return map[string]string{"row_security": "on", "default_transaction_read_only": "off", "lock_timeout": "0",
		"idle_in_transaction_session_timeout": "0"}
}

// execer is a *sql.Tx or anything else that runs a statement.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// addBindingKey stores key (a new random 32-byte key when nil) as a binding key, keeping the newest
// one before it valid too (so hosts move to the new key one by one), and returns it.
func addBindingKey(ctx context.Context, tx execer, key []byte) ([]byte, error) {
	if key == nil {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) < 16 || len(key) > 64 {
		return nil, fmt.Errorf("densemem migrations: a binding key must be 16 to 64 bytes, not %d", len(key))
	}
	inner, outer := make([]byte, 64), make([]byte, 64)
	for i := range inner {
		var b byte
		if i < len(key) {
			b = key[i]
		}
		inner[i], outer[i] = b^0x36, b^0x5c
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO binding_keys (secret, inner_pad, outer_pad) VALUES ($1, $2, $3)`,
		key, inner, outer); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM binding_keys WHERE key_id NOT IN
		(SELECT key_id FROM binding_keys ORDER BY key_id DESC LIMIT 2)`); err != nil {
		return nil, err
	}
	return key, nil
}

// BindingKey returns the newest binding key of the schema (migration 25): the key the host gives
// its stores (postgres.Options.BindingKey) so the database admits the teams their transactions
// name. pool must connect as the owner role or a superuser: the runtime and reviewer roles cannot
// read it.
func BindingKey(ctx context.Context, pool *pgxpool.Pool, opts *Options) ([]byte, error) {
	schema, err := opts.schema()
	if err != nil {
		return nil, err
	}
	var key []byte
	err = pool.QueryRow(ctx, fmt.Sprintf("SELECT secret FROM %s.binding_keys ORDER BY key_id DESC LIMIT 1", ident(schema))).Scan(&key)
	if err != nil {
		return nil, fmt.Errorf("densemem migrations: read the binding key (as the owner role or a superuser, schema at migration 25 or later): %w", err)
	}
	return key, nil
}

// RotateBindingKey adds key (a new random 32-byte key when nil) as the newest binding key and
// returns it. The key before it stays valid, so hosts can move to the new one at their pace; the
// ones before that stop binding at once. pool must connect as the owner role or a superuser.
func RotateBindingKey(ctx context.Context, pool *pgxpool.Pool, opts *Options, key []byte) ([]byte, error) {
	schema, err := opts.schema()
	if err != nil {
		return nil, err
	}
	if key != nil && (len(key) < 16 || len(key) > 64) {
		return nil, fmt.Errorf("densemem migrations: a binding key must be 16 to 64 bytes, not %d", len(key))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT set_config('search_path', $1, true)", ident(schema)); err != nil {
		return nil, err
	}
	key, err = addBindingKey(ctx, pgxExecer{tx}, key)
	if err != nil {
		return nil, fmt.Errorf("densemem migrations: rotate the binding key (as the owner role or a superuser): %w", err)
	}
	// The seed of migration 29 is a secret as the keys are: a rotation draws it anew too.
	if err := reseedBinding(ctx, pgxExecer{tx}, ident(schema)); err != nil {
		return nil, fmt.Errorf("densemem migrations: rotate the binding seed: %w", err)
	}
	return key, tx.Commit(ctx)
}

// RetireBindingKeys removes every binding key but the newest: the ones before it stop binding at
// once (after a rotation, once every host holds the new key, or at once when a key leaked). pool
// must connect as the owner role or a superuser.
func RetireBindingKeys(ctx context.Context, pool *pgxpool.Pool, opts *Options) error {
	schema, err := opts.schema()
	if err != nil {
		return err
	}
	q := fmt.Sprintf(`DELETE FROM %[1]s.binding_keys WHERE key_id <> (SELECT max(key_id) FROM %[1]s.binding_keys)`, ident(schema))
	if _, err := pool.Exec(ctx, q); err != nil {
		return fmt.Errorf("densemem migrations: retire the old binding keys (as the owner role or a superuser): %w", err)
	}
	return nil
}

// pgxExecer runs statements on a pgx transaction for addBindingKey.
type pgxExecer struct{ tx pgx.Tx }

func (e pgxExecer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	_, err := e.tx.Exec(ctx, query, args...)
	return nil, err
}
