package densemem

import (
	"context"
	"encoding/json"
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// TraceRequest asks for the history of one relationship of the caller's team.
//
// Every list of the response is bounded: it holds at most Limit items in its own order, starting
// after After's cursor for it (or at its first item), and TraceResult.Truncated names each list that
// has more, with the cursor of its next page. The lists, by name and order:
//
//   - evidence: support links, by recorded time, then observation, verification and support ID
//   - observations: by recorded time, then ID
//   - verifications: by their observation's recorded time and ID, then verification ID
//   - transitions: by version
//   - identity_resolutions, review_items, cross_references: by recorded time, then ID
//   - conflicts: cases, by opening time, then conflict ID
//   - conflicts.<conflict_id>.events: one case's events, by case version, oldest first
//
// Neighbours are bounded by MaxEdges instead. Each response is read in one transaction, so its
// pages describe one instant; pages of later requests see what was recorded since, after their
// cursors.
type TraceRequest struct {
	RelationshipID         RelationshipID `json:"relationship_id"`
	IncludeEvidenceContent bool           `json:"include_evidence_content"`
	IncludeVerification    bool           `json:"include_verification"`
	IncludeTransitions     bool           `json:"include_transitions"`
	// MaxDepth bounds the hops of neighbouring active relationships (0..4).
	MaxDepth int `json:"max_depth"`
	// MaxEdges bounds the number of neighbours (0..100).
	MaxEdges int `json:"max_edges"`
	// Limit is the most items returned per list, and per case for its events: 0 means
	// DefaultTraceItems (50, or Limits.MaxTraceItems when smaller); otherwise 1..Limits.MaxTraceItems
	// (default 500).
	Limit int `json:"limit,omitempty"`
	// After maps a list name to the cursor (TraceTruncation.NextAfter) after which that list's page
	// starts; lists not named start at their first item. To read a list's next page, send the same
	// request with the list's entry set to its NextAfter (keeping the other entries, so a case's
	// events cursor finds its case on the same conflicts page). A case's events cursor is ignored when
	// the case is not on the response's conflicts page. Cursors are opaque; an unknown list name or a
	// cursor that is not one this list issued is a *ValidationError at "after.<list>".
	After map[string]string `json:"after,omitempty"`
}

// MaxTraceCaseSupports bounds the support links Trace reads per conflict case to count its positions'
// source groups (TraceCasePosition.CountedSourceGroups); a case whose members have more is reported
// with CountedSourceGroupsUnknown instead of a count.
const MaxTraceCaseSupports = 10000

// Names of the lists of a TraceResult, as TraceTruncation.List and TraceRequest.After spell them.
// A case's events are named TraceConflictEventsList(conflictID).
const (
	TraceListEvidence            = "evidence"
	TraceListObservations        = "observations"
	TraceListVerifications       = "verifications"
	TraceListTransitions         = "transitions"
	TraceListIdentityResolutions = "identity_resolutions"
	TraceListReviewItems         = "review_items"
	TraceListCrossReferences     = "cross_references"
	TraceListConflicts           = "conflicts"
)

// TraceConflictEventsList returns the list name of one case's events: "conflicts.<conflictID>.events".
func TraceConflictEventsList(conflictID string) string {
	return TraceListConflicts + "." + conflictID + ".events"
}

// TraceResult explains one relationship: its current state, the evidence behind it, and its history.
// Each list holds one page (see TraceRequest); Truncated says which lists have more.
type TraceResult struct {
	Relationship RelationshipDetail `json:"relationship"`
	Evidence     []TraceEvidence    `json:"evidence"`
	// Observations are the observations behind its supports and the one that created it.
	Observations []TraceObservation `json:"observations"`
	// Verifications (with IncludeVerification) are the verification events its supports cite and
	// those of the observation that created it.
	Verifications []TraceVerification `json:"verifications,omitempty"`
	// Transitions (with IncludeTransitions) are its transitions, the system reviewer's included.
	Transitions []TraceTransition `json:"transitions,omitempty"`
	// IdentityResolutions are the resolution events of its subject and object entities (every
	// mention resolved to them, by any observation) and the other events of the observation that
	// created it.
	IdentityResolutions []IdentityResolution `json:"identity_resolutions"`
	// ReviewItems are the review items about this relationship or naming it as a conflicting prior,
	// with their server-supplied choices.
	ReviewItems []TraceReviewItem `json:"review_items"`
	// CrossReferences are the cross-references from this relationship (outgoing) and to it (incoming).
	CrossReferences []TraceCrossReference `json:"cross_references"`
	// Conflicts are the team conflict cases this relationship belongs or belonged to, with events.
	Conflicts           []TraceConflict       `json:"conflicts"`
	Neighbours          []RelationshipSummary `json:"neighbours"`
	NeighboursTruncated bool                  `json:"neighbours_truncated,omitempty"`
	// Truncated has one entry per list that has items after those returned, in the order of the
	// fields above, case events after the conflicts entry. Empty when every list is complete.
	Truncated []TraceTruncation `json:"truncated,omitempty"`
}

// TraceTruncation reports that a list of a TraceResult has more items than it returned.
type TraceTruncation struct {
	// List is the list's name (TraceListEvidence, …, or TraceConflictEventsList(id)).
	List string `json:"list"`
	// Returned is the number of items the list holds in this response.
	Returned int `json:"returned"`
	// NextAfter is the cursor to send as TraceRequest.After[List] for the list's next page.
	NextAfter string `json:"next_after"`
}

// EntityRefView names an entity.
type EntityRefView struct {
	EntityID EntityID `json:"entity_id"`
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
}

// ObjectView is a relationship's object with its name: an entity (EntityID, its canonical Name and
// its Kind) or a literal value (ValueID, its text as Name and its ValueType).
type ObjectView struct {
	EntityID  EntityID  `json:"entity_id,omitempty"`
	ValueID   string    `json:"value_id,omitempty"`
	ValueType ValueType `json:"value_type,omitempty"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind,omitempty"`
}

// RelationshipSummary is a relationship's state with names. In Trace (the traced relationship and its
// neighbours) it is the latest recorded state; in a Recall result it is the state recorded at the
// view's known instant (see RecallResult.Relationship).
type RelationshipSummary struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	OwnerProfileID ProfileID      `json:"owner_profile_id"`
	Subject        EntityRefView  `json:"subject"`
	Predicate      string         `json:"predicate"`
	Object         ObjectView     `json:"object"`
	Polarity       Polarity       `json:"polarity"`
	Scope          string         `json:"scope"`
	ValidFrom      *time.Time     `json:"valid_from,omitempty"`
	ValidTo        *time.Time     `json:"valid_to,omitempty"`
	Status         Status         `json:"status"`
	Tier           Tier           `json:"tier"`
	Version        int            `json:"version"`
}

