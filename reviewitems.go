package densemem

import (
	"context"
	"fmt"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Review item statuses, as ListReviewItemsRequest.Status spells them: an item is open until a
// Resolve decides it (resolved) or its question goes away (superseded: the relationship gained its
// support, was forgotten or decided otherwise).
const (
	ReviewItemStatusOpen       = store.ReviewOpen
	ReviewItemStatusResolved   = store.ReviewResolved
	ReviewItemStatusSuperseded = store.ReviewSuperseded
)

// ListReviewItemsRequest asks for a page of review items: a profile's own, or, for a host
// principal, every profile's of the team (or ProfileID's). The list is ordered by profile ID, then
// creation time, then review ID.
type ListReviewItemsRequest struct {
	// Status is open (the default), resolved or superseded.
	Status string `json:"status,omitempty"`
	// ProfileID restricts a host principal's list to one profile. A profile may name only itself.
	ProfileID ProfileID `json:"profile_id,omitempty"`
	// Limit is the most items returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is a previous response's NextAfter ("" for the first page).
	After string `json:"after,omitempty"`
}

// ReviewItem is a stored review item with the prompt it was stored with (its exact choices).
type ReviewItem = TraceReviewItem

// ListReviewItemsResponse is one page of review items.
type ListReviewItemsResponse struct {
	ReviewItems []ReviewItem `json:"review_items"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// ListReviewItems returns a page of review items of one status (open by default): the calling
// profile's own, or, for a host principal, every profile's of the team (or req.ProfileID's), in
// (profile ID, created_at, review ID) order, each with the prompt it was stored with.
//
// Errors: *ValidationError, ErrForbidden (read scope, or a profile naming another profile),
// ErrNotFound (a host principal's team does not exist).
func (c *Client) ListReviewItems(ctx context.Context, p Principal, req ListReviewItemsRequest) (*ListReviewItemsResponse, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	var ps problems
	status := req.Status
	switch status {
	case "":
		status = ReviewItemStatusOpen
	case ReviewItemStatusOpen, ReviewItemStatusResolved, ReviewItemStatusSuperseded:
	default:
		ps.Add("status", "unknown review item status%s (open, resolved or superseded)", quoted(status, c.cfg.Limits.MaxTextBytes))
	}
	checkText(&ps, "profile_id", string(req.ProfileID), false, c.cfg.Limits.MaxTextBytes)
	limit := c.pageLimit(&ps, req.Limit)
	var after *store.ReviewItemKey
	if cur := decodeListCursor(&ps, listReviewItems, req.After, 2, true, c.cfg.Limits); cur != nil {
		after = &store.ReviewItemKey{Profile: ProfileID(cur.Keys[0]), CreatedAt: cur.At, ID: cur.Keys[1]}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return nil, err
	}
	profile := req.ProfileID
	if !p.Host {
		if profile != "" && profile != p.ProfileID {
			return nil, fmt.Errorf("%w: profile %s lists only its own review items, not those of %s", ErrForbidden,
				p.ProfileID, profile)
		}
		profile = p.ProfileID
	}
	page, err := c.store.ReviewItemList(ctx, store.ReviewItemListParams{Team: p.TeamID, Status: status, Profile: profile,
		After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &ListReviewItemsResponse{ReviewItems: make([]ReviewItem, 0, len(page.Items))}
	for _, ri := range page.Items {
		out.ReviewItems = append(out.ReviewItems, reviewItem(ri))
	}
	if page.More {
		last := page.Items[len(page.Items)-1]
		out.NextAfter = listCursor{List: listReviewItems, At: last.CreatedAt, Keys: []string{string(last.Profile), last.ID}}.encode()
	}
	return out, nil
}
