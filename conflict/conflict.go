// Package conflict owns team conflict semantics: the conflict key that every writer and the nightly
// reviewer lock on, and (as the conflict-case work lands) material positions and the deterministic
// resolution policy. It is pure: no SQL, no clock reads, no I/O.
package conflict

import "github.com/densemem/densemem/identity"

// Key is a conflict key: the relationships of one team, subject, predicate and scope compete for
// current state. Writers and the reviewer serialise on it.
type Key struct {
	Team         identity.TeamID
	Subject      identity.EntityID
	PredicateKey string
	Scope        string
}

// IdentityKey is the key of the identity_correction case about entity e (DESIGN §6.5): it names no
// predicate and no scope, so it is never the key of a relationship.
func IdentityKey(team identity.TeamID, e identity.EntityID) Key { return Key{Team: team, Subject: e} }

// Identity reports whether k is the key of an identity_correction case.
func (k Key) Identity() bool { return k.PredicateKey == "" }
