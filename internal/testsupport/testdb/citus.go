package testdb

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/migrations"
)

// EnvCitusURL names the environment variable that points the Citus tests at the coordinator of a
// cluster (scripts/citus/cluster.sh env prints it). Without it those tests are skipped: the
// cluster is an opt-in of the developer, and the README's test command on plain PostgreSQL does not
// change.
const EnvCitusURL = "DENSEMEM_CITUS_URL"

var (
	citusMu    sync.Mutex
	citusReady bool
)

// Citus returns a pool, as the connecting superuser, on the database of the Citus cluster that
// EnvCitusURL names, migrated (migrations.Up) and distributed (migrations.Distribute) once per
// test process. Every test shares that database: a cluster cannot clone one (a template clones
// the coordinator only), so the tests tell their data apart by fresh team IDs. Without EnvCitusURL
// the test is skipped, saying how to run it.
func Citus(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	url := os.Getenv(EnvCitusURL)
	if url == "" {
		tb.Skipf("no Citus cluster: set %s to its coordinator (scripts/citus/cluster.sh create NAME; eval \"$(scripts/citus/cluster.sh env NAME)\")", EnvCitusURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatalf("testdb: %s: %v", EnvCitusURL, err)
	}
	// Tests read and write Dense-Mem's tables by their plain names, as on a clone.
	cfg.ConnConfig.RuntimeParams["search_path"] = migrations.DefaultSchema
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("testdb: open %s: %v", EnvCitusURL, err)
	}
	tb.Cleanup(pool.Close)
	if err := citusPrepare(ctx, pool); err != nil {
		tb.Fatalf("testdb: prepare the Citus database: %v", err)
	}
	return pool
}

// citusPrepare migrates and distributes the cluster's database, once per process (both are
// idempotent and serialised by the migrations' lock across processes).
func citusPrepare(ctx context.Context, pool *pgxpool.Pool) error {
	citusMu.Lock()
	defer citusMu.Unlock()
	if citusReady {
		return nil
	}
	if err := migrations.Up(ctx, pool, nil); err != nil {
		return err
	}
	if _, err := migrations.Distribute(ctx, pool, nil); err != nil {
		return err
	}
	citusReady = true
	return nil
}

// CitusWorkers returns the pools, as pool's user, on the cluster's workers (from pool's
// coordinator's pg_dist_node), closed when the test ends: tests read the workers' catalogs with
// them.
func CitusWorkers(tb testing.TB, pool *pgxpool.Pool) []*pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	rows, err := pool.Query(ctx, `SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid <> 0
		ORDER BY nodeport`)
	if err != nil {
		tb.Fatalf("testdb: workers: %v", err)
	}
	defer rows.Close()
	var out []*pgxpool.Pool
	for rows.Next() {
		var host string
		var port int
		if err := rows.Scan(&host, &port); err != nil {
			tb.Fatalf("testdb: workers: %v", err)
		}
		cfg := pool.Config().Copy()
		cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(port)
		cfg.ConnConfig.Fallbacks = nil
		cfg.MaxConns = 2
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			tb.Fatalf("testdb: worker %s:%d: %v", host, port, err)
		}
		tb.Cleanup(p.Close)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		tb.Fatalf("testdb: workers: %v", err)
	}
	if len(out) == 0 {
		tb.Fatal(fmt.Errorf("testdb: the cluster has no worker"))
	}
	return out
}
