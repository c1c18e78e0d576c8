package densemem_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// The root tests' one window onto rows the public API does not show. A behaviour test asserts through
// Trace, Recall and the list calls wherever they can see the fact; where only the database can (row
// counts, append-only ledgers, the membership history of a case, a lease), it reads here. Every read
// is a superuser's, beyond row-level security, so a test sees exactly what was stored.

// dbReader is what the ledger reads through: the pool, or the transaction of one snapshot.
type dbReader interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ledgerView reads stored rows through q, failing t on any error.
type ledgerView struct {
	t   testing.TB
	ctx context.Context
	q   dbReader
}

// ledger reads the env's database through its superuser pool: each read sees the state of its own
// moment. Reads that are checked against each other go through snapshot instead.
func (e *env) ledger() ledgerView {
	return ledgerView{t: e.t, ctx: e.ctx, q: e.pool}
}

// snapshot runs read on a ledger view of one REPEATABLE READ, READ ONLY transaction, so every read it
// makes sees the same committed state.
func (e *env) snapshot(read func(l ledgerView)) {
	e.t.Helper()
	readSnapshot(e.t, e.pool, func(tx pgx.Tx) { read(ledgerView{t: e.t, ctx: e.ctx, q: tx}) })
}

// readSnapshot runs read in one REPEATABLE READ, READ ONLY transaction, so every query read makes sees
// the same committed state: a transaction committing meanwhile (a cancelled worker's COMMIT still on
// its way) is seen whole by all of them or by none. A helper that reads related state in more than
// one query and checks it across them reads here, never through the pool, whose queries each see the
// state of their own moment and can together show a state the database never had.
func readSnapshot(t testing.TB, pool *pgxpool.Pool, read func(q pgx.Tx)) {
	t.Helper()
	err := pgx.BeginTxFunc(context.Background(), pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			read(tx)
			return nil
		})
	if err != nil {
		t.Fatalf("snapshot read: %v", err)
	}
}

// ---- tables ----

// dataTables are every table a Remember or Forget may write outside the conflict tables.
var dataTables = []string{"entities", "entity_names", "literal_values", "evidence_fragments", "fragment_contents",
	"observations", "verification_events", "entity_resolution_events", "relationships", "support_links",
	"relationship_transitions", "idempotency_records", "review_items", "fragment_retirements"}

// conflictTables are the tables of cross-references and team conflict cases.
var conflictTables = []string{"relationship_cross_references", "conflict_cases", "conflict_positions",
	"conflict_position_members", "conflict_events"}

// writtenTables are every table a Remember or Forget may write.
var writtenTables = append(slices.Clone(dataTables), conflictTables...)

// appendOnlyTable is an append-only ledger with its primary key (team_id omitted: IDs are unique).
type appendOnlyTable struct {
	table string
	pk    []string
}

// appendOnlyTables are the ledgers the database keeps append-only.
var appendOnlyTables = []appendOnlyTable{
	{"entities", []string{"entity_id"}},
	{"entity_names", []string{"entity_id", "normalized_name"}},
	{"literal_values", []string{"value_id"}},
	{"evidence_fragments", []string{"fragment_id"}},
	{"fragment_contents", []string{"fragment_id"}},
	{"observations", []string{"observation_id"}},
	{"verification_events", []string{"verification_id"}},
	{"entity_resolution_events", []string{"resolution_id"}},
	{"support_links", []string{"support_id"}},
	{"relationship_transitions", []string{"transition_id"}},
	{"idempotency_records", []string{"profile_id", "idempotency_key"}},
	{"fragment_retirements", []string{"retirement_id"}},
}

// ---- generic reads ----

