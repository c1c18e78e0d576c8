package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/memtype"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// A held statement (needs_review) asks its owner one question: which of it and the owner's current
// relationships it contradicts (its priors) is current. The question is the held statement at its
// version and the priors at theirs; an open relationship_conflict item records exactly that. When a
// transaction moves any part of it — a prior superseded, retracted, rejected or supported anew, a
// new current value, the held statement itself changed — the question is gone, and Settle, run once
// at the end of every writing transaction, re-plans the held statement in that transaction (DESIGN
// §6.7): so an open item always asks about the state that is, and one owner never ends with two
// current values on one key.

// ItemKindConflict is the review item kind of a held statement's question.
const ItemKindConflict = "relationship_conflict"

// Reasons of the transitions Settle makes.
const (
	// ReasonPriorGone: a held relationship made current because nothing of its owner contradicts it
	// any more.
	ReasonPriorGone Reason = "prior_gone"
	// ReasonDuplicate: a held relationship identical to its owner's current one became a support of
	// it (the transition names the current one); it is rejected as a relationship of its own.
	ReasonDuplicate Reason = "duplicate_of_current"
)

// Asked is a review item a transaction issued for a held statement's question.
type Asked struct {
	RelationshipID  relationship.ID
	IngestID        string
	PlacementItemID string
	Review          *memtype.ReviewPrompt
}

// AskAs names the placement item under which the question of held, a relationship the transaction
// holds for review, is asked (a Remember's proposal item); without it the item is named after its
// review ID.
func (l *Ledger) AskAs(held relationship.ID, placementItemID string) {
	l.init()
	l.itemIDs[held] = placementItemID
}

// Name records the display names of a relationship's object and of a subject the transaction
// knows (a new entity's), for the questions items ask.
func (l *Ledger) Name(rel relationship.ID, object string, subject identity.EntityID, subjectName string) {
	l.init()
	if rel != "" {
		l.objectNames[rel] = object
	}
	if subject != "" && subjectName != "" {
		if _, ok := l.subjectNames[subject]; !ok {
			l.subjectNames[subject] = subjectName
		}
	}
}

// Priors returns the owner's current relationships of ks that held contradicts: the relationships its
// question is about.
func (ks *KeyState) Priors(held *relationship.Relationship) []*relationship.Relationship {
	var out []*relationship.Relationship
	for _, r := range ks.Rels {
		if r.Owner == held.Owner && r.ID != held.ID && r.Status == relationship.StatusActive &&
			relationship.Incompatible(ks.Pred, held.Object, held.Polarity, held.Validity, r.Object, r.Polarity, r.Validity) {
			out = append(out, r)
		}
	}
	return out
}

// twin returns the owner's current relationship of ks identical to held (same object and polarity,
// overlapping validity), or nil.
func (ks *KeyState) twin(held *relationship.Relationship) *relationship.Relationship {
	for _, r := range ks.Rels {
		if r.Owner == held.Owner && r.ID != held.ID && r.Status == relationship.StatusActive &&
			r.Object == held.Object && r.Polarity == held.Polarity && r.Validity.Overlaps(held.Validity) {
			return r
		}
	}
	return nil
}

// Asks reports whether item asks the question of held against priors as they are now: held and every
// prior at the version it records, and no other prior.
func Asks(item store.ReviewItemRow, held *relationship.Relationship, priors []*relationship.Relationship) bool {
	if item.RelationshipID != held.ID || item.RelationshipVersion != held.Version || len(item.Related) != len(priors) ||
		len(item.RelatedVersions) != len(item.Related) {
		return false
	}
	for _, p := range priors {
		i := slices.Index(item.Related, string(p.ID))
		if i < 0 || item.RelatedVersions[i] != p.Version {
			return false
		}
	}
	return true
}

// Settle re-plans, at the end of a transaction, every held statement on a key the transaction touched
// whose question it moved, and returns the items it issued, by relationship. For the held statements
// of an owner the transaction may change (the actor's own, or those a retirement recomputed), in
// relationship order until nothing moves: one identical to the owner's current relationship becomes a
// support of it (ReasonDuplicate), one that nothing of its owner contradicts any more becomes current
// (ReasonPriorGone) with its cross-references. Every held statement left whose open item does not ask
// about the state that is — a prior moved, a new one came, it moved itself, or it has no item — gets
// its items closed as superseded and a new item asking the new question. The nightly reviewer, and a
// call about another owner's statements, only re-asks: it never changes another owner's relationship.
// Settle is idempotent: a second call changes nothing.
func (l *Ledger) Settle() map[relationship.ID]Asked {
	l.init()
	for _, ks := range l.Touched() {
		owners := map[identity.ProfileID]bool{}
		for _, r := range ks.Rels {
			if r.Status == relationship.StatusNeedsReview {
				owners[r.Owner] = true
			}
		}
		for _, owner := range sortedOwners(owners) {
			l.settleOwner(ks, owner, false)
		}
	}
	return l.asked
}

