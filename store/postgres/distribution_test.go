package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/store"
)

// teamFilterAllowList names the statements of the store that do not route to one team, each with
// the reason (docs/scaling.md). An entry must still fail the check, so a stale one is reported.
var teamFilterAllowList = map[string]string{
	"TeamsWithDueCases": "the nightly due-teams scan: reads every team's due cases through the owner's " +
		"densemem_teams_with_due_cases; on a distributed cluster it fans out to every node (once per run), " +
		"and each team's review that follows is single-node",
}

// functionBodyAllowList names the schema's functions whose bodies read across teams, with the reason.
var functionBodyAllowList = map[string]string{
	"densemem_teams_with_due_cases": "the due-teams scan behind TeamsWithDueCases (fans out)",
}

// teamArgFunctions are the schema's functions a statement of the store may call: true for those
// whose first argument is the team (each refuses a team other than densemem.team, and its body is
// checked by TestFunctionBodiesFilterByTeam), false for those that read no table.
var teamArgFunctions = map[string]bool{
	"densemem_erase":               true,
	"densemem_search_hits":         true,
	"densemem_review_items_naming": true,
	"densemem_expect_rows":         false,
	"densemem_begin":               true,
	"densemem_check_deferred":      true,
	"densemem_erase_fragments":     true,
}

// builderFragments are constants that are parts of statements squirrel builds at run time, with
// the built statement that covers them (builtStatements).
var builderFragments = map[string]string{
	"relationshipViewFrom":    "RelationshipView, RecallViews, TraceRelationship, TraceNeighbours",
	"relationshipViewColumns": "RelationshipView, RecallViews, TraceRelationship, TraceNeighbours",
	"reviewItemViewColumns":   "ReviewItemList",
}

// builtStatements calls the store's statement builders with sample parameters, the way its methods
// call them, and returns what they build.
func builtStatements(t *testing.T) []sqlStatement {
	t.Helper()
	var out []sqlStatement
	add := func(name, origin, sql string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", origin, err)
		}
		out = append(out, sqlStatement{name: nameOf(sql, name), origin: origin, text: sql})
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []store.ReviewItemListParams{
		{Team: "team_a", Status: "open", Limit: 10},
		{Team: "team_a", Status: "open", Profile: "prof_a", Limit: 10,
			After: &store.ReviewItemKey{Profile: "prof_a", CreatedAt: at, ID: "rev_a"}},
	} {
		sql, _, err := reviewItemListQuery(p)
		add("ReviewItemList", "reviewItemListQuery", sql, err)
	}
	sql, _, err := relationshipViewQuery("team_a").Where(sq.Eq{"r.relationship_id": "rel_a"}).ToSql()
	add("RelationshipView", "relationshipViewQuery (RelationshipView, TraceRelationship)", sql, err)
	sql, _, err = relationshipViewQuery("team_a").Where(sq.Eq{"r.relationship_id": []string{"rel_a", "rel_b"}}).
		OrderBy("r.relationship_id").ToSql()
	add("RecallViews", "relationshipViewQuery (RecallDetails)", sql, err)
	p := store.TraceLoadParams{Team: "team_a", RelationshipID: "rel_a", MaxDepth: 2, MaxEdges: 10}
	for _, frontier := range []sq.Sqlizer{
		sq.Or{sq.Expr("r.subject_entity_id IN "+traceEndsSQL, p.Team, p.RelationshipID),
			sq.Expr("r.object_entity_id IN "+traceEndsSQL, p.Team, p.RelationshipID)},
		sq.Or{sq.Eq{"r.subject_entity_id": []string{"ent_a"}}, sq.Eq{"r.object_entity_id": []string{"ent_a"}}},
	} {
		b := &pgx.Batch{}
		var dst []store.RelationshipView
		err := queueHop(b, p, &dst, []string{"rel_a"}, frontier, 10)
		if err == nil && len(b.QueuedQueries) != 1 {
			t.Fatalf("queueHop queued %d statements, want 1", len(b.QueuedQueries))
		}
		add("TraceNeighbours", "queueHop", b.QueuedQueries[0].SQL, err)
	}
	return out
}

