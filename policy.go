package densemem

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
)

// TeamPolicy is one version of a team's policy.
type TeamPolicy struct {
	// Version is the policy's version. SetTeamPolicy takes the version in force that the change
	// replaces (the one TeamPolicy returned) and returns the new policy with the version it assigned.
	Version int `json:"version"`
	// ReviewTTL sets review_due_at = opened_at + ReviewTTL for new conflict cases (1..30 days).
	ReviewTTL time.Duration `json:"review_ttl"`
	// AutoWriteThreshold is the verifier confidence needed for support (0..1).
	AutoWriteThreshold float64 `json:"auto_write_threshold"`
	// AuthoritativeProfileIDs are the profiles whose "authoritative" evidence counts as authority.
	AuthoritativeProfileIDs []ProfileID `json:"authoritative_profile_ids"`
	// TimeZone is the IANA zone of the nightly review's run dates ("" means UTC). Only IANA zone
	// names are accepted: not "Local" or "localtime", whose zone is each machine's own.
	TimeZone string `json:"time_zone"`
}

// SetTeamPolicy appends a new policy version for the principal's team, with every field as given
// (an empty TimeZone means UTC), and returns it with its new version. pol.Version must be the
// version in force, as TeamPolicy returned it: the change is appended only if that version is still
// in force, in the same transaction, so of two changes made from the same version one succeeds and
// the other fails with ErrStaleVersion (read the policy again and reapply). A conflict case keeps
// the version in force when it opened: the new version's TTL and authoritative profiles apply to
// cases opened after the change, the nightly review of an open case uses the version it pinned.
//
// Errors: *ValidationError, ErrForbidden (vocabulary scope, or a host principal), ErrNotFound (the
// host principal's team does not exist), ErrStaleVersion.
func (c *Client) SetTeamPolicy(ctx context.Context, p Principal, pol TeamPolicy) (TeamPolicy, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return TeamPolicy{}, err
	}
	var ps problems
	if pol.Version < 1 || pol.Version > math.MaxInt32 {
		ps.Add("version", "pass the version TeamPolicy returned (the policy in force this change replaces)")
	}
	if pol.ReviewTTL < 24*time.Hour || pol.ReviewTTL > 30*24*time.Hour {
		ps.Add("review_ttl", "must be within 1..30 days")
	}
	if !(pol.AutoWriteThreshold >= 0 && pol.AutoWriteThreshold <= 1) {
		ps.Add("auto_write_threshold", "must be within 0..1")
	}
	if pol.TimeZone == "" {
		pol.TimeZone = "UTC"
	}
	if _, err := review.TimeZone(pol.TimeZone); err != nil {
		ps.Add("time_zone", "%v; allowed: an IANA time zone name such as UTC, Europe/Berlin or America/New_York", err)
	}
	if checkCount(&ps, "authoritative_profile_ids", len(pol.AuthoritativeProfileIDs), MaxListItems) {
		for i, id := range pol.AuthoritativeProfileIDs {
			checkText(&ps, fmt.Sprintf("authoritative_profile_ids[%d]", i), string(id), true, c.cfg.Limits.MaxTextBytes)
		}
	}
	if err := ps.Err(); err != nil {
		return pol, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeVocabulary); err != nil {
		return pol, err
	}
	for i, id := range pol.AuthoritativeProfileIDs {
		if _, err := c.store.PrincipalLoad(ctx, store.PrincipalLoadParams{Team: p.TeamID, Profile: id}); err != nil {
			if isNotFound(err) {
				return pol, &ValidationError{Problems: []FieldProblem{{Path: fmt.Sprintf("authoritative_profile_ids[%d]", i),
					Message: "is not a profile of the team"}}}
			}
			return pol, err
		}
	}
	now := c.now()
	stored, err := c.store.PolicyAppend(ctx, store.PolicyAppendParams{ExpectVersion: pol.Version, Policy: store.Policy{
		Team: p.TeamID, ReviewTTL: pol.ReviewTTL, AutoWriteThreshold: pol.AutoWriteThreshold,
		AuthoritativeProfiles: append([]ProfileID{}, pol.AuthoritativeProfileIDs...), TimeZone: pol.TimeZone,
		CreatedBy: p.actor(), CreatedAt: now}})
	if err != nil {
		return pol, err
	}
	pol.Version = stored.Version
	return pol, nil
}

// TeamPolicy returns the policy in force for the principal's team (read scope, or a host
// principal), so a host can change one field with SetTeamPolicy without clearing the others; its
// Version is the one SetTeamPolicy expects.
func (c *Client) TeamPolicy(ctx context.Context, p Principal) (TeamPolicy, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return TeamPolicy{}, err
	}
	pr, err := c.authorize(ctx, p, identity.ScopeRead)
	if err != nil {
		return TeamPolicy{}, err
	}
	pol := pr.Policy // authorize read the policy in force with the principal
	return TeamPolicy{Version: pol.Version, ReviewTTL: pol.ReviewTTL, AutoWriteThreshold: pol.AutoWriteThreshold,
		AuthoritativeProfileIDs: append([]ProfileID{}, pol.AuthoritativeProfiles...), TimeZone: pol.TimeZone}, nil
}
