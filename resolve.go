package densemem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

const opResolve = "resolve"

// Review actions: what a client may decide on a review item. Remember, Trace and ListReviewItems
// name the ones an item offers in its choices; Resolve carries one out.
const (
	ActionSelectEntity            = "select_entity"
	ActionConfirmNewEntity        = "confirm_new_entity"
	ActionSelectPredicate         = "select_predicate"
	ActionRejectMapping           = "reject_mapping"
	ActionProposeVocabularyChange = "propose_vocabulary_change"
	ActionAccept                  = ledger.ActionAccept
	ActionReject                  = ledger.ActionReject
	ActionCorrect                 = ledger.ActionCorrect
	ActionForget                  = ledger.ActionForget
	ActionSupersedePrior          = ledger.ActionSupersedePrior
	ActionKeepPriorRejectNew      = ledger.ActionKeepPriorRejectNew
	ActionBothValid               = ledger.ActionBothValid
	ActionAddEvidence             = "add_evidence"
)

// ResolveRequest is a client's decision on one review item, named by the placement that issued it
// (IngestID and PlacementItemID, as Remember returned them). It uses the specification's field names.
type ResolveRequest struct {
	IngestID        string `json:"ingest_id"`
	PlacementItemID string `json:"placement_item_id"`
	// Action is one of the item's choices (ActionSupersedePrior, …); ActionForget is allowed on every
	// item about a relationship.
	Action   string           `json:"action"`
	Decision *ResolveDecision `json:"decision,omitempty"`
	// Evidence is the user's evidence for the decision, stored verbatim with its provenance and
	// linked from the decision row, whatever the action. add_evidence, correct and confirm_new_entity
	// need it. It supports a statement only where the action makes one current and the verifier
	// grants it: add_evidence and accept (the item's statement), correct (the corrected one),
	// supersede_prior (the held statement), keep_prior_reject_new (the one prior the item names).
	Evidence []EvidenceInput `json:"evidence,omitempty"`
	// Proposal is the corrected statement of a correct decision; no other action takes one.
	Proposal *Proposal `json:"proposal,omitempty"`
	// IdempotencyKey is required; a retry with the same key and request replays the first result.
	IdempotencyKey string `json:"idempotency_key"`
}

// ResolveDecision is the decision's detail: the entity or predicate chosen, the identities a new
// entity is distinct from, and the caller's reason.
type ResolveDecision struct {
	MentionRef            string     `json:"mention_ref,omitempty"`
	EntityID              EntityID   `json:"entity_id,omitempty"`
	DistinctFromEntityIDs []EntityID `json:"distinct_from_entity_ids,omitempty"`
	PredicateKey          string     `json:"predicate_key,omitempty"`
	Reason                string     `json:"reason,omitempty"`
	// Scope, or ValidFrom and/or ValidTo, is what makes both_valid hold: the held statement is true
	// in another scope, or in its own time [ValidFrom, ValidTo) — a bound left out keeps the
	// statement's own — which must not overlap the prior's validity. Both stay current; the prior is
	// never superseded or shortened.
	Scope     *string    `json:"scope,omitempty"`
	ValidFrom *time.Time `json:"valid_from,omitempty"`
	ValidTo   *time.Time `json:"valid_to,omitempty"`
}

// ResolveResult reports a decision: the appended decision row, the item it resolved, and the before
// and after of every relationship it changed.
type ResolveResult struct {
	DecisionID string               `json:"decision_id"`
	IngestID   string               `json:"ingest_id"`
	ReviewID   string               `json:"review_id"`
	Action     string               `json:"action"`
	Changes    []RelationshipChange `json:"changes"`
	// Outcome is the placement of the decision's evidence (add_evidence): the verifier's verdict and
	// where the restated relationship went. Evidence that grants no support leaves the item open.
	Outcome *RelationshipOutcome `json:"outcome,omitempty"`
	// FragmentIDs are the fragments stored for the decision's evidence, in request order.
	FragmentIDs []FragmentID `json:"fragment_ids,omitempty"`
	// CrossReferences are the links written from a relationship the decision made current to other
	// owners' relationships of its key.
	CrossReferences []CrossReferenceOutcome `json:"cross_references,omitempty"`
	// Conflict names the team conflict case of the decided key after the decision, if it has one.
	Conflict *ConflictRef `json:"conflict,omitempty"`
	// ReviewItems are the items the decision issued: the new questions of the caller's statements
	// held on the decided key whose question the decision moved (DESIGN §6.7).
	ReviewItems []AskedItem `json:"review_items,omitempty"`
	Replayed    bool        `json:"replayed"`
}

