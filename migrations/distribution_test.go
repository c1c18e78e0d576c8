package migrations_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testdb"
)

// undistributed names the tables of the schema that are not distributed by team on a distributed
// PostgreSQL (docs/scaling.md), with how they are placed and why. Every other table must have a
// NOT NULL team_id, its distribution column.
var undistributed = map[string]struct{ placement, reason string }{
	"teams": {"reference", "one row per team, the target of every team-scoped table's team_id foreign key; " +
		"replicated to every node so those keys are checked locally; written only by CreateTeam"},
	"goose_db_version": {"local", "the migration version table: lives on the coordinator, written only by " +
		"migrations (which propagate their DDL), read by CheckSchema; no team's data"},
	"binding_keys": {"local", "the keys of the team binding (migration 25), read only by densemem_bound_team(); " +
		"on a cluster it stays on the coordinator, where the binding is checked (docs/scaling.md)"},
}

// distributionRules says which tables of a schema are reference or local tables; every other table
// is distributed by team_id.
type distributionRules map[string]struct{ placement, reason string }

// TestSchemaIsReadyToDistributeByTeam reads the catalog of the migrated schema and fails, naming the
// table and constraint, on anything that keeps it from being distributed by team_id (Citus-style,
// co-located): a table without team_id that is not named in undistributed, a nullable team_id, a
// primary key, unique constraint or unique index without team_id among its key columns, a foreign
// key between team-scoped tables that does not match team_id to team_id, a SET NULL or SET DEFAULT
// action, an exclusion constraint without team_id, or a reference table referring to a team-scoped
// one.
func TestSchemaIsReadyToDistributeByTeam(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	problems, err := distributionProblems(context.Background(), pool, "densemem", undistributed)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDistributionCheckNamesViolations builds a scratch schema with one violation of each kind (and
// one correct table) and expects the check to name each violating table and constraint, and nothing
// of the correct one.
func TestDistributionCheckNamesViolations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.NewEmpty(t)
	if _, err := pool.Exec(ctx, `CREATE SCHEMA scratch;
CREATE TABLE scratch.teams (team_id text PRIMARY KEY);
CREATE TABLE scratch.vocab (word text PRIMARY KEY);
CREATE TABLE scratch.good (team_id text NOT NULL REFERENCES scratch.teams, id text, word text REFERENCES scratch.vocab,
    PRIMARY KEY (team_id, id));
CREATE UNIQUE INDEX good_word ON scratch.good (team_id, lower(word)) WHERE word IS NOT NULL;
CREATE TABLE scratch.bad_pk (team_id text NOT NULL, id text CONSTRAINT bad_pk_key PRIMARY KEY);
CREATE TABLE scratch.bad_unique (team_id text NOT NULL, id text, k text, PRIMARY KEY (team_id, id),
    CONSTRAINT bad_unique_k UNIQUE (k));
CREATE TABLE scratch.bad_index (team_id text NOT NULL, id text, k text, PRIMARY KEY (team_id, id));
CREATE UNIQUE INDEX bad_index_k ON scratch.bad_index (lower(k)) INCLUDE (team_id);
CREATE TABLE scratch.bad_fk (team_id text NOT NULL, id text, pk text, PRIMARY KEY (team_id, id),
    CONSTRAINT bad_fk_pk FOREIGN KEY (pk) REFERENCES scratch.bad_pk (id));
CREATE TABLE scratch.bad_swap (team_id text NOT NULL, id text, other text, PRIMARY KEY (team_id, id),
    CONSTRAINT bad_swap_good FOREIGN KEY (other, team_id) REFERENCES scratch.good (team_id, id));
CREATE TABLE scratch.bad_action (team_id text NOT NULL, id text, gid text, PRIMARY KEY (team_id, id),
    CONSTRAINT bad_action_good FOREIGN KEY (team_id, gid) REFERENCES scratch.good ON DELETE SET NULL);
CREATE TABLE scratch.bad_null (team_id text, id text, UNIQUE (team_id, id));
CREATE TABLE scratch.bad_global (id text PRIMARY KEY);
CREATE TABLE scratch.bad_ref (word text PRIMARY KEY, gid text, tid text,
    CONSTRAINT bad_ref_good FOREIGN KEY (tid, gid) REFERENCES scratch.good);
CREATE TABLE scratch.bad_excl (team_id text NOT NULL, id text, r tstzrange, PRIMARY KEY (team_id, id),
    CONSTRAINT bad_excl_r EXCLUDE USING gist (r WITH &&));`); err != nil {
		t.Fatal(err)
	}
	rules := distributionRules{
		"teams":   {"reference", "test"},
		"vocab":   {"reference", "test"},
		"bad_ref": {"reference", "test"},
	}
	problems, err := distributionProblems(ctx, pool, "scratch", rules)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(problems, "\n")
	for _, want := range []string{"bad_pk_key", "bad_unique_k", "bad_index_k", "bad_fk_pk", "bad_swap_good",
		"bad_action_good", "bad_null", "bad_global", "bad_ref_good", "bad_excl_r"} {
		if !strings.Contains(all, want) {
			t.Errorf("the check did not name %s; it found:\n%s", want, all)
		}
	}
	for _, p := range problems {
		if strings.Contains(p, "scratch.good ") || strings.Contains(p, "good_word") {
			t.Errorf("the check reported the correct table: %s", p)
		}
	}
}

// distributionProblems returns every reason the tables of schema cannot be distributed by team_id
// under rules, each naming its table and constraint.
func distributionProblems(ctx context.Context, pool *pgxpool.Pool, schema string, rules distributionRules) ([]string, error) {
	tables, problems, err := tablePlacement(ctx, pool, schema, rules)
	if err != nil {
		return nil, err
	}
	more, err := uniqueProblems(ctx, pool, schema, tables)
	if err != nil {
		return nil, err
	}
	problems = append(problems, more...)
	more, err = foreignKeyProblems(ctx, pool, schema, tables)
	if err != nil {
		return nil, err
	}
	problems = append(problems, more...)
	sort.Strings(problems)
	return problems, nil
}

// tablePlacement reads the schema's tables and returns each one's placement ("distributed",
// "reference" or "local"), with the problems of tables and team_id columns.
func tablePlacement(ctx context.Context, pool *pgxpool.Pool, schema string, rules distributionRules) (map[string]string, []string, error) {
	type table struct {
		Name    string
		HasTeam bool
		NotNull bool
	}
	rows, err := pool.Query(ctx, `SELECT c.relname, a.attnum IS NOT NULL, COALESCE(a.attnotnull, false)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition`, schema)
	if err != nil {
		return nil, nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[table])
	if err != nil {
		return nil, nil, err
	}
	placement := map[string]string{}
	var problems []string
	for _, tb := range list {
		rule, named := rules[tb.Name]
		switch {
		case named:
			placement[tb.Name] = rule.placement
		case !tb.HasTeam:
			problems = append(problems, fmt.Sprintf("table %s.%s has no team_id column and is not named as a reference "+
				"or local table (undistributed): give it team_id or name it with a reason", schema, tb.Name))
		case !tb.NotNull:
			problems = append(problems, fmt.Sprintf("table %s.%s: team_id, its distribution column, is nullable", schema, tb.Name))
			placement[tb.Name] = "distributed"
		default:
			placement[tb.Name] = "distributed"
		}
	}
	for name := range rules {
		if !slices.ContainsFunc(list, func(tb table) bool { return tb.Name == name }) {
			problems = append(problems, fmt.Sprintf("undistributed names %s, which schema %s does not have", name, schema))
		}
	}
	return placement, problems, nil
}

// uniqueProblems reports the primary keys, unique constraints, unique indexes and exclusion
// constraints of distributed tables without team_id among their key columns.
func uniqueProblems(ctx context.Context, pool *pgxpool.Pool, schema string, tables map[string]string) ([]string, error) {
	type index struct {
		Table, Name, Kind, Def string
		HasTeam                bool
	}
	rows, err := pool.Query(ctx, `SELECT c.relname, i.relname,
		    CASE WHEN x.indisprimary THEN 'primary key' WHEN x.indisexclusion THEN 'exclusion constraint'
		         WHEN con.oid IS NOT NULL THEN 'unique constraint' ELSE 'unique index' END,
		    pg_get_indexdef(i.oid),
		    COALESCE(a.attnum = ANY ((x.indkey::int2[])[0:x.indnkeyatts - 1]), false)
		FROM pg_index x
		JOIN pg_class c ON c.oid = x.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class i ON i.oid = x.indexrelid
		LEFT JOIN pg_constraint con ON con.conindid = i.oid AND con.contype = 'u'
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped
		WHERE n.nspname = $1 AND (x.indisunique OR x.indisexclusion)`, schema)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, ix := range list {
		if tables[ix.Table] == "distributed" && !ix.HasTeam {
			problems = append(problems, fmt.Sprintf("table %s.%s: %s %s does not include team_id among its key columns (%s)",
				schema, ix.Table, ix.Kind, ix.Name, ix.Def))
		}
	}
	return problems, nil
}

// foreignKeyProblems reports foreign keys that a distribution by team cannot check on one node: a
// distributed table's key to another distributed table must map team_id to team_id, a reference
// table may not refer to a distributed or local one, and no key may SET NULL or SET DEFAULT.
func foreignKeyProblems(ctx context.Context, pool *pgxpool.Pool, schema string, tables map[string]string) ([]string, error) {
	type fk struct {
		Table, Name, Referenced, Actions, Def string
		From, To                              []string
	}
	rows, err := pool.Query(ctx, `SELECT c.relname, con.conname, rc.relname, con.confdeltype::text || con.confupdtype::text,
		    pg_get_constraintdef(con.oid),
		    ARRAY(SELECT a.attname::text FROM unnest(con.conkey) WITH ORDINALITY k(n, o)
		          JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.o),
		    ARRAY(SELECT a.attname::text FROM unnest(con.confkey) WITH ORDINALITY k(n, o)
		          JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.o)
		FROM pg_constraint con
		JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class rc ON rc.oid = con.confrelid
		WHERE n.nspname = $1 AND con.contype = 'f'`, schema)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fk])
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, k := range list {
		at := fmt.Sprintf("table %s.%s: foreign key %s (%s)", schema, k.Table, k.Name, k.Def)
		from, to := tables[k.Table], tables[k.Referenced]
		switch {
		case strings.ContainsAny(k.Actions, "nd"):
			problems = append(problems, at+" sets NULL or DEFAULT on delete or update, which a distributed table cannot")
		case from == "distributed" && to == "distributed" && !teamToTeam(k.From, k.To):
			problems = append(problems, at+" does not match team_id to the referenced table's team_id")
		case from == "distributed" && to == "local":
			problems = append(problems, at+" refers to a local table, which other nodes do not have")
		case from != "distributed" && to != from:
			problems = append(problems, fmt.Sprintf("%s: a %s table refers to a %s table", at, from, to))
		}
	}
	return problems, nil
}

