package densemem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
)

// planner turns one validated, verified request into the rows of its transaction and its placement.
// It is rebuilt for every transaction attempt and decides only from what that attempt read.
type planner struct {
	c        *Client
	p        Principal
	req      *RememberRequest
	in       *intake
	now      time.Time
	policy   store.Policy
	verdicts map[string]evidence.Result
	hash     string
	preds    []relationship.Predicate
	verifier string

	res        map[string]resolution
	candidates []identity.Entity

	ingestID string
	ws       store.WriteSet
	// state holds every owner's relationships of each key the call touches, and the live cases.
	state     map[conflict.Key]*review.KeyState
	cases     map[conflict.ID]*store.CaseRow
	supports  map[relationship.ID][]evidence.Support
	fragments []store.FragmentRow
	values    map[string]bool
	// objectNames names the object of every relationship the planner knows, for review questions.
	objectNames map[relationship.ID]string
}

// resolve resolves the mentions from the entities read under the name locks and allocates the IDs of
// the entities this call creates.
func (pl *planner) resolve(candidates, known []identity.Entity) {
	pl.candidates = append(append([]identity.Entity{}, candidates...), known...)
	pl.res = pl.in.resolve(candidates, known)
	real := map[identity.EntityID]identity.EntityID{}
	for _, ref := range pl.in.order {
		r := pl.res[ref]
		if r.Decision == identity.DecisionCreated {
			real[r.entity.ID] = identity.EntityID(pl.c.newID("ent", pl.now))
		}
	}
	for ref, r := range pl.res {
		if id, ok := real[r.entity.ID]; ok {
			r.entity.ID, r.EntityID = id, id
			pl.res[ref] = r
		}
	}
}

// keys returns the conflict keys of every statement that may become a relationship; with
// newSubjects false it leaves out the keys whose subject this call creates.
func (pl *planner) keys(newSubjects bool) []conflict.Key {
	var out []conflict.Key
	for _, r := range pl.req.Proposal.Relationships {
		k, ok := pl.key(r)
		if !ok || slices.Contains(out, k) || (!newSubjects && pl.res[r.SubjectRef].Decision == identity.DecisionCreated) {
			continue
		}
		out = append(out, k)
	}
	return out
}

func (pl *planner) key(r ProposedRelationship) (conflict.Key, bool) {
	_, mod, scope := normalizedRelationship(r)
	pred, ok := relationship.MatchPredicate(r.Predicate, pl.preds)
	subj := pl.res[r.SubjectRef]
	if !ok || mod != relationship.ModalityStatement || subj.Decision == identity.DecisionAmbiguous ||
		(r.ObjectRef != "" && pl.res[r.ObjectRef].Decision == identity.DecisionAmbiguous) {
		return conflict.Key{}, false
	}
	return conflict.Key{Team: pl.p.TeamID, Subject: subj.EntityID, PredicateKey: pred.Key, Scope: scope}, true
}

// plan builds the write set and the placement from the locked state of the keys.
func (pl *planner) plan(kl store.KeysLocked) (store.WriteSet, *Placement, error) {
	pl.ingestID = pl.c.newID("ing", pl.now)
	pl.values = map[string]bool{}
	pl.supports = map[relationship.ID][]evidence.Support{}
	pl.state = map[conflict.Key]*review.KeyState{}
	pl.cases = map[conflict.ID]*store.CaseRow{}
	for i := range kl.Relationships {
		r := kl.Relationships[i]
		ks := pl.keyState(conflict.Key{Team: pl.p.TeamID, Subject: r.Subject, PredicateKey: r.PredicateKey, Scope: r.Scope})
		ks.Rels = append(ks.Rels, &r)
	}
	for i := range kl.Cases {
		c := &kl.Cases[i]
		pl.cases[c.ID] = c
		if c.Status.Live() {
			pl.keyState(c.Key).Live = c
		}
	}
	pl.objectNames = map[relationship.ID]string{}
	for id, n := range kl.ObjectNames {
		pl.objectNames[id] = n
	}
	for _, s := range kl.Supports {
		pl.supports[s.RelationshipID] = append(pl.supports[s.RelationshipID], review.Support(s, pl.policy.AuthoritativeProfiles))
	}
	if err := pl.checkReferences(); err != nil {
		return store.WriteSet{}, nil, err
	}
	out := &Placement{IngestID: pl.ingestID, Fragments: []FragmentOutcome{}, Entities: []EntityOutcome{},
		RelationshipOutcomes: []RelationshipOutcome{}}
	pl.writeFragments(out)
	pl.writeEntities(out)
	for i, r := range pl.req.Proposal.Relationships {
		out.RelationshipOutcomes = append(out.RelationshipOutcomes, pl.place(i, r))
	}
	pl.maintainCases(out)
	result, err := json.Marshal(out)
	if err != nil {
		return store.WriteSet{}, nil, err
	}
	pl.ws.Idempotency = &store.IdempotencyRow{Team: pl.p.TeamID, Profile: pl.p.ProfileID, Key: pl.req.IdempotencyKey,
		Operation: opRemember, RequestHash: pl.hash, IngestID: pl.ingestID, Result: result, CreatedAt: pl.now}
	return pl.ws, out, nil
}

