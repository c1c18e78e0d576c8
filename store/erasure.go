package store

import (
	"time"

	"github.com/densemem/densemem/conflict"

	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
)

// Erasure actor kinds: who asked for a privacy erasure.
const (
	// ErasureActorProfile is a profile of the team holding the erasure scope.
	ErasureActorProfile = "profile"
	// ErasureActorHost is the host itself (a host principal).
	ErasureActorHost = "host"
)

// ErasureActor names who asks for an erasure: a profile (Kind ErasureActorProfile), or the host
// (Kind ErasureActorHost, Profile empty).
type ErasureActor struct {
	Kind    string
	Profile identity.ProfileID
}

// EvidenceEraseParams is one privacy erasure: the fragments whose content it redacts, by whom, why
// and under which idempotency key.
type EvidenceEraseParams struct {
	Team        identity.TeamID
	ErasureID   string
	Actor       ErasureActor
	Reason      string
	Key         string
	RequestHash string
	Fragments   []evidence.FragmentID
	Now         time.Time
	// MaxRelationships bounds the conflict keys read of the relationships the fragments support: at
	// most MaxRelationships+1 are read, and past the bound every tombstone says KeysTruncated.
	MaxRelationships int
}

// FragmentTombstone is what remains of an erased fragment's content: the erasure that redacted it,
// the SHA-256 and byte length of the content, and when. Relationships lists the relationships the
// fragment supports (every support link naming it), for the support re-evaluation.
type FragmentTombstone struct {
	FragmentID    evidence.FragmentID
	ErasureID     string
	ContentHash   string
	ContentLength int
	ErasedAt      time.Time
	Relationships []relationship.ID
	// Keys are the conflict keys of Relationships, aligned with them, and Retired reports that the
	// fragment was retired before (EvidenceErase fills both: the erasure retires the fragment, once,
	// and locks the keys to re-evaluate the relationships' support).
	Keys    []conflict.Key
	Retired bool
	// KeysTruncated reports that the named fragments support more than MaxRelationships
	// relationships: Keys is incomplete, and the caller must not carry the erasure out.
	KeysTruncated bool
}

// Erasure is one recorded erasure request.
type Erasure struct {
	ID          string
	Actor       ErasureActor
	Reason      string
	RequestHash string
	CreatedAt   time.Time
}

// ErasureGetParams names an erasure by its actor's idempotency key, and the fragments whose
// tombstones to read with it.
type ErasureGetParams struct {
	Team      identity.TeamID
	Actor     ErasureActor
	Key       string
	Fragments []evidence.FragmentID
}

// ErasureRead is an erasure recorded under a key (nil when none is) and the tombstones of the named
// fragments (whichever erasure redacted them), in fragment ID order.
type ErasureRead struct {
	Erasure    *Erasure
	Tombstones []FragmentTombstone
}
