// Package benchload bulk-loads one team's knowledge with COPY, for recall benchmarks. It is not part
// of the public API: it writes the library's tables directly, past the write pipeline, so that a
// team with 100k relationships loads in seconds instead of the minutes 100k Remember calls take.
//
// Every row is one the write pipeline could have written: each relationship has its entities and
// their canonical names, one evidence fragment with its content, one observation, one entailed
// verification, the observation's entity resolution events, one support link and one creation
// transition (to_version 1, matching its status, tier and valid_to); a superseded relationship also
// has its supersession transition (to_version 2). Everything is copied in one transaction with row
// triggers off; before COMMIT set-based queries check every foreign key of the loaded tables and the
// rules of the deferred transition triggers, and a violation rolls the whole load back.
//
// The team, the owner profile and the two predicates must exist first; create them through the
// public client (CreateTeam, CreateProfile, RegisterPredicate) so that the bulk rows reference
// what the library made.
//
// Two kinds of relationships are loaded:
//
//   - Filler: active, undated relationships between entities with unique generated names
//     ("amber-falcon-river"), alternating the state predicate (environment → git_branch) and the
//     many predicate (person → project), with evidence drawn from a word list, so that the GIN
//     indexes over fragment content and entity names hold realistic posting lists. Filler never
//     matches a query subject's name.
//   - Query subjects: Params.Subjects entities named "qsubject-00", "qsubject-01", …, each with
//     exactly PerSubject relationships whatever the team's size (see Params.Want for what each
//     view finds).
//
// Recorded times (created_at) are spread over [Params.Start, Params.End()).
package benchload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/migrations"
)

// PerSubject is the number of relationships every query subject has, at every team size.
const PerSubject = 5

// activePerSubject is how many of a query subject's relationships are active now.
const activePerSubject = 4

// DefaultSubjects is the number of query subjects when Params.Subjects is zero.
const DefaultSubjects = 20

// Default predicates: those of the test vocabulary (helpers_test.go).
const (
	DefaultStatePredicate = "deploys_from"
	DefaultManyPredicate  = "works_on"
)

// View is one of the three recall views a query subject is designed for.
type View string

// The recall views.
const (
	// ViewCurrent is recall without times.
	ViewCurrent View = "current"
	// ViewValidAt is recall with valid_at = Params.ValidAt().
	ViewValidAt View = "valid_at"
	// ViewKnownAt is recall with known_at = Params.KnownAt().
	ViewKnownAt View = "known_at"
)

// Views lists the recall views in a fixed order.
var Views = []View{ViewCurrent, ViewValidAt, ViewKnownAt}

// Params describes what Load writes.
type Params struct {
	// Team and Owner name an existing team and one of its profiles: the owner of every relationship
	// and the author of every fragment.
	Team, Owner string
	// Active is the number of active relationships the team holds after Load, the query subjects'
	// included. It must be at least 4 × Subjects.
	Active int
	// Subjects is the number of query subjects (0 means DefaultSubjects; at most 100).
	Subjects int
	// Start is the recorded time of the first row; Span (default 365 days) spreads them.
	Start time.Time
	Span  time.Duration
	// StatePredicate (default deploys_from) is a registered state predicate of cardinality one
	// between an environment and a git_branch; ManyPredicate (default works_on) a registered
	// predicate of cardinality many. Load uses the latest version of each.
	StatePredicate, ManyPredicate string
	// SourceKey and SourceRevision, when set, make every fragment one of that revision of that source
	// (its source group "source:<key>"), as a source revision's tests need; else fragments have none.
	SourceKey, SourceRevision string
	// SkipResolutions leaves entity_resolution_events empty (Recall does not read them; Trace does).
	SkipResolutions bool
	// Seed varies the generated evidence text; names and IDs do not depend on it.
	Seed uint64
	// Zipf, when set, gives the filler a Zipf-like vocabulary, as BenchmarkRecallAtScale needs: the
	// notes' words are drawn with probability proportional to 1/rank (the most common word is in
	// most fragments), and a share of the many-predicate filler has one of the hub entities as its
	// subject (HubName(h) is the subject of HubShare(h) of the filler, 10% down to 1%). Without it
	// Load writes exactly what it wrote before hubs existed.
	Zipf bool
	// Popular, when set, adds one popular subject per entry, a person named PopularName(n), holding
	// n active relationships of ManyPredicate on its one conflict key (cardinality many), each to a
	// project of its own: the shape of an entity every Remember about it names (issue 21).
	Popular []int
	// History, when set, adds one subject, an environment named HistoryName(History), with History
	// dated versions of StatePredicate on its one conflict key (cardinality one), one a day, each
	// superseded by the next from its valid_from: a fact restated over years, History-1 closed
	// versions and the last one current.
	History int
	// Logf, when set, receives the time each step of the load took.
	Logf func(format string, args ...any)
}

// PopularName returns the name of the popular subject with n relationships: "popular-1000".
func PopularName(n int) string { return fmt.Sprintf("popular-%d", n) }

