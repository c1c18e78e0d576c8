package ledger

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Event is the reason code a case event records (conflict_events.reason_code): a lifecycle event, or
// the resolution policy's reason (conflict.Reason) on a resolution and, after "overdue_", on an
// overdue mark.
type Event string

// Case event reasons besides the policy's.
const (
	EventOpened             Event = "opened"
	EventMembershipChanged  Event = "membership_changed"
	EventMembershipRepaired Event = "membership_repaired"
	// EventDismissed is every dismissal's reason, a placement's, a Forget's or the reviewer's.
	EventDismissed Event = "dismissed_" + Event(conflict.ReasonNoDisagreement)
)

// Resolution is the event reason of a resolution the policy decided for reason r.
func Resolution(r conflict.Reason) Event { return Event(r) }

// Overdue is the event reason of a case first marked overdue because the policy found reason r.
func Overdue(r conflict.Reason) Event { return "overdue_" + Event(r) }

// CaseRef names a case at a version after the ledger changed or kept it.
type CaseRef struct {
	ID      conflict.ID
	Version int
	Status  conflict.Status
}

// live is a stored case as conflict.Maintain reads it.
func live(c *store.CaseRow) *conflict.Live {
	if c == nil {
		return nil
	}
	return &conflict.Live{ID: c.ID, Version: c.Version, Status: c.Status, PolicyVersion: c.PolicyVersion,
		OpenedAt: c.OpenedAt, ReviewDueAt: c.ReviewDueAt, PositionIDs: c.Positions, Members: c.Members}
}

// Maintain opens, updates or dismisses the key's case from the key's current state (conflict.Maintain)
// and returns the case it leaves (a dismissed one included), or nil when the key has none. Placement
// and lifecycle changes (forget) call it for every key they touched; it never resolves a case.
func (l *Ledger) Maintain(ks *KeyState) *CaseRef {
	return l.maintain(ks, conflict.KindCrossProfileCurrentState, conflict.Maintain(ks.Pred, live(ks.Live), ks.Members(), l.Now))
}

// maintain writes ch, the maintenance of the case of kind on ks's key.
func (l *Ledger) maintain(ks *KeyState, kind conflict.Kind, ch conflict.Change) *CaseRef {
	switch ch.Action {
	case conflict.ActionOpen:
		c := &store.CaseRow{Team: l.Team, ID: conflict.ID(l.NewID("cf")), Kind: kind,
			Key: ks.Key, Status: conflict.StatusOpen, Version: 1, OpenedAt: l.Now, ReviewDueAt: l.Now.Add(l.Policy.ReviewTTL),
			NextReviewAt: l.Now, PolicyVersion: l.Policy.Version, OpenedBy: l.Actor.Profile,
			Positions: map[conflict.PositionKey]conflict.PositionID{}}
		l.WS.CaseInserts = append(l.WS.CaseInserts, *c)
		l.apply(c, ch, "", EventOpened)
		ks.Live = c
	case conflict.ActionUpdate:
		c := ks.Live
		l.WS.CaseUpdates = append(l.WS.CaseUpdates, store.CaseUpdate{Team: l.Team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: c.Status, UpdatedAt: l.Now})
		c.Version++
		l.apply(c, ch, c.Status, EventMembershipChanged)
	case conflict.ActionDismiss:
		c := ks.Live
		l.WS.CaseUpdates = append(l.WS.CaseUpdates, store.CaseUpdate{Team: l.Team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: conflict.StatusDismissed, UpdatedAt: l.Now})
		prior := c.Status
		c.Version++
		c.Status = conflict.StatusDismissed
		l.apply(c, ch, prior, EventDismissed)
		ks.Live = nil
		return &CaseRef{ID: c.ID, Version: c.Version, Status: c.Status}
	}
	if ks.Live == nil {
		return nil
	}
	return &CaseRef{ID: ks.Live.ID, Version: ks.Live.Version, Status: ks.Live.Status}
}

