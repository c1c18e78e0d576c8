package migrations

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// subqueryPolicy is a row-level security policy whose expression holds a subquery, which Citus
// creates on no distributed table.
type subqueryPolicy struct {
	Table, Name string
}

// dropSubqueryPolicies drops the schema's policies that hold subqueries (migrations 25 and 26) and
// returns them, so that their tables can be distributed; addClusterPolicies then creates their
// cluster forms (decision 209).
func dropSubqueryPolicies(ctx context.Context, tx pgx.Tx, schema string) ([]subqueryPolicy, error) {
	rows, err := tx.Query(ctx, `SELECT c.relname, p.polname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND (p.polqual::text LIKE '%{SUBLINK%' OR p.polwithcheck::text LIKE '%{SUBLINK%')
		ORDER BY 1, 2`, schema)
	if err != nil {
		return nil, err
	}
	policies, err := pgx.CollectRows(rows, pgx.RowToStructByPos[subqueryPolicy])
	if err != nil {
		return nil, err
	}
	for _, p := range policies {
		if _, ok := clusterPolicy(schema, Roles{}, p); !ok {
			return nil, fmt.Errorf("%w: %s.%s has no cluster form", ErrSubqueryPolicies, p.Table, p.Name)
		}
	}
	for _, p := range policies {
		if _, err := tx.Exec(ctx, "DROP POLICY "+pgx.Identifier{p.Name}.Sanitize()+" ON "+qualified(schema, p.Table)); err != nil {
			return nil, err
		}
	}
	return policies, nil
}

// addClusterPolicies creates the functions the cluster forms of the policies call (PL/pgSQL: Citus
// plans no statement of a SQL function that uses the function's parameters), then the policies, once
// every table is distributed (so that both are created on every node).
func addClusterPolicies(ctx context.Context, tx pgx.Tx, schema string, r Roles, policies []subqueryPolicy) error {
	if len(policies) == 0 {
		return nil
	}
	s := pgx.Identifier{schema}.Sanitize()
	owner, runtime, reviewer := pgx.Identifier{r.Owner}.Sanitize(), pgx.Identifier{r.Runtime}.Sanitize(), pgx.Identifier{r.Reviewer}.Sanitize()
	for _, f := range []struct{ sig, body string }{
		{"densemem_actor_has_scope(p_team text, p_scope text)", `RETURN EXISTS (SELECT 1 FROM profiles p WHERE p.team_id = p_team
    AND 'profile:' || p.profile_id = COALESCE(current_setting('densemem.actor', true), '') AND p.status = 'active'
    AND p_scope = ANY (p.scopes));`},
		{"densemem_actor_owns(p_team text, p_relationship text, p_profile text)", `RETURN EXISTS (SELECT 1 FROM relationships r
    WHERE r.team_id = p_team AND r.relationship_id = p_relationship AND r.owner_profile_id = p_profile
      AND 'profile:' || r.owner_profile_id = COALESCE(current_setting('densemem.actor', true), ''));`},
		{"densemem_retired_in_xact(p_team text)", `RETURN EXISTS (SELECT 1 FROM fragment_retirements fr
    WHERE fr.team_id = p_team AND fr.xmin = xid(pg_current_xact_id()));`},
	} {
		if _, err := tx.Exec(ctx, "CREATE OR REPLACE FUNCTION "+s+"."+f.sig+` RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = `+s+`, pg_temp AS $$ BEGIN `+f.body+` END $$`); err != nil {
			return fmt.Errorf("policy function %s: %w", f.sig, err)
		}
	}
	for _, f := range []string{"densemem_actor_has_scope(text, text)", "densemem_actor_owns(text, text, text)", "densemem_retired_in_xact(text)"} {
		for _, q := range []string{"ALTER FUNCTION " + s + "." + f + " OWNER TO " + owner,
			"REVOKE ALL ON FUNCTION " + s + "." + f + " FROM PUBLIC",
			"GRANT EXECUTE ON FUNCTION " + s + "." + f + " TO " + runtime + ", " + reviewer} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
	}
	for _, p := range policies {
		q, _ := clusterPolicy(schema, r, p)
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("policy %s.%s: %w", p.Table, p.Name, err)
		}
	}
	return nil
}

// clusterPolicy returns the cluster form of a policy of migrations 25 and 26: the same rows admitted,
// with function calls where those migrations read a subquery (an InitPlan of the bound team, or of
// the actor setting, and EXISTS reads of other tables).
func clusterPolicy(schema string, r Roles, p subqueryPolicy) (string, bool) {
	s := pgx.Identifier{schema}.Sanitize()
	t := s + "." + pgx.Identifier{p.Table}.Sanitize()
	runtime, reviewer := pgx.Identifier{r.Runtime}.Sanitize(), pgx.Identifier{r.Reviewer}.Sanitize()
	actor := "COALESCE(current_setting('densemem.actor', true), '')"
	owns := func(profile string) string {
		return fmt.Sprintf("%s = '' OR %s.densemem_actor_owns(%s.team_id, %s.relationship_id, %s.%s)", actor, s, p.Table, p.Table, p.Table, profile)
	}
	vocabulary := fmt.Sprintf("%s IN ('', 'host') OR %s.densemem_actor_has_scope(%s.team_id, 'vocabulary')", actor, s, p.Table)
	switch p.Name {
	case "team_isolation":
		bound := s + ".densemem_bound_team()"
		return fmt.Sprintf("CREATE POLICY team_isolation ON %s TO %s, %s USING (team_id = %s) WITH CHECK (team_id = %s)",
			t, runtime, reviewer, bound, bound), true
	case "actor_authors_evidence":
		return fmt.Sprintf("CREATE POLICY actor_authors_evidence ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s IN ('', 'profile:' || author_profile_id))",
			t, runtime, actor), true
	case "actor_owns_relationship":
		return fmt.Sprintf("CREATE POLICY actor_owns_relationship ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s IN ('', 'profile:' || owner_profile_id))",
			t, runtime, actor), true
	case "actor_owns_supported":
		return fmt.Sprintf("CREATE POLICY actor_owns_supported ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s)", t, runtime, owns("profile_id")), true
	case "actor_moves_own":
		return fmt.Sprintf(`CREATE POLICY actor_moves_own ON %s AS RESTRICTIVE FOR INSERT TO %s, %s WITH CHECK (CASE actor_kind
    WHEN 'profile' THEN %s
    WHEN 'system' THEN %s = '' OR %s.densemem_retired_in_xact(relationship_transitions.team_id)
    WHEN 'system_conflict_reviewer' THEN %s IN ('', 'reviewer')
    ELSE false END)`, t, runtime, reviewer, owns("actor_profile_id"), actor, s, actor), true
	case "host_inserts_profiles":
		return fmt.Sprintf("CREATE POLICY host_inserts_profiles ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s IN ('', 'host'))", t, runtime, actor), true
	case "host_updates_profiles":
		return fmt.Sprintf("CREATE POLICY host_updates_profiles ON %s AS RESTRICTIVE FOR UPDATE TO %s USING (true) WITH CHECK (%s IN ('', 'host'))",
			t, runtime, actor), true
	case "vocabulary_appends_policies", "vocabulary_appends_predicates":
		return fmt.Sprintf("CREATE POLICY %s ON %s AS RESTRICTIVE FOR INSERT TO %s WITH CHECK (%s)", p.Name, t, runtime, vocabulary), true
	}
	return "", false
}