// teamToTeam reports whether a foreign key's columns map team_id to team_id.
func teamToTeam(from, to []string) bool {
	i := slices.Index(from, "team_id")
	return i >= 0 && i < len(to) && to[i] == "team_id"
}

var (
	docReference   = regexp.MustCompile(`create_reference_table\('densemem\.(\w+)'\)`)
	docDistributed = regexp.MustCompile(`create_distributed_table\('densemem\.(\w+)', 'team_id'(?:, colocate_with => 'densemem\.(\w+)')?\)`)
	docDrop        = regexp.MustCompile(`ALTER TABLE densemem\.\w+ DROP CONSTRAINT (\w+)`)
	docAdd         = regexp.MustCompile(`ALTER TABLE densemem\.\w+ ADD CONSTRAINT (\w+)`)
)

// TestScalingDocDistributesEveryTableInOrder checks docs/scaling.md's distribution script against the
// catalog: every reference table and every team-scoped table is named once, all team-scoped tables
// are co-located with the first, and each table comes after the tables its foreign keys refer to
// (but for keys the script drops first and adds back at the end).
func TestScalingDocDistributesEveryTableInOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc, err := os.ReadFile("../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	pool := testdb.New(t)
	tables, _, err := tablePlacement(ctx, pool, "densemem", undistributed)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[string]int{} // table → line of its distribution
	dropped := map[string]int{}
	var first string
	for i, line := range strings.Split(string(doc), "\n") {
		if m := docReference.FindStringSubmatch(line); m != nil {
			checkDocTable(t, m[1], "reference", tables, pos)
			pos[m[1]] = i
		}
		if m := docDistributed.FindStringSubmatch(line); m != nil {
			checkDocTable(t, m[1], "distributed", tables, pos)
			pos[m[1]] = i
			if first == "" {
				first = m[1]
			} else if m[2] != first {
				t.Errorf("scaling.md distributes %s co-located with %q, not with the first table %s", m[1], m[2], first)
			}
		}
		if m := docDrop.FindStringSubmatch(line); m != nil {
			dropped[m[1]] = i
		}
		if m := docAdd.FindStringSubmatch(line); m != nil {
			if _, ok := dropped[m[1]]; !ok {
				t.Errorf("scaling.md adds back %s, which it did not drop", m[1])
			}
			delete(dropped, m[1])
		}
	}
	for name, placement := range tables {
		if _, ok := pos[name]; !ok && placement != "local" {
			t.Errorf("scaling.md does not place %s table %s", placement, name)
		}
	}
	for name := range dropped {
		t.Errorf("scaling.md drops %s and never adds it back", name)
	}
	checkDocOrder(t, pool, pos)
}