// RelationshipDetail is a traced relationship's current state with its predicate behaviour.
type RelationshipDetail struct {
	RelationshipSummary
	PredicateVersion   int                      `json:"predicate_version"`
	RelationshipKind   relationship.Kind        `json:"relationship_kind"`
	CurrentCardinality relationship.Cardinality `json:"current_cardinality"`
	// SourceCount is the number of independent source groups among its effective supports (a retired
	// fragment's support does not count).
	SourceCount int       `json:"source_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// TraceEvidence is one support link with its fragment.
type TraceEvidence struct {
	SupportID       string              `json:"support_id"`
	FragmentID      FragmentID          `json:"fragment_id"`
	ObservationID   string              `json:"observation_id"`
	VerificationID  string              `json:"verification_id"`
	Start           int                 `json:"start"`
	End             int                 `json:"end"`
	SourceType      evidence.SourceType `json:"source_type"`
	Authority       evidence.Authority  `json:"authority"`
	SourceGroup     string              `json:"source_group"`
	AuthorProfileID ProfileID           `json:"author_profile_id"`
	// ProfileID is the profile whose claim the support backs (the relationship's owner); Adopted is
	// true when that profile adopted another author's fragment (adopt_fragment_id): the fragment keeps
	// its author, provenance and source group.
	ProfileID ProfileID `json:"profile_id"`
	Adopted   bool      `json:"adopted,omitempty"`
	// Excerpt is the cited span and Content the whole fragment; both only with IncludeEvidenceContent,
	// and only while the response's content budget (Limits.MaxTraceContentBytes) lasts.
	Excerpt string `json:"excerpt,omitempty"`
	Content string `json:"content,omitempty"`
	// ContentOmitted reports that content was asked for but the budget was spent by the entries before
	// this one: this entry and every later one of the page leave Content and Excerpt empty, and the
	// evidence entry of TraceResult.Truncated resumes at the first of them, so its NextAfter returns
	// them again with their content.
	ContentOmitted bool `json:"content_omitted,omitempty"`
	// Erased reports that privacy erasure (Client.Erase) redacted the fragment's content: Content and
	// Excerpt stay empty whatever was asked, and the entry costs nothing of the content budget.
	Erased    bool      `json:"erased,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Retired is set when the fragment was retired (a newer source revision replaced it, or the
	// erasure workflow): the support stays in the history but no longer counts (DESIGN §6.2).
	Retired *TraceRetirement `json:"retired,omitempty"`
}

