package densemem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The Resolve actions that place a claim: add_evidence states the item's relationship again with
// the decision's evidence; select_entity, confirm_new_entity and select_predicate place the item's
// observation again with the choice; correct places the corrected statement. Each goes through Remember's pipeline (one verifier call, the
// support gate, the same-owner decision of DESIGN §6.4) in one transaction with the decision. And
// the actions that change no relationship: reject_mapping and propose_vocabulary_change.

// resolveWithEvidence carries out a decision whose evidence states target again, cited whole: for
// add_evidence and accept the item's relationship (support resolves the item; evidence that grants
// none is recorded with the decision and leaves the item open); for supersede_prior the held
// statement it makes current, and for keep_prior_reject_new the prior it keeps — the decision is
// carried out whatever the verifier grants, and the evidence supports the statement only when it
// grants support.
func (c *Client) resolveWithEvidence(ctx context.Context, p Principal, req ResolveRequest, hash string,
	item store.ReviewItem, target relationship.ID) (*ResolveResult, error) {
	details, err := c.store.RecallDetails(ctx, store.RecallDetailsParams{Team: p.TeamID,
		Relationships: []relationship.ID{target}})
	if err != nil {
		return nil, err
	}
	if len(details.Views) != 1 {
		return nil, fmt.Errorf("%w: relationship %s", ErrNotFound, target)
	}
	return c.placeDecision(ctx, p, req, hash, item, restatement(req, details.Views[0]), target)
}

// resolveObservation carries out select_entity, confirm_new_entity and select_predicate: the item's
// observation, its claim cited in the evidence it was first cited in (stored again, in its source
// group, so it never counts twice), placed again with the chosen entity, a new entity distinct from
// every candidate, or the chosen registered predicate. The decision's own
// evidence, if any, is stored with it. The item resolves whatever the placement's outcome: a new
// question (another ambiguous mention, evidence too weak) is a new item.
func (c *Client) resolveObservation(ctx context.Context, p Principal, req ResolveRequest, hash string,
	item store.ReviewItem) (*ResolveResult, error) {
	obs, err := c.store.ObservationGet(ctx, p.TeamID, item.ObservationID)
	if err != nil {
		return nil, err
	}
	rr, err := observationRestatement(req, item, obs)
	if err != nil {
		return nil, err
	}
	var also []conflict.Key
	if req.Action == ActionBothValid { // the statement it replaces stays on its key, in review
		rel, err := c.store.RelationshipGet(ctx, p.TeamID, item.RelationshipID)
		if err != nil {
			return nil, err
		}
		also = []conflict.Key{{Team: p.TeamID, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope}}
	}
	return c.placeDecision(ctx, p, req, hash, item, rr, "", also...)
}

// placeDecision places rr (a restatement made for the decision req) and records the decision, all in
// one transaction; restates is the relationship rr states again, if any, and also the conflict keys
// the decision changes besides rr's.
func (c *Client) placeDecision(ctx context.Context, p Principal, req ResolveRequest, hash string, item store.ReviewItem,
	rr RememberRequest, restates relationship.ID, also ...conflict.Key) (*ResolveResult, error) {
	// 1. The restatement is a Remember request like any other, but for the decision's own evidence
	// of an identity or predicate choice: stored with the claim, cited by none of it (it says which
	// entity or predicate is meant, not the claim), and validated with the Resolve request.
	var uncited []EvidenceInput
	if slices.Contains([]string{ActionSelectEntity, ActionConfirmNewEntity, ActionSelectPredicate, ActionBothValid}, req.Action) {
		rr.Evidence, uncited = rr.Evidence[:len(rr.Evidence)-len(req.Evidence)], req.Evidence
	}
	if err := validateRemember(&rr, c.cfg.Limits); err != nil {
		return nil, err
	}
	rr.Evidence = append(rr.Evidence, uncited...)
	normalizeTimes(&rr)
	in := placement.NewIntake(&rr, p.ProfileID)
	// 2. What the placement plans from, and the one verifier call, outside the transaction.
	prep, err := c.preparePlacement(ctx, p, req.IdempotencyKey, in, nil)
	if err != nil {
		return nil, err
	}
	if err := in.CheckKnown(prep.Known); err != nil {
		return nil, err
	}
	if err := in.CheckAdopted(prep.Adoptable); err != nil {
		return nil, err
	}
	verdicts, err := c.verify(ctx, in.Claims(prep.Predicates, prep.Candidates, prep.Known))
	if err != nil {
		return nil, err
	}
	// 3. Place and decide in one transaction.
	params := placement.Params{Team: p.TeamID, Profile: p.ProfileID, Request: &rr, Intake: in, Now: c.now(),
		Policy: prep.Principal.Policy, Predicates: prep.Predicates, Verdicts: verdicts, Verifier: c.cfg.Verifier.Name(),
		Hash: hash, NewID: c.newID, Restates: restates, AlsoLock: also}
	var result *ResolveResult
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		result, err = c.decidePlaced(ctx, tx, p, params, req)
		return err
	})
	if errors.Is(err, ErrStaleVersion) {
		return nil, fmt.Errorf("%w: review item %s", ErrStaleDecision, item.ID)
	}
	return result, err
}

