package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
)

// Migration 9 makes least privilege a property of the database, not of the library's good manners.
//
//   - Three roles: the owner owns every object and runs later migrations; the runtime role is what the
//     library connects as for profile calls; the reviewer role is what the nightly Conflict reviewer
//     connects as. The migration creates them when they are missing and its own role may create
//     roles, and else requires them to exist (docs/deployment.md).
//   - Privileges by table: the runtime and reviewer roles may SELECT and INSERT what they write and
//     UPDATE only the columns of current-state rows they change; nobody but the owner may UPDATE or
//     DELETE a ledger, disable or drop a trigger, or TRUNCATE.
//   - Row-level security, enabled and forced, on every table: the runtime and reviewer roles see and
//     write only the rows of the team their transaction named in densemem.team, which the store sets
//     in the batch that opens each transaction. The owner's policy admits every row.
//   - The reviewer fence is a privilege boundary: "may act as the reviewer" is "holds UPDATE on
//     conflict_cases.resolved_at", which only the reviewer and the owner do. Only such a role may
//     resolve a case or mark it overdue, or record a transition or case event with the reviewer as
//     actor; a role that may not INSERT relationships (the reviewer) may only supersede active ones.
//     The densemem.actor session setting and its triggers are gone.
//   - Every case event must be matched by its case row at commit (a deferred check, as transitions
//     are), so an event cannot be forged without a real case change.
//   - Reads whose index conditions PostgreSQL will not evaluate before a policy (full-text @@, array
//     @>: not leakproof) go through SECURITY DEFINER functions owned by the owner, which check the
//     same densemem.team setting themselves; so does the cross-team list of teams with due cases,
//     executable by the reviewer alone.

// Roles names the three roles migration 9 sets up. Zero fields take the defaults.
type Roles struct {
	// Owner owns the schema and every object, and runs the migrations after this one
	// (default "densemem_owner", created NOLOGIN).
	Owner string
	// Runtime is the role the library connects as for profile calls (default "densemem_runtime",
	// created LOGIN without a password).
	Runtime string
	// Reviewer is the role RunNightlyReview connects as (default "densemem_reviewer", created LOGIN
	// without a password).
	Reviewer string
}

// Default role names.
const (
	DefaultOwnerRole    = "densemem_owner"
	DefaultRuntimeRole  = "densemem_runtime"
	DefaultReviewerRole = "densemem_reviewer"
)

func (r Roles) withDefaults() (Roles, error) {
	if r.Owner == "" {
		r.Owner = DefaultOwnerRole
	}
	if r.Runtime == "" {
		r.Runtime = DefaultRuntimeRole
	}
	if r.Reviewer == "" {
		r.Reviewer = DefaultReviewerRole
	}
	for _, n := range []string{r.Owner, r.Runtime, r.Reviewer} {
		if !schemaPattern.MatchString(n) || strings.HasPrefix(n, "pg_") {
			return r, fmt.Errorf("densemem migrations: role %q must match %s and not start with pg_", n, schemaPattern)
		}
	}
	if r.Owner == r.Runtime || r.Owner == r.Reviewer || r.Runtime == r.Reviewer {
		return r, fmt.Errorf("densemem migrations: the owner, runtime and reviewer roles must be three roles")
	}
	return r, nil
}