// teamScopedTables reads the tables of the migrated schema that have a team_id column.
func teamScopedTables(t *testing.T) map[string]bool {
	t.Helper()
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `SELECT c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'team_id' AND NOT a.attisdropped
		WHERE n.nspname = 'densemem' AND c.relkind IN ('r', 'p')`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("found %d team-scoped tables (%v): the catalog read is wrong", len(names), names)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// TestEveryStoreStatementFiltersByTeam reads every SQL statement of the store (the package's string
// constants and literals, and what its squirrel builders build) and fails on one that reads or
// writes a team-scoped table without an equality on that table's team_id, unless it is in
// teamFilterAllowList (docs/scaling.md).
func TestEveryStoreStatementFiltersByTeam(t *testing.T) {
	t.Parallel()
	rules := teamFilterRules{tables: teamScopedTables(t), teamArgs: teamArgFunctions}
	stmts, err := goStatements(".", builderFragments)
	if err != nil {
		t.Fatal(err)
	}
	stmts = append(stmts, builtStatements(t)...)
	if len(stmts) < 90 {
		t.Fatalf("found only %d statements: the collection is broken", len(stmts))
	}
	allowed := map[string]bool{}
	withTable := 0
	for _, st := range stmts {
		if strings.Contains(st.text, "{schema}.") {
			withTable++
		}
		problems := teamFilterProblems(st.text, rules)
		reason, ok := teamFilterAllowList[st.name]
		switch {
		case ok && len(problems) == 0:
			t.Errorf("%s (%s) is allow-listed (%s) but passes the check: remove it from the allow-list", st.name, st.origin, reason)
		case ok:
			allowed[st.name] = true
		case len(problems) > 0:
			t.Errorf("%s (%s) is not filtered by team:\n  %s\n%s", st.name, st.origin, strings.Join(problems, "\n  "), st.text)
		}
	}
	for name := range teamFilterAllowList {
		if !allowed[name] {
			t.Errorf("allow-listed statement %s was not found among the store's statements", name)
		}
	}
	if withTable < 80 {
		t.Errorf("only %d of %d statements name a table of the schema: the collection is broken", withTable, len(stmts))
	}
	t.Logf("%d statements checked (%d naming a table of the schema), %d allow-listed", len(stmts), withTable, len(allowed))
}

// TestFunctionBodiesFilterByTeam applies the check to the bodies of the schema's PL/pgSQL and SQL
// functions (trigger functions and the SECURITY DEFINER functions the store calls): their table
// names are unqualified, and the row's team (NEW/OLD.team_id) or the team argument (p_team) anchors
// them.
func TestFunctionBodiesFilterByTeam(t *testing.T) {
	t.Parallel()
	tables := teamScopedTables(t)
	pool := testdb.New(t)
	rows, err := pool.Query(context.Background(), `SELECT p.proname, p.prosrc FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
		WHERE n.nspname = 'densemem' AND l.lanname IN ('plpgsql', 'sql') ORDER BY p.proname`)
	if err != nil {
		t.Fatal(err)
	}
	type fn struct{ Name, Body string }
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fn])
	if err != nil {
		t.Fatal(err)
	}
	if len(fns) < 10 {
		t.Fatalf("found %d functions: the catalog read is wrong", len(fns))
	}
	for name := range teamArgFunctions {
		if !containsFn(fns, name, func(f fn) string { return f.Name }) {
			t.Errorf("teamArgFunctions names %s, which the schema does not have", name)
		}
	}
	for _, f := range fns {
		problems := teamFilterProblems(f.Body, teamFilterRules{tables: tables, body: true})
		reason, ok := functionBodyAllowList[f.Name]
		switch {
		case ok && len(problems) == 0:
			t.Errorf("function %s is allow-listed (%s) but passes the check", f.Name, reason)
		case !ok && len(problems) > 0:
			t.Errorf("function %s is not filtered by team:\n  %s\n%s", f.Name, strings.Join(problems, "\n  "), f.Body)
		case !ok && bodyNamesTable(f.Body, tables):
			// Without its team filter the body must fail: the check is not passing it by accident.
			mutated := teamColumn.ReplaceAllString(f.Body, "tenant_x")
			if len(teamFilterProblems(mutated, teamFilterRules{tables: tables, body: true})) == 0 {
				t.Errorf("function %s without its team filter passed the check", f.Name)
			}
		}
	}
}

// bodyNamesTable reports whether a function body reads or writes one of tables.
func bodyNamesTable(body string, tables map[string]bool) bool {
	for _, m := range bodyRef.FindAllStringSubmatch(body, -1) {
		if tables[m[2]] {
			return true
		}
	}
	return false
}

// containsFn reports whether items holds one whose key is name.
func containsFn[T any](items []T, name string, key func(T) string) bool {
	for _, it := range items {
		if key(it) == name {
			return true
		}
	}
	return false
}

