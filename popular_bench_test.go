package densemem_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/benchload"
)

// popularSizes are the popular keys of BenchmarkRememberPopularEntity: live relationships of one
// cardinality-many key; popularHistory the closed versions of its cardinality-one key.
var popularSizes = []struct {
	label string
	n     int
}{{"1k", 1_000}, {"10k", 10_000}, {"100k", 100_000}}

const popularHistory = 1_000

// popularShape is one kind of Remember of BenchmarkRememberPopularEntity: its label and the request
// of op i.
type popularShape struct {
	label string
	req   func(i int) densemem.RememberRequest
	want  densemem.Category
}

// BenchmarkRememberPopularEntity measures Remember about an entity that already holds many
// relationships (issue 21): one team, bulk-loaded (internal/testsupport/benchload) with 1,000 filler
// relationships, three people holding 1k, 10k and 100k works_on relationships (cardinality many) on
// their one key, and an environment with 1,000 dated deploys_from versions, 999 of them superseded
// (cardinality one). Each iteration runs, in an order that rotates, one fresh-entity Remember (two
// new entities: BenchmarkRememberVsFloor's op) and one Remember per shape: a new project of each
// popular person, and a new dated version of the environment that supersedes its current one.
//
// Metrics: ms-median-fresh and ms-median-<shape>; ratio-<shape>, the shape's median over the fresh
// one's (ratio-1k, ratio-10k, ratio-100k, ratio-history); roundtrips/op, the most round trips a
// shape's Remember took on average, and fresh-roundtrips/op.
func BenchmarkRememberPopularEntity(b *testing.B) {
	sizes := make([]int, len(popularSizes))
	for i, s := range popularSizes {
		sizes[i] = s.n
	}
	// The load takes about a minute: the database is kept between runs (as BenchmarkRecallMix's are),
	// so a kept one holds the relationships earlier runs' ops added too (a few per op and key).
	p := benchload.Params{Active: 1_000, Popular: sizes, History: popularHistory, SkipResolutions: true,
		Start: newTestClock().Now().Add(time.Minute)}
	h := sha256.Sum256(fmt.Appendf(nil, "%d %v %d %s", p.Active, p.Popular, p.History, p.Start.UTC().Format(time.RFC3339Nano)))
	w := keptTeam(b, "densemem_bench_popular_"+hex.EncodeToString(h[:])[:12], p)
	be, p := w.benchEnv, w.params
	// Names and idempotency keys of this run's ops: unique across the runs a kept database sees.
	runID := time.Now().UnixMilli()
	// The history key's current version, which op -1 supersedes (a kept database's is an earlier
	// run's last).
	var current time.Time
	if err := be.pool.QueryRow(be.ctx, `SELECT max(r.valid_from) FROM relationships r
JOIN entity_names n ON n.team_id = r.team_id AND n.entity_id = r.subject_entity_id
WHERE r.team_id = $1 AND n.name = $2 AND r.status = 'active'`, be.team, benchload.HistoryName(popularHistory)).Scan(&current); err != nil {
		b.Fatal(err)
	}

	var shapes []popularShape
	for _, s := range popularSizes {
		shapes = append(shapes, popularShape{label: s.label, want: densemem.CategoryAccepted, req: func(i int) densemem.RememberRequest {
			f := fact{subject: benchload.PopularName(s.n), subjectKind: "person", predicate: "works_on",
				object: fmt.Sprintf("bench-project-%s-%d-%d", s.label, runID, i), objectKind: "project"}
			f.content = fmt.Sprintf("%s works on the %s project.", f.subject, f.object)
			return f.request(fmt.Sprintf("popular-%s-%d-%d", s.label, runID, i))
		}})
	}
	// Op i's version is dated i+2 days after the current one: later than every version before.
	shapes = append(shapes, popularShape{label: "history", want: densemem.CategorySupersededPrior, req: func(i int) densemem.RememberRequest {
		f := deploy(benchload.HistoryName(popularHistory), fmt.Sprintf("bench-branch-%d-%d", runID, i)).since(current.AddDate(0, 0, i+2))
		return f.request(fmt.Sprintf("history-%d-%d", runID, i))
	}})

	times := map[string][]time.Duration{}
	trips := map[string]int64{}
	run := func(label string, i int, f func() *densemem.Placement, want densemem.Category) {
		be.reset()
		t0 := time.Now()
		pl := f()
		times[label] = append(times[label], time.Since(t0))
		trips[label] += be.trips.Load()
		if len(pl.RelationshipOutcomes) != 1 || pl.RelationshipOutcomes[0].Category != want {
			b.Fatalf("%s op %d: %+v; want one outcome %s", label, i, pl.RelationshipOutcomes, want)
		}
	}
	remember := func(s popularShape, i int) func() *densemem.Placement {
		return func() *densemem.Placement {
			pl, err := be.client.Remember(be.ctx, be.A, s.req(i))
			if err != nil {
				b.Fatalf("%s op %d: %v", s.label, i, err)
			}
			return pl
		}
	}
	ops := func(i int) []func() {
		out := []func(){func() {
			run("fresh", i, func() *densemem.Placement {
				f := freshFact(i)
				f.subject, f.object = fmt.Sprintf("env-%d-%d", runID, i), fmt.Sprintf("branch-%d-%d", runID, i)
				f.content = fmt.Sprintf("The %s environment deploys from the %s branch.", f.subject, f.object)
				pl, err := be.client.Remember(be.ctx, be.A, f.request(fmt.Sprintf("fresh-%d-%d", runID, i)))
				if err != nil {
					b.Fatalf("fresh op %d: %v", i, err)
				}
				return pl
			}, densemem.CategoryAccepted)
		}}
		for _, s := range shapes {
			out = append(out, func() { run(s.label, i, remember(s, i), s.want) })
		}
		return out
	}
	// One untimed round warms the connections and statements of every shape.
	for _, op := range ops(-1) {
		op()
	}
	clear(times)
	clear(trips)
	i := 0
	for b.Loop() {
		round := ops(i)
		for k := range round {
			round[(k+i)%len(round)]()
		}
		i++
	}
	median := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	fresh := median(times["fresh"])
	b.ReportMetric(fresh, "ms-median-fresh")
	b.ReportMetric(float64(trips["fresh"])/float64(i), "fresh-roundtrips/op")
	most := 0.0
	for _, s := range shapes {
		m := median(times[s.label])
		b.ReportMetric(m, "ms-median-"+s.label)
		b.ReportMetric(m/fresh, "ratio-"+s.label)
		most = max(most, float64(trips[s.label])/float64(i))
	}
	b.ReportMetric(most, "roundtrips/op")
}