// HistoryName returns the name of the subject with n versions: "history-1000".
func HistoryName(n int) string { return fmt.Sprintf("history-%d", n) }

// extra returns the number of relationships Popular and History add.
func (p Params) extra() int {
	n := p.History
	for _, k := range p.Popular {
		n += k
	}
	return n
}

func (p Params) withDefaults() Params {
	if p.Subjects == 0 {
		p.Subjects = DefaultSubjects
	}
	if p.Span == 0 {
		p.Span = 365 * 24 * time.Hour
	}
	if p.StatePredicate == "" {
		p.StatePredicate = DefaultStatePredicate
	}
	if p.ManyPredicate == "" {
		p.ManyPredicate = DefaultManyPredicate
	}
	p.Start = p.Start.UTC().Truncate(time.Microsecond)
	return p
}

func (p Params) check() error {
	var errs []error
	if p.Team == "" || p.Owner == "" {
		errs = append(errs, errors.New("team and owner are required"))
	}
	if p.Subjects < 0 || p.Subjects > 100 {
		errs = append(errs, fmt.Errorf("subjects %d: want 0..100", p.Subjects))
	}
	if p.Active < activePerSubject*p.Subjects {
		errs = append(errs, fmt.Errorf("active %d: want at least %d (4 per query subject)", p.Active, activePerSubject*p.Subjects))
	}
	for _, k := range p.Popular {
		if k < 1 {
			errs = append(errs, fmt.Errorf("popular %d: want at least 1", k))
		}
	}
	if p.History < 0 {
		errs = append(errs, fmt.Errorf("history %d: want at least 0", p.History))
	}
	if 2*p.Active+p.extra()+PerSubject*p.Subjects > nameSpace-PerSubject*100 {
		errs = append(errs, fmt.Errorf("active %d: too many for the generated names", p.Active))
	}
	if p.Start.IsZero() {
		errs = append(errs, errors.New("start is required"))
	}
	if p.Span < 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("span %s: want at least 30 days", p.Span))
	}
	return errors.Join(errs...)
}

// Filler returns the number of filler relationships Load writes.
func (p Params) Filler() int {
	p = p.withDefaults()
	return p.Active - activePerSubject*p.Subjects
}

// SubjectCount returns the number of query subjects (Subjects, or DefaultSubjects).
func (p Params) SubjectCount() int { return p.withDefaults().Subjects }

// SubjectName returns the name of query subject i: "qsubject-07". It is also the recall query.
func (p Params) SubjectName(i int) string { return fmt.Sprintf("qsubject-%02d", i) }

// End returns the recorded time after every loaded row. Move the client's clock past it before
// recalling the current view.
func (p Params) End() time.Time {
	p = p.withDefaults()
	return p.Start.Add(p.Span)
}

// KnownAt returns the known_at instant of ViewKnownAt: the middle of the recorded span.
func (p Params) KnownAt() time.Time { return p.at(0.50) }

// ValidAt returns the valid_at instant of ViewValidAt: after the superseded relationship's
// valid_from and before its successor's.
func (p Params) ValidAt() time.Time { return p.at(0.35) }

func (p Params) at(frac float64) time.Time {
	p = p.withDefaults()
	return p.Start.Add(time.Duration(frac * float64(p.Span)))
}

// The query subject's relationships, in the order Load writes them (k = 0..PerSubject-1), each with
// the fraction of the span at which it is recorded. k=0 (state predicate, valid from va) is
// superseded at k=1's recording by k=1 (same predicate, valid from vb); k=2..4 use the many
// predicate, are undated and stay active.
var subjectPlan = [PerSubject]struct {
	frac     float64
	state    bool
	validity float64 // fraction of the span of valid_from's date; 0 = undated
}{
	{0.20, true, 0.10},
	{0.60, true, 0.60},
	{0.30, false, 0},
	{0.40, false, 0},
	{0.70, false, 0},
}

// viewPlan lists the relationships (k) each view finds for a query subject:
//
//	current   k=1..4: the successor and the three undated ones; the superseded k=0 is not active
//	valid_at  k=0,2,3,4: k=0 was valid then, k=1 only from its later valid_from
//	known_at  k=0,2,3: recorded by the middle of the span; k=0 was still active then
var viewPlan = map[View][]int{
	ViewCurrent: {1, 2, 3, 4},
	ViewValidAt: {0, 2, 3, 4},
	ViewKnownAt: {0, 2, 3},
}

// Want returns the object names of the relationships that recall of query subject i finds in view
// v, sorted.
func (p Params) Want(i int, v View) []string {
	var out []string
	for _, k := range viewPlan[v] {
		out = append(out, subjectObjectName(i, k))
	}
	slices.Sort(out)
	return out
}

// SupersededObject returns the object name of query subject i's superseded relationship: ViewValidAt
// finds it with status superseded, ViewKnownAt with status active (its state at known_at).
func (p Params) SupersededObject(i int) string { return subjectObjectName(i, 0) }