// Int runs a query returning one integer.
func (l ledgerView) Int(query string, args ...any) int {
	l.t.Helper()
	var n int
	if err := l.q.QueryRow(l.ctx, query, args...).Scan(&n); err != nil {
		l.t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	return n
}

// Strings runs a query returning one text column (never nil).
func (l ledgerView) Strings(query string, args ...any) []string {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, query, args...)
	if err != nil {
		l.t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		l.t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// Keyed runs a query returning (key, text) pairs.
func (l ledgerView) Keyed(query string, args ...any) map[string]string {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, query, args...)
	if err != nil {
		l.t.Fatalf("%s: %v", strings.TrimSpace(query), err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			l.t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// Count returns the number of rows of table.
func (l ledgerView) Count(table string) int {
	l.t.Helper()
	return l.Int("SELECT count(*) FROM " + table)
}

// Counts returns the row counts of tables.
func (l ledgerView) Counts(tables []string) map[string]int {
	l.t.Helper()
	out := map[string]int{}
	for _, t := range tables {
		out[t] = l.Count(t)
	}
	return out
}

// Tables returns every table of the schema except goose's bookkeeping, so a row-count comparison
// cannot miss a table a later migration adds.
func (l ledgerView) Tables() []string {
	l.t.Helper()
	return l.Strings(`SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name NOT LIKE 'goose%'
		ORDER BY table_name`)
}

// IngestTables returns the tables that record the ingest that wrote each row.
func (l ledgerView) IngestTables() []string {
	l.t.Helper()
	return l.Strings(`SELECT c.table_name::text FROM information_schema.columns c
		JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.column_name = 'ingest_id'
		ORDER BY c.table_name`)
}

// Rows returns every row of table as JSON text, sorted: a byte-exact picture of the table.
func (l ledgerView) Rows(table string) []string {
	l.t.Helper()
	return l.Strings(fmt.Sprintf(`SELECT to_jsonb(t)::text FROM %s t ORDER BY 1`, table))
}

// Table returns every row of table as JSON text keyed by its primary key columns.
func (l ledgerView) Table(table string, pk ...string) map[string]string {
	l.t.Helper()
	return l.Keyed(fmt.Sprintf(`SELECT concat_ws('|', %s), to_jsonb(t)::text FROM %s t`, strings.Join(pk, ", "), table))
}

// AppendOnly returns every row of the given append-only tables, keyed by table and primary key.
func (l ledgerView) AppendOnly(tables []appendOnlyTable) map[string]map[string]string {
	l.t.Helper()
	out := map[string]map[string]string{}
	for _, a := range tables {
		out[a.table] = l.Table(a.table, a.pk...)
	}
	return out
}

// ---- relationships ----

// relationshipRow is the lifecycle state of one relationships row.
type relationshipRow struct {
	Status, Tier string
	ValidTo      *time.Time
	Version      int
}

// Relationship reads a relationship's stored status, tier, valid_to and version.
func (l ledgerView) Relationship(id densemem.RelationshipID) relationshipRow {
	l.t.Helper()
	var r relationshipRow
	err := l.q.QueryRow(l.ctx, `SELECT status, tier, valid_to, version FROM relationships WHERE relationship_id = $1`, id).
		Scan(&r.Status, &r.Tier, &r.ValidTo, &r.Version)
	if err != nil {
		l.t.Fatalf("relationship %s: %v", id, err)
	}
	return r
}

// transitionRow is one relationship_transitions row.
type transitionRow struct {
	From, To, Reason, ActorKind, Actor string
	FromVersion, ToVersion             int
	ToValidTo                          *time.Time
}

// String is "from->to:reason".
func (tr transitionRow) String() string { return tr.From + "->" + tr.To + ":" + tr.Reason }

// Transitions returns a relationship's transitions in version order.
func (l ledgerView) Transitions(id densemem.RelationshipID) []transitionRow {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT COALESCE(from_status, ''), to_status, reason, actor_kind,
		COALESCE(actor_profile_id, ''), COALESCE(from_version, 0), to_version, to_valid_to
		FROM relationship_transitions WHERE relationship_id = $1 ORDER BY to_version`, id)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	var out []transitionRow
	for rows.Next() {
		var tr transitionRow
		if err := rows.Scan(&tr.From, &tr.To, &tr.Reason, &tr.ActorKind, &tr.Actor, &tr.FromVersion, &tr.ToVersion,
			&tr.ToValidTo); err != nil {
			l.t.Fatal(err)
		}
		out = append(out, tr)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// TransitionsTo counts a relationship's transitions to status.
func (l ledgerView) TransitionsTo(id densemem.RelationshipID, status relationship.Status) int {
	l.t.Helper()
	return l.Int(`SELECT count(*) FROM relationship_transitions WHERE relationship_id = $1 AND to_status = $2`, id, status)
}

// Edges counts the semantic_edges rows of a relationship.
func (l ledgerView) Edges(id densemem.RelationshipID) int {
	l.t.Helper()
	return l.Int(`SELECT count(*) FROM semantic_edges WHERE relationship_id = $1`, id)
}

// Entities returns the IDs of team's entities of kind that carry name (normalised) as a name.
func (l ledgerView) Entities(team densemem.TeamID, kind, name string) []string {
	l.t.Helper()
	return l.Strings(`SELECT DISTINCT e.entity_id
		FROM entity_names n JOIN entities e ON e.team_id = n.team_id AND e.entity_id = n.entity_id
		WHERE e.team_id = $1 AND e.entity_kind = $2 AND n.normalized_name = $3
		ORDER BY e.entity_id`, team, kind, identity.NormalizeName(name))
}

// KeyStatuses returns relationship ID → status of p's relationships on (subject, predicate, scope),
// the subject named by one of its names.
func (l ledgerView) KeyStatuses(p densemem.Principal, subject, predicate, scope string) map[densemem.RelationshipID]string {
	l.t.Helper()
	out := map[densemem.RelationshipID]string{}
	for k, v := range l.Keyed(`SELECT DISTINCT r.relationship_id, r.status
		FROM relationships r
		JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
		WHERE r.team_id = $1 AND r.owner_profile_id = $2 AND n.normalized_name = $3
		  AND r.predicate_key = $4 AND r.scope = $5`,
		p.TeamID, p.ProfileID, identity.NormalizeName(subject), predicate, scope) {
		out[densemem.RelationshipID(k)] = v
	}
	return out
}

// authoredColumns are what a relationship's author wrote: the fields no lifecycle change may touch.
const authoredColumns = `relationship_id, owner_profile_id, subject_entity_id, predicate_key, predicate_version,
	COALESCE(object_entity_id, ''), COALESCE(object_value_id, ''), polarity, scope, valid_from, observation_id, ingest_id,
	created_at`

// Authored returns, per relationship, the fields its author wrote, in relationship order.
func (l ledgerView) Authored() []string {
	l.t.Helper()
	return l.Strings(`SELECT concat_ws('|', ` + authoredColumns + `) FROM relationships ORDER BY relationship_id`)
}

// WrittenBy counts the rows p authored in the knowledge tables (tables with none left out).
func (l ledgerView) WrittenBy(p densemem.Principal) map[string]int {
	l.t.Helper()
	out := map[string]int{}
	for table, col := range map[string]string{"evidence_fragments": "author_profile_id", "observations": "profile_id",
		"relationships": "owner_profile_id", "support_links": "profile_id", "idempotency_records": "profile_id",
		"relationship_cross_references": "author_profile_id", "entity_resolution_events": "profile_id",
		"review_items": "profile_id", "conflict_events": "actor_profile_id", "relationship_transitions": "actor_profile_id"} {
		if n := l.Int(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = $1", table, col), p.ProfileID); n != 0 {
			out[table] = n
		}
	}
	return out
}

// ProfileRows returns, as JSON text keyed by table and primary key, every row that belongs to profile
// p: its relationships with their supports and transitions, its observations with their verification
// and resolution events, its fragments with their content, the entities it created, its review items
// and its idempotency records.
func (l ledgerView) ProfileRows(p densemem.ProfileID) map[string]map[string]string {
	l.t.Helper()
	const owned = `(SELECT relationship_id FROM relationships WHERE owner_profile_id = $1)`
	const obs = `(SELECT observation_id FROM observations WHERE profile_id = $1)`
	const frags = `(SELECT fragment_id FROM evidence_fragments WHERE author_profile_id = $1)`
	const ents = `(SELECT entity_id FROM entities WHERE created_by = $1)`
	queries := map[string]string{
		"relationships": `SELECT relationship_id, to_jsonb(t)::text FROM relationships t WHERE owner_profile_id = $1`,
		"support_links": `SELECT support_id, to_jsonb(t)::text FROM support_links t
			WHERE relationship_id IN ` + owned + ` OR profile_id = $1 OR author_profile_id = $1`,
		"relationship_transitions": `SELECT transition_id, to_jsonb(t)::text FROM relationship_transitions t
			WHERE relationship_id IN ` + owned,
		"observations":        `SELECT observation_id, to_jsonb(t)::text FROM observations t WHERE profile_id = $1`,
		"verification_events": `SELECT verification_id, to_jsonb(t)::text FROM verification_events t WHERE observation_id IN ` + obs,
		"evidence_fragments":  `SELECT fragment_id, to_jsonb(t)::text FROM evidence_fragments t WHERE author_profile_id = $1`,
		"fragment_contents":   `SELECT fragment_id, to_jsonb(t)::text FROM fragment_contents t WHERE fragment_id IN ` + frags,
		"entity_resolution_events": `SELECT resolution_id, to_jsonb(t)::text FROM entity_resolution_events t
			WHERE observation_id IN ` + obs + ` OR profile_id = $1`,
		"entities":            `SELECT entity_id, to_jsonb(t)::text FROM entities t WHERE created_by = $1`,
		"entity_names":        `SELECT entity_id || '|' || normalized_name, to_jsonb(t)::text FROM entity_names t WHERE entity_id IN ` + ents,
		"review_items":        `SELECT review_id, to_jsonb(t)::text FROM review_items t WHERE profile_id = $1`,
		"idempotency_records": `SELECT idempotency_key, to_jsonb(t)::text FROM idempotency_records t WHERE profile_id = $1`,
	}
	out := map[string]map[string]string{}
	for table, q := range queries {
		out[table] = l.Keyed(q, p)
	}
	return out
}

// ---- conflict cases ----

// caseRow is one stored conflict case with its events and every membership row it ever had.
type caseRow struct {
	ID, Kind, Status, OpenedBy    string
	Subject, Predicate, Scope     string
	Basis, Preferred              string // effective time basis and preferred position, "" for none
	Version, Attempts, PolicyVer  int
	OpenedAt, ReviewDueAt         time.Time
	NextReviewAt                  time.Time
	ResolvedAt, EffectiveAt       *time.Time
	LastEvaluatedAt, LeaseExpires *time.Time
	ClaimToken                    *string
	Events                        []caseEvent // by version
	Members                       []caseMember
}

// caseEvent is one conflict_events row.
type caseEvent struct {
	Version                     int
	Prior, Resulting, ActorKind string
	Actor                       string // the acting profile, "" for the system and the reviewer
	Reason, IngestID, TimeBasis string
	// PolicyVersion is the team policy version the event records.
	PolicyVersion int
	CreatedAt     time.Time
	Positions     []eventPosition
	// Listed is every member of Positions as "position|relationship|version|owner", sorted.
	Listed []string
}

// eventPosition is one position of a conflict event's positions JSON.
type eventPosition struct {
	PositionID string `json:"position_id"`
	Members    []struct {
		RelationshipID densemem.RelationshipID `json:"relationship_id"`
		Version        int                     `json:"version"`
		Owner          densemem.ProfileID      `json:"owner_profile_id"`
	} `json:"members"`
}

// caseMember is one conflict_position_members row.
type caseMember struct {
	Position     string
	Relationship densemem.RelationshipID
	Owner        densemem.ProfileID
	Version      int
	Added        int
	Removed      *int
}

// String is "position|relationship|version|owner".
func (m caseMember) String() string {
	return fmt.Sprintf("%s|%s|%d|%s", m.Position, m.Relationship, m.Version, m.Owner)
}

// Current returns the current membership (no removed version), sorted.
func (c caseRow) Current() []string { return c.AsOf(-1) }

// AsOf returns the membership the case had at version v (v < 0: now), sorted.
func (c caseRow) AsOf(v int) []string {
	out := []string{}
	for _, m := range c.Members {
		if v < 0 && m.Removed == nil || v >= 0 && m.Added <= v && (m.Removed == nil || *m.Removed > v) {
			out = append(out, m.String())
		}
	}
	slices.Sort(out)
	return out
}

// CurrentMembers returns the current membership by relationship.
func (c caseRow) CurrentMembers() map[densemem.RelationshipID]caseMember {
	out := map[densemem.RelationshipID]caseMember{}
	for _, m := range c.Members {
		if m.Removed == nil {
			out[m.Relationship] = m
		}
	}
	return out
}

// CurrentRelationships returns the relationships of the current membership, sorted.
func (c caseRow) CurrentRelationships() []densemem.RelationshipID {
	var out []densemem.RelationshipID
	for id := range c.CurrentMembers() {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Reasons returns the events' reason codes in version order.
func (c caseRow) Reasons() []string {
	out := make([]string, len(c.Events))
	for i, ev := range c.Events {
		out[i] = ev.Reason
	}
	return out
}

// Cases reads every conflict case with its events and membership rows, oldest first. Read it in a
// snapshot when the three must agree.
func (l ledgerView) Cases() []caseRow {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT conflict_id, kind, status, opened_by_profile_id, subject_entity_id,
		predicate_key, scope, COALESCE(effective_time_basis, ''), COALESCE(preferred_position_id, ''), version,
		review_attempts, policy_version, opened_at, review_due_at, next_review_at, resolved_at, effective_at,
		last_evaluated_at, lease_expires_at, claim_token
		FROM conflict_cases ORDER BY opened_at, conflict_id`)
	if err != nil {
		l.t.Fatal(err)
	}
	var cases []caseRow
	byID := map[string]int{}
	for rows.Next() {
		var c caseRow
		if err := rows.Scan(&c.ID, &c.Kind, &c.Status, &c.OpenedBy, &c.Subject, &c.Predicate, &c.Scope, &c.Basis,
			&c.Preferred, &c.Version, &c.Attempts, &c.PolicyVer, &c.OpenedAt, &c.ReviewDueAt, &c.NextReviewAt,
			&c.ResolvedAt, &c.EffectiveAt, &c.LastEvaluatedAt, &c.LeaseExpires, &c.ClaimToken); err != nil {
			l.t.Fatal(err)
		}
		byID[c.ID] = len(cases)
		cases = append(cases, c)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	l.addEvents(cases, byID)
	l.addMembers(cases, byID)
	return cases
}

func (l ledgerView) addEvents(cases []caseRow, byID map[string]int) {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT conflict_id, case_version, COALESCE(prior_status, ''), resulting_status,
		actor_kind, COALESCE(actor_profile_id, ''), reason_code, ingest_id, COALESCE(time_basis, ''), policy_version,
		created_at, positions FROM conflict_events ORDER BY conflict_id, case_version`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var ev caseEvent
		var positions []byte
		if err := rows.Scan(&id, &ev.Version, &ev.Prior, &ev.Resulting, &ev.ActorKind, &ev.Actor, &ev.Reason, &ev.IngestID,
			&ev.TimeBasis, &ev.PolicyVersion, &ev.CreatedAt, &positions); err != nil {
			l.t.Fatal(err)
		}
		if err := json.Unmarshal(positions, &ev.Positions); err != nil {
			l.t.Fatalf("case %s event %d: positions %s: %v", id, ev.Version, positions, err)
		}
		ev.Listed = []string{}
		for _, p := range ev.Positions {
			for _, m := range p.Members {
				ev.Listed = append(ev.Listed, fmt.Sprintf("%s|%s|%d|%s", p.PositionID, m.RelationshipID, m.Version, m.Owner))
			}
		}
		slices.Sort(ev.Listed)
		i, ok := byID[id]
		if !ok {
			l.t.Fatalf("event %d of unknown case %s", ev.Version, id)
		}
		cases[i].Events = append(cases[i].Events, ev)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
}

func (l ledgerView) addMembers(cases []caseRow, byID map[string]int) {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT conflict_id, position_id, relationship_id, relationship_version, owner_profile_id,
		added_version, removed_version FROM conflict_position_members ORDER BY conflict_id, relationship_id, added_version`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var m caseMember
		if err := rows.Scan(&id, &m.Position, &m.Relationship, &m.Version, &m.Owner, &m.Added, &m.Removed); err != nil {
			l.t.Fatal(err)
		}
		i, ok := byID[id]
		if !ok {
			l.t.Fatalf("member %s of unknown case %s", m.Relationship, id)
		}
		cases[i].Members = append(cases[i].Members, m)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
}

// Case reads one conflict case with its events and membership rows.
func (l ledgerView) Case(id string) caseRow {
	l.t.Helper()
	for _, c := range l.Cases() {
		if c.ID == id {
			return c
		}
	}
	l.t.Fatalf("conflict case %s not found", id)
	return caseRow{}
}

// OnlyCase returns the database's only conflict case, failing the test when there is not exactly one.
func (l ledgerView) OnlyCase() caseRow {
	l.t.Helper()
	cases := l.Cases()
	if len(cases) != 1 {
		ids := make([]string, len(cases))
		for i, c := range cases {
			ids[i] = c.ID + " (" + c.Status + ")"
		}
		l.t.Fatalf("conflict cases: %v, want exactly one", ids)
	}
	return cases[0]
}

// ---- comparisons ----

// countDelta returns after - before per table.
func countDelta(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for table, n := range after {
		out[table] = n - before[table]
	}
	for table, n := range before {
		if _, ok := after[table]; !ok {
			out[table] = -n
		}
	}
	return out
}

// countsDiff lists the tables whose counts differ, "" when none does.
func countsDiff(before, after map[string]int) string {
	var out []string
	for table, d := range countDelta(before, after) {
		if d != 0 {
			out = append(out, fmt.Sprintf("%s %d -> %d", table, before[table], after[table]))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// rowsKept reports every row of before that is missing or different in after.
func rowsKept(before, after map[string]map[string]string) []string {
	var bad []string
	for table, rows := range before {
		for k, v := range rows {
			switch got, ok := after[table][k]; {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s %s: row disappeared", table, k))
			case got != v:
				bad = append(bad, fmt.Sprintf("%s %s changed:\n  -%s\n  +%s", table, k, v, got))
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// ---- env shorthands ----

// count returns the number of rows of table.
func (e *env) count(table string) int {
	e.t.Helper()
	return e.ledger().Count(table)
}

// countsOf returns the row counts of tables, read in one snapshot.
func (e *env) countsOf(tables []string) map[string]int {
	e.t.Helper()
	var out map[string]int
	e.snapshot(func(l ledgerView) { out = l.Counts(tables) })
	return out
}

// counts snapshots the row counts of dataTables.
func (e *env) counts() map[string]int {
	e.t.Helper()
	return e.countsOf(dataTables)
}

// allCounts snapshots the row count of every table.
func (e *env) allCounts() map[string]int {
	e.t.Helper()
	var out map[string]int
	e.snapshot(func(l ledgerView) { out = l.Counts(l.Tables()) })
	return out
}

// ---- ledger checks ----

// checkLedger asserts, in one snapshot, that the relationship and conflict ledgers agree with the rows
// they describe, whatever order racing calls committed in (checkTransitions, checkCases).
func (e *env) checkLedger() {
	e.t.Helper()
	e.snapshot(func(l ledgerView) {
		l.checkTransitions()
		l.checkCases()
	})
}

// checkTransitions asserts the transition ledger agrees with every relationship row: the stored
// version equals the number of transitions, the versions run 1..version without gaps, each transition
// starts where the previous one ended (status, tier, valid_to, version), and the last one ends in the
// row's current status, tier and valid_to. A lost update or a double transition of concurrent writers
// breaks one of these.
func (l ledgerView) checkTransitions() {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `
		WITH t AS (
		    SELECT t.*, lag(t.to_status) OVER w AS prev_status, lag(t.to_tier) OVER w AS prev_tier,
		           lag(t.to_valid_to) OVER w AS prev_valid_to, lag(t.to_version) OVER w AS prev_version
		    FROM relationship_transitions t
		    WINDOW w AS (PARTITION BY t.team_id, t.relationship_id ORDER BY t.to_version))
		SELECT r.relationship_id, r.status, r.version, count(t.transition_id) AS n,
		       COALESCE(bool_or(t.to_version = r.version AND t.to_status = r.status AND t.to_tier = r.tier
		                        AND t.to_valid_to IS NOT DISTINCT FROM r.valid_to), false) AS current_ok,
		       COALESCE(bool_and(CASE WHEN t.prev_version IS NULL
		                              THEN t.to_version = 1 AND t.from_status IS NULL AND t.from_version IS NULL
		                              ELSE t.to_version = t.prev_version + 1 AND t.from_version = t.prev_version
		                                   AND t.from_status = t.prev_status AND t.from_tier = t.prev_tier
		                                   AND t.from_valid_to IS NOT DISTINCT FROM t.prev_valid_to END), false) AS chain_ok,
		       COALESCE(string_agg(COALESCE(t.from_status, '') || '->' || t.to_status || ' v' || t.to_version ||
		                           ' (' || t.reason || ')', ', ' ORDER BY t.to_version), '') AS history
		FROM relationships r
		LEFT JOIN t ON t.team_id = r.team_id AND t.relationship_id = r.relationship_id
		GROUP BY r.relationship_id, r.status, r.version
		ORDER BY r.relationship_id`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, history string
		var version, n int
		var currentOK, chainOK bool
		if err := rows.Scan(&id, &status, &version, &n, &currentOK, &chainOK, &history); err != nil {
			l.t.Fatal(err)
		}
		if n != version || !currentOK || !chainOK {
			l.t.Errorf("relationship %s (%s, version %d) disagrees with its %d transitions (current matches: %v, chain intact: %v): %s",
				id, status, version, n, currentOK, chainOK, history)
		}
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
}

// checkCases asserts the conflict ledgers agree with the rows they describe:
//   - every case's events are numbered 1..version without gaps, each starts in the status the previous
//     one ended in, and the last ends in the case's status (checkEvents);
//   - at every version v, the membership rows in force at v (added at or before v, not removed by v)
//     are exactly the members listed in event v's positions JSON; in particular the current
//     membership (removed_version IS NULL) equals the last event's;
//   - no membership row refers to a version the case has not reached, and every row's position
//     belongs to its case and has its relationship's object and polarity;
//   - a live case has members in at least two positions from at least two owners, every current
//     member is active at the recorded version, on the case's key; a dismissed case has none;
//   - at most one live case per key.
//
// Read it in a snapshot (checkLedger), so the relationships, positions and cases agree.
func (l ledgerView) checkCases() {
	l.t.Helper()
	type rel struct {
		owner, status, subject, predicate, scope, objectEntity, objectValue, polarity string
		version                                                                       int
	}
	rels := map[densemem.RelationshipID]rel{}
	rows, err := l.q.Query(l.ctx, `SELECT relationship_id, owner_profile_id, status, subject_entity_id, predicate_key,
		scope, COALESCE(object_entity_id, ''), COALESCE(object_value_id, ''), polarity, version FROM relationships`)
	if err != nil {
		l.t.Fatal(err)
	}
	for rows.Next() {
		var id densemem.RelationshipID
		var r rel
		if err := rows.Scan(&id, &r.owner, &r.status, &r.subject, &r.predicate, &r.scope, &r.objectEntity, &r.objectValue,
			&r.polarity, &r.version); err != nil {
			l.t.Fatal(err)
		}
		rels[id] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	type position struct{ conflict, objectEntity, objectValue, polarity string }
	positions := map[string]position{}
	rows, err = l.q.Query(l.ctx, `SELECT position_id, conflict_id, COALESCE(object_entity_id, ''),
		COALESCE(object_value_id, ''), polarity FROM conflict_positions`)
	if err != nil {
		l.t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var p position
		if err := rows.Scan(&id, &p.conflict, &p.objectEntity, &p.objectValue, &p.polarity); err != nil {
			l.t.Fatal(err)
		}
		positions[id] = p
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}

	live := map[string][]string{}
	for _, c := range l.Cases() {
		if !l.checkEvents(c) {
			continue
		}
		owners, inPositions := map[densemem.ProfileID]bool{}, map[string]bool{}
		for _, m := range c.Members {
			if m.Added < 1 || m.Added > c.Version || (m.Removed != nil && (*m.Removed <= m.Added || *m.Removed > c.Version)) {
				l.t.Errorf("case %s at version %d: member %s added at %d, removed at %v", c.ID, c.Version, m.Relationship,
					m.Added, m.Removed)
			}
			p, ok := positions[m.Position]
			r, rok := rels[m.Relationship]
			switch {
			case !ok || p.conflict != c.ID:
				l.t.Errorf("case %s: member %s sits in position %s of case %q", c.ID, m.Relationship, m.Position, p.conflict)
			case !rok:
				l.t.Errorf("case %s: member %s is not a relationship", c.ID, m.Relationship)
			case p.objectEntity != r.objectEntity || p.objectValue != r.objectValue || p.polarity != r.polarity ||
				string(m.Owner) != r.owner:
				l.t.Errorf("case %s: member %s (%s%s %s, owner %s) sits in position %s (%s%s %s) as owner %s", c.ID,
					m.Relationship, r.objectEntity, r.objectValue, r.polarity, r.owner, m.Position, p.objectEntity,
					p.objectValue, p.polarity, m.Owner)
			}
			if m.Removed != nil {
				continue
			}
			owners[m.Owner], inPositions[m.Position] = true, true
			if (c.Status == "open" || c.Status == "overdue") && (r.status != string(relationship.StatusActive) ||
				r.version != m.Version || r.subject != c.Subject || r.predicate != c.Predicate || r.scope != c.Scope) {
				l.t.Errorf("live case %s: current member %s at version %d is %s at version %d on (%s, %s, %q)", c.ID,
					m.Relationship, m.Version, r.status, r.version, r.subject, r.predicate, r.scope)
			}
		}
		switch c.Status {
		case "open", "overdue":
			if len(inPositions) < 2 || len(owners) < 2 {
				l.t.Errorf("live case %s has members in %d positions from %d owners, want >= 2 and >= 2: %v", c.ID,
					len(inPositions), len(owners), c.Current())
			}
			k := c.Subject + "|" + c.Predicate + "|" + c.Scope
			live[k] = append(live[k], c.ID)
		case "dismissed":
			if len(c.Current()) != 0 {
				l.t.Errorf("dismissed case %s keeps current members %v", c.ID, c.Current())
			}
		}
	}
	for k, ids := range live {
		if len(ids) > 1 {
			l.t.Errorf("key %s has %d live cases: %v", k, len(ids), ids)
		}
	}
}

// checkEvents asserts a case's events are numbered 1..version, each starting in the status the
// previous one ended in, the last ending in the case's status, and that each event's positions JSON
// lists exactly the membership rows in force at its version (the last one's: the current membership).
// It reports whether the events are numbered right (the other checks need that).
func (l ledgerView) checkEvents(c caseRow) bool {
	l.t.Helper()
	versions := make([]int, len(c.Events))
	for i, ev := range c.Events {
		versions[i] = ev.Version
	}
	want := make([]int, c.Version)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(versions, want) {
		l.t.Errorf("case %s (%s) is at version %d, its events are numbered %v (reasons %v)", c.ID, c.Status, c.Version,
			versions, c.Reasons())
		return false
	}
	for i, ev := range c.Events {
		prior := ""
		if i > 0 {
			prior = c.Events[i-1].Resulting
		}
		if ev.Prior != prior {
			l.t.Errorf("case %s event %d (%s): prior status %q, the previous event ended in %q", c.ID, ev.Version, ev.Reason,
				ev.Prior, prior)
		}
		if got := c.AsOf(ev.Version); !slices.Equal(got, ev.Listed) {
			l.t.Errorf("case %s event %d (%s): membership rows in force at that version\n  %v\nevent positions JSON\n  %v",
				c.ID, ev.Version, ev.Reason, got, ev.Listed)
		}
	}
	last := c.Events[len(c.Events)-1]
	if last.Resulting != c.Status {
		l.t.Errorf("case %s is %s, its last event (%d, %s) ends in %s", c.ID, c.Status, last.Version, last.Reason, last.Resulting)
	}
	if !slices.Equal(c.Current(), last.Listed) {
		l.t.Errorf("case %s: current membership %v, last event (%d, %s) lists %v", c.ID, c.Current(), last.Version,
			last.Reason, last.Listed)
	}
	return true
}

// checkSupersededOnce asserts every superseded relationship has exactly one transition to superseded.
func (l ledgerView) checkSupersededOnce() {
	l.t.Helper()
	for id, n := range l.Keyed(`SELECT r.relationship_id,
		(count(t.transition_id) FILTER (WHERE t.to_status = 'superseded'))::text
		FROM relationships r
		LEFT JOIN relationship_transitions t ON t.team_id = r.team_id AND t.relationship_id = r.relationship_id
		WHERE r.status = 'superseded'
		GROUP BY r.team_id, r.relationship_id`) {
		if n != "1" {
			l.t.Errorf("superseded relationship %s has %s transitions to superseded, want 1", id, n)
		}
	}
}

// ---- whole-table reads ----

// Relationships reads every relationship's stored status, tier, valid_to and version, by ID.
func (l ledgerView) Relationships() map[densemem.RelationshipID]relationshipRow {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT relationship_id, status, tier, valid_to, version FROM relationships`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	out := map[densemem.RelationshipID]relationshipRow{}
	for rows.Next() {
		var id densemem.RelationshipID
		var r relationshipRow
		if err := rows.Scan(&id, &r.Status, &r.Tier, &r.ValidTo, &r.Version); err != nil {
			l.t.Fatal(err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// AllTransitions reads every relationship's transitions in version order, by relationship.
func (l ledgerView) AllTransitions() map[densemem.RelationshipID][]transitionRow {
	l.t.Helper()
	rows, err := l.q.Query(l.ctx, `SELECT relationship_id, COALESCE(from_status, ''), to_status, reason, actor_kind,
		COALESCE(actor_profile_id, ''), COALESCE(from_version, 0), to_version, to_valid_to
		FROM relationship_transitions ORDER BY relationship_id, to_version`)
	if err != nil {
		l.t.Fatal(err)
	}
	defer rows.Close()
	out := map[densemem.RelationshipID][]transitionRow{}
	for rows.Next() {
		var id densemem.RelationshipID
		var tr transitionRow
		if err := rows.Scan(&id, &tr.From, &tr.To, &tr.Reason, &tr.ActorKind, &tr.Actor, &tr.FromVersion, &tr.ToVersion,
			&tr.ToValidTo); err != nil {
			l.t.Fatal(err)
		}
		out[id] = append(out[id], tr)
	}
	if err := rows.Err(); err != nil {
		l.t.Fatal(err)
	}
	return out
}

// checkedCase reads case id with its events and membership rows in one snapshot and checks them
// against each other (checkEvents).
func (e *env) checkedCase(id string) caseRow {
	e.t.Helper()
	var c caseRow
	e.snapshot(func(l ledgerView) {
		c = l.Case(id)
		l.checkEvents(c)
	})
	return c
}
