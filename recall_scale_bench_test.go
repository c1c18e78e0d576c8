package densemem_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/densememtest"
	"github.com/densemem/densemem/internal/testsupport/benchload"
	"github.com/densemem/densemem/internal/testsupport/testdb"
	"github.com/densemem/densemem/migrations"
)

// BenchmarkRecallAtScale recalls a realistic query mix in one team of 100k or 1M relationships
// (issue 14 item 1). Run it with
//
//	RS_SIZES=100k,1M go test -run '^$' -bench RecallAtScale -benchtime 200x -count 1 -timeout 0 .
//
// The team is bulk-loaded by internal/testsupport/benchload with a Zipf-like vocabulary (Params.Zipf): note words
// drawn by 1/rank, ten hub entities that are the subject of 10% down to 1% of the relationships, the
// two predicate phrases each in half of the fragments, the 20 query subjects with five relationships
// each. Loading 1M takes 10+ minutes, so the loaded database is kept between runs under a name that
// fingerprints the load (densemem_bench_recall_<size>_<fingerprint>, see recallScaleDatabase) and
// marked complete by its comment; a later run reuses it (bringing its schema up to the code's
// migrations first) and starts in seconds. Drop the kept databases with
//
//	psql -h 127.0.0.1 -U postgres -Atc "SELECT 'DROP DATABASE ' || quote_ident(datname) || ' WITH (FORCE);'
//	  FROM pg_database WHERE datname LIKE 'densemem\_bench\_recall\_%'" | psql -h 127.0.0.1 -U postgres
//
// Query classes, each in the views current, valid_at and known_at, one Recall (limit 10) per op
// rotating over the class's queries:
//
//   - rare: a query subject's name ("qsubject-07"): 5 relationships match.
//   - hub: a hub's name ("orion"): 1–10% of the team matches, by name and by evidence text.
//   - predicate: a predicate phrase ("works on project"): half of the team's evidence matches.
//   - long: a query subject's name OR-ed with common note words, 16 words (Limits.MaxQueryTerms).
//
// Each sub-benchmark reports p50/p95/p99 of the per-op latency, recall@10 against the generator's
// labels (rare and long: the subject's designed relationships in the view, Params.Want; hub: the
// hub's ten earliest relationships in the view, the documented tie-break among equal scores;
// predicate: results of the phrase's predicate, out of ten), the share of ops whose candidates were
// truncated, the process's peak resident memory (VmHWM) and, for 1M when 100k ran first in the same
// process, p95(1M)/p95(100k).

// recallScaleSizes are the sizes RS_SIZES may name.
var recallScaleSizes = map[string]int{"10k": 10_000, "100k": 100_000, "1M": 1_000_000}

// recallScaleLoadVersion changes when what the loader writes for the same Params changes, so that a
// kept database of an older load is not reused.
const recallScaleLoadVersion = "benchload-zipf-1"

// recallScaleP95 holds the p95 of each class and view measured at 100k in this process.
var recallScaleP95 = map[string]float64{}

func BenchmarkRecallAtScale(b *testing.B) {
	eachRecallSize(b, func(b *testing.B, label string, w *bulkLoadedTeam) {
		for _, class := range recallScaleClasses(b, w) {
			for _, v := range benchload.Views {
				b.Run("class="+class.name+"/view="+string(v), func(b *testing.B) {
					measureRecallScale(b, w, label, class, v)
				})
			}
		}
	})
}

// eachRecallSize runs f in a sub-benchmark "size=<label>" on the kept team of each size RS_SIZES
// names (default 100k), in the order it names them.
func eachRecallSize(b *testing.B, f func(b *testing.B, label string, w *bulkLoadedTeam)) {
	sizes := os.Getenv("RS_SIZES")
	if sizes == "" {
		sizes = "100k"
	}
	for _, label := range strings.Split(sizes, ",") {
		label = strings.TrimSpace(label)
		active, ok := recallScaleSizes[label]
		if !ok {
			b.Fatalf("RS_SIZES: unknown size %q (want 10k, 100k or 1M)", label)
		}
		b.Run("size="+label, func(b *testing.B) { f(b, label, keptRecallTeam(b, label, active)) })
	}
}

