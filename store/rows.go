package store

import (
	"encoding/json"
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// WriteSet is every row one call writes, applied in one round trip inside a Tx. Inserts happen in
// dependency order; updates are fenced by the version they expect.
type WriteSet struct {
	Entities    []EntityRow
	EntityNames []EntityNameRow
	Values      []ValueRow
	Fragments   []FragmentRow
	// Retirements retire fragments (the new ones of this write set or stored ones), once each.
	Retirements   []RetirementRow
	Observations  []ObservationRow
	Verifications []VerificationRow
	Resolutions   []ResolutionRow
	Relationships []RelationshipRow
	Updates       []RelationshipUpdate
	Supports      []SupportLinkRow
	Transitions   []TransitionRow
	CrossRefs     []CrossReferenceRow
	CaseInserts   []CaseRow
	Positions     []PositionRow
	CaseUpdates   []CaseUpdate
	CaseReviews   []CaseReviewUpdate
	MemberEnds    []MemberRemoval
	MemberAdds    []MemberRow
	CaseEvents    []CaseEventRow
	ReviewItems   []ReviewItemRow
	ItemCloses    []ReviewItemClose
	// ItemClosesFor closes every open review item about a relationship (its question is gone).
	ItemClosesFor []ReviewItemCloseFor
	Decisions     []DecisionRow
	// IdentityDecisions are splits and merges (Client.Split, Client.Merge).
	IdentityDecisions []IdentityDecisionRow
	Idempotency       *IdempotencyRow
}

// Append adds o's rows after ws's, table by table (the write order of WriteSetApply is by table, so
// two write sets whose rows do not depend on each other apply as one). Both may not carry an
// idempotency record; o's is kept when ws has none.
func (ws *WriteSet) Append(o WriteSet) {
	ws.Entities = append(ws.Entities, o.Entities...)
	ws.EntityNames = append(ws.EntityNames, o.EntityNames...)
	ws.Values = append(ws.Values, o.Values...)
	ws.Fragments = append(ws.Fragments, o.Fragments...)
	ws.Retirements = append(ws.Retirements, o.Retirements...)
	ws.Observations = append(ws.Observations, o.Observations...)
	ws.Verifications = append(ws.Verifications, o.Verifications...)
	ws.Resolutions = append(ws.Resolutions, o.Resolutions...)
	ws.Relationships = append(ws.Relationships, o.Relationships...)
	ws.Updates = append(ws.Updates, o.Updates...)
	ws.Supports = append(ws.Supports, o.Supports...)
	ws.Transitions = append(ws.Transitions, o.Transitions...)
	ws.CrossRefs = append(ws.CrossRefs, o.CrossRefs...)
	ws.CaseInserts = append(ws.CaseInserts, o.CaseInserts...)
	ws.Positions = append(ws.Positions, o.Positions...)
	ws.CaseUpdates = append(ws.CaseUpdates, o.CaseUpdates...)
	ws.CaseReviews = append(ws.CaseReviews, o.CaseReviews...)
	ws.MemberEnds = append(ws.MemberEnds, o.MemberEnds...)
	ws.MemberAdds = append(ws.MemberAdds, o.MemberAdds...)
	ws.CaseEvents = append(ws.CaseEvents, o.CaseEvents...)
	ws.ReviewItems = append(ws.ReviewItems, o.ReviewItems...)
	ws.ItemCloses = append(ws.ItemCloses, o.ItemCloses...)
	ws.ItemClosesFor = append(ws.ItemClosesFor, o.ItemClosesFor...)
	ws.Decisions = append(ws.Decisions, o.Decisions...)
	ws.IdentityDecisions = append(ws.IdentityDecisions, o.IdentityDecisions...)
	if ws.Idempotency == nil {
		ws.Idempotency = o.Idempotency
	}
}

// EntityRow is a new entity.
type EntityRow struct {
	Team      identity.TeamID
	ID        identity.EntityID
	Kind      string
	Context   map[string]string
	CreatedBy identity.ProfileID
	IngestID  string
	CreatedAt time.Time
}

// EntityNameRow is a name of an entity with its lookup key (identity.NormalizeName) and the key's
// skeleton (identity.Skeleton); an existing (entity, verbatim name) is left as it is.
type EntityNameRow struct {
	Team       identity.TeamID
	EntityID   identity.EntityID
	Name       string
	Normalized string
	Skeleton   string
	Kind       identity.NameKind
	CreatedAt  time.Time
}

// ValueRow is a literal value; an existing (type, text) is left as it is.
type ValueRow struct {
	Team      identity.TeamID
	ID        string
	Type      string
	Text      string
	CreatedAt time.Time
}

// FragmentRow is one verbatim evidence fragment with its content.
type FragmentRow struct {
	Team          identity.TeamID
	ID            evidence.FragmentID
	IngestID      string
	EvidenceIndex int
	Author        identity.ProfileID
	SourceType    evidence.SourceType
	Authority     evidence.Authority
	SourceGroup   string
	SourceKey     string
	Revision      string
	ContentHash   string
	Content       string
	CreatedAt     time.Time
	// Erased is set by reads when privacy erasure redacted Content (it is then empty); writes
	// ignore it.
	Erased bool
}

// Retirement causes (fragment_retirements.cause).
const (
	// RetiredBySourceRevision: a newer revision of the fragment's source replaced it.
	RetiredBySourceRevision = "source_revision"
	// RetiredByErasure: the privacy erasure workflow retired it.
	RetiredByErasure = "erasure"
)

// ActorHost is the actor kind of a retirement the host itself made (not a profile's call).
const ActorHost = "host"

// RetirementRow retires one evidence fragment: from CreatedAt on, its support links are no longer
// effective (DESIGN §6.2). The fragment, its content and its support links stay as they are; a
// fragment retires at most once (a second retirement of it fails the write set with ErrIntegrity).
type RetirementRow struct {
	Team       identity.TeamID
	ID         string
	FragmentID evidence.FragmentID
	// Cause is RetiredBySourceRevision or RetiredByErasure.
	Cause string
	// ReplacedBy is the fragment of the new revision that replaced it, "" for none.
	ReplacedBy evidence.FragmentID
	// ActorKind is ActorProfile (ActorProfile names the profile whose call retired it) or ActorHost.
	ActorKind    string
	ActorProfile identity.ProfileID
	Reason       string
	IngestID     string
	CreatedAt    time.Time
}

// ObservationRow is one immutable observation.
type ObservationRow struct {
	Team             identity.TeamID
	ID               string
	IngestID         string
	Profile          identity.ProfileID
	ProposalID       string
	SubjectRef       string
	SubjectName      string
	PredicatePhrase  string
	PredicateKey     string // "" when unresolved
	PredicateVersion int    // 0 when unresolved
	ObjectRef        string
	ObjectName       string
	ObjectValue      json.RawMessage // nil unless the object is a literal
	Polarity         relationship.Polarity
	Modality         relationship.Modality
	Scope            string
	ValidFrom        *time.Time
	ValidTo          *time.Time
	Citations        json.RawMessage
	CreatedAt        time.Time
}

// StoredObservation is one stored observation with what placing its claim again needs: the
// fragments of its ingest (its citations' evidence indexes point into them) and its mentions'
// resolution events.
type StoredObservation struct {
	Observation ObservationRow
	Fragments   []FragmentRow
	Resolutions []ResolutionRow
}

// VerificationRow is one immutable verification event.
type VerificationRow struct {
	Team               identity.TeamID
	ID                 string
	ObservationID      string
	Verifier           string
	Verdict            evidence.Verdict
	Confidence         float64
	Rationale          string
	ConfirmedValidFrom *time.Time
	SupportGranted     bool
	CreatedAt          time.Time
}

// ResolutionRow is one entity resolution event.
type ResolutionRow struct {
	Team          identity.TeamID
	ID            string
	ObservationID string
	MentionRef    string
	MentionName   string
	EntityKind    string
	EntityID      identity.EntityID // "" when ambiguous
	Decision      identity.Decision
	Candidates    []identity.EntityID
	// Context is the identity context the mention was stated with (normalised).
	Context map[string]string
	// DistinctFrom are the entities the caller's evidence shows the mention is not.
	DistinctFrom []identity.EntityID
	Profile      identity.ProfileID
	IngestID     string
	CreatedAt    time.Time
}

// RelationshipRow is a new relationship in its initial state.
type RelationshipRow struct {
	Team          identity.TeamID
	Relationship  relationship.Relationship
	ObservationID string
	IngestID      string
	CreatedAt     time.Time
}

// RelationshipUpdate changes a relationship's current state; it applies only while the row is still
// at ExpectVersion, and moves it to ExpectVersion+1.
type RelationshipUpdate struct {
	Team          identity.TeamID
	ID            relationship.ID
	ExpectVersion int
	Status        relationship.Status
	Tier          relationship.Tier
	ValidTo       *time.Time
	UpdatedAt     time.Time
}

// SupportLinkRow is one immutable support link.
type SupportLinkRow struct {
	Team           identity.TeamID
	ID             string
	RelationshipID relationship.ID
	FragmentID     evidence.FragmentID
	ObservationID  string
	VerificationID string
	Start, End     int
	SourceGroup    string
	ContentHash    string
	Authority      evidence.Authority
	Author         identity.ProfileID
	Profile        identity.ProfileID
	IngestID       string
	CreatedAt      time.Time
}

// Actor kinds of transitions.
const (
	ActorProfile                = "profile"
	ActorSystemConflictReviewer = "system_conflict_reviewer"
	ActorSystem                 = "system"
)

// TransitionRow is one immutable relationship transition. From fields are zero for a creation.
type TransitionRow struct {
	Team           identity.TeamID
	ID             string
	RelationshipID relationship.ID
	FromStatus     relationship.Status
	ToStatus       relationship.Status
	FromTier       relationship.Tier
	ToTier         relationship.Tier
	FromValidTo    *time.Time
	ToValidTo      *time.Time
	FromVersion    int
	ToVersion      int
	Reason         string
	ActorKind      string
	ActorProfile   identity.ProfileID
	Related        relationship.ID
	IngestID       string
	IdempotencyKey string
	CreatedAt      time.Time
}

// ReviewItemRow is one open client decision.
type ReviewItemRow struct {
	Team            identity.TeamID
	ID              string
	IngestID        string
	PlacementItemID string
	Kind            string
	Profile         identity.ProfileID
	ObservationID   string
	RelationshipID  relationship.ID
	Related         []string
	Choices         json.RawMessage
	// RelationshipVersion is the version RelationshipID had when the item was issued, and
	// RelatedVersions (parallel to Related) those of the related relationships: a decision on the
	// item is stale once one of them moved. 0 and nil: not recorded (items issued before migration 11).
	RelationshipVersion int
	RelatedVersions     []int
	CreatedAt           time.Time
}

// Review item statuses: an item is open until a decision resolves it, or its question goes away
// (superseded: the relationship gained support, was forgotten or otherwise decided).
const (
	ReviewOpen       = "open"
	ReviewResolved   = "resolved"
	ReviewSuperseded = "superseded"
	ReviewExpired    = "expired"
)

// ReviewItem is one stored review item with its lifecycle.
type ReviewItem struct {
	ReviewItemRow
	Status     string
	ResolvedAt *time.Time
	// DecisionID is the decision that resolved the item, "" for none.
	DecisionID string
}

// ReviewItemClose closes one review item, fenced on its being open: when it is not, WriteSetApply
// fails with ErrStaleVersion and nothing of the transaction remains.
type ReviewItemClose struct {
	Team       identity.TeamID
	ID         string
	Status     string // ReviewResolved, ReviewSuperseded or ReviewExpired
	ClosedAt   time.Time
	DecisionID string
}

// ReviewItemCloseFor closes every open review item whose relationship is RelationshipID (none is
// fine).
type ReviewItemCloseFor struct {
	Team           identity.TeamID
	RelationshipID relationship.ID
	Status         string
	ClosedAt       time.Time
}

// DecisionRow is one appended client decision on a review item (Resolve): who decided what about
// which item, with which evidence, under which idempotency key, and the before and after of every
// relationship it changed (Changes, JSON). The table is append-only.
type DecisionRow struct {
	Team            identity.TeamID
	ID              string
	Profile         identity.ProfileID
	ReviewID        string
	ItemIngestID    string
	PlacementItemID string
	Action          string
	Decision        json.RawMessage
	FragmentIDs     []string
	Reason          string
	Changes         json.RawMessage
	IngestID        string
	IdempotencyKey  string
	CreatedAt       time.Time
}

// IdempotencyRow stores a call's result under its idempotency key.
type IdempotencyRow struct {
	Team        identity.TeamID
	Profile     identity.ProfileID
	Key         string
	Operation   string
	RequestHash string
	IngestID    string
	Result      json.RawMessage
	CreatedAt   time.Time
}
