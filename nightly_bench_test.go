package densemem_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
	"github.com/densemem/densemem/internal/testsupport/pgtrace"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// Nightly review benchmark. Run it with
//
//	go test -run '^$' -bench 'NightlyReview$' -benchtime 1x -timeout 0 .
//
// Each sub-benchmark reviews benchDueCases due conflict cases of one team with 1 or 4 concurrent workers,
// in a team that holds no other relationships or 1M unrelated active ones (internal/testsupport/benchload), and
// reports cases/s. The reviewer visits due cases only, so the 1M/none ratio of the review time must
// stay at most benchMaxReviewRatio.
//
// Seeding 10k cases through Remember takes ~30k calls, so one prototype case is built through the
// client (seedCases, kind seededTwoOwners: A holds "main", B and C hold "release" since 2026-05-01, each
// confirmed by its cited text; after the deadline the policy resolves for "release"), and then copied
// benchDueCases-1 times in SQL: every row the prototype wrote (entities, names, evidence, observations,
// verifications, resolution events, relationships, supports, transitions, the case with its
// positions, members and opening event) is re-inserted with every generated ID suffixed with the
// copy number, the subject renamed, and the content hashes recomputed for the renamed content. The
// copies are made once, in the template database every run clones.
// For quick runs, NB_CASES overrides the number of cases, NB_UNRELATED the number of unrelated
// relationships and NB_REPEATS the runs per median (3).

// benchDueCases is the number of due cases the issue asks for.
const benchDueCases = 10_000

// benchUnrelated is the number of unrelated active relationships of the loaded variant.
const benchUnrelated = 1_000_000

// benchMaxReviewRatio is the bound on review time with benchUnrelated relationships, or with
// benchHistoryCases resolved before, over none.
const benchMaxReviewRatio = 1.1

// benchHistoryCases is the number of cases the history team resolved before its due cases.
const benchHistoryCases = 10_000

// prototypeSubject is the prototype case's subject name (seedCases's first subject).
const prototypeSubject = "env-000"

// prototypeTables are the tables the prototype case wrote, in foreign-key order, each with the column that
// identifies the prototype's rows.
var prototypeTables = []struct{ name, key string }{
	{"entities", "entity_id"},
	{"entity_names", "entity_id"},
	{"evidence_fragments", "fragment_id"},
	{"fragment_contents", "fragment_id"},
	{"observations", "observation_id"},
	{"verification_events", "verification_id"},
	{"entity_resolution_events", "resolution_id"},
	{"relationships", "relationship_id"},
	{"support_links", "support_id"},
	{"relationship_transitions", "transition_id"},
	{"relationship_cross_references", "xref_id"},
	{"conflict_cases", "conflict_id"},
	{"conflict_positions", "position_id"},
	{"conflict_position_members", "conflict_id"},
	{"conflict_events", "event_id"},
}

// generatedIDPattern matches the IDs the library generates for data rows (not teams or profiles).
const generatedIDPattern = `\m((?:ent|frg|ing|obs|pos|rel|res|sup|trn|ver|xref|cfe|cf|rev|clm)_[0-9a-z]{26})\M`

// reviewBenchTemplate is a database holding a team with one prototype case (and maybe unrelated
// relationships), cloned for every run.
type reviewBenchTemplate struct {
	db        string
	cases     int
	history   int
	team      densemem.TeamID
	protoKeys map[string][]string
	protoCase string
}

