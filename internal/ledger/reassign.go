package ledger

import (
	"encoding/json"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Reason kinds of a split's and a merge's transitions; Reassigned names the decision after them.
const (
	ReasonSplit  Reason = "split"
	ReasonMerged Reason = "merged"
)

// Reassigned is the transition reason of a relationship closed or re-derived by the split or merge
// (action: store.IdentitySplit or store.IdentityMerge) recorded as decision.
func Reassigned(action, decision string) Reason {
	if action == store.IdentityMerge {
		return ReasonMerged + Reason(":"+decision)
	}
	return ReasonSplit + Reason(":"+decision)
}

// Resolution decisions a split and a merge record on the mentions they move.
const (
	DecisionSplit  identity.Decision = "split"
	DecisionMerged identity.Decision = "merged"
)

// Reassignment is a confirmed split or merge of the ledger's actor, as the ledger carries it out.
type Reassignment struct {
	DecisionID string
	Action     string // store.IdentitySplit or store.IdentityMerge
	From       identity.EntityID
	// To is where the selected mentions move: the new entity of a split (Create), the into entity
	// of a merge.
	To     identity.Entity
	Create bool
	// Observations are the selected observations with their current resolution events.
	Observations []store.IdentityObservation
	// Relationships are the actor's live relationships on From, with their supports.
	Relationships []store.IdentityRelationship
	// Fragments are the decision's evidence.
	Fragments []store.FragmentRow
	Reason    string
}

// Rederived names a relationship a split or merge closed and what its statement became: Moved on
// the entity the mentions moved to (an identical relationship that gained the supports, for a
// merge) and Stayed on the old entity ("" unless some of its supports stayed).
type Rederived struct {
	From   relationship.ID
	Moved  relationship.ID
	Stayed relationship.ID
}

// Moves reports whether a split or merge of the observations in moved re-derives rel: a moved
// observation supports it, or created it when it has no supports. It returns the support links that
// move and those that stay.
func Moves(rel store.IdentityRelationship, moved map[string]bool) (move, stay []store.IdentitySupport, ok bool) {
	for _, s := range rel.Supports {
		if moved[s.ObservationID] {
			move = append(move, s)
		} else {
			stay = append(stay, s)
		}
	}
	return move, stay, len(move) > 0 || (len(rel.Supports) == 0 && moved[rel.ObservationID])
}

// Reassign carries out r: the new entity and its name (a split), the evidence fragments, one
// resolution event per selected mention of From moving it to To, then the re-derivation of every
// relationship of the actor a moved observation created or supports (Moves). Each is closed as
// retracted (reason Reassigned, naming what its moved statement became) and its statement restated
// by the same-owner rules (relationship.Decide) on To with the moved supports, and on From with the
// supports that stay; the restatements cite the same fragments and verification events, no new
// verification. Then the actor's held statements of every touched key are re-planned (DESIGN §6.7)
// and every touched key's case is maintained. It returns the re-derivations and the cases.
func (l *Ledger) Reassign(r Reassignment) ([]Rederived, []CaseRef) {
	l.init()
	if r.Create {
		l.newEntity(r.To)
	}
	l.WS.Fragments = append(l.WS.Fragments, r.Fragments...)
	moved := l.moveMentions(r)
	why := Reassigned(r.Action, r.DecisionID)
	var out []Rederived
	for _, ir := range r.Relationships {
		move, stay, ok := Moves(ir, moved)
		cur := l.Find(ir.Relationship.ID)
		if !ok || cur == nil || !reassignable(cur.Status) {
			continue
		}
		d := Rederived{From: cur.ID}
		next := *cur
		if next.Subject == r.From {
			next.Subject = r.To.ID
		}
		if next.Object.EntityID == r.From {
			next.Object.EntityID = r.To.ID
		}
		d.Moved = l.restate(next, move, ir.ObservationID, cur, why)
		if len(stay) > 0 && len(move) > 0 {
			d.Stayed = l.restate(*cur, stay, "", cur, why)
		}
		l.update(cur, relationship.StatusRetracted, cur.Tier, cur.Validity.To, why, d.Moved)
		out = append(out, d)
	}
	var cases []CaseRef
	l.Settle()
	for _, ks := range l.Touched() {
		if ref := l.Maintain(ks); ref != nil {
			cases = append(cases, *ref)
		}
	}
	for _, ref := range l.MaintainIdentities() {
		if !slices.ContainsFunc(cases, func(c CaseRef) bool { return c.ID == ref.ID }) {
			cases = append(cases, *ref)
		}
	}
	return out, cases
}

// reassignable reports whether a status is one a split or merge re-derives (not terminal).
func reassignable(s relationship.Status) bool {
	return s == relationship.StatusActive || s == relationship.StatusPendingEvidence || s == relationship.StatusNeedsReview
}

// newEntity records a split's new entity with its names.
func (l *Ledger) newEntity(e identity.Entity) {
	l.WS.Entities = append(l.WS.Entities, store.EntityRow{Team: l.Team, ID: e.ID, Kind: e.Kind, Context: e.Context,
		CreatedBy: l.Actor.Profile, IngestID: l.IngestID, CreatedAt: l.Now})
	for _, n := range e.Names {
		l.WS.EntityNames = append(l.WS.EntityNames, store.EntityNameRow{Team: l.Team, EntityID: e.ID, Name: n.Name,
			Normalized: n.Normalized, Skeleton: identity.Skeleton(n.Normalized), Kind: n.Kind, CreatedAt: l.Now})
	}
}

// moveMentions appends, for every mention of the selected observations whose current event names
// From, an event naming To (decision split or merged, From as the candidate it is distinct from or
// merged out of), and returns the moved observations.
func (l *Ledger) moveMentions(r Reassignment) map[string]bool {
	decision := DecisionSplit
	if r.Action == store.IdentityMerge {
		decision = DecisionMerged
	}
	moved := map[string]bool{}
	for _, o := range r.Observations {
		for _, e := range o.Current {
			if e.EntityID != r.From {
				continue
			}
			moved[o.ID] = true
			l.WS.Resolutions = append(l.WS.Resolutions, store.ResolutionRow{Team: l.Team, ID: l.NewID("res"),
				ObservationID: o.ID, MentionRef: e.MentionRef, MentionName: e.MentionName, EntityKind: e.EntityKind,
				EntityID: r.To.ID, Decision: decision, Candidates: []identity.EntityID{r.From}, Profile: l.Actor.Profile,
				IngestID: l.IngestID, CreatedAt: l.Now})
		}
	}
	return moved
}

// restate places the statement of old (next: its subject, object, polarity, scope, validity) with the
// given support links (copies: same fragment, span, observation and verification) on next's key by
// the same-owner rules, old itself left out: an identical relationship gains the supports (and a
// pending one is re-planned), or a new relationship derived from old is created current, superseding
// the actor's incompatible priors when a confirmed later valid_from establishes replacement, or held
// for review against them; without supports it is restated pending. It returns the relationship the
// statement is on.
func (l *Ledger) restate(next relationship.Relationship, links []store.IdentitySupport, observation string,
	old *relationship.Relationship, why Reason) relationship.ID {
	ks := l.Key(conflict.Key{Team: l.Team, Subject: next.Subject, PredicateKey: next.PredicateKey, Scope: next.Scope})
	ks.Touched = true
	owned := slices.DeleteFunc(ks.Owned(old.Owner), func(r relationship.Relationship) bool { return r.ID == old.ID })
	confirmed := false
	rows := make([]store.SupportLinkRow, 0, len(links))
	retired := map[evidence.FragmentID]bool{}
	for _, s := range links {
		if s.Retirement != "" {
			retired[s.FragmentID] = true
		}
		confirmed = confirmed || evidence.ConfirmsValidFrom(s.ConfirmedFrom, next.Validity.From)
		row := s.SupportLinkRow
		row.ID, row.Profile, row.IngestID, row.CreatedAt = l.NewID("sup"), old.Owner, l.IngestID, l.Now
		rows = append(rows, row)
		if observation == "" {
			observation = s.ObservationID
		}
	}
	prop := relationship.Proposed{Object: next.Object, Polarity: next.Polarity, Validity: next.Validity, ValidFromConfirmed: confirmed}
	d := relationship.Decide(ks.Pred, prop, owned)
	if len(links) == 0 {
		if d.Action == relationship.ActionSupport {
			return d.Target
		}
		d = relationship.Decision{} // no support: restated pending, whatever else the key holds
	}
	if d.Action == relationship.ActionSupport {
		target := ks.Find(d.Target)
		l.Support(target.ID, rows)
		l.markRetired(target.ID, retired)
		l.promote(ks, target, d, confirmed, why)
		return target.ID
	}
	rel := next
	rel.ID, rel.Version = relationship.ID(l.NewID("rel")), 1
	l.Support(rel.ID, rows)
	l.markRetired(rel.ID, retired)
	rel.Tier = relationship.TierFor(l.Supports(rel.ID))
	if groups, _ := evidence.CountGroups(l.Supports(rel.ID)); groups == 0 {
		d = relationship.Decision{} // every copied support retired: restated pending
	}
	switch d.Action {
	case relationship.ActionCreate, relationship.ActionSupersede:
		rel.Status = relationship.StatusActive
	case relationship.ActionHold:
		rel.Status = relationship.StatusNeedsReview
	default:
		rel.Status, rel.Tier = relationship.StatusPendingEvidence, relationship.TierCandidate
	}
	l.create(&rel, observation, why, old.ID)
	l.closePriors(ks, &rel, d, why)
	if rel.Status == relationship.StatusActive {
		l.CrossReferences(&rel, confirmed, "", "")
	}
	return rel.ID
}

// promote settles target, an identical relationship that gained a restatement's supports: an active
// one may gain a tier; a pending or held one is re-planned as Decide's Promote says — unless no
// effective support arrived (every copied support was of a retired fragment): then it stays as it is.
func (l *Ledger) promote(ks *KeyState, target *relationship.Relationship, d relationship.Decision, confirmed bool, why Reason) {
	tier := relationship.TierFor(l.Supports(target.ID))
	groups, _ := evidence.CountGroups(l.Supports(target.ID))
	switch {
	case target.Status == relationship.StatusActive:
		if tier != target.Tier {
			l.Change(target, target.Status, tier, why)
		}
	case groups == 0:
	case d.Promote == relationship.ActionHold && target.Status == relationship.StatusNeedsReview:
		if tier != target.Tier {
			l.Change(target, target.Status, tier, why)
		}
	case d.Promote == relationship.ActionHold:
		l.Change(target, relationship.StatusNeedsReview, tier, why)
	default:
		l.Change(target, relationship.StatusActive, tier, why)
		l.closePriors(ks, target, relationship.Decision{Action: d.Promote, Priors: d.Priors}, why)
		l.CrossReferences(target, confirmed && target.Validity.From != nil, "", "")
	}
}

// closePriors supersedes the actor's priors a supersede decision names, at rel's valid_from.
func (l *Ledger) closePriors(ks *KeyState, rel *relationship.Relationship, d relationship.Decision, why Reason) {
	if d.Action != relationship.ActionSupersede || rel.Validity.From == nil {
		return
	}
	for _, id := range d.Priors {
		if prior := ks.Find(id); prior != nil && prior.Status == relationship.StatusActive {
			l.Supersede(prior, *rel.Validity.From, rel.ID, why)
		}
	}
}

// IdentityDecision is a split or merge as its decision row records it.
type IdentityDecision struct {
	ID             string
	Action         string
	From, To       identity.EntityID
	ObservationIDs []string
	FragmentIDs    []string
	Reason         string
}

// DecideIdentity appends the split or merge d with every relationship change recorded so far
// (Changes) and returns them.
func (l *Ledger) DecideIdentity(d IdentityDecision) ([]Change, error) {
	changes := l.Changes()
	body, err := json.Marshal(changes)
	if err != nil {
		return nil, err
	}
	l.WS.IdentityDecisions = append(l.WS.IdentityDecisions, store.IdentityDecisionRow{Team: l.Team, ID: d.ID,
		Profile: l.Actor.Profile, Action: d.Action, From: d.From, To: d.To, ObservationIDs: d.ObservationIDs,
		FragmentIDs: d.FragmentIDs, Reason: d.Reason, Changes: body, IngestID: l.IngestID,
		IdempotencyKey: l.IdempotencyKey, CreatedAt: l.Now})
	return changes, nil
}
