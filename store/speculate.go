package store

import (
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// A Remember that states something about existing entities plans from its keys' live state. Before
// its transaction it cannot know the keys exactly (identity resolution and predicate matching run in
// Go on what RememberPrepare reads), so RememberPrepare reads, speculatively and in the same round
// trip, the live state of every key the request can name (KeySpeculation): a superset. KeysSpeculated.
// Narrow then returns exactly what KeysLock would have read for the keys the planner computed, when
// the speculation covered them, and Tx.WriteSetApplyFenced checks under the keys' locks that it
// still holds (KeysFence).

// KeySpeculation describes the statements of a request as a read before identity resolution sees
// them: for each, the lookups of its subject and object mentions, its predicate phrase and scope.
type KeySpeculation struct {
	Statements []SpeculatedStatement
	// Named are the relationships the request names by ID (corrects_relationship_id): read by ID,
	// whatever their key and status.
	Named []relationship.ID
}

// SpeculatedStatement is one statement of a request (modality statement): the keys it can fall on
// are (any entity Subject can resolve to, any predicate whose key or alias is Predicate, Scope).
type SpeculatedStatement struct {
	Subject MentionLookup
	// Predicate is the statement's predicate phrase, normalised (relationship.NormalizePhrase).
	Predicate string
	// Scope is the statement's scope, normalised.
	Scope string
	// Object is the object mention's lookup when the object is an entity, ObjectValue the value's ID
	// when it is a value; neither when the statement has no object.
	Object      MentionLookup
	ObjectValue string
}

// MentionLookup is how a mention's entity is found: by ID (Known) or among the entities holding a
// name of its kind and skeleton (Names, as RememberPrepareParams.Names).
type MentionLookup struct {
	Known identity.EntityID
	Names []NameLookup
}

// HasObject reports whether the statement has an object.
func (s SpeculatedStatement) HasObject() bool {
	return s.ObjectValue != "" || s.Object.Known != "" || len(s.Object.Names) > 0
}

// KeysSpeculated is what a KeySpeculation read.
type KeysSpeculated struct {
	// Keys are the conflict keys the statements can fall on, each read whole (Wide: its predicate
	// compares positions, or a statement on it has no object) or for Objects only.
	Keys []SpeculatedKey
	// State holds, for each key, its live relationships (Wide) or its live relationships about one
	// of Objects, its held (needs_review) ones and the live ones about a held one's object, all with
	// their object names; the Named relationships whatever their key and status; the supports of
	// the live relationships read; the open relationship_conflict review items of the held ones; the
	// keys' live cases with their positions and current members; and the keys' subjects' canonical
	// names. Relationships are in ID order, supports, items and cases in KeysLock's orders.
	State KeysLocked
}

// SpeculatedKey is one key a speculation read, and how.
type SpeculatedKey struct {
	Key     conflict.Key
	Wide    bool
	Objects []relationship.Object
}

// Narrow returns what Tx.KeysLock with p would read, taken from s, and whether s covers it: every
// key of p whose subject the call does not create (created) was read, whole when p reads it whole,
// and for every object p narrows it to that the call does not create. p must ask for LiveOnly without Cases, Members or Predicates;
// otherwise Narrow reports no cover. The rows returned are copies' slices of s's rows: a ledger
// loaded from them changes none of s.
func (s KeysSpeculated) Narrow(p KeysLockParams, created func(identity.EntityID) bool) (KeysLocked, bool) {
	if !p.LiveOnly || len(p.Cases) > 0 || p.Members || p.Predicates {
		return KeysLocked{}, false
	}
	read := map[conflict.Key]SpeculatedKey{}
	for _, k := range s.Keys {
		read[k.Key] = k
	}
	narrowed := map[conflict.Key][]relationship.Object{}
	for _, o := range p.ByObject {
		narrowed[o.Key] = append(narrowed[o.Key], o.Object)
	}
	onKeys := map[conflict.Key]bool{}
	for _, k := range p.Keys {
		sk, ok := read[k]
		if !ok && created(k.Subject) {
			continue // a new entity's key holds nothing
		}
		if !ok || (narrowed[k] == nil && !sk.Wide) {
			return KeysLocked{}, false
		}
		for _, o := range narrowed[k] {
			if !sk.Wide && !slices.Contains(sk.Objects, o) && (o.EntityID == "" || !created(o.EntityID)) {
				return KeysLocked{}, false
			}
		}
		onKeys[k] = true
	}
	keyOf := func(r relationship.Relationship) conflict.Key {
		return conflict.Key{Team: p.Team, Subject: r.Subject, PredicateKey: r.PredicateKey, Scope: r.Scope}
	}
	// The objects of each narrowed key's held relationships: their live relationships are read too.
	held := map[conflict.Key][]relationship.Object{}
	for _, r := range s.State.Relationships {
		if k := keyOf(r); onKeys[k] && narrowed[k] != nil && r.Status == relationship.StatusNeedsReview {
			held[k] = append(held[k], r.Object)
		}
	}
	out := KeysLocked{ObjectNames: map[relationship.ID]string{}, SubjectNames: map[identity.EntityID]string{}}
	live := map[relationship.ID]bool{}
	var closed []relationship.Relationship
	for _, r := range s.State.Relationships {
		k := keyOf(r)
		named := slices.Contains(p.Named, r.ID)
		switch {
		case !onKeys[k]:
			continue
		case !r.Status.Live():
			if named {
				closed = append(closed, r)
			}
			continue
		case narrowed[k] != nil && !named && r.Status != relationship.StatusNeedsReview &&
			!slices.Contains(narrowed[k], r.Object) && !slices.Contains(held[k], r.Object):
			continue
		}
		live[r.ID] = true
		out.Relationships = append(out.Relationships, r)
	}
	out.Relationships = append(out.Relationships, closed...)
	for _, r := range out.Relationships {
		out.ObjectNames[r.ID] = s.State.ObjectNames[r.ID]
	}
	for _, sup := range s.State.Supports {
		if live[sup.RelationshipID] {
			out.Supports = append(out.Supports, sup)
		}
	}
	for _, it := range s.State.Items {
		if live[it.RelationshipID] {
			out.Items = append(out.Items, it)
		}
	}
	for _, k := range p.Keys {
		if name, ok := s.State.SubjectNames[k.Subject]; ok {
			out.SubjectNames[k.Subject] = name
		}
	}
	for _, c := range s.State.Cases {
		if onKeys[c.Key] && c.Status.Live() {
			out.Cases = append(out.Cases, c)
		}
	}
	return out, true
}

// KeysFence is what a plan made from a read of conflict keys without their locks relied on
// (decision 124's fence, for a Remember): under the keys' locks, the rows KeysLock with Params would
// lock are the live relationships read at their versions, with as many supports and as many of them
// retired, the keys' live cases are those read at their versions, and the open relationship_conflict
// review items of the keys' held relationships are those read.
type KeysFence struct {
	Params        KeysLockParams
	Relationships []relationship.ID
	Versions      []int
	Supports      int
	Retired       int
	Cases         []conflict.ID
	CaseVersions  []int
	Items         []string
}

// NewKeysFence returns the fence of a plan made from kl, what KeysLock with p would read (as
// KeysSpeculated.Narrow returns it).
func NewKeysFence(p KeysLockParams, kl KeysLocked) KeysFence {
	f := KeysFence{Params: p}
	for _, r := range kl.Relationships {
		if r.Status.Live() {
			f.Relationships, f.Versions = append(f.Relationships, r.ID), append(f.Versions, r.Version)
		}
	}
	f.Supports, f.Retired = kl.supportCounts()
	for _, c := range kl.Cases {
		f.Cases, f.CaseVersions = append(f.Cases, c.ID), append(f.CaseVersions, c.Version)
	}
	for _, it := range kl.Items {
		f.Items = append(f.Items, it.ID)
	}
	return f
}

// supportCounts returns the number of kl's supports and of those whose fragment is retired: what a
// fence compares, supports and retirements being only ever added.
func (kl KeysLocked) supportCounts() (supports, retired int) {
	for _, s := range kl.Supports {
		supports++
		if s.Retirement != "" {
			retired++
		}
	}
	return supports, retired
}