// newID allocates an ID at the call's time.
func (pl *planner) newID(prefix string) string { return pl.c.newID(prefix, pl.now) }

// keyState returns the state of a key, creating an empty one for a key nobody holds yet.
func (pl *planner) keyState(k conflict.Key) *review.KeyState {
	ks, ok := pl.state[k]
	if !ok {
		pred, _ := relationship.MatchPredicate(k.PredicateKey, pl.preds)
		ks = &review.KeyState{Key: k, Pred: pred, Supports: pl.supports}
		pl.state[k] = ks
	}
	return ks
}

// owned returns the caller's relationships of a key.
func (pl *planner) owned(k conflict.Key) []relationship.Relationship {
	var out []relationship.Relationship
	for _, r := range pl.keyState(k).Rels {
		if r.Owner == pl.p.ProfileID {
			out = append(out, *r)
		}
	}
	return out
}

// checkReferences fails the call, before anything is planned, when a conflict response is stale or
// not material to its case, or when corrects_relationship_id names a relationship outside the
// proposal's conflict key.
func (pl *planner) checkReferences() error {
	var ps problems
	for i, r := range pl.req.Proposal.Relationships {
		path := fmt.Sprintf("proposal.relationships[%d]", i)
		k, ok := pl.key(r)
		if cr := r.ConflictResponse; cr != nil {
			c := pl.cases[conflict.ID(cr.ConflictID)]
			switch {
			case c == nil:
				ps.add(path+".conflict_response.conflict_id", "%s is not a conflict case of the caller's team", cr.ConflictID)
			case !c.Status.Live() || c.Version != cr.ExpectedVersion:
				return fmt.Errorf("%w: case %s is %s at version %d, the response expected version %d",
					ErrStaleConflictVersion, c.ID, c.Status, c.Version, cr.ExpectedVersion)
			case !ok || k != c.Key:
				return fmt.Errorf("%w: proposal %q is not about the case's subject, predicate and scope",
					ErrNotMaterialToConflict, r.ProposalID)
			}
		}
		if id := r.CorrectsRelationshipID; id != "" {
			found := false
			if ok {
				for _, x := range pl.keyState(k).Rels {
					found = found || x.ID == id
				}
			}
			if !found {
				ps.add(path+".corrects_relationship_id", "%s is not a relationship of the proposal's subject, predicate and scope", id)
			}
		}
	}
	return ps.err()
}

// maintainCases repairs, opens or dismisses the case of every key the call touched, and names the
// resulting case on the outcomes of the key's relationships.
func (pl *planner) maintainCases(out *Placement) {
	keeper := &review.Keeper{Team: pl.p.TeamID, ActorKind: store.ActorProfile, ActorProfile: pl.p.ProfileID,
		IngestID: pl.ingestID, Now: pl.now, Policy: pl.policy, WS: &pl.ws, NewID: pl.newID}
	refs := map[relationship.ID]*ConflictRef{}
	keys := make([]conflict.Key, 0, len(pl.state))
	for k, ks := range pl.state {
		if ks.Touched {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b conflict.Key) int {
		return strings.Compare(string(a.Subject)+"\x00"+a.PredicateKey+"\x00"+a.Scope, string(b.Subject)+"\x00"+b.PredicateKey+"\x00"+b.Scope)
	})
	for _, k := range keys {
		ks := pl.state[k]
		ref := keeper.Maintain(ks)
		if ref == nil {
			continue
		}
		for _, r := range ks.Rels {
			refs[r.ID] = &ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
		}
	}
	for i := range out.RelationshipOutcomes {
		if ref, ok := refs[out.RelationshipOutcomes[i].RelationshipID]; ok && out.RelationshipOutcomes[i].RelationshipID != "" {
			out.RelationshipOutcomes[i].Conflict = ref
		}
	}
}

