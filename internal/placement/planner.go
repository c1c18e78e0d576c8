package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Operation is the idempotency records' name of a Remember.
const Operation = "remember"

// Params is what a placement decides from besides the locked state: the call, its request and the
// reads before the transaction.
type Params struct {
	Team    identity.TeamID
	Profile identity.ProfileID
	Request *memtype.RememberRequest
	Intake  *Intake
	// Now is the call's time: every row of the placement records it.
	Now time.Time
	// Policy is the team policy in force; Predicates the team's predicates.
	Policy     store.Policy
	Predicates []relationship.Predicate
	// Verdicts are the verifier's results by proposal ID, and Verifier its name.
	Verdicts map[string]evidence.Result
	Verifier string
	// Hash is the request's hash, recorded with its idempotency key.
	Hash string
	// NewID allocates a library ID with the given prefix at the given time.
	NewID func(prefix string, at time.Time) string
	// Restates, when set, is the caller's relationship the request states again with new evidence (a
	// Resolve's add_evidence): evidence that grants no support leaves it as it is, recording the
	// observation and its verification but no second pending relationship or review item.
	Restates relationship.ID
	// AlsoLock are conflict keys the transaction changes besides the request's own: the key of the
	// relationship a Resolve decision replaces (which its restatement may leave for another scope).
	AlsoLock []conflict.Key
	// Decided, when set, carries out what a Resolve decision does besides placing the request (the
	// rejection of the statement a correct or both_valid decision replaces) on the placement's
	// ledger, after the proposals are placed and before the placement settles: the held statements
	// are re-planned, and the cases maintained, on the decision's state.
	Decided func(l *ledger.Ledger)
}

// Planner turns one validated, verified request into the rows of its transaction and its placement.
// It is rebuilt for every transaction attempt and decides only from what that attempt read.
type Planner struct {
	Params
	in *Intake
	// the request's entities and relationships
	req *memtype.RememberRequest

	res        map[string]resolution
	candidates []identity.Entity
	// created are the entities this call creates.
	created map[identity.EntityID]bool

	ingestID string
	// l writes the call's rows and holds every owner's relationships of each key the call touches,
	// their supports, and the live and named cases.
	l         *ledger.Ledger
	fragments []store.FragmentRow
	// adoptable are the fragments the request adopts that the transaction read under its locks.
	adoptable map[evidence.FragmentID]store.FragmentRow
	values    map[string]bool
	// retiring are the request's checked source revisions (Revise) and the fragments they retire.
	retiring []retiring
}

// New returns the planner of one transaction attempt.
func New(p Params) *Planner { return &Planner{Params: p, in: p.Intake, req: p.Request} }

// Resolve resolves the mentions from the entities read under the name locks and allocates the IDs of
// the entities this call creates.
func (pl *Planner) Resolve(candidates, known []identity.Entity) {
	pl.candidates = append(append([]identity.Entity{}, candidates...), known...)
	pl.res = pl.in.resolve(candidates, known)
	real := map[identity.EntityID]identity.EntityID{}
	pl.created = map[identity.EntityID]bool{}
	for _, ref := range pl.in.order {
		r := pl.res[ref]
		if r.Decision == identity.DecisionCreated {
			real[r.entity.ID] = identity.EntityID(pl.newID("ent"))
			pl.created[real[r.entity.ID]] = true
		}
	}
	for ref, r := range pl.res {
		if id, ok := real[r.entity.ID]; ok {
			r.entity.ID, r.EntityID = id, id
			pl.res[ref] = r
		}
	}
}

// Creates reports whether the call creates entity id (after Resolve): no relationship of the
// team's can name it yet.
func (pl *Planner) Creates(id identity.EntityID) bool { return pl.created[id] }

// Adoptable takes in the fragments the request adopts as the transaction read them under its
// locks (store.IntakeLocked.Adoptable): the stored metadata its support links copy.
func (pl *Planner) Adoptable(fragments []store.FragmentRow) {
	pl.adoptable = map[evidence.FragmentID]store.FragmentRow{}
	for _, f := range fragments {
		pl.adoptable[f.ID] = f
	}
}

// Keys returns the conflict keys of every statement that may become a relationship, except those
// whose subject this call creates: no other transaction can see the new entity before commit, and
// its name lock already serialises its creators. A statement whose subject the caller's evidence
// shows is not an entity E (distinct_from_entity_ids) adds the key it would have on E, whose other
// owners' relationships it may correct, and E's identity key (DESIGN §6.5).
func (pl *Planner) Keys() []conflict.Key {
	var out []conflict.Key
	add := func(k conflict.Key) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, r := range pl.req.Proposal.Relationships {
		k, ok := pl.key(r)
		if !ok {
			continue
		}
		if pl.res[r.SubjectRef].Decision != identity.DecisionCreated {
			add(k)
		}
		for _, e := range pl.in.mentions[r.SubjectRef].DistinctFrom {
			add(conflict.Key{Team: pl.Team, Subject: e, PredicateKey: k.PredicateKey, Scope: k.Scope})
			add(conflict.IdentityKey(pl.Team, e))
		}
	}
	return out
}

