package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/densemem/densemem/internal/testdb"
	"github.com/densemem/densemem/migrations"
	"github.com/densemem/densemem/store"
	"github.com/densemem/densemem/store/postgres"
	"github.com/densemem/densemem/store/storetest"
)

// TestConformance runs the store conformance suite against PostgreSQL as production connects: every
// subtest on a fresh clone of the migrated template, profile calls as the runtime role and the
// nightly reviewer's calls as the reviewer role, both under row-level security.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) store.Store {
			return roleStore(t, testdb.New(t), migrations.DefaultRuntimeRole)
		},
		Reviewer: func(t *testing.T, s store.Store) store.Store {
			return roleStore(t, s.(*postgres.Store).Pool(), migrations.DefaultReviewerRole)
		},
	})
}

// roleStore returns a store on admin's database as role, holding the database's binding key as a
// host's store does (admin: a superuser's pool, or any pool on that database whose own role may
// connect as role on the test server).
func roleStore(t *testing.T, admin *pgxpool.Pool, role string) *postgres.Store {
	t.Helper()
	pool := testdb.AsRole(t, admin, role)
	return postgres.New(pool, &postgres.Options{BindingKey: bindingKey(t, admin)})
}

// bindingKey reads the binding key of pool's database as the test server's maintenance user.
func bindingKey(t *testing.T, pool *pgxpool.Pool) []byte {
	t.Helper()
	su, err := pgxpool.NewWithConfig(context.Background(), superuserConfig(pool))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	key, err := migrations.BindingKey(context.Background(), su, nil)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// superuserConfig is admin's pool configuration as the test server's maintenance user.
func superuserConfig(pool *pgxpool.Pool) *pgxpool.Config {
	cfg := pool.Config().Copy()
	if u, err := testdb.AdminURL(); err == nil {
		if c, err := pgxpool.ParseConfig(u); err == nil {
			cfg.ConnConfig.User, cfg.ConnConfig.Password = c.ConnConfig.User, c.ConnConfig.Password
		}
	}
	cfg.MaxConns = 1
	return cfg
}