// crossReferences compares a relationship of the caller that just became active with the other
// owners' active relationships of its key and writes corrects, challenges or confirms links.
func (pl *planner) crossReferences(ks *review.KeyState, rel *relationship.Relationship, confirmed bool, corrects relationship.ID,
	verID string) []CrossReferenceOutcome {
	var out []CrossReferenceOutcome
	for _, o := range ks.Rels {
		if o.Owner == rel.Owner || o.Status != relationship.StatusActive {
			continue
		}
		kind := ""
		switch {
		case relationship.Incompatible(ks.Pred, rel.Object, rel.Polarity, rel.Validity, o.Object, o.Polarity, o.Validity):
			kind = "challenges"
			if o.ID == corrects || (confirmed && rel.Validity.From != nil &&
				(o.Validity.From == nil || rel.Validity.From.After(*o.Validity.From))) {
				kind = "corrects"
			}
		case rel.Object == o.Object && rel.Polarity == o.Polarity && rel.Validity.Overlaps(o.Validity):
			kind = "confirms"
		default:
			continue
		}
		x := store.CrossReferenceRow{Team: pl.p.TeamID, ID: pl.c.newID("xref", pl.now), Kind: kind, From: rel.ID,
			FromVersion: rel.Version, To: o.ID, ToVersion: o.Version, Author: pl.p.ProfileID, VerificationID: verID,
			IngestID: pl.ingestID, CreatedAt: pl.now}
		pl.ws.CrossRefs = append(pl.ws.CrossRefs, x)
		out = append(out, CrossReferenceOutcome{CrossReferenceID: x.ID, Kind: kind, ToRelationshipID: o.ID})
	}
	return out
}

// support is the counted view of a support link this call writes (review.Support).
func (pl *planner) support(group, hash string, auth evidence.Authority, author identity.ProfileID) evidence.Support {
	return review.Support(store.SupportRow{Group: group, ContentHash: hash, Authority: auth, Author: author},
		pl.policy.AuthoritativeProfiles)
}

func (pl *planner) writeFragments(out *Placement) {
	for i, ev := range pl.req.Evidence {
		auth := ev.Authority
		if auth == "" {
			auth = evidence.AuthorityStandard
		}
		hash := evidence.ContentHash(ev.Content)
		f := store.FragmentRow{Team: pl.p.TeamID, ID: evidence.FragmentID(pl.c.newID("frg", pl.now)), IngestID: pl.ingestID,
			EvidenceIndex: i, Author: pl.p.ProfileID, SourceType: ev.SourceType, Authority: auth,
			SourceGroup: evidence.GroupLabel(ev.SourceKey, ev.SourceGroup, hash), SourceKey: ev.SourceKey,
			Revision: ev.SourceRevision, ContentHash: hash, Content: ev.Content, CreatedAt: pl.now}
		pl.fragments = append(pl.fragments, f)
		pl.ws.Fragments = append(pl.ws.Fragments, f)
		out.Fragments = append(out.Fragments, FragmentOutcome{EvidenceIndex: i, FragmentID: f.ID, SourceGroup: f.SourceGroup})
	}
}

func (pl *planner) writeEntities(out *Placement) {
	created := map[identity.EntityID]bool{}
	for _, ref := range pl.in.order {
		r := pl.res[ref]
		eo := EntityOutcome{Ref: ref, Decision: r.Decision, EntityID: r.EntityID, CandidatesTruncated: r.Truncated}
		for _, id := range r.Candidates {
			eo.Candidates = append(eo.Candidates, pl.candidate(id))
		}
		out.Entities = append(out.Entities, eo)
		if r.Decision != identity.DecisionCreated || created[r.EntityID] {
			continue
		}
		created[r.EntityID] = true
		pl.ws.Entities = append(pl.ws.Entities, store.EntityRow{Team: pl.p.TeamID, ID: r.EntityID, Kind: r.entity.Kind,
			Context: r.entity.Context, CreatedBy: pl.p.ProfileID, IngestID: pl.ingestID, CreatedAt: pl.now})
		for _, n := range r.entity.Names {
			pl.ws.EntityNames = append(pl.ws.EntityNames, store.EntityNameRow{Team: pl.p.TeamID, EntityID: r.EntityID,
				Name: n.Name, Normalized: n.Normalized, Skeleton: identity.Skeleton(n.Normalized), Kind: n.Kind, CreatedAt: pl.now})
		}
	}
}