// tablePrivileges are the privileges of the runtime and reviewer roles on each table. Every table
// of the schema must be listed: a table without an entry fails the migration.
var tablePrivileges = []struct {
	table, runtime, reviewer string
}{
	{"teams", "SELECT, INSERT", "SELECT"},
	{"profiles", "SELECT, INSERT, UPDATE (status, updated_at)", "SELECT"},
	{"team_policies", "SELECT, INSERT", "SELECT"},
	{"predicate_definitions", "SELECT, INSERT", "SELECT"},
	{"entities", "SELECT, INSERT", "SELECT"},
	{"entity_names", "SELECT, INSERT", "SELECT"},
	{"literal_values", "SELECT, INSERT", "SELECT"},
	{"evidence_fragments", "SELECT, INSERT", "SELECT"},
	{"fragment_contents", "SELECT, INSERT", "SELECT"},
	{"observations", "SELECT, INSERT", "SELECT"},
	{"verification_events", "SELECT, INSERT", "SELECT"},
	{"entity_resolution_events", "SELECT, INSERT", "SELECT"},
	{"relationships", "SELECT, INSERT, UPDATE (status, tier, valid_to, version, updated_at)",
		"SELECT, UPDATE (status, tier, valid_to, version, updated_at)"},
	{"support_links", "SELECT, INSERT", "SELECT"},
	{"relationship_transitions", "SELECT, INSERT", "SELECT, INSERT"},
	{"idempotency_records", "SELECT, INSERT", "SELECT"},
	{"review_items", "SELECT, INSERT, UPDATE (status, resolved_at)", "SELECT"},
	{"search_refresh_queue", "SELECT, INSERT, DELETE", "SELECT, INSERT"},
	{"relationship_cross_references", "SELECT, INSERT", "SELECT"},
	{"conflict_cases", "SELECT, INSERT, UPDATE (status, version, updated_at)",
		"SELECT, UPDATE (status, version, next_review_at, claim_token, lease_expires_at, review_attempts, " +
			"last_evaluated_at, resolved_at, effective_at, effective_time_basis, preferred_position_id, attempts_date, " +
			"escalated_date, updated_at)"},
	{"conflict_positions", "SELECT, INSERT", "SELECT, INSERT"},
	{"conflict_position_members", "SELECT, INSERT, UPDATE (removed_version)", "SELECT, INSERT, UPDATE (removed_version)"},
	{"conflict_events", "SELECT, INSERT", "SELECT, INSERT"},
	{"nightly_runs", "SELECT", "SELECT, INSERT"},
	{"entity_name_collisions", "SELECT", "SELECT"},
}

// rolesMigration returns migration 9 for these roles.
func rolesMigration(r Roles) *goose.Migration {
	return goose.NewGoMigration(9, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		return rolesUp(ctx, tx, r)
	}}, nil)
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// rolesUp runs migration 9 in tx for roles r (with their defaults).
func rolesUp(ctx context.Context, tx *sql.Tx, r Roles) error {
	// 1. Quote the schema and the roles.
	m, err := newRolesRun(ctx, tx, r)
	if err != nil {
		return err
	}
	// 2. The roles exist, and the migrating role may hand objects to the owner.
	if err := ensureRoles(ctx, tx, r); err != nil {
		return err
	}
	if err := m.joinOwner(); err != nil {
		return err
	}
	// 3. The reviewer fence becomes a privilege boundary; the session-setting triggers go.
	if err := m.fence(); err != nil {
		return err
	}
	// 4. The owner owns the schema and everything in it.
	owned, err := m.takeOwnership()
	if err != nil {
		return err
	}
	// 5. The privileges of the schema, its functions, sequences, version table and graph view.
	if err := m.grantSchema(owned); err != nil {
		return err
	}
	// 6. The privileges and row-level security of every table.
	return m.grantTables(owned)
}

// rolesRun is one run of migration 9: its transaction and the quoted names it grants to.
type rolesRun struct {
	ctx context.Context
	tx  *sql.Tx
	r   Roles
	// schema, owner, runtime and reviewer are the migration's schema and the roles, quoted.
	schema, owner, runtime, reviewer string
}

// ownedObject is one object of the schema the owner takes: its kind (TABLE, VIEW, FUNCTION) and its
// name (a FUNCTION's as regprocedure text, ready to use; a relation's bare).
type ownedObject [2]string

// newRolesRun reads the current schema and quotes it and the roles.
func newRolesRun(ctx context.Context, tx *sql.Tx, r Roles) (*rolesRun, error) {
	var schema string
	if err := tx.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, err
	}
	return &rolesRun{ctx: ctx, tx: tx, r: r, schema: ident(schema), owner: ident(r.Owner), runtime: ident(r.Runtime),
		reviewer: ident(r.Reviewer)}, nil
}

