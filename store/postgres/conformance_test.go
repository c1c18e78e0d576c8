package postgres_test

import (
	"testing"

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
			return postgres.New(testdb.AsRole(t, testdb.New(t), migrations.DefaultRuntimeRole), nil)
		},
		Reviewer: func(t *testing.T, s store.Store) store.Store {
			return postgres.New(testdb.AsRole(t, s.(*postgres.Store).Pool(), migrations.DefaultReviewerRole), nil)
		},
	})
}
