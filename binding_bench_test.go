package densemem_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testsupport/testdb"
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
	// The store opens every transaction with migration 27's densemem_begin and checks deferred
	// constraints with densemem_check_deferred before COMMIT; the baseline gets their plain-PostgreSQL
	// behaviour (the settings by set_config; nothing), so that only the boundary differs.
	for _, q := range []string{`CREATE FUNCTION densemem.densemem_begin(p_team text, p_statement_timeout text, p_actor text,
    p_binding text) RETURNS void LANGUAGE plpgsql SET search_path = densemem, pg_temp AS $$
BEGIN
    PERFORM set_config('statement_timeout', p_statement_timeout, true), set_config('lock_timeout', '0', true),
        set_config('idle_in_transaction_session_timeout', '0', true), set_config('row_security', 'on', true),
        set_config('plan_cache_mode', 'force_generic_plan', true), set_config('densemem.team', p_team, true),
        set_config('densemem.actor', p_actor, true), set_config('densemem.binding', p_binding, true);
END $$`,
		`CREATE FUNCTION densemem.densemem_check_deferred(p_team text) RETURNS void LANGUAGE plpgsql
    SET search_path = densemem, pg_temp AS $$ BEGIN END $$`,
		"GRANT EXECUTE ON FUNCTION densemem.densemem_begin(text, text, text, text), densemem.densemem_check_deferred(text) TO " +
			migrations.DefaultRuntimeRole + ", " + migrations.DefaultReviewerRole} {
		if _, err := pool.Exec(context.Background(), q); err != nil {
			tb.Fatal(err)
		}
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
		// Statistics on both, as autovacuum would give them: otherwise either side's plans change
		// when autoanalyze reaches its tables mid-run, and the ratio measures that.
		if _, err := e.pool.Exec(e.ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
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

// backendCPU returns the CPU time, in milliseconds, the server's backends connected to e's database
// have used (utime and stime of /proc/<pid>/stat; Linux, the server on this machine). Backends that
// exit before the second reading are lost, so it is read around work on pools that stay open.
func backendCPU(tb testing.TB, e *env) float64 {
	tb.Helper()
	rows, err := e.pool.Query(e.ctx, "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
	if err != nil {
		tb.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		tb.Fatal(err)
	}
	var ticks float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // not on this machine, or gone
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		u, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		ticks += u + st
	}
	return ticks * 1000 / 100 // USER_HZ is 100 on Linux
}

// BenchmarkBindingCheckCPU: the server's CPU per Remember and per Recall under each form of the
// team policy, interleaved op by op on databases seeded alike (decision 242): "none" (migration 24,
// no boundary), "setting" (the whole boundary, but the policies trust densemem.team: what the rest
// of the boundary costs), "definer" (a SECURITY DEFINER function that checks nothing: the floor of
// any check a policy calls), "verified" (migration 29's verified_team view, the head) and
// "view" (migration 25's bound_team view, the check before migration 29). Metrics: the server's CPU
// µs per call and the median wall µs per call of each form; the binding's own cost is "verified"
// against "setting" (the same schema and triggers, the policies trusting the setting). Needs the
// server on this machine (/proc).
func BenchmarkBindingCheckCPU(b *testing.B) {
	policy := func(expr string) func(*env) {
		return func(e *env) {
			if _, err := e.pool.Exec(e.ctx, `CREATE FUNCTION densemem.bench_definer() RETURNS text LANGUAGE plpgsql STABLE
				SECURITY DEFINER AS $f$ BEGIN RETURN pg_catalog.current_setting('densemem.team', true); END $f$;
				GRANT EXECUTE ON FUNCTION densemem.bench_definer() TO `+migrations.DefaultRuntimeRole+", "+migrations.DefaultReviewerRole); err != nil {
				b.Fatal(err)
			}
			if expr == "" {
				return
			}
			if _, err := e.pool.Exec(e.ctx, fmt.Sprintf(`DO $$ DECLARE r record; BEGIN
				FOR r IN SELECT c.relname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE p.polname = 'team_isolation' LOOP
					EXECUTE format('ALTER POLICY team_isolation ON densemem.%%I USING (%[1]s) WITH CHECK (%[1]s)', r.relname);
				END LOOP; END $$`, expr)); err != nil {
				b.Fatal(err)
			}
		}
	}
	forms := []struct {
		name  string
		setup func(*env)
	}{
		{"none", nil},
		{"setting", policy("team_id = current_setting(''densemem.team'', true)")},
		{"definer", policy("team_id = (SELECT densemem.bench_definer())")},
		{"verified", policy("")},
		{"view", policy("team_id = (SELECT b.team_id FROM densemem.bound_team b)")},
	}
	envs := make([]*env, len(forms))
	const seeded = 200
	for i, f := range forms {
		if f.setup == nil {
			envs[i] = newUnboundEnv(b)
		} else {
			envs[i] = newEnv(b)
			f.setup(envs[i])
		}
		e := envs[i]
		for j := range seeded {
			e.rememberFresh(e.A, -1-j)
		}
		if _, err := e.pool.Exec(e.ctx, "ANALYZE"); err != nil {
			b.Fatal(err)
		}
		// No autovacuum during the run: a vacuum or analyze reaching one database and not another
		// moved that database's figures by up to 10% between runs.
		if _, err := e.pool.Exec(e.ctx, `DO $$ DECLARE r record; BEGIN
			FOR r IN SELECT c.oid::regclass AS t FROM pg_class c WHERE c.relnamespace = 'densemem'::regnamespace AND c.relkind = 'r' LOOP
				EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = false)', r.t);
			END LOOP; END $$`); err != nil {
			b.Fatal(err)
		}
		for j := range 20 {
			e.recall(e.B, fmt.Sprintf("env-%d deploy", -1-j), nil, nil)
		}
	}
	n := b.N
	b.ResetTimer()
	for _, call := range []string{"remember", "recall"} {
		cpu := make([]float64, len(forms))
		wall := make([][]time.Duration, len(forms))
		for i, e := range envs {
			cpu[i] = -backendCPU(b, e)
		}
		for j := range n {
			for k := range envs {
				i := k
				if j%2 == 1 {
					i = len(envs) - 1 - k
				}
				e := envs[i]
				start := time.Now()
				if call == "remember" {
					e.rememberFresh(e.A, j)
				} else if r := e.recall(e.B, fmt.Sprintf("env-%d deploy", -1-j%seeded), nil, nil); len(r.Results) == 0 {
					b.Fatalf("%s recall %d: no results", forms[i].name, j)
				}
				wall[i] = append(wall[i], time.Since(start))
			}
		}
		for i, e := range envs {
			cpu[i] += backendCPU(b, e)
		}
		for i, f := range forms {
			b.ReportMetric(cpu[i]/float64(n)*1000, "cpu-us-"+call+"-"+f.name)
			slices.Sort(wall[i])
			b.ReportMetric(float64(wall[i][len(wall[i])/2].Microseconds()), "median-us-"+call+"-"+f.name)
		}
	}
}