// withRoles runs fn with a rolesRun of roles r (with their defaults) in tx: the shape of a Go
// migration that grants to the configurable roles. With join, the migrating role first joins the
// owner (joinOwner), so fn may hand the owner what it creates.
func withRoles(ctx context.Context, tx *sql.Tx, r Roles, join bool, fn func(m *rolesRun) error) error {
	r, err := r.withDefaults()
	if err != nil {
		return err
	}
	m, err := newRolesRun(ctx, tx, r)
	if err != nil {
		return err
	}
	if join {
		if err := m.joinOwner(); err != nil {
			return err
		}
	}
	return fn(m)
}

// exec runs the statement fmt.Sprintf(format, args...); an error names the statement's first line.
func (m *rolesRun) exec(format string, args ...any) error {
	q := fmt.Sprintf(format, args...)
	if _, err := m.tx.ExecContext(m.ctx, q); err != nil {
		return fmt.Errorf("%s: %w", firstLine(q), err)
	}
	return nil
}

// execAll runs statements in order, as exec does, and stops at the first that fails.
func (m *rolesRun) execAll(qs ...string) error {
	for _, q := range qs {
		if err := m.exec("%s", q); err != nil {
			return err
		}
	}
	return nil
}

// joinOwner makes the migrating role able to hand objects to the owner: a member of it, or a
// superuser.
func (m *rolesRun) joinOwner() error {
	return m.exec(`DO $$ BEGIN
		IF NOT pg_has_role(current_user, %s, 'MEMBER') THEN
			EXECUTE format('GRANT %%I TO %%I', %s, current_user);
		END IF; END $$`, literal(m.r.Owner), literal(m.r.Owner))
}

// fence drops the session-setting triggers of the reviewer fence and their function, and creates the
// privilege-based fence (fenceSQL).
func (m *rolesRun) fence() error {
	for _, t := range []string{"evidence_fragments", "fragment_contents", "observations", "verification_events",
		"support_links", "relationship_cross_references", "entities", "entity_names", "entity_resolution_events",
		"literal_values", "idempotency_records", "review_items", "predicate_definitions", "profiles", "team_policies"} {
		if err := m.exec("DROP TRIGGER IF EXISTS %s ON %s", ident(t+"_not_reviewer"), ident(t)); err != nil {
			return err
		}
	}
	if err := m.exec("DROP FUNCTION IF EXISTS densemem_refuse_reviewer()"); err != nil {
		return err
	}
	return m.execAll(fenceSQL...)
}

// takeOwnership hands the schema and every object in it to the owner, and returns the objects.
func (m *rolesRun) takeOwnership() ([]ownedObject, error) {
	if err := m.exec("ALTER SCHEMA %s OWNER TO %s", m.schema, m.owner); err != nil {
		return nil, err
	}
	owned, err := m.schemaObjects()
	if err != nil {
		return nil, err
	}
	for _, o := range owned {
		name := o[1]
		if o[0] != "FUNCTION" {
			name = ident(name)
		}
		if err := m.exec("ALTER %s %s OWNER TO %s", o[0], name, m.owner); err != nil {
			return nil, err
		}
	}
	return owned, nil
}

