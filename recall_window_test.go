package densemem_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/densemem/densemem"
	"github.com/densemem/densemem/store"
)

// TestRecallWidensPastFilteredCandidates: each source of candidates contributes a window of rows,
// the first in creation order (decision 122); when the view's filters reject the window's rows and
// leave a branch short, the search widens the window, up to MaxRecallHits. Here the subject's first
// eleven deploys_from relationships are superseded and only the twelfth is current.
func TestRecallWidensPastFilteredCandidates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		e.remember(e.A, deploy("widen", fmt.Sprintf("b%02d", i)).since(day.AddDate(0, 0, i)))
		e.clock.Advance(time.Minute)
	}
	search := func(maxHits int) store.RecallSearch {
		t.Helper()
		found, err := e.store.RecallSearch(store.WithActor(e.ctx, store.ActorHost), store.RecallSearchParams{Team: e.team, Query: "widen",
			Names: []string{"widen"}, At: e.clock.Now(), PerBranch: 3, MaxHits: maxHits})
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	// Without room to widen, the full-text branch sees only superseded relationships and keeps none;
	// the entity-name branch filters before its limit and finds the current one.
	narrow := search(3)
	if len(narrow.FullText) != 0 || !narrow.HitsTruncated {
		t.Errorf("window 3: full-text %d candidates, truncated %t; want 0, true", len(narrow.FullText), narrow.HitsTruncated)
	}
	if len(narrow.EntityName) != 1 {
		t.Errorf("window 3: entity-name %d candidates, want 1", len(narrow.EntityName))
	}
	// Widened (3, then 24 rows per source), the full-text branch reaches the current relationship.
	wide := search(densemem.DefaultMaxRecallHits)
	if len(wide.FullText) != 1 || len(wide.EntityName) != 1 || wide.FullText[0].ID != wide.EntityName[0].ID {
		t.Errorf("widened: full-text %+v, entity-name %+v; want the one current relationship in both", wide.FullText, wide.EntityName)
	}
	res, err := e.client.Recall(e.ctx, e.A, densemem.RecallRequest{Query: "widen", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Results[0].Relationship.Object.Name != "b11" {
		t.Errorf("recall: %+v, want b11", res.Results)
	}
}