func (pl *planner) candidate(id identity.EntityID) EntityCandidate {
	for _, e := range pl.candidates {
		if e.ID == id {
			return EntityCandidate{EntityID: id, Name: e.CanonicalName(), EntityKind: e.Kind, IdentityContext: e.Context}
		}
	}
	return EntityCandidate{EntityID: id}
}

// place records the observation of proposal relationship i and decides what it does.
func (pl *planner) place(i int, r ProposedRelationship) RelationshipOutcome {
	pol, mod, scope := normalizedRelationship(r)
	obsID := pl.c.newID("obs", pl.now)
	out := RelationshipOutcome{ProposalID: r.ProposalID, PlacementItemID: fmt.Sprintf("item_relationship_%d", i+1), ObservationID: obsID}
	pred, predOK := relationship.MatchPredicate(r.Predicate, pl.preds)
	subj := pl.res[r.SubjectRef]
	var obj resolution
	objName, objKind := "", ""
	var valueJSON json.RawMessage
	var value string
	if r.ObjectValue != nil {
		value, _ = canonicalValue(*r.ObjectValue)
		objName = value
		valueJSON, _ = json.Marshal(ObjectValue{Type: r.ObjectValue.Type, Value: value})
	} else {
		obj = pl.res[r.ObjectRef]
		objName, objKind = pl.in.mentions[r.ObjectRef].Name, pl.in.mentions[r.ObjectRef].Kind
	}
	cites, _ := json.Marshal(r.Evidence)
	o := store.ObservationRow{Team: pl.p.TeamID, ID: obsID, IngestID: pl.ingestID, Profile: pl.p.ProfileID,
		ProposalID: r.ProposalID, SubjectRef: r.SubjectRef, SubjectName: pl.in.mentions[r.SubjectRef].Name,
		PredicatePhrase: r.Predicate, ObjectRef: r.ObjectRef, ObjectName: objName, ObjectValue: valueJSON,
		Polarity: pol, Modality: mod, Scope: scope, ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, Citations: cites, CreatedAt: pl.now}
	if predOK {
		o.PredicateKey, o.PredicateVersion = pred.Key, pred.Version
	}
	pl.ws.Observations = append(pl.ws.Observations, o)
	pl.resolutionEvent(obsID, r.SubjectRef)
	if r.ObjectRef != "" {
		pl.resolutionEvent(obsID, r.ObjectRef)
	}
	verdict, verified := pl.verdicts[r.ProposalID]
	verID := ""
	granted := verified && verdict.Verdict == evidence.VerdictEntailed && verdict.Confidence >= pl.policy.AutoWriteThreshold
	if verified {
		verID = pl.c.newID("ver", pl.now)
		pl.ws.Verifications = append(pl.ws.Verifications, store.VerificationRow{Team: pl.p.TeamID, ID: verID,
			ObservationID: obsID, Verifier: pl.verifier, Verdict: verdict.Verdict, Confidence: verdict.Confidence,
			Rationale: verdict.Rationale, ConfirmedValidFrom: verdict.ConfirmedValidFrom, SupportGranted: granted, CreatedAt: pl.now})
	}

	switch {
	case mod != relationship.ModalityStatement:
		out.Category = CategoryNotAsserted
		out.Reason = fmt.Sprintf("modality %q is kept as an observation only", mod)
		return out
	case subj.Decision == identity.DecisionAmbiguous || obj.Decision == identity.DecisionAmbiguous:
		return pl.identityReview(out, obsID, r, subj, obj)
	case !predOK:
		return pl.predicateReview(out, obsID, fmt.Sprintf("predicate %q is not registered for this team", r.Predicate))
	case !pred.AllowsSubject(subj.entity.Kind):
		return pl.predicateReview(out, obsID, fmt.Sprintf("predicate %q does not accept a %s subject", pred.Key, subj.entity.Kind))
	case !pred.AllowsObject(objKind):
		what := "a literal value"
		if objKind != "" {
			what = "a " + objKind + " object"
		}
		return pl.predicateReview(out, obsID, fmt.Sprintf("predicate %q does not accept %s", pred.Key, what))
	case verified && verdict.Verdict == evidence.VerdictContradicted:
		out.Category, out.Status = CategoryRejected, relationship.StatusRejected
		out.Reason = "the verifier found the cited evidence contradicts the claim: " + verdict.Rationale
		return out
	}

	object := relationship.Object{EntityID: obj.EntityID}
	if r.ObjectValue != nil {
		object = relationship.Object{ValueID: pl.value(r.ObjectValue.Type, value)}
	}
	k := conflict.Key{Team: pl.p.TeamID, Subject: subj.EntityID, PredicateKey: pred.Key, Scope: scope}
	rel := relationship.Relationship{ID: relationship.ID(pl.c.newID("rel", pl.now)), Owner: pl.p.ProfileID,
		Subject: subj.EntityID, PredicateKey: pred.Key, PredicateVersion: pred.Version, Object: object, Polarity: pol,
		Scope: scope, Validity: relationship.Interval{From: r.ValidFrom, To: r.ValidTo}, Version: 1}
	pl.objectNames[rel.ID] = objName

	if !granted {
		rel.Status, rel.Tier = relationship.StatusPendingEvidence, relationship.TierCandidate
		pl.create(k, &rel, obsID, "evidence_insufficient")
		out.RelationshipID, out.Category, out.Status, out.Tier = rel.ID, CategoryPendingEvidence, rel.Status, rel.Tier
		out.Reason = "the evidence does not yet support the claim"
		if verified {
			out.Reason += fmt.Sprintf(" (verdict %s, confidence %.2f: %s)", verdict.Verdict, verdict.Confidence, verdict.Rationale)
		}
		out.Review = pl.review(out.PlacementItemID, "pending_evidence", obsID, rel.ID, nil,
			"Which evidence states this relationship? Submit exact evidence, or reject the claim.",
			[]ReviewChoice{{"add_evidence", "remember new evidence that states the relationship"},
				{"reject", "reject the pending relationship"}}, nil, nil)
		return out
	}

	// Accepted: the current-state decision of the owner's relationships of this key.
	prop := relationship.Proposed{Object: object, Polarity: pol, Validity: rel.Validity,
		ValidFromConfirmed: r.ValidFrom != nil && verdict.ConfirmedValidFrom != nil && verdict.ConfirmedValidFrom.Equal(*r.ValidFrom)}
	if r.CorrectsRelationshipID != "" {
		prop.Corrects = r.CorrectsRelationshipID
	}
	ks := pl.keyState(k)
	ks.Touched = true
	d := relationship.Decide(pred, prop, pl.owned(k))
	newSupports := pl.supportLinks(r, obsID, verID)

	if d.Action == relationship.ActionSupport {
		target := pl.find(k, d.Target)
		pl.attach(target.ID, newSupports)
		tier := relationship.TierFor(pl.supports[target.ID])
		out.RelationshipID = target.ID
		switch {
		case target.Status == relationship.StatusActive:
			out.Category, out.Reason = CategorySupported, "an identical relationship of yours gained support"
			if tier != target.Tier {
				pl.update(target, target.Status, tier, target.Validity.To, "support_added", "")
			}
		case d.Promote == relationship.ActionHold:
			pl.update(target, relationship.StatusNeedsReview, tier, target.Validity.To, "evidence_accepted_held", "")
			pl.hold(&out, obsID, target, d.Priors)
		default:
			pl.update(target, relationship.StatusActive, tier, target.Validity.To, "evidence_accepted", "")
			out.Category, out.Reason = CategorySupported, "your pending relationship gained support and is now current"
			if d.Promote == relationship.ActionSupersede {
				pl.supersede(k, target, d.Priors)
				out.Category, out.Related = CategorySupersededPrior, d.Priors
				out.Reason = "your pending relationship gained dated support and supersedes your prior relationship"
			}
			confirmed := target.Validity.From != nil && prop.ValidFromConfirmed && prop.Validity.From != nil &&
				target.Validity.From.Equal(*prop.Validity.From)
			out.CrossReferences = pl.crossReferences(ks, target, confirmed, r.CorrectsRelationshipID, verID)
		}
		out.Status, out.Tier = target.Status, target.Tier
		return out
	}

	pl.supports[rel.ID] = nil
	for _, s := range newSupports {
		pl.supports[rel.ID] = append(pl.supports[rel.ID], pl.support(s.SourceGroup, s.ContentHash, s.Authority, s.Author))
	}
	rel.Tier = relationship.TierFor(pl.supports[rel.ID])
	out.RelationshipID = rel.ID
	switch d.Action {
	case relationship.ActionCreate:
		rel.Status = relationship.StatusActive
		pl.create(k, &rel, obsID, "accepted")
		out.Category, out.Reason = CategoryAccepted, "accepted as a current relationship"
		out.CrossReferences = pl.crossReferences(ks, &rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, verID)
	case relationship.ActionSupersede:
		rel.Status = relationship.StatusActive
		pl.create(k, &rel, obsID, "accepted")
		pl.supersede(k, &rel, d.Priors)
		out.Category, out.Related = CategorySupersededPrior, d.Priors
		out.Reason = "verifier-confirmed valid_from is later than your prior relationship's; the prior is superseded"
		if !prop.ValidFromConfirmed {
			out.Reason = "explicit correction of your prior relationship; the prior is superseded"
		}
		out.CrossReferences = pl.crossReferences(ks, &rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, verID)
	case relationship.ActionHold:
		rel.Status = relationship.StatusNeedsReview
		pl.create(k, &rel, obsID, "held_for_review")
		pl.hold(&out, obsID, &rel, d.Priors)
	}
	pl.ws.Supports = append(pl.ws.Supports, withRelationship(newSupports, rel.ID)...)
	out.Status, out.Tier = rel.Status, rel.Tier
	return out
}

