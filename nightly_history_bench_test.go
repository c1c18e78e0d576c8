package densemem_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// BenchmarkNightlyReviewHistory compares the review of one due case in a team whose case keys carry
// a long closed history (NH_HISTORY superseded and retracted relationships per key, written through
// the library) with the same review in a team without one. The two teams live in one database and
// their reviews alternate, one case each per call (MaxCases 1), so a slow spell of the machine falls
// on both; the tables are vacuumed and analyzed first, as autovacuum would have; it reports the
// median review time of each and their ratio (history over none).
func BenchmarkNightlyReviewHistory(b *testing.B) {
	keys, history := countFromEnv("NH_KEYS", 12), countFromEnv("NH_HISTORY", 40)
	e := newEnv(b, quiet)
	fresh := e.mustTeam("fresh")
	type team struct {
		name string
		id   densemem.TeamID
		a, b densemem.Principal
	}
	teams := []*team{{name: "history", id: e.team, a: e.A, b: e.B}}
	fa, fb := e.profileIn(fresh, "A", "read", "write"), e.profileIn(fresh, "B", "read", "write")
	admin := e.profileIn(fresh, "admin", "read", "vocabulary")
	e.registerVocabulary(admin)
	teams = append(teams, &team{name: "none", id: fresh, a: fa, b: fb})
	// The history: on each key of the first team, A's statements superseded one after another by
	// dated ones, then retracted.
	for k := range keys {
		env := fmt.Sprintf("env%d", k)
		for h := range history {
			f := deploy(env, fmt.Sprintf("old%d", h)).since(date("2025-01-01").Add(time.Duration(h) * 24 * time.Hour))
			out := e.remember(e.A, f)
			if h == history-1 {
				if _, err := e.client.Forget(e.ctx, e.A, densemem.ForgetRequest{RelationshipID: out.RelationshipID,
					Reason: "history", IdempotencyKey: nextKey()}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	// The due cases: on every key of both teams, A says main and B says release.
	for _, t := range teams {
		for k := range keys {
			env := fmt.Sprintf("env%d", k)
			a, _ := e.client.Remember(e.ctx, t.a, deploy(env, "main").since(date("2026-03-01")).request(nextKey()))
			bo, err := e.client.Remember(e.ctx, t.b, deploy(env, "release").since(date("2026-04-01")).request(nextKey()))
			if err != nil || a == nil || bo.RelationshipOutcomes[0].Conflict == nil {
				b.Fatalf("team %s key %s: no case opened (%v)", t.name, env, err)
			}
		}
	}
	e.clock.Advance(24 * time.Hour)
	// As production would be by now: autovacuum has analyzed the grown tables and removed the dead
	// versions of the updated relationships, and the pool's connections (whose generic plans were
	// made while the tables were nearly empty) were replaced (pgxpool's MaxConnLifetime).
	if _, err := e.pool.Exec(e.ctx, "VACUUM (ANALYZE)"); err != nil {
		b.Fatal(err)
	}
	e.runtime.Reset()
	e.reviewer.Reset()
	times := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for range keys {
			for _, t := range teams {
				start := time.Now()
				rep, err := e.client.RunNightlyReview(e.ctx, densemem.NightlyReviewRequest{TeamIDs: []densemem.TeamID{t.id},
					MaxCases: 1, WorkerID: "bench"})
				d := time.Since(start)
				if err != nil || rep.Claimed != 1 || rep.Failed != 0 {
					b.Fatalf("team %s: %+v, %v; want one case reviewed", t.name, rep, err)
				}
				times[t.name] = append(times[t.name], d)
			}
		}
		b.StopTimer()
		e.clock.Advance(24 * time.Hour) // the next run date: every case is due again
		b.StartTimer()
	}
	median := func(name string) time.Duration {
		ds := slices.Clone(times[name])
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	mh, mn := median("history"), median("none")
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(mh.Microseconds())/1000, "ms/case-history")
	b.ReportMetric(float64(mn.Microseconds())/1000, "ms/case-none")
	b.ReportMetric(mh.Seconds()/mn.Seconds(), "ratio-history/none")
}