// TestTeamFilterCheckRejectsUnfilteredStatements feeds the checker deliberately unfiltered
// statements (each must be reported) and filtered ones (none may be).
func TestTeamFilterCheckRejectsUnfilteredStatements(t *testing.T) {
	t.Parallel()
	rules := teamFilterRules{
		tables:   map[string]bool{"relationships": true, "support_links": true, "profiles": true, "teams": true},
		teamArgs: map[string]bool{"densemem_search_hits": true, "densemem_expect_rows": false},
	}
	bad := map[string]string{
		"no filter":           `SELECT relationship_id FROM {schema}.relationships WHERE status = 'active'`,
		"joined unfiltered":   `SELECT r.relationship_id FROM {schema}.relationships r JOIN {schema}.support_links s ON s.relationship_id = r.relationship_id WHERE r.team_id = $1`,
		"subquery unfiltered": `SELECT relationship_id FROM {schema}.relationships WHERE team_id = $1 AND relationship_id IN (SELECT relationship_id FROM {schema}.support_links)`,
		"alias reused":        `SELECT r.relationship_id FROM {schema}.relationships r WHERE r.team_id = $1 AND EXISTS (SELECT 1 FROM {schema}.relationships r WHERE r.status = 'x')`,
		"any team":            `SELECT relationship_id FROM {schema}.relationships WHERE team_id = ANY($1::text[])`,
		"in teams":            `SELECT r.relationship_id FROM {schema}.relationships r WHERE r.team_id IN ($1, $2)`,
		"only joined":         `SELECT r.relationship_id FROM {schema}.relationships r JOIN {schema}.support_links s ON s.team_id = r.team_id`,
		"insert no team":      `INSERT INTO {schema}.profiles (profile_id, name) VALUES ($1, $2)`,
		"update no team":      `UPDATE {schema}.profiles SET status = $2 WHERE profile_id = $1`,
		"delete no team":      `DELETE FROM {schema}.support_links WHERE support_id = $1`,
		"unknown table":       `SELECT 1 FROM {schema}.global_things WHERE team_id = $1`,
		"unknown function":    `SELECT t FROM {schema}.densemem_everything($1) t`,
		"function no team":    `SELECT * FROM {schema}.densemem_search_hits('team_a', $1)`,
		"comma join":          `SELECT 1 FROM {schema}.relationships r, {schema}.support_links s WHERE r.team_id = $1`,
		"team not equal":      `SELECT 1 FROM {schema}.relationships WHERE team_id <> $1`,
	}
	for name, text := range bad {
		if problems := teamFilterProblems(text, rules); len(problems) == 0 {
			t.Errorf("%s: the unfiltered statement passed the check:\n%s", name, text)
		}
	}
	good := map[string]string{
		"where":        `-- name: X` + "\n" + `SELECT relationship_id FROM {schema}.relationships WHERE team_id = $1`,
		"joined":       `SELECT r.relationship_id FROM {schema}.relationships r JOIN {schema}.support_links s ON s.team_id = r.team_id AND s.relationship_id = r.relationship_id WHERE r.team_id = $1`,
		"insert":       `INSERT INTO {schema}.profiles (team_id, profile_id) VALUES ($1, $2)`,
		"insert guard": `INSERT INTO {schema}.profiles (team_id, profile_id) SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM {schema}.teams WHERE team_id = $1)`,
		"update":       `UPDATE {schema}.profiles p SET status = $3 WHERE p.team_id = $1 AND p.profile_id = $2`,
		"function":     `SELECT * FROM {schema}.densemem_search_hits($1, $2)`,
		"squirrel":     `SELECT x.a FROM {schema}.relationships x WHERE x.team_id = ? AND x.status = ?`,
		"no table":     `SELECT {schema}.densemem_expect_rows(count(*), 1, 'x') FROM u`,
	}
	for name, text := range good {
		if problems := teamFilterProblems(text, rules); len(problems) > 0 {
			t.Errorf("%s: a filtered statement failed the check: %v\n%s", name, problems, text)
		}
	}
}

// TestTeamFilterCheckCatchesEveryStatementWithoutItsFilter removes the team filter from every real
// statement of the store (team_id renamed, so no equality and no INSERT column remains) and expects
// the check to report each statement that names a team-scoped table: the check is not passing the
// store's statements by accident.
func TestTeamFilterCheckCatchesEveryStatementWithoutItsFilter(t *testing.T) {
	t.Parallel()
	tables := teamScopedTables(t)
	rules := teamFilterRules{tables: tables, teamArgs: teamArgFunctions}
	stmts, err := goStatements(".", builderFragments)
	if err != nil {
		t.Fatal(err)
	}
	stmts = append(stmts, builtStatements(t)...)
	mutated := 0
	for _, st := range stmts {
		if !namesTable(st.text, tables) {
			continue
		}
		mutated++
		text := teamColumn.ReplaceAllString(st.text, "tenant_x")
		if problems := teamFilterProblems(text, rules); len(problems) == 0 {
			t.Errorf("%s (%s) without its team filter passed the check:\n%s", st.name, st.origin, text)
		}
	}
	if mutated < 80 {
		t.Errorf("only %d statements name a team-scoped table", mutated)
	}
}

// namesTable reports whether text names one of tables as {schema}.table.
func namesTable(text string, tables map[string]bool) bool {
	for name := range tables {
		if strings.Contains(text, "{schema}."+name) {
			return true
		}
	}
	return false
}