// subjectObjectName is the object name of query subject i's relationship k. Names are drawn from
// the top of the name space, filler from the bottom, so they never collide.
func subjectObjectName(i, k int) string { return generatedName(nameSpace - 1 - (i*PerSubject + k)) }

// hubNames are the names of the hub entities, none of them a word of the note vocabulary.
var hubNames = [...]string{"orion", "vega", "altair", "sirius", "rigel", "deneb", "polaris", "antares", "capella", "procyon"}

// HubCount is the number of hub entities a Zipf load has.
const HubCount = len(hubNames)

// HubName returns the name of hub h (0 <= h < HubCount), a single word: the recall query of a
// common entity name.
func (p Params) HubName(h int) string { return hubNames[h] }

// HubShare returns the share of the filler whose subject is hub h in a Zipf load: 10%/(h+1), so
// from 10% (hub 0) down to 1% (hub 9). Hubs are subjects of the many predicate only (a state
// predicate of cardinality one cannot hold that many active objects for one subject).
func (p Params) HubShare(h int) float64 { return 0.10 / float64(h+1) }

// zipfCumulative is the cumulative distribution of the note words under Zipf's law (s = 1).
var zipfCumulative = func() [len(words)]float64 {
	var c [len(words)]float64
	sum := 0.0
	for i := range words {
		sum += 1 / float64(i+1)
		c[i] = sum
	}
	for i := range c {
		c[i] /= sum
	}
	return c
}()

// zipfWord draws a note word with probability proportional to 1/rank.
func zipfWord(rng *rand.Rand) string {
	u := rng.Float64()
	i, _ := slices.BinarySearch(zipfCumulative[:], u)
	return words[min(i, len(words)-1)]
}

// ZipfWord returns the note word of rank i (0 the most common) of a Zipf load.
func ZipfWord(i int) string { return words[i%len(words)] }

// hubOf returns the hub whose subject filler relationship i (of the many predicate) has in a Zipf
// load, or -1: a fixed function of i, so that names and IDs do not depend on the seed.
func (p Params) hubOf(i int) int {
	if !p.Zipf || i%2 == 0 {
		return -1
	}
	// Many-predicate filler is half of it: twice the share among those gives the share of all.
	u := float64(splitmix(uint64(i)^0x5a17f00d)>>11) / (1 << 53)
	acc := 0.0
	for h := range HubCount {
		acc += 2 * p.HubShare(h)
		if u < acc {
			return h
		}
	}
	return -1
}

// Load copies the team's relationships with their evidence in one transaction, then runs VACUUM
// (ANALYZE) over the loaded tables, as autovacuum would have in production.
func Load(ctx context.Context, pool *pgxpool.Pool, p Params) error {
	p = p.withDefaults()
	if err := p.check(); err != nil {
		return fmt.Errorf("benchload: %w", err)
	}
	step := time.Now()
	logStep := func(what string) {
		if p.Logf != nil {
			p.Logf("benchload: %s: %s", what, time.Since(step).Round(time.Millisecond))
		}
		step = time.Now()
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("benchload: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Row triggers are off for the copies: the foreign-key triggers' plans were made when the tables
	// were empty, and a plan that finds the parent by team alone scans the whole team for every
	// copied row (a 100k load took over ten minutes). Verify checks the same rules set-based
	// before COMMIT instead. Setting the role needs a superuser, which the test databases have.
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return fmt.Errorf("benchload: disable row triggers for the load (needs a superuser): %w", err)
	}
	l := &loader{p: p}
	if err := l.predicates(ctx, tx); err != nil {
		return fmt.Errorf("benchload: %w", err)
	}
	l.plan()
	logStep("plan")
	for _, t := range l.tables() {
		n, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.columns, pgx.CopyFromSlice(t.rows, t.row))
		if err != nil {
			return fmt.Errorf("benchload: copy %s: %w", t.name, err)
		}
		if int(n) != t.rows {
			return fmt.Errorf("benchload: copy %s: copied %d rows, want %d", t.name, n, t.rows)
		}
		logStep(fmt.Sprintf("copy %d rows into %s", n, t.name))
	}
	// The recall postings (migration 23) are written by a row trigger of fragment_contents, which the
	// copy switched off: one set-based insert writes what it would have for the copied fragments (by
	// ID: what the team held before has its postings, whatever its recorded time), in the index's
	// order so that the index grows at its end (in fragment order, 1M fragments' 19M postings took
	// 7 min 47 s and left the index a third larger than a build).
	copied := make([]string, len(l.rels))
	for i := range l.rels {
		copied[i] = l.id("frg", &l.rels[i])
	}
	if _, err := tx.Exec(ctx, `INSERT INTO recall_postings (team_id, lexeme, impact, created_at, fragment_id)
WITH c AS (SELECT c.team_id, c.fragment_id, c.search FROM fragment_contents c
    WHERE c.team_id = $1 AND c.fragment_id = ANY($2::text[])) `+migrations.PostingsFromContents+`
ORDER BY 2, 3 DESC, 4, 5`, p.Team, copied); err != nil {
		return fmt.Errorf("benchload: recall postings: %w", err)
	}
	logStep("recall postings")
	if err := Verify(ctx, tx, loadedTables); err != nil {
		return fmt.Errorf("benchload: %w", err)
	}
	logStep("verify foreign keys and transitions")
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("benchload: commit: %w", err)
	}
	logStep("commit")
	if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(loadedTables, ", ")); err != nil {
		return fmt.Errorf("benchload: vacuum: %w", err)
	}
	logStep("vacuum analyze")
	return nil
}