// AskedItem is a review item a call issued because it moved the question of one of the caller's held
// statements (DESIGN §6.7): Resolve names it by IngestID and PlacementItemID; Review is its prompt.
type AskedItem struct {
	RelationshipID  RelationshipID `json:"relationship_id"`
	IngestID        string         `json:"ingest_id"`
	PlacementItemID string         `json:"placement_item_id"`
	Review          *ReviewPrompt  `json:"review"`
}

// askedItems lists the items a transaction issued (ledger.Settle), in relationship order.
func askedItems(asked map[relationship.ID]ledger.Asked) []AskedItem {
	out := make([]AskedItem, 0, len(asked))
	for _, a := range asked {
		out = append(out, AskedItem{RelationshipID: a.RelationshipID, IngestID: a.IngestID, PlacementItemID: a.PlacementItemID,
			Review: a.Review})
	}
	slices.SortFunc(out, func(a, b AskedItem) int { return strings.Compare(string(a.RelationshipID), string(b.RelationshipID)) })
	if len(out) == 0 {
		return nil
	}
	return out
}

// Resolve carries out the caller's decision on one of its open review items. In one transaction it
// changes only the caller's relationships the item asks about (each with a transition naming the
// decision), repairs their key's team case, resolves the item, and appends the decision — actor,
// time, item, action, evidence, idempotency key and the before and after of every change — to the
// append-only decision ledger. Items about a relationship a change took out of review close as
// superseded, and held statements whose question the decision moved are re-planned or asked again
// (ResolveResult.ReviewItems). The actions that bring evidence or state a claim again (add_evidence,
// correct, both_valid, select_entity, confirm_new_entity, select_predicate, and supersede_prior or
// keep_prior_reject_new with evidence) place it as a Remember would — one verifier call, the
// support gate, the same-owner lifecycle — in the decision's transaction; a decision never grants
// support by itself. Evidence given to any other action is stored and linked from the decision.
//
// Errors: *ValidationError (bad fields, an action the item does not offer, a candidate or predicate
// it did not offer), ErrForbidden, ErrNotFound (no such item in the team), ErrNotOwner (another
// profile's item), ErrStaleDecision (decided already, or its relationships changed since it was
// issued), ErrIdempotencyConflict, ErrVerifier, ErrErased (the item's observation cites erased evidence, so
// select_entity, confirm_new_entity and select_predicate cannot restate it). Nothing is written on any error.
func (c *Client) Resolve(ctx context.Context, p Principal, req ResolveRequest) (*ResolveResult, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the request.
	if err := validateResolve(req, c.cfg.Limits); err != nil {
		return nil, err
	}
	// 2. Authorise a write; a retry with a used key replays its stored result.
	pr, err := c.authorize(ctx, p, identity.ScopeWrite)
	if err != nil {
		return nil, err
	}
	hash := requestHash(opResolve, req)
	if rec, err := c.store.IdempotencyGet(ctx, p.TeamID, p.ProfileID, req.IdempotencyKey); err != nil {
		return nil, err
	} else if rec != nil {
		return replayResolve(rec, hash)
	}
	// 3. The item is the caller's, still open, and offers the action.
	item, err := c.store.ReviewItemGet(ctx, p.TeamID, req.IngestID, req.PlacementItemID)
	if err != nil {
		return nil, err
	}
	if err := decidable(item, p, req.Action); err != nil {
		return nil, err
	}
	// 4. Evidence goes through Remember's pipeline; the other actions decide on the key of the item's
	// relationship in one transaction.
	switch {
	case req.Action == ActionAddEvidence, req.Action == ActionAccept && len(req.Evidence) > 0,
		req.Action == ActionSupersedePrior && len(req.Evidence) > 0:
		return c.resolveWithEvidence(ctx, p, req, hash, item, item.RelationshipID)
	case req.Action == ActionKeepPriorRejectNew && len(req.Evidence) > 0 && len(item.Related) == 1:
		return c.resolveWithEvidence(ctx, p, req, hash, item, relationship.ID(item.Related[0]))
	case slices.Contains([]string{ActionSelectEntity, ActionConfirmNewEntity, ActionSelectPredicate, ActionBothValid}, req.Action):
		return c.resolveObservation(ctx, p, req, hash, item)
	case req.Action == ActionCorrect:
		return c.placeDecision(ctx, p, req, hash, item, correction(req, item), "")
	case req.Action == ActionRejectMapping, req.Action == ActionProposeVocabularyChange:
		return c.resolveWithoutChange(ctx, p, req, hash, item)
	}
	rel, err := c.store.RelationshipGet(ctx, p.TeamID, item.RelationshipID)
	if err != nil {
		return nil, err
	}
	now := c.now()
	var result *ResolveResult
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		result, err = c.decide(ctx, tx, p, pr.Policy, req, hash, rel, now)
		return err
	})
	if errors.Is(err, ErrStaleVersion) {
		return nil, fmt.Errorf("%w: review item %s", ErrStaleDecision, item.ID)
	}
	if err != nil {
		return nil, err
	}
	return result, nil
}

