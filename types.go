package densemem

import (
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
)

// Typed identifiers and enums, re-exported from the domain packages that own them.
type (
	// TeamID identifies a team, the tenant boundary.
	TeamID = identity.TeamID
	// ProfileID identifies a profile (an author) inside a team.
	ProfileID = identity.ProfileID
	// EntityID identifies an entity.
	EntityID = identity.EntityID
	// RelationshipID identifies a relationship.
	RelationshipID = relationship.ID
	// FragmentID identifies an evidence fragment.
	FragmentID = evidence.FragmentID
	// Scope is a profile permission.
	Scope = identity.Scope
	// Status is a relationship's lifecycle status.
	Status = relationship.Status
	// Tier is a relationship's support tier.
	Tier = relationship.Tier
	// Polarity is "+" or "-".
	Polarity = relationship.Polarity
	// Modality is how a source stated an observation.
	Modality = relationship.Modality
	// SourceType says where evidence came from.
	SourceType = evidence.SourceType
	// Authority is an evidence item's authority label.
	Authority = evidence.Authority
	// Verdict is a verifier's judgement.
	Verdict = evidence.Verdict
)

// Principal is the authenticated caller of one call: a profile of a team, or the host itself acting
// for a team (HostPrincipal). The host authenticates it.
type Principal struct {
	TeamID    TeamID    `json:"team_id"`
	ProfileID ProfileID `json:"profile_id"`
	// Host marks the host itself, trusted code acting for TeamID without a profile (ProfileID stays
	// empty). A host principal holds every scope for administrative and read calls
	// (RegisterPredicate, SetTeamPolicy, TeamPolicy, the List calls, Recall, Trace, Erase), but never
	// authors knowledge: Remember and Forget refuse it with ErrForbidden. Rows it writes record
	// created_by "host". It is never decoded from JSON; adapters that serve agents (MCP, HTTP) must
	// never set it: an agent acts through a profile and its scopes.
	Host bool `json:"-"`
}

// HostPrincipal returns the principal of the host itself acting for team: the host administers
// the team (predicates, policy, the List calls) and reads it without a profile of the team, and
// cannot Remember or Forget. The team must exist. Never hand one to an agent.
func HostPrincipal(team TeamID) Principal {
	return Principal{TeamID: team, Host: true}
}

// hostActor is what rows written by a host principal record as their author.
const hostActor = "host"

// actor is the author a row written for p records: its profile ID, or "host".
func (p Principal) actor() string {
	if p.Host {
		return hostActor
	}
	return string(p.ProfileID)
}

// Remember's request and result types. They are declared in the public package memtype, which
// internal/placement shares, and are these very types under the root package's names (go doc
// github.com/densemem/densemem/memtype shows their fields).
type (
	// RememberRequest submits verbatim evidence and the relationships the host extracted from it.
	RememberRequest = memtype.RememberRequest
	// EvidenceInput is one verbatim evidence item.
	EvidenceInput = memtype.EvidenceInput
	// Proposal holds the entities and relationships the host extracted.
	Proposal = memtype.Proposal
	// ProposedEntity is one entity mention, referenced by Ref from relationships.
	ProposedEntity = memtype.ProposedEntity
	// ValueType is the type of a literal object.
	ValueType = memtype.ValueType
	// ObjectValue is a typed literal object.
	ObjectValue = memtype.ObjectValue
	// Citation cites the byte range [Start, End) of request evidence item EvidenceIndex.
	Citation = memtype.Citation
	// ProposedRelationship is one proposed relationship. Exactly one of ObjectRef and ObjectValue is set.
	ProposedRelationship = memtype.ProposedRelationship
	// ConflictResponse ties a proposal to a team conflict case read through Recall or Trace. A stale
	// version fails the whole call with ErrStaleConflictVersion; a proposal outside the case's key fails
	// it with ErrNotMaterialToConflict.
	ConflictResponse = memtype.ConflictResponse
	// Category is the outcome category of one proposal relationship.
	Category = memtype.Category
	// Placement is the synchronous outcome of one Remember.
	Placement = memtype.Placement
	// FragmentOutcome names the fragment stored for one request evidence item.
	FragmentOutcome = memtype.FragmentOutcome
	// RetiredFragment is one fragment a source revision retired.
	RetiredFragment = memtype.RetiredFragment
	// EntityOutcome is how one proposal entity was resolved.
	EntityOutcome = memtype.EntityOutcome
	// EntityCandidate is a server-supplied entity a client may select in identity review.
	EntityCandidate = memtype.EntityCandidate
	// RelationshipOutcome is the placement of one proposal relationship.
	RelationshipOutcome = memtype.RelationshipOutcome
	// ReviewPrompt is an open client decision with the exact choices the server allows.
	ReviewPrompt = memtype.ReviewPrompt
	// ReviewChoice is one allowed decision, with its impact.
	ReviewChoice = memtype.ReviewChoice
	// RelationshipChange is the before and after of one relationship a decision changed.
	RelationshipChange = memtype.RelationshipChange
	// RelationshipState is a relationship's lifecycle state on one side of a change.
	RelationshipState = memtype.RelationshipState
	// PredicateOption is a registered predicate a client may select in predicate review.
	PredicateOption = memtype.PredicateOption
	// ReviewMention is one ambiguous mention of an identity review item.
	ReviewMention = memtype.ReviewMention
	// ReviewVerdict is the verifier's verdict a pending-evidence review item reports.
	ReviewVerdict = memtype.ReviewVerdict
	// CrossReferenceOutcome is one cross-reference written by a placement.
	CrossReferenceOutcome = memtype.CrossReferenceOutcome
	// ConflictRef names a team conflict case at a version.
	ConflictRef = memtype.ConflictRef
)

// ValueTypes returns every value type an ObjectValue may have.
func ValueTypes() []ValueType { return memtype.ValueTypes() }

// Value types.
const (
	ValueString   = memtype.ValueString
	ValueNumber   = memtype.ValueNumber
	ValueBoolean  = memtype.ValueBoolean
	ValueDate     = memtype.ValueDate
	ValueDateTime = memtype.ValueDateTime
)

// Outcome categories of a placement.
const (
	CategoryAccepted        = memtype.CategoryAccepted
	CategorySupported       = memtype.CategorySupported
	CategorySupersededPrior = memtype.CategorySupersededPrior
	CategoryNeedsReview     = memtype.CategoryNeedsReview
	CategoryPendingEvidence = memtype.CategoryPendingEvidence
	CategoryRejected        = memtype.CategoryRejected
	CategoryIdentityReview  = memtype.CategoryIdentityReview
	CategoryPredicateReview = memtype.CategoryPredicateReview
	CategoryNotAsserted     = memtype.CategoryNotAsserted
)