// transitionChecks are the rules of the deferred triggers relationships_have_transition and
// relationship_transitions_match, set-based: each finds the rows that break its rule.
var transitionChecks = map[string]string{
	"relationship without a transition to its current version": `SELECT r.relationship_id FROM relationships r
WHERE NOT EXISTS (SELECT 1 FROM relationship_transitions t WHERE t.team_id = r.team_id AND t.relationship_id = r.relationship_id
    AND t.to_version = r.version AND t.to_status = r.status AND t.to_tier = r.tier AND t.to_valid_to IS NOT DISTINCT FROM r.valid_to)`,
	"transition without its relationship change": `SELECT t.relationship_id FROM relationship_transitions t
LEFT JOIN relationships r ON r.team_id = t.team_id AND r.relationship_id = t.relationship_id
WHERE r.relationship_id IS NULL OR r.version < t.to_version
   OR (r.version = t.to_version AND (r.status <> t.to_status OR r.tier <> t.to_tier OR r.valid_to IS DISTINCT FROM t.to_valid_to))`,
}

// foreignKeysSQL lists the foreign keys of the loaded tables as child table, child columns, parent
// table and parent columns.
const foreignKeysSQL = `SELECT c.conrelid::regclass::text, c.confrelid::regclass::text,
  array(SELECT quote_ident(attname) FROM unnest(c.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.i),
  array(SELECT quote_ident(attname) FROM unnest(c.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.i)
FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid = ANY($1::regclass[]) ORDER BY 1, 2`

// Verify checks, before COMMIT, what row triggers switched off for a bulk copy (session_replication_role
// = replica) would have: every foreign key of the named tables, and the rules of the deferred
// transition triggers. Its error names the broken rule and one offending row.
func Verify(ctx context.Context, tx pgx.Tx, tables []string) error {
	rows, err := tx.Query(ctx, foreignKeysSQL, tables)
	if err != nil {
		return err
	}
	type fk struct {
		child, parent         string
		childCols, parentCols []string
	}
	fks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fk, error) {
		var f fk
		err := r.Scan(&f.child, &f.parent, &f.childCols, &f.parentCols)
		return f, err
	})
	if err != nil {
		return err
	}
	checks := map[string]string{}
	for name, sql := range transitionChecks {
		checks[name] = sql
	}
	for _, f := range fks {
		var match, notNull []string
		for i := range f.childCols {
			match = append(match, fmt.Sprintf("p.%s = c.%s", f.parentCols[i], f.childCols[i]))
			notNull = append(notNull, fmt.Sprintf("c.%s IS NOT NULL", f.childCols[i]))
		}
		checks[fmt.Sprintf("%s(%s) without its %s row", f.child, strings.Join(f.childCols, ", "), f.parent)] = fmt.Sprintf(
			"SELECT c.%s FROM %s c WHERE %s AND NOT EXISTS (SELECT 1 FROM %s p WHERE %s)", f.childCols[len(f.childCols)-1],
			f.child, strings.Join(notNull, " AND "), f.parent, strings.Join(match, " AND "))
	}
	for _, name := range slices.Sorted(maps.Keys(checks)) {
		var example string
		err := tx.QueryRow(ctx, checks[name]+" LIMIT 1").Scan(&example)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", name, err)
		}
		return fmt.Errorf("loaded a %s: %s", name, example)
	}
	return nil
}

// loadedTables are the tables Load writes, in foreign-key order.
var loadedTables = []string{"entities", "entity_names", "evidence_fragments", "fragment_contents", "observations",
	"verification_events", "entity_resolution_events", "relationships", "support_links", "relationship_transitions",
	"recall_postings"}

// rel is one relationship to load, with what its rows need.
type rel struct {
	n          uint64 // row number: unique, the sequence part of its IDs
	at         time.Time
	state      bool // the state predicate (else the many predicate)
	subjName   string
	subjKind   string
	objName    string
	objKind    string
	subjOwner  int  // index of the rel whose row creates the subject entity
	newSubject bool // this rel creates its subject entity
	content    string
	spanEnd    int
	hash       string
	validFrom  *time.Time
	// supersededBy is the index of the rel that superseded this one, or -1.
	supersededBy int
	validTo      *time.Time // set with supersededBy
}

type loader struct {
	p        Params
	stateVer int
	manyVer  int
	rels     []rel
}

