package densemem

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The List calls let a host (HostPrincipal) or a profile with the read scope inspect its team:
// profiles, predicates, conflict cases and review items. Each returns one page of its list in a
// fixed order: at most Limit items (0 means DefaultPageItems, 50; at most Limits.MaxPageItems, 500)
// after the request's After cursor, and NextAfter, the cursor of the next page, when more follow.
// Cursors are opaque keyset positions, not offsets: a page holds the items after the previous
// page's last one as the list stands when it is read, so following NextAfter returns every item
// that stays in the list exactly once, and items added before a cursor's position are not
// revisited. A cursor of another list, or a malformed one, is a *ValidationError at "after".

// ListProfilesRequest asks for a page of the team's profiles, in profile ID order (the order they
// were created in).
type ListProfilesRequest struct {
	// Limit is the most profiles returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is a previous response's NextAfter ("" for the first page).
	After string `json:"after,omitempty"`
}

// ListProfilesResponse is one page of the team's profiles.
type ListProfilesResponse struct {
	Profiles []Profile `json:"profiles"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// Profile is a profile of a team: an author, with its status and scopes.
type Profile struct {
	ProfileID ProfileID              `json:"profile_id"`
	Name      string                 `json:"name"`
	Status    identity.ProfileStatus `json:"status"`
	Scopes    []Scope                `json:"scopes"`
	CreatedAt time.Time              `json:"created_at"`
}

// ListPredicatesRequest asks for a page of the team's registered predicates, in key order.
type ListPredicatesRequest struct {
	// Limit is the most predicates returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is a previous response's NextAfter ("" for the first page).
	After string `json:"after,omitempty"`
}

// ListPredicatesResponse is one page of the team's predicates: the latest version of each key.
type ListPredicatesResponse struct {
	Predicates []PredicateDefinition `json:"predicates"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// Conflict case statuses, as ListConflictsRequest.Status spells them.
const (
	ConflictStatusOpen      = string(conflict.StatusOpen)
	ConflictStatusOverdue   = string(conflict.StatusOverdue)
	ConflictStatusResolved  = string(conflict.StatusResolved)
	ConflictStatusDismissed = string(conflict.StatusDismissed)
)

// caseListOrder is the order ListConflicts takes statuses in: overdue first, then open, then the
// settled ones.
var caseListOrder = []conflict.Status{conflict.StatusOverdue, conflict.StatusOpen, conflict.StatusResolved,
	conflict.StatusDismissed}

// ListConflictsRequest asks for a page of the team's conflict cases: how operators inspect open and
// overdue cases. The list holds the cases of the requested statuses, overdue ones first, then open,
// resolved and dismissed ones; within a status by review deadline (review_due_at), earliest first,
// then conflict ID.
type ListConflictsRequest struct {
	// Status lists the statuses to include (open, overdue, resolved, dismissed); empty means open
	// and overdue. The order given does not matter.
	Status []string `json:"status,omitempty"`
	// Limit is the most cases returned: 0 means DefaultPageItems; 1..Limits.MaxPageItems.
	Limit int `json:"limit,omitempty"`
	// After is the NextAfter of a previous response to the same statuses ("" for the first page).
	After string `json:"after,omitempty"`
}

// ListConflictsResponse is one page of the team's conflict cases.
type ListConflictsResponse struct {
	Conflicts []ConflictCase `json:"conflicts"`
	// NextAfter, when set, is the After of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// ConflictCase is a team conflict case as an operator inspects it: its workflow state and
// deadlines, its key with the subject's name, and its current positions as Recall shows them
// (member relationship IDs, owners, object names, counted source groups and evidence excerpts). A
// live case also carries its question; a resolved one its cutoff and preferred position.
type ConflictCase struct {
	RecallConflict
	OpenedAt time.Time `json:"opened_at"`
	// NextReviewAt is when the nightly review next evaluates a live case.
	NextReviewAt time.Time  `json:"next_review_at"`
	ResolvedAt   *time.Time `json:"resolved_at,omitempty"`
	// EffectiveAt and EffectiveTimeBasis are a resolution's cutoff and how it was chosen
	// (evidence_time or recorded_fallback).
	EffectiveAt         *time.Time `json:"effective_at,omitempty"`
	EffectiveTimeBasis  string     `json:"effective_time_basis,omitempty"`
	PreferredPositionID string     `json:"preferred_position_id,omitempty"`
	// PolicyVersion is the team policy version the case was opened under and is evaluated by.
	PolicyVersion int `json:"policy_version"`
}

// Review item statuses, as ListReviewItemsRequest.Status spells them.
const (
	ReviewItemStatusOpen     = "open"
	ReviewItemStatusResolved = "resolved"
)

// ListReviewItemsRequest asks for a page of review items: a profile's own, or, for a host
// principal, every profile's of the team (or ProfileID's). The list is ordered by profile ID, then
// creation time, then review ID.
type ListReviewItemsRequest struct {
	// Status is open (the default) or resolved.
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

// ListProfiles returns a page of the principal's team's profiles, disabled ones included, in
// profile ID order.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListProfiles(ctx context.Context, p Principal, req ListProfilesRequest) (*ListProfilesResponse, error) {
	ctx, limit, key, err := c.keyedPage(ctx, p, listProfiles, req.Limit, req.After)
	if err != nil {
		return nil, err
	}
	after := ProfileID(key)
	page, err := c.store.ProfileList(ctx, store.ProfileListParams{Team: p.TeamID, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &ListProfilesResponse{Profiles: make([]Profile, 0, len(page.Items))}
	for _, pr := range page.Items {
		out.Profiles = append(out.Profiles, Profile{ProfileID: pr.ID, Name: pr.Name, Status: pr.Status,
			Scopes: slices.Clone(pr.Scopes), CreatedAt: pr.CreatedAt})
	}
	if page.More {
		out.NextAfter = listCursor{List: listProfiles, Keys: []string{string(page.Items[len(page.Items)-1].ID)}}.encode()
	}
	return out, nil
}

// ListPredicates returns a page of the principal's team's predicates, the latest version of each
// key, in key order.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListPredicates(ctx context.Context, p Principal, req ListPredicatesRequest) (*ListPredicatesResponse, error) {
	ctx, limit, key, err := c.keyedPage(ctx, p, listPredicates, req.Limit, req.After)
	if err != nil {
		return nil, err
	}
	after := string(key)
	page, err := c.store.PredicateListPage(ctx, store.PredicateListPageParams{Team: p.TeamID, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := &ListPredicatesResponse{Predicates: make([]PredicateDefinition, 0, len(page.Items))}
	for _, pd := range page.Items {
		out.Predicates = append(out.Predicates, predicateDefinition(pd))
	}
	if page.More {
		out.NextAfter = listCursor{List: listPredicates, Keys: []string{page.Items[len(page.Items)-1].Key}}.encode()
	}
	return out, nil
}

// keyedPage starts a read of a list paged by one key (profiles, predicates): it validates the page's
// limit and cursor, authorises a read of the team, and returns the limit and the key to read after
// ("" for the first page).
func (c *Client) keyedPage(ctx context.Context, p Principal, list string, limit int, after string) (context.Context, int, string, error) {
	ctx, err := c.begin(ctx)
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

// predicateDefinition is a stored predicate version as the API shows it.
func predicateDefinition(pd relationship.Predicate) PredicateDefinition {
	return PredicateDefinition{Key: pd.Key, Version: pd.Version, RelationshipKind: pd.Kind, CurrentCardinality: pd.Cardinality,
		Aliases: slices.Clone(pd.Aliases), SubjectKinds: slices.Clone(pd.SubjectKinds), ObjectKinds: slices.Clone(pd.ObjectKinds),
		ValueObject: pd.ValueObject, Description: pd.Description}
}

// ListConflicts returns a page of the principal's team's conflict cases of the requested statuses
// (open and overdue by default): overdue first, then open, resolved and dismissed; within a status
// by review_due_at, then conflict ID. Each case carries its current positions with their members,
// owners, object names and counted source groups, as Recall shows a live case.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListConflicts(ctx context.Context, p Principal, req ListConflictsRequest) (*ListConflictsResponse, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	var ps problems
	statuses := []conflict.Status{conflict.StatusOverdue, conflict.StatusOpen}
	if checkCount(&ps, "status", len(req.Status), MaxListItems) && len(req.Status) > 0 {
		statuses = nil
		for i, s := range req.Status {
			st := conflict.Status(s)
			if !st.Valid() {
				ps.Add(fmt.Sprintf("status[%d]", i), "unknown conflict status%s (open, overdue, resolved or dismissed)",
					quoted(s, c.cfg.Limits.MaxTextBytes))
			}
			if !slices.Contains(statuses, st) {
				statuses = append(statuses, st)
			}
		}
		statuses = slices.DeleteFunc(slices.Clone(caseListOrder), func(s conflict.Status) bool { return !slices.Contains(statuses, s) })
	}
	limit := c.pageLimit(&ps, req.Limit)
	var after *store.CaseListKey
	if cur := decodeListCursor(&ps, listConflicts, req.After, 2, true, c.cfg.Limits); cur != nil {
		after = &store.CaseListKey{Status: conflict.Status(cur.Keys[0]), ReviewDueAt: cur.At, ID: conflict.ID(cur.Keys[1])}
		if !slices.Contains(statuses, after.Status) {
			ps.Add("after", "is a cursor of a list of other statuses: send the status of the request that returned it")
		}
	}
	if err := ps.Err(); err != nil {
		return nil, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return nil, err
	}
	page, err := c.store.CaseList(ctx, store.CaseListParams{Team: p.TeamID, Statuses: statuses, After: after, Limit: limit})
	if err != nil {
		return nil, err
	}
	var members []relationship.ID
	for _, it := range page.Items {
		for _, pos := range it.Case.Positions {
			for _, m := range pos.Members {
				members = append(members, m.RelationshipID)
			}
		}
	}
	slices.Sort(members)
	var rel related
	if _, err := c.readRelated(ctx, store.RecallDetailsParams{Team: p.TeamID, Relationships: slices.Compact(members)}, &rel); err != nil {
		return nil, err
	}
	out := &ListConflictsResponse{Conflicts: make([]ConflictCase, 0, len(page.Items))}
	for _, it := range page.Items {
		cs := it.Case
		cc := ConflictCase{RecallConflict: conflictView(cs, rel.views, rel.ev), OpenedAt: cs.OpenedAt, NextReviewAt: it.NextReviewAt,
			ResolvedAt: cs.ResolvedAt, EffectiveAt: cs.EffectiveAt, EffectiveTimeBasis: cs.TimeBasis,
			PreferredPositionID: string(cs.Preferred), PolicyVersion: cs.PolicyVersion}
		cc.Subject = EntityRefView{EntityID: cs.Key.Subject, Name: it.SubjectName, Kind: it.SubjectKind}
		if !cs.Status.Live() {
			cc.Question = ""
		}
		out.Conflicts = append(out.Conflicts, cc)
	}
	if page.More {
		last := page.Items[len(page.Items)-1].Case
		out.NextAfter = listCursor{List: listConflicts, At: last.ReviewDueAt, Keys: []string{string(last.Status), string(last.ID)}}.encode()
	}
	return out, nil
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
	case ReviewItemStatusOpen, ReviewItemStatusResolved:
	default:
		ps.Add("status", "unknown review item status%s (open or resolved)", quoted(status, c.cfg.Limits.MaxTextBytes))
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

// quoted returns " " and s quoted for a problem's message, or "" when s is too long or not text
// to repeat.
func quoted(s string, max int) string {
	if len(s) > max || !utf8.ValidString(s) {
		return ""
	}
	return fmt.Sprintf(" %q", s)
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
