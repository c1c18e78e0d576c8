package postgres

// The team-filter check of docs/scaling.md: every SQL statement of the store names the team of every
// team-scoped table it reads or writes, so that on a distributed PostgreSQL (team_id as the
// distribution column) each statement routes to the one node holding its team. The check is
// textual and deliberately simple (see teamFilterProblems); it fails on a new statement that reads
// a team-scoped table without an equality on that table's team_id.

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// sqlStatement is one SQL text of the store, named for messages and for the allow-list.
type sqlStatement struct {
	name   string // the text's "-- name: X", else where it was found
	origin string // file and constant (or line) it came from, or the builder that made it
	text   string
}

// statementKeyword marks a Go string as SQL: upper-case keywords only, so English prose in error
// messages ("with", "update") is not taken for a statement.
var statementKeyword = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)

// statementName reads the "-- name: X" comment a statement of the store begins with.
var statementName = regexp.MustCompile(`^\s*--\s*name:\s*(\w+)`)

// goStatements parses the package's non-test Go files in dir and returns every SQL text written in
// them: each string constant (evaluated through "+" and other constants) that contains a statement
// keyword and is not itself part of another constant (such a fragment is checked inside the
// constants that use it), and each string literal outside constants that contains one. fragments
// names the constants that are parts of statements built at run time rather than of constants;
// they are left out here (the builders' statements are checked instead).
func goStatements(dir string, fragments map[string]string) ([]sqlStatement, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	consts := map[string]ast.Expr{}
	origins := map[string]string{}
	var literals []sqlStatement
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return nil, err
		}
		if err := collectConsts(f, filepath.Base(path), consts, origins); err != nil {
			return nil, err
		}
		literals = append(literals, nonConstLiterals(fset, f)...)
	}
	used := map[string]bool{}
	for _, e := range consts {
		ast.Inspect(e, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && consts[id.Name] != nil {
				used[id.Name] = true
			}
			return true
		})
	}
	var out []sqlStatement
	for name, e := range consts {
		text, ok := evalString(e, consts, 0)
		if !ok || used[name] || fragments[name] != "" || !statementKeyword.MatchString(text) {
			continue
		}
		out = append(out, sqlStatement{name: nameOf(text, name), origin: origins[name], text: text})
	}
	out = append(out, literals...)
	sort.Slice(out, func(i, j int) bool { return out[i].origin < out[j].origin })
	return out, nil
}

// collectConsts records every constant declared in f, at package level or inside a function.
func collectConsts(f *ast.File, file string, consts map[string]ast.Expr, origins map[string]string) error {
	var err error
	ast.Inspect(f, func(n ast.Node) bool {
		d, ok := n.(*ast.GenDecl)
		if !ok || d.Tok != token.CONST {
			return true
		}
		for _, spec := range d.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if consts[id.Name] != nil {
					err = fmt.Errorf("constant %s declared twice (%s and %s)", id.Name, origins[id.Name], file)
				}
				consts[id.Name], origins[id.Name] = vs.Values[i], file+":"+id.Name
			}
		}
		return false
	})
	return err
}

// nonConstLiterals returns the string literals of f outside constant declarations that contain a
// statement keyword.
func nonConstLiterals(fset *token.FileSet, f *ast.File) []sqlStatement {
	var out []sqlStatement
	ast.Inspect(f, func(n ast.Node) bool {
		if d, ok := n.(*ast.GenDecl); ok && d.Tok == token.CONST {
			return false
		}
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		text, err := strconv.Unquote(lit.Value)
		if err != nil || !statementKeyword.MatchString(text) {
			return true
		}
		pos := fset.Position(lit.Pos())
		origin := fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
		out = append(out, sqlStatement{name: nameOf(text, origin), origin: origin, text: text})
		return true
	})
	return out
}

