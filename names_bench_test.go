package densemem_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
)

// BenchmarkRememberBesideAliasHubs measures a Remember that mentions new entities of a kind in a team
// with no other entities against the same Remember in a team holding 50 entities of that kind at the
// alias cap. The two teams live in one database and their Remembers alternate, so the machine's drift
// hits both alike; it reports each team's median and their ratio (the bound is 1.2). The hardening
// issue measured the old lookup, which read every name of every matched entity through a nested
// loop: one 1,500-alias entity raised such Remembers from 5 ms to 1.2 s.
//
//	go test -run '^$' -bench RememberBesideAliasHubs -benchtime 400x .
func BenchmarkRememberBesideAliasHubs(b *testing.B) {
	be := newBenchEnv(b, 0)
	e := be.env
	noHubs := e.A
	hubAdmin := e.profileIn(e.mustTeam("hubs"), "admin", "read", "write", "vocabulary")
	e.registerVocabulary(hubAdmin)
	for h := range 50 {
		f := place(fmt.Sprintf("hub-%d", h), "main")
		req := f.request(fmt.Sprintf("hub-%d", h))
		for a := range densemem.DefaultMaxAliasesPerEntity {
			req.Proposal.Entities[0].Aliases = append(req.Proposal.Entities[0].Aliases, fmt.Sprintf("hub-%d alias %d", h, a))
		}
		if _, err := e.client.Remember(e.ctx, hubAdmin, req); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(e.ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	var quietTimes, hubTimes []time.Duration
	remember := func(p densemem.Principal, i int) time.Duration {
		start := time.Now()
		if _, err := e.client.Remember(e.ctx, p, freshFact(i).request(fmt.Sprintf("op-%d", i))); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	i := 0
	for b.Loop() {
		i++
		if i%2 == 0 {
			quietTimes = append(quietTimes, remember(noHubs, i))
			hubTimes = append(hubTimes, remember(hubAdmin, i))
		} else {
			hubTimes = append(hubTimes, remember(hubAdmin, i))
			quietTimes = append(quietTimes, remember(noHubs, i))
		}
	}
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	q, h := median(quietTimes), median(hubTimes)
	b.ReportMetric(float64(q.Microseconds())/1000, "ms-median-no-hubs")
	b.ReportMetric(float64(h.Microseconds())/1000, "ms-median-50-hubs")
	b.ReportMetric(float64(h)/float64(q), "ratio-hubs/none")
}
