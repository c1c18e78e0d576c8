package densemem_test

import (
	"fmt"
	"testing"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/internal/testdb"
)

// TestConcurrentWritersOnOneEntityNameOnCitus runs on the Citus cluster DENSEMEM_CITUS_URL names
// (skipped without one): 20 concurrent Remember calls of one team, as the runtime role, name one new
// environment in three spellings, each deploying from a branch of its own. Every call succeeds
// (none waits out its statement timeout on the entity-name lock), one entity is created, one
// statement is accepted and the others are held against it, as on one node
// (TestConcurrentSameNewEntity).
func TestConcurrentWritersOnOneEntityNameOnCitus(t *testing.T) {
	const n = 20
	e := newEnvOnPool(t, testdb.Citus(t))
	results := rememberConcurrently(t, e, e.A, n, func(i int) densemem.RememberRequest {
		name := []string{"staging", "Staging", "STAGING"}[i%3]
		return deploy(name, fmt.Sprintf("feature-%02d", i)).request(fmt.Sprintf("staging-%02d", i))
	})
	if ids := e.ledger().Entities(e.team, "environment", "staging"); len(ids) != 1 {
		t.Fatalf("environment staging: entities %v, want exactly one", ids)
	}
	accepted, held := 0, 0
	for i, r := range results {
		switch o := onlyOutcome(t, fmt.Sprintf("call %d", i), r); o.Category {
		case densemem.CategoryAccepted:
			accepted++
		case densemem.CategoryNeedsReview:
			held++
		default:
			t.Errorf("call %d: category %s, want accepted or needs_review", i, o.Category)
		}
	}
	if accepted != 1 || held != n-1 {
		t.Errorf("%d accepted and %d held, want 1 and %d", accepted, held, n-1)
	}
}