// recallScaleClass is one query class: its queries and how relevant a response is to query i.
type recallScaleClass struct {
	name    string
	queries []string
	// recall returns the recall@10 of res for query i in view v.
	recall func(i int, v benchload.View, res *densemem.RecallResponse) float64
}

// recallScaleClasses builds the query classes of a loaded team, with their labels.
func recallScaleClasses(tb testing.TB, w *bulkLoadedTeam) []recallScaleClass {
	tb.Helper()
	p := w.params
	subjects := p.SubjectCount()
	wantObjects := func(i int, v benchload.View, res *densemem.RecallResponse) float64 {
		want := p.Want(i%subjects, v)
		found := 0
		for _, r := range res.Results {
			if slices.Contains(want, r.Relationship.Object.Name) {
				found++
			}
		}
		return float64(found) / float64(len(want))
	}
	rare := recallScaleClass{name: "rare", recall: wantObjects}
	long := recallScaleClass{name: "long", recall: wantObjects}
	for i := range subjects {
		rare.queries = append(rare.queries, p.SubjectName(i))
		// The subject's name is 2 words; 7 × "or <word>" make 16, all common words of the notes.
		q := p.SubjectName(i)
		for j := range 7 {
			q += " or " + benchload.ZipfWord((i+j)%12)
		}
		long.queries = append(long.queries, q)
	}
	// The hub's labels: its ten earliest relationships visible in each view (all hub relationships are
	// active and undated, so the views differ only by what was recorded by known_at).
	hubLabels := map[benchload.View][][]densemem.RelationshipID{}
	hub := recallScaleClass{name: "hub"}
	for h := range benchload.HubCount {
		hub.queries = append(hub.queries, p.HubName(h))
		for _, v := range benchload.Views {
			var known *time.Time
			if v == benchload.ViewKnownAt {
				t := p.KnownAt()
				known = &t
			}
			rows, err := w.pool.Query(w.ctx, `SELECT r.relationship_id FROM relationships r
JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
WHERE r.team_id = $1 AND n.team_id = $1 AND n.normalized_name = $2 AND ($3::timestamptz IS NULL OR r.created_at <= $3)
ORDER BY r.created_at, r.relationship_id LIMIT 10`, w.team, p.HubName(h), known)
			if err != nil {
				tb.Fatal(err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[densemem.RelationshipID])
			if err != nil {
				tb.Fatal(err)
			}
			if len(ids) < 10 {
				tb.Fatalf("hub %s (%s): %d labelled relationships, want 10", p.HubName(h), v, len(ids))
			}
			hubLabels[v] = append(hubLabels[v], ids)
		}
	}
	hub.recall = func(i int, v benchload.View, res *densemem.RecallResponse) float64 {
		want := hubLabels[v][i]
		found := 0
		for _, r := range res.Results {
			if slices.Contains(want, r.Relationship.RelationshipID) {
				found++
			}
		}
		return float64(found) / float64(len(want))
	}
	phrases := []struct{ query, key string }{
		{"works on project", benchload.DefaultManyPredicate}, {"deploys from branch", benchload.DefaultStatePredicate},
		{"works on", benchload.DefaultManyPredicate}, {"deploys from", benchload.DefaultStatePredicate},
	}
	predicate := recallScaleClass{name: "predicate"}
	for _, ph := range phrases {
		predicate.queries = append(predicate.queries, ph.query)
	}
	predicate.recall = func(i int, _ benchload.View, res *densemem.RecallResponse) float64 {
		found := 0
		for _, r := range res.Results {
			if r.Relationship.Predicate == phrases[i].key {
				found++
			}
		}
		return float64(found) / 10
	}
	return []recallScaleClass{rare, hub, predicate, long}
}

// measureRecallScale runs the ops of one class and view and reports their latency percentiles,
// recall@10, truncation and the process's peak resident memory.
func measureRecallScale(b *testing.B, w *bulkLoadedTeam, size string, class recallScaleClass, v benchload.View) {
	run := func(i int) (*densemem.RecallResponse, time.Duration) {
		req := w.request(0, v)
		req.Query = class.queries[i]
		start := time.Now()
		res, err := w.client.Recall(w.ctx, w.A, req)
		if err != nil {
			b.Fatalf("recall %q (%s): %v", req.Query, v, err)
		}
		return res, time.Since(start)
	}
	// Warm up: every query once (statements prepared, pages cached, as in a serving process).
	for i := range class.queries {
		run(i)
	}
	lat := make([]time.Duration, 0, 1024)
	var recall float64
	truncated := 0
	w.reset()
	i := 0
	for b.Loop() {
		q := i % len(class.queries)
		res, d := run(q)
		lat = append(lat, d)
		recall += class.recall(q, v, res)
		if res.CandidatesTruncated {
			truncated++
		}
		i++
	}
	b.StopTimer()
	slices.Sort(lat)
	p95 := latencyPercentile(lat, 0.95)
	b.ReportMetric(latencyPercentile(lat, 0.50), "p50-ms")
	b.ReportMetric(p95, "p95-ms")
	b.ReportMetric(latencyPercentile(lat, 0.99), "p99-ms")
	b.ReportMetric(recall/float64(len(lat)), "recall@10")
	b.ReportMetric(float64(truncated)/float64(len(lat)), "truncated/op")
	b.ReportMetric(float64(w.trips.Load())/float64(len(lat)), "roundtrips/op")
	if mib, ok := peakRSSMiB(); ok {
		b.ReportMetric(mib, "peak-rss-MiB")
	}
	key := class.name + "/" + string(v)
	switch size {
	case "100k":
		recallScaleP95[key] = p95
	case "1M":
		if base, ok := recallScaleP95[key]; ok && base > 0 {
			b.ReportMetric(p95/base, "p95-ratio-to-100k")
		}
	}
}

// peakRSSMiB reads the process's peak resident set size (VmHWM) from /proc/self/status.
func peakRSSMiB() (float64, bool) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}

