package ledger

import (
	"encoding/json"

	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// ReasonDecided is the reason kind of a transition made by a client's decision on a review item;
// Decided names the action after it ("decided:supersede_prior").
const ReasonDecided Reason = "decided"

// Decided is the transition reason of a relationship changed by a client's decision (action).
func Decided(action string) Reason { return ReasonDecided + Reason(":"+action) }

// State is a relationship's lifecycle state on one side of a change (memtype.RelationshipState).
type State = memtype.RelationshipState

// Change is the before and after of one relationship the transaction changed; a new relationship
// has version 0 before (memtype.RelationshipChange).
type Change = memtype.RelationshipChange

// Changes returns every relationship change the transaction recorded so far, in order.
func (l *Ledger) Changes() []Change {
	out := make([]Change, 0, len(l.WS.Transitions))
	for _, t := range l.WS.Transitions {
		out = append(out, Change{RelationshipID: t.RelationshipID, TransitionID: t.ID,
			Before: State{Status: t.FromStatus, Tier: t.FromTier, ValidTo: t.FromValidTo, Version: t.FromVersion},
			After:  State{Status: t.ToStatus, Tier: t.ToTier, ValidTo: t.ToValidTo, Version: t.ToVersion}})
	}
	return out
}

// Decision is a client's decision on one open review item, as the ledger records it.
type Decision struct {
	ID     string
	Item   store.ReviewItem
	Action string
	// Body is the request's decision object (JSON), FragmentIDs the evidence the decision brought.
	Body        json.RawMessage
	FragmentIDs []string
	Reason      string
	// KeepOpen leaves the item open: the decision did not answer its question (evidence that
	// granted no support).
	KeepOpen bool
}

// Decide appends the decision with every relationship change recorded so far (Changes) and, unless
// KeepOpen, resolves its review item, fenced on the item still being open. It returns the changes it
// recorded.
func (l *Ledger) Decide(d Decision) ([]Change, error) {
	changes := l.Changes()
	body, err := json.Marshal(changes)
	if err != nil {
		return nil, err
	}
	l.WS.Decisions = append(l.WS.Decisions, store.DecisionRow{Team: l.Team, ID: d.ID, Profile: l.Actor.Profile,
		ReviewID: d.Item.ID, ItemIngestID: d.Item.IngestID, PlacementItemID: d.Item.PlacementItemID, Action: d.Action,
		Decision: d.Body, FragmentIDs: d.FragmentIDs, Reason: d.Reason, Changes: body, IngestID: l.IngestID,
		IdempotencyKey: l.IdempotencyKey, CreatedAt: l.Now})
	if d.KeepOpen {
		return changes, nil
	}
	// The item resolves before the closes of items whose question the changes answered, so it is
	// recorded as resolved, not superseded.
	l.WS.ItemCloses = append(l.WS.ItemCloses, store.ReviewItemClose{Team: l.Team, ID: d.Item.ID,
		Status: store.ReviewResolved, ClosedAt: l.Now, DecisionID: d.ID})
	return changes, nil
}

// Find returns the transaction's copy of relationship id, from any key it read, or nil.
func (l *Ledger) Find(id relationship.ID) *relationship.Relationship {
	for _, ks := range l.keys {
		if r := ks.Find(id); r != nil {
			return r
		}
	}
	return l.others[id]
}

// questionGone closes the open review items about rel when a change takes it out of a status that
// asks a question (pending evidence, held for review): the question is answered, whoever answered it.
func (l *Ledger) questionGone(rel *relationship.Relationship, status relationship.Status) {
	if status == rel.Status || (rel.Status != relationship.StatusPendingEvidence && rel.Status != relationship.StatusNeedsReview) {
		return
	}
	l.closeItems(rel.ID)
}

// Review actions the ledger carries out (the decisions Resolve takes without new evidence).
const (
	ActionSupersedePrior     = "supersede_prior"
	ActionKeepPriorRejectNew = "keep_prior_reject_new"
	ActionReject             = "reject"
	ActionForget             = "forget"
	// ActionCorrect rejects the relationship in question; the correction itself is placed like a
	// Remember, naming the prior it corrects.
	ActionCorrect = "correct"
	// ActionBothValid rejects the relationship in question; the statement restated in its other
	// scope or time is placed like a Remember.
	ActionBothValid = "both_valid"
	// ActionAccept accepts a pending relationship with the decision's evidence, placed like a
	// Remember through the verifier; an accept without evidence changes nothing (Carry).
	ActionAccept = "accept"
)

// Carry carries out a decision without new evidence on rel, the relationship a review item asks
// about, and related, the caller's relationships it was held against: forget retracts rel; reject,
// keep_prior_reject_new, correct and both_valid reject it; supersede_prior closes the active related
// priors at rel's valid_from (now when it has none) and makes rel current, returning the
// cross-references it then writes to other owners' relationships of the key (corrects when a
// verifier confirmed rel's later valid_from in a stored support, as at placement); accept without
// evidence changes nothing: it never bypasses verification. It is the one code that applies such a
// decision, and, on a copy, previews it.
func (l *Ledger) Carry(ks *KeyState, rel *relationship.Relationship, related []relationship.ID, action, reason string) []store.CrossReferenceRow {
	why := Decided(action)
	switch action {
	case ActionForget:
		l.Retract(rel, reason)
	case ActionReject, ActionKeepPriorRejectNew, ActionCorrect, ActionBothValid:
		l.Change(rel, relationship.StatusRejected, rel.Tier, why)
	case ActionSupersedePrior:
		end := l.Now
		if rel.Validity.From != nil {
			end = *rel.Validity.From
		}
		for _, id := range related {
			if prior := ks.Find(id); prior != nil && prior.Status == relationship.StatusActive {
				l.Supersede(prior, end, rel.ID, why)
			}
		}
		l.Change(rel, relationship.StatusActive, relationship.TierFor(l.Supports(rel.ID)), why)
		return l.CrossReferences(rel, l.validFromConfirmed(rel), "", "")
	}
	return nil
}

// Preview returns what Carry would change for each action, computed on a copy of the key's state:
// the transaction's own rows and state are untouched.
func (l *Ledger) Preview(ks *KeyState, rel relationship.ID, related []relationship.ID, actions []string) map[string][]Change {
	out := map[string][]Change{}
	for _, action := range actions {
		scratch := &Ledger{Team: l.Team, Actor: l.Actor, IngestID: l.IngestID, Now: l.Now, Policy: l.Policy,
			NewID: func(string) string { return "" }}
		scratch.init()
		scratch.preds = l.preds
		for id, s := range l.supports {
			scratch.supports[id] = s
		}
		for id, at := range l.confirmedFrom {
			scratch.confirmedFrom[id] = at
		}
		copyKs := scratch.Key(ks.Key)
		for _, r := range ks.Rels {
			c := *r
			copyKs.Rels = append(copyKs.Rels, &c)
		}
		target := copyKs.Find(rel)
		if target == nil {
			continue
		}
		scratch.Carry(copyKs, target, related, action, "")
		out[action] = scratch.Changes()
	}
	return out
}