// decidePlaced is a placing decision's transaction: the placement's locks, then the item's row; the
// item must still ask its question; the placement's rows, the decision, and the result under the
// idempotency key.
func (c *Client) decidePlaced(ctx context.Context, tx store.Tx, p Principal, params placement.Params,
	req ResolveRequest) (*ResolveResult, error) {
	pl, kl, rec, err := c.lockPlacement(ctx, tx, p, params, false)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return replayResolve(rec, params.Hash)
	}
	item, err := tx.ReviewItemLock(ctx, p.TeamID, req.IngestID, req.PlacementItemID)
	if err != nil {
		return nil, err
	}
	find := func(id relationship.ID) *relationship.Relationship {
		for i := range kl.Relationships {
			if kl.Relationships[i].ID == id {
				return &kl.Relationships[i]
			}
		}
		return nil
	}
	if err := checkBothValid(req, params.Request, item, find); err != nil {
		return nil, err
	}
	if req.Action == ActionCorrect && find(item.RelationshipID) == nil {
		var ps problems
		ps.Add("proposal", "a correction must state the subject, predicate and scope of relationship %s", item.RelationshipID)
		return nil, ps.Err()
	}
	if err := stillAsked(item, find, priorsIn(kl, params.Predicates), p); err != nil {
		return nil, err
	}
	var carried []store.CrossReferenceRow
	pl.Decided = func(l *ledger.Ledger) { carried = carryDecision(l, kl, item, req) }
	l, out, err := pl.Rows(kl)
	if err != nil {
		return nil, err
	}
	outcome := out.RelationshipOutcomes[0]
	res := &ResolveResult{DecisionID: c.newID("dec", params.Now), IngestID: out.IngestID, ReviewID: item.ID,
		Action: req.Action, Outcome: &outcome, CrossReferences: append(outcome.CrossReferences, crossReferenceOutcomes(carried)...),
		Conflict: outcome.Conflict}
	keepOpen := (req.Action == ActionAddEvidence || req.Action == ActionAccept) && outcome.Category == CategoryPendingEvidence
	what := recorded{reason: outcome.Reason, keepOpen: keepOpen}
	for _, f := range out.Fragments {
		res.FragmentIDs = append(res.FragmentIDs, f.FragmentID)
		what.fragments = append(what.fragments, string(f.FragmentID))
	}
	res.ReviewItems = askedItems(l.Settle())
	return res, c.recordDecision(ctx, tx, l, p, req, params.Hash, item, res, what)
}

// priorsIn returns the function that finds, among the relationships kl locked, the owner's current
// relationships a held statement contradicts (ledger.KeyState.Priors on its key).
func priorsIn(kl store.KeysLocked, preds []relationship.Predicate) func(*relationship.Relationship) []*relationship.Relationship {
	return func(held *relationship.Relationship) []*relationship.Relationship {
		pred, _ := relationship.MatchPredicate(held.PredicateKey, preds)
		ks := &ledger.KeyState{Pred: pred}
		for i := range kl.Relationships {
			r := &kl.Relationships[i]
			if r.Subject == held.Subject && r.PredicateKey == held.PredicateKey && r.Scope == held.Scope {
				ks.Rels = append(ks.Rels, r)
			}
		}
		return ks.Priors(held)
	}
}