// schemaObjects lists the tables, views and functions of the schema (not an extension's functions),
// by kind and name.
func (m *rolesRun) schemaObjects() ([]ownedObject, error) {
	rows, err := m.tx.QueryContext(m.ctx, `
		SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.relname::text
		FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'p')
		UNION ALL
		SELECT 'FUNCTION', p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
		ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	var owned []ownedObject
	for rows.Next() {
		var kind, name string
		if err := rows.Scan(&kind, &name); err != nil {
			rows.Close()
			return nil, err
		}
		owned = append(owned, ownedObject{kind, name})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return owned, nil
}

// grantSchema revokes PUBLIC's privileges on the schema and its functions, and grants the runtime
// and reviewer roles the schema, the functions they call, the version table, the sequences and the
// graph view.
func (m *rolesRun) grantSchema(owned []ownedObject) error {
	s, runtime, reviewer := m.schema, m.runtime, m.reviewer
	if err := m.execAll(
		fmt.Sprintf("REVOKE ALL ON SCHEMA %s FROM PUBLIC", s),
		fmt.Sprintf("GRANT USAGE ON SCHEMA %s TO %s, %s", s, runtime, reviewer)); err != nil {
		return err
	}
	for _, o := range owned {
		if o[0] == "FUNCTION" {
			if err := m.exec("REVOKE ALL ON FUNCTION %s FROM PUBLIC", o[1]); err != nil {
				return err
			}
		}
	}
	return m.execAll(
		fmt.Sprintf(`GRANT EXECUTE ON FUNCTION densemem_expect_rows(bigint, bigint, text), densemem_may_review(),
		densemem_search_hits(text, text, timestamptz, bigint),
		densemem_review_items_naming(text, text, timestamptz, text, bigint) TO %s, %s`, runtime, reviewer),
		fmt.Sprintf("GRANT EXECUTE ON FUNCTION densemem_teams_with_due_cases(timestamptz) TO %s", reviewer),
		// Trigger functions run whatever the caller's privileges (triggers do not check EXECUTE).
		fmt.Sprintf("GRANT SELECT ON %s TO %s, %s", ident(versionTable), runtime, reviewer),
		fmt.Sprintf("GRANT USAGE ON ALL SEQUENCES IN SCHEMA %s TO %s, %s", s, runtime, reviewer),
		fmt.Sprintf("GRANT SELECT ON semantic_edges TO %s, %s", runtime, reviewer))
}

// grantTables sets every table's privileges and row-level security from tablePrivileges, then
// fails when a table of the schema is not listed there.
func (m *rolesRun) grantTables(owned []ownedObject) error {
	listed := map[string]bool{}
	for _, p := range tablePrivileges {
		listed[p.table] = true
		if err := m.grantTable(p.table, p.runtime, p.reviewer); err != nil {
			return err
		}
	}
	for _, o := range owned {
		if o[0] == "TABLE" && !listed[o[1]] && o[1] != versionTable {
			return fmt.Errorf("table %s has no privileges in tablePrivileges", o[1])
		}
	}
	return nil
}

// grantTable grants table's privileges (runtime's and reviewer's, as tablePrivileges lists them)
// after revoking everyone else's, and limits the runtime and reviewer roles to the transaction's
// team by row-level security.
func (m *rolesRun) grantTable(table, runtimePrivs, reviewerPrivs string) error {
	t := ident(table)
	if err := m.execAll(
		fmt.Sprintf("REVOKE ALL ON %s FROM PUBLIC, %s, %s", t, m.runtime, m.reviewer),
		fmt.Sprintf("GRANT %s ON %s TO %s", runtimePrivs, t, m.runtime),
		fmt.Sprintf("GRANT %s ON %s TO %s", reviewerPrivs, t, m.reviewer)); err != nil {
		return err
	}
	// Row-level security: the transaction's team only, for everyone but the owner; once migration 25
	// made the bound team (densemem_bound_team), the bound team only.
	// Once migration 29 made the view verified_team, the team verified once per transaction.
	team := "current_setting('densemem.team', true)"
	var bound, verified bool
	if err := m.tx.QueryRowContext(m.ctx, `SELECT to_regprocedure('densemem_bound_team()') IS NOT NULL,
		to_regclass('verified_team') IS NOT NULL`).Scan(&bound, &verified); err != nil {
		return err
	}
	switch {
	case verified:
		team = "(SELECT v.team_id FROM " + m.schema + ".verified_team v)"
	case bound:
		team = "(SELECT " + m.schema + ".densemem_bound_team())"
	}
	for _, q := range []string{
		"ALTER TABLE %[1]s ENABLE ROW LEVEL SECURITY",
		"ALTER TABLE %[1]s FORCE ROW LEVEL SECURITY",
		"DROP POLICY IF EXISTS team_isolation ON %[1]s",
		"DROP POLICY IF EXISTS owner_all ON %[1]s",
		"CREATE POLICY team_isolation ON %[1]s TO %[2]s, %[3]s USING (team_id = %[5]s) WITH CHECK (team_id = %[5]s)",
		"CREATE POLICY owner_all ON %[1]s TO %[4]s USING (true) WITH CHECK (true)",
	} {
		if err := m.exec(q, t, m.runtime, m.reviewer, m.owner, team); err != nil {
			return err
		}
	}
	return nil
}

// ensureRoles creates the missing roles when the migrating role may, else names what to create.
func ensureRoles(ctx context.Context, tx *sql.Tx, r Roles) error {
	var missing []string
	for _, n := range []string{r.Owner, r.Runtime, r.Reviewer} {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", n).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var may bool
	if err := tx.QueryRowContext(ctx, "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user").Scan(&may); err != nil {
		return err
	}
	if !may {
		return fmt.Errorf("roles %s do not exist and %s may not create roles: create them first (docs/deployment.md)",
			strings.Join(missing, ", "), "the migrating role")
	}
	for _, n := range missing {
		login := "LOGIN"
		if n == r.Owner {
			login = "NOLOGIN"
		}
		// Roles are cluster-wide: another database's migration may create the same role meanwhile.
		q := fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s %s; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`,
			ident(n), login)
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create role %s: %w", n, err)
		}
	}
	return nil
}