func (l *loader) predicates(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT predicate_key, max(version) FROM predicate_definitions
WHERE team_id = $1 AND predicate_key = ANY($2::text[]) GROUP BY predicate_key`,
		l.p.Team, []string{l.p.StatePredicate, l.p.ManyPredicate})
	if err != nil {
		return err
	}
	versions := map[string]int{}
	for rows.Next() {
		var key string
		var v int
		if err := rows.Scan(&key, &v); err != nil {
			return err
		}
		versions[key] = v
	}
	if err := rows.Err(); err != nil {
		return err
	}
	l.stateVer, l.manyVer = versions[l.p.StatePredicate], versions[l.p.ManyPredicate]
	if l.stateVer == 0 || l.manyVer == 0 {
		return fmt.Errorf("predicates %q and %q must be registered in team %s first", l.p.StatePredicate, l.p.ManyPredicate, l.p.Team)
	}
	return nil
}

// plan builds every relationship: the filler first, then each query subject's PerSubject.
func (l *loader) plan() {
	p := l.p
	filler := p.Active - activePerSubject*p.Subjects
	l.rels = make([]rel, 0, filler+PerSubject*p.Subjects+p.extra())
	hubFirst := [HubCount]int{}
	for h := range hubFirst {
		hubFirst[h] = -1
	}
	for i := range filler {
		at := p.Start.Add(time.Duration(float64(p.Span) * float64(i) / float64(filler)))
		r := rel{n: uint64(len(l.rels)), at: at, state: i%2 == 0, subjName: generatedName(2 * i),
			objName: generatedName(2*i + 1), subjOwner: len(l.rels), newSubject: true, supersededBy: -1}
		if h := p.hubOf(i); h >= 0 {
			r.subjName, r.subjKind = hubNames[h], "person"
			if hubFirst[h] < 0 {
				hubFirst[h] = len(l.rels)
			} else {
				r.subjOwner, r.newSubject = hubFirst[h], false
			}
		}
		l.rels = append(l.rels, l.describe(r))
	}
	for s := range p.Subjects {
		first := len(l.rels)
		for k, plan := range subjectPlan {
			// Offsets of a few minutes keep the subjects' rows apart without crossing the view instants.
			at := p.at(plan.frac).Add(time.Duration(s) * time.Minute)
			r := rel{n: uint64(len(l.rels)), at: at, state: plan.state, subjName: p.SubjectName(s), subjKind: "environment",
				objName: subjectObjectName(s, k), subjOwner: first, newSubject: k == 0, supersededBy: -1}
			if plan.validity > 0 {
				vf := p.at(plan.validity).Truncate(24 * time.Hour)
				r.validFrom = &vf
			}
			l.rels = append(l.rels, l.describe(r))
		}
		// k=1 supersedes k=0 from its valid_from on (design §6.4 step 4).
		l.rels[first].supersededBy = first + 1
		l.rels[first].validTo = l.rels[first+1].validFrom
	}
	l.planPopular(2 * filler)
}

// planPopular adds the popular subjects' relationships and the history subject's versions, their
// objects named from generated name nextName on (after the filler's), recorded across the span.
func (l *loader) planPopular(nextName int) {
	p := l.p
	spread := func(k, n int) time.Time { return p.Start.Add(time.Duration(float64(p.Span) * float64(k) / float64(n))) }
	for _, n := range p.Popular {
		first := len(l.rels)
		for k := range n {
			r := rel{n: uint64(len(l.rels)), at: spread(k, n), subjName: PopularName(n), subjKind: "person",
				objName: generatedName(nextName), subjOwner: first, newSubject: k == 0, supersededBy: -1}
			nextName++
			l.rels = append(l.rels, l.describe(r))
		}
	}
	if p.History == 0 {
		return
	}
	first := len(l.rels)
	day := p.Start.Truncate(24*time.Hour).AddDate(0, 0, -p.History)
	for k := range p.History {
		vf := day.AddDate(0, 0, k)
		r := rel{n: uint64(len(l.rels)), at: spread(k, p.History), state: true, subjName: HistoryName(p.History),
			subjKind: "environment", objName: generatedName(nextName), subjOwner: first, newSubject: k == 0,
			supersededBy: -1, validFrom: &vf}
		nextName++
		l.rels = append(l.rels, l.describe(r))
	}
	for i := first; i < len(l.rels)-1; i++ {
		l.rels[i].supersededBy, l.rels[i].validTo = i+1, l.rels[i+1].validFrom
	}
}

// describe fills a rel's kinds and evidence.
func (l *loader) describe(r rel) rel {
	rng := rand.New(rand.NewPCG(l.p.Seed, r.n))
	var sentence string
	switch {
	case r.state:
		if r.subjKind == "" {
			r.subjKind = "environment"
		}
		r.objKind = "git_branch"
		sentence = fmt.Sprintf("The %s environment deploys from the %s branch.", r.subjName, r.objName)
		if r.validFrom != nil {
			sentence = fmt.Sprintf("Since %s the %s environment deploys from the %s branch.",
				r.validFrom.Format(time.DateOnly), r.subjName, r.objName)
		}
	default:
		if r.subjKind == "" {
			r.subjKind = "person"
		}
		r.objKind = "project"
		sentence = fmt.Sprintf("%s works on the %s project.", r.subjName, r.objName)
	}
	// A note of 6 to 14 words from the list follows the cited sentence.
	note := make([]string, 6+rng.IntN(9))
	for i := range note {
		if l.p.Zipf {
			note[i] = zipfWord(rng)
		} else {
			note[i] = words[rng.IntN(len(words))]
		}
	}
	r.content = sentence + " Notes: " + strings.Join(note, " ") + "."
	r.spanEnd = len(sentence)
	r.hash = evidence.ContentHash(r.content)
	return r
}

// ids of one rel's rows.
func (l *loader) id(prefix string, r *rel) string { return newID(prefix, r.at, r.n) }

func (l *loader) subjectID(r *rel) string {
	owner := &l.rels[r.subjOwner]
	return newID("ent", owner.at, 2*owner.n)
}

func (l *loader) objectID(r *rel) string { return newID("ent", r.at, 2*r.n+1) }

func (l *loader) predicate(r *rel) (string, int) {
	if r.state {
		return l.p.StatePredicate, l.stateVer
	}
	return l.p.ManyPredicate, l.manyVer
}

// table is one COPY: its columns and how to build row i.
type table struct {
	name    string
	columns []string
	rows    int
	row     func(i int) ([]any, error)
}

// tables returns the COPY of every loaded table, parents first.
func (l *loader) tables() []table {
	ents := l.entityRows()
	return []table{
		l.entitiesTable(ents),
		l.entityNamesTable(ents),
		l.fragmentsTable(),
		l.fragmentContentsTable(),
		l.observationsTable(),
		l.verificationsTable(),
		l.resolutionsTable(),
		l.relationshipsTable(),
		l.supportsTable(),
		l.transitionsTable(),
	}
}

// entityRow is one entity row: the subject (subject true) or the object of rel l.rels[rel].
type entityRow struct {
	rel     int
	subject bool
}

// entityRows maps entity row i to (rel index, subject?): every rel's object, and the subject of the
// rels that create theirs.
func (l *loader) entityRows() []entityRow {
	var ents []entityRow
	for i := range l.rels {
		if l.rels[i].newSubject {
			ents = append(ents, entityRow{i, true})
		}
		ents = append(ents, entityRow{i, false})
	}
	return ents
}

// entity returns the ID, name and kind of entity row e, and the rel it comes from.
func (l *loader) entity(e entityRow) (id, name, kind string, r *rel) {
	r = &l.rels[e.rel]
	if e.subject {
		return l.subjectID(r), r.subjName, r.subjKind, r
	}
	return l.objectID(r), r.objName, r.objKind, r
}

// entitiesTable copies one entity per entity row.
func (l *loader) entitiesTable(ents []entityRow) table {
	p := l.p
	empty := []byte("{}")
	return table{"entities", []string{"team_id", "entity_id", "entity_kind", "identity_context", "created_by", "ingest_id", "created_at"},
		len(ents), func(i int) ([]any, error) {
			id, _, kind, r := l.entity(ents[i])
			return []any{p.Team, id, kind, empty, p.Owner, l.id("ing", r), r.at}, nil
		}}
}

// entityNamesTable copies the canonical name of each entity row.
func (l *loader) entityNamesTable(ents []entityRow) table {
	p := l.p
	return table{"entity_names", []string{"team_id", "entity_id", "name", "normalized_name", "skeleton", "name_kind", "created_at"},
		len(ents), func(i int) ([]any, error) {
			id, name, _, r := l.entity(ents[i])
			key := identity.NormalizeName(name)
			return []any{p.Team, id, name, key, identity.Skeleton(key), "canonical", r.at}, nil
		}}
}

// fragmentsTable copies one evidence fragment per rel.
func (l *loader) fragmentsTable() table {
	p, rels := l.p, l.rels
	return table{"evidence_fragments", []string{"team_id", "fragment_id", "ingest_id", "evidence_index", "author_profile_id",
		"source_type", "authority", "source_group", "source_key", "source_revision", "content_sha256", "content_length", "created_at"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			return []any{p.Team, l.id("frg", r), l.id("ing", r), 0, p.Owner, "manual", "standard", evidence.GroupLabel(p.SourceKey, "", r.hash),
				p.SourceKey, p.SourceRevision, r.hash, len(r.content), r.at}, nil
		}}
}

// fragmentContentsTable copies the content of each rel's fragment.
func (l *loader) fragmentContentsTable() table {
	p, rels := l.p, l.rels
	return table{"fragment_contents", []string{"team_id", "fragment_id", "content"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			return []any{p.Team, l.id("frg", r), r.content}, nil
		}}
}

// observationsTable copies one observation per rel, citing its sentence.
func (l *loader) observationsTable() table {
	p, rels := l.p, l.rels
	return table{"observations", []string{"team_id", "observation_id", "ingest_id", "profile_id", "proposal_id", "subject_ref",
		"subject_name", "predicate_phrase", "predicate_key", "predicate_version", "object_ref", "object_name", "object_value",
		"polarity", "modality", "scope", "valid_from", "valid_to", "citations", "created_at"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			key, ver := l.predicate(r)
			citations := fmt.Appendf(nil, `[{"evidence_index": 0, "start": 0, "end": %d}]`, r.spanEnd)
			return []any{p.Team, l.id("obs", r), l.id("ing", r), p.Owner, "p1", "s", r.subjName, key, key, ver, "o",
				r.objName, nil, "+", "statement", "", r.validFrom, nil, citations, r.at}, nil
		}}
}

// verificationsTable copies one entailed verification per rel's observation.
func (l *loader) verificationsTable() table {
	p, rels := l.p, l.rels
	return table{"verification_events", []string{"team_id", "verification_id", "observation_id", "verifier", "verdict", "confidence",
		"rationale", "confirmed_valid_from", "support_granted", "created_at"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			rationale := "cited text names subject and object with matching polarity"
			if r.validFrom != nil {
				rationale += "; valid_from stated in cited text"
			}
			return []any{p.Team, l.id("ver", r), l.id("obs", r), "span_verifier", "entailed", 1.0, rationale, r.validFrom,
				true, r.at}, nil
		}}
}

// resolutionsTable copies two resolution events per rel, its subject's and its object's, unless
// SkipResolutions says none.
func (l *loader) resolutionsTable() table {
	p, rels := l.p, l.rels
	resolutions := 2 * len(rels)
	if p.SkipResolutions {
		resolutions = 0
	}
	return table{"entity_resolution_events", []string{"team_id", "resolution_id", "observation_id", "mention_ref", "mention_name",
		"entity_kind", "entity_id", "decision", "candidate_ids", "profile_id", "ingest_id", "created_at"},
		resolutions, func(i int) ([]any, error) {
			r := &rels[i/2]
			ref, name, kind, id, decision := "s", r.subjName, r.subjKind, l.subjectID(r), "created"
			if i%2 == 1 {
				ref, name, kind, id = "o", r.objName, r.objKind, l.objectID(r)
			} else if !r.newSubject {
				decision = "reused"
			}
			return []any{p.Team, newID("res", r.at, 2*r.n+uint64(i%2)), l.id("obs", r), ref, name, kind, id, decision,
				[]string{}, p.Owner, l.id("ing", r), r.at}, nil
		}}
}

// relationshipsTable copies one relationship per rel, superseded at version 2 when a later rel
// supersedes it.
func (l *loader) relationshipsTable() table {
	p, rels := l.p, l.rels
	return table{"relationships", []string{"team_id", "relationship_id", "owner_profile_id", "subject_entity_id", "predicate_key",
		"predicate_version", "object_entity_id", "object_value_id", "polarity", "scope", "valid_from", "valid_to", "status",
		"tier", "version", "observation_id", "ingest_id", "created_at", "updated_at"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			key, ver := l.predicate(r)
			status, version, updated := "active", 1, r.at
			if r.supersededBy >= 0 {
				status, version, updated = "superseded", 2, rels[r.supersededBy].at
			}
			return []any{p.Team, l.id("rel", r), p.Owner, l.subjectID(r), key, ver, l.objectID(r), nil, "+", "",
				r.validFrom, r.validTo, status, "validated_claim", version, l.id("obs", r), l.id("ing", r), r.at, updated}, nil
		}}
}

// supportsTable copies the support link of each rel's relationship.
func (l *loader) supportsTable() table {
	p, rels := l.p, l.rels
	return table{"support_links", []string{"team_id", "support_id", "relationship_id", "fragment_id", "observation_id",
		"verification_id", "span_start", "span_end", "source_group", "content_sha256", "authority", "author_profile_id",
		"profile_id", "ingest_id", "created_at"},
		len(rels), func(i int) ([]any, error) {
			r := &rels[i]
			return []any{p.Team, l.id("sup", r), l.id("rel", r), l.id("frg", r), l.id("obs", r), l.id("ver", r), 0,
				r.spanEnd, evidence.GroupLabel(p.SourceKey, "", r.hash), r.hash, "standard", p.Owner, p.Owner, l.id("ing", r), r.at}, nil
		}}
}

// transitionsTable copies the transition rows: one creation per rel, then one supersession per
// superseded rel.
func (l *loader) transitionsTable() table {
	p, rels := l.p, l.rels
	var superseded []int
	for i := range rels {
		if rels[i].supersededBy >= 0 {
			superseded = append(superseded, i)
		}
	}
	return table{"relationship_transitions", []string{"team_id", "transition_id", "relationship_id", "from_status", "to_status",
		"from_tier", "to_tier", "from_valid_to", "to_valid_to", "from_version", "to_version", "reason", "actor_kind",
		"actor_profile_id", "related_relationship_id", "ingest_id", "idempotency_key", "created_at"},
		len(rels) + len(superseded), func(i int) ([]any, error) {
			if i < len(rels) {
				r := &rels[i]
				return []any{p.Team, newID("trn", r.at, 2*r.n), l.id("rel", r), nil, "active", nil, "validated_claim",
					nil, nil, nil, 1, "accepted", "profile", p.Owner, nil, l.id("ing", r), idempotencyKey(r), r.at}, nil
			}
			r := &rels[superseded[i-len(rels)]]
			by := &rels[r.supersededBy]
			return []any{p.Team, newID("trn", by.at, 2*by.n+1), l.id("rel", r), "active", "superseded", "validated_claim",
				"validated_claim", nil, r.validTo, 1, 2, "superseded", "profile", p.Owner, l.id("rel", by),
				l.id("ing", by), idempotencyKey(by), by.at}, nil
		}}
}

func idempotencyKey(r *rel) string { return fmt.Sprintf("benchload-%d", r.n) }

// newID returns an ID in the library's layout (identity.FormatID): the time's milliseconds, the
// row number as the sequence (so IDs are unique per prefix) and 48 bits derived from the prefix and
// the sequence.
func newID(prefix string, at time.Time, seq uint64) string {
	h := splitmix(seq ^ uint64(len(prefix))<<56 ^ uint64(prefix[0])<<48)
	var tail [6]byte
	for i := range tail {
		tail[i] = byte(h >> (8 * i))
	}
	return identity.FormatID(prefix, at.UnixMilli(), uint32(seq), tail)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// nameSpace is the number of distinct generated names: three words of 256.
const nameSpace = 1 << 24

// generatedName returns name n (0 <= n < nameSpace), three hyphenated words. An odd multiplier
// permutes the name space, so consecutive n give unrelated, still unique, names.
func generatedName(n int) string {
	m := (uint32(n)*0x9e3779 + 0x5bd1e9) & (nameSpace - 1)
	return words[m>>16] + "-" + words[(m>>8)&0xff] + "-" + words[m&0xff]
}

// words are 256 distinct lower-case words, none of them an English stop word, none containing
// "qsubject" or a digit.
var words = [256]string{
	"amber", "anchor", "apple", "arbor", "arctic", "arrow", "aspen", "atlas", "aurora", "autumn", "badger", "bamboo",
	"banner", "barley", "basalt", "beacon", "bison", "blossom", "boulder", "bramble", "breeze", "bridge", "bronze", "brook",
	"cactus", "canyon", "carbon", "cargo", "cedar", "cellar", "cherry", "cinder", "citrus", "clover", "cobalt", "comet",
	"copper", "coral", "cosmos", "cotton", "crane", "crater", "crystal", "cypress", "dahlia", "delta", "desert", "dingo",
	"dolphin", "dragon", "drift", "dune", "eagle", "ember", "emerald", "engine", "falcon", "fennel", "fern", "ferry",
	"fiddle", "fjord", "flint", "forest", "fossil", "fox", "galaxy", "garnet", "geyser", "ginger", "glacier", "granite",
	"grove", "gull", "harbor", "hazel", "heron", "hickory", "horizon", "hornet", "husky", "iris", "island", "ivory",
	"jade", "jasmine", "jetty", "juniper", "kelp", "kestrel", "kettle", "kiln", "lagoon", "lantern", "larch", "lark",
	"laurel", "lava", "lemon", "lichen", "lily", "linen", "lotus", "lynx", "magnet", "mango", "maple", "marble",
	"marsh", "meadow", "mesa", "meteor", "mint", "mist", "moose", "moss", "nectar", "nickel", "nova", "oak",
	"oasis", "ocean", "olive", "onyx", "orbit", "orchid", "osprey", "otter", "oyster", "palm", "panda", "paper",
	"pebble", "pepper", "pine", "plume", "polar", "poplar", "prairie", "prism", "puma", "quartz", "quail", "quill",
	"rain", "raven", "reef", "ridge", "river", "robin", "ruby", "saffron", "sage", "salmon", "sand", "sapphire",
	"satin", "shadow", "shale", "shell", "sierra", "silver", "slate", "sparrow", "spruce", "squall", "stone", "storm",
	"summit", "swan", "tango", "thistle", "thunder", "tiger", "timber", "topaz", "tulip", "tundra", "umber", "valley",
	"velvet", "violet", "walnut", "willow", "wind", "wolf", "yarrow", "zephyr", "zinc", "acorn", "alder", "basil",
	"birch", "cairn", "cliff", "cloud", "creek", "dawn", "dusk", "echo", "elm", "finch", "frost", "gale",
	"glade", "hawk", "heath", "hill", "holly", "lake", "leaf", "marlin", "mica", "moon", "nimbus", "oriole",
	"owl", "peak", "pearl", "petal", "pike", "pond", "quince", "rapids", "reed", "rowan", "rye", "sable",
	"shore", "sky", "snow", "solar", "spark", "spring", "star", "stream", "sun", "thorn", "tide", "trail",
	"vale", "vapor", "vine", "wave", "wren", "yew", "zenith", "birchwood", "bluff", "badland", "beetle", "bobcat",
	"caravan", "chestnut", "condor", "dove",
}