// recallScaleMark is the comment of a kept database whose load completed: what a later run needs to
// use it.
type recallScaleMark struct {
	Complete   bool                 `json:"complete"`
	Team       densemem.TeamID      `json:"team"`
	Owner      densemem.Principal   `json:"owner"`
	Admin      densemem.Principal   `json:"admin"`
	Others     []densemem.Principal `json:"others"`
	Migrations string               `json:"migrations"`
}

// recallScaleParams are the load parameters of a size (the team and owner are filled in later; they
// are not part of the fingerprint).
func recallScaleParams(active int) benchload.Params {
	return benchload.Params{Active: active, Zipf: true, SkipResolutions: true,
		Start: newTestClock().Now().Add(time.Minute)}
}

// recallScaleDatabase names the kept database of a size: the size and a fingerprint of the load
// parameters and the loader's version. The migrations are not part of it: a kept database is
// migrated forward to the code's migrations when reused, as a production database is upgraded,
// so that a schema change is measured on the same data.
func recallScaleDatabase(label string, p benchload.Params) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s %d %d %t %t %s %s %d", recallScaleLoadVersion, p.Active, p.Subjects, p.Zipf,
		p.SkipResolutions, p.Start.UTC().Format(time.RFC3339Nano), p.Span, p.Seed))
	return "densemem_bench_recall_" + strings.ToLower(label) + "_" + hex.EncodeToString(h[:])[:12]
}