func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i > 0 {
		return q[:i]
	}
	return q
}

// fenceSQL are the triggers and functions of the privilege-based fence, the case-event check and
// the SECURITY DEFINER reads. Each function's search_path is the schema (the migration's).
var fenceSQL = []string{
	// densemem_may_review: the calling role may act as the reviewer.
	`CREATE OR REPLACE FUNCTION densemem_may_review() RETURNS boolean
LANGUAGE sql STABLE SET search_path FROM CURRENT AS $$
    SELECT has_column_privilege('conflict_cases', 'resolved_at', 'UPDATE')
$$`,
	`CREATE OR REPLACE FUNCTION densemem_reviewer_relationships() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT has_table_privilege('relationships', 'INSERT')
       AND (TG_OP <> 'UPDATE' OR NEW.status <> 'superseded' OR OLD.status <> 'active' OR NEW.tier <> OLD.tier) THEN
        RAISE EXCEPTION 'densemem: the conflict reviewer may only supersede active relationships' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$`,
	`CREATE OR REPLACE FUNCTION densemem_reviewer_transitions() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.actor_kind = 'system_conflict_reviewer' AND NOT densemem_may_review() THEN
        RAISE EXCEPTION 'densemem: only the conflict reviewer may record a transition as the reviewer' USING ERRCODE = 'DM004';
    END IF;
    IF NOT has_table_privilege('relationships', 'INSERT')
       AND (NEW.actor_kind <> 'system_conflict_reviewer' OR NEW.actor_profile_id IS NOT NULL) THEN
        RAISE EXCEPTION 'densemem: reviewer transitions must name the reviewer as actor' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$`,
	// Case events: the reviewer's only by the reviewer, and every event matched by its case at commit.
	`CREATE OR REPLACE FUNCTION densemem_case_event_actor() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.actor_kind = 'system_conflict_reviewer' AND NOT densemem_may_review() THEN
        RAISE EXCEPTION 'densemem: only the conflict reviewer may record a case event as the reviewer' USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$`,
	`DROP TRIGGER IF EXISTS conflict_events_actor ON conflict_events`,
	`CREATE TRIGGER conflict_events_actor BEFORE INSERT ON conflict_events
    FOR EACH ROW EXECUTE FUNCTION densemem_case_event_actor()`,
	`CREATE OR REPLACE FUNCTION densemem_case_event_has_case() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    c conflict_cases%ROWTYPE;
BEGIN
    SELECT * INTO c FROM conflict_cases WHERE team_id = NEW.team_id AND conflict_id = NEW.conflict_id;
    IF NOT FOUND OR c.version < NEW.case_version OR (c.version = NEW.case_version AND c.status <> NEW.resulting_status) THEN
        RAISE EXCEPTION 'densemem: event % of conflict case % has no matching case change', NEW.case_version, NEW.conflict_id
            USING ERRCODE = 'DM002';
    END IF;
    RETURN NULL;
END;
$$`,
	`DROP TRIGGER IF EXISTS conflict_events_match ON conflict_events`,
	`CREATE CONSTRAINT TRIGGER conflict_events_match AFTER INSERT ON conflict_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION densemem_case_event_has_case()`,
	// Only the reviewer resolves a case or marks it overdue.
	`CREATE OR REPLACE FUNCTION densemem_case_status() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    IF NEW.status IN ('resolved', 'overdue') AND NEW.status IS DISTINCT FROM OLD.status AND NOT densemem_may_review() THEN
        RAISE EXCEPTION 'densemem: only the conflict reviewer may make a case %', NEW.status USING ERRCODE = 'DM004';
    END IF;
    RETURN NEW;
END;
$$`,
	`DROP TRIGGER IF EXISTS conflict_cases_status ON conflict_cases`,
	`CREATE TRIGGER conflict_cases_status BEFORE UPDATE ON conflict_cases
    FOR EACH ROW EXECUTE FUNCTION densemem_case_status()`,
	// The graph view reads with the reader's privileges and policies, not its owner's.
	`ALTER VIEW semantic_edges SET (security_invoker = true)`,
	// The teams with due cases: a maintenance read across teams, for the reviewer.
	`CREATE OR REPLACE FUNCTION densemem_teams_with_due_cases(p_now timestamptz) RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT DISTINCT team_id FROM conflict_cases
    WHERE status IN ('open', 'overdue') AND next_review_at <= p_now
    ORDER BY team_id
$$`,
	// Recall's full-text hits: @@ is not leakproof, so under row-level security PostgreSQL would not use
	// it as an index condition; the owner's function searches by index, for the transaction's team only.
	`CREATE OR REPLACE FUNCTION densemem_search_hits(p_team text, p_query text, p_known_at timestamptz, p_limit bigint)
RETURNS TABLE (source text, relationship_id text, score double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    q tsquery := websearch_to_tsquery('english', p_query);
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: search outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY SELECT 'text'::text, s.relationship_id, ts_rank_cd(c.search, q)::float8
        FROM fragment_contents c
        JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
        WHERE c.team_id = p_team AND c.search @@ q AND (p_known_at IS NULL OR s.created_at <= p_known_at)
        LIMIT p_limit;
    RETURN QUERY SELECT 'subject'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        JOIN relationships r ON r.team_id = n.team_id AND r.subject_entity_id = n.entity_id
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
    RETURN QUERY SELECT 'object'::text, r.relationship_id, ts_rank_cd(n.search, q)::float8
        FROM entity_names n
        JOIN relationships r ON r.team_id = n.team_id AND r.object_entity_id = n.entity_id
        WHERE n.team_id = p_team AND n.search @@ q AND (p_known_at IS NULL OR n.created_at <= p_known_at)
        LIMIT p_limit;
END;
$$`,
	// Trace's review items naming a relationship as a related prior: @> is not leakproof either.
	`CREATE OR REPLACE FUNCTION densemem_review_items_naming(p_team text, p_rel text, p_after_at timestamptz, p_after_id text, p_limit bigint)
RETURNS SETOF review_items
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF p_team IS DISTINCT FROM current_setting('densemem.team', true) THEN
        RAISE EXCEPTION 'densemem: read outside the transaction''s team' USING ERRCODE = '42501';
    END IF;
    RETURN QUERY SELECT * FROM review_items
        WHERE team_id = p_team AND related_ids @> ARRAY[p_rel]::text[] AND relationship_id IS DISTINCT FROM p_rel
          AND (created_at, review_id) > (p_after_at, p_after_id)
        ORDER BY created_at, review_id LIMIT p_limit;
END;
$$`,
}
