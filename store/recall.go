package store

import (
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// RecallSearchParams describes one ranked candidate search. Every filter applies inside the
// branches, before their limits.
type RecallSearchParams struct {
	Team identity.TeamID
	// Query is the user's text for the full-text branch; Names are the normalised word n-grams of
	// the query for the entity-name branch.
	Query string
	Names []string
	// ExpandFrom adds the relationships of these entities to the entity-name branch.
	ExpandFrom []identity.EntityID
	// At is the instant the current view is evaluated at (now, or KnownAt).
	At time.Time
	// ValidAt selects relationships true in the world at that instant (active or superseded).
	ValidAt *time.Time
	// KnownAt reconstructs what was recorded at or before that instant.
	KnownAt *time.Time
	// PredicateKey filters by predicate when set.
	PredicateKey string
	// PerBranch bounds each branch's candidates.
	PerBranch int
	// MaxHits bounds the rows each source of candidates (each driving lexeme's matching fragment
	// text, each named entity's relationships on each side) contributes before ranking (0: no bound). A search starts with PerBranch rows per source and widens only
	// when filters left a cut branch short, up to MaxHits, so a common word costs about PerBranch
	// rows per source, not MaxHits.
	MaxHits int
	// Authoritative are the team policy's authoritative profiles: a candidate whose effective
	// evidence in the view is labelled authoritative by one of them has RankedRelationship.Authority.
	Authoritative []identity.ProfileID
	// Principal, when set, names the profile the recall reads for: the search loads it with its
	// team's policy in force in its own round trip (RecallSearch.Principal, as PrincipalLoad
	// returns it, ErrNotFound when either is missing), and that policy's authoritative profiles
	// stand for Authoritative, which must then be empty. The caller checks the principal before it
	// uses any candidate.
	Principal *PrincipalLoadParams
}

// RankedRelationship is one branch candidate in rank order, with its state at the requested instant.
type RankedRelationship struct {
	ID      relationship.ID
	Score   float64
	Status  relationship.Status
	Tier    relationship.Tier
	ValidTo *time.Time
	Version int
	// CreatedAt is the relationship's creation, the ranking's tie-break.
	CreatedAt time.Time
	// Authority reports allowed authority among its effective evidence in the view
	// (evidence.AllowedAuthority with RecallSearchParams.Authoritative).
	Authority bool
}

// RecallSearch is the output of the candidate search.
type RecallSearch struct {
	FullText   []RankedRelationship
	EntityName []RankedRelationship
	// HitsTruncated reports that some source had more rows than the search's window (PerBranch, or
	// up to MaxHits when widened): the ranking saw only the window's rows, the first in the order
	// the source was read (an entity's relationships in creation order; text hits best first by
	// their driving lexeme), or that a driving lexeme read the last posting it may (8 × the window)
	// before filling its window.
	HitsTruncated bool
	// Principal is the profile RecallSearchParams.Principal named, with its team's policy in force.
	Principal Principal
}

// RecallDetailsParams names the relationships whose names, evidence and cases a recall shows.
type RecallDetailsParams struct {
	Team          identity.TeamID
	Relationships []relationship.ID
	KnownAt       *time.Time
	// Cases asks for the conflict cases the relationships belong to (as of KnownAt).
	Cases bool
	// MaxExcerpts, when positive, bounds the evidence read per relationship: its first MaxExcerpts
	// effective supports in Trace's order (recorded time, observation, verification, support ID);
	// RecallEvidence.Effective counts them all. Zero reads every effective support.
	MaxExcerpts int
}

// RecallEvidence is one effective support path with its excerpt.
type RecallEvidence struct {
	RelationshipID relationship.ID
	SupportID      string
	// ObservationID and VerificationID are the support's, part of its place in Trace's evidence list.
	ObservationID, VerificationID string
	// Effective counts the relationship's effective supports in the read's window, those beyond
	// RecallDetailsParams.MaxExcerpts included.
	Effective  int
	FragmentID evidence.FragmentID
	Start, End int
	// Excerpt is the cited span cut to evidence.MaxExcerptBytes by evidence.Excerpt; ExcerptCut says
	// whether it was cut.
	Excerpt    string
	ExcerptCut bool
	// Erased reports that privacy erasure redacted the fragment's content: Excerpt is empty.
	Erased      bool
	SourceType  evidence.SourceType
	Authority   evidence.Authority
	SourceGroup string
	ContentHash string
	Author      identity.ProfileID
	CreatedAt   time.Time
}

// RecallCase is a conflict case as of an instant: the case row's identity and deadlines, and the
// status, version and membership of its last event at or before that instant.
type RecallCase struct {
	ID            conflict.ID
	Kind          conflict.Kind
	Key           conflict.Key
	Status        conflict.Status
	Version       int
	OpenedAt      time.Time
	ReviewDueAt   time.Time
	ResolvedAt    *time.Time
	EffectiveAt   *time.Time
	TimeBasis     string
	Preferred     conflict.PositionID
	PolicyVersion int
	Positions     []EventPosition
}

// RecallDetails is what RecallDetails read.
type RecallDetails struct {
	Views    []RelationshipView
	Evidence []RecallEvidence
	Cases    []RecallCase
}

// TraceCase is a conflict case a traced relationship belongs or belonged to, with a page of its
// events in case-version order, the names of its positions' objects and the supports for counting
// its positions' source groups.
type TraceCase struct {
	Case   RecallCase
	Events []CaseEventRow
	// EventsNext is the case version of the page's last event when the case has events after it, else 0.
	EventsNext int
	// Objects names the object of each position of Case, by position.
	Objects map[conflict.PositionID]ObjectName
	// MemberSupports holds the (source group, content hash) of the supports of the members of Case's
	// positions, by member relationship, all marked effective: what counting the positions' groups
	// needs. Complete unless SupportsTruncated.
	MemberSupports map[relationship.ID][]evidence.Support
	// SupportsTruncated reports that the members have more than TraceLoadParams.CaseSupports support
	// links: MemberSupports holds only some of them, too few to count.
	SupportsTruncated bool
}
