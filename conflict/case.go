package conflict

import (
	"cmp"
	"slices"
	"time"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// ID identifies a conflict case.
type ID string

// PositionID identifies a position of a case.
type PositionID string

// Status is a case's workflow status.
type Status string

// Case statuses. Open and overdue cases are the live ones; at most one per key.
const (
	StatusOpen      Status = "open"
	StatusOverdue   Status = "overdue"
	StatusResolved  Status = "resolved"
	StatusDismissed Status = "dismissed"
)

// Valid reports whether s is a known case status.
func (s Status) Valid() bool {
	switch s {
	case StatusOpen, StatusOverdue, StatusResolved, StatusDismissed:
		return true
	}
	return false
}

// Statuses returns every case status, the live ones first.
func Statuses() []Status { return []Status{StatusOpen, StatusOverdue, StatusResolved, StatusDismissed} }

// Live reports whether a case in status s still awaits resolution.
func (s Status) Live() bool { return s == StatusOpen || s == StatusOverdue }

// Kind is what a case is about.
type Kind string

// Case kinds.
const (
	KindCrossProfileCurrentState Kind = "cross_profile_current_state"
	KindIdentityCorrection       Kind = "identity_correction"
)

// Member is one relationship of a conflict key with the supports behind it.
type Member struct {
	Relationship relationship.Relationship
	Supports     []evidence.Support
}

// PositionKey groups members: one object with one polarity.
type PositionKey struct {
	Object   relationship.Object
	Polarity relationship.Polarity
}

// Position is one material alternative of a case.
type Position struct {
	Key     PositionKey
	Members []Member
	Owners  []identity.ProfileID
	// Groups is the number of independent source groups counted for this position: groups that also
	// support another position of the case count for neither.
	Groups int
	// Authority reports an allowed authoritative group among the counted ones.
	Authority bool
}

// Material reports whether a relationship can be a member of a case at now: active, tier
// validated_claim or fact, and valid until after now.
func Material(r relationship.Relationship, now time.Time) bool {
	return r.Status == relationship.StatusActive && r.Tier != relationship.TierCandidate &&
		(r.Validity.To == nil || r.Validity.To.After(now))
}

// Positions groups the material members of one conflict key into positions and keeps the positions
// that are incompatible with at least one other. The result is ordered deterministically (by the
// earliest member relationship ID) and Groups/Authority are counted across the whole case.
func Positions(pred relationship.Predicate, members []Member, now time.Time) []Position {
	if pred.Kind == relationship.KindEvent || pred.Cardinality != relationship.CardinalityOne {
		return nil // nothing is incompatible on the key: no position, whatever its size
	}
	byKey := map[PositionKey]*Position{}
	owners := map[PositionKey]map[identity.ProfileID]bool{}
	var order []PositionKey
	var stmts []relationship.Statement
	var material []Member
	for _, m := range members {
		if !Material(m.Relationship, now) {
			continue
		}
		r := m.Relationship
		k := PositionKey{Object: r.Object, Polarity: r.Polarity}
		p, ok := byKey[k]
		if !ok {
			p = &Position{Key: k}
			byKey[k] = p
			owners[k] = map[identity.ProfileID]bool{}
			order = append(order, k)
		}
		p.Members = append(p.Members, m)
		if !owners[k][r.Owner] {
			owners[k][r.Owner] = true
			p.Owners = append(p.Owners, r.Owner)
		}
		material = append(material, m)
		stmts = append(stmts, relationship.Statement{Object: r.Object, Polarity: r.Polarity, Validity: r.Validity})
	}
	// A position is kept when one of its members is incompatible with a member of another one.
	kept := map[PositionKey]bool{}
	for i, c := range relationship.Contradicted(pred, stmts) {
		if c {
			r := material[i].Relationship
			kept[PositionKey{Object: r.Object, Polarity: r.Polarity}] = true
		}
	}
	var out []Position
	for _, k := range order {
		if kept[k] {
			out = append(out, *byKey[k])
		}
	}
	for i := range out {
		slices.SortFunc(out[i].Members, func(a, b Member) int { return cmp.Compare(a.Relationship.ID, b.Relationship.ID) })
		slices.Sort(out[i].Owners)
	}
	slices.SortFunc(out, func(a, b Position) int {
		return cmp.Compare(a.Members[0].Relationship.ID, b.Members[0].Relationship.ID)
	})
	Tally(out)
	return out
}

// Tally sets each position's Groups and Authority across the case: labels and content hashes are
// merged (copies count once), and a merged group that supports more than one position counts for
// none of them.
func Tally(ps []Position) { tally(ps, nil) }

// TallyCase is Tally for the positions of a case of kind about subject: a merged group counts for a
// position unless it also supports a position that is not allied with it (Allied). For a
// cross_profile_current_state case that is Tally; for an identity_correction case a group behind two
// distinct identities (one document telling both apart) counts for each of them, and a group behind
// the subject's position and a distinct identity counts for neither.
func TallyCase(kind Kind, subject identity.EntityID, ps []Position) {
	tally(ps, func(i, j int) bool { return Allied(kind, subject, ps[i].Key, ps[j].Key) })
}

// Allied reports whether positions a and b of a case of kind about subject stand on one side, the
// sides the resolution policy decides between and a resolution's losers are counted from. In a
// cross_profile_current_state case every position is a side of its own (a is allied only with
// itself). In an identity_correction case there are two sides: the subject's own position (its
// statements as attributed to the one identity) and every distinct identity's position together
// (the correction that the subject combines several): the distinct identities each correct other
// statements of the subject and are not incompatible with one another.
func Allied(kind Kind, subject identity.EntityID, a, b PositionKey) bool {
	if kind == KindIdentityCorrection {
		return (a.Object.EntityID == subject) == (b.Object.EntityID == subject)
	}
	return a == b
}

// tally sets Groups and Authority; allied (nil: only a position with itself) says which positions a
// shared group may support and still count.
func tally(ps []Position, allied func(i, j int) bool) {
	counted := newCounter(ps, allied)
	for i := range ps {
		groups := map[string]bool{}
		ps[i].Authority = false
		for _, m := range ps[i].Members {
			for _, s := range m.Supports {
				if root, ok := counted.counts(i, s); ok {
					groups[root] = true
					ps[i].Authority = ps[i].Authority || s.AllowedAuthority
				}
			}
		}
		ps[i].Groups = len(groups)
	}
}

// counter decides which supports of a case count: it merges labels and content hashes across every
// position and knows which positions each merged group supports.
type counter struct {
	parent map[string]string
	owners map[string]map[int]bool
	allied func(i, j int) bool
}

func newCounter(ps []Position, allied func(i, j int) bool) *counter {
	if allied == nil {
		allied = func(i, j int) bool { return i == j }
	}
	c := &counter{parent: map[string]string{}, owners: map[string]map[int]bool{}, allied: allied}
	for _, p := range ps {
		for _, m := range p.Members {
			for _, s := range m.Supports {
				if s.Effective {
					c.union("g:"+s.Group, "h:"+s.ContentHash)
				}
			}
		}
	}
	for i, p := range ps {
		for _, m := range p.Members {
			for _, s := range m.Supports {
				if !s.Effective {
					continue
				}
				root := c.find("g:" + s.Group)
				if c.owners[root] == nil {
					c.owners[root] = map[int]bool{}
				}
				c.owners[root][i] = true
			}
		}
	}
	return c
}

func (c *counter) find(x string) string {
	if _, ok := c.parent[x]; !ok {
		c.parent[x] = x
	}
	for c.parent[x] != x {
		c.parent[x] = c.parent[c.parent[x]]
		x = c.parent[x]
	}
	return x
}

func (c *counter) union(a, b string) {
	if ra, rb := c.find(a), c.find(b); ra != rb {
		c.parent[ra] = rb
	}
}

// counts reports whether support s of position i counts, with its merged group: it does when every
// position its group supports is allied with i (i itself, unless the counter was told otherwise).
func (c *counter) counts(i int, s evidence.Support) (string, bool) {
	if !s.Effective {
		return "", false
	}
	root := c.find("g:" + s.Group)
	if !c.owners[root][i] {
		return "", false
	}
	for j := range c.owners[root] {
		if !c.allied(i, j) {
			return "", false
		}
	}
	return root, true
}

// CountedMember reports whether a member of position i has at least one counted support, and
// whether one of its counted supports carries allowed authority.
func CountedMember(ps []Position, i int, m Member) (counted, authority bool) {
	c := newCounter(ps, nil)
	for _, s := range m.Supports {
		if _, ok := c.counts(i, s); ok {
			counted = true
			authority = authority || s.AllowedAuthority
		}
	}
	return counted, authority
}