// evalString evaluates a constant string expression: literals, other constants and "+".
func evalString(e ast.Expr, consts map[string]ast.Expr, depth int) (string, bool) {
	if depth > 50 {
		return "", false
	}
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.Ident:
		if c := consts[x.Name]; c != nil {
			return evalString(c, consts, depth+1)
		}
	case *ast.ParenExpr:
		return evalString(x.X, consts, depth+1)
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		l, okl := evalString(x.X, consts, depth+1)
		r, okr := evalString(x.Y, consts, depth+1)
		return l + r, okl && okr
	}
	return "", false
}

// nameOf is the statement's "-- name: X", else fallback.
func nameOf(text, fallback string) string {
	if m := statementName.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return fallback
}

// teamFilterRules says what the check knows of the schema.
type teamFilterRules struct {
	// tables are the team-scoped tables (those with a team_id column).
	tables map[string]bool
	// body is set for PL/pgSQL and SQL function bodies: their table names are unqualified (the
	// functions' search_path names the schema), so names that are no table are not reported and
	// function calls are not checked.
	body bool
	// teamArgs are the schema's functions a statement may call: true for those that take the team as
	// their first argument and read only its rows, false for those that read no table.
	teamArgs map[string]bool
}

// sqlKeywords are the words that may follow a table reference and are not an alias.
var sqlKeywords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`WHERE JOIN LEFT RIGHT INNER FULL CROSS NATURAL ON USING SET ORDER
		GROUP LIMIT OFFSET FOR VALUES RETURNING UNION EXCEPT INTERSECT WITH SELECT DEFAULT LATERAL WINDOW
		HAVING DO FETCH TABLESAMPLE AND OR NOT AS`) {
		sqlKeywords[w] = true
	}
}

var (
	// storeRef and bodyRef find table references after FROM, JOIN, INTO, UPDATE or a comma: the
	// name, an optional alias and (for INSERT) the column list.
	storeRef = regexp.MustCompile(`(?i)(\bFROM|\bJOIN|\bINTO|\bUPDATE|,)\s+(?:ONLY\s+)?\{schema\}\.(\w+)\b(?:\s+(?:AS\s+)?(\w+))?(?:\s*\(([^)]*)\))?`)
	bodyRef  = regexp.MustCompile(`(?i)(\bFROM|\bJOIN|\bINTO|\bUPDATE|,)\s+(?:ONLY\s+)?(?:densemem\.)?(\w+)\b(?:\s+(?:AS\s+)?(\w+))?(?:\s*\(([^)]*)\))?`)
	// storeCall finds a call of a schema function and its first argument.
	storeCall = regexp.MustCompile(`\{schema\}\.(\w+)\s*\(\s*([^,)]*)`)
	// teamLeft and teamRight find team_id equalities, the qualifier on either side; teamLeft's
	// second group marks `= ANY`/`= ALL`, which spans teams and does not count.
	teamLeft  = regexp.MustCompile(`(?i)(?:(\w+)\.)?\bteam_id\s*=\s*(ANY\b|ALL\b)?`)
	teamRight = regexp.MustCompile(`(?i)(?:^|[^<>!])=\s*(?:(\w+)\.)?team_id\b`)
	// teamAnchor finds a team_id compared with a parameter (or, in a trigger or function, with the
	// row's team or the function's team argument).
	teamAnchor  = regexp.MustCompile(`(?i)\bteam_id\s*=\s*(\$\d+|\?|NEW\.team_id\b|OLD\.team_id\b|p_team\b)|(\$\d+|\?|\bp_team)\s*=\s*(\w+\.)?team_id\b`)
	teamColumn  = regexp.MustCompile(`\bteam_id\b`)
	lineComment = regexp.MustCompile(`--[^\n]*`)
	argParam    = regexp.MustCompile(`^(\$\d+|\?)`)
)