// correction is the Remember request of a correct decision: its evidence and proposal, every
// proposed relationship naming the caller's relationship the item was held against as the one it
// corrects (DESIGN §6.4's explicit correction), when the item names exactly one.
func correction(req ResolveRequest, item store.ReviewItem) RememberRequest {
	rr := RememberRequest{IdempotencyKey: req.IdempotencyKey, Evidence: req.Evidence}
	if req.Proposal != nil {
		rr.Proposal = *req.Proposal
		rr.Proposal.Relationships = slices.Clone(req.Proposal.Relationships)
	}
	if len(item.Related) == 1 {
		for i := range rr.Proposal.Relationships {
			rr.Proposal.Relationships[i].CorrectsRelationshipID = relationship.ID(item.Related[0])
		}
	}
	return rr
}

// carryDecision carries out, on a placing decision's ledger, what the decision does besides its
// placement (placement.Params.Decided), while the item's statement is still in review: correct and
// both_valid reject the statement they replace; supersede_prior makes the held statement current
// over the priors the item names, keep_prior_reject_new rejects it (ledger.Carry). It returns the
// cross-references a statement made current wrote. A placement that took the statement out of review
// itself (its evidence supported a pending one into current state) leaves nothing to carry out.
func carryDecision(l *ledger.Ledger, kl store.KeysLocked, item store.ReviewItem, req ResolveRequest) []store.CrossReferenceRow {
	switch req.Action {
	case ActionCorrect, ActionBothValid, ActionSupersedePrior, ActionKeepPriorRejectNew:
	default:
		return nil
	}
	for _, r := range kl.Relationships {
		if r.ID != item.RelationshipID {
			continue
		}
		ks := l.Key(conflict.Key{Team: l.Team, Subject: r.Subject, PredicateKey: r.PredicateKey, Scope: r.Scope})
		if cur := ks.Find(r.ID); cur != nil && (cur.Status == relationship.StatusNeedsReview || cur.Status == relationship.StatusPendingEvidence) {
			return l.Carry(ks, cur, relatedIDs(item), req.Action, callerReason(req, ""))
		}
	}
	return nil
}

// restatement is the Remember request that states rel again with the decision's evidence, each item
// cited whole, under the decision's idempotency key.
func restatement(req ResolveRequest, v store.RelationshipView) RememberRequest {
	r := v.Relationship
	rel := ProposedRelationship{ProposalID: "decision", SubjectRef: "subject", Predicate: r.PredicateKey,
		Polarity: r.Polarity, Modality: relationship.ModalityStatement, Scope: r.Scope, ValidFrom: r.Validity.From,
		ValidTo: r.Validity.To}
	for i, ev := range req.Evidence {
		rel.Evidence = append(rel.Evidence, Citation{EvidenceIndex: i, Start: 0, End: len(ev.Content)})
	}
	entities := []ProposedEntity{{Ref: "subject", Name: v.SubjectName, EntityKind: v.SubjectKind, KnownEntityID: r.Subject}}
	if r.Object.EntityID != "" {
		rel.ObjectRef = "object"
		entities = append(entities, ProposedEntity{Ref: "object", Name: v.ObjectName, EntityKind: v.ObjectKind,
			KnownEntityID: r.Object.EntityID})
	} else {
		rel.ObjectValue = &ObjectValue{Type: ValueType(strings.TrimPrefix(v.ObjectKind, "value:")), Value: v.ObjectName}
	}
	return RememberRequest{IdempotencyKey: req.IdempotencyKey, Evidence: req.Evidence,
		Proposal: Proposal{Entities: entities, Relationships: []ProposedRelationship{rel}}}
}

