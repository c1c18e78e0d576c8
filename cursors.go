package densemem

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
)

// Cursors of the paged reads: Trace's lists and the List calls. A cursor is opaque to callers; it
// names its list and the position of the last item returned.
//
// The List calls let a host (HostPrincipal) or a profile with the read scope inspect its team:
// profiles, predicates, conflict cases and review items. Each returns one page of its list in a
// fixed order: at most Limit items (0 means DefaultPageItems, 50; at most Limits.MaxPageItems, 500)
// after the request's After cursor, and NextAfter, the cursor of the next page, when more follow.
// Cursors are opaque keyset positions, not offsets: a page holds the items after the previous
// page's last one as the list stands when it is read, so following NextAfter returns every item
// that stays in the list exactly once, and items added before a cursor's position are not
// revisited. A cursor of another list, or a malformed one, is a *ValidationError at "after".

// Names of the List calls' lists, as their cursors record them.
const (
	listProfiles    = "list:profiles"
	listPredicates  = "list:predicates"
	listConflicts   = "list:conflicts"
	listReviewItems = "list:review_items"
)

// traceCursor is the position of the last item of a Trace list's page, as a cursor encodes it: the
// list's name, then the item's order key (store.TraceKey), or its version for transitions and case
// events.
type traceCursor struct {
	List    string    `json:"l"`
	At      time.Time `json:"-"`
	Micros  int64     `json:"t,omitempty"`
	IDs     []string  `json:"ids,omitempty"`
	Version int       `json:"v,omitempty"`
}

// encode renders the cursor as unpadded base64url of its JSON.
func (c traceCursor) encode() string {
	if len(c.IDs) > 0 {
		c.Micros = c.At.UnixMicro()
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeTraceCursor reads a cursor that list issued, or says why it is not one.
func decodeTraceCursor(list, s string, l Limits) (traceCursor, error) {
	var c traceCursor
	if len(s) > 2*l.MaxTextBytes+256 {
		return c, fmt.Errorf("is %d bytes, longer than any cursor", len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, fmt.Errorf("is not a cursor")
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("is not a cursor")
	}
	if c.List != list {
		return c, fmt.Errorf("is not a cursor of this list")
	}
	if list == TraceListTransitions || strings.HasPrefix(list, TraceListConflicts+".") {
		if c.Version < 1 || c.Version > math.MaxInt32 {
			return c, fmt.Errorf("is not a cursor: version %d", c.Version)
		}
		return c, nil
	}
	c.At = time.UnixMicro(c.Micros).UTC()
	if y := c.At.Year(); y < 1 || y > 9999 {
		return c, fmt.Errorf("is not a cursor: time outside years 0001..9999")
	}
	ids := 1
	switch list {
	case TraceListEvidence:
		ids = 3
	case TraceListVerifications:
		ids = 2
	}
	if len(c.IDs) != ids {
		return c, fmt.Errorf("is not a cursor: %d IDs", len(c.IDs))
	}
	for _, id := range c.IDs {
		if id == "" || !utf8.ValidString(id) || strings.ContainsRune(id, 0) || len(id) > l.MaxTextBytes {
			return c, fmt.Errorf("is not a cursor: bad ID")
		}
	}
	return c, nil
}

// listCursor is the position of the last item of a List page, as its cursor encodes it: the list's
// name, the item's order key (IDs, and a time for the lists ordered by one) in Keys and At.
type listCursor struct {
	List   string    `json:"l"`
	At     time.Time `json:"-"`
	Micros int64     `json:"t,omitempty"`
	Keys   []string  `json:"k"`
}

// encode renders the cursor as unpadded base64url of its JSON.
func (c listCursor) encode() string {
	if !c.At.IsZero() {
		c.Micros = c.At.UnixMicro()
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeListCursor returns the cursor s of list, with keys IDs (and a time when timed), or nil when
// s is empty; a string that is not such a cursor is a problem at "after".
func decodeListCursor(ps *problems, list, s string, keys int, timed bool, l Limits) *listCursor {
	if s == "" {
		return nil
	}
	c, err := parseListCursor(list, s, keys, timed, l)
	if err != nil {
		ps.Add("after", "%v", err)
		return nil
	}
	return &c
}

func parseListCursor(list, s string, keys int, timed bool, l Limits) (listCursor, error) {
	var c listCursor
	if len(s) > 4*(keys*l.MaxTextBytes+64) {
		return c, fmt.Errorf("is %d bytes, longer than any cursor", len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return c, fmt.Errorf("is not a cursor")
	}
	if c.List != list {
		return c, fmt.Errorf("is not a cursor of this list")
	}
	if len(c.Keys) != keys {
		return c, fmt.Errorf("is not a cursor: %d keys", len(c.Keys))
	}
	for _, k := range c.Keys {
		if k == "" || !utf8.ValidString(k) || strings.ContainsRune(k, 0) || len(k) > l.MaxTextBytes {
			return c, fmt.Errorf("is not a cursor: bad key")
		}
	}
	if timed {
		c.At = time.UnixMicro(c.Micros).UTC()
		if y := c.At.Year(); y < 1 || y > 9999 {
			return c, fmt.Errorf("is not a cursor: time outside years 0001..9999")
		}
	} else if c.Micros != 0 {
		return c, fmt.Errorf("is not a cursor: unexpected time")
	}
	if list == listConflicts && !conflict.Status(c.Keys[0]).Valid() {
		return c, fmt.Errorf("is not a cursor: unknown status")
	}
	return c, nil
}

// keyedPage starts a read of a list paged by one key (profiles, predicates): it validates the page's
// limit and cursor, authorises a read of the team, and returns the limit and the key to read after
// ("" for the first page).
func (c *Client) keyedPage(ctx context.Context, p Principal, list string, limit int, after string) (context.Context, int, string, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return ctx, 0, "", err
	}
	var ps problems
	limit = c.pageLimit(&ps, limit)
	cur := decodeListCursor(&ps, list, after, 1, false, c.cfg.Limits)
	if err := ps.Err(); err != nil {
		return ctx, 0, "", err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return ctx, 0, "", err
	}
	if cur == nil {
		return ctx, limit, "", nil
	}
	return ctx, limit, cur.Keys[0], nil
}

// pageLimit returns a List request's page size: DefaultPageItems (at most Limits.MaxPageItems) for
// 0, else limit, which must be within 1..Limits.MaxPageItems.
func (c *Client) pageLimit(ps *problems, limit int) int {
	max := c.cfg.Limits.MaxPageItems
	switch {
	case limit == 0:
		return min(DefaultPageItems, max)
	case limit < 1 || limit > max:
		ps.Add("limit", "must be within 1..%d (0 for %d)", max, min(DefaultPageItems, max))
		return 0
	}
	return limit
}
