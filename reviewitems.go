package densemem

import (
	"context"
	"fmt"
	"slices"

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

// ReviewItemStatuses returns every status ListReviewItemsRequest.Status accepts.
func ReviewItemStatuses() []string {
	return []string{ReviewItemStatusOpen, ReviewItemStatusResolved, ReviewItemStatusSuperseded}
}

// ListReviewItemsRequest asks for a page of review items: a profile's own, or, for a host
// principal, every profile's of the team (or ProfileID's). A profile with the vocabulary scope may
// list every profile's too (AllProfiles, or another ProfileID): the vocabulary proposals that
// propose_vocabulary_change records wait on other profiles' predicate items. The list is ordered by
// profile ID, then creation time, then review ID.
type ListReviewItemsRequest struct {
	// Status is open (the default), resolved or superseded.
	Status string `json:"status,omitempty"`
	// ProfileID restricts the list to one profile. A profile without the vocabulary scope may name
	// only itself.
	ProfileID ProfileID `json:"profile_id,omitempty"`
	// AllProfiles asks a profile with the vocabulary scope for every profile's items (a host
	// principal's default).
	AllProfiles bool `json:"all_profiles,omitempty"`
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
// profile's own, or, for a host principal or a profile with the vocabulary scope, every profile's of
// the team (or req.ProfileID's), in (profile ID, created_at, review ID) order, each with the prompt
// it was stored with.
//
// Errors: *ValidationError, ErrForbidden (read scope, or a profile without the vocabulary scope
// naming another profile or all of them),
// ErrNotFound (a host principal's team does not exist).
func (c *Client) ListReviewItems(ctx context.Context, p Principal, req ListReviewItemsRequest) (*ListReviewItemsResponse, error) {
	ctx, err := c.begin(ctx, actorOf(p))
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
		ps.Add("status", "unknown review item status%s (%s)", quoted(status, c.cfg.Limits.MaxTextBytes), oneOf(ReviewItemStatuses()))
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
	if req.AllProfiles && req.ProfileID != "" {
		ps.Add("all_profiles", "cannot go with profile_id")
		return nil, ps.Err()
	}
	pr, err := c.authorize(ctx, p, identity.ScopeRead)
	if err != nil {
		return nil, err
	}
	profile := req.ProfileID
	others := req.AllProfiles || (profile != "" && profile != p.ProfileID)
	switch {
	case p.Host:
	case others && !slices.Contains(pr.Profile.Scopes, identity.ScopeVocabulary):
		return nil, fmt.Errorf("%w: profile %s lists only its own review items without the vocabulary scope", ErrForbidden,
			p.ProfileID)
	case profile == "" && !req.AllProfiles:
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
