package densemem_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
)

// BenchmarkRecallMix recalls one interleaved mix of the query shapes real teams produce (issue 21
// item 4) in a team of 100k and one of 1M relationships. Run it with
//
//	RS_SIZES=100k,1M go test -run '^$' -bench RecallMix -benchtime 2000x -count 1 -timeout 0 .
//
// The teams are those of BenchmarkRecallAtScale (the same load parameters, so the same kept
// databases, densemem_bench_recall_<size>_<fingerprint>, loaded once by internal/testsupport/benchload's Zipf mode
// and reused; drop them with the command in BenchmarkRecallAtScale's doc comment).
//
// Each op is one Recall (limit 10) of a query drawn, with a fixed seed, from these classes (share of
// the ops in brackets), in the current view but for one op in ten at valid_at and one in ten at
// known_at:
//
//   - rare [20%]: a rare name ("qsubject-07"), 5 relationships.
//   - common [30%]: one word of the notes in 1–50% of the team (ranks 2–150 of the Zipf vocabulary).
//   - hub [15%]: a hub entity's name ("orion"), the subject of 10% down to 1% of the team.
//   - rare_and_common [15%]: a name AND a common word as an agent asks it: "what does orion deploy
//     from" (a hub and a predicate word in half the team that never occur together), "what does
//     qsubject-07 deploy from", "which projects does procyon work on".
//   - predicate [20%]: a predicate phrase ("works on project", "deploys from").
//
// Metrics, over every op of the size: p50-ms, p95-ms, p99-ms, p95-ms-<class>; p95-ratio (1M over
// 100k, when both ran in one process); top10-overlap, the share of the exact top 10 that the
// Recall of a common word returns (the exact top 10: the current relationships with matching
// effective evidence by ts_rank of their best evidence, ties by earlier creation then ID, computed
// by a query that scores every match); roundtrips/op; floor-ms, the p50 of the plain GIN query of a
// rare name (one round trip: its fragments' support links, LIMIT 10), and rare-ratio, the rare
// class's p50 over it.
func BenchmarkRecallMix(b *testing.B) {
	p95 := map[string]float64{}
	eachRecallSize(b, func(b *testing.B, label string, w *bulkLoadedTeam) {
		p95[label] = measureRecallMix(b, w)
		if base, ok := p95["100k"]; ok && label == "1M" && base > 0 {
			b.ReportMetric(p95[label]/base, "p95-ratio")
		}
	})
}

// mixQuery is one query of the mix: its class, text and view.
type mixQuery struct {
	class string
	query string
	view  benchload.View
}

// mixClassShares are the classes of the mix with their shares of the ops, in percent.
var mixClassShares = []struct {
	class string
	share int
}{{"rare", 20}, {"common", 30}, {"hub", 15}, {"rare_and_common", 15}, {"predicate", 20}}

// recallMixQueries returns each class's queries of a loaded team.
func recallMixQueries(p benchload.Params) map[string][]string {
	out := map[string][]string{}
	for i := range p.SubjectCount() {
		out["rare"] = append(out["rare"], p.SubjectName(i))
	}
	// Ranks 2..150 of the Zipf vocabulary: each word in about 50% down to 1% of the notes.
	for _, rank := range []int{2, 3, 5, 8, 12, 20, 35, 60, 100, 150} {
		out["common"] = append(out["common"], benchload.ZipfWord(rank))
	}
	for h := range benchload.HubCount {
		out["hub"] = append(out["hub"], p.HubName(h))
	}
	out["rare_and_common"] = []string{"what does orion deploy from", "what does vega deploy from",
		"what does " + p.SubjectName(7) + " deploy from", "what does " + p.SubjectName(3) + " deploy from",
		"which projects does procyon work on", "which projects does capella work on"}
	out["predicate"] = []string{"works on project", "deploys from branch", "works on", "deploys from"}
	return out
}

// recallMixOps draws n ops of the mix with a fixed seed.
func recallMixOps(p benchload.Params, n int) []mixQuery {
	queries := recallMixQueries(p)
	rng := rand.New(rand.NewPCG(21, 2))
	ops := make([]mixQuery, n)
	for i := range ops {
		u := rng.IntN(100)
		for _, c := range mixClassShares {
			if u < c.share {
				qs := queries[c.class]
				ops[i] = mixQuery{class: c.class, query: qs[rng.IntN(len(qs))], view: benchload.ViewCurrent}
				break
			}
			u -= c.share
		}
		switch rng.IntN(10) {
		case 0:
			ops[i].view = benchload.ViewValidAt
		case 1:
			ops[i].view = benchload.ViewKnownAt
		}
	}
	return ops
}

