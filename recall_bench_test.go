package densemem_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
)

// Recall benchmarks. Run them with
//
//	go test -run '^$' -bench Recall -benchtime 200x -count 1 .
//
// Each size gets a fresh database holding one team with that many active relationships with
// evidence, bulk-loaded by internal/testsupport/benchload (COPY, one transaction, then VACUUM ANALYZE as
// autovacuum would), plus 20 query subjects with the same five relationships at every size. Each op
// is one Recall (limit 10) of the next query subject, as a reader of the team, in one of three views:
// current, valid_at and known_at. Besides ns/op the benchmark reports the p50 and p95 of the
// per-op latencies, the statement round trips per op (internal/testsupport/pgtrace) and the share of the
// RecallSearch executions that ran a generic plan (pg_prepared_statements).
//
// docs/recall-plans.md holds the query plans behind these figures.

// recallBenchSizes are the team sizes of BenchmarkRecall.
var recallBenchSizes = []struct {
	label  string
	active int
}{
	{"10k", 10_000},
	{"100k", 100_000},
}

// bulkLoadedTeam is a benchEnv whose team holds bulk-loaded relationships.
type bulkLoadedTeam struct {
	*benchEnv
	params benchload.Params
}

// loadBulkTeam returns a fresh database whose team (the env's "acme") holds active relationships
// owned by A, loaded after the env's vocabulary was registered; the clock is moved past the load.
func loadBulkTeam(tb testing.TB, active int) *bulkLoadedTeam {
	tb.Helper()
	be := newBenchEnv(tb, 0)
	p := benchload.Params{Team: string(be.team), Owner: string(be.A.ProfileID), Active: active,
		Start: be.clock.Now().Add(time.Minute), Logf: tb.Logf}
	start := time.Now()
	if err := benchload.Load(be.ctx, be.pool, p); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("loaded %d active relationships (%d filler, %d query subjects) in %s",
		p.Active, p.Filler(), p.SubjectCount(), time.Since(start).Round(time.Millisecond))
	be.clock.Advance(p.End().Sub(be.clock.Now()) + 24*time.Hour)
	return &bulkLoadedTeam{benchEnv: be, params: p}
}

// request is the Recall of query subject i in view v.
func (w *bulkLoadedTeam) request(i int, v benchload.View) densemem.RecallRequest {
	req := densemem.RecallRequest{Query: w.params.SubjectName(i), Limit: 10}
	switch v {
	case benchload.ViewValidAt:
		t := w.params.ValidAt()
		req.ValidAt = &t
	case benchload.ViewKnownAt:
		t := w.params.KnownAt()
		req.KnownAt = &t
	}
	return req
}

// recall runs the Recall of query subject i in view v and checks it found as many relationships as
// designed.
func (w *bulkLoadedTeam) recall(tb testing.TB, i int, v benchload.View) *densemem.RecallResponse {
	res, err := w.client.Recall(w.ctx, w.A, w.request(i, v))
	if err != nil {
		tb.Fatalf("recall %s (%s): %v", w.params.SubjectName(i), v, err)
	}
	if want := len(w.params.Want(i, v)); len(res.Results) != want {
		tb.Fatalf("recall %s (%s): %d results, want %d", w.params.SubjectName(i), v, len(res.Results), want)
	}
	return res
}

// recallSearchPlanCounts sums, over the idle connections of the client's pool (the runtime role's:
// the env's own pool never runs RecallSearch), how many times the RecallSearch statement ran a
// generic and a custom plan (pg_prepared_statements, PostgreSQL 14+).
func recallSearchPlanCounts(tb testing.TB, w *bulkLoadedTeam) (generic, custom int64) {
	tb.Helper()
	ctx := context.Background()
	for _, c := range w.runtime.AcquireAllIdle(ctx) {
		var g, cu int64
		err := c.QueryRow(ctx, `SELECT COALESCE(sum(generic_plans), 0)::int8, COALESCE(sum(custom_plans), 0)::int8
FROM pg_prepared_statements WHERE statement LIKE '-- name: RecallSearch%'`).Scan(&g, &cu)
		c.Release()
		if err != nil {
			tb.Fatal(err)
		}
		generic, custom = generic+g, custom+cu
	}
	return generic, custom
}