// hold fills the outcome of a relationship held as needs_review against the owner's current priors.
func (pl *planner) hold(out *RelationshipOutcome, obsID string, rel *relationship.Relationship, priors []relationship.ID) {
	out.Category, out.Related = CategoryNeedsReview, priors
	out.Reason = "conflicts with your current relationship and the evidence does not establish replacement " +
		"(no verifier-confirmed valid_from later than the prior's)"
	related := make([]string, len(priors))
	for i, id := range priors {
		related[i] = string(id)
	}
	var current []string
	for _, id := range priors {
		current = append(current, fmt.Sprintf("%q", pl.objectNames[id]))
	}
	scope := ""
	if rel.Scope != "" {
		scope = fmt.Sprintf(" (scope %q)", rel.Scope)
	}
	subject := pl.subjectName(rel.Subject)
	out.Review = pl.review(out.PlacementItemID, "relationship_conflict", obsID, rel.ID, related,
		fmt.Sprintf("Which is current for %q %s%s: %s, as your current relationship says, or %q, as the new evidence says%s?",
			subject, rel.PredicateKey, scope, strings.Join(current, " and "), pl.objectNames[rel.ID], validity(rel.Validity)),
		[]ReviewChoice{
			{"supersede_prior", "the new relationship replaces the prior one from its valid_from"},
			{"keep_prior_reject_new", "keep the prior relationship and reject the new one"},
			{"both_valid", "both are valid, with a different scope or time"},
		}, nil, nil)
}