// countFromEnv is the positive integer in the environment variable name, or def.
func countFromEnv(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func databaseOfURL(tb testing.TB, u string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimPrefix(p.Path, "/")
}

func urlWithDatabase(tb testing.TB, u, name string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	p.Path = "/" + name
	q := p.Query()
	q.Set("search_path", migrations.DefaultSchema)
	p.RawQuery = q.Encode()
	return p.String()
}

// benchHistoryRuns is the number of nightly runs over which the history template's team resolves its
// history cases, one run date after another.
const benchHistoryRuns = 20

// benchWorldClock is how far past newTestClock's start every world's clock stands: past the deadline
// of every seeded case and past the last run date of the history template's runs.
const benchWorldClock = pastReviewDeadline + (benchHistoryRuns+1)*24*time.Hour

// buildReviewBenchTemplate makes a database with the env's team, unrelated active relationships owned
// by A, history cases resolved by the nightly reviewer over benchHistoryRuns runs, and n due cases,
// vacuumed and analyzed as autovacuum would leave it. The cases are the prototype and its copies: with
// no history the prototype is the first due case; with history it is the first history case, and
// the due cases are copies made after the history was resolved. The database is dropped when tb ends.
func buildReviewBenchTemplate(tb testing.TB, unrelated, history, n int) *reviewBenchTemplate {
	tb.Helper()
	ctx := context.Background()
	u := testdb.NewURL(tb)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		tb.Fatal(err)
	}
	defer pool.Close()
	e := newEnvOnPool(tb, pool, quiet)
	cases, err := seedCases(ctx, e.client, envSeedTeam(e), 1, func(int) seededKind { return seededTwoOwners })
	if err != nil {
		tb.Fatalf("seed prototype: %v", err)
	}
	if cases[0].subject != prototypeSubject {
		tb.Fatalf("prototype subject %q, want %q", cases[0].subject, prototypeSubject)
	}
	tpl := &reviewBenchTemplate{db: databaseOfURL(tb, u), cases: n, team: e.team, protoKeys: map[string][]string{}, protoCase: cases[0].id}
	// The prototype's rows as they are now, before any review changes them: every copy is made from
	// this snapshot.
	if _, err := pool.Exec(ctx, "CREATE SCHEMA bench_proto"); err != nil {
		tb.Fatal(err)
	}
	for _, t := range prototypeTables {
		rows, err := pool.Query(ctx, fmt.Sprintf("SELECT DISTINCT %s FROM %s", t.key, t.name))
		if err != nil {
			tb.Fatal(err)
		}
		keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			tb.Fatal(err)
		}
		tpl.protoKeys[t.name] = keys
		if _, err := pool.Exec(ctx, fmt.Sprintf("CREATE TABLE bench_proto.%s AS SELECT * FROM %s WHERE %s = ANY($1::text[])",
			t.name, t.name, t.key), keys); err != nil {
			tb.Fatal(err)
		}
	}
	if unrelated > 0 {
		start := time.Now()
		p := benchload.Params{Team: string(e.team), Owner: string(e.A.ProfileID), Active: unrelated,
			Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Logf: tb.Logf}
		if err := benchload.Load(ctx, pool, p); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("loaded %d unrelated active relationships in %s", unrelated, time.Since(start).Round(time.Millisecond))
	}
	first := 1 // the first due copy; with no history, the prototype is a due case
	if history > 0 {
		start := time.Now()
		copyPrototypeCase(tb, ctx, pool, tpl, 1, history-1)
		resolveHistory(tb, e, history)
		tb.Logf("resolved %d history cases over %d nightly runs in %s", history, benchHistoryRuns,
			time.Since(start).Round(time.Millisecond))
		first, n, tpl.history = history, n+1, history
	}
	start := time.Now()
	copyPrototypeCase(tb, ctx, pool, tpl, first, first+n-2)
	tb.Logf("seeded %d due cases in %s", tpl.cases, time.Since(start).Round(time.Millisecond))
	if _, err := pool.Exec(ctx, "DROP SCHEMA bench_proto CASCADE"); err != nil {
		tb.Fatal(err)
	}
	// The template is cloned: no connection to it may stay open.
	e.runtime.Close()
	e.reviewer.Close()
	return tpl
}