// latencyPercentile returns the q-quantile (nearest rank) of sorted latencies, in milliseconds.
func latencyPercentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	i = max(0, min(i, len(sorted)-1))
	return float64(sorted[i]) / float64(time.Millisecond)
}

// BenchmarkRecall recalls query subjects, whose matching relationships are the same at every size,
// in teams of 10k and 100k active relationships, in the current, valid_at and known_at views.
func BenchmarkRecall(b *testing.B) {
	for _, size := range recallBenchSizes {
		b.Run("size="+size.label, func(b *testing.B) {
			w := loadBulkTeam(b, size.active)
			for _, v := range benchload.Views {
				b.Run("view="+string(v), func(b *testing.B) { measureRecallView(b, w, v) })
			}
		})
	}
}

// measureRecallView runs the ops of one view and reports their latency percentiles, round trips and
// plans.
func measureRecallView(b *testing.B, w *bulkLoadedTeam, v benchload.View) {
	subjects := w.params.SubjectCount()
	// Warm up: every subject once, so statements are prepared, the plan cache has settled
	// (plan_cache_mode auto picks generic or custom plans after five executions) and the pages
	// are cached, as in a serving process.
	for i := range subjects {
		w.recall(b, i, v)
	}
	generic0, custom0 := recallSearchPlanCounts(b, w)
	lat := make([]time.Duration, 0, 1024)
	w.reset()
	i := 0
	for b.Loop() {
		start := time.Now()
		w.recall(b, i%subjects, v)
		lat = append(lat, time.Since(start))
		i++
	}
	b.StopTimer()
	trips := w.trips.Load()
	generic, custom := recallSearchPlanCounts(b, w)
	generic, custom = generic-generic0, custom-custom0
	slices.Sort(lat)
	b.ReportMetric(latencyPercentile(lat, 0.50), "p50-ms")
	b.ReportMetric(latencyPercentile(lat, 0.95), "p95-ms")
	b.ReportMetric(float64(trips)/float64(len(lat)), "roundtrips/op")
	if generic+custom > 0 {
		b.ReportMetric(float64(generic)/float64(generic+custom), "generic-plans/op")
	}
}

// TestRecallFindsSeededSubjects proves the benchmark's fixture: in a small bulk-loaded team, every
// query subject's recall finds exactly its designed relationships in each view, with their
// evidence and the status of the view, and the loaded rows work with the write pipeline and Trace.
func TestRecallFindsSeededSubjects(t *testing.T) {
	t.Parallel()
	w := loadBulkTeam(t, 400)
	p := w.params
	for i := range p.SubjectCount() {
		name := p.SubjectName(i)
		for _, v := range benchload.Views {
			res := w.recall(t, i, v)
			var objects []string
			for _, r := range res.Results {
				rel := r.Relationship
				objects = append(objects, rel.Object.Name)
				if rel.Subject.Name != name {
					t.Errorf("%s (%s): result about %q", name, v, rel.Subject.Name)
				}
				wantStatus := densemem.Status("active")
				if v == benchload.ViewValidAt && rel.Object.Name == p.SupersededObject(i) {
					wantStatus = "superseded"
				}
				if rel.Status != wantStatus {
					t.Errorf("%s (%s): %s %s has status %s, want %s", name, v, rel.Predicate, rel.Object.Name, rel.Status, wantStatus)
				}
				if len(r.Evidence) != 1 || !strings.Contains(r.Evidence[0].Excerpt, name) {
					t.Errorf("%s (%s): %s %s has evidence %+v, want one excerpt naming the subject", name, v,
						rel.Predicate, rel.Object.Name, r.Evidence)
				}
			}
			slices.Sort(objects)
			if want := p.Want(i, v); !slices.Equal(objects, want) {
				t.Errorf("%s (%s): objects %v, want %v", name, v, objects, want)
			}
		}
	}

	// The superseded relationship traces with both of its transitions.
	t0 := p.ValidAt()
	res, err := w.client.Recall(w.ctx, w.A, densemem.RecallRequest{Query: p.SubjectName(0), ValidAt: &t0})
	if err != nil {
		t.Fatal(err)
	}
	var superseded densemem.RelationshipID
	for _, r := range res.Results {
		if r.Relationship.Status == "superseded" {
			superseded = r.Relationship.RelationshipID
		}
	}
	if got, want := fmt.Sprint(w.transitions(superseded)), "[->active:accepted active->superseded:superseded]"; got != want {
		t.Errorf("transitions of the superseded relationship: %s, want %s", got, want)
	}

	// The write pipeline resolves the loaded entities by name and finds the loaded relationship:
	// restating a query subject's current deploys_from supports it instead of creating anything.
	current := p.Want(0, benchload.ViewCurrent)
	var branch string
	for _, r := range w.recall(t, 0, benchload.ViewCurrent).Results {
		if r.Relationship.Predicate == "deploys_from" {
			branch = r.Relationship.Object.Name
		}
	}
	if !slices.Contains(current, branch) {
		t.Fatalf("current deploys_from object %q is not among %v", branch, current)
	}
	if out := w.remember(w.A, deploy(p.SubjectName(0), branch)); out.Category != densemem.CategorySupported {
		t.Errorf("restating a loaded relationship: %s (%s), want %s", out.Category, out.Reason, densemem.CategorySupported)
	}
}

