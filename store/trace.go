package store

import (
	"encoding/json"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// TraceLoadParams names the relationship to trace, how far to look, and which page of each list to read.
type TraceLoadParams struct {
	Team           identity.TeamID
	RelationshipID relationship.ID
	// IncludeContent asks for fragment content on the support page, within ContentBudget.
	IncludeContent bool
	// IncludeVerifications and IncludeTransitions ask for those lists; without them they are not read.
	IncludeVerifications bool
	IncludeTransitions   bool
	// MaxDepth bounds the hops of neighbouring active relationships (0 = none).
	MaxDepth int
	// MaxEdges bounds the number of neighbours returned.
	MaxEdges int
	// Limit is the most rows returned per list (1 or more), and per case for its events. The store
	// reads one row more to report whether the list goes on (TraceNext).
	Limit int
	// CaseSupports bounds, per case of the page, the support links read to count its positions'
	// source groups (TraceCase.MemberSupports); 1 or more.
	CaseSupports int
	// ContentBudget bounds the bytes of fragment content plus cited span that the support page
	// carries: supports carry them, in list order, while the running total stays within the budget;
	// from the first one past it, every later support of the page has ContentOmitted.
	ContentBudget int
	// After says where each list's page starts.
	After TraceAfter
}

// TraceKey is a position in a Trace list: a page holds the rows strictly after it in the list's
// order, (At, IDs...). Most lists are ordered by (created_at, ID); supports by (created_at,
// observation ID, verification ID, support ID), verifications by (their observation's created_at,
// observation ID, verification ID), cases by (opened_at, conflict ID).
type TraceKey struct {
	At  time.Time
	IDs []string
}

// TraceAfter holds where each list's page starts. A nil key, a zero version or a missing case starts
// the list at its first row.
type TraceAfter struct {
	Supports, Observations, Verifications, Resolutions, ReviewItems, CrossReferences *TraceKey
	// Cases are ordered by opened_at, then conflict ID.
	Cases *TraceKey
	// Transitions are ordered by to_version: the page holds the versions after this one.
	Transitions int
	// CaseEvents holds, per case, the case version after which its events resume.
	CaseEvents map[conflict.ID]int
}

// TraceNext holds, per list whose page did not reach its end, the key of the page's last row: the
// next page starts after it. Nil (or zero) when the page holds the rest of the list.
type TraceNext struct {
	Supports, Observations, Verifications, Resolutions, ReviewItems, CrossReferences, Cases *TraceKey
	Transitions                                                                             int
}

// TraceSupport is one support link of a Trace page with what Trace shows of its fragment.
type TraceSupport struct {
	SupportLinkRow
	SourceType evidence.SourceType
	// Content is the fragment's verbatim content, set only when IncludeContent and the page's
	// content budget carried it.
	Content string
	// ContentOmitted reports that content was asked for and the budget was spent before this support.
	ContentOmitted bool
	// Erased reports that privacy erasure redacted the fragment's content: Content is empty and the
	// fragment costs nothing of the budget.
	Erased bool
	// Retirement is the retirement of the support's fragment, nil while it is not retired: a retired
	// fragment's support is shown but no longer effective.
	Retirement *RetirementRow
	// Key is the support's position in the list.
	Key TraceKey
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

// TraceData is one page of the stored history of one relationship: every list holds at most Limit
// rows in its order, starting after its TraceAfter position.
type TraceData struct {
	Relationship RelationshipView
	// SupportKeys are the distinct (source group, content hash, effective) triples of all of the
	// relationship's supports, not only those of the page, for counting its source groups.
	SupportKeys   []evidence.Support
	Supports      []TraceSupport
	Observations  []ObservationRow
	Verifications []VerificationRow // empty unless IncludeVerifications
	Transitions   []TransitionRow   // empty unless IncludeTransitions
	// TransitionDecisions names, by transition ID, the client decision (Resolve, Split, Merge) that made a
	// transition of the page.
	TransitionDecisions map[string]string
	Resolutions         []ResolutionRow
	ReviewItems         []ReviewItemView
	// CrossReferences are the cross-references from and to the relationship.
	CrossReferences []CrossReferenceRow
	// Cases are the conflict cases the relationship ever belonged to, each with a page of events.
	Cases []TraceCase
	// Next says which lists go on after their page, and from where (a case's events:
	// TraceCase.EventsNext).
	Next       TraceNext
	Neighbours []RelationshipView
	// NeighboursTruncated reports that MaxEdges cut the neighbour list.
	NeighboursTruncated bool
}

// ObjectName is what a reader is shown of a relationship's or position's object: the entity's
// canonical name and kind, or the literal's text and "value:<type>".
type ObjectName struct {
	Name string
	Kind string
}

// ReviewItemView is a stored review item that names a relationship, as subject or as related prior.
type ReviewItemView struct {
	ReviewItemRow
	Status     string
	ResolvedAt *time.Time
	// Decision is the decision row that resolved the item, as JSON (DecisionRow's columns by name,
	// without team_id); empty for none.
	Decision json.RawMessage
	// Proposals are the item's latest vocabulary proposals (at most 20 decision rows of action
	// propose_vocabulary_change, oldest first), as a JSON array; empty for none.
	Proposals json.RawMessage
}
