package store

import (
	"encoding/json"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// IdentityReadParams names what a late split or merge reads about one entity: the profile's
// observations that mention it now, the observations the call selected, and the profile's
// relationships on it.
type IdentityReadParams struct {
	Team    identity.TeamID
	Profile identity.ProfileID
	Entity  identity.EntityID
	// Selected are observations the call names; each one of the team is returned in
	// IdentityRead.Selected whatever its profile and mentions.
	Selected []string
	// Limit bounds the movable observations and the relationships returned (at least 1).
	Limit int
}

// IdentityObservation is one observation as a split or merge sees it: its author and the current
// (latest) resolution event of each of its mentions, in mention order.
type IdentityObservation struct {
	ID        string
	Profile   identity.ProfileID
	CreatedAt time.Time
	Current   []ResolutionRow
	// EverEntity reports whether some resolution event of the observation, current or earlier,
	// resolved a mention to the read's entity.
	EverEntity bool
}

// IdentitySupport is one support link of a relationship with the valid_from its verification event
// confirmed, if any.
type IdentitySupport struct {
	SupportLinkRow
	ConfirmedFrom *time.Time
	// Retirement is the retirement of the support's fragment, "" while it is not retired: a copy of
	// the support is no more effective than the support.
	Retirement string
}

// IdentityRelationship is one of the profile's relationships on the read's entity with the
// observation that created it and its support links (oldest first).
type IdentityRelationship struct {
	Relationship  relationship.Relationship
	ObservationID string
	Supports      []IdentitySupport
}

// IdentityRead is what IdentityRead read, in one snapshot.
type IdentityRead struct {
	// Entity is the read's entity with its names, nil when the team has none.
	Entity *identity.Entity
	// Movable are the profile's observations with a mention whose current resolution event names the
	// entity, oldest first, at most Limit; MovableTruncated says more exist.
	Movable          []IdentityObservation
	MovableTruncated bool
	// Selected are the selected observations the team has, in the order asked.
	Selected []IdentityObservation
	// Relationships are the profile's relationships whose subject or object is the entity and whose
	// status is not terminal (active, pending_evidence, needs_review), in ID order, at most Limit;
	// RelationshipsTruncated says more exist.
	Relationships          []IdentityRelationship
	RelationshipsTruncated bool
}

// Identity decision actions (identity_decisions.action).
const (
	IdentitySplit = "split"
	IdentityMerge = "merge"
)

// IdentityDecisionRow is one appended split or merge: who moved which of its observations' mentions
// from which entity to which (a new one for a split), with which evidence and reason, under which
// idempotency key, and the before and after of every relationship it re-derived (Changes, JSON).
// The table is append-only.
type IdentityDecisionRow struct {
	Team           identity.TeamID
	ID             string
	Profile        identity.ProfileID
	Action         string
	From           identity.EntityID
	To             identity.EntityID
	ObservationIDs []string
	FragmentIDs    []string
	Reason         string
	Changes        json.RawMessage
	IngestID       string
	IdempotencyKey string
	CreatedAt      time.Time
}