// TraceRetirement says why and when a support's fragment was retired: a retirement row, never an
// edit of the fragment.
type TraceRetirement struct {
	RetirementID string `json:"retirement_id"`
	// Cause is "source_revision" or "erasure".
	Cause string `json:"cause"`
	// ReplacedByFragmentID is the new revision's fragment that replaced it, if any.
	ReplacedByFragmentID FragmentID `json:"replaced_by_fragment_id,omitempty"`
	// ActorKind is "profile" (ActorProfileID's call retired it) or "host".
	ActorKind      string    `json:"actor_kind"`
	ActorProfileID ProfileID `json:"actor_profile_id,omitempty"`
	Reason         string    `json:"reason"`
	// IngestID is the call that retired it (a Remember's ingest for a source revision).
	IngestID  string    `json:"ingest_id"`
	RetiredAt time.Time `json:"retired_at"`
}

// TraceObservation is one immutable observation behind the relationship.
type TraceObservation struct {
	ObservationID   string          `json:"observation_id"`
	ProfileID       ProfileID       `json:"profile_id"`
	IngestID        string          `json:"ingest_id"`
	SubjectName     string          `json:"subject_name"`
	PredicatePhrase string          `json:"predicate_phrase"`
	PredicateKey    string          `json:"predicate_key,omitempty"`
	ObjectName      string          `json:"object_name"`
	Polarity        Polarity        `json:"polarity"`
	Modality        Modality        `json:"modality"`
	Scope           string          `json:"scope"`
	ValidFrom       *time.Time      `json:"valid_from,omitempty"`
	ValidTo         *time.Time      `json:"valid_to,omitempty"`
	Citations       json.RawMessage `json:"citations"`
	CreatedAt       time.Time       `json:"created_at"`
}

// TraceVerification is one verification event.
type TraceVerification struct {
	VerificationID     string     `json:"verification_id"`
	ObservationID      string     `json:"observation_id"`
	Verifier           string     `json:"verifier"`
	Verdict            Verdict    `json:"verdict"`
	Confidence         float64    `json:"confidence"`
	Rationale          string     `json:"rationale"`
	ConfirmedValidFrom *time.Time `json:"confirmed_valid_from,omitempty"`
	SupportGranted     bool       `json:"support_granted"`
	CreatedAt          time.Time  `json:"created_at"`
}

