package store

import (
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// TraceLoadParams names the relationship to trace and how far to look.
type TraceLoadParams struct {
	Team           identity.TeamID
	RelationshipID relationship.ID
	IncludeContent bool
	// MaxDepth bounds the hops of neighbouring active relationships (0 = none).
	MaxDepth int
	// MaxEdges bounds the number of neighbours returned.
	MaxEdges int
}

// RelationshipView is a relationship with the names a reader needs.
type RelationshipView struct {
	Relationship relationship.Relationship
	SubjectName  string
	SubjectKind  string
	ObjectName   string // entity canonical name or literal text
	ObjectKind   string // entity kind, or "value:<type>" for a literal
	Predicate    relationship.Predicate
	Observation  string
	IngestID     string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// TraceData is the stored history of one relationship.
type TraceData struct {
	Relationship  RelationshipView
	Supports      []SupportLinkRow
	Fragments     []FragmentRow // Content empty unless IncludeContent
	Observations  []ObservationRow
	Verifications []VerificationRow
	Transitions   []TransitionRow
	Resolutions   []ResolutionRow
	ReviewItems   []ReviewItemView
	// CrossReferences are the cross-references from and to the relationship.
	CrossReferences []CrossReferenceRow
	// Cases are the conflict cases the relationship ever belonged to, with every event.
	Cases      []TraceCase
	Neighbours []RelationshipView
	// NeighboursTruncated reports that MaxEdges cut the neighbour list.
	NeighboursTruncated bool
}

// ReviewItemView is a stored review item that names a relationship, as subject or as related prior.
type ReviewItemView struct {
	ReviewItemRow
	Status     string
	ResolvedAt *time.Time
}
