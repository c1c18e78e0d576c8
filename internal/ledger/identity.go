package ledger

import (
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// CorrectIdentity records DESIGN §6.5's identity-correction path for rel, a relationship of the
// ledger's actor that just became active on an entity the caller's evidence shows is not entity
// from: a corrects cross-reference from rel to every other owner's active relationship on from that
// states the same (relationship.CorrectsIdentity; the key (from, rel's predicate, rel's scope) must be
// loaded), each pair remembered for the identity case of from (MaintainIdentity). It returns the
// references written. The other owners' rows do not change.
func (l *Ledger) CorrectIdentity(rel *relationship.Relationship, from identity.EntityID, verification string) []store.CrossReferenceRow {
	l.init()
	ks := l.Key(conflict.Key{Team: l.Team, Subject: from, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
	var out []store.CrossReferenceRow
	for _, o := range ks.Rels {
		if o.Owner == rel.Owner || o.Status != relationship.StatusActive || !relationship.CorrectsIdentity(*rel, *o) {
			continue
		}
		x := store.CrossReferenceRow{Team: l.Team, ID: l.NewID("xref"), Kind: string(relationship.CrossReferenceCorrects),
			From: rel.ID, FromVersion: rel.Version, To: o.ID, ToVersion: o.Version, Author: rel.Owner,
			VerificationID: verification, IngestID: l.IngestID, CreatedAt: l.Now}
		l.WS.CrossRefs = append(l.WS.CrossRefs, x)
		out = append(out, x)
		if l.corrected == nil {
			l.corrected = map[identity.EntityID][]relationship.ID{}
		}
		for _, id := range []relationship.ID{o.ID, rel.ID} {
			if !slices.Contains(l.corrected[from], id) {
				l.corrected[from] = append(l.corrected[from], id)
			}
		}
	}
	return out
}

// Corrected returns the entities whose identity the transaction corrected, sorted.
func (l *Ledger) Corrected() []identity.EntityID {
	if len(l.corrected) == 0 {
		return nil
	}
	out := make([]identity.EntityID, 0, len(l.corrected))
	for e := range l.corrected {
		out = append(out, e)
	}
	slices.Sort(out)
	return out
}

// MaintainIdentities opens, updates or dismisses the identity_correction cases the transaction may
// have changed — those of the entities it corrected, and every live one it loaded — keyed
// conflict.IdentityKey(e), each from its members as they stand: the live case's current members
// (loaded with KeysLockParams.Members) and the corrections this transaction recorded. It returns
// the case each of those members is left in.
func (l *Ledger) MaintainIdentities() map[relationship.ID]*CaseRef {
	l.init()
	entities := l.Corrected()
	for k, ks := range l.keys {
		if k.Identity() && ks.Live != nil && !slices.Contains(entities, k.Subject) {
			entities = append(entities, k.Subject)
		}
	}
	if len(entities) == 0 {
		return nil
	}
	slices.Sort(entities)
	out := map[relationship.ID]*CaseRef{}
	for _, e := range entities {
		ks := l.Key(conflict.IdentityKey(l.Team, e))
		members := l.identityMembers(ks)
		ref := l.maintain(ks, conflict.KindIdentityCorrection, conflict.MaintainIdentity(e, live(ks.Live), members, l.Now))
		if ref == nil {
			continue
		}
		for _, m := range members {
			out[m.Relationship.ID] = ref
		}
	}
	return out
}

// identityMembers returns the members of the identity case of ks: the live case's and the
// transaction's corrections of its entity, each once, as the transaction knows them.
func (l *Ledger) identityMembers(ks *KeyState) []conflict.Member {
	ids := slices.Clone(l.corrected[ks.Key.Subject])
	if ks.Live != nil {
		for _, m := range ks.Live.Members {
			if !slices.Contains(ids, m.Relationship) {
				ids = append(ids, m.Relationship)
			}
		}
	}
	var out []conflict.Member
	for _, id := range ids {
		if r := l.Find(id); r != nil {
			out = append(out, conflict.Member{Relationship: *r, Supports: l.supports[id]})
		}
	}
	return out
}