// TraceTransition is one relationship transition.
type TraceTransition struct {
	TransitionID          string         `json:"transition_id"`
	FromStatus            Status         `json:"from_status,omitempty"`
	ToStatus              Status         `json:"to_status"`
	FromTier              Tier           `json:"from_tier,omitempty"`
	ToTier                Tier           `json:"to_tier"`
	FromValidTo           *time.Time     `json:"from_valid_to,omitempty"`
	ToValidTo             *time.Time     `json:"to_valid_to,omitempty"`
	FromVersion           int            `json:"from_version,omitempty"`
	ToVersion             int            `json:"to_version"`
	Reason                string         `json:"reason"`
	ActorKind             string         `json:"actor_kind"`
	ActorProfileID        ProfileID      `json:"actor_profile_id,omitempty"`
	RelatedRelationshipID RelationshipID `json:"related_relationship_id,omitempty"`
	IngestID              string         `json:"ingest_id"`
	IdempotencyKey        string         `json:"idempotency_key"`
	// DecisionID names the client decision that made the transition, if one did: a Resolve (the
	// review item it resolved shows it in full), or a Split or Merge (the transition's reason is
	// "split:<decision_id>" or "merged:<decision_id>", and RelatedRelationshipID names the relationship
	// the statement was re-derived as, or, on a re-derived relationship's first transition, the one
	// it was re-derived from).
	DecisionID string    `json:"decision_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// IdentityResolution is one entity resolution event of the relationship's entities or of the
// observation that created it.
type IdentityResolution struct {
	ResolutionID  string            `json:"resolution_id"`
	ObservationID string            `json:"observation_id"`
	MentionRef    string            `json:"mention_ref"`
	MentionName   string            `json:"mention_name"`
	EntityKind    string            `json:"entity_kind"`
	EntityID      EntityID          `json:"entity_id,omitempty"`
	Decision      identity.Decision `json:"decision"`
	CandidateIDs  []EntityID        `json:"candidate_ids,omitempty"`
	// IdentityContext is the identity context the mention was stated with.
	IdentityContext map[string]string `json:"identity_context,omitempty"`
	// DistinctFromEntityIDs are the entities the caller's evidence showed the mention is not (its
	// distinct_from_entity_ids, or the candidates a confirm_new_entity decision set aside): a
	// relationship on this entity corrects the same statements of other owners on them (DESIGN §6.5).
	DistinctFromEntityIDs []EntityID `json:"distinct_from_entity_ids,omitempty"`
	ProfileID             ProfileID  `json:"profile_id"`
	CreatedAt             time.Time  `json:"created_at"`
}

// TraceReviewItem is one review item with the prompt (the exact choices) it was stored with: in
// Trace, one that names the traced relationship; in ListReviewItems (as ReviewItem), one of a
// profile's items.
type TraceReviewItem struct {
	ReviewID              string           `json:"review_id"`
	Kind                  string           `json:"kind"`
	Status                string           `json:"status"`
	IngestID              string           `json:"ingest_id"`
	PlacementItemID       string           `json:"placement_item_id"`
	ProfileID             ProfileID        `json:"profile_id"`
	ObservationID         string           `json:"observation_id"`
	RelationshipID        RelationshipID   `json:"relationship_id,omitempty"`
	RelatedRelationshipID []RelationshipID `json:"related_relationship_ids,omitempty"`
	Prompt                *ReviewPrompt    `json:"prompt"`
	CreatedAt             time.Time        `json:"created_at"`
	// ResolvedAt is when a resolved item was resolved (or a superseded one closed).
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// Decision is the decision that resolved the item, from the append-only decision ledger.
	Decision *TraceDecision `json:"decision,omitempty"`
	// Proposals are the vocabulary changes proposed on a predicate item (propose_vocabulary_change,
	// the 20 latest), for someone with the vocabulary scope; the item stays open meanwhile.
	Proposals []TraceDecision `json:"proposals,omitempty"`
}

// TraceDecision is one client decision on a review item (Resolve), as the decision ledger holds it.
type TraceDecision struct {
	DecisionID  string           `json:"decision_id"`
	ProfileID   ProfileID        `json:"profile_id"`
	Action      string           `json:"action"`
	Decision    *ResolveDecision `json:"decision,omitempty"`
	FragmentIDs []FragmentID     `json:"fragment_ids,omitempty"`
	Reason      string           `json:"reason,omitempty"`
	// Changes are the before and after of every relationship the decision changed.
	Changes        []RelationshipChange `json:"changes"`
	IngestID       string               `json:"ingest_id"`
	IdempotencyKey string               `json:"idempotency_key"`
	CreatedAt      time.Time            `json:"created_at"`
}

// TraceCrossReference is one cross-reference of the traced relationship.
type TraceCrossReference struct {
	CrossReferenceID   string         `json:"cross_reference_id"`
	Kind               string         `json:"kind"`
	Direction          string         `json:"direction"` // outgoing or incoming
	FromRelationshipID RelationshipID `json:"from_relationship_id"`
	FromVersion        int            `json:"from_version"`
	ToRelationshipID   RelationshipID `json:"to_relationship_id"`
	ToVersion          int            `json:"to_version"`
	AuthorProfileID    ProfileID      `json:"author_profile_id"`
	VerificationID     string         `json:"verification_id,omitempty"`
	CreatedAt          time.Time      `json:"created_at"`
}

// TraceConflict is a conflict case with its current positions and a page of its events.
type TraceConflict struct {
	ConflictID          string     `json:"conflict_id"`
	Kind                string     `json:"kind"`
	Status              string     `json:"status"`
	Version             int        `json:"version"`
	OpenedAt            time.Time  `json:"opened_at"`
	ReviewDueAt         time.Time  `json:"review_due_at"`
	ResolvedAt          *time.Time `json:"resolved_at,omitempty"`
	PreferredPositionID string     `json:"preferred_position_id,omitempty"`
	// EffectiveAt and EffectiveTimeBasis are the resolution's cutoff and how it was chosen
	// (evidence_time or recorded_fallback).
	EffectiveAt        *time.Time          `json:"effective_at,omitempty"`
	EffectiveTimeBasis string              `json:"effective_time_basis,omitempty"`
	Positions          []TraceCasePosition `json:"positions"`
	// Events are the case's events in case-version order, oldest first, at most TraceRequest.Limit
	// of them; when the case has more, Truncated names TraceConflictEventsList(ConflictID). The
	// case's current status, version and positions above are always its latest.
	Events []TraceConflictEvent `json:"events"`
}

// TraceCasePosition is one position of a case as its latest event records it.
type TraceCasePosition struct {
	PositionID string `json:"position_id"`
	// Object is the position's object with its name, as RecallPosition shows it (in an
	// identity_correction case, the entity its members are stated about).
	Object   ObjectView        `json:"object"`
	Polarity Polarity          `json:"polarity"`
	Members  []TraceCaseMember `json:"members"`
	// CountedSourceGroups is the number of independent source groups counted for the position
	// across the case, from its members' supports as recorded now: the count Recall's conflicts show
	// for a live case (copies count once; a group behind two positions counts for neither).
	CountedSourceGroups int `json:"counted_source_groups"`
	// CountedSourceGroupsUnknown reports that the case's members have more than
	// MaxTraceCaseSupports support links between them: Trace read only that many, did not count, and
	// CountedSourceGroups is 0 and not a count. Recall counts such a case while it is live.
	CountedSourceGroupsUnknown bool `json:"counted_source_groups_unknown,omitempty"`
}

// TraceCaseMember is one member relationship version of a position.
type TraceCaseMember struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	Version        int            `json:"version"`
	OwnerProfileID ProfileID      `json:"owner_profile_id"`
}

// TraceConflictEvent is one append-only case event.
type TraceConflictEvent struct {
	EventID         string    `json:"event_id"`
	CaseVersion     int       `json:"case_version"`
	PriorStatus     string    `json:"prior_status,omitempty"`
	ResultingStatus string    `json:"resulting_status"`
	ActorKind       string    `json:"actor_kind"`
	ActorProfileID  ProfileID `json:"actor_profile_id,omitempty"`
	Reason          string    `json:"reason"`
	PolicyVersion   int       `json:"policy_version"`
	TimeBasis       string    `json:"time_basis,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// Trace returns one page of the history of one relationship of the caller's team, whoever owns it:
// current state, evidence with spans (and content when asked), observations, verification events,
// transitions, identity resolution history, review items, cross-references, conflict cases and
// neighbouring active relationships. Every list is bounded by the request's Limit and every list cut
// short is named in Truncated with the cursor of its next page; all lists are read in one
// transaction, so they describe the same instant.
//
// Errors: *ValidationError, ErrForbidden (read scope), ErrNotFound (also for another team's ID).
func (c *Client) Trace(ctx context.Context, p Principal, req TraceRequest) (*TraceResult, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the request and its cursor.
	limit, after, err := validateTrace(&req, c.cfg.Limits)
	if err != nil {
		return nil, err
	}
	// 2. Authorise a read of the team.
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return nil, err
	}
	// 3. Read every list in one transaction, so they describe the same instant.
	d, err := c.store.TraceLoad(ctx, store.TraceLoadParams{Team: p.TeamID, RelationshipID: req.RelationshipID,
		IncludeContent: req.IncludeEvidenceContent, IncludeVerifications: req.IncludeVerification,
		IncludeTransitions: req.IncludeTransitions, MaxDepth: req.MaxDepth, MaxEdges: req.MaxEdges,
		Limit: limit, ContentBudget: c.cfg.Limits.MaxTraceContentBytes, CaseSupports: MaxTraceCaseSupports, After: after})
	if err != nil {
		return nil, err
	}
	// 4. Shape every list of the one snapshot, naming each list cut short with its next page's cursor.
	out := &TraceResult{Relationship: detail(d.Relationship), Evidence: []TraceEvidence{}, Observations: []TraceObservation{},
		IdentityResolutions: []IdentityResolution{}, ReviewItems: []TraceReviewItem{},
		CrossReferences: []TraceCrossReference{}, Conflicts: []TraceConflict{}, Neighbours: []RelationshipSummary{}, NeighboursTruncated: d.NeighboursTruncated}
	out.Relationship.SourceCount, _ = evidence.CountGroups(d.SupportKeys)
	out.addEvidence(d, req.IncludeEvidenceContent, c.cfg.Limits.MaxTraceContentBytes)
	out.addLedger(d)
	out.addCrossReferences(d, req.RelationshipID)
	out.addConflicts(d)
	for _, n := range d.Neighbours {
		out.Neighbours = append(out.Neighbours, summary(n))
	}
	return out, nil
}