// settleOwner settles owner's held statements of ks; system re-plans them as the system (a
// retirement's recomputation) even when owner is the actor.
func (l *Ledger) settleOwner(ks *KeyState, owner identity.ProfileID, system bool) {
	if l.mayReplan(ks.Key, owner) {
		prior := l.Actor
		if system || l.Actor.Kind != store.ActorProfile || l.Actor.Profile != owner {
			l.Actor = SystemActor // a retirement's recomputation of another owner's statements
		}
		for moved := true; moved; {
			moved = false
			for _, held := range ks.held(owner) {
				switch twin := ks.twin(held); {
				case twin != nil:
					l.absorb(held, twin)
					moved = true
				case len(ks.Priors(held)) == 0:
					l.Change(held, relationship.StatusActive, relationship.TierFor(l.Supports(held.ID)), ReasonPriorGone)
					l.CrossReferences(held, l.validFromConfirmed(held), "", "")
					moved = true
				}
			}
		}
		l.Actor = prior
	}
	for _, held := range ks.held(owner) {
		priors := ks.Priors(held)
		if items := l.items[held.ID]; len(items) != 1 || !Asks(items[0], held, priors) {
			l.ask(ks, held, priors)
		}
	}
}

// mayReplan reports whether the transaction may change owner's held statements of key k: its own
// profile's, and those of owners whose relationships of k a retirement recomputed.
func (l *Ledger) mayReplan(k conflict.Key, owner identity.ProfileID) bool {
	return (l.Actor.Kind == store.ActorProfile && l.Actor.Profile == owner) ||
		(l.Actor.Kind != store.ActorSystemConflictReviewer && l.recomputed[ownerKey{k, owner}])
}