// observationRestatement is the Remember request that places obs's claim again with the decision's
// choice: the chosen entity for an ambiguous mention (select_entity, a candidate the item offered),
// or the chosen registered predicate (select_predicate, an option the item offered). Mentions the
// observation resolved keep their entities; the cited fragments are stored again in their source
// groups, the decision's evidence after them.
func observationRestatement(req ResolveRequest, item store.ReviewItem, obs store.StoredObservation) (RememberRequest, error) {
	var prompt ReviewPrompt
	if err := json.Unmarshal(item.Choices, &prompt); err != nil {
		return RememberRequest{}, fmt.Errorf("%w: review item %s: choices: %v", ErrInternal, item.ID, err)
	}
	o := obs.Observation
	resolved := map[string]store.ResolutionRow{} // the latest event per mention
	for _, r := range obs.Resolutions {
		resolved[r.MentionRef] = r
	}
	predicate, distinct, err := applyChoice(req, prompt, o, resolved)
	if err != nil {
		return RememberRequest{}, err
	}
	rr := RememberRequest{IdempotencyKey: req.IdempotencyKey}
	rel := ProposedRelationship{ProposalID: "decision", SubjectRef: o.SubjectRef, Predicate: predicate, ObjectRef: o.ObjectRef,
		Polarity: o.Polarity, Modality: o.Modality, Scope: o.Scope, ValidFrom: o.ValidFrom, ValidTo: o.ValidTo}
	if len(o.ObjectValue) > 0 {
		var v ObjectValue
		if err := json.Unmarshal(o.ObjectValue, &v); err != nil {
			return RememberRequest{}, fmt.Errorf("%w: observation %s: object value: %v", ErrInternal, o.ID, err)
		}
		rel.ObjectValue = &v
	}
	for _, ref := range []string{o.SubjectRef, o.ObjectRef} {
		if ref == "" {
			continue
		}
		r := resolved[ref]
		name := r.MentionName
		rr.Proposal.Entities = append(rr.Proposal.Entities, ProposedEntity{Ref: ref, Name: name, EntityKind: r.EntityKind,
			IdentityContext: r.Context, KnownEntityID: r.EntityID, DistinctFromEntityIDs: distinct[ref]})
	}
	cites, err := citedAgain(&rr, o, obs.Fragments)
	if err != nil {
		return RememberRequest{}, err
	}
	rel.Evidence = cites
	if req.Action == ActionBothValid {
		bothValid(&rel, req.Decision)
	}
	rr.Evidence = append(rr.Evidence, req.Evidence...)
	rr.Proposal.Relationships = []ProposedRelationship{rel}
	return rr, nil
}

// bothValid restates rel as a both_valid decision says it holds: in the decision's scope (beside the
// prior, on another key), or in its own time, the decision's valid_from and valid_to replacing the
// statement's own bounds (DESIGN §6.4: it never supersedes or shortens the prior).
func bothValid(rel *ProposedRelationship, d *ResolveDecision) {
	switch {
	case d.Scope != nil:
		rel.Scope = *d.Scope
	default:
		if d.ValidFrom != nil {
			rel.ValidFrom = d.ValidFrom
		}
		if d.ValidTo != nil {
			rel.ValidTo = d.ValidTo
		}
	}
}

// checkBothValid refuses a both_valid in time whose interval (the restated statement's, rr's one
// relationship) overlaps the validity of a prior the item names: both could not be current, and
// choosing between them is supersede_prior or keep_prior_reject_new.
func checkBothValid(req ResolveRequest, rr *RememberRequest, item store.ReviewItem, find func(relationship.ID) *relationship.Relationship) error {
	if req.Action != ActionBothValid || req.Decision == nil || req.Decision.Scope != nil || len(rr.Proposal.Relationships) != 1 {
		return nil
	}
	r := rr.Proposal.Relationships[0]
	mine := relationship.Interval{From: r.ValidFrom, To: r.ValidTo}
	var ps problems
	for _, id := range item.Related {
		prior := find(relationship.ID(id))
		if prior == nil || !mine.Overlaps(prior.Validity) {
			continue
		}
		for _, f := range []struct {
			path string
			set  bool
		}{{"decision.valid_from", req.Decision.ValidFrom != nil}, {"decision.valid_to", req.Decision.ValidTo != nil}} {
			if f.set {
				ps.Add(f.path, "the held statement's time%s overlaps the validity of relationship %s%s: both_valid in time "+
					"needs an interval that ends before the prior begins or begins when it ends; to replace the prior choose "+
					"supersede_prior or correct", ledger.Validity(mine), prior.ID, ledger.Validity(prior.Validity))
			}
		}
	}
	return ps.Err()
}