// addEvidence lists the page's supports: content while the budget lasts (the store cut it by stored
// lengths; the bytes themselves are counted again here), then none for the rest of the page.
func (out *TraceResult) addEvidence(d store.TraceData, content bool, budget int) {
	omitFrom := -1
	for i, s := range d.Supports {
		te := TraceEvidence{SupportID: s.ID, FragmentID: s.FragmentID, ObservationID: s.ObservationID,
			VerificationID: s.VerificationID, Start: s.Start, End: s.End, SourceType: s.SourceType, Authority: s.Authority,
			SourceGroup: s.SourceGroup, AuthorProfileID: s.Author, ProfileID: s.Profile, Adopted: s.Profile != s.Author,
			CreatedAt: s.CreatedAt, Erased: s.Erased}
		if r := s.Retirement; r != nil {
			te.Retired = &TraceRetirement{RetirementID: r.ID, Cause: r.Cause, ReplacedByFragmentID: r.ReplacedBy,
				ActorKind: r.ActorKind, ActorProfileID: r.ActorProfile, Reason: r.Reason, IngestID: r.IngestID, RetiredAt: r.CreatedAt}
		}
		if content && !s.Erased {
			fits := omitFrom < 0 && !s.ContentOmitted && s.End <= len(s.Content) && len(s.Content)+s.End-s.Start <= budget
			switch {
			case fits:
				te.Content, te.Excerpt = s.Content, s.Content[s.Start:s.End]
				budget -= len(te.Content) + len(te.Excerpt)
			case omitFrom >= 0 || s.ContentOmitted || len(s.Content)+s.End-s.Start > budget:
				te.ContentOmitted = true
				if omitFrom < 0 {
					omitFrom = i
				}
			}
		}
		out.Evidence = append(out.Evidence, te)
	}
	if omitFrom > 0 {
		// Resume at the first entry without its content, so the next page carries it.
		out.truncate(TraceListEvidence, len(out.Evidence), &d.Supports[omitFrom-1].Key)
	} else {
		out.truncate(TraceListEvidence, len(out.Evidence), d.Next.Supports)
	}
}

