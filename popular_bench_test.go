package densemem_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/benchload"
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
// relationships (issue 21): one team, bulk-loaded (internal/benchload) with 1,000 filler
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
	be := newBenchEnv(b, 0)
	sizes := make([]int, len(popularSizes))
	for i, s := range popularSizes {
		sizes[i] = s.n
	}
	p := benchload.Params{Team: string(be.team), Owner: string(be.A.ProfileID), Active: 1_000, Popular: sizes,
		History: popularHistory, Start: be.clock.Now().Add(time.Minute), SkipResolutions: true}
	start := time.Now()
	if err := benchload.Load(be.ctx, be.pool, p); err != nil {
		b.Fatal(err)
	}
	b.Logf("loaded %d relationships in %s", p.Active+p.SubjectCount()+popularHistory+111_000, time.Since(start).Round(time.Millisecond))
	be.clock.Advance(p.End().Sub(be.clock.Now()) + 24*time.Hour)

	var shapes []popularShape
	for _, s := range popularSizes {
		shapes = append(shapes, popularShape{label: s.label, want: densemem.CategoryAccepted, req: func(i int) densemem.RememberRequest {
			f := fact{subject: benchload.PopularName(s.n), subjectKind: "person", predicate: "works_on",
				object: fmt.Sprintf("bench-project-%s-%d", s.label, i), objectKind: "project"}
			f.content = fmt.Sprintf("%s works on the %s project.", f.subject, f.object)
			return f.request(fmt.Sprintf("popular-%s-%d", s.label, i))
		}})
	}
	// The history's versions are dated one a day up to the day before the load; op i's the day after
	// the load's start and on, each later than the one before.
	first := p.Start.Truncate(24 * time.Hour)
	shapes = append(shapes, popularShape{label: "history", want: densemem.CategorySupersededPrior, req: func(i int) densemem.RememberRequest {
		f := deploy(benchload.HistoryName(popularHistory), fmt.Sprintf("bench-branch-%d", i)).since(first.AddDate(0, 0, i+1))
		return f.request(fmt.Sprintf("history-%d", i))
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
			run("fresh", i, func() *densemem.Placement { return be.rememberFresh(be.A, i) }, densemem.CategoryAccepted)
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
