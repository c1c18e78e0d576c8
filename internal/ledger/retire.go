package ledger

import (
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// SystemActor is the actor of the system recomputations a retirement causes in other profiles' (and
// the caller's) relationships: no profile decided them, the support rules did.
var SystemActor = Actor{Kind: store.ActorSystem}

// ReasonSupportRetired prefixes the reason of a system transition that recomputed a relationship
// because a fragment supporting it was retired (SupportRetired).
const ReasonSupportRetired Reason = "support_retired"

// SupportRetired is the reason of a system transition caused by retirement id: it names the
// retirement (fragment_retirements.retirement_id), from which Trace reaches its cause, time, the
// replacing fragment and the call that made it.
func SupportRetired(id string) Reason { return ReasonSupportRetired + Reason(":"+id) }

// Retire records the retirement rows (each retires one fragment, once) and carries them out on the
// state the transaction loaded: every support of a retired fragment stops being effective, and every
// relationship whose supports changed, of any owner, is re-evaluated (Reevaluate) by a system
// transition naming the retirement; then the held statements of the owners whose active relationship
// left current state are re-planned (Replan, DESIGN §6.7). The keys of the changed supports are
// marked touched, so the caller's Maintain repairs or dismisses their cases (a case's counted groups
// change with the supports even when no status does). It returns the relationships whose supports
// changed, in ID order.
//
// The transaction must have locked the keys of every relationship a retired fragment supports
// (KeysLock): supports of relationships it did not load are not seen.
func (l *Ledger) Retire(rows []store.RetirementRow) []*relationship.Relationship {
	l.init()
	l.WS.Retirements = append(l.WS.Retirements, rows...)
	byFragment := map[evidence.FragmentID]string{}
	for _, r := range rows {
		byFragment[r.FragmentID] = r.ID
	}
	// 1. The supports of the retired fragments stop being effective; the first retirement (in the
	// rows' order) of each relationship is the one its transition names.
	cause := map[relationship.ID]string{}
	var ids []relationship.ID
	for id, sups := range l.supports {
		for i := range sups {
			ret, ok := byFragment[sups[i].Fragment]
			if !ok || !sups[i].Effective {
				continue
			}
			sups[i].Effective = false
			if _, seen := cause[id]; !seen {
				cause[id] = ret
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	// 2. Each relationship whose supports changed is re-evaluated; 3. the held statements of the
	// owners whose active relationship left current state are re-planned.
	var changed []*relationship.Relationship
	type owned struct {
		ks    *KeyState
		owner identity.ProfileID
	}
	var replan []owned
	for _, id := range ids {
		rel := l.Find(id)
		if rel == nil {
			continue
		}
		ks := l.Key(conflict.Key{Team: l.Team, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
		if ks.Find(id) == nil {
			continue // a member of an identity case on a key the transaction did not lock: never changed
		}
		changed = append(changed, rel)
		ks.Touched = true
		wasActive := rel.Status == relationship.StatusActive
		if l.Reevaluate(rel, SupportRetired(cause[id])) && wasActive && rel.Status != relationship.StatusActive {
			o := owned{ks, rel.Owner}
			if !slices.Contains(replan, o) {
				replan = append(replan, o)
			}
		}
	}
	for _, o := range replan {
		l.recomputed[ownerKey{o.ks.Key, o.owner}] = true
		l.settleOwner(o.ks, o.owner, true)
	}
	return changed
}

// Reevaluate recomputes rel's tier from its effective supports (relationship.TierFor) after its
// supports changed, by a system transition with reason: an active or held (needs_review)
// relationship left without effective support becomes pending_evidence with tier candidate (it is no
// longer an edge, and a held one's question closes); one that keeps support keeps its status at
// the recomputed tier. A relationship in any other status (pending_evidence, or closed: superseded,
// retracted, rejected) keeps its state: its tier only mattered while it was current. It reports
// whether rel changed.
func (l *Ledger) Reevaluate(rel *relationship.Relationship, reason Reason) bool {
	if rel.Status != relationship.StatusActive && rel.Status != relationship.StatusNeedsReview {
		return false
	}
	status, tier := rel.Status, relationship.TierFor(l.Supports(rel.ID))
	if groups, _ := evidence.CountGroups(l.Supports(rel.ID)); groups == 0 {
		status, tier = relationship.StatusPendingEvidence, relationship.TierCandidate
	}
	if status == rel.Status && tier == rel.Tier {
		return false
	}
	prior := l.Actor
	l.Actor = SystemActor
	l.Change(rel, status, tier, reason)
	l.Actor = prior
	return true
}

// markRetired marks id's supports of fragments retired before the transaction (copies of retired
// supports, a split's or merge's restatement) as not effective.
func (l *Ledger) markRetired(id relationship.ID, fragments map[evidence.FragmentID]bool) {
	if len(fragments) == 0 {
		return
	}
	sups := l.supports[id]
	for i := range sups {
		if fragments[sups[i].Fragment] {
			sups[i].Effective = false
		}
	}
}
