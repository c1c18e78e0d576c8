package densemem

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

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

// ListConflicts returns a page of the principal's team's conflict cases of the requested statuses
// (open and overdue by default): overdue first, then open, resolved and dismissed; within a status
// by review_due_at, then conflict ID. Each case carries its current positions with their members,
// owners, object names and counted source groups, as Recall shows a live case.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (a host principal's team does not
// exist).
func (c *Client) ListConflicts(ctx context.Context, p Principal, req ListConflictsRequest) (*ListConflictsResponse, error) {
	ctx, err := c.begin(ctx, actorOf(p))
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
				ps.Add(fmt.Sprintf("status[%d]", i), "unknown conflict status%s (%s)", quoted(s, c.cfg.Limits.MaxTextBytes),
					oneOf(conflict.Statuses()))
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
	cases, err := c.conflictCases(ctx, p, page.Items)
	if err != nil {
		return nil, err
	}
	out := &ListConflictsResponse{Conflicts: cases}
	if page.More {
		last := page.Items[len(page.Items)-1].Case
		out.NextAfter = listCursor{List: listConflicts, At: last.ReviewDueAt, Keys: []string{string(last.Status), string(last.ID)}}.encode()
	}
	return out, nil
}

// Conflict returns one of the principal's team's conflict cases, of any status, as ListConflicts
// shows it (how an operator inspects a case by its ID; Trace of a member relationship pages its
// events).
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (no such case in the team).
func (c *Client) Conflict(ctx context.Context, p Principal, conflictID string) (*ConflictCase, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	var ps problems
	checkText(&ps, "conflict_id", conflictID, true, c.cfg.Limits.MaxTextBytes)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return nil, err
	}
	it, err := c.store.CaseGet(ctx, p.TeamID, conflict.ID(conflictID))
	if err != nil {
		return nil, err
	}
	cases, err := c.conflictCases(ctx, p, []store.CaseListItem{it})
	if err != nil {
		return nil, err
	}
	return &cases[0], nil
}

// conflictCases shapes listed cases: their positions with the members' names and evidence, read in
// one round trip.
func (c *Client) conflictCases(ctx context.Context, p Principal, items []store.CaseListItem) ([]ConflictCase, error) {
	var members []relationship.ID
	for _, it := range items {
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
	out := make([]ConflictCase, 0, len(items))
	for _, it := range items {
		cs := it.Case
		cc := ConflictCase{RecallConflict: conflictView(cs, rel.views, rel.ev), OpenedAt: cs.OpenedAt, NextReviewAt: it.NextReviewAt,
			ResolvedAt: cs.ResolvedAt, EffectiveAt: cs.EffectiveAt, EffectiveTimeBasis: cs.TimeBasis,
			PreferredPositionID: string(cs.Preferred), PolicyVersion: cs.PolicyVersion}
		cc.Subject = EntityRefView{EntityID: cs.Key.Subject, Name: it.SubjectName, Kind: it.SubjectKind}
		if !cs.Status.Live() {
			cc.Question = ""
		}
		out = append(out, cc)
	}
	return out, nil
}