// decidable checks that p may decide item with action: its own item, still open, offering the action
// (forget: any item about a relationship). Resolve carries out every action an item offers.
func decidable(item store.ReviewItem, p Principal, action string) error {
	if item.Profile != p.ProfileID {
		return fmt.Errorf("%w: review item %s belongs to profile %s", ErrNotOwner, item.ID, item.Profile)
	}
	if item.Status != store.ReviewOpen {
		return fmt.Errorf("%w: review item %s is %s", ErrStaleDecision, item.ID, item.Status)
	}
	var prompt ReviewPrompt
	if err := json.Unmarshal(item.Choices, &prompt); err != nil {
		return fmt.Errorf("%w: review item %s: choices: %v", ErrInternal, item.ID, err)
	}
	offered := []string{}
	for _, ch := range prompt.Choices {
		offered = append(offered, ch.Action)
	}
	if item.RelationshipID != "" {
		offered = append(offered, ActionForget)
	}
	var ps problems
	if !slices.Contains(offered, action) {
		ps.Add("action", "review item %s offers %v, not%s", item.ID, offered, quoted(action, 64))
	}
	return ps.Err()
}

// decide is Resolve's transaction: under the idempotency key's lock, its key's lock and the item's
// row lock, it checks the item still asks its question, carries out the action, maintains the key's
// case, resolves the item with the decision row, and stores the result under the idempotency key.
func (c *Client) decide(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, req ResolveRequest, hash string,
	rel relationship.Relationship, now time.Time) (*ResolveResult, error) {
	// The key's lock before the item's row: Remember and Forget close items at write time, under
	// their key locks, so the same order everywhere cannot deadlock.
	k, err := c.lockKey(ctx, tx, p, policy, req.IdempotencyKey, rel, now)
	if err != nil {
		return nil, err
	}
	if k.stored != nil {
		return replayResolve(k.stored, hash)
	}
	item, err := tx.ReviewItemLock(ctx, p.TeamID, req.IngestID, req.PlacementItemID)
	if err != nil {
		return nil, err
	}
	l, ks := k.l, k.ks
	if err := stillAsked(item, ks.Find, ks.Priors, p); err != nil {
		return nil, err
	}
	res := &ResolveResult{DecisionID: c.newID("dec", now), IngestID: l.IngestID, ReviewID: item.ID, Action: req.Action}
	// The decision's evidence documents it: stored verbatim with its provenance, cited by nothing.
	fragments := decisionFragments(l, p, req.Evidence)
	for _, f := range fragments {
		res.FragmentIDs = append(res.FragmentIDs, FragmentID(f))
	}
	held := ks.Find(item.RelationshipID)
	res.CrossReferences = crossReferenceOutcomes(l.Carry(ks, held, relatedIDs(item), req.Action, callerReason(req, "")))
	res.ReviewItems = askedItems(l.Settle()) // held statements whose question the decision moved (DESIGN §6.7)
	if ref := l.Maintain(ks); ref != nil {
		res.Conflict = &ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
	}
	l.MaintainIdentities()
	// A bare accept grants nothing: the decision is recorded and the question stays open.
	return res, c.recordDecision(ctx, tx, l, p, req, hash, item, res, recorded{keepOpen: req.Action == ActionAccept,
		fragments: fragments})
}

// decisionFragments stores evidence, a decision's own that supports nothing, as fragments of the
// decision's ingest authored by p, and returns their IDs in request order.
func decisionFragments(l *ledger.Ledger, p Principal, evidence []EvidenceInput) []string {
	if len(evidence) == 0 {
		return nil
	}
	rows := placement.Fragments(p.TeamID, p.ProfileID, l.IngestID, evidence, l.Now, l.NewID)
	l.WS.Fragments = append(l.WS.Fragments, rows...)
	ids := make([]string, len(rows))
	for i, f := range rows {
		ids[i] = string(f.ID)
	}
	return ids
}

