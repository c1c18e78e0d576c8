package store

import (
	"encoding/json"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// CaseRow is a conflict case's workflow state with its positions and current membership.
type CaseRow struct {
	Team          identity.TeamID
	ID            conflict.ID
	Kind          conflict.Kind
	Key           conflict.Key
	Status        conflict.Status
	Version       int
	OpenedAt      time.Time
	ReviewDueAt   time.Time
	NextReviewAt  time.Time
	PolicyVersion int
	OpenedBy      identity.ProfileID
	ResolvedAt    *time.Time
	EffectiveAt   *time.Time
	TimeBasis     string
	Preferred     conflict.PositionID
	// Positions maps every position the case has had to its ID.
	Positions map[conflict.PositionKey]conflict.PositionID
	// Members is the current membership.
	Members []conflict.MemberRef
	// ClaimToken is the nightly worker's claim ("" when unclaimed).
	ClaimToken string
}

// CaseUpdate moves a case from ExpectVersion to Version with a new status; it fails with
// ErrStaleVersion when the case is no longer at ExpectVersion.
type CaseUpdate struct {
	Team          identity.TeamID
	ID            conflict.ID
	ExpectVersion int
	Version       int
	Status        conflict.Status
	UpdatedAt     time.Time
}

// PositionRow is a new position of a case.
type PositionRow struct {
	Team      identity.TeamID
	ID        conflict.PositionID
	CaseID    conflict.ID
	Key       conflict.PositionKey
	CreatedAt time.Time
}

// MemberRow adds a relationship version to a position from case version AddedVersion on.
type MemberRow struct {
	Team         identity.TeamID
	CaseID       conflict.ID
	Position     conflict.PositionID
	Relationship relationship.ID
	Version      int
	Owner        identity.ProfileID
	AddedVersion int
}

// MemberRemoval ends a relationship's current membership of a case at RemovedVersion.
type MemberRemoval struct {
	Team           identity.TeamID
	CaseID         conflict.ID
	Relationship   relationship.ID
	RemovedVersion int
}

// CaseEventRow is one append-only case event. Positions holds the membership at CaseVersion.
type CaseEventRow struct {
	Team            identity.TeamID
	ID              string
	CaseID          conflict.ID
	CaseVersion     int
	PriorStatus     conflict.Status
	ResultingStatus conflict.Status
	ActorKind       string
	ActorProfile    identity.ProfileID
	Reason          string
	PolicyVersion   int
	TimeBasis       string
	Referenced      json.RawMessage
	Positions       json.RawMessage
	IngestID        string
	CreatedAt       time.Time
}

// CrossReferenceRow is one append-only cross-reference between relationships of different owners.
type CrossReferenceRow struct {
	Team           identity.TeamID
	ID             string
	Kind           string
	From           relationship.ID
	FromVersion    int
	To             relationship.ID
	ToVersion      int
	Author         identity.ProfileID
	VerificationID string
	IngestID       string
	CreatedAt      time.Time
}

// EventPosition is one position as a case event records it.
type EventPosition struct {
	PositionID conflict.PositionID   `json:"position_id"`
	Object     relationship.Object   `json:"object"`
	Polarity   relationship.Polarity `json:"polarity"`
	Members    []EventMember         `json:"members"`
}

// EventMember is one member relationship version of an event position.
type EventMember struct {
	RelationshipID relationship.ID    `json:"relationship_id"`
	Version        int                `json:"version"`
	Owner          identity.ProfileID `json:"owner_profile_id"`
}