// measureRecallMix runs the mix on a loaded team, reports its metrics and returns its p95.
func measureRecallMix(b *testing.B, w *bulkLoadedTeam) float64 {
	queries := recallMixQueries(w.params)
	run := func(q mixQuery) (*densemem.RecallResponse, time.Duration) {
		req := w.request(0, q.view)
		req.Query = q.query
		start := time.Now()
		res, err := w.client.Recall(w.ctx, w.A, req)
		if err != nil {
			b.Fatalf("recall %q (%s): %v", q.query, q.view, err)
		}
		return res, time.Since(start)
	}
	// The exact top 10 of each common word, and its overlap with Recall's (outside the timed loop).
	var overlap float64
	for _, word := range queries["common"] {
		want := exactTop10(b, w, word)
		res, _ := run(mixQuery{class: "common", query: word, view: benchload.ViewCurrent})
		got := 0
		for _, r := range res.Results {
			if slices.Contains(want, r.Relationship.RelationshipID) {
				got++
			}
		}
		overlap += float64(got) / float64(max(len(want), 1))
	}
	// Warm up: every query once in every view (statements prepared, pages cached).
	for class, qs := range queries {
		for _, q := range qs {
			for _, v := range benchload.Views {
				run(mixQuery{class: class, query: q, view: v})
			}
		}
	}
	floor := plainSearchFloor(b, w, queries["rare"])
	ops := recallMixOps(w.params, 4096)
	lat := make([]time.Duration, 0, len(ops))
	byClass := map[string][]time.Duration{}
	w.reset()
	i := 0
	for b.Loop() {
		q := ops[i%len(ops)]
		_, d := run(q)
		lat = append(lat, d)
		byClass[q.class] = append(byClass[q.class], d)
		i++
	}
	b.StopTimer()
	slices.Sort(lat)
	p95 := latencyPercentile(lat, 0.95)
	b.ReportMetric(latencyPercentile(lat, 0.50), "p50-ms")
	b.ReportMetric(p95, "p95-ms")
	b.ReportMetric(latencyPercentile(lat, 0.99), "p99-ms")
	for class, d := range byClass {
		slices.Sort(d)
		b.ReportMetric(latencyPercentile(d, 0.95), "p95-ms-"+class)
	}
	b.ReportMetric(overlap/float64(len(queries["common"])), "top10-overlap")
	b.ReportMetric(float64(w.trips.Load())/float64(len(lat)), "roundtrips/op")
	b.ReportMetric(floor, "floor-ms")
	if rare := byClass["rare"]; len(rare) > 0 && floor > 0 {
		b.ReportMetric(latencyPercentile(rare, 0.50)/floor, "rare-ratio")
	}
	return p95
}

// exactTop10 is the exact top 10 of a query among the current relationships: every match scored by
// the ts_rank of its best effective evidence, ties by earlier creation then ID.
func exactTop10(tb testing.TB, w *bulkLoadedTeam, query string) []densemem.RelationshipID {
	tb.Helper()
	rows, err := w.pool.Query(w.ctx, `SELECT r.relationship_id
FROM fragment_contents c
JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
JOIN relationships r ON r.team_id = s.team_id AND r.relationship_id = s.relationship_id
WHERE c.team_id = $1 AND c.search @@ websearch_to_tsquery('english', $2)
  AND r.status = 'active' AND (r.valid_to IS NULL OR r.valid_to > $3)
  AND NOT EXISTS (SELECT 1 FROM fragment_retirements fr WHERE fr.team_id = c.team_id AND fr.fragment_id = c.fragment_id)
GROUP BY r.relationship_id, r.created_at
ORDER BY max(ts_rank(c.search, websearch_to_tsquery('english', $2))) DESC, r.created_at, r.relationship_id
LIMIT 10`, w.team, query, w.clock.Now())
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[densemem.RelationshipID])
	if err != nil {
		tb.Fatal(err)
	}
	if len(ids) < 10 {
		tb.Fatalf("exact top 10 of %q: %d relationships", query, len(ids))
	}
	return ids
}

// plainSearchFloor is the p50, in milliseconds, of the plain GIN query of the rare names: one round
// trip reading the support links of the fragments that match, LIMIT 10, with none of Recall's views,
// ranking, evidence or authorisation.
func plainSearchFloor(tb testing.TB, w *bulkLoadedTeam, names []string) float64 {
	tb.Helper()
	const plain = `SELECT s.relationship_id FROM fragment_contents c
JOIN support_links s ON s.team_id = c.team_id AND s.fragment_id = c.fragment_id
WHERE c.team_id = $1 AND c.search @@ websearch_to_tsquery('english', $2) LIMIT 10`
	var lat []time.Duration
	for i := range 20 * len(names) {
		start := time.Now()
		rows, err := w.pool.Query(w.ctx, plain, w.team, names[i%len(names)])
		if err != nil {
			tb.Fatal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			tb.Fatal(err)
		}
		if len(ids) == 0 {
			tb.Fatalf("plain query of %q found nothing", names[i%len(names)])
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return latencyPercentile(lat, 0.50)
}