// resolveHistory has the nightly reviewer resolve the history cases of e's team, spread over
// benchHistoryRuns runs a day apart, each claiming its share, the way a year of nights would leave a
// team: resolved cases, their events and positions, superseded relationships and their transitions.
func resolveHistory(tb testing.TB, e *env, history int) {
	tb.Helper()
	e.clock.Advance(newTestClock().Now().Add(pastReviewDeadline).Sub(e.clock.Now()))
	per := (history + benchHistoryRuns - 1) / benchHistoryRuns
	for run := range benchHistoryRuns {
		rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{e.team},
			MaxCases: per, WorkerID: fmt.Sprintf("history-%d", run)})
		if err != nil || rep.Failed != 0 || rep.Resolved != rep.Claimed {
			tb.Fatalf("history run %d: %+v, %v", run, rep, err)
		}
		e.clock.Advance(24 * time.Hour)
	}
	var open int
	if err := e.pool.QueryRow(e.ctx, "SELECT count(*) FROM conflict_cases WHERE team_id = $1 AND status <> 'resolved'",
		e.team).Scan(&open); err != nil || open != 0 {
		tb.Fatalf("after the history runs: %d cases not resolved (%v)", open, err)
	}
}

// cloneReviewBenchTemplate clones the template into a new database and returns its URL and a func that drops it (run
// when tb ends too).
func cloneReviewBenchTemplate(tb testing.TB, tpl *reviewBenchTemplate) (url string, drop func()) {
	tb.Helper()
	ctx := context.Background()
	admin, err := testdb.AdminURL()
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("nb_%d_%d", os.Getpid(), time.Now().UnixNano())
	start := time.Now()
	// FILE_COPY copies the files after a checkpoint instead of writing the whole template to the WAL
	// (WAL_LOG, the default): the 1M template's WAL would still be checkpointed during the review.
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{tpl.db}.Sanitize())); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("cloned template %s in %s", tpl.db, time.Since(start).Round(time.Millisecond))
	drop = func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			tb.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Error(err)
		}
	}
	tb.Cleanup(drop)
	return urlWithDatabase(tb, admin, name), drop
}

// contentHashSQL is evidence.ContentHash in SQL for ASCII content: lower case, whitespace runs folded.
func contentHashSQL(content string) string {
	return fmt.Sprintf(`encode(sha256(convert_to(btrim(regexp_replace(lower(%s), '\s+', ' ', 'g')), 'UTF8')), 'hex')`, content)
}

// renamePrototypeSQL renames the prototype subject in a text expression for copy g.
func renamePrototypeSQL(expr string) string {
	return fmt.Sprintf("replace(%s, '%s', 'env-c' || lpad(g::text, 6, '0'))", expr, prototypeSubject)
}

// copyPrototypeCase copies the prototype case from its snapshot once for every copy number in [from, to]
// (none when to < from), renaming its subject and suffixing its generated IDs with the copy number,
// then vacuums and analyzes the copied tables.
func copyPrototypeCase(tb testing.TB, ctx context.Context, pool *pgxpool.Pool, tpl *reviewBenchTemplate, from, to int) {
	tb.Helper()
	if to < from {
		return
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// As in benchload: row triggers off (the foreign-key triggers' plans, made when the tables were
	// small, scan the team for every copied row), and the same rules checked set-based before COMMIT.
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		tb.Fatal(err)
	}
	var analyze []string
	for _, t := range prototypeTables {
		if len(tpl.protoKeys[t.name]) == 0 {
			continue
		}
		rows, err := tx.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod), attgenerated <> '' OR attidentity <> ''
FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, t.name)
		if err != nil {
			tb.Fatal(err)
		}
		var cols, exprs []string
		hasFragment := false
		type col struct {
			name, typ string
			skip      bool
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (col, error) {
			var c col
			err := r.Scan(&c.name, &c.typ, &c.skip)
			return c, err
		})
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range all {
			if c.name == "fragment_id" {
				hasFragment = true
			}
		}
		for _, c := range all {
			if c.skip {
				continue
			}
			q := "s." + pgx.Identifier{c.name}.Sanitize()
			var expr string
			switch {
			case c.name == "team_id":
				expr = q
			case c.name == "content_sha256" && hasFragment:
				expr = fmt.Sprintf("(SELECT %s FROM fragment_contents fc WHERE fc.team_id = s.team_id AND fc.fragment_id = s.fragment_id)",
					contentHashSQL(renamePrototypeSQL("fc.content")))
			case c.typ == "text":
				expr = fmt.Sprintf("regexp_replace(%s, '%s', '\\1x' || g, 'g')", renamePrototypeSQL(q), generatedIDPattern)
			case c.typ == "jsonb" || c.typ == "text[]":
				expr = fmt.Sprintf("regexp_replace(%s, '%s', '\\1x' || g, 'g')::%s", renamePrototypeSQL(q+"::text"), generatedIDPattern, c.typ)
			default:
				expr = q
			}
			cols = append(cols, pgx.Identifier{c.name}.Sanitize())
			exprs = append(exprs, expr)
		}
		sql := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM bench_proto.%s s CROSS JOIN generate_series($1::int, $2::int) g",
			t.name, strings.Join(cols, ", "), strings.Join(exprs, ", "), t.name)
		ct, err := tx.Exec(ctx, sql, from, to)
		if err != nil {
			tb.Fatalf("copy %s: %v\n%s", t.name, err, sql)
		}
		_ = ct
		analyze = append(analyze, t.name)
	}
	if err := benchload.Verify(ctx, tx, analyze); err != nil {
		tb.Fatalf("copied cases: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatalf("commit copies: %v", err)
	}
	// The server runs without autovacuum: refresh statistics and the visibility map as production would
	// have.
	if len(analyze) > 0 {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(analyze, ", ")); err != nil {
			tb.Fatal(err)
		}
	}
}

