package densemem_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store/postgres"
)

// bindingBaseline is the last migration before the database boundary (issue 22): row-level security
// trusted densemem.team, no actor policies, no pinned search paths.
const bindingBaseline = 24

// newUnboundEnv is an env on a database migrated to bindingBaseline only, its stores holding no
// binding key (there is none to hold).
func newUnboundEnv(tb testing.TB) *env {
	tb.Helper()
	pool := testdb.NewEmpty(tb)
	if err := migrations.UpTo(context.Background(), pool, bindingBaseline, nil); err != nil {
		tb.Fatal(err)
	}
	e := &env{t: tb, ctx: context.Background(), pool: pool, clock: newTestClock()}
	e.runtime = testdb.AsRole(tb, pool, migrations.DefaultRuntimeRole)
	e.reviewer = testdb.AsRole(tb, pool, migrations.DefaultReviewerRole)
	e.store, e.reviewStore = postgres.New(e.runtime, nil), postgres.New(e.reviewer, nil)
	var err error
	if e.client, err = densemem.New(e.store, &densemem.Config{Clock: e.clock.Now,
		Nightly: densemem.NightlyConfig{Store: e.reviewStore}}); err != nil {
		tb.Fatal(err)
	}
	return e.populate()
}

// BenchmarkBindingCost: what the database boundary (migrations 25 and 26: the verified team and
// actor binding, the actor policies, the judgements) costs Remember and Recall, against the same
// calls on a database at migration 24, interleaved op by op (issue 22 item 2: at most 5%).
// Metrics: each side's median and the ratio bound/unbound.
func BenchmarkBindingCost(b *testing.B) {
	envs := map[string]*env{"unbound": newUnboundEnv(b), "bound": newEnv(b)}
	const seeded = 200
	for _, e := range envs {
		for i := range seeded {
			e.rememberFresh(e.A, -1-i)
		}
	}
	times := map[string][]time.Duration{}
	op := func(name, call string, i int) {
		e := envs[name]
		start := time.Now()
		if call == "remember" {
			e.rememberFresh(e.A, i)
		} else {
			r := e.recall(e.B, fmt.Sprintf("env-%d deploy", -1-i%seeded), nil, nil)
			if len(r.Results) == 0 {
				b.Fatalf("%s recall %d: no results", name, i)
			}
		}
		times[name+"-"+call] = append(times[name+"-"+call], time.Since(start))
	}
	i := 0
	for b.Loop() {
		order := []string{"unbound", "bound"}
		if i%2 == 1 {
			order = []string{"bound", "unbound"}
		}
		for _, call := range []string{"remember", "recall"} {
			for _, name := range order {
				op(name, call, i)
			}
		}
		i++
	}
	median := func(ds []time.Duration) float64 {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	for _, call := range []string{"remember", "recall"} {
		u, bd := median(times["unbound-"+call]), median(times["bound-"+call])
		b.ReportMetric(u, "ms-unbound-"+call)
		b.ReportMetric(bd, "ms-bound-"+call)
		b.ReportMetric(bd/u, "ratio-"+call)
	}
}
