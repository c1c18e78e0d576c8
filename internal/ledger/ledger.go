// Package ledger is the one owner of how decisions become rows. Placement, Forget and the nightly
// reviewer decide with the pure domain packages (relationship, conflict, evidence) and tell a Ledger
// what they decided; the Ledger writes the rows of one transaction into a store.WriteSet — a
// relationship change always with its transition, a case change always with
// its membership and its event — and keeps the transaction's view of every conflict key it touched
// up to date, so later decisions of the same transaction see earlier ones.
//
// It holds no I/O: its verbs take values and append rows, and its tests need no database.
package ledger

import (
	"slices"
	"strings"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Actor is who the transaction's rows name as acting: a profile, or the system Conflict reviewer.
type Actor struct {
	Kind    string // store.ActorProfile, store.ActorSystemConflictReviewer or store.ActorSystem
	Profile identity.ProfileID
}

// ProfileActor is the actor of a profile's call.
func ProfileActor(p identity.ProfileID) Actor { return Actor{Kind: store.ActorProfile, Profile: p} }

// ReviewerActor is the actor of the nightly Conflict reviewer.
var ReviewerActor = Actor{Kind: store.ActorSystemConflictReviewer}

// Ledger accumulates the rows of one transaction. Create it with its fields set, Load the state the
// transaction's locks read, then call verbs; WS holds the rows.
type Ledger struct {
	Team  identity.TeamID
	Actor Actor
	// IngestID names the call's rows (a Remember's ingest, a Forget's, the reviewer's claim token);
	// IdempotencyKey is recorded on profile transitions.
	IngestID       string
	IdempotencyKey string
	Now            time.Time
	// Policy is the team policy the transaction applies: it gives supports their authority, and a new
	// case pins its version and TTL. Placement and lifecycle changes use the version in force; the
	// nightly reviewer the version the reviewed case pinned, the one its events record.
	Policy store.Policy
	// NewID allocates a library ID with the given prefix at Now.
	NewID func(prefix string) string

	WS store.WriteSet

	keys  map[conflict.Key]*KeyState
	preds []relationship.Predicate
	// supports are the counted supports of every relationship the transaction knows, shared by keys.
	supports map[relationship.ID][]evidence.Support
	// fragments are, per relationship, the fragments of its supports (an adoption's cross-references).
	fragments map[relationship.ID][]evidence.FragmentID
	// confirmedFrom are, per relationship, the valid_from dates verifiers confirmed in its stored supports.
	confirmedFrom map[relationship.ID][]time.Time
	cases         map[conflict.ID]*store.CaseRow
	// others are the loaded members of identity cases that lie on keys the transaction did not lock:
	// locked by row (KeysLockParams.Members), read for the case's positions, and changed only by the
	// nightly reviewer superseding the losers of a resolved identity case (Review). A change of one
	// touches no key (Touch): its key is not locked, so its cases are repaired by their own review.
	others map[relationship.ID]*relationship.Relationship
	// corrected are, per entity, the identity corrections the transaction recorded (both sides).
	corrected map[identity.EntityID][]relationship.ID

	// The questions of held statements (settle.go). items are, per relationship, its open
	// relationship_conflict items, as read and as issued since; closed the relationships whose stored
	// items the transaction closed; asked the items it issued; itemIDs the placement items to ask
	// under; absorbed the held statements that became supports of their owner's current one.
	items    map[relationship.ID][]store.ReviewItemRow
	closed   map[relationship.ID]bool
	asked    map[relationship.ID]Asked
	itemIDs  map[relationship.ID]string
	absorbed map[relationship.ID]relationship.ID
	// recomputed are the owners and keys whose relationships a retirement recomputed: their held
	// statements there are re-planned by the system.
	recomputed map[ownerKey]bool
	// links are the support links of every relationship the transaction knows (an absorbed held
	// statement's are linked again), observations the observation each new relationship came from.
	links        map[relationship.ID][]store.SupportRow
	observations map[relationship.ID]string
	// objectNames and subjectNames name relationships' objects and keys' subjects in questions.
	objectNames  map[relationship.ID]string
	subjectNames map[identity.EntityID]string
}

// ownerKey is one owner's part of a conflict key.
type ownerKey struct {
	key   conflict.Key
	owner identity.ProfileID
}

// KeyState is everything the transaction knows about one conflict key: every owner's relationships
// (changed in place by the verbs), their counted supports, and the live case.
type KeyState struct {
	Key      conflict.Key
	Pred     relationship.Predicate
	Rels     []*relationship.Relationship
	Supports map[relationship.ID][]evidence.Support
	Live     *store.CaseRow
	// Touched is true once the transaction changed the key's state.
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

// Find returns the key's relationship id, or nil.
func (ks *KeyState) Find(id relationship.ID) *relationship.Relationship {
	for _, r := range ks.Rels {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// Owned returns copies of owner's relationships of the key.
func (ks *KeyState) Owned(owner identity.ProfileID) []relationship.Relationship {
	var out []relationship.Relationship
	for _, r := range ks.Rels {
		if r.Owner == owner {
			out = append(out, *r)
		}
	}
	return out
}

// Support is a stored support link as the counting rules see it: effective while its fragment is not
// retired, and carrying authority
// only when its author is one of the policy's authoritative profiles.
func Support(s store.SupportRow, authoritative []identity.ProfileID) evidence.Support {
	return evidence.Support{Fragment: s.FragmentID, Group: s.Group, ContentHash: s.ContentHash, Effective: s.Retirement == "",
		AllowedAuthority: evidence.AllowedAuthority(s.Authority, s.Author, authoritative)}
}

func (l *Ledger) init() {
	if l.keys == nil {
		l.keys = map[conflict.Key]*KeyState{}
		l.supports = map[relationship.ID][]evidence.Support{}
		l.fragments = map[relationship.ID][]evidence.FragmentID{}
		l.confirmedFrom = map[relationship.ID][]time.Time{}
		l.cases = map[conflict.ID]*store.CaseRow{}
		l.items = map[relationship.ID][]store.ReviewItemRow{}
		l.closed = map[relationship.ID]bool{}
		l.asked = map[relationship.ID]Asked{}
		l.itemIDs = map[relationship.ID]string{}
		l.absorbed = map[relationship.ID]relationship.ID{}
		l.recomputed = map[ownerKey]bool{}
		l.links = map[relationship.ID][]store.SupportRow{}
		l.observations = map[relationship.ID]string{}
		l.objectNames = map[relationship.ID]string{}
		l.subjectNames = map[identity.EntityID]string{}
	}
}

// Load takes in what the transaction's locks read: every owner's relationships of the locked keys
// with their supports (counted under the policy's authority) and the cases, live or named, and the
// team's predicates, which give each key its behaviour. It is called once, before any verb.
func (l *Ledger) Load(kl store.KeysLocked, preds []relationship.Predicate) {
	l.init()
	l.preds = preds
	for i := range kl.Relationships {
		r := &kl.Relationships[i]
		ks := l.Key(conflict.Key{Team: l.Team, Subject: r.Subject, PredicateKey: r.PredicateKey, Scope: r.Scope})
		ks.Rels = append(ks.Rels, r)
	}
	for i := range kl.Members {
		if l.others == nil {
			l.others = map[relationship.ID]*relationship.Relationship{}
		}
		l.others[kl.Members[i].ID] = &kl.Members[i]
	}
	for _, s := range kl.Supports {
		l.supports[s.RelationshipID] = append(l.supports[s.RelationshipID], Support(s, l.Policy.AuthoritativeProfiles))
		l.links[s.RelationshipID] = append(l.links[s.RelationshipID], s)
		l.fragments[s.RelationshipID] = append(l.fragments[s.RelationshipID], s.FragmentID)
		if s.ConfirmedFrom != nil {
			l.confirmedFrom[s.RelationshipID] = append(l.confirmedFrom[s.RelationshipID], *s.ConfirmedFrom)
		}
	}
	for _, it := range kl.Items {
		l.items[it.RelationshipID] = append(l.items[it.RelationshipID], it)
	}
	for id, n := range kl.ObjectNames {
		l.objectNames[id] = n
	}
	for id, n := range kl.SubjectNames {
		l.subjectNames[id] = n
	}
	for i := range kl.Cases {
		c := &kl.Cases[i]
		l.cases[c.ID] = c
		if c.Status.Live() {
			l.Key(c.Key).Live = c
		}
	}
}

// Key returns the state of a key, empty for a key the transaction has not read (a new subject).
func (l *Ledger) Key(k conflict.Key) *KeyState {
	l.init()
	ks, ok := l.keys[k]
	if !ok {
		pred, _ := relationship.MatchPredicate(k.PredicateKey, l.preds)
		ks = &KeyState{Key: k, Pred: pred, Supports: l.supports}
		l.keys[k] = ks
	}
	return ks
}

// Case returns a case the transaction read (by KeysLock), or nil.
func (l *Ledger) Case(id conflict.ID) *store.CaseRow {
	l.init()
	return l.cases[id]
}

// Touched returns the keys the transaction changed, in key order (identity keys never: see
// Corrected).
func (l *Ledger) Touched() []*KeyState {
	var out []*KeyState
	for _, ks := range l.keys {
		if ks.Touched {
			out = append(out, ks)
		}
	}
	slices.SortFunc(out, func(a, b *KeyState) int {
		return strings.Compare(string(a.Key.Subject)+"\x00"+a.Key.PredicateKey+"\x00"+a.Key.Scope,
			string(b.Key.Subject)+"\x00"+b.Key.PredicateKey+"\x00"+b.Key.Scope)
	})
	return out
}

// validFromConfirmed reports whether a verifier confirmed rel's own valid_from in one of the
// supports the transaction loaded (evidence.ConfirmsValidFrom).
func (l *Ledger) validFromConfirmed(rel *relationship.Relationship) bool {
	for _, at := range l.confirmedFrom[rel.ID] {
		if evidence.ConfirmsValidFrom(&at, rel.Validity.From) {
			return true
		}
	}
	return false
}

// Supports returns the counted supports of a relationship the transaction knows.
func (l *Ledger) Supports(id relationship.ID) []evidence.Support {
	l.init()
	return l.supports[id]
}
