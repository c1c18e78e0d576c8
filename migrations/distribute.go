package migrations

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotCitus is returned by Distribute on a database without the citus extension.
var ErrNotCitus = errors.New("densemem migrations: the database has no citus extension (CREATE EXTENSION citus on every node first)")

// ErrSubqueryPolicies is returned by Distribute when a row-level security policy of the schema holds
// a subquery and Distribute knows no form of it without one: Citus 13.2 creates no policy with a
// subquery on a distributed table ("Subqueries are not supported in policies on distributed
// tables"). The policies of migrations 25 and 26 have such forms (decision 205).
var ErrSubqueryPolicies = errors.New("densemem migrations: policies with subqueries cannot be distributed by Citus")

// Distribution is what Distribute did, or found already done.
type Distribution struct {
	// Reference are the tables replicated to every node: teams, and every other table of the schema
	// without a team_id but the version table.
	Reference []string
	// Distributed are the team-scoped tables, distributed by team_id and co-located with each other.
	Distributed []string
	// ForeignKeys is how many foreign keys were dropped and added back (0 when every table was
	// already placed).
	ForeignKeys int
	// Functions are the schema's functions that were only on the coordinator and are now propagated
	// to every node.
	Functions []string
}

// Distribute spreads a migrated schema over a Citus cluster (decisions 200–202): teams and the
// schema's other global tables become reference tables, every table with a team_id is distributed
// by team_id, all co-located, and every function of the schema is propagated to the workers. The
// version table stays on the coordinator. The database boundary (migrations 25 and 26) is carried
// over (decision 205): the owner role is given LOGIN, the policies that read subqueries are replaced
// by forms that call functions, and the binding is checked against the coordinator backend. Citus
// refuses to distribute a table that a foreign key
// ties to a table not yet distributed, so the keys between the schema's tables are dropped first
// and added back, exactly as they were, once every table is placed. It runs in one transaction as a
// superuser on the coordinator, after Up.
//
// It is idempotent: a table already placed is left alone, and a second call changes nothing. On a
// database without the citus extension it returns ErrNotCitus and changes nothing.
func Distribute(ctx context.Context, pool *pgxpool.Pool, opts *Options) (Distribution, error) {
	var out Distribution
	schema, err := opts.schema()
	if err != nil {
		return out, err
	}
	roles, err := opts.roles()
	if err != nil {
		return out, err
	}
	citus, err := hasCitus(ctx, pool)
	if err != nil {
		return out, fmt.Errorf("densemem migrations: distribute: %w", err)
	}
	if !citus {
		return out, ErrNotCitus
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Under the migrations' lock, so no migration runs meanwhile. Sequential mode: the same
		// transaction writes to reference tables and distributed ones, and adds foreign keys
		// between them, which Citus allows only over one connection per node.
		for _, q := range []string{
			"SELECT pg_advisory_xact_lock(" + fmt.Sprint(lockID(schema)) + ")",
			"SET LOCAL citus.multi_shard_modify_mode TO 'sequential'",
			"SET LOCAL citus.enable_unsafe_triggers TO on",
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := distribute(ctx, tx, schema, roles, &out); err != nil {
			return err
		}
		// The owner's SECURITY DEFINER functions (erasure, the due-teams scan) run statements that
		// Citus sends to the workers over connections it opens as the current user: the owner must
		// be able to log in (decision 205). pg_hba decides from where.
		_, err := tx.Exec(ctx, "ALTER ROLE "+pgx.Identifier{roles.Owner}.Sanitize()+" LOGIN")
		return err
	})
	if err != nil {
		return Distribution{}, fmt.Errorf("densemem migrations: distribute: %w", err)
	}
	return out, nil
}

// hasCitus reports whether the database behind pool has the citus extension.
func hasCitus(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	var ok bool
	err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')").Scan(&ok)
	return ok, err
}

// placedTable is one table of the schema and how Citus holds it now.
type placedTable struct {
	Name  string
	Team  bool    // has a team_id column (and is not teams)
	Kind  *string // pg_dist_partition.partmethod: 'h' hash-distributed, 'n' reference or Citus local
	Local bool    // a Citus local table (repmodel 's' with partmethod 'n')
}

// foreignKey is a foreign key between two tables of the schema, as pg_get_constraintdef spells it.
type foreignKey struct {
	Table, Name, Def string
}