// stillAsked checks that item still asks its question (DESIGN §6.7: an item is answerable only while
// everything it asked about is unchanged): it is open; the relationship it asks about is the caller's,
// still in review, at the version it was issued for; every related relationship is the caller's,
// current, at its version; and, for a held statement, the caller's current relationships it
// contradicts (priorsOf) are exactly the related ones. Versions 0 were not recorded (items issued
// before migration 11) and are not compared.
func stillAsked(item store.ReviewItem, find func(relationship.ID) *relationship.Relationship,
	priorsOf func(*relationship.Relationship) []*relationship.Relationship, p Principal) error {
	stale := func(why string, args ...any) error {
		return fmt.Errorf("%w: review item %s: %s", ErrStaleDecision, item.ID, fmt.Sprintf(why, args...))
	}
	if item.Status != store.ReviewOpen {
		return stale("it is %s", item.Status)
	}
	if item.RelationshipID == "" {
		return nil // an item about an observation: its question is open while the item is
	}
	held := find(item.RelationshipID)
	switch {
	case held == nil:
		return stale("relationship %s is not on the item's key", item.RelationshipID)
	case held.Owner != p.ProfileID:
		return fmt.Errorf("%w: relationship %s belongs to profile %s", ErrNotOwner, held.ID, held.Owner)
	case held.Status != relationship.StatusNeedsReview && held.Status != relationship.StatusPendingEvidence:
		return stale("relationship %s is %s, no longer in review", held.ID, held.Status)
	case item.RelationshipVersion != 0 && item.RelationshipVersion != held.Version:
		return stale("relationship %s moved from version %d to %d since the item was issued", held.ID, item.RelationshipVersion, held.Version)
	}
	for i, id := range item.Related {
		r := find(relationship.ID(id))
		switch {
		case r == nil:
			return stale("relationship %s is not on the item's key", id)
		case r.Owner != p.ProfileID:
			return fmt.Errorf("%w: relationship %s belongs to profile %s", ErrNotOwner, r.ID, r.Owner)
		case i < len(item.RelatedVersions) && item.RelatedVersions[i] != 0 && item.RelatedVersions[i] != r.Version:
			return stale("relationship %s moved from version %d to %d since the item was issued", id, item.RelatedVersions[i], r.Version)
		case r.Status != relationship.StatusActive:
			return stale("relationship %s is %s, no longer current", id, r.Status)
		}
	}
	if held.Status == relationship.StatusNeedsReview && priorsOf != nil {
		for _, prior := range priorsOf(held) {
			if !slices.Contains(item.Related, string(prior.ID)) {
				return stale("relationship %s of yours is current now and contradicts %s: the question changed", prior.ID, held.ID)
			}
		}
	}
	return nil
}

func crossReferenceOutcomes(rows []store.CrossReferenceRow) []CrossReferenceOutcome {
	var out []CrossReferenceOutcome
	for _, x := range rows {
		out = append(out, CrossReferenceOutcome{CrossReferenceID: x.ID, Kind: x.Kind, ToRelationshipID: x.To})
	}
	return out
}

// relatedIDs returns the relationships an item names as related.
func relatedIDs(item store.ReviewItem) []relationship.ID {
	out := make([]relationship.ID, len(item.Related))
	for i, id := range item.Related {
		out[i] = relationship.ID(id)
	}
	return out
}

// recorded is what a decision's record holds besides the request: the reason when the caller gave
// none, the fragments stored for its evidence, and whether it leaves its item open.
type recorded struct {
	reason    string
	fragments []string
	keepOpen  bool
}

// recordDecision appends req's decision on item (ledger.Decide: the decision row with every change l
// recorded, the item resolved unless rec.keepOpen), records res under the idempotency key, and writes
// the transaction's rows.
func (c *Client) recordDecision(ctx context.Context, tx store.Tx, l *ledger.Ledger, p Principal, req ResolveRequest,
	hash string, item store.ReviewItem, res *ResolveResult, rec recorded) error {
	body, err := json.Marshal(req.Decision)
	if err != nil {
		return err
	}
	changes, err := l.Decide(ledger.Decision{ID: res.DecisionID, Item: item, Action: req.Action, Body: body,
		FragmentIDs: rec.fragments, Reason: callerReason(req, rec.reason), KeepOpen: rec.keepOpen})
	if err != nil {
		return err
	}
	res.Changes = changes
	result, err := json.Marshal(res)
	if err != nil {
		return err
	}
	l.WS.Idempotency = &store.IdempotencyRow{Team: p.TeamID, Profile: p.ProfileID, Key: req.IdempotencyKey,
		Operation: opResolve, RequestHash: hash, IngestID: l.IngestID, Result: result, CreatedAt: l.Now}
	return tx.WriteSetApply(ctx, l.WS)
}

// callerReason is the reason a decision records: the caller's, else fallback.
func callerReason(req ResolveRequest, fallback string) string {
	if req.Decision != nil && req.Decision.Reason != "" {
		return req.Decision.Reason
	}
	return fallback
}

// replayResolve returns the result stored under the request's idempotency key.
func replayResolve(rec *store.IdempotencyRecord, hash string) (*ResolveResult, error) {
	out, err := replayed[ResolveResult](rec, opResolve, hash, "resolve result")
	if err == nil {
		out.Replayed = true
	}
	return out, err
}