// addLedger lists the relationship's append-only history: observations, verification events,
// transitions, identity resolutions and review items.
func (out *TraceResult) addLedger(d store.TraceData) {
	for _, o := range d.Observations {
		out.Observations = append(out.Observations, TraceObservation{ObservationID: o.ID, ProfileID: o.Profile,
			IngestID: o.IngestID, SubjectName: o.SubjectName, PredicatePhrase: o.PredicatePhrase, PredicateKey: o.PredicateKey,
			ObjectName: o.ObjectName, Polarity: o.Polarity, Modality: o.Modality, Scope: o.Scope, ValidFrom: o.ValidFrom,
			ValidTo: o.ValidTo, Citations: o.Citations, CreatedAt: o.CreatedAt})
	}
	out.truncate(TraceListObservations, len(out.Observations), d.Next.Observations)
	for _, v := range d.Verifications {
		out.Verifications = append(out.Verifications, TraceVerification{VerificationID: v.ID, ObservationID: v.ObservationID,
			Verifier: v.Verifier, Verdict: v.Verdict, Confidence: v.Confidence, Rationale: v.Rationale,
			ConfirmedValidFrom: v.ConfirmedValidFrom, SupportGranted: v.SupportGranted, CreatedAt: v.CreatedAt})
	}
	out.truncate(TraceListVerifications, len(out.Verifications), d.Next.Verifications)
	for _, t := range d.Transitions {
		out.Transitions = append(out.Transitions, TraceTransition{TransitionID: t.ID, FromStatus: t.FromStatus,
			ToStatus: t.ToStatus, FromTier: t.FromTier, ToTier: t.ToTier, FromValidTo: t.FromValidTo, ToValidTo: t.ToValidTo,
			FromVersion: t.FromVersion, ToVersion: t.ToVersion, Reason: t.Reason, ActorKind: t.ActorKind,
			ActorProfileID: t.ActorProfile, RelatedRelationshipID: t.Related, IngestID: t.IngestID,
			IdempotencyKey: t.IdempotencyKey, DecisionID: d.TransitionDecisions[t.ID], CreatedAt: t.CreatedAt})
	}
	if d.Next.Transitions > 0 {
		out.Truncated = append(out.Truncated, TraceTruncation{List: TraceListTransitions, Returned: len(out.Transitions),
			NextAfter: traceCursor{List: TraceListTransitions, Version: d.Next.Transitions}.encode()})
	}
	for _, r := range d.Resolutions {
		out.IdentityResolutions = append(out.IdentityResolutions, IdentityResolution{ResolutionID: r.ID,
			ObservationID: r.ObservationID, MentionRef: r.MentionRef, MentionName: r.MentionName, EntityKind: r.EntityKind,
			EntityID: r.EntityID, Decision: r.Decision, CandidateIDs: r.Candidates, IdentityContext: r.Context,
			DistinctFromEntityIDs: r.DistinctFrom, ProfileID: r.Profile, CreatedAt: r.CreatedAt})
	}
	out.truncate(TraceListIdentityResolutions, len(out.IdentityResolutions), d.Next.Resolutions)
	for _, ri := range d.ReviewItems {
		out.ReviewItems = append(out.ReviewItems, reviewItem(ri))
	}
	out.truncate(TraceListReviewItems, len(out.ReviewItems), d.Next.ReviewItems)
}