func distribute(ctx context.Context, tx pgx.Tx, schema string, r Roles, out *Distribution) error {
	policies, err := dropSubqueryPolicies(ctx, tx, schema)
	if err != nil {
		return err
	}
	if err := bindToCoordinatorBackend(ctx, tx, schema); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT c.relname,
		    c.relname <> 'teams' AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped),
		    p.partmethod::text, coalesce(p.partmethod = 'n' AND p.repmodel = 's', false)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname <> $2 AND NOT c.relispartition
		ORDER BY c.relname`, schema, versionTable)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[placedTable])
	if err != nil {
		return err
	}
	var pending []placedTable
	for _, t := range tables {
		if t.Team {
			out.Distributed = append(out.Distributed, t.Name)
		} else {
			out.Reference = append(out.Reference, t.Name)
		}
		switch {
		case t.Local:
			// A Citus local table: what create_reference_table makes of the tables linked to it
			// when they are not distributed yet. Undo it, then place the table properly.
			if _, err := tx.Exec(ctx, "SELECT undistribute_table($1)", qualified(schema, t.Name)); err != nil {
				return err
			}
			pending = append(pending, t)
		case t.Kind == nil:
			pending = append(pending, t)
		}
	}
	if len(pending) > 0 {
		if err := placeTables(ctx, tx, schema, pending, out); err != nil {
			return err
		}
	}
	if err := addClusterPolicies(ctx, tx, schema, r, policies); err != nil {
		return err
	}
	return propagateFunctions(ctx, tx, schema, out)
}

// placeTables drops the foreign keys between the schema's tables, places the pending tables, and
// adds the keys back.
func placeTables(ctx context.Context, tx pgx.Tx, schema string, pending []placedTable, out *Distribution) error {
	rows, err := tx.Query(ctx, `SELECT c.relname, con.conname, pg_get_constraintdef(con.oid)
		FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class rc ON rc.oid = con.confrelid JOIN pg_namespace rn ON rn.oid = rc.relnamespace
		WHERE con.contype = 'f' AND n.nspname = $1 AND rn.nspname = $1
		ORDER BY c.relname, con.conname`, schema)
	if err != nil {
		return err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[foreignKey])
	if err != nil {
		return err
	}
	for _, k := range keys {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+qualified(schema, k.Table)+" DROP CONSTRAINT "+pgx.Identifier{k.Name}.Sanitize()); err != nil {
			return err
		}
	}
	// The co-location anchor: the first team table already distributed, else the first to be.
	anchor, err := colocationAnchor(ctx, tx, schema)
	if err != nil {
		return err
	}
	for _, t := range pending {
		var q string
		var args []any
		switch {
		case !t.Team:
			q, args = "SELECT create_reference_table($1)", []any{qualified(schema, t.Name)}
		case anchor == "":
			q, args = "SELECT create_distributed_table($1, 'team_id', colocate_with => 'none')", []any{qualified(schema, t.Name)}
			anchor = t.Name
		default:
			q, args = "SELECT create_distributed_table($1, 'team_id', colocate_with => $2)",
				[]any{qualified(schema, t.Name), qualified(schema, anchor)}
		}
		if _, err := tx.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("place %s: %w", t.Name, err)
		}
	}
	for _, k := range keys {
		if _, err := tx.Exec(ctx, "ALTER TABLE "+qualified(schema, k.Table)+" ADD CONSTRAINT "+
			pgx.Identifier{k.Name}.Sanitize()+" "+k.Def); err != nil {
			return fmt.Errorf("add back %s.%s: %w", k.Table, k.Name, err)
		}
	}
	out.ForeignKeys = len(keys)
	return nil
}

// propagateFunctions makes every function of the schema that Citus has not propagated to the
// workers a distributed object (create_distributed_function without a distribution argument: the
// function exists on every node, and calls to it are not delegated). Citus propagates a function
// when it is created only if everything it depends on is propagated already; a function whose
// signature names a table's row type, created before the table was distributed, stays on the
// coordinator, and a trigger or a row-level security policy on a shard then calls a function the
// worker lacks. Extension members are the extension's business (Citus propagates extensions).
func propagateFunctions(ctx context.Context, tx pgx.Tx, schema string, out *Distribution) error {
	fns, err := textColumn(ctx, tx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND p.prokind IN ('f', 'p')
		  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		  AND NOT EXISTS (SELECT 1 FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid)
		ORDER BY 1`, schema)
	if err != nil {
		return err
	}
	for _, f := range fns {
		if _, err := tx.Exec(ctx, "SELECT create_distributed_function($1)", f); err != nil {
			return fmt.Errorf("propagate %s: %w", f, err)
		}
	}
	out.Functions = fns
	return tuneFunctions(ctx, tx, schema)
}

