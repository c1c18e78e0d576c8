package review

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

// Support is a stored support link as the counting rules see it: effective, and carrying authority
// only when its author is one of the policy's authoritative profiles.
func Support(s store.SupportRow, authoritative []identity.ProfileID) evidence.Support {
	return evidence.Support{Group: s.Group, ContentHash: s.ContentHash, Effective: true,
		AllowedAuthority: evidence.AllowedAuthority(s.Authority, s.Author, authoritative)}
}

// KeyState is everything one transaction knows about one conflict key after its locks: every
// owner's relationships (changed in place as the transaction plans), their supports, and the live case.
type KeyState struct {
	Key      conflict.Key
	Pred     relationship.Predicate
	Rels     []*relationship.Relationship
	Supports map[relationship.ID][]evidence.Support
	Live     *store.CaseRow
	// Touched is true when the transaction changed the key's state.
	Touched bool
}

// Members returns the key's relationships with their supports, as the conflict policy sees them.
func (ks *KeyState) Members() []conflict.Member {
	members := make([]conflict.Member, 0, len(ks.Rels))
	for _, r := range ks.Rels {
		members = append(members, conflict.Member{Relationship: *r, Supports: ks.Supports[r.ID]})
	}
	return members
}

// CaseRef names a case at a version after a Keeper changed or kept it.
type CaseRef struct {
	ID      conflict.ID
	Version int
	Status  conflict.Status
}

// Keeper turns conflict.Maintain decisions into case rows, positions, versioned membership and
// events of a WriteSet. Placement, lifecycle changes (forget) and the nightly reviewer share it, so
// every status change repairs the cases of its keys in the same transaction, the same way.
type Keeper struct {
	Team identity.TeamID
	// ActorKind is store.ActorProfile (with ActorProfile) or store.ActorSystemConflictReviewer.
	ActorKind    string
	ActorProfile identity.ProfileID
	IngestID     string
	Now          time.Time
	// Policy is the team policy in force; a new case pins its version and TTL.
	Policy store.Policy
	WS     *store.WriteSet
	// NewID allocates a library ID with the given prefix.
	NewID func(prefix string) string
}

// Maintain opens, updates or dismisses the key's case from its current state and returns the case
// it leaves (a dismissed one included), or nil when the key has none. It never resolves a case.
func (k *Keeper) Maintain(ks *KeyState) *CaseRef {
	members := ks.Members()
	var live *conflict.Live
	if ks.Live != nil {
		live = &conflict.Live{ID: ks.Live.ID, Version: ks.Live.Version, Status: ks.Live.Status,
			PolicyVersion: ks.Live.PolicyVersion, OpenedAt: ks.Live.OpenedAt, ReviewDueAt: ks.Live.ReviewDueAt,
			PositionIDs: ks.Live.Positions, Members: ks.Live.Members}
	}
	ch := conflict.Maintain(ks.Pred, live, members, k.Now)
	switch ch.Action {
	case conflict.ActionOpen:
		c := &store.CaseRow{Team: k.Team, ID: conflict.ID(k.NewID("cf")), Kind: conflict.KindCrossProfileCurrentState,
			Key: ks.Key, Status: conflict.StatusOpen, Version: 1, OpenedAt: k.Now, ReviewDueAt: k.Now.Add(k.Policy.ReviewTTL),
			NextReviewAt: k.Now, PolicyVersion: k.Policy.Version, OpenedBy: k.ActorProfile,
			Positions: map[conflict.PositionKey]conflict.PositionID{}}
		k.WS.CaseInserts = append(k.WS.CaseInserts, *c)
		k.Apply(c, ch, "", "opened")
		ks.Live = c
	case conflict.ActionUpdate:
		c := ks.Live
		k.WS.CaseUpdates = append(k.WS.CaseUpdates, store.CaseUpdate{Team: k.Team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: c.Status, UpdatedAt: k.Now})
		c.Version++
		k.Apply(c, ch, c.Status, "membership_changed")
	case conflict.ActionDismiss:
		c := ks.Live
		k.WS.CaseUpdates = append(k.WS.CaseUpdates, store.CaseUpdate{Team: k.Team, ID: c.ID, ExpectVersion: c.Version,
			Version: c.Version + 1, Status: conflict.StatusDismissed, UpdatedAt: k.Now})
		prior := c.Status
		c.Version++
		c.Status = conflict.StatusDismissed
		k.Apply(c, ch, prior, "dismissed_no_material_disagreement")
		ks.Live = nil
		return &CaseRef{ID: c.ID, Version: c.Version, Status: c.Status}
	}
	if ks.Live == nil {
		return nil
	}
	return &CaseRef{ID: ks.Live.ID, Version: ks.Live.Version, Status: ks.Live.Status}
}

// Apply writes a change's positions and membership, and one event at the case's (already bumped)
// version recording the resulting membership, with the Keeper's actor and the given reason.
func (k *Keeper) Apply(c *store.CaseRow, ch conflict.Change, prior conflict.Status, reason string) {
	for _, p := range ch.Positions {
		if _, ok := c.Positions[p.Key]; !ok {
			id := conflict.PositionID(k.NewID("pos"))
			c.Positions[p.Key] = id
			k.WS.Positions = append(k.WS.Positions, store.PositionRow{Team: k.Team, ID: id, CaseID: c.ID, Key: p.Key, CreatedAt: k.Now})
		}
	}
	for _, m := range ch.Remove {
		k.WS.MemberEnds = append(k.WS.MemberEnds, store.MemberRemoval{Team: k.Team, CaseID: c.ID,
			Relationship: m.Relationship, RemovedVersion: c.Version})
	}
	for _, m := range ch.Add {
		k.WS.MemberAdds = append(k.WS.MemberAdds, store.MemberRow{Team: k.Team, CaseID: c.ID, Position: c.Positions[m.Position],
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
	k.WS.CaseEvents = append(k.WS.CaseEvents, store.CaseEventRow{Team: k.Team, ID: k.NewID("cfe"), CaseID: c.ID,
		CaseVersion: c.Version, PriorStatus: prior, ResultingStatus: c.Status, ActorKind: k.ActorKind,
		ActorProfile: k.ActorProfile, Reason: reason, PolicyVersion: c.PolicyVersion, Referenced: refJSON, Positions: posJSON,
		IngestID: k.IngestID, CreatedAt: k.Now})
}
