package densemem

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// FuzzListRequestValidate checks that any page size and cursor of any List call either is refused
// with problems that all have a path, or is a page size within bounds and a cursor of that list
// whose key encodes back to a cursor read as the same key.
func FuzzListRequestValidate(f *testing.F) {
	for _, c := range []listCursor{
		{List: listProfiles, Keys: []string{"pf_1"}},
		{List: listPredicates, Keys: []string{"deploys_from"}},
		{List: listConflicts, At: time.Date(2026, 6, 8, 9, 0, 0, 0, time.UTC), Keys: []string{"overdue", "cf_1"}},
		{List: listReviewItems, At: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC), Keys: []string{"pf_1", "rev_1"}},
	} {
		f.Add(c.encode(), 0)
	}
	f.Add("", 501)
	f.Add("eyJsIjoibGlzdDpjb25mbGljdHMiLCJ0IjotOTk5OTk5OTk5OTk5OTk5OTk5OSwiayI6WyJvcGVuIiwieCJdfQ", -1)
	c := &Client{cfg: (&Config{}).withDefaults()}
	lists := []struct {
		name  string
		keys  int
		timed bool
	}{{listProfiles, 1, false}, {listPredicates, 1, false}, {listConflicts, 2, true}, {listReviewItems, 2, true}}
	f.Fuzz(func(t *testing.T, after string, limit int) {
		for _, l := range lists {
			var ps problems
			n := c.pageLimit(&ps, limit)
			cur := decodeListCursor(&ps, l.name, after, l.keys, l.timed, c.cfg.Limits)
			if err := ps.Err(); err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) || len(ve.Problems) == 0 {
					t.Fatalf("error %v is not a *ValidationError with problems", err)
				}
				for _, p := range ve.Problems {
					if (p.Path != "limit" && p.Path != "after") || p.Message == "" {
						t.Fatalf("problem %+v", p)
					}
				}
				continue
			}
			if n < 1 || n > c.cfg.Limits.MaxPageItems {
				t.Fatalf("accepted limit %d (request %d)", n, limit)
			}
			if (cur == nil) != (after == "") {
				t.Fatalf("cursor %q read as %+v", after, cur)
			}
			if cur == nil {
				continue
			}
			again := decodeListCursor(&ps, l.name, listCursor{List: l.name, At: cur.At, Keys: cur.Keys}.encode(), l.keys, l.timed, c.cfg.Limits)
			if again == nil || !again.At.Equal(cur.At) || !slices.Equal(again.Keys, cur.Keys) {
				t.Fatalf("%s cursor %+v encodes to one read as %+v (%v)", l.name, cur, again, ps.Err())
			}
		}
	})
}
