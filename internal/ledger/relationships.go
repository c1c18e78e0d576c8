package ledger

import (
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Reason is the reason a transition records (relationship_transitions.reason). A Forget's reason
// carries the caller's words after "forget: " (Forgotten); a reviewer's supersession names its case
// after "conflict_resolved:" (Resolved).
type Reason string

// Transition reasons.
const (
	ReasonAccepted             Reason = "accepted"
	ReasonEvidenceInsufficient Reason = "evidence_insufficient"
	ReasonHeldForReview        Reason = "held_for_review"
	ReasonSupportAdded         Reason = "support_added"
	ReasonEvidenceAccepted     Reason = "evidence_accepted"
	ReasonEvidenceAcceptedHeld Reason = "evidence_accepted_held"
	ReasonSuperseded           Reason = "superseded"
	ReasonForget               Reason = "forget"
	ReasonConflictResolved     Reason = "conflict_resolved"
)

// Create records a new relationship with its first transition (none → its status and tier) and
// adds it to its key's state. observation is the observation that created it.
func (l *Ledger) Create(rel *relationship.Relationship, observation string, reason Reason) {
	l.create(rel, observation, reason, "")
}

// create is Create with the relationship the new one was derived from (a split's or merge's
// re-derivation names the relationship it restates), recorded on its first transition.
func (l *Ledger) create(rel *relationship.Relationship, observation string, reason Reason, from relationship.ID) {
	l.WS.Relationships = append(l.WS.Relationships, store.RelationshipRow{Team: l.Team, Relationship: *rel,
		ObservationID: observation, IngestID: l.IngestID, CreatedAt: l.Now})
	l.init()
	l.observations[rel.ID] = observation
	l.transition(rel.ID, "", rel.Status, "", rel.Tier, nil, rel.Validity.To, 0, 1, reason, from)
	ks := l.Key(conflict.Key{Team: l.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
	ks.Rels = append(ks.Rels, rel)
	ks.Touched = true
}

// Change moves a relationship to status and tier (its validity unchanged): a promotion of a pending
// relationship, a hold, a tier change from new support.
func (l *Ledger) Change(rel *relationship.Relationship, status relationship.Status, tier relationship.Tier, reason Reason) {
	l.update(rel, status, tier, rel.Validity.To, reason, "")
}

// Supersede closes a relationship at end (relationship.CloseAt: never before its own valid_from,
// never after a valid_to it had) as superseded by next (a successor, or "" for a resolution).
func (l *Ledger) Supersede(rel *relationship.Relationship, end time.Time, next relationship.ID, reason Reason) {
	validTo := relationship.CloseAt(end, *rel)
	l.update(rel, relationship.StatusSuperseded, rel.Tier, &validTo, reason, next)
}

// Resolved is the transition reason of a loser superseded by the resolution of case id.
func Resolved(id conflict.ID) Reason { return ReasonConflictResolved + Reason(":"+string(id)) }

// Forgotten is the transition reason of a Forget, with the caller's words when it gave some.
func Forgotten(why string) Reason {
	if why == "" {
		return ReasonForget
	}
	return ReasonForget + Reason(": "+why)
}

// Retract retracts a relationship (Forget), with the caller's reason when it gave one.
func (l *Ledger) Retract(rel *relationship.Relationship, why string) {
	l.update(rel, relationship.StatusRetracted, rel.Tier, rel.Validity.To, Forgotten(why), "")
}

// Support records new support links of a relationship and counts them in its supports.
func (l *Ledger) Support(id relationship.ID, links []store.SupportLinkRow) {
	l.init()
	for i := range links {
		links[i].RelationshipID = id
		s := links[i]
		row := store.SupportRow{RelationshipID: id, FragmentID: s.FragmentID, Group: s.SourceGroup, ContentHash: s.ContentHash,
			Authority: s.Authority, Author: s.Author, ObservationID: s.ObservationID, VerificationID: s.VerificationID,
			Start: s.Start, End: s.End}
		l.supports[id] = append(l.supports[id], Support(row, l.Policy.AuthoritativeProfiles))
		l.links[id] = append(l.links[id], row)
		l.fragments[id] = append(l.fragments[id], s.FragmentID)
	}
	l.WS.Supports = append(l.WS.Supports, links...)
}

// Touch marks a relationship's key as changed by the transaction, so its case is maintained. A
// member of an identity case loaded from a key the transaction did not lock (others) touches nothing:
// no case of that key can be maintained without its lock.
func (l *Ledger) Touch(rel *relationship.Relationship) {
	if _, other := l.others[rel.ID]; other {
		return
	}
	l.Key(conflict.Key{Team: l.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope}).Touched = true
}

// update changes a relationship's current state, fenced on its version, with its transition, and
// moves the transaction's copy along.
func (l *Ledger) update(rel *relationship.Relationship, status relationship.Status, tier relationship.Tier,
	validTo *time.Time, reason Reason, related relationship.ID) {
	l.questionGone(rel, status)
	l.WS.Updates = append(l.WS.Updates, store.RelationshipUpdate{Team: l.Team, ID: rel.ID, ExpectVersion: rel.Version,
		Status: status, Tier: tier, ValidTo: validTo, UpdatedAt: l.Now})
	l.transition(rel.ID, rel.Status, status, rel.Tier, tier, rel.Validity.To, validTo, rel.Version, rel.Version+1,
		reason, related)
	rel.Status, rel.Tier, rel.Validity.To, rel.Version = status, tier, validTo, rel.Version+1
	l.Touch(rel)
}

func (l *Ledger) transition(id relationship.ID, fromStatus, toStatus relationship.Status, fromTier, toTier relationship.Tier,
	fromValidTo, toValidTo *time.Time, fromVersion, toVersion int, reason Reason, related relationship.ID) {
	t := store.TransitionRow{Team: l.Team, ID: l.NewID("trn"), RelationshipID: id, FromStatus: fromStatus,
		ToStatus: toStatus, FromTier: fromTier, ToTier: toTier, FromValidTo: fromValidTo, ToValidTo: toValidTo,
		FromVersion: fromVersion, ToVersion: toVersion, Reason: string(reason), ActorKind: l.Actor.Kind,
		ActorProfile: l.Actor.Profile, Related: related, IngestID: l.IngestID, CreatedAt: l.Now}
	if l.Actor.Kind == store.ActorProfile {
		t.IdempotencyKey = l.IdempotencyKey
	}
	l.WS.Transitions = append(l.WS.Transitions, t)
}

// LastTransitionID is the ID of the transition the last verb recorded.
func (l *Ledger) LastTransitionID() string {
	if len(l.WS.Transitions) == 0 {
		return ""
	}
	return l.WS.Transitions[len(l.WS.Transitions)-1].ID
}

// CrossReferences compares rel, a relationship of the ledger's actor that just became active, with
// the other owners' active relationships of its key and records the links relationship.CrossReference
// decides; it returns them in the key's order. An adopter confirms the relationship its adoption
// links to (Adopts), not the other adopters of the same fragment: their statements rest on that one
// piece of evidence, and confirming each of them would make every adoption write a row per earlier
// adopter.
func (l *Ledger) CrossReferences(rel *relationship.Relationship, fromConfirmed bool, corrects relationship.ID,
	verification string) []store.CrossReferenceRow {
	ks := l.Key(conflict.Key{Team: l.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
	adopted, targets := l.adopted(ks, rel)
	var out []store.CrossReferenceRow
	for _, o := range ks.Rels {
		if o.Owner == rel.Owner || o.Status != relationship.StatusActive {
			continue
		}
		kind, ok := relationship.CrossReference(ks.Pred, *rel, fromConfirmed, corrects, *o)
		if !ok || (kind == relationship.CrossReferenceConfirms && !targets[o.ID] &&
			slices.ContainsFunc(l.fragments[o.ID], func(f evidence.FragmentID) bool { return adopted[f] })) {
			continue
		}
		x := store.CrossReferenceRow{Team: l.Team, ID: l.NewID("xref"), Kind: string(kind), From: rel.ID,
			FromVersion: rel.Version, To: o.ID, ToVersion: o.Version, Author: rel.Owner, VerificationID: verification,
			IngestID: l.IngestID, CreatedAt: l.Now}
		l.WS.CrossRefs = append(l.WS.CrossRefs, x)
		out = append(out, x)
	}
	return out
}

// adopted returns the fragments rel's supports adopted (another profile authored them) and the
// relationships of ks their adoptions link to (adoptionTarget).
func (l *Ledger) adopted(ks *KeyState, rel *relationship.Relationship) (map[evidence.FragmentID]bool, map[relationship.ID]bool) {
	var fragments map[evidence.FragmentID]bool
	var targets map[relationship.ID]bool
	for _, s := range l.links[rel.ID] {
		if s.Author == rel.Owner || fragments[s.FragmentID] {
			continue
		}
		if fragments == nil {
			fragments, targets = map[evidence.FragmentID]bool{}, map[relationship.ID]bool{}
		}
		fragments[s.FragmentID] = true
		if to := l.adoptionTarget(ks, rel, s.FragmentID); to != nil {
			targets[to.ID] = true
		}
	}
	return fragments, targets
}

// adoptionTarget is the relationship an adoption of fragment by rel links to (Adopts): among the other
// owners' relationships of ks the fragment supports, preferring one stating what rel states (same
// object and polarity), then the fragment's author's, then the earliest (lowest ID); nil when there
// is none.
func (l *Ledger) adoptionTarget(ks *KeyState, rel *relationship.Relationship, fragment evidence.FragmentID) *relationship.Relationship {
	var to *relationship.Relationship
	var toRank [2]bool
	for _, o := range ks.Rels {
		if o.Owner == rel.Owner || !slices.Contains(l.fragments[o.ID], fragment) {
			continue
		}
		rank := [2]bool{o.Object == rel.Object && o.Polarity == rel.Polarity,
			slices.ContainsFunc(l.links[o.ID], func(s store.SupportRow) bool { return s.FragmentID == fragment && s.Author == o.Owner })}
		better := to == nil || rank[0] && !toRank[0] || (rank[0] == toRank[0] && rank[1] && !toRank[1]) ||
			(rank == toRank && o.ID < to.ID)
		if better {
			to, toRank = o, rank
		}
	}
	return to
}

// Adopts records the adopts_evidence_from cross-reference of an adoption (DESIGN §13): from rel, a
// relationship of the ledger's actor that just gained support from fragment, another profile's
// evidence it adopted, to one other owner's relationship of rel's key that the fragment supports —
// one stating what rel states, the fragment's author's, the earliest (adoptionTarget) — so an adoption
// writes at most one row per relationship and fragment, whatever the number of earlier adopters
// (the link records where the evidence came from; Trace follows it, and the support link names the
// fragment). Only the relationships the transaction loaded are candidates: a Remember loads a key's
// live ones. Relationships the fragment supports on other keys are not linked: the adoption is about
// rel's statement. It returns the link, if any.
func (l *Ledger) Adopts(rel *relationship.Relationship, fragment evidence.FragmentID, verification string) []store.CrossReferenceRow {
	ks := l.Key(conflict.Key{Team: l.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
	to := l.adoptionTarget(ks, rel, fragment)
	if to == nil {
		return nil
	}
	x := store.CrossReferenceRow{Team: l.Team, ID: l.NewID("xref"), Kind: string(relationship.CrossReferenceAdoptsEvidenceFrom),
		From: rel.ID, FromVersion: rel.Version, To: to.ID, ToVersion: to.Version, Author: rel.Owner,
		VerificationID: verification, IngestID: l.IngestID, CreatedAt: l.Now}
	l.WS.CrossRefs = append(l.WS.CrossRefs, x)
	return []store.CrossReferenceRow{x}
}