// ByObject returns what a locked read of Keys may narrow (store.KeysLockParams.ByObject): for each
// key of an existing subject whose every statement in the request is about a resolved object under
// a predicate that compares statements by object (relationship.Predicate.ComparesByObject), the
// objects of those statements. Keys of a statement about an ambiguous or missing object, and the
// keys of entities stated distinct, are read whole.
//
// When the call adopts one fragment of another author, an object every statement of the call about
// which cites that fragment, all with one polarity, leaves out the other adopters of the fragment
// (store.KeyAdopters, decision 155): a Remember confirms none of them (ledger.CrossReferences), and
// none of them is an adoption's target while the author's own statement of the same object and
// polarity is read (AdoptionTargetsRead).
func (pl *Planner) ByObject() []store.KeyObject {
	type objectKey struct {
		k conflict.Key
		o relationship.Object
	}
	objects := map[conflict.Key][]relationship.Object{}
	wide := map[conflict.Key]bool{}
	adopters := map[objectKey]*store.KeyAdopters{}
	skip := map[objectKey]bool{}
	fragment, author := pl.adoptedFragment()
	var order []conflict.Key
	for _, r := range pl.req.Proposal.Relationships {
		k, ok := pl.key(r)
		if !ok || pl.res[r.SubjectRef].Decision == identity.DecisionCreated {
			continue
		}
		if _, seen := objects[k]; !seen && !wide[k] {
			order = append(order, k)
		}
		pred, _ := relationship.MatchPredicate(r.Predicate, pl.Predicates)
		obj := pl.object(r)
		if !pred.ComparesByObject() || obj == (relationship.Object{}) {
			wide[k] = true
			continue
		}
		if !slices.Contains(objects[k], obj) {
			objects[k] = append(objects[k], obj)
		}
		for _, e := range pl.in.mentions[r.SubjectRef].DistinctFrom {
			wide[conflict.Key{Team: pl.Team, Subject: e, PredicateKey: k.PredicateKey, Scope: k.Scope}] = true
		}
		ok2 := objectKey{k, obj}
		pol, _, _ := request.Normalize(r)
		switch a := adopters[ok2]; {
		case fragment == "" || skip[ok2]:
		case !pl.cites(r, fragment) || (a != nil && a.Polarity != pol):
			skip[ok2], adopters[ok2] = true, nil
		case a == nil:
			adopters[ok2] = &store.KeyAdopters{Caller: pl.Profile, Fragment: fragment, Author: author, Polarity: pol}
		}
	}
	var out []store.KeyObject
	for _, k := range order {
		if wide[k] {
			continue
		}
		for _, o := range objects[k] {
			out = append(out, store.KeyObject{Key: k, Object: o, Adopters: adopters[objectKey{k, o}]})
		}
	}
	return out
}

// AdoptionTargetsRead reports whether kl, read with ByObject's narrowing, holds every relationship
// an adoption of the call may link to (ledger.Adopts): for each statement citing the fragment the
// call adopts on a key read by object, the author's own live statement of its object and polarity
// that the fragment supports — the first choice of ledger's adoptionTarget, so that neither the other
// adopters ByObject leaves out nor the author's statements about other objects could be chosen.
// When it reports false the caller reads the keys whole.
func (pl *Planner) AdoptionTargetsRead(byObject []store.KeyObject, kl store.KeysLocked) bool {
	fragment, author := pl.adoptedFragment()
	if fragment == "" {
		return len(pl.in.Adopt) == 0
	}
	narrowed := map[conflict.Key]bool{}
	for _, o := range byObject {
		narrowed[o.Key] = true
	}
	supported := map[relationship.ID]bool{}
	for _, s := range kl.Supports {
		if s.FragmentID == fragment && s.Author == author {
			supported[s.RelationshipID] = true
		}
	}
	for _, r := range pl.req.Proposal.Relationships {
		k, ok := pl.key(r)
		if !ok || !narrowed[k] || !pl.cites(r, fragment) {
			continue
		}
		obj := pl.object(r)
		pol, _, _ := request.Normalize(r)
		if !slices.ContainsFunc(kl.Relationships, func(o relationship.Relationship) bool {
			return o.Owner == author && o.Subject == k.Subject && o.PredicateKey == k.PredicateKey && o.Scope == k.Scope &&
				o.Object == obj && o.Polarity == pol && o.Status.Live() && supported[o.ID]
		}) {
			return false
		}
	}
	return true
}

// adoptedFragment returns the one fragment the call adopts and its author, when it adopts exactly
// one, read under the locks (Adoptable), whose author is not the caller; else "".
func (pl *Planner) adoptedFragment() (evidence.FragmentID, identity.ProfileID) {
	if len(pl.in.Adopt) != 1 {
		return "", ""
	}
	f, ok := pl.adoptable[pl.in.Adopt[0]]
	if !ok || f.Author == pl.Profile {
		return "", ""
	}
	return f.ID, f.Author
}

// cites reports whether statement r cites an evidence item adopting fragment.
func (pl *Planner) cites(r memtype.ProposedRelationship, fragment evidence.FragmentID) bool {
	return slices.ContainsFunc(r.Evidence, func(c memtype.Citation) bool {
		return c.EvidenceIndex >= 0 && c.EvidenceIndex < len(pl.req.Evidence) && pl.req.Evidence[c.EvidenceIndex].AdoptFragmentID == fragment
	})
}

// object returns statement r's object as the planner resolved it (zero when it has none).
func (pl *Planner) object(r memtype.ProposedRelationship) relationship.Object {
	var obj relationship.Object
	switch {
	case r.ObjectValue != nil:
		text, _ := request.CanonicalValue(*r.ObjectValue, math.MaxInt)
		obj.ValueID = valueID(pl.Team, r.ObjectValue.Type, text)
	case r.ObjectRef != "":
		obj.EntityID = pl.res[r.ObjectRef].EntityID
	}
	return obj
}

// distinctFrom returns the entities the caller's evidence shows entity id is not: the
// distinct_from_entity_ids of the mentions that resolved to it.
func (pl *Planner) distinctFrom(id identity.EntityID) []identity.EntityID {
	var out []identity.EntityID
	for _, ref := range pl.in.order {
		if pl.res[ref].EntityID == id {
			for _, e := range pl.in.mentions[ref].DistinctFrom {
				if !slices.Contains(out, e) {
					out = append(out, e)
				}
			}
		}
	}
	return out
}