// BenchmarkAdoption measures adoption by many profiles (issue 21 item 3): each iteration, B
// remembers one fragment stating adoptionRels works_on relationships of a new person, then 25
// profiles adopt it in turn, each remembering the same relationships citing B's fragment. Metrics:
// ms-median-first and ms-median-25th, the medians over the iterations of the first and the 25th
// adopter's Remember; ratio-25th, their ratio; xrefs-25th, the cross-references the 25th adopter
// wrote per relationship.
func BenchmarkAdoption(b *testing.B) {
	const adopters, adoptionRels = 25, 50
	be := newBenchEnv(b, 0)
	profiles := make([]densemem.Principal, adopters)
	for i := range profiles {
		profiles[i] = be.mustProfile(fmt.Sprintf("adopter-%02d", i), "read", "write")
	}
	var first, last []time.Duration
	var xrefs float64
	it := 0
	for b.Loop() {
		src := worksOnRequest(fmt.Sprintf("adoptee-%d", it), fmt.Sprintf("adoptee-%d", it), projects(1000*it, 1000*it+adoptionRels)...)
		pl, err := be.client.Remember(be.ctx, be.B, src)
		if err != nil {
			b.Fatal(err)
		}
		fragment := pl.Fragments[0].FragmentID
		for k, p := range profiles {
			req := src
			req.IdempotencyKey = fmt.Sprintf("adopt-%d-%d", it, k)
			t0 := time.Now()
			out, err := be.client.Remember(be.ctx, p, adoptingAll(req, fragment))
			d := time.Since(t0)
			if err != nil {
				b.Fatalf("adopter %d: %v", k+1, err)
			}
			switch k {
			case 0:
				first = append(first, d)
			case adopters - 1:
				last = append(last, d)
				n := 0
				for _, o := range out.RelationshipOutcomes {
					n += len(o.CrossReferences)
				}
				xrefs = float64(n) / float64(len(out.RelationshipOutcomes))
			}
		}
		it++
	}
	median := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	f, l := median(first), median(last)
	b.ReportMetric(f, "ms-median-first")
	b.ReportMetric(l, "ms-median-25th")
	b.ReportMetric(l/f, "ratio-25th")
	b.ReportMetric(xrefs, "xrefs-25th")
}
