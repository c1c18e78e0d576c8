package densemem

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/store"
)

// Provisioning. CreateTeam, CreateProfile and DisableProfile are host operations: the host is
// trusted and authenticates its own administrators. SetTeamPolicy and RegisterPredicate are
// vocabulary operations: of the host itself (HostPrincipal), or of a team's profile with the
// vocabulary scope, so an agent holding that scope can still change its team's vocabulary.

// CreateTeamRequest creates a team.
type CreateTeamRequest struct {
	Name string `json:"name"`
}

// CreateTeam creates a team with its first policy version (the Config defaults) and returns its ID.
func (c *Client) CreateTeam(ctx context.Context, req CreateTeamRequest) (TeamID, error) {
	ctx, err := c.begin(ctx, store.ActorHost)
	if err != nil {
		return "", err
	}
	var ps problems
	checkText(&ps, "name", req.Name, true, c.cfg.Limits.MaxTextBytes)
	if err := ps.Err(); err != nil {
		return "", err
	}
	now := c.now()
	team := TeamID(c.newID("tm", now))
	err = c.store.TeamCreate(ctx, store.TeamCreateParams{Team: team, Name: req.Name, CreatedAt: now, Policy: store.Policy{
		ReviewTTL: c.cfg.ReviewTTL, AutoWriteThreshold: c.cfg.AutoWriteThreshold,
		AuthoritativeProfiles: []identity.ProfileID{}, TimeZone: "UTC", CreatedBy: "system", CreatedAt: now,
	}})
	return team, err
}

// CreateProfileRequest creates a profile with scopes.
type CreateProfileRequest struct {
	Name   string  `json:"name"`
	Scopes []Scope `json:"scopes"`
}

// CreateProfile creates an active profile in team. ErrNotFound when the team does not exist.
func (c *Client) CreateProfile(ctx context.Context, team TeamID, req CreateProfileRequest) (ProfileID, error) {
	ctx, err := c.begin(ctx, store.ActorHost)
	if err != nil {
		return "", err
	}
	var ps problems
	checkText(&ps, "name", req.Name, true, c.cfg.Limits.MaxTextBytes)
	checkCount(&ps, "scopes", len(req.Scopes), MaxListItems)
	for i, s := range req.Scopes[:min(len(req.Scopes), MaxListItems)] {
		if !s.Valid() {
			ps.Add(fmt.Sprintf("scopes[%d]", i), "unknown scope%s (%s)", quoted(string(s), 64), oneOf(identity.Scopes()))
		}
	}
	if err := ps.Err(); err != nil {
		return "", err
	}
	now := c.now()
	id := ProfileID(c.newID("pf", now))
	scopes := slices.Clone(req.Scopes)
	slices.Sort(scopes)
	return id, c.store.ProfileCreate(ctx, store.ProfileCreateParams{Team: team, Profile: id, Name: req.Name,
		Scopes: slices.Compact(scopes), CreatedAt: now})
}

// DisableProfile disables a profile: it can no longer read or write. Its knowledge stays.
func (c *Client) DisableProfile(ctx context.Context, team TeamID, profile ProfileID) error {
	ctx, err := c.begin(ctx, store.ActorHost)
	if err != nil {
		return err
	}
	return c.store.ProfileSetStatus(ctx, store.ProfileSetStatusParams{Team: team, Profile: profile,
		Status: identity.ProfileDisabled, UpdatedAt: c.now()})
}

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