func (pl *Planner) key(r memtype.ProposedRelationship) (conflict.Key, bool) {
	_, mod, scope := request.Normalize(r)
	pred, ok := relationship.MatchPredicate(r.Predicate, pl.Predicates)
	subj := pl.res[r.SubjectRef]
	if !ok || mod != relationship.ModalityStatement || subj.Decision == identity.DecisionAmbiguous ||
		(r.ObjectRef != "" && pl.res[r.ObjectRef].Decision == identity.DecisionAmbiguous) {
		return conflict.Key{}, false
	}
	return conflict.Key{Team: pl.Team, Subject: subj.EntityID, PredicateKey: pred.Key, Scope: scope}, true
}

// Plan builds the write set and the placement from the locked state of the keys.
func (pl *Planner) Plan(kl store.KeysLocked) (store.WriteSet, *memtype.Placement, error) {
	l, out, err := pl.Rows(kl)
	if err != nil {
		return store.WriteSet{}, nil, err
	}
	result, err := json.Marshal(out)
	if err != nil {
		return store.WriteSet{}, nil, err
	}
	l.WS.Idempotency = &store.IdempotencyRow{Team: pl.Team, Profile: pl.Profile, Key: pl.req.IdempotencyKey,
		Operation: Operation, RequestHash: pl.Hash, IngestID: pl.ingestID, Result: result, CreatedAt: pl.Now}
	return l.WS, out, nil
}

// Rows plans the placement's rows, as Plan does, without the idempotency record, and returns the
// ledger holding them: a caller that places a request on behalf of another call (Resolve) records
// its own decision and result on it.
func (pl *Planner) Rows(kl store.KeysLocked) (*ledger.Ledger, *memtype.Placement, error) {
	pl.ingestID = pl.newID("ing")
	pl.values = map[string]bool{}
	pl.l = &ledger.Ledger{Team: pl.Team, Actor: ledger.ProfileActor(pl.Profile), IngestID: pl.ingestID,
		IdempotencyKey: pl.req.IdempotencyKey, Now: pl.Now, Policy: pl.Policy, NewID: pl.newID}
	pl.l.Load(kl, pl.Predicates)
	if err := pl.checkReferences(); err != nil {
		return nil, nil, err
	}
	if err := pl.checkAdoptable(); err != nil {
		return nil, nil, err
	}
	out := &memtype.Placement{IngestID: pl.ingestID, Fragments: []memtype.FragmentOutcome{}, Entities: []memtype.EntityOutcome{},
		RelationshipOutcomes: []memtype.RelationshipOutcome{}}
	pl.writeFragments(out)
	pl.writeEntities(out)
	pl.retire(out)
	for i, r := range pl.req.Proposal.Relationships {
		out.RelationshipOutcomes = append(out.RelationshipOutcomes, pl.place(i, r))
	}
	if pl.Decided != nil {
		pl.Decided(pl.l)
	}
	pl.settled(out, pl.l.Settle())
	pl.maintainCases(out)
	return pl.l, out, nil
}

// newID allocates an ID at the call's time.
func (pl *Planner) newID(prefix string) string { return pl.NewID(prefix, pl.Now) }

// checkReferences fails the call, before anything is planned, when a conflict response is stale or
// not material to its case, or when corrects_relationship_id names a relationship outside the
// proposal's conflict key.
func (pl *Planner) checkReferences() error {
	var ps request.Problems
	for i, r := range pl.req.Proposal.Relationships {
		path := fmt.Sprintf("proposal.relationships[%d]", i)
		k, ok := pl.key(r)
		if cr := r.ConflictResponse; cr != nil {
			c := pl.l.Case(conflict.ID(cr.ConflictID))
			switch {
			case c == nil:
				ps.Add(path+".conflict_response.conflict_id", "%s is not a conflict case of the caller's team", cr.ConflictID)
			case !c.Status.Live() || c.Version != cr.ExpectedVersion:
				return fmt.Errorf("%w: case %s is %s at version %d, the response expected version %d",
					store.ErrStaleConflictVersion, c.ID, c.Status, c.Version, cr.ExpectedVersion)
			case !ok || k != c.Key:
				return fmt.Errorf("%w: proposal %q is not about the case's subject, predicate and scope",
					store.ErrNotMaterialToConflict, r.ProposalID)
			}
		}
		if id := r.CorrectsRelationshipID; id != "" {
			found := false
			if ok {
				found = pl.l.Key(k).Find(id) != nil
			}
			if !found {
				ps.Add(path+".corrects_relationship_id", "%s is not a relationship of the proposal's subject, predicate and scope", id)
			}
		}
	}
	return ps.Err()
}

// checkAdoptable fails the call, before anything is planned, when a fragment the request adopts
// can no longer be adopted under the transaction's locks (it was checked before the transaction).
func (pl *Planner) checkAdoptable() error {
	var ps request.Problems
	for i, ev := range pl.req.Evidence {
		if _, ok := pl.adoptable[ev.AdoptFragmentID]; ev.Adopts() && !ok {
			ps.Add(fmt.Sprintf("evidence[%d].adopt_fragment_id", i), "%s is not a fragment of the caller's team that may be adopted",
				ev.AdoptFragmentID)
		}
	}
	return ps.Err()
}