// addCrossReferences lists the cross-references from and to relationship id.
func (out *TraceResult) addCrossReferences(d store.TraceData, id relationship.ID) {
	for _, x := range d.CrossReferences {
		dir := "outgoing"
		if x.To == id {
			dir = "incoming"
		}
		out.CrossReferences = append(out.CrossReferences, TraceCrossReference{CrossReferenceID: x.ID, Kind: x.Kind,
			Direction: dir, FromRelationshipID: x.From, FromVersion: x.FromVersion, ToRelationshipID: x.To,
			ToVersion: x.ToVersion, AuthorProfileID: x.Author, VerificationID: x.VerificationID, CreatedAt: x.CreatedAt})
	}
	out.truncate(TraceListCrossReferences, len(out.CrossReferences), d.Next.CrossReferences)
}

// addConflicts lists the cases the relationship has been a member of, each with its positions and
// a page of its events; the cases' own event lists cut short are named after the case list.
func (out *TraceResult) addConflicts(d store.TraceData) {
	var eventCuts []TraceTruncation
	for _, tc := range d.Cases {
		tcv := traceConflict(tc)
		if tc.EventsNext > 0 {
			list := TraceConflictEventsList(tcv.ConflictID)
			eventCuts = append(eventCuts, TraceTruncation{List: list, Returned: len(tcv.Events),
				NextAfter: traceCursor{List: list, Version: tc.EventsNext}.encode()})
		}
		out.Conflicts = append(out.Conflicts, tcv)
	}
	out.truncate(TraceListConflicts, len(out.Conflicts), d.Next.Cases)
	out.Truncated = append(out.Truncated, eventCuts...)
}