func (pl *planner) identityReview(out RelationshipOutcome, obsID string, r ProposedRelationship, subj, obj resolution) RelationshipOutcome {
	out.Category = CategoryIdentityReview
	var cands []EntityCandidate
	var names []string
	for _, x := range []struct {
		ref string
		res resolution
	}{{r.SubjectRef, subj}, {r.ObjectRef, obj}} {
		if x.res.Decision != identity.DecisionAmbiguous {
			continue
		}
		names = append(names, fmt.Sprintf("%q", pl.in.mentions[x.ref].Name))
		for _, id := range x.res.Candidates {
			cands = append(cands, pl.candidate(id))
		}
	}
	out.Reason = "more than one entity matches " + strings.Join(names, " and ")
	if subj.LookAlike || obj.LookAlike {
		out.Reason = strings.Join(names, " and ") + " looks like the name of an existing entity written with other characters"
	}
	out.Review = pl.review(out.PlacementItemID, "identity", obsID, "", nil,
		fmt.Sprintf("Which entity is %s?", strings.Join(names, " and ")),
		[]ReviewChoice{{"select_entity", "select one of the server-supplied candidates"},
			{"confirm_new_entity", "confirm a new entity, with evidence that distinguishes it"}}, cands, nil)
	return out
}

func (pl *planner) predicateReview(out RelationshipOutcome, obsID, reason string) RelationshipOutcome {
	out.Category, out.Reason = CategoryPredicateReview, reason
	opts := make([]PredicateOption, 0, len(pl.preds))
	for _, p := range pl.preds {
		opts = append(opts, PredicateOption{Key: p.Key, Description: p.Description})
	}
	out.Review = pl.review(out.PlacementItemID, "predicate", obsID, "", nil,
		"Which registered predicate does this observation mean?",
		[]ReviewChoice{{"select_predicate", "select one of the registered predicates"},
			{"reject_mapping", "reject the observation's mapping"},
			{"propose_vocabulary_change", "route a new predicate through the vocabulary workflow"}}, nil, opts)
	return out
}