// Review is the nightly reviewer's verb for one claimed case cs of key ks: it repairs the case's
// membership from the key's current state, takes the resolution policy's decision for the repaired
// positions (decide, a pure function of them: conflict.Decide, or conflict.DecideIdentity for an
// identity_correction case), and writes what follows — the case resolved with its cutoff and every
// member of a losing position superseded there, marked overdue (one event when it first becomes
// overdue), dismissed when no material disagreement is left, or kept open — with the case update
// fenced by the claim token and scheduled for next; the owners' statements held against a loser it
// closed are asked their new question (Settle). It returns the outcome.
//
// The losing positions are those not allied with the winner (conflict.Allied): every other position
// of a cross_profile_current_state case, the other side of an identity_correction case. An identity
// case's members lie on other keys than ks: the transaction locked those keys (nightly's reviewCase),
// or, when a member joined since, loaded it locked by row (KeysLockParams.Members); they are
// superseded like the members of ks; nothing else of theirs — entity resolutions, evidence, supports,
// cross-references — is written.
func (l *Ledger) Review(ks *KeyState, cs *store.CaseRow, token string, next time.Time,
	decide func(positions []conflict.Position) conflict.Decision) conflict.Outcome {
	ch := conflict.Maintain(ks.Pred, live(cs), ks.Members(), l.Now)
	if cs.Kind == conflict.KindIdentityCorrection {
		ch = conflict.MaintainIdentity(cs.Key.Subject, live(cs), l.identityMembers(ks), l.Now)
	}
	prior := cs.Status
	upd := store.CaseReviewUpdate{Team: l.Team, ID: cs.ID, Token: token, ExpectVersion: cs.Version,
		NextReviewAt: next, UpdatedAt: l.Now}
	var outcome conflict.Outcome
	if ch.Action == conflict.ActionDismiss {
		outcome = conflict.OutcomeDismiss
		cs.Version++
		cs.Status = conflict.StatusDismissed
		l.apply(cs, ch, prior, EventDismissed)
	} else {
		dec := decide(ch.Positions)
		outcome = dec.Outcome
		changed := ch.Action == conflict.ActionUpdate
		switch dec.Outcome {
		case conflict.OutcomeResolve:
			cs.Version++
			cs.Status = conflict.StatusResolved
			l.apply(cs, ch, prior, Resolution(dec.Reason))
			l.WS.CaseEvents[len(l.WS.CaseEvents)-1].TimeBasis = string(dec.Basis)
			now, cutoff := l.Now, dec.Cutoff
			upd.ResolvedAt, upd.EffectiveAt, upd.TimeBasis = &now, &cutoff, string(dec.Basis)
			won := ch.Positions[dec.Winner].Key
			upd.Preferred = cs.Positions[won]
			for _, p := range ch.Positions {
				if conflict.Allied(cs.Kind, cs.Key.Subject, won, p.Key) {
					continue
				}
				for _, m := range p.Members {
					if r := l.Find(m.Relationship.ID); r != nil && r.Status == relationship.StatusActive {
						l.Supersede(r, cutoff, "", Resolved(cs.ID))
					}
				}
			}
		case conflict.OutcomeOverdue:
			if changed || cs.Status == conflict.StatusOpen {
				cs.Version++
				cs.Status = conflict.StatusOverdue
				reason := Overdue(dec.Reason)
				if prior == conflict.StatusOverdue {
					reason = EventMembershipRepaired
				}
				l.apply(cs, ch, prior, reason)
			}
		default:
			if changed {
				cs.Version++
				l.apply(cs, ch, prior, EventMembershipRepaired)
			}
		}
	}
	upd.Version, upd.Status = cs.Version, cs.Status
	l.WS.CaseReviews = append(l.WS.CaseReviews, upd)
	// An owner's statement held against a loser the resolution closed asks a new question: the
	// reviewer re-asks it, never changing the statement (DESIGN §6.7, §9).
	l.Settle()
	return outcome
}

// apply writes a change's positions and membership, and one event at the case's (already bumped)
// version recording the resulting membership, with the ledger's actor and the given reason.
func (l *Ledger) apply(c *store.CaseRow, ch conflict.Change, prior conflict.Status, reason Event) {
	for _, p := range ch.Positions {
		if _, ok := c.Positions[p.Key]; !ok {
			id := conflict.PositionID(l.NewID("pos"))
			c.Positions[p.Key] = id
			l.WS.Positions = append(l.WS.Positions, store.PositionRow{Team: l.Team, ID: id, CaseID: c.ID, Key: p.Key, CreatedAt: l.Now})
		}
	}
	for _, m := range ch.Remove {
		l.WS.MemberEnds = append(l.WS.MemberEnds, store.MemberRemoval{Team: l.Team, CaseID: c.ID,
			Relationship: m.Relationship, RemovedVersion: c.Version})
	}
	for _, m := range ch.Add {
		l.WS.MemberAdds = append(l.WS.MemberAdds, store.MemberRow{Team: l.Team, CaseID: c.ID, Position: c.Positions[m.Position],
			Relationship: m.Relationship, Version: m.Version, Owner: m.Owner, AddedVersion: c.Version})
	}
	c.Members = slices.DeleteFunc(c.Members, func(m conflict.MemberRef) bool { return slices.Contains(ch.Remove, m) })
	c.Members = append(c.Members, ch.Add...)

	var positions []store.EventPosition
	referenced := map[relationship.ID]int{}
	for _, p := range ch.Positions {
		ep := store.EventPosition{PositionID: c.Positions[p.Key], Object: p.Key.Object, Polarity: p.Key.Polarity}
		for _, m := range p.Members {
			ep.Members = append(ep.Members, store.EventMember{RelationshipID: m.Relationship.ID,
				Version: m.Relationship.Version, Owner: m.Relationship.Owner})
			referenced[m.Relationship.ID] = m.Relationship.Version
		}
		positions = append(positions, ep)
	}
	for _, m := range ch.Remove {
		if _, ok := referenced[m.Relationship]; !ok {
			referenced[m.Relationship] = m.Version
		}
	}
	if positions == nil {
		positions = []store.EventPosition{}
	}
	posJSON, _ := json.Marshal(positions)
	refJSON, _ := json.Marshal(referenced)
	l.WS.CaseEvents = append(l.WS.CaseEvents, store.CaseEventRow{Team: l.Team, ID: l.NewID("cfe"), CaseID: c.ID,
		CaseVersion: c.Version, PriorStatus: prior, ResultingStatus: c.Status, ActorKind: l.Actor.Kind,
		ActorProfile: l.Actor.Profile, Reason: string(reason), PolicyVersion: c.PolicyVersion, Referenced: refJSON, Positions: posJSON,
		IngestID: l.IngestID, CreatedAt: l.Now})
}