// applyChoice checks the decision's choice against what the item offered and applies it: the chosen
// entity becomes the ambiguous mention's (in resolved), a confirmed new entity is distinct from every
// candidate of the mention (distinct, by mention ref), or the chosen predicate becomes the claim's. It
// returns the predicate to place the claim under.
func applyChoice(req ResolveRequest, prompt ReviewPrompt, o store.ObservationRow,
	resolved map[string]store.ResolutionRow) (string, map[string][]EntityID, error) {
	distinct := map[string][]EntityID{}
	var ps problems
	d := req.Decision
	if d == nil {
		d = &ResolveDecision{}
	}
	predicate := o.PredicatePhrase
	switch req.Action {
	case ActionSelectEntity:
		r, ok := resolved[d.MentionRef]
		offered := slices.ContainsFunc(prompt.EntityCandidates, func(c EntityCandidate) bool { return c.EntityID == d.EntityID })
		switch {
		case !ok || r.Decision != identity.DecisionAmbiguous:
			ps.Add("decision.mention_ref", "names no ambiguous mention of observation %s", o.ID)
		case !offered || !slices.Contains(r.Candidates, d.EntityID):
			ps.Add("decision.entity_id", "is not a candidate the review item offered for %s", quoted(d.MentionRef, 64))
		default:
			r.EntityID = d.EntityID
			resolved[d.MentionRef] = r
		}
	case ActionConfirmNewEntity:
		r, ok := resolved[d.MentionRef]
		switch {
		case !ok || r.Decision != identity.DecisionAmbiguous:
			ps.Add("decision.mention_ref", "names no ambiguous mention of observation %s", o.ID)
		case slices.ContainsFunc(d.DistinctFromEntityIDs, func(id EntityID) bool { return !slices.Contains(r.Candidates, id) }):
			ps.Add("decision.distinct_from_entity_ids", "may name only candidates the review item offered for%s",
				quoted(d.MentionRef, 64))
		default:
			// A new identity is none of the candidates, whichever the caller named.
			distinct[d.MentionRef] = r.Candidates
		}
	case ActionBothValid:
		timed := d.ValidFrom != nil || d.ValidTo != nil
		switch {
		case d.Scope != nil && timed:
			ps.Add("decision", "both_valid takes either scope or a time (valid_from and/or valid_to), not both")
		case d.Scope == nil && !timed:
			ps.Add("decision", "both_valid needs scope, or valid_from and/or valid_to: where or when the held statement holds beside the prior")
		case d.Scope != nil && relationship.NormalizeScope(*d.Scope) == o.Scope:
			ps.Add("decision.scope", "is the statement's own scope; both_valid needs another one")
		default:
			from, to := o.ValidFrom, o.ValidTo
			if d.ValidFrom != nil {
				from = d.ValidFrom
			}
			if d.ValidTo != nil {
				to = d.ValidTo
			}
			if from != nil && to != nil && !to.After(*from) {
				ps.Add("decision.valid_to", "must be after the held statement's valid_from %s", from.Format(time.RFC3339))
			}
		}
	case ActionSelectPredicate:
		if !slices.ContainsFunc(prompt.PredicateOptions, func(p PredicateOption) bool { return p.Key == d.PredicateKey }) {
			ps.Add("decision.predicate_key", "is not a registered predicate the review item offered")
		}
		predicate = d.PredicateKey
	}
	if err := ps.Err(); err != nil {
		return "", nil, err
	}
	return predicate, distinct, nil
}