// maintainCases repairs, opens or dismisses the case of every key the call touched, and names the
// resulting case on the outcomes of the key's relationships.
func (pl *Planner) maintainCases(out *memtype.Placement) {
	refs := map[relationship.ID]*memtype.ConflictRef{}
	for _, ks := range pl.l.Touched() {
		ref := pl.l.Maintain(ks)
		if ref == nil {
			continue
		}
		for _, r := range ks.Rels {
			refs[r.ID] = &memtype.ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
		}
	}
	// The identity cases after the cross-profile ones: a relationship in both names its key's case.
	for id, ref := range pl.l.MaintainIdentities() {
		if _, ok := refs[id]; !ok {
			refs[id] = &memtype.ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
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
func (pl *Planner) crossReferences(rel *relationship.Relationship, confirmed bool, corrects relationship.ID,
	verID string) []memtype.CrossReferenceOutcome {
	var out []memtype.CrossReferenceOutcome
	xs := pl.l.CrossReferences(rel, confirmed, corrects, verID)
	for _, e := range pl.distinctFrom(rel.Subject) {
		xs = append(xs, pl.l.CorrectIdentity(rel, e, verID)...)
	}
	for _, x := range xs {
		out = append(out, memtype.CrossReferenceOutcome{CrossReferenceID: x.ID, Kind: x.Kind, ToRelationshipID: x.To})
	}
	return out
}

// writeFragments stores the request's new evidence items and lists every item's fragment: a new
// one, or the existing one an item adopts (stored nothing, its author and group kept).
func (pl *Planner) writeFragments(out *memtype.Placement) {
	pl.fragments = make([]store.FragmentRow, len(pl.req.Evidence))
	for i, ev := range pl.req.Evidence {
		if ev.Adopts() {
			f := pl.adoptable[ev.AdoptFragmentID]
			pl.fragments[i] = f
			out.Fragments = append(out.Fragments, memtype.FragmentOutcome{EvidenceIndex: i, FragmentID: f.ID, SourceGroup: f.SourceGroup,
				Adopted: true, AuthorProfileID: f.Author})
			continue
		}
		f := fragment(pl.Team, pl.Profile, pl.ingestID, i, ev, pl.Now, pl.newID)
		pl.fragments[i] = f
		pl.l.WS.Fragments = append(pl.l.WS.Fragments, f)
		out.Fragments = append(out.Fragments, memtype.FragmentOutcome{EvidenceIndex: i, FragmentID: f.ID, SourceGroup: f.SourceGroup})
	}
}

// Fragments returns the fragment rows of a call's evidence items, authored by profile, in request
// order: the verbatim content, its hash, its source group label (evidence.GroupLabel) and the
// authority (standard when none is given). Remember stores a request's evidence with it, and a split
// or merge its distinguishing evidence.
func Fragments(team identity.TeamID, profile identity.ProfileID, ingestID string, items []memtype.EvidenceInput, now time.Time,
	newID func(prefix string) string) []store.FragmentRow {
	out := make([]store.FragmentRow, 0, len(items))
	for i, ev := range items {
		out = append(out, fragment(team, profile, ingestID, i, ev, now, newID))
	}
	return out
}

// fragment is the fragment row of request evidence item i, authored by profile.
func fragment(team identity.TeamID, profile identity.ProfileID, ingestID string, i int, ev memtype.EvidenceInput, now time.Time,
	newID func(prefix string) string) store.FragmentRow {
	auth := ev.Authority
	if auth == "" {
		auth = evidence.AuthorityStandard
	}
	hash := evidence.ContentHash(ev.Content)
	return store.FragmentRow{Team: team, ID: evidence.FragmentID(newID("frg")), IngestID: ingestID,
		EvidenceIndex: i, Author: profile, SourceType: ev.SourceType, Authority: auth,
		SourceGroup: evidence.GroupLabel(ev.SourceKey, ev.SourceGroup, hash), SourceKey: ev.SourceKey,
		Revision: ev.SourceRevision, ContentHash: hash, Content: ev.Content, CreatedAt: now}
}

func (pl *Planner) writeEntities(out *memtype.Placement) {
	created := map[identity.EntityID]bool{}
	for _, ref := range pl.in.order {
		r := pl.res[ref]
		eo := memtype.EntityOutcome{Ref: ref, Decision: r.Decision, EntityID: r.EntityID, CandidatesTruncated: r.Truncated}
		for _, id := range r.Candidates {
			eo.Candidates = append(eo.Candidates, pl.candidate(id))
		}
		out.Entities = append(out.Entities, eo)
		if r.Decision != identity.DecisionCreated || created[r.EntityID] {
			continue
		}
		created[r.EntityID] = true
		pl.l.WS.Entities = append(pl.l.WS.Entities, store.EntityRow{Team: pl.Team, ID: r.EntityID, Kind: r.entity.Kind,
			Context: r.entity.Context, CreatedBy: pl.Profile, IngestID: pl.ingestID, CreatedAt: pl.Now})
		for _, n := range r.entity.Names {
			pl.l.WS.EntityNames = append(pl.l.WS.EntityNames, store.EntityNameRow{Team: pl.Team, EntityID: r.EntityID,
				Name: n.Name, Normalized: n.Normalized, Skeleton: identity.Skeleton(n.Normalized), Kind: n.Kind, CreatedAt: pl.Now})
		}
	}
}

func (pl *Planner) candidate(id identity.EntityID) memtype.EntityCandidate {
	for _, e := range pl.candidates {
		if e.ID == id {
			return memtype.EntityCandidate{EntityID: id, Name: e.CanonicalName(), EntityKind: e.Kind, IdentityContext: e.Context}
		}
	}
	return memtype.EntityCandidate{EntityID: id}
}

// item is one proposal relationship while it is placed: its defaults applied, what its mentions and
// predicate resolved to, and the observation and verification recorded for it.
type item struct {
	r         memtype.ProposedRelationship
	pol       relationship.Polarity
	mod       relationship.Modality
	scope     string
	pred      relationship.Predicate
	predOK    bool
	subj, obj resolution
	// objName is the object's name or canonical literal, objKind its entity kind ("" for a literal),
	// value the canonical literal.
	objName, objKind, value string
	obsID, verID            string
	verdict                 evidence.Result
	verified, granted       bool
}

// place records the observation of proposal relationship i and decides what it does.
func (pl *Planner) place(i int, r memtype.ProposedRelationship) memtype.RelationshipOutcome {
	// 1. Record the observation, its identity resolutions and its verification event.
	it := pl.observe(r)
	out := memtype.RelationshipOutcome{ProposalID: r.ProposalID, PlacementItemID: fmt.Sprintf("item_relationship_%d", i+1),
		ObservationID: it.obsID}
	// 2. The gate: what stays an observation, needs review, or is rejected.
	if gated, ok := pl.gate(it, out); ok {
		return gated
	}
	// 3. The relationship it states: pending while the evidence grants no support.
	object := relationship.Object{EntityID: it.obj.EntityID}
	if r.ObjectValue != nil {
		object = relationship.Object{ValueID: pl.value(r.ObjectValue.Type, it.value)}
	}
	rel := relationship.Relationship{ID: relationship.ID(pl.newID("rel")), Owner: pl.Profile,
		Subject: it.subj.EntityID, PredicateKey: it.pred.Key, PredicateVersion: it.pred.Version, Object: object, Polarity: it.pol,
		Scope: it.scope, Validity: relationship.Interval{From: r.ValidFrom, To: r.ValidTo}, Version: 1}
	pl.l.Name(rel.ID, it.objName, rel.Subject, pl.in.mentions[r.SubjectRef].Name)
	switch {
	case !it.granted && pl.Restates != "":
		out.RelationshipID, out.Category, out.Status = pl.Restates, memtype.CategoryPendingEvidence, relationship.StatusPendingEvidence
		out.Reason = "the new evidence does not yet support the claim" + verdictNote(it)
		return out
	case !it.granted:
		return pl.pending(it, out, &rel)
	}
	// 4. Accepted: the current-state decision among the owner's relationships of the key.
	return pl.accept(it, out, &rel)
}

// observe records the observation of r with the resolution of its mentions, and the verifier's
// event when it verified r, and returns the item.
func (pl *Planner) observe(r memtype.ProposedRelationship) item {
	it := item{r: r, obsID: pl.newID("obs"), subj: pl.res[r.SubjectRef]}
	it.pol, it.mod, it.scope = request.Normalize(r)
	it.pred, it.predOK = relationship.MatchPredicate(r.Predicate, pl.Predicates)
	var valueJSON json.RawMessage
	if r.ObjectValue != nil {
		it.value, _ = request.CanonicalValue(*r.ObjectValue, math.MaxInt) // validated: within the text limit
		it.objName = it.value
		valueJSON, _ = json.Marshal(memtype.ObjectValue{Type: r.ObjectValue.Type, Value: it.value})
	} else {
		it.obj = pl.res[r.ObjectRef]
		it.objName, it.objKind = pl.in.mentions[r.ObjectRef].Name, pl.in.mentions[r.ObjectRef].Kind
	}
	cites, _ := json.Marshal(pl.storedCitations(r.Evidence))
	o := store.ObservationRow{Team: pl.Team, ID: it.obsID, IngestID: pl.ingestID, Profile: pl.Profile,
		ProposalID: r.ProposalID, SubjectRef: r.SubjectRef, SubjectName: pl.in.mentions[r.SubjectRef].Name,
		PredicatePhrase: r.Predicate, ObjectRef: r.ObjectRef, ObjectName: it.objName, ObjectValue: valueJSON,
		Polarity: it.pol, Modality: it.mod, Scope: it.scope, ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, Citations: cites,
		CreatedAt: pl.Now}
	if it.predOK {
		o.PredicateKey, o.PredicateVersion = it.pred.Key, it.pred.Version
	}
	pl.l.WS.Observations = append(pl.l.WS.Observations, o)
	pl.resolutionEvent(it.obsID, r.SubjectRef)
	if r.ObjectRef != "" {
		pl.resolutionEvent(it.obsID, r.ObjectRef)
	}
	it.verdict, it.verified = pl.Verdicts[r.ProposalID]
	it.granted = it.verified && it.verdict.Grants(pl.Policy.AutoWriteThreshold)
	if it.verified {
		it.verID = pl.newID("ver")
		pl.l.WS.Verifications = append(pl.l.WS.Verifications, store.VerificationRow{Team: pl.Team, ID: it.verID,
			ObservationID: it.obsID, Verifier: pl.Verifier, Verdict: it.verdict.Verdict, Confidence: it.verdict.Confidence,
			Rationale: it.verdict.Rationale, ConfirmedValidFrom: it.verdict.ConfirmedValidFrom, SupportGranted: it.granted,
			CreatedAt: pl.Now})
	}
	return it
}

// storedCitations are cs as the observation records them: each citation of an adopted item names
// the fragment it adopted.
func (pl *Planner) storedCitations(cs []memtype.Citation) []request.StoredCitation {
	out := make([]request.StoredCitation, len(cs))
	for i, c := range cs {
		out[i] = request.StoredCitation{Citation: c, AdoptFragmentID: pl.req.Evidence[c.EvidenceIndex].AdoptFragmentID}
	}
	return out
}

// gate decides the outcome of an item that becomes no relationship (ok true): a modality other than a
// statement, an ambiguous mention, a predicate that is not registered or does not fit its subject or
// object, or a claim the verifier found contradicted.
func (pl *Planner) gate(it item, out memtype.RelationshipOutcome) (memtype.RelationshipOutcome, bool) {
	switch {
	case it.mod != relationship.ModalityStatement:
		out.Category = memtype.CategoryNotAsserted
		out.Reason = fmt.Sprintf("modality %q is kept as an observation only", it.mod)
		return out, true
	case it.subj.Decision == identity.DecisionAmbiguous || it.obj.Decision == identity.DecisionAmbiguous:
		return pl.identityReview(out, it.obsID, it.r, it.subj, it.obj), true
	case !it.predOK:
		return pl.predicateReview(out, it.obsID, fmt.Sprintf("predicate %q is not registered for this team", it.r.Predicate)), true
	case !it.pred.AllowsSubject(it.subj.entity.Kind):
		return pl.predicateReview(out, it.obsID, fmt.Sprintf("predicate %q does not accept a %s subject", it.pred.Key,
			it.subj.entity.Kind)), true
	case !it.pred.AllowsObject(it.objKind):
		what := "a literal value"
		if it.objKind != "" {
			what = "a " + it.objKind + " object"
		}
		return pl.predicateReview(out, it.obsID, fmt.Sprintf("predicate %q does not accept %s", it.pred.Key, what)), true
	case it.verified && it.verdict.Verdict == evidence.VerdictContradicted:
		out.Category, out.Status = memtype.CategoryRejected, relationship.StatusRejected
		out.Reason = "the verifier found the cited evidence contradicts the claim: " + it.verdict.Rationale
		return out, true
	}
	return out, false
}

// verdictNote describes the verifier's verdict on it, "" when it was not verified.
func verdictNote(it item) string {
	if !it.verified {
		return ""
	}
	return fmt.Sprintf(" (verdict %s, confidence %.2f: %s)", it.verdict.Verdict, it.verdict.Confidence, it.verdict.Rationale)
}

// pending records rel as pending evidence, with the review item that asks for evidence.
func (pl *Planner) pending(it item, out memtype.RelationshipOutcome, rel *relationship.Relationship) memtype.RelationshipOutcome {
	rel.Status, rel.Tier = relationship.StatusPendingEvidence, relationship.TierCandidate
	pl.l.Create(rel, it.obsID, ledger.ReasonEvidenceInsufficient)
	out.RelationshipID, out.Category, out.Status, out.Tier = rel.ID, memtype.CategoryPendingEvidence, rel.Status, rel.Tier
	out.Reason = "the evidence does not yet support the claim" + verdictNote(it)
	prompt := memtype.ReviewPrompt{Question: "Which evidence states this relationship? Submit exact evidence, or reject the claim.",
		Choices: pl.l.WithImpact(pl.keyOf(rel), rel, nil, []memtype.ReviewChoice{{Action: "add_evidence", Description: "remember new evidence that states the relationship"},
			{Action: ledger.ActionAccept, Description: "accept the relationship with exact evidence, verified like any; an accept " +
				"without evidence grants nothing"},
			{Action: ledger.ActionReject, Description: "reject the pending relationship"},
			{Action: ledger.ActionCorrect, Description: "state the correct relationship with new evidence instead"}})}
	if it.verified {
		prompt.Verdict = &memtype.ReviewVerdict{Verdict: string(it.verdict.Verdict), Confidence: it.verdict.Confidence,
			Rationale: it.verdict.Rationale}
	}
	out.Review = pl.review(out.PlacementItemID, "pending_evidence", it.obsID, rel.ID, nil, prompt)
	return out
}

// accept places rel, whose evidence grants support, by the current-state decision among the owner's
// relationships of its key (relationship.Decide): it supports an identical one, becomes current,
// supersedes the owner's incompatible priors, or is held for review against them.
func (pl *Planner) accept(it item, out memtype.RelationshipOutcome, rel *relationship.Relationship) memtype.RelationshipOutcome {
	r := it.r
	ks := pl.l.Key(conflict.Key{Team: pl.Team, Subject: it.subj.EntityID, PredicateKey: it.pred.Key, Scope: it.scope})
	prop := relationship.Proposed{Object: rel.Object, Polarity: it.pol, Validity: rel.Validity,
		ValidFromConfirmed: evidence.ConfirmsValidFrom(it.verdict.ConfirmedValidFrom, r.ValidFrom), Corrects: r.CorrectsRelationshipID}
	ks.Touched = true
	d := relationship.Decide(it.pred, prop, ks.Owned(pl.Profile))
	newSupports := pl.supportLinks(r, it.obsID, it.verID)
	if d.Action == relationship.ActionSupport {
		target := ks.Find(d.Target)
		out = pl.supportExisting(out, it.obsID, target, d, prop, newSupports, r.CorrectsRelationshipID, it.verID)
		out.CrossReferences = append(out.CrossReferences, pl.adoptions(target, r, it.verID)...)
		return out
	}
	pl.l.Support(rel.ID, newSupports)
	rel.Tier = relationship.TierFor(pl.l.Supports(rel.ID))
	out.RelationshipID = rel.ID
	switch d.Action {
	case relationship.ActionCreate:
		rel.Status = relationship.StatusActive
		pl.l.Create(rel, it.obsID, ledger.ReasonAccepted)
		out.Category, out.Reason = memtype.CategoryAccepted, "accepted as a current relationship"
		out.CrossReferences = pl.crossReferences(rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, it.verID)
	case relationship.ActionSupersede:
		rel.Status = relationship.StatusActive
		pl.l.Create(rel, it.obsID, ledger.ReasonAccepted)
		pl.supersede(ks, rel, d.Priors)
		out.Category, out.Related = memtype.CategorySupersededPrior, d.Priors
		out.Reason = "verifier-confirmed valid_from is later than your prior relationship's; the prior is superseded"
		if !prop.ValidFromConfirmed {
			out.Reason = "explicit correction of your prior relationship; the prior is superseded"
		}
		out.CrossReferences = pl.crossReferences(rel, prop.ValidFromConfirmed, r.CorrectsRelationshipID, it.verID)
	case relationship.ActionHold:
		rel.Status = relationship.StatusNeedsReview
		pl.l.Create(rel, it.obsID, ledger.ReasonHeldForReview)
		pl.hold(&out, rel, d.Priors)
	}
	out.CrossReferences = append(out.CrossReferences, pl.adoptions(rel, r, it.verID)...)
	out.Status, out.Tier = rel.Status, rel.Tier
	return out
}

// adoptions records the adopts_evidence_from cross-references of the fragments r's citations adopt
// (ledger.Adopts), from rel, which just gained their support, and returns them as outcomes.
func (pl *Planner) adoptions(rel *relationship.Relationship, r memtype.ProposedRelationship, verID string) []memtype.CrossReferenceOutcome {
	var seen []evidence.FragmentID
	var out []memtype.CrossReferenceOutcome
	for _, c := range r.Evidence {
		id := pl.req.Evidence[c.EvidenceIndex].AdoptFragmentID
		if id == "" || slices.Contains(seen, id) {
			continue
		}
		seen = append(seen, id)
		for _, x := range pl.l.Adopts(rel, id, verID) {
			out = append(out, memtype.CrossReferenceOutcome{CrossReferenceID: x.ID, Kind: x.Kind, ToRelationshipID: x.To})
		}
	}
	return out
}

// supportExisting adds the new support to target, an identical relationship of the caller's: an
// active one may gain a tier; a pending one is re-planned (Decide's Promote) and becomes current,
// supersedes the caller's prior, or is held.
func (pl *Planner) supportExisting(out memtype.RelationshipOutcome, obsID string, target *relationship.Relationship,
	d relationship.Decision, prop relationship.Proposed, links []store.SupportLinkRow, corrects relationship.ID,
	verID string) memtype.RelationshipOutcome {
	pl.l.Support(target.ID, links)
	tier := relationship.TierFor(pl.l.Supports(target.ID))
	out.RelationshipID = target.ID
	switch {
	case target.Status == relationship.StatusActive:
		out.Category, out.Reason = memtype.CategorySupported, "an identical relationship of yours gained support"
		if tier != target.Tier {
			pl.l.Change(target, target.Status, tier, ledger.ReasonSupportAdded)
		}
	case d.Promote == relationship.ActionHold && target.Status == relationship.StatusNeedsReview:
		// The same question again: the held statement gains the support; its item asks on (and is
		// asked again if the support moved its tier).
		if tier != target.Tier {
			pl.l.Change(target, target.Status, tier, ledger.ReasonSupportAdded)
		}
		pl.hold(&out, target, d.Priors)
		out.Reason = "an identical statement of yours is held for review: it gained this support, and its question stands"
	case d.Promote == relationship.ActionHold:
		pl.l.Change(target, relationship.StatusNeedsReview, tier, ledger.ReasonEvidenceAcceptedHeld)
		pl.hold(&out, target, d.Priors)
	default:
		pl.l.Change(target, relationship.StatusActive, tier, ledger.ReasonEvidenceAccepted)
		out.Category, out.Reason = memtype.CategorySupported, "your pending or held relationship gained support and is now current"
		if d.Promote == relationship.ActionSupersede {
			pl.supersede(pl.l.Key(conflict.Key{Team: pl.Team, Subject: target.Subject, PredicateKey: target.PredicateKey,
				Scope: target.Scope}), target, d.Priors)
			out.Category, out.Related = memtype.CategorySupersededPrior, d.Priors
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

// hold fills the outcome of a relationship held as needs_review against the owner's current priors;
// the question is asked when the placement is settled (ledger.Settle), under the outcome's item.
func (pl *Planner) hold(out *memtype.RelationshipOutcome, rel *relationship.Relationship, priors []relationship.ID) {
	out.Category, out.Related = memtype.CategoryNeedsReview, priors
	out.Reason = "conflicts with your current relationship and the evidence does not establish replacement " +
		"(no verifier-confirmed valid_from later than the prior's)"
	pl.l.AskAs(rel.ID, out.PlacementItemID)
}

// keyOf returns the ledger's state of rel's key.
func (pl *Planner) keyOf(rel *relationship.Relationship) *ledger.KeyState {
	return pl.l.Key(conflict.Key{Team: pl.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
}

// settled brings the outcomes up to the state the placement settled in (ledger.Settle, given what it
// asked): a held statement's outcome carries the item that asks its question now; one that became
// current within the call, or a support of its owner's identical current relationship, says so.
func (pl *Planner) settled(out *memtype.Placement, asked map[relationship.ID]ledger.Asked) {
	for i := range out.RelationshipOutcomes {
		o := &out.RelationshipOutcomes[i]
		if o.RelationshipID == "" || o.Category == memtype.CategoryPendingEvidence {
			continue
		}
		if twin := pl.l.AbsorbedInto(o.RelationshipID); twin != "" {
			o.RelationshipID, o.Category, o.Related, o.Review = twin, memtype.CategorySupported, nil, nil
			o.Reason = "identical to your current relationship, which it now supports"
		}
		r := pl.l.Find(o.RelationshipID)
		if r == nil {
			continue
		}
		switch {
		case r.Status == relationship.StatusNeedsReview:
			o.Category = memtype.CategoryNeedsReview
			if a, ok := asked[r.ID]; ok {
				o.Review = a.Review
			} else if item, ok := pl.l.OpenItem(r.ID); ok {
				var prompt memtype.ReviewPrompt
				if json.Unmarshal(item.Choices, &prompt) == nil {
					o.Review = &prompt
				}
			}
			if item, ok := pl.l.OpenItem(r.ID); ok {
				o.Related = make([]relationship.ID, len(item.Related))
				for j, id := range item.Related {
					o.Related[j] = relationship.ID(id)
				}
			}
		case r.Status == relationship.StatusActive && o.Category == memtype.CategoryNeedsReview:
			o.Category, o.Related, o.Review = memtype.CategoryAccepted, nil, nil
			o.Reason = "accepted as a current relationship: what it was held against left current state in this call"
		}
		o.Status, o.Tier = r.Status, r.Tier
	}
}

func (pl *Planner) identityReview(out memtype.RelationshipOutcome, obsID string, r memtype.ProposedRelationship, subj, obj resolution) memtype.RelationshipOutcome {
	out.Category = memtype.CategoryIdentityReview
	var cands []memtype.EntityCandidate
	var names []string
	var mentions []memtype.ReviewMention
	for _, x := range []struct {
		ref string
		res resolution
	}{{r.SubjectRef, subj}, {r.ObjectRef, obj}} {
		if x.res.Decision != identity.DecisionAmbiguous {
			continue
		}
		m := pl.in.mentions[x.ref]
		names = append(names, fmt.Sprintf("%q", m.Name))
		rm := memtype.ReviewMention{Ref: x.ref, Name: m.Name, EntityKind: m.Kind, CandidateIDs: x.res.Candidates,
			LookAlike: x.res.LookAlike, Broader: x.res.Broader}
		if len(m.Context) > 0 {
			rm.IdentityContext = m.Context
		}
		mentions = append(mentions, rm)
		for _, id := range x.res.Candidates {
			cands = append(cands, pl.candidate(id))
		}
	}
	switch {
	case subj.LookAlike || obj.LookAlike:
		out.Reason = strings.Join(names, " and ") + " looks like the name of an existing entity written with other characters"
	case subj.Broader || obj.Broader:
		out.Reason = strings.Join(names, " and ") + " may be another profile's entity of that name, which states less " +
			"identity context than this mention: the same identity, or a narrower one"
	default:
		out.Reason = "more than one entity matches " + strings.Join(names, " and ")
	}
	out.Review = pl.review(out.PlacementItemID, "identity", obsID, "", nil, memtype.ReviewPrompt{
		Question: fmt.Sprintf("Which entity is %s?", strings.Join(names, " and ")),
		Choices: []memtype.ReviewChoice{{Action: "select_entity", Description: "select one of the server-supplied candidates"},
			{Action: "confirm_new_entity", Description: "confirm a new entity, with evidence that distinguishes it"}},
		EntityCandidates: cands, Mentions: mentions})
	return out
}

func (pl *Planner) predicateReview(out memtype.RelationshipOutcome, obsID, reason string) memtype.RelationshipOutcome {
	out.Category, out.Reason = memtype.CategoryPredicateReview, reason
	opts := make([]memtype.PredicateOption, 0, len(pl.Predicates))
	for _, p := range pl.Predicates {
		opts = append(opts, memtype.PredicateOption{Key: p.Key, Description: p.Description})
	}
	out.Review = pl.review(out.PlacementItemID, "predicate", obsID, "", nil, memtype.ReviewPrompt{
		Question: "Which registered predicate does this observation mean?",
		Choices: []memtype.ReviewChoice{{Action: "select_predicate", Description: "select one of the registered predicates"},
			{Action: "reject_mapping", Description: "reject the observation's mapping"},
			{Action: "propose_vocabulary_change", Description: "route a new predicate through the vocabulary workflow"}},
		PredicateOptions: opts})
	return out
}

func (pl *Planner) review(itemID, kind, obsID string, rel relationship.ID, related []string, prompt memtype.ReviewPrompt) *memtype.ReviewPrompt {
	rp := &prompt
	rp.ReviewID, rp.Kind = pl.newID("rev"), kind
	body, _ := json.Marshal(rp)
	row := store.ReviewItemRow{Team: pl.Team, ID: rp.ReviewID, IngestID: pl.ingestID, PlacementItemID: itemID, Kind: kind,
		Profile: pl.Profile, ObservationID: obsID, RelationshipID: rel, Related: related, Choices: body, CreatedAt: pl.Now}
	// The versions the question is about: a decision on the item is stale once one of them moved.
	if r := pl.l.Find(rel); r != nil {
		row.RelationshipVersion = r.Version
	}
	for _, id := range related {
		v := 0
		if r := pl.l.Find(relationship.ID(id)); r != nil {
			v = r.Version
		}
		row.RelatedVersions = append(row.RelatedVersions, v)
	}
	pl.l.WS.ReviewItems = append(pl.l.WS.ReviewItems, row)
	return rp
}

func (pl *Planner) resolutionEvent(obsID, ref string) {
	r, m := pl.res[ref], pl.in.mentions[ref]
	pl.l.WS.Resolutions = append(pl.l.WS.Resolutions, store.ResolutionRow{Team: pl.Team, ID: pl.newID("res"),
		ObservationID: obsID, MentionRef: ref, MentionName: m.Name, EntityKind: m.Kind, EntityID: r.EntityID,
		Decision: r.Decision, Candidates: r.Candidates, Context: m.Context, DistinctFrom: m.DistinctFrom, Profile: pl.Profile,
		IngestID: pl.ingestID, CreatedAt: pl.Now})
}

// value returns the content-addressed ID of a literal value and queues its row once.
func (pl *Planner) value(t memtype.ValueType, text string) string {
	id := valueID(pl.Team, t, text)
	if !pl.values[id] {
		pl.values[id] = true
		pl.l.WS.Values = append(pl.l.WS.Values, store.ValueRow{Team: pl.Team, ID: id, Type: string(t), Text: text, CreatedAt: pl.Now})
	}
	return id
}

// valueID is the ID of a team's literal value of type t with canonical text.
func valueID(team identity.TeamID, t memtype.ValueType, text string) string {
	sum := sha256.Sum256([]byte(string(team) + "\x00" + string(t) + "\x00" + text))
	return "val_" + hex.EncodeToString(sum[:13])
}

// supportLinks builds one support link per citation of an accepted proposal (relationship ID unset).
func (pl *Planner) supportLinks(r memtype.ProposedRelationship, obsID, verID string) []store.SupportLinkRow {
	out := make([]store.SupportLinkRow, 0, len(r.Evidence))
	for _, c := range r.Evidence {
		f := pl.fragments[c.EvidenceIndex]
		out = append(out, store.SupportLinkRow{Team: pl.Team, ID: pl.newID("sup"), FragmentID: f.ID,
			ObservationID: obsID, VerificationID: verID, Start: c.Start, End: c.End, SourceGroup: f.SourceGroup,
			ContentHash: f.ContentHash, Authority: f.Authority, Author: f.Author, Profile: pl.Profile,
			IngestID: pl.ingestID, CreatedAt: pl.Now})
	}
	return out
}

// supersede closes the caller's incompatible priors at next's valid_from (an explicit correction
// without one closes them now).
func (pl *Planner) supersede(ks *ledger.KeyState, next *relationship.Relationship, priors []relationship.ID) {
	end := pl.Now
	if next.Validity.From != nil {
		end = *next.Validity.From
	}
	for _, id := range priors {
		pl.l.Supersede(ks.Find(id), end, next.ID, ledger.ReasonSuperseded)
	}
}