// keptRecallTeam returns the team of a size, loading it into a new kept database unless a complete
// one exists.
func keptRecallTeam(b *testing.B, label string, active int) *bulkLoadedTeam {
	b.Helper()
	p := recallScaleParams(active)
	return keptTeam(b, recallScaleDatabase(label, p), p)
}

// keptTeam returns the team loaded with p (team and owner filled in) in the kept database name,
// loading it unless a complete one exists.
func keptTeam(b *testing.B, name string, p benchload.Params) *bulkLoadedTeam {
	b.Helper()
	ctx := context.Background()
	admin, created, err := testdb.Keep(ctx, name, b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	var mark recallScaleMark
	if !created {
		err := withKeptDatabase(ctx, admin, func(conn *pgx.Conn) error {
			var comment *string
			if err := conn.QueryRow(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`,
				name).Scan(&comment); err != nil {
				return err
			}
			if comment != nil {
				_ = json.Unmarshal([]byte(*comment), &mark)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if !mark.Complete {
			b.Logf("kept database %s is incomplete: loading it again", name)
			if err := testdb.Drop(ctx, admin, name); err != nil {
				b.Fatal(err)
			}
			if admin, created, err = testdb.Keep(ctx, name, b.Logf); err != nil {
				b.Fatal(err)
			}
		}
	}
	url, err := testdb.URL(admin, name)
	if err != nil {
		b.Fatal(err)
	}
	be, pool := newTracedPool(b, url, 0)
	if created {
		be.env = newEnvOnPool(b, pool)
		p.Team, p.Owner, p.Logf = string(be.team), string(be.A.ProfileID), b.Logf
		// The load holds every planned row in memory; a memory limit keeps the process's peak
		// resident memory down (the GC runs more often instead).
		old := debug.SetMemoryLimit(600 << 20)
		start := time.Now()
		err := benchload.Load(ctx, pool, p)
		debug.SetMemoryLimit(old)
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("loaded %d active relationships into %s in %s", p.Active, name, time.Since(start).Round(time.Second))
		mark = recallScaleMark{Complete: true, Team: be.team, Owner: be.A, Admin: be.admin,
			Others: []densemem.Principal{be.B, be.C}, Migrations: migrations.Hash()}
		comment, _ := json.Marshal(mark)
		if _, err := pool.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%s'", pgx.Identifier{name}.Sanitize(),
			strings.ReplaceAll(string(comment), "'", "''"))); err != nil {
			b.Fatal(err)
		}
	} else {
		// Bring the kept database up to the code's migrations (a no-op when it is).
		if err := migrations.Up(ctx, pool, nil); err != nil {
			b.Fatalf("migrate kept database %s: %v (drop it to load again)", name, err)
		}
		e := &env{t: b, ctx: ctx, pool: pool, clock: newTestClock()}
		db := densememtest.Open(b, pool, &densemem.Config{Clock: e.clock.Now})
		e.client, e.store, e.reviewStore, e.runtime, e.reviewer = db.Client, db.Store, db.ReviewStore, db.Runtime, db.Reviewer
		e.team, e.A, e.admin = mark.Team, mark.Owner, mark.Admin
		if len(mark.Others) == 2 {
			e.B, e.C = mark.Others[0], mark.Others[1]
		}
		be.env = e
		p.Team, p.Owner = string(mark.Team), string(mark.Owner.ProfileID)
		b.Logf("reusing kept database %s (loaded at migrations %.12s)", name, mark.Migrations)
	}
	be.clock.Advance(p.End().Sub(be.clock.Now()) + 24*time.Hour)
	return &bulkLoadedTeam{benchEnv: be, params: p}
}

// withKeptDatabase runs f on a connection to the server's maintenance database.
func withKeptDatabase(ctx context.Context, admin string, f func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return errors.Join(errors.New("connect to the maintenance database"), err)
	}
	defer conn.Close(context.Background())
	return f(conn)
}