func (pl *planner) review(itemID, kind, obsID string, rel relationship.ID, related []string, question string,
	choices []ReviewChoice, cands []EntityCandidate, opts []PredicateOption) *ReviewPrompt {
	rp := &ReviewPrompt{ReviewID: pl.c.newID("rev", pl.now), Kind: kind, Question: question, Choices: choices,
		EntityCandidates: cands, PredicateOptions: opts}
	body, _ := json.Marshal(rp)
	pl.ws.ReviewItems = append(pl.ws.ReviewItems, store.ReviewItemRow{Team: pl.p.TeamID, ID: rp.ReviewID,
		IngestID: pl.ingestID, PlacementItemID: itemID, Kind: kind, Profile: pl.p.ProfileID, ObservationID: obsID,
		RelationshipID: rel, Related: related, Choices: body, CreatedAt: pl.now})
	return rp
}

func (pl *planner) resolutionEvent(obsID, ref string) {
	r, m := pl.res[ref], pl.in.mentions[ref]
	pl.ws.Resolutions = append(pl.ws.Resolutions, store.ResolutionRow{Team: pl.p.TeamID, ID: pl.c.newID("res", pl.now),
		ObservationID: obsID, MentionRef: ref, MentionName: m.Name, EntityKind: m.Kind, EntityID: r.EntityID,
		Decision: r.Decision, Candidates: r.Candidates, Profile: pl.p.ProfileID, IngestID: pl.ingestID, CreatedAt: pl.now})
}

// value returns the content-addressed ID of a literal value and queues its row once.
func (pl *planner) value(t ValueType, text string) string {
	sum := sha256.Sum256([]byte(string(pl.p.TeamID) + "\x00" + string(t) + "\x00" + text))
	id := "val_" + hex.EncodeToString(sum[:13])
	if !pl.values[id] {
		pl.values[id] = true
		pl.ws.Values = append(pl.ws.Values, store.ValueRow{Team: pl.p.TeamID, ID: id, Type: string(t), Text: text, CreatedAt: pl.now})
	}
	return id
}

// supportLinks builds one support link per citation of an accepted proposal (relationship ID unset).
func (pl *planner) supportLinks(r ProposedRelationship, obsID, verID string) []store.SupportLinkRow {
	out := make([]store.SupportLinkRow, 0, len(r.Evidence))
	for _, c := range r.Evidence {
		f := pl.fragments[c.EvidenceIndex]
		out = append(out, store.SupportLinkRow{Team: pl.p.TeamID, ID: pl.c.newID("sup", pl.now), FragmentID: f.ID,
			ObservationID: obsID, VerificationID: verID, Start: c.Start, End: c.End, SourceGroup: f.SourceGroup,
			ContentHash: f.ContentHash, Authority: f.Authority, Author: f.Author, Profile: pl.p.ProfileID,
			IngestID: pl.ingestID, CreatedAt: pl.now})
	}
	return out
}

func withRelationship(links []store.SupportLinkRow, id relationship.ID) []store.SupportLinkRow {
	for i := range links {
		links[i].RelationshipID = id
	}
	return links
}

// attach records new support links on an existing relationship.
func (pl *planner) attach(id relationship.ID, links []store.SupportLinkRow) {
	pl.ws.Supports = append(pl.ws.Supports, withRelationship(links, id)...)
	for _, s := range links {
		pl.supports[id] = append(pl.supports[id], pl.support(s.SourceGroup, s.ContentHash, s.Authority, s.Author))
	}
}