// tuneFunctions sets what the schema's functions need on a cluster. Those that force generic plans
// (migrations 21 and 23: Recall's search, whose statements are index-driven) get custom plans: Citus
// cannot plan a generic plan of a statement on distributed tables whose shard depends on a
// parameter, except the simplest ones ("could not create distributed plan"), and a custom plan is
// pruned to the team's shard. The team functions may run nested (nestedTeamFunctions). The
// delegatedFunctions are delegated to the team's worker by their team argument, also inside a
// transaction block. A migration that replaces one of these functions
// loses the setting; Distribute, run again, puts it back.
func tuneFunctions(ctx context.Context, tx pgx.Tx, schema string) error {
	if err := alterFunctions(ctx, tx, schema, "'plan_cache_mode=force_generic_plan' = ANY(p.proconfig)",
		"plan_cache_mode = force_custom_plan"); err != nil {
		return err
	}
	if err := nestedTeamFunctions(ctx, tx, schema); err != nil {
		return err
	}
	anchor, err := colocationAnchor(ctx, tx, schema)
	if err != nil {
		return err
	}
	for _, f := range delegatedFunctions {
		// Only where the function exists (migration 27 created it).
		if _, err := tx.Exec(ctx, `SELECT create_distributed_function(to_regprocedure($1), '$1', colocate_with => $2,
			force_delegation => true) WHERE to_regprocedure($1) IS NOT NULL`,
			pgx.Identifier{schema}.Sanitize()+"."+f, qualified(schema, anchor)); err != nil {
			return fmt.Errorf("delegate %s: %w", f, err)
		}
	}
	return nil
}

// delegatedFunctions run on the team's worker when the store calls them (SELECT f(team, …)), in the
// transaction: the check of the deferred constraints (decision 207). Every statement a delegated
// function runs must name the team as a constant; densemem_erase's do not all, so erasure is routed
// to the worker by a statement on a team table instead (decision 208).
var delegatedFunctions = []string{"densemem_check_deferred(text)"}

// nestedTeamFunctions lets the schema's team functions (first argument p_team: Recall's search,
// the review items naming a relationship, erasure) run their statements when a statement that
// calls them is routed to the team's worker (decision 204). Citus refuses a distributed query from
// inside a query on a shard by default, as it could reach another node outside the transaction;
// these functions refuse any team but the transaction's (densemem.team) and filter every statement
// by it, so every statement they run is on the team's co-located shards, on the node that runs
// them, in its transaction (local execution).
func nestedTeamFunctions(ctx context.Context, tx pgx.Tx, schema string) error {
	return alterFunctions(ctx, tx, schema, `(p.proargnames[1] = 'p_team' AND p.prorettype <> 'void'::regtype
		OR p.proname IN ('densemem_bound_team', 'densemem_bound_actor'))
		AND NOT coalesce('citus.allow_nested_distributed_execution=on' = ANY(p.proconfig), false)`,
		"citus.allow_nested_distributed_execution = on")
}

// bindToCoordinatorBackend makes the binding check of migration 25 (densemem_bound_team) hash the
// process ID of the coordinator backend that runs the transaction, which the store bound: on a
// worker's connection pg_backend_pid() is the worker backend's, while citus_backend_gpid() is the
// coordinator backend's global pid, node ID × 10^10 + pid, on the coordinator and on its worker
// connections alike (decision 209).
func bindToCoordinatorBackend(ctx context.Context, tx pgx.Tx, schema string) error {
	var def *string
	if err := tx.QueryRow(ctx, `SELECT pg_get_functiondef(p) FROM to_regprocedure($1) p WHERE p IS NOT NULL`,
		pgx.Identifier{schema}.Sanitize()+".densemem_bound_team()").Scan(&def); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if def == nil || !strings.Contains(*def, "pg_backend_pid()") {
		return nil
	}
	_, err := tx.Exec(ctx, strings.ReplaceAll(*def, "pg_backend_pid()", "(pg_catalog.citus_backend_gpid() % 10000000000)"))
	return err
}

// alterFunctions sets setting ("name = value") on every function of the schema that where (a
// condition on pg_proc p) selects.
func alterFunctions(ctx context.Context, tx pgx.Tx, schema, where, setting string) error {
	fns, err := textColumn(ctx, tx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = $1 AND `+where+` ORDER BY 1`, schema)
	if err != nil {
		return err
	}
	for _, f := range fns {
		if _, err := tx.Exec(ctx, "ALTER FUNCTION "+f+" SET "+setting); err != nil {
			return fmt.Errorf("%s: SET %s: %w", f, setting, err)
		}
	}
	return nil
}

// colocationAnchor returns the first (by name) of the schema's hash-distributed tables, "" when there
// is none yet.
func colocationAnchor(ctx context.Context, tx pgx.Tx, schema string) (string, error) {
	var anchor string
	err := tx.QueryRow(ctx, `SELECT c.relname FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND p.partmethod = 'h'
		ORDER BY c.relname LIMIT 1`, schema).Scan(&anchor)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return anchor, err
}

// textColumn runs query on tx and returns its one text column.
func textColumn(ctx context.Context, tx pgx.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func qualified(schema, table string) string { return pgx.Identifier{schema, table}.Sanitize() }