// teamFilterProblems returns what is wrong with text, empty when every reference to a team-scoped
// table is filtered by an equality on its team_id. The rules, textual on purpose:
//   - a qualified name is a known table or a call of a known function (a team-argument function
//     gets a parameter first);
//   - every reference has a team_id equality of its own: for references with alias a, as many
//     `a.team_id = …` or `… = a.team_id` as references use a; for unaliased references, as many bare
//     or table-qualified equalities; an INSERT lists team_id among its columns. `team_id = ANY(…)`
//     and `team_id IN (…)` are not equalities (they span teams);
//   - at least one team_id is compared with a parameter (in a function body also NEW/OLD.team_id or
//     p_team), so the whole statement is routed to one team's node.
func teamFilterProblems(text string, r teamFilterRules) []string {
	text = lineComment.ReplaceAllString(text, "")
	ref := storeRef
	if r.body {
		ref = bodyRef
	}
	var problems []string
	refs := map[string]int{} // alias → references; "" for unaliased ones
	var unaliased []string
	inserts := 0
	for _, m := range ref.FindAllStringSubmatch(text, -1) {
		name, alias, cols := m[2], m[3], m[4]
		switch {
		case r.tables[name] && strings.EqualFold(m[1], "INTO"):
			inserts++
			if !teamColumn.MatchString(cols) {
				problems = append(problems, fmt.Sprintf("inserts into %s without team_id", name))
			}
		case r.tables[name]:
			if sqlKeywords[strings.ToUpper(alias)] {
				alias = ""
			}
			refs[alias]++
			if alias == "" {
				unaliased = append(unaliased, name)
			}
		case !r.body && !r.isCall(text, name):
			problems = append(problems, fmt.Sprintf("reads %s, which is not a known team-scoped table", name))
		}
	}
	if !r.body {
		problems = append(problems, r.callProblems(text)...)
	}
	problems = append(problems, equalityProblems(text, refs, unaliased)...)
	if len(refs) > 0 && !teamAnchor.MatchString(text) {
		problems = append(problems, "no team_id is compared with a parameter: the statement is not routed to one team")
	}
	return problems
}

// isCall reports whether text calls the schema function name.
func (r teamFilterRules) isCall(text, name string) bool {
	for _, m := range storeCall.FindAllStringSubmatch(text, -1) {
		if m[1] == name {
			return true
		}
	}
	return false
}

// callProblems checks every call of a schema function: it must be known, and a team-argument
// function must get a parameter as its team.
func (r teamFilterRules) callProblems(text string) []string {
	var problems []string
	for _, m := range storeCall.FindAllStringSubmatch(text, -1) {
		if r.tables[m[1]] {
			continue // INSERT INTO t (…): a column list, not a call
		}
		teamArg, known := r.teamArgs[m[1]]
		switch {
		case !known:
			problems = append(problems, fmt.Sprintf("calls %s, which is not a known function of the schema", m[1]))
		case teamArg && !argParam.MatchString(strings.TrimSpace(m[2])):
			problems = append(problems, fmt.Sprintf("calls %s without a parameter as its team", m[1]))
		}
	}
	return problems
}

// equalityProblems compares each alias's references (refs; unaliased names the tables referenced
// without one) with the team_id equalities of text.
func equalityProblems(text string, refs map[string]int, unaliased []string) []string {
	mentions := map[string]int{} // qualifier → equalities; "" for bare team_id
	for _, m := range teamLeft.FindAllStringSubmatch(text, -1) {
		if m[2] == "" {
			mentions[m[1]]++
		}
	}
	for _, m := range teamRight.FindAllStringSubmatch(text, -1) {
		mentions[m[1]]++
	}
	var problems []string
	aliases := make([]string, 0, len(refs))
	for a := range refs {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	for _, a := range aliases {
		if a == "" {
			continue
		}
		if n := refs[a]; mentions[a] < n {
			problems = append(problems, fmt.Sprintf("%d reference(s) as %s but %d equalities on %s.team_id", n, a, mentions[a], a))
		}
	}
	if n := refs[""]; n > 0 {
		have := mentions[""]
		seen := map[string]bool{}
		for _, t := range unaliased {
			if !seen[t] {
				seen[t], have = true, have+mentions[t]
			}
		}
		if have < n {
			problems = append(problems, fmt.Sprintf("%d unaliased reference(s) (%s) but %d team_id equalities", n,
				strings.Join(unaliased, ", "), have))
		}
	}
	return problems
}