// reviewBenchWorld is one run's database, cloned from a template with its due cases, and a client whose clock
// is past every case's deadline.
type reviewBenchWorld struct {
	pool   *pgxpool.Pool
	client *densemem.Client
	team   densemem.TeamID
	n      int
	drop   func()
	// trips counts the round trips of the world's pool from the start of the review.
	trips *pgtrace.Counter
	// reviewTrips is the round trips the last review took.
	reviewTrips int64
}

// close closes the world's pool and drops its database.
func (w *reviewBenchWorld) close() {
	w.pool.Close()
	w.drop()
}

func newReviewBenchWorld(tb testing.TB, tpl *reviewBenchTemplate, maxConns int) *reviewBenchWorld {
	tb.Helper()
	ctx := context.Background()
	url, drop := cloneReviewBenchTemplate(tb, tpl)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = int32(maxConns)
	trips := &pgtrace.Counter{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	// Start every run from a finished checkpoint, so that no checkpoint of earlier work writes during
	// the review.
	if _, err := pool.Exec(ctx, "CHECKPOINT"); err != nil {
		tb.Fatal(err)
	}
	clock := newTestClock()
	clock.Advance(benchWorldClock)
	client, err := densemem.New(postgres.New(pool, nil), &densemem.Config{Clock: clock.Now,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		tb.Fatal(err)
	}
	trips.Reset()
	return &reviewBenchWorld{pool: pool, client: client, team: tpl.team, n: tpl.cases, drop: drop, trips: trips}
}

// ledger reads the world's database (a superuser's pool) through the tests' ledger view.
func (w *reviewBenchWorld) ledger(tb testing.TB) ledgerView {
	return ledgerView{t: tb, ctx: context.Background(), q: w.pool}
}

// statuses counts the team's cases by status.
func (w *reviewBenchWorld) statuses(tb testing.TB) map[string]int {
	tb.Helper()
	out := map[string]int{}
	for status, n := range w.ledger(tb).Keyed(`SELECT status, count(*)::text FROM conflict_cases WHERE team_id = $1
		GROUP BY status`, w.team) {
		c, err := strconv.Atoi(n)
		if err != nil {
			tb.Fatal(err)
		}
		out[status] = c
	}
	return out
}

// review runs workers concurrent reviewers until no case is claimable, and returns the elapsed time
// and the summed report.
func (w *reviewBenchWorld) review(tb testing.TB, workers int) (time.Duration, densemem.NightlyReviewReport) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	reps := make([]*densemem.NightlyReviewReport, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = w.client.RunNightlyReview(ctx, densemem.NightlyReviewRequest{
				TeamIDs: []densemem.TeamID{w.team}, WorkerID: fmt.Sprintf("nb-worker-%d", i)})
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	w.reviewTrips = w.trips.Load()
	for i, err := range errs {
		if err != nil {
			tb.Fatalf("worker %d: %v", i, err)
		}
	}
	return elapsed, sumReports(reps)
}

// TestNightlyBenchSeedResolves checks the benchmark's seeding: 20 copied cases are all due, and one
// reviewer resolves every one of them.
func TestNightlyBenchSeedResolves(t *testing.T) {
	slow(t)
	const n = 20
	tpl := buildReviewBenchTemplate(t, 0, 0, n)
	w := newReviewBenchWorld(t, tpl, 4)
	l := w.ledger(t)
	// The recomputed hashes follow evidence.ContentHash: the prototype's stored hashes match the SQL.
	if bad := l.Int(`SELECT count(*) FROM evidence_fragments f JOIN fragment_contents c USING (team_id, fragment_id)
WHERE f.content_sha256 <> ` + contentHashSQL("c.content")); bad != 0 {
		t.Errorf("%d fragments whose content_sha256 is not the hash of their content", bad)
	}
	if got := w.statuses(t); got["open"] != n || len(got) != 1 {
		t.Fatalf("before review: cases by status %v, want %d open", got, n)
	}
	if relCount := l.Int("SELECT count(*) FROM relationships WHERE status = 'active'"); relCount != 3*n {
		t.Fatalf("%d active relationships, want %d", relCount, 3*n)
	}
	_, rep := w.review(t, 2)
	if rep.Resolved != n || rep.Failed != 0 || rep.Lost != 0 {
		t.Fatalf("report %+v, want %d resolved", rep, n)
	}
	if got := w.statuses(t); got["resolved"] != n || len(got) != 1 {
		t.Fatalf("after review: cases by status %v, want %d resolved", got, n)
	}
	// Read in one snapshot, so the two counts describe one state.
	var superseded, mainActive int
	readSnapshot(t, w.pool, func(tx pgx.Tx) {
		l := ledgerView{t: t, ctx: context.Background(), q: tx}
		superseded = l.Int(`SELECT count(*) FROM relationships r
JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.object_entity_id WHERE r.status = 'superseded'`)
		mainActive = l.Int(`SELECT count(*) FROM relationships r
JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.object_entity_id WHERE r.status = 'active' AND n.name = 'main'`)
	})
	if superseded != n || mainActive != 0 {
		t.Fatalf("%d superseded relationships (want %d), %d \"main\" still active (want 0)", superseded, n, mainActive)
	}
}

// TestNightlyBenchHistorySeed checks the history template: its history cases are resolved before the
// due cases are copied, the due cases are all open and due, and one reviewer resolves exactly them.
func TestNightlyBenchHistorySeed(t *testing.T) {
	slow(t)
	const history, n = 3 * benchHistoryRuns, 10
	tpl := buildReviewBenchTemplate(t, 0, history, n)
	w := newReviewBenchWorld(t, tpl, 3)
	if got := w.statuses(t); got["open"] != n || got["resolved"] != history || len(got) != 2 {
		t.Fatalf("before review: cases by status %v, want %d open and %d resolved", got, n, history)
	}
	// Every history case was resolved on one of the history runs' dates, spread over all of them.
	if days := w.ledger(t).Int(`SELECT count(DISTINCT resolved_at::date) FROM conflict_cases WHERE status = 'resolved'`); days != benchHistoryRuns {
		t.Errorf("history cases resolved on %d dates, want %d", days, benchHistoryRuns)
	}
	_, rep := w.review(t, 2)
	if rep.Resolved != n || rep.Failed != 0 || rep.Claimed != n {
		t.Fatalf("report %+v, want %d claimed and resolved", rep, n)
	}
	if got := w.statuses(t); got["resolved"] != n+history || len(got) != 1 {
		t.Fatalf("after review: cases by status %v, want %d resolved", got, n+history)
	}
}

// BenchmarkNightlyReview reviews benchDueCases due cases of one team with 1 and 4 workers (one
// sub-benchmark each) in three teams: one with no other rows (none), one with benchUnrelated unrelated
// active relationships (1M), and one that already resolved benchHistoryCases cases over
// benchHistoryRuns nightly runs (history). Next to them it runs the floor: as many pgbench-like
// transactions of a case's row counts (floorTx) with as many workers. Each sub-benchmark alternates
// the four, NB_REPEATS runs of each, so that a slow spell of the machine (single runs varied by ±30%
// over minutes) falls on all; it reports the median cases/s and review time of each, the ratios of
// the medians (1M over none, history over none, which the issue bounds by benchMaxReviewRatio) and the
// reviewer's share of the floor's rate. Only the reviews are timed; each run clones its template, with
// the due cases, into a fresh database and starts after a checkpoint.
func BenchmarkNightlyReview(b *testing.B) {
	n, repeats := countFromEnv("NB_CASES", benchDueCases), countFromEnv("NB_REPEATS", 3)
	if n != benchDueCases {
		b.Logf("NB_CASES=%d: measuring %d due cases instead of %d", n, n, benchDueCases)
	}
	// Built on the parent benchmark, once, so that both sub-benchmarks reuse them.
	unrelated, history := countFromEnv("NB_UNRELATED", benchUnrelated), countFromEnv("NB_HISTORY_CASES", benchHistoryCases)
	if unrelated != benchUnrelated {
		b.Logf("NB_UNRELATED=%d: the 1M figures are for %d unrelated relationships", unrelated, unrelated)
	}
	none, loaded := buildReviewBenchTemplate(b, 0, 0, n), buildReviewBenchTemplate(b, unrelated, 0, n)
	hist := buildReviewBenchTemplate(b, 0, history, n)
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			runs := map[*reviewBenchTemplate][]time.Duration{}
			var floor []time.Duration
			var trips int64
			for range b.N * repeats {
				for _, tpl := range []*reviewBenchTemplate{none, loaded, hist} {
					w := newReviewBenchWorld(b, tpl, workers+2)
					d, rep := w.review(b, workers)
					runs[tpl] = append(runs[tpl], d)
					if tpl == none {
						trips = w.reviewTrips
					}
					if rep.Resolved != n || rep.Failed != 0 {
						b.Fatalf("report %+v, want %d resolved", rep, n)
					}
					if got := w.statuses(b); got["resolved"] != n+tpl.history || len(got) != 1 {
						b.Fatalf("after review: cases by status %v, want %d resolved", got, n+tpl.history)
					}
					if tpl == none {
						// The floor runs in the same fresh database, right after the review.
						floor = append(floor, runFloor(b, w.pool, workers, n))
					}
					w.close()
				}
			}
			median := func(ds []time.Duration) time.Duration {
				ds = slices.Clone(ds)
				slices.Sort(ds)
				return ds[len(ds)/2]
			}
			b.Logf("review times, none: %v; 1M: %v; history: %v; floor: %v", runs[none], runs[loaded], runs[hist], floor)
			mNone, mLoaded, mHist, mFloor := median(runs[none]), median(runs[loaded]), median(runs[hist]), median(floor)
			// The runs' own time is what the sub-benchmark measures, not the cloning between them.
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(n)/mNone.Seconds(), "cases/s-none")
			b.ReportMetric(float64(n)/mLoaded.Seconds(), "cases/s-1M")
			b.ReportMetric(float64(n)/mHist.Seconds(), "cases/s-history")
			b.ReportMetric(float64(n)/mFloor.Seconds(), "tx/s-floor")
			b.ReportMetric(mLoaded.Seconds()/mNone.Seconds(), "ratio-1M/none")
			b.ReportMetric(mHist.Seconds()/mNone.Seconds(), "ratio-history/none")
			b.ReportMetric(mFloor.Seconds()/mNone.Seconds(), "share-of-floor")
			b.ReportMetric(float64(trips)/float64(n), "roundtrips/case")
			for name, r := range map[string]float64{"1M/none": mLoaded.Seconds() / mNone.Seconds(),
				"history/none": mHist.Seconds() / mNone.Seconds()} {
				if r > benchMaxReviewRatio {
					b.Logf("review time ratio %s %.3f is above the target %.1f", name, r, benchMaxReviewRatio)
				}
			}
		})
	}
}