// BenchmarkRecallHostileQueries runs the queries the hardening issue found unbounded against a team
// of 20k relationships: words common to half the team ("environment branch", "works on project")
// and a 500-character query of 60 OR-ed note words. Each op runs the query once with the default
// limits (MaxQueryTerms 16, MaxRecallHits 2,000) and once with both lifted (the behaviour before),
// alternating, and the benchmark reports each side's p50 and their ratio. Since decision 122 a recall
// reads a window of 3 × limit rows per source whatever MaxRecallHits says (it only caps the
// widening), so the lifted side differs by MaxQueryTerms alone.
//
//	go test -run '^$' -bench RecallHostileQueries -benchtime 30x .
func BenchmarkRecallHostileQueries(b *testing.B) {
	w := loadBulkTeam(b, 20_000)
	unbounded, err := densemem.New(w.store, &densemem.Config{Clock: w.clock.Now,
		Limits: densemem.Limits{MaxQueryTerms: 1 << 20, MaxRecallHits: 1 << 30, StatementTimeout: time.Minute}})
	if err != nil {
		b.Fatal(err)
	}
	// 60 words of the loader's note vocabulary: each matches a few percent of the team.
	notes := strings.Fields(`amber anchor apple arbor arctic arrow aspen atlas aurora autumn badger bamboo banner
		barley basalt beacon bison blossom boulder bramble breeze bridge bronze brook cactus canyon carbon cargo cedar
		cellar cherry cinder citrus clover cobalt comet copper coral cosmos cotton crane crater crystal cypress dahlia
		delta desert dingo dolphin dragon drift dune eagle ember emerald engine falcon fennel fern ferry`)
	or60 := strings.Join(notes[:60], " or ")
	for _, q := range []struct{ name, query string }{
		{"common-words", "environment branch"},
		{"predicate-phrase", "works on project"},
		{"or60", or60[:min(len(or60), 500)]},
	} {
		b.Run(q.name, func(b *testing.B) {
			req := densemem.RecallRequest{Query: q.query, Limit: 10}
			for range 2 { // warm up both clients
				if _, err := w.client.Recall(w.ctx, w.A, req); err != nil {
					b.Fatal(err)
				}
				if _, err := unbounded.Recall(w.ctx, w.A, req); err != nil {
					b.Fatal(err)
				}
			}
			var bounded, open []time.Duration
			var truncated bool
			for b.Loop() {
				start := time.Now()
				res, err := w.client.Recall(w.ctx, w.A, req)
				if err != nil {
					b.Fatal(err)
				}
				bounded = append(bounded, time.Since(start))
				truncated = res.CandidatesTruncated || res.QueryTermsDropped > 0
				start = time.Now()
				if _, err := unbounded.Recall(w.ctx, w.A, req); err != nil {
					b.Fatal(err)
				}
				open = append(open, time.Since(start))
			}
			slices.Sort(bounded)
			slices.Sort(open)
			pb, po := latencyPercentile(bounded, 0.5), latencyPercentile(open, 0.5)
			b.ReportMetric(pb, "p50-ms-bounded")
			b.ReportMetric(po, "p50-ms-unbounded")
			b.ReportMetric(pb/po, "ratio-bounded/unbounded")
			if truncated {
				b.ReportMetric(1, "truncated")
			}
		})
	}
}