// citedAgain adds to rr the fragments o cites, in their source groups (a fragment the observation
// adopted is adopted again), and returns o's citations pointing at them.
func citedAgain(rr *RememberRequest, o store.ObservationRow, fragments []store.FragmentRow) ([]Citation, error) {
	var stored []request.StoredCitation
	if err := json.Unmarshal(o.Citations, &stored); err != nil {
		return nil, fmt.Errorf("%w: observation %s: citations: %v", ErrInternal, o.ID, err)
	}
	cites := make([]Citation, len(stored))
	index := map[int]int{} // the ingest's evidence index -> rr's
	for i, c := range stored {
		cites[i] = c.Citation
		j, ok := index[c.EvidenceIndex]
		if !ok {
			ev, err := citedItem(o, c, fragments)
			if err != nil {
				return nil, err
			}
			j = len(rr.Evidence)
			index[c.EvidenceIndex] = j
			rr.Evidence = append(rr.Evidence, ev)
		}
		cites[i].EvidenceIndex = j
	}
	return cites, nil
}

// citedItem is the evidence item of o's citation c placed again: the fragment it adopted, adopted
// again, or its ingest's fragment stored again in its source group.
func citedItem(o store.ObservationRow, c request.StoredCitation, fragments []store.FragmentRow) (EvidenceInput, error) {
	if c.AdoptFragmentID != "" {
		return EvidenceInput{AdoptFragmentID: c.AdoptFragmentID}, nil
	}
	k := slices.IndexFunc(fragments, func(f store.FragmentRow) bool { return f.EvidenceIndex == c.EvidenceIndex })
	if k < 0 {
		return EvidenceInput{}, fmt.Errorf("%w: observation %s cites evidence %d its ingest does not hold", ErrInternal, o.ID, c.EvidenceIndex)
	}
	f := fragments[k]
	if f.Erased {
		return EvidenceInput{}, fmt.Errorf("%w: observation %s cites fragment %s, whose content was erased: it cannot be cited again; decide with new evidence (add_evidence), or forget the statement",
			ErrErased, o.ID, f.ID)
	}
	return EvidenceInput{Content: f.Content, SourceType: f.SourceType, Authority: f.Authority, SourceGroup: f.SourceGroup}, nil
}

// resolveWithoutChange carries out the decisions that change no relationship: reject_mapping (the
// observation keeps no predicate; the item resolves) and propose_vocabulary_change (the proposal,
// decision.predicate_key with the reason, is recorded for the vocabulary workflow; the item stays
// open until a predicate is selected). One transaction: the idempotency key, the item's row, the
// decision and its evidence.
func (c *Client) resolveWithoutChange(ctx context.Context, p Principal, req ResolveRequest, hash string,
	item store.ReviewItem) (*ResolveResult, error) {
	if req.Action == ActionProposeVocabularyChange && (req.Decision == nil || req.Decision.PredicateKey == "") {
		var ps problems
		ps.Add("decision.predicate_key", "is required: the predicate the vocabulary change proposes")
		return nil, ps.Err()
	}
	now := c.now()
	var result *ResolveResult
	err := c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		stored, err := lockIntake(ctx, tx, p, req.IdempotencyKey)
		if err != nil || stored != nil {
			if stored != nil {
				result, err = replayResolve(stored, hash)
			}
			return err
		}
		item, err := tx.ReviewItemLock(ctx, p.TeamID, req.IngestID, req.PlacementItemID)
		if err != nil {
			return err
		}
		if err := stillAsked(item, func(relationship.ID) *relationship.Relationship { return nil }, nil, p); err != nil {
			return err
		}
		l := &ledger.Ledger{Team: p.TeamID, Actor: ledger.ProfileActor(p.ProfileID), IngestID: c.newID("ing", now),
			IdempotencyKey: req.IdempotencyKey, Now: now, NewID: func(prefix string) string { return c.newID(prefix, now) }}
		result = &ResolveResult{DecisionID: c.newID("dec", now), IngestID: l.IngestID, ReviewID: item.ID, Action: req.Action}
		fragments := decisionFragments(l, p, req.Evidence)
		for _, f := range fragments {
			result.FragmentIDs = append(result.FragmentIDs, FragmentID(f))
		}
		return c.recordDecision(ctx, tx, l, p, req, hash, item, result,
			recorded{keepOpen: req.Action == ActionProposeVocabularyChange, fragments: fragments})
	})
	if errors.Is(err, ErrStaleVersion) {
		return nil, fmt.Errorf("%w: review item %s", ErrStaleDecision, item.ID)
	}
	return result, err
}
