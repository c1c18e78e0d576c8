package densemem

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
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
	ctx, err := c.begin(ctx)
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
	ctx, err := c.begin(ctx)
	if err != nil {
		return "", err
	}
	var ps problems
	checkText(&ps, "name", req.Name, true, c.cfg.Limits.MaxTextBytes)
	checkCount(&ps, "scopes", len(req.Scopes), MaxListItems)
	for i, s := range req.Scopes[:min(len(req.Scopes), MaxListItems)] {
		if !s.Valid() {
			ps.Add(fmt.Sprintf("scopes[%d]", i), "unknown scope %q", s)
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
	ctx, err := c.begin(ctx)
	if err != nil {
		return err
	}
	return c.store.ProfileSetStatus(ctx, store.ProfileSetStatusParams{Team: team, Profile: profile,
		Status: identity.ProfileDisabled, UpdatedAt: c.now()})
}

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
	// TimeZone is the IANA zone of the nightly review's run dates.
	TimeZone string `json:"time_zone"`
}

// SetTeamPolicy appends a new policy version for the principal's team, with every field as given
// (an empty TimeZone means UTC), and returns it with its new version. pol.Version must be the
// version in force, as TeamPolicy returned it: the change is appended only if that version is still
// in force, in the same transaction, so of two changes made from the same version one succeeds and
// the other fails with ErrStaleVersion (read the policy again and reapply).
//
// Errors: *ValidationError, ErrForbidden (vocabulary scope, or a host principal), ErrNotFound (the
// host principal's team does not exist), ErrStaleVersion.
func (c *Client) SetTeamPolicy(ctx context.Context, p Principal, pol TeamPolicy) (TeamPolicy, error) {
	ctx, err := c.begin(ctx)
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
	if _, err := time.LoadLocation(pol.TimeZone); err != nil {
		ps.Add("time_zone", "unknown IANA time zone %q", pol.TimeZone)
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

// PredicateDefinition is one registered predicate version.
type PredicateDefinition struct {
	Key                string                   `json:"key"`
	Version            int                      `json:"version"`
	RelationshipKind   relationship.Kind        `json:"relationship_kind"`
	CurrentCardinality relationship.Cardinality `json:"current_cardinality"`
	Aliases            []string                 `json:"aliases,omitempty"`
	// SubjectKinds and ObjectKinds restrict entity kinds; empty allows any.
	SubjectKinds []string `json:"subject_kinds,omitempty"`
	ObjectKinds  []string `json:"object_kinds,omitempty"`
	// ValueObject makes the object a literal value instead of an entity.
	ValueObject bool   `json:"value_object,omitempty"`
	Description string `json:"description,omitempty"`
}

// RegisterPredicate registers a new immutable version of a predicate key (the first is version 1).
// The key is normalised like any predicate phrase.
//
// Errors: *ValidationError, ErrForbidden (vocabulary scope, or a host principal), ErrNotFound (the
// host principal's team does not exist).
func (c *Client) RegisterPredicate(ctx context.Context, p Principal, def PredicateDefinition) (PredicateDefinition, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
		return PredicateDefinition{}, err
	}
	var ps problems
	def.Key = relationship.NormalizePhrase(def.Key)
	if !kindPattern.MatchString(def.Key) {
		ps.Add("key", "must normalise to %s", kindPattern)
	}
	if !def.RelationshipKind.Valid() {
		ps.Add("relationship_kind", "unknown relationship kind %q (state or event)", def.RelationshipKind)
	}
	if !def.CurrentCardinality.Valid() {
		ps.Add("current_cardinality", "unknown cardinality %q (one or many)", def.CurrentCardinality)
	}
	if !checkCount(&ps, "aliases", len(def.Aliases), MaxListItems) || !checkCount(&ps, "subject_kinds", len(def.SubjectKinds), MaxListItems) ||
		!checkCount(&ps, "object_kinds", len(def.ObjectKinds), MaxListItems) {
		return def, ps.Err()
	}
	// The caller's slice is not rewritten in place.
	def.Aliases = slices.Clone(def.Aliases)
	for i, a := range def.Aliases {
		checkText(&ps, fmt.Sprintf("aliases[%d]", i), a, true, c.cfg.Limits.MaxTextBytes)
		def.Aliases[i] = relationship.NormalizePhrase(a)
	}
	for i, k := range def.SubjectKinds {
		if !kindPattern.MatchString(k) {
			ps.Add(fmt.Sprintf("subject_kinds[%d]", i), "must match %s", kindPattern)
		}
	}
	for i, k := range def.ObjectKinds {
		if !kindPattern.MatchString(k) {
			ps.Add(fmt.Sprintf("object_kinds[%d]", i), "must match %s", kindPattern)
		}
	}
	if def.ValueObject && len(def.ObjectKinds) > 0 {
		ps.Add("object_kinds", "must be empty when value_object is set")
	}
	checkText(&ps, "description", def.Description, false, 4096)
	if err := ps.Err(); err != nil {
		return def, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeVocabulary); err != nil {
		return def, err
	}
	stored, err := c.store.PredicateAppend(ctx, store.PredicateAppendParams{Team: p.TeamID, CreatedBy: p.actor(),
		CreatedAt: c.now(), Predicate: relationship.Predicate{Key: def.Key, Kind: def.RelationshipKind,
			Cardinality: def.CurrentCardinality, Aliases: def.Aliases, SubjectKinds: def.SubjectKinds,
			ObjectKinds: def.ObjectKinds, ValueObject: def.ValueObject, Description: def.Description}})
	def.Version = stored.Version
	return def, err
}

// TeamPolicy returns the policy in force for the principal's team (read scope, or a host
// principal), so a host can change one field with SetTeamPolicy without clearing the others; its
// Version is the one SetTeamPolicy expects.
func (c *Client) TeamPolicy(ctx context.Context, p Principal) (TeamPolicy, error) {
	ctx, err := c.begin(ctx)
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
