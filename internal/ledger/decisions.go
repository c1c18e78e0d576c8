package ledger

import (
	"encoding/json"
	"time"

	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// ReasonDecided is the reason kind of a transition made by a client's decision on a review item;
// Decided names the action after it ("decided:supersede_prior").
const ReasonDecided Reason = "decided"

// Decided is the transition reason of a relationship changed by a client's decision (action).
func Decided(action string) Reason { return ReasonDecided + Reason(":"+action) }

// State is a relationship's lifecycle state on one side of a change.
type State struct {
	Status  relationship.Status `json:"status,omitempty"`
	Tier    relationship.Tier   `json:"tier,omitempty"`
	ValidTo *time.Time          `json:"valid_to,omitempty"`
	Version int                 `json:"version"`
}

// Change is the before and after of one relationship the transaction changed; a new relationship
// has no Before (version 0).
type Change struct {
	RelationshipID relationship.ID `json:"relationship_id"`
	TransitionID   string          `json:"transition_id"`
	Before         State           `json:"before"`
	After          State           `json:"after"`
}

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
	return nil
}

// questionGone closes the open review items about rel when a change takes it out of a status that
// asks a question (pending evidence, held for review): the question is answered, whoever answered it.
func (l *Ledger) questionGone(rel *relationship.Relationship, status relationship.Status) {
	if status == rel.Status || (rel.Status != relationship.StatusPendingEvidence && rel.Status != relationship.StatusNeedsReview) {
		return
	}
	l.WS.ItemClosesFor = append(l.WS.ItemClosesFor, store.ReviewItemCloseFor{Team: l.Team, RelationshipID: rel.ID,
		Status: store.ReviewSuperseded, ClosedAt: l.Now})
}
