package densemem

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// keyState is everything one transaction knows about one conflict key after its locks: every
// owner's relationships (changed in place as the call plans), their supports, and the live case.
type keyState struct {
	key      conflict.Key
	pred     relationship.Predicate
	rels     []*relationship.Relationship
	supports map[relationship.ID][]evidence.Support
	live     *store.CaseRow
	// touched is true when this call changed the key's state.
	touched bool
}

// caseKeeper applies conflict.Maintain to the keys a transaction touched and turns its decisions
// into case rows, membership, events and search refresh intents. Placement and lifecycle changes
// (forget) share it, so every status change repairs the cases of its keys in the same transaction.
type caseKeeper struct {
	c        *Client
	team     identity.TeamID
	actor    identity.ProfileID
	ingestID string
	now      time.Time
	policy   store.Policy
	ws       *store.WriteSet
}

// maintain opens, updates or dismisses the key's case and returns the resulting live case
// reference, or nil when the key has none.
func (k *caseKeeper) maintain(ks *keyState) *ConflictRef {
	members := make([]conflict.Member, 0, len(ks.rels))
	for _, r := range ks.rels {
		members = append(members, conflict.Member{Relationship: *r, Supports: ks.supports[r.ID]})
	}
	var live *conflict.Live
	if ks.live != nil {
		live = &conflict.Live{ID: ks.live.ID, Version: ks.live.Version, Status: ks.live.Status,
			PolicyVersion: ks.live.PolicyVersion, OpenedAt: ks.live.OpenedAt, ReviewDueAt: ks.live.ReviewDueAt,
			PositionIDs: ks.live.Positions, Members: ks.live.Members}
	}
	ch := conflict.Maintain(ks.pred, live, members, k.now)
	switch ch.Action {
	case conflict.ActionOpen:
		c := &store.CaseRow{Team: k.team, ID: conflict.ID(k.c.newID("cf", k.now)), Kind: conflict.KindCrossProfileCurrentState,
			Key: ks.key, Status: conflict.StatusOpen, Version: 1, OpenedAt: k.now, ReviewDueAt: k.now.Add(k.policy.ReviewTTL),
			NextReviewAt: k.now, PolicyVersion: k.policy.Version, OpenedBy: k.actor,
			Positions: map[conflict.PositionKey]conflict.PositionID{}}
		k.ws.CaseInserts = append(k.ws.CaseInserts, *c)
		k.apply(c, ch, "", "opened")
		ks.live = c
	case conflict.ActionUpdate:
		c := ks.live
		k.ws.CaseUpdates = append(k.ws.CaseUpdates, store.CaseUpdate{Team: k.team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: c.Status, UpdatedAt: k.now})
		c.Version++
		k.apply(c, ch, c.Status, "membership_changed")
	case conflict.ActionDismiss:
		c := ks.live
		k.ws.CaseUpdates = append(k.ws.CaseUpdates, store.CaseUpdate{Team: k.team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: conflict.StatusDismissed, UpdatedAt: k.now})
		prior := c.Status
		c.Version++
		c.Status = conflict.StatusDismissed
		k.apply(c, ch, prior, "dismissed_no_material_disagreement")
		ks.live = nil
		return &ConflictRef{ConflictID: string(c.ID), Version: c.Version, Status: string(c.Status)}
	}
	if ks.live == nil {
		return nil
	}
	return &ConflictRef{ConflictID: string(ks.live.ID), Version: ks.live.Version, Status: string(ks.live.Status)}
}

// apply writes a change's membership and its event at the case's (new) version.
func (k *caseKeeper) apply(c *store.CaseRow, ch conflict.Change, prior conflict.Status, reason string) {
	for _, p := range ch.Positions {
		if _, ok := c.Positions[p.Key]; !ok {
			id := conflict.PositionID(k.c.newID("pos", k.now))
			c.Positions[p.Key] = id
			k.ws.Positions = append(k.ws.Positions, store.PositionRow{Team: k.team, ID: id, CaseID: c.ID, Key: p.Key, CreatedAt: k.now})
		}
	}
	for _, m := range ch.Remove {
		k.ws.MemberEnds = append(k.ws.MemberEnds, store.MemberRemoval{Team: k.team, CaseID: c.ID,
			Relationship: m.Relationship, RemovedVersion: c.Version})
	}
	for _, m := range ch.Add {
		k.ws.MemberAdds = append(k.ws.MemberAdds, store.MemberRow{Team: k.team, CaseID: c.ID, Position: c.Positions[m.Position],
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
	k.ws.CaseEvents = append(k.ws.CaseEvents, store.CaseEventRow{Team: k.team, ID: k.c.newID("cfe", k.now), CaseID: c.ID,
		CaseVersion: c.Version, PriorStatus: prior, ResultingStatus: c.Status, ActorKind: store.ActorProfile,
		ActorProfile: k.actor, Reason: reason, PolicyVersion: c.PolicyVersion, Referenced: refJSON, Positions: posJSON,
		IngestID: k.ingestID, CreatedAt: k.now})
}
