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
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/relationship"
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
	// l writes the call's rows and holds every owner's relationships of each key the call touches,
	// their supports, and the live and named cases.
	l         *ledger.Ledger
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
	pl.l = &ledger.Ledger{Team: pl.p.TeamID, Actor: ledger.ProfileActor(pl.p.ProfileID), IngestID: pl.ingestID,
		IdempotencyKey: pl.req.IdempotencyKey, Now: pl.now, Policy: pl.policy, NewID: pl.newID}
	pl.l.Load(kl, pl.preds)
	pl.objectNames = map[relationship.ID]string{}
	for id, n := range kl.ObjectNames {
		pl.objectNames[id] = n
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
	pl.l.WS.Idempotency = &store.IdempotencyRow{Team: pl.p.TeamID, Profile: pl.p.ProfileID, Key: pl.req.IdempotencyKey,
		Operation: opRemember, RequestHash: pl.hash, IngestID: pl.ingestID, Result: result, CreatedAt: pl.now}
	return pl.l.WS, out, nil
}

// newID allocates an ID at the call's time.
func (pl *planner) newID(prefix string) string { return pl.c.newID(prefix, pl.now) }

// checkReferences fails the call, before anything is planned, when a conflict response is stale or
// not material to its case, or when corrects_relationship_id names a relationship outside the
// proposal's conflict key.
func (pl *planner) checkReferences() error {
	var ps problems
	for i, r := range pl.req.Proposal.Relationships {
		path := fmt.Sprintf("proposal.relationships[%d]", i)
		k, ok := pl.key(r)
		if cr := r.ConflictResponse; cr != nil {
			c := pl.l.Case(conflict.ID(cr.ConflictID))
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
				found = pl.l.Key(k).Find(id) != nil
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
	refs := map[relationship.ID]*ConflictRef{}
	for _, ks := range pl.l.Touched() {
		ref := pl.l.Maintain(ks)
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

// crossReferences records the links from rel, a relationship of the caller that just became active,
// to the other owners' active relationships of its key, and returns them as outcomes.
func (pl *planner) crossReferences(rel *relationship.Relationship, confirmed bool, corrects relationship.ID,
	verID string) []CrossReferenceOutcome {
	var out []CrossReferenceOutcome
	for _, x := range pl.l.CrossReferences(rel, confirmed, corrects, verID) {
		out = append(out, CrossReferenceOutcome{CrossReferenceID: x.ID, Kind: x.Kind, ToRelationshipID: x.To})
	}
	return out
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
		pl.l.WS.Fragments = append(pl.l.WS.Fragments, f)
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
		pl.l.WS.Entities = append(pl.l.WS.Entities, store.EntityRow{Team: pl.p.TeamID, ID: r.EntityID, Kind: r.entity.Kind,
			Context: r.entity.Context, CreatedBy: pl.p.ProfileID, IngestID: pl.ingestID, CreatedAt: pl.now})
		for _, n := range r.entity.Names {
			pl.l.WS.EntityNames = append(pl.l.WS.EntityNames, store.EntityNameRow{Team: pl.p.TeamID, EntityID: r.EntityID,
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
	pl.l.WS.Observations = append(pl.l.WS.Observations, o)
	pl.resolutionEvent(obsID, r.SubjectRef)
	if r.ObjectRef != "" {
		pl.resolutionEvent(obsID, r.ObjectRef)
	}
	verdict, verified := pl.verdicts[r.ProposalID]
	verID := ""
	granted := verified && verdict.Grants(pl.policy.AutoWriteThreshold)
	if verified {
		verID = pl.c.newID("ver", pl.now)
		pl.l.WS.Verifications = append(pl.l.WS.Verifications, store.VerificationRow{Team: pl.p.TeamID, ID: verID,
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
	ks := pl.l.Key(conflict.Key{Team: pl.p.TeamID, Subject: subj.EntityID, PredicateKey: pred.Key, Scope: scope})
	rel := relationship.Relationship{ID: relationship.ID(pl.c.newID("rel", pl.now)), Owner: pl.p.ProfileID,
		Subject: subj.EntityID, PredicateKey: pred.Key, PredicateVersion: pred.Version, Object: object, Polarity: pol,
		Scope: scope, Validity: relationship.Interval{From: r.ValidFrom, To: r.ValidTo}, Version: 1}
	pl.objectNames[rel.ID] = objName

	if !granted {
		rel.Status, rel.Tier = relationship.StatusPendingEvidence, relationship.TierCandidate
		pl.l.Create(&rel, obsID, ledger.ReasonEvidenceInsufficient)
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
		ValidFromConfirmed: evidence.ConfirmsValidFrom(verdict.ConfirmedValidFrom, r.ValidFrom), Corrects: r.CorrectsRelationshipID}
	ks.Touched = true
	d := relationship.Decide(pred, prop, ks.Owned(pl.p.ProfileID))
	newSupports := pl.supportLinks(r, obsID, verID)
	if d.Action == relationship.ActionSupport {
		return pl.supportExisting(out, obsID, ks.Find(d.Target), d, prop, newSupports, r.CorrectsRelationshipID, verID)
	}

	pl.l.Support(rel.ID, newSupports)
	rel.Tier = relationship.TierFor(pl.l.Supports(rel.ID))
	out.RelationshipID = rel.ID
	switch d.Action {
	case relationship.ActionCreate:
		rel.Status = relationship.StatusActive
		pl.l.Create(&rel, obsID, ledger.ReasonAccepted)
		out.Category, out.Reason = CategoryAccepted, "accepted as a current relationship"
		out.CrossReferences = pl.crossReferences(&rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, verID)
	case relationship.ActionSupersede:
		rel.Status = relationship.StatusActive
		pl.l.Create(&rel, obsID, ledger.ReasonAccepted)
		pl.supersede(ks, &rel, d.Priors)
		out.Category, out.Related = CategorySupersededPrior, d.Priors
		out.Reason = "verifier-confirmed valid_from is later than your prior relationship's; the prior is superseded"
		if !prop.ValidFromConfirmed {
			out.Reason = "explicit correction of your prior relationship; the prior is superseded"
		}
		out.CrossReferences = pl.crossReferences(&rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, verID)
	case relationship.ActionHold:
		rel.Status = relationship.StatusNeedsReview
		pl.l.Create(&rel, obsID, ledger.ReasonHeldForReview)
		pl.hold(&out, obsID, &rel, d.Priors)
	}
	out.Status, out.Tier = rel.Status, rel.Tier
	return out
}

// supportExisting adds the new support to target, an identical relationship of the caller's: an
// active one may gain a tier; a pending one is re-planned (Decide's Promote) and becomes current,
// supersedes the caller's prior, or is held.
func (pl *planner) supportExisting(out RelationshipOutcome, obsID string, target *relationship.Relationship,
	d relationship.Decision, prop relationship.Proposed, links []store.SupportLinkRow, corrects relationship.ID,
	verID string) RelationshipOutcome {
	pl.l.Support(target.ID, links)
	tier := relationship.TierFor(pl.l.Supports(target.ID))
	out.RelationshipID = target.ID
	switch {
	case target.Status == relationship.StatusActive:
		out.Category, out.Reason = CategorySupported, "an identical relationship of yours gained support"
		if tier != target.Tier {
			pl.l.Change(target, target.Status, tier, ledger.ReasonSupportAdded)
		}
	case d.Promote == relationship.ActionHold:
		pl.l.Change(target, relationship.StatusNeedsReview, tier, ledger.ReasonEvidenceAcceptedHeld)
		pl.hold(&out, obsID, target, d.Priors)
	default:
		pl.l.Change(target, relationship.StatusActive, tier, ledger.ReasonEvidenceAccepted)
		out.Category, out.Reason = CategorySupported, "your pending relationship gained support and is now current"
		if d.Promote == relationship.ActionSupersede {
			pl.supersede(pl.l.Key(conflict.Key{Team: pl.p.TeamID, Subject: target.Subject, PredicateKey: target.PredicateKey,
				Scope: target.Scope}), target, d.Priors)
			out.Category, out.Related = CategorySupersededPrior, d.Priors
			out.Reason = "your pending relationship gained dated support and supersedes your prior relationship"
		}
		// The new evidence confirms the pending relationship's own valid_from only when it names it.
		confirmed := prop.ValidFromConfirmed && target.Validity.From != nil && prop.Validity.From != nil &&
			target.Validity.From.Equal(*prop.Validity.From)
		out.CrossReferences = pl.crossReferences(target, confirmed, corrects, verID)
	}
	out.Status, out.Tier = target.Status, target.Tier
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
	pl.l.WS.ReviewItems = append(pl.l.WS.ReviewItems, store.ReviewItemRow{Team: pl.p.TeamID, ID: rp.ReviewID,
		IngestID: pl.ingestID, PlacementItemID: itemID, Kind: kind, Profile: pl.p.ProfileID, ObservationID: obsID,
		RelationshipID: rel, Related: related, Choices: body, CreatedAt: pl.now})
	return rp
}

func (pl *planner) resolutionEvent(obsID, ref string) {
	r, m := pl.res[ref], pl.in.mentions[ref]
	pl.l.WS.Resolutions = append(pl.l.WS.Resolutions, store.ResolutionRow{Team: pl.p.TeamID, ID: pl.c.newID("res", pl.now),
		ObservationID: obsID, MentionRef: ref, MentionName: m.Name, EntityKind: m.Kind, EntityID: r.EntityID,
		Decision: r.Decision, Candidates: r.Candidates, Profile: pl.p.ProfileID, IngestID: pl.ingestID, CreatedAt: pl.now})
}

// value returns the content-addressed ID of a literal value and queues its row once.
func (pl *planner) value(t ValueType, text string) string {
	sum := sha256.Sum256([]byte(string(pl.p.TeamID) + "\x00" + string(t) + "\x00" + text))
	id := "val_" + hex.EncodeToString(sum[:13])
	if !pl.values[id] {
		pl.values[id] = true
		pl.l.WS.Values = append(pl.l.WS.Values, store.ValueRow{Team: pl.p.TeamID, ID: id, Type: string(t), Text: text, CreatedAt: pl.now})
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

// supersede closes the caller's incompatible priors at next's valid_from (an explicit correction
// without one closes them now).
func (pl *planner) supersede(ks *ledger.KeyState, next *relationship.Relationship, priors []relationship.ID) {
	end := pl.now
	if next.Validity.From != nil {
		end = *next.Validity.From
	}
	for _, id := range priors {
		pl.l.Supersede(ks.Find(id), end, next.ID, ledger.ReasonSuperseded)
	}
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