// traceConflict is one case as Trace shows it: its positions with their counted groups (unknown when
// the supports read was cut short) and members, and its events.
func traceConflict(tc store.TraceCase) TraceConflict {
	cs := tc.Case
	tcv := TraceConflict{ConflictID: string(cs.ID), Kind: string(cs.Kind), Status: string(cs.Status), Version: cs.Version,
		OpenedAt: cs.OpenedAt, ReviewDueAt: cs.ReviewDueAt, ResolvedAt: cs.ResolvedAt, PreferredPositionID: string(cs.Preferred),
		EffectiveAt: cs.EffectiveAt, EffectiveTimeBasis: cs.TimeBasis,
		Positions: []TraceCasePosition{}, Events: []TraceConflictEvent{}}
	var groups []int
	if !tc.SupportsTruncated {
		groups = countedGroups(cs, func(id relationship.ID) []evidence.Support { return tc.MemberSupports[id] })
	}
	for i, pos := range cs.Positions {
		tp := TraceCasePosition{PositionID: string(pos.PositionID), Object: objectView(pos.Object, tc.Objects[pos.PositionID]),
			Polarity: pos.Polarity, CountedSourceGroupsUnknown: tc.SupportsTruncated}
		if groups != nil {
			tp.CountedSourceGroups = groups[i]
		}
		for _, m := range pos.Members {
			tp.Members = append(tp.Members, TraceCaseMember{RelationshipID: m.RelationshipID, Version: m.Version, OwnerProfileID: m.Owner})
		}
		tcv.Positions = append(tcv.Positions, tp)
	}
	for _, e := range tc.Events {
		tcv.Events = append(tcv.Events, TraceConflictEvent{EventID: e.ID, CaseVersion: e.CaseVersion,
			PriorStatus: string(e.PriorStatus), ResultingStatus: string(e.ResultingStatus), ActorKind: e.ActorKind,
			ActorProfileID: e.ActorProfile, Reason: e.Reason, PolicyVersion: e.PolicyVersion, TimeBasis: e.TimeBasis,
			CreatedAt: e.CreatedAt})
	}
	return tcv
}

// truncate records, when next is set, that list goes on after the returned items, from next.
func (r *TraceResult) truncate(list string, returned int, next *store.TraceKey) {
	if next == nil {
		return
	}
	c := traceCursor{List: list, At: next.At, IDs: next.IDs}
	r.Truncated = append(r.Truncated, TraceTruncation{List: list, Returned: returned, NextAfter: c.encode()})
}