// checkDocTable checks one table the script places.
func checkDocTable(t *testing.T, name, placement string, tables map[string]string, pos map[string]int) {
	t.Helper()
	if _, twice := pos[name]; twice {
		t.Errorf("scaling.md places %s twice", name)
	}
	if tables[name] != placement {
		t.Errorf("scaling.md makes %s a %s table; the schema test has it %q", name, placement, tables[name])
	}
}

// checkDocOrder checks that every foreign key's referenced table is placed before its table, but
// for the keys the script drops before distributing (any key the catalog names in the script).
func checkDocOrder(t *testing.T, pool *pgxpool.Pool, pos map[string]int) {
	t.Helper()
	doc, err := os.ReadFile("../docs/scaling.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(context.Background(), `SELECT c.relname, rc.relname, con.conname FROM pg_constraint con
		JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_class rc ON rc.oid = con.confrelid
		WHERE n.nspname = 'densemem' AND con.contype = 'f' AND con.conrelid <> con.confrelid`)
	if err != nil {
		t.Fatal(err)
	}
	type fk struct{ Table, Referenced, Name string }
	fks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fk])
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range fks {
		if strings.Contains(string(doc), "DROP CONSTRAINT "+k.Name) {
			continue
		}
		if pos[k.Referenced] >= pos[k.Table] {
			t.Errorf("scaling.md distributes %s before %s, which its foreign key %s refers to", k.Table, k.Referenced, k.Name)
		}
	}
}
