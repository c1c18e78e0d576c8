// Package memtype holds the public request and result types of Remember and the validation error
// every call returns, so that go doc shows them whole and the internal packages that place a
// Remember (internal/placement, internal/ledger) share them without importing the root. The root
// package names every one of them the same way (densemem.RememberRequest is memtype.RememberRequest);
// hosts may use either name.
package memtype

import (
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// RememberRequest submits verbatim evidence and the relationships the host extracted from it.
type RememberRequest struct {
	Evidence []EvidenceInput `json:"evidence"`
	Proposal Proposal        `json:"proposal"`
	// IdempotencyKey is required; a retry with the same key and request replays the first result.
	IdempotencyKey string `json:"idempotency_key"`
}

// EvidenceInput is one verbatim evidence item: new content, or an existing fragment of the team
// adopted by AdoptFragmentID.
type EvidenceInput struct {
	// Content is stored byte for byte; it must be valid UTF-8 without NUL bytes.
	Content    string              `json:"content"`
	SourceType evidence.SourceType `json:"source_type"`
	// Authority defaults to "standard". "authoritative" counts as authority only for the team
	// policy's authoritative profiles.
	Authority evidence.Authority `json:"authority,omitempty"`
	// SourceGroup labels the independent source this item comes from; see evidence.GroupLabel.
	SourceGroup string `json:"source_group,omitempty"`
	// SourceKey and SourceRevision identify a versioned source; every revision of one key is one group.
	SourceKey      string `json:"source_key,omitempty"`
	SourceRevision string `json:"source_revision,omitempty"`
	// AdoptFragmentID cites an existing fragment of the caller's team (another profile's evidence)
	// instead of new content: nothing is stored again, and the fragment keeps its author,
	// provenance and source group, so it never counts as a second group (DESIGN §13). Content,
	// source_type, authority, source_group, source_key and source_revision must then be empty (the
	// fragment brings its own), and citations index the fragment's stored content. The claim is
	// verified against that content like any evidence.
	AdoptFragmentID evidence.FragmentID `json:"adopt_fragment_id,omitempty"`
	// PreviousSourceRevision makes this item a new revision of its source that replaces the named
	// one (a source revision, DESIGN §13): in the call's transaction every fragment of SourceKey at
	// PreviousSourceRevision that is not retired yet is retired for the whole team, whoever adopted
	// it, and the relationships it supported are recomputed. Only the source's owner (the profile
	// that stored its first fragment) may revise it; the previous revision must have a fragment not
	// retired yet, and SourceRevision must differ from it and be new to the source.
	PreviousSourceRevision string `json:"previous_source_revision,omitempty"`
	// SupersedesFragmentIDs, with PreviousSourceRevision, retires these fragments too: each must be
	// the caller's own fragment of the same SourceKey (of any earlier revision), not retired yet.
	SupersedesFragmentIDs []evidence.FragmentID `json:"supersedes_fragment_ids,omitempty"`
}

// Adopts reports whether the item adopts an existing fragment instead of bringing content.
func (e EvidenceInput) Adopts() bool { return e.AdoptFragmentID != "" }

// Revises reports whether the item is a source revision (it names the revision it replaces).
func (e EvidenceInput) Revises() bool { return e.PreviousSourceRevision != "" }

// Proposal holds the entities and relationships the host extracted.
type Proposal struct {
	Entities      []ProposedEntity       `json:"entities"`
	Relationships []ProposedRelationship `json:"relationships"`
}

// ProposedEntity is one entity mention, referenced by Ref from relationships.
type ProposedEntity struct {
	Ref             string            `json:"ref"`
	Name            string            `json:"name"`
	EntityKind      string            `json:"entity_kind"`
	Aliases         []string          `json:"aliases,omitempty"`
	IdentityContext map[string]string `json:"identity_context,omitempty"`
	// KnownEntityID reuses a server-known entity of the caller's team.
	KnownEntityID identity.EntityID `json:"known_entity_id,omitempty"`
	// DistinctFromEntityIDs are server-known entities of the caller's team the caller's evidence
	// shows this mention is not (the specification's two Marks): they are never its candidates.
	DistinctFromEntityIDs []identity.EntityID `json:"distinct_from_entity_ids,omitempty"`
}

// ValueType is the type of a literal object.
type ValueType string

// Value types.
const (
	ValueString   ValueType = "string"
	ValueNumber   ValueType = "number"
	ValueBoolean  ValueType = "boolean"
	ValueDate     ValueType = "date"
	ValueDateTime ValueType = "date_time"
)

// Valid reports whether t is a known value type.
func (t ValueType) Valid() bool {
	switch t {
	case ValueString, ValueNumber, ValueBoolean, ValueDate, ValueDateTime:
		return true
	}
	return false
}

// ValueTypes returns every value type.
func ValueTypes() []ValueType {
	return []ValueType{ValueString, ValueNumber, ValueBoolean, ValueDate, ValueDateTime}
}

// ObjectValue is a typed literal object.
type ObjectValue struct {
	Type  ValueType `json:"type"`
	Value string    `json:"value"`
}

// Citation cites the byte range [Start, End) of request evidence item EvidenceIndex.
type Citation struct {
	EvidenceIndex int `json:"evidence_index"`
	Start         int `json:"start"`
	End           int `json:"end"`
}

// ProposedRelationship is one proposed relationship. Exactly one of ObjectRef and ObjectValue is set.
type ProposedRelationship struct {
	ProposalID  string       `json:"proposal_id"`
	SubjectRef  string       `json:"subject_ref"`
	Predicate   string       `json:"predicate"`
	ObjectRef   string       `json:"object_ref,omitempty"`
	ObjectValue *ObjectValue `json:"object_value,omitempty"`
	// Polarity defaults to "+".
	Polarity relationship.Polarity `json:"polarity,omitempty"`
	// Modality defaults to "statement"; other modalities are kept as observations only.
	Modality  relationship.Modality `json:"modality,omitempty"`
	Scope     string                `json:"scope,omitempty"`
	ValidFrom *time.Time            `json:"valid_from,omitempty"`
	ValidTo   *time.Time            `json:"valid_to,omitempty"`
	Evidence  []Citation            `json:"evidence"`
	// CorrectsRelationshipID names a relationship of the same conflict key this proposal corrects:
	// another profile's (written as a corrects cross-reference) or the caller's own (superseded).
	CorrectsRelationshipID relationship.ID `json:"corrects_relationship_id,omitempty"`
	// ConflictResponse answers a team conflict case at the version the caller last read.
	ConflictResponse *ConflictResponse `json:"conflict_response,omitempty"`
}

// ConflictResponse ties a proposal to a team conflict case read through Recall or Trace. A stale
// version fails the whole call with ErrStaleConflictVersion; a proposal outside the case's key fails
// it with ErrNotMaterialToConflict.
type ConflictResponse struct {
	ConflictID      string `json:"conflict_id"`
	ExpectedVersion int    `json:"expected_version"`
}

// Category is the outcome category of one proposal relationship.
type Category string

// Outcome categories of a placement.
const (
	CategoryAccepted        Category = "relationship_accepted"
	CategorySupported       Category = "relationship_supported"
	CategorySupersededPrior Category = "relationship_superseded_prior"
	CategoryNeedsReview     Category = "relationship_needs_review"
	CategoryPendingEvidence Category = "relationship_pending_evidence"
	CategoryRejected        Category = "relationship_rejected"
	CategoryIdentityReview  Category = "identity_needs_review"
	CategoryPredicateReview Category = "predicate_needs_review"
	CategoryNotAsserted     Category = "relationship_not_asserted"
)

// Placement is the synchronous outcome of one Remember.
type Placement struct {
	IngestID string `json:"ingest_id"`
	// Replayed is true when this result was stored by an earlier call with the same idempotency key.
	Replayed             bool                  `json:"replayed"`
	Fragments            []FragmentOutcome     `json:"fragments"`
	Entities             []EntityOutcome       `json:"entities"`
	RelationshipOutcomes []RelationshipOutcome `json:"relationship_outcomes"`
	// Retired lists the fragments a source revision of the request retired, team-wide.
	Retired []RetiredFragment `json:"retired_fragments,omitempty"`
	// Recomputed lists the system changes the retirements caused, before the request's own
	// proposals were placed: every relationship, of any profile, whose tier or status its lost
	// support changed (transition reason "support_retired:<retirement_id>"), and the held statements
	// then re-planned ("prior_gone").
	Recomputed []RelationshipChange `json:"recomputed_relationships,omitempty"`
}

// RetiredFragment is one fragment a source revision retired.
type RetiredFragment struct {
	FragmentID   evidence.FragmentID `json:"fragment_id"`
	RetirementID string              `json:"retirement_id"`
	// ReplacedBy is the new revision's fragment that replaces it.
	ReplacedBy evidence.FragmentID `json:"replaced_by_fragment_id"`
}

// FragmentOutcome names the fragment stored for one request evidence item, or the existing fragment
// it adopted.
type FragmentOutcome struct {
	EvidenceIndex int                 `json:"evidence_index"`
	FragmentID    evidence.FragmentID `json:"fragment_id"`
	SourceGroup   string              `json:"source_group"`
	// Adopted is true when the item adopted an existing fragment (adopt_fragment_id): no fragment
	// was stored, and AuthorProfileID is the fragment's original author.
	Adopted         bool               `json:"adopted,omitempty"`
	AuthorProfileID identity.ProfileID `json:"author_profile_id,omitempty"`
}

// EntityOutcome is how one proposal entity was resolved.
type EntityOutcome struct {
	Ref        string            `json:"ref"`
	Decision   identity.Decision `json:"decision"`
	EntityID   identity.EntityID `json:"entity_id,omitempty"`
	Candidates []EntityCandidate `json:"candidates,omitempty"`
	// CandidatesTruncated reports that more candidates matched than are listed.
	CandidatesTruncated bool `json:"candidates_truncated,omitempty"`
}

// EntityCandidate is a server-supplied entity a client may select in identity review.
type EntityCandidate struct {
	EntityID        identity.EntityID `json:"entity_id"`
	Name            string            `json:"name"`
	EntityKind      string            `json:"entity_kind"`
	IdentityContext map[string]string `json:"identity_context,omitempty"`
}

// RelationshipOutcome is the placement of one proposal relationship.
type RelationshipOutcome struct {
	ProposalID      string              `json:"proposal_id"`
	PlacementItemID string              `json:"placement_item_id"`
	ObservationID   string              `json:"observation_id"`
	RelationshipID  relationship.ID     `json:"relationship_id,omitempty"`
	Category        Category            `json:"category"`
	Tier            relationship.Tier   `json:"tier,omitempty"`
	Status          relationship.Status `json:"status,omitempty"`
	Reason          string              `json:"reason"`
	// Related lists the relationships this outcome concerns: superseded priors, or the priors a held
	// relationship conflicts with.
	Related []relationship.ID `json:"related_relationship_ids,omitempty"`
	// Review is the client decision this outcome needs, if any.
	Review *ReviewPrompt `json:"review,omitempty"`
	// CrossReferences lists cross-references this placement wrote to other owners' relationships.
	CrossReferences []CrossReferenceOutcome `json:"cross_references,omitempty"`
	// Conflict names the team conflict case this placement opened or joined.
	Conflict *ConflictRef `json:"conflict,omitempty"`
}

// ReviewPrompt is an open client decision with the exact choices the server allows.
type ReviewPrompt struct {
	ReviewID         string            `json:"review_id"`
	Kind             string            `json:"kind"`
	Question         string            `json:"question"`
	Choices          []ReviewChoice    `json:"choices"`
	EntityCandidates []EntityCandidate `json:"entity_candidates,omitempty"`
	PredicateOptions []PredicateOption `json:"predicate_options,omitempty"`
	// Mentions are, for an identity item, the mentions that stayed ambiguous: the ref a decision
	// names (decision.mention_ref), the name as written, and which EntityCandidates are its.
	Mentions []ReviewMention `json:"mentions,omitempty"`
	// Verdict is, for a pending-evidence item, the verifier's verdict on the evidence it was given.
	Verdict *ReviewVerdict `json:"verdict,omitempty"`
}

// ReviewMention is one ambiguous mention of an identity review item.
type ReviewMention struct {
	Ref          string              `json:"ref"`
	Name         string              `json:"name"`
	EntityKind   string              `json:"entity_kind"`
	CandidateIDs []identity.EntityID `json:"candidate_ids"`
	// LookAlike says the candidates hold a name that only looks like this one (other characters).
	LookAlike bool `json:"look_alike,omitempty"`
	// Broader says the one candidate is another profile's entity whose identity context lacks a
	// discriminator this mention states: the mention may name it, or a narrower identity.
	Broader bool `json:"broader,omitempty"`
	// IdentityContext is the identity context the mention was stated with.
	IdentityContext map[string]string `json:"identity_context,omitempty"`
}

// ReviewVerdict is the verifier's verdict an item reports.
type ReviewVerdict struct {
	Verdict    string  `json:"verdict"`
	Confidence float64 `json:"confidence"`
	Rationale  string  `json:"rationale,omitempty"`
}

// ReviewChoice is one allowed decision.
type ReviewChoice struct {
	Action      string `json:"action"`
	Description string `json:"description"`
	// Impact is what the decision would change, computed when the item was issued by the code that
	// carries the decision out: the before and after of every relationship it would move. It holds
	// while the item is open and not stale, except that a valid_to the decision sets to its own time
	// (superseding with an undated statement) shows the time the item was issued. Empty for a
	// decision whose effect depends on what it brings (add_evidence: the verifier's verdict).
	Impact []RelationshipChange `json:"impact,omitempty"`
}

// RelationshipChange is the before and after of one relationship a decision changed (or, in a
// choice's Impact, would change).
type RelationshipChange struct {
	RelationshipID relationship.ID   `json:"relationship_id"`
	TransitionID   string            `json:"transition_id,omitempty"`
	Before         RelationshipState `json:"before"`
	After          RelationshipState `json:"after"`
}

// RelationshipState is a relationship's lifecycle state on one side of a change; a relationship
// that did not exist before has version 0.
type RelationshipState struct {
	Status  relationship.Status `json:"status,omitempty"`
	Tier    relationship.Tier   `json:"tier,omitempty"`
	ValidTo *time.Time          `json:"valid_to,omitempty"`
	Version int                 `json:"version"`
}

// PredicateOption is a registered predicate a client may select in predicate review.
type PredicateOption struct {
	Key         string `json:"key"`
	Description string `json:"description,omitempty"`
}

// CrossReferenceOutcome is one cross-reference written by a placement.
type CrossReferenceOutcome struct {
	CrossReferenceID string          `json:"cross_reference_id"`
	Kind             string          `json:"kind"`
	ToRelationshipID relationship.ID `json:"to_relationship_id"`
}

// ConflictRef names a team conflict case at a version.
type ConflictRef struct {
	ConflictID string `json:"conflict_id"`
	Version    int    `json:"version"`
	Status     string `json:"status"`
}