// held returns owner's held statements of ks in ID order.
func (ks *KeyState) held(owner identity.ProfileID) []*relationship.Relationship {
	var out []*relationship.Relationship
	for _, r := range ks.Rels {
		if r.Owner == owner && r.Status == relationship.StatusNeedsReview {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *relationship.Relationship) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out
}

func sortedOwners(m map[identity.ProfileID]bool) []identity.ProfileID {
	out := make([]identity.ProfileID, 0, len(m))
	for o := range m {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// absorb makes held, a statement identical to its owner's current relationship twin, a support of
// twin: each of held's support links is linked to twin again (the same fragment, span, observation and
// verification, so the counting rules merge it with what twin has), twin's tier follows, and held is
// rejected naming twin (its question is answered: what it says is current).
func (l *Ledger) absorb(held, twin *relationship.Relationship) {
	var links []store.SupportLinkRow
	retired := map[evidence.FragmentID]bool{}
	for _, s := range l.links[held.ID] {
		if s.Retirement != "" {
			retired[s.FragmentID] = true
		}
		links = append(links, store.SupportLinkRow{Team: l.Team, ID: l.NewID("sup"), FragmentID: s.FragmentID,
			ObservationID: s.ObservationID, VerificationID: s.VerificationID, Start: s.Start, End: s.End, SourceGroup: s.Group,
			ContentHash: s.ContentHash, Authority: s.Authority, Author: s.Author, Profile: held.Owner, IngestID: l.IngestID,
			CreatedAt: l.Now})
	}
	if len(links) > 0 {
		l.Support(twin.ID, links)
		l.markRetired(twin.ID, retired)
		if tier := relationship.TierFor(l.Supports(twin.ID)); tier != twin.Tier {
			l.Change(twin, twin.Status, tier, ReasonSupportAdded)
		}
	}
	l.update(held, relationship.StatusRejected, held.Tier, held.Validity.To, ReasonDuplicate, twin.ID)
	l.absorbed[held.ID] = twin.ID
}

// AbsorbedInto returns the current relationship held became a support of in this transaction, or "".
func (l *Ledger) AbsorbedInto(held relationship.ID) relationship.ID {
	l.init()
	return l.absorbed[held]
}

// ask closes held's open items (superseded: their question is gone) and issues the item that asks the
// question of held against priors as they are now, with every choice's impact.
func (l *Ledger) ask(ks *KeyState, held *relationship.Relationship, priors []*relationship.Relationship) {
	obs := l.observations[held.ID]
	for _, it := range l.items[held.ID] {
		obs = it.ObservationID
	}
	if obs == "" && len(l.links[held.ID]) > 0 {
		obs = l.links[held.ID][0].ObservationID
	}
	l.closeItems(held.ID)
	related := make([]string, len(priors))
	versions := make([]int, len(priors))
	for i, p := range priors {
		related[i], versions[i] = string(p.ID), p.Version
	}
	prompt := l.question(ks, held, priors)
	prompt.ReviewID, prompt.Kind = l.NewID("rev"), ItemKindConflict
	itemID := l.itemIDs[held.ID]
	if itemID == "" {
		itemID = "item_reasked_" + prompt.ReviewID
	}
	body, _ := json.Marshal(prompt)
	row := store.ReviewItemRow{Team: l.Team, ID: prompt.ReviewID, IngestID: l.IngestID, PlacementItemID: itemID,
		Kind: ItemKindConflict, Profile: held.Owner, ObservationID: obs, RelationshipID: held.ID, Related: related,
		Choices: body, RelationshipVersion: held.Version, RelatedVersions: versions, CreatedAt: l.Now}
	l.WS.ReviewItems = append(l.WS.ReviewItems, row)
	l.items[held.ID] = []store.ReviewItemRow{row}
	l.asked[held.ID] = Asked{RelationshipID: held.ID, IngestID: l.IngestID, PlacementItemID: itemID, Review: prompt}
}

// closeItems closes the open items about relationship id as superseded (their question is gone): the
// stored ones by one close of the relationship's open items, the ones this transaction issued by
// dropping them unwritten.
func (l *Ledger) closeItems(id relationship.ID) {
	l.init()
	l.WS.ReviewItems = slices.DeleteFunc(l.WS.ReviewItems, func(r store.ReviewItemRow) bool { return r.RelationshipID == id })
	delete(l.asked, id)
	l.items[id] = nil
	if !l.closed[id] {
		l.closed[id] = true
		l.WS.ItemClosesFor = append(l.WS.ItemClosesFor, store.ReviewItemCloseFor{Team: l.Team, RelationshipID: id,
			Status: store.ReviewSuperseded, ClosedAt: l.Now})
	}
}

// question is the question of held against priors, with the choices a decision may take and each
// one's impact (Preview, the code Resolve carries them out with).
func (l *Ledger) question(ks *KeyState, held *relationship.Relationship, priors []*relationship.Relationship) *memtype.ReviewPrompt {
	scope := ""
	if held.Scope != "" {
		scope = fmt.Sprintf(" (scope %q)", held.Scope)
	}
	subject := l.subjectNames[held.Subject]
	if subject == "" {
		subject = string(held.Subject)
	}
	ids := make([]relationship.ID, len(priors))
	for i, p := range priors {
		ids[i] = p.ID
	}
	if len(priors) == 0 {
		// Only a call that may not change the owner's statements asks this: the nightly reviewer
		// closed the prior, or a retirement another profile caused did.
		prompt := &memtype.ReviewPrompt{
			Question: fmt.Sprintf("Your relationship that %q %s%s was held against is no longer current: is %q%s current?",
				subject, held.PredicateKey, scope, l.objectNames[held.ID], Validity(held.Validity)),
			Choices: []memtype.ReviewChoice{
				{Action: ActionSupersedePrior, Description: "the held relationship becomes current: nothing of yours contradicts it now"},
				{Action: ActionReject, Description: "reject the held relationship"},
			}}
		l.WithImpact(ks, held, ids, prompt.Choices)
		return prompt
	}
	current := make([]string, len(priors))
	for i, p := range priors {
		current[i] = fmt.Sprintf("%q%s", l.objectNames[p.ID], Validity(p.Validity))
	}
	prompt := &memtype.ReviewPrompt{
		Question: fmt.Sprintf("Which is current for %q %s%s: %s, as your current relationship says, or %q%s, as the new evidence says?",
			subject, held.PredicateKey, scope, strings.Join(current, " and "), l.objectNames[held.ID], Validity(held.Validity)),
		Choices: []memtype.ReviewChoice{
			{Action: ActionSupersedePrior, Description: "the new relationship replaces the prior one from its valid_from"},
			{Action: ActionKeepPriorRejectNew, Description: "keep the prior relationship and reject the new one"},
			{Action: ActionCorrect, Description: "state the correct relationship with new evidence: it supersedes the prior explicitly"},
			{Action: ActionBothValid, Description: "both are valid: the new one in another scope (decision.scope), or in its own " +
				"time (decision.valid_from and/or decision.valid_to) that does not overlap the prior's; the prior is not changed"},
		}}
	l.WithImpact(ks, held, ids, prompt.Choices)
	return prompt
}

// WithImpact fills each choice's impact on rel (a relationship in review) and its priors: what the
// ledger would change if the choice were decided now (Preview), and returns choices.
func (l *Ledger) WithImpact(ks *KeyState, rel *relationship.Relationship, priors []relationship.ID,
	choices []memtype.ReviewChoice) []memtype.ReviewChoice {
	actions := make([]string, len(choices))
	for i, c := range choices {
		actions[i] = c.Action
	}
	impact := l.Preview(ks, rel.ID, priors, actions)
	for i := range choices {
		choices[i].Impact = impact[choices[i].Action]
	}
	return choices
}

// OpenItem returns the one open relationship_conflict item about held, as read or issued by the
// transaction.
func (l *Ledger) OpenItem(held relationship.ID) (store.ReviewItemRow, bool) {
	l.init()
	if items := l.items[held]; len(items) == 1 {
		return items[0], true
	}
	return store.ReviewItemRow{}, false
}

// Validity describes an interval for a question: " (undated)" when unbounded.
func Validity(v relationship.Interval) string {
	switch {
	case v.From != nil && v.To != nil:
		return fmt.Sprintf(" from %s until %s", v.From.Format(time.DateOnly), v.To.Format(time.DateOnly))
	case v.From != nil:
		return fmt.Sprintf(" from %s", v.From.Format(time.DateOnly))
	case v.To != nil:
		return fmt.Sprintf(" until %s", v.To.Format(time.DateOnly))
	}
	return " (undated)"
}
