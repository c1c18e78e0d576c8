package conflict

import (
	"cmp"
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// MemberRef is one membership row: a relationship at a version in a position.
type MemberRef struct {
	Position     PositionKey
	Relationship relationship.ID
	Version      int
	Owner        identity.ProfileID
}

// Live is a live (open or overdue) case as stored, with its current membership.
type Live struct {
	ID            ID
	Version       int
	Status        Status
	PolicyVersion int
	OpenedAt      time.Time
	ReviewDueAt   time.Time
	// PositionIDs maps every position the case has ever had to its ID.
	PositionIDs map[PositionKey]PositionID
	// Members is the current membership (rows without a removed version).
	Members []MemberRef
}

// Action is what one transaction does to a conflict key's case.
type Action string

// Case maintenance actions.
const (
	ActionNone    Action = ""
	ActionOpen    Action = "open"
	ActionUpdate  Action = "update"
	ActionDismiss Action = "dismiss"
)

// Change is the outcome of Maintain.
type Change struct {
	Action Action
	// Positions are the material positions after the change (empty for a dismissal).
	Positions []Position
	// Add and Remove are the membership rows to add and to end at the new version.
	Add    []MemberRef
	Remove []MemberRef
}

// Disagreement reports whether positions form a material cross-profile disagreement: at least two
// material positions held by at least two different profiles.
func Disagreement(ps []Position) bool {
	if len(ps) < 2 {
		return false
	}
	owners := map[identity.ProfileID]bool{}
	for _, p := range ps {
		for _, o := range p.Owners {
			if owners[o] = true; len(owners) >= 2 {
				return true
			}
		}
	}
	return false
}

// Maintain decides what committed state does to a conflict key's case: open one when a material
// cross-profile disagreement has no live case, repair the membership of a live case, or dismiss a
// live case left without a disagreement. members are every relationship of the key (any owner, any
// status) as they stand at the end of the transaction. It never resolves a case.
func Maintain(pred relationship.Predicate, live *Live, members []Member, now time.Time) Change {
	return maintain(Positions(pred, members, now), live)
}

// MaintainIdentity is Maintain for the identity_correction case about entity e: members are the
// relationships a correction named (another owner's on e, and the corrections on the entities
// created distinct from e), grouped by IdentityPositions.
func MaintainIdentity(e identity.EntityID, live *Live, members []Member, now time.Time) Change {
	return maintain(IdentityPositions(e, members, now), live)
}

// maintain decides a live case's change from the positions the key's state has now.
func maintain(ps []Position, live *Live) Change {
	disagree := Disagreement(ps)
	if live == nil {
		if !disagree {
			return Change{}
		}
		return Change{Action: ActionOpen, Positions: ps, Add: refs(ps)}
	}
	if !disagree {
		return Change{Action: ActionDismiss, Remove: slices.Clone(live.Members)}
	}
	want := refs(ps)
	has, wanted := set(live.Members), set(want)
	var ch Change
	for _, w := range want {
		if !has[w] {
			ch.Add = append(ch.Add, w)
		}
	}
	for _, m := range live.Members {
		if !wanted[m] {
			ch.Remove = append(ch.Remove, m)
		}
	}
	if len(ch.Add) == 0 && len(ch.Remove) == 0 {
		return Change{Positions: ps}
	}
	ch.Action, ch.Positions = ActionUpdate, ps
	return ch
}

// set returns refs as a set, so a membership is compared in O(1).
func set(refs []MemberRef) map[MemberRef]bool {
	out := make(map[MemberRef]bool, len(refs))
	for _, r := range refs {
		out[r] = true
	}
	return out
}

func refs(ps []Position) []MemberRef {
	var out []MemberRef
	for _, p := range ps {
		for _, m := range p.Members {
			out = append(out, MemberRef{Position: p.Key, Relationship: m.Relationship.ID,
				Version: m.Relationship.Version, Owner: m.Relationship.Owner})
		}
	}
	return out
}

// IdentityPositions groups the material members of an identity correction by the entity they are
// stated about: the position of e (the identity a correction says combines several) and one position
// per entity stated distinct from it. A member counts only while it pairs with a material member
// across e (relationship.CorrectsIdentity, another owner): a correction whose statement on e is gone
// corrects nothing, whatever order the changes came in. A position's key names its entity as its
// object, polarity "+". Positions are kept only while e's position and another are both material;
// groups are tallied across the case by TallyCase: the distinct identities are one side, so a group
// behind two of them counts for each, and a group behind e's position and a distinct one for neither.
func IdentityPositions(e identity.EntityID, members []Member, now time.Time) []Position {
	// The material members on each side, grouped by what CorrectsIdentity compares first (predicate,
	// scope, object, polarity), so a member is checked against its group only, not every member.
	type statement struct {
		predicate, scope string
		object           relationship.Object
		polarity         relationship.Polarity
	}
	of := func(r relationship.Relationship) statement {
		return statement{r.PredicateKey, r.Scope, r.Object, r.Polarity}
	}
	onE, others := map[statement][]relationship.Relationship{}, map[statement][]relationship.Relationship{}
	for _, m := range members {
		if r := m.Relationship; Material(r, now) && r.Subject == e {
			onE[of(r)] = append(onE[of(r)], r)
		} else if Material(r, now) {
			others[of(r)] = append(others[of(r)], r)
		}
	}
	paired := func(r relationship.Relationship) bool {
		across := onE
		if r.Subject == e {
			across = others
		}
		return slices.ContainsFunc(across[of(r)], func(o relationship.Relationship) bool {
			return o.Owner != r.Owner && relationship.CorrectsIdentity(r, o)
		})
	}
	byEntity := map[identity.EntityID]*Position{}
	var order []identity.EntityID
	for _, m := range members {
		r := m.Relationship
		if !Material(r, now) || !paired(r) {
			continue
		}
		p, ok := byEntity[r.Subject]
		if !ok {
			p = &Position{Key: PositionKey{Object: relationship.Object{EntityID: r.Subject}, Polarity: relationship.PolarityPositive}}
			byEntity[r.Subject] = p
			order = append(order, r.Subject)
		}
		p.Members = append(p.Members, m)
		if !slices.Contains(p.Owners, r.Owner) {
			p.Owners = append(p.Owners, r.Owner)
		}
	}
	if byEntity[e] == nil || len(order) < 2 {
		return nil
	}
	out := make([]Position, 0, len(order))
	for _, id := range order {
		p := byEntity[id]
		slices.SortFunc(p.Members, func(a, b Member) int { return cmp.Compare(a.Relationship.ID, b.Relationship.ID) })
		slices.Sort(p.Owners)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Position) int {
		return cmp.Compare(a.Members[0].Relationship.ID, b.Members[0].Relationship.ID)
	})
	TallyCase(KindIdentityCorrection, e, out)
	return out
}
