package postgres_test

import (
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

// bindingKey reads the binding key of pool's database.
func bindingKey(t *testing.T, pool *pgxpool.Pool) []byte { return testdb.BindingKey(t, pool) }