func (pl *planner) find(k conflict.Key, id relationship.ID) *relationship.Relationship {
	for _, r := range pl.keyState(k).Rels {
		if r.ID == id {
			return r
		}
	}
	panic("densemem: planner lost relationship " + string(id)) // unreachable: Decide only names owned rows
}

// create queues a new relationship with its first transition.
func (pl *planner) create(k conflict.Key, rel *relationship.Relationship, obsID, reason string) {
	pl.ws.Relationships = append(pl.ws.Relationships, store.RelationshipRow{Team: pl.p.TeamID, Relationship: *rel,
		ObservationID: obsID, IngestID: pl.ingestID, CreatedAt: pl.now})
	pl.transition(rel.ID, "", rel.Status, "", rel.Tier, nil, rel.Validity.To, 0, 1, reason, "")
	ks := pl.keyState(k)
	ks.Rels = append(ks.Rels, rel)
	ks.Touched = true
}

// update changes an owned relationship's current state with a transition, fenced on its version.
func (pl *planner) update(rel *relationship.Relationship, status relationship.Status, tier relationship.Tier,
	validTo *time.Time, reason string, related relationship.ID) {
	pl.ws.Updates = append(pl.ws.Updates, store.RelationshipUpdate{Team: pl.p.TeamID, ID: rel.ID, ExpectVersion: rel.Version,
		Status: status, Tier: tier, ValidTo: validTo, UpdatedAt: pl.now})
	pl.transition(rel.ID, rel.Status, status, rel.Tier, tier, rel.Validity.To, validTo, rel.Version, rel.Version+1, reason, related)
	rel.Status, rel.Tier, rel.Validity.To, rel.Version = status, tier, validTo, rel.Version+1
}

// supersede closes the owner's incompatible priors at the new relationship's valid_from (an explicit
// correction without one closes them now), never before a prior's own valid_from.
func (pl *planner) supersede(k conflict.Key, next *relationship.Relationship, priors []relationship.ID) {
	for _, id := range priors {
		prior := pl.find(k, id)
		end := pl.now
		if next.Validity.From != nil {
			end = *next.Validity.From
		}
		if prior.Validity.From != nil && end.Before(*prior.Validity.From) {
			end = *prior.Validity.From
		}
		pl.update(prior, relationship.StatusSuperseded, prior.Tier, &end, "superseded", next.ID)
	}
}

func (pl *planner) transition(id relationship.ID, fromStatus, toStatus relationship.Status, fromTier, toTier relationship.Tier,
	fromValidTo, toValidTo *time.Time, fromVersion, toVersion int, reason string, related relationship.ID) {
	pl.ws.Transitions = append(pl.ws.Transitions, store.TransitionRow{Team: pl.p.TeamID, ID: pl.c.newID("trn", pl.now),
		RelationshipID: id, FromStatus: fromStatus, ToStatus: toStatus, FromTier: fromTier, ToTier: toTier,
		FromValidTo: fromValidTo, ToValidTo: toValidTo, FromVersion: fromVersion, ToVersion: toVersion, Reason: reason,
		ActorKind: store.ActorProfile, ActorProfile: pl.p.ProfileID, Related: related, IngestID: pl.ingestID,
		IdempotencyKey: pl.req.IdempotencyKey, CreatedAt: pl.now})
	pl.ws.Refreshes = append(pl.ws.Refreshes, store.RefreshRow{Team: pl.p.TeamID, RelationshipID: id, Reason: reason, CreatedAt: pl.now})
}

// subjectName returns the name a mention of this call gave the entity.
func (pl *planner) subjectName(id identity.EntityID) string {
	for _, ref := range pl.in.order {
		if pl.res[ref].EntityID == id {
			return pl.in.mentions[ref].Name
		}
	}
	return string(id)
}

// validity describes an interval for a question: "" when unbounded.
func validity(v relationship.Interval) string {
	switch {
	case v.From != nil && v.To != nil:
		return fmt.Sprintf(" from %s until %s", v.From.Format(time.DateOnly), v.To.Format(time.DateOnly))
	case v.From != nil:
		return fmt.Sprintf(" from %s (not confirmed as later than the current one)", v.From.Format(time.DateOnly))
	case v.To != nil:
		return fmt.Sprintf(" until %s", v.To.Format(time.DateOnly))
	}
	return " (undated)"
}
