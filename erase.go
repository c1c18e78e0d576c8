package densemem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/store"
)

const opErase = "erase"

// MaxEraseFragments bounds the fragments one Erase names.
const MaxEraseFragments = 100

// EraseRequest asks for the privacy erasure of fragments' content.
type EraseRequest struct {
	// FragmentIDs are the fragments whose content to redact (1..MaxEraseFragments, no repeats), any
	// author's, of the principal's team. A fragment erased before is reported, not erased again.
	FragmentIDs []FragmentID `json:"fragment_ids"`
	// Reason says why (required): it is recorded with the erasure for audit.
	Reason string `json:"reason"`
	// IdempotencyKey is required; a retry by the same principal with the same key and request
	// replays the first result.
	IdempotencyKey string `json:"idempotency_key"`
}

// EraseResult reports an erasure: one tombstone per named fragment, in fragment ID order.
type EraseResult struct {
	ErasureID  string             `json:"erasure_id"`
	Tombstones []ErasureTombstone `json:"tombstones"`
	Replayed   bool               `json:"replayed"`
}

// ErasureTombstone is what remains of an erased fragment's content: the erasure that redacted it,
// the fragment's content hash (evidence.ContentHash: hex SHA-256 of the normalised content, as
// stored with the fragment) and byte length, and when. The fragment itself, its metadata,
// support links, observations and every other reference stay.
type ErasureTombstone struct {
	FragmentID    FragmentID `json:"fragment_id"`
	ErasureID     string     `json:"erasure_id"`
	ContentSHA256 string     `json:"content_sha256"`
	ContentLength int        `json:"content_length"`
	ErasedAt      time.Time  `json:"erased_at"`
	// AlreadyErased: an earlier erasure (ErasureID) redacted this fragment; this one changed nothing.
	AlreadyErased bool `json:"already_erased,omitempty"`
}

// Erase is privacy erasure, its own authorised workflow: a profile with the erasure scope, or the
// host (HostPrincipal), redacts the content of named fragments of its team. In one transaction the
// database's erasure function records the request (actor, reason, time, idempotency key) and a
// tombstone per fragment (content hash and byte length), and sets the content to the empty string;
// the fragment and every reference to it stay. Afterwards no read returns the content: Trace,
// Recall excerpts, the search index, and Resolve's restatements (which refuse with ErrErased). It
// is the only path that changes fragment content, and the database enforces that
// (docs/deployment.md).
//
// Errors: *ValidationError, ErrForbidden (no erasure scope, inactive profile), ErrNotFound (a
// fragment the team does not hold; nothing is erased), ErrIdempotencyConflict (the key served
// another request).
func (c *Client) Erase(ctx context.Context, p Principal, req EraseRequest) (*EraseResult, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the request.
	if err := c.validateErase(req); err != nil {
		return nil, err
	}
	// 2. Authorise an erasure; a retry with a used key replays its stored result.
	pr, err := c.authorize(ctx, p, identity.ScopeErasure)
	if err != nil {
		return nil, err
	}
	hash := requestHash(opErase, req)
	get := store.ErasureGetParams{Team: p.TeamID, Actor: erasureActor(p), Key: req.IdempotencyKey,
		Fragments: slices.Sorted(slices.Values(req.FragmentIDs))}
	if res, err := c.replayErase(ctx, get, hash); res != nil || err != nil {
		return res, err
	}
	// 3. Erase in one transaction.
	now := c.now()
	params := store.EvidenceEraseParams{Team: p.TeamID, ErasureID: c.newID("ers", now), Actor: get.Actor,
		Reason: req.Reason, Key: req.IdempotencyKey, RequestHash: hash, Fragments: get.Fragments, Now: now,
		MaxRelationships: c.cfg.Limits.MaxRevisionRelationships}
	var tombs []store.FragmentTombstone
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if tombs, err = tx.EvidenceErase(ctx, params); err != nil {
			return err
		}
		return c.erasureSupportLoss(ctx, tx, p, pr.Policy, params.ErasureID, req.Reason, tombs, now)
	})
	if errors.Is(err, ErrIdempotencyConflict) {
		// A concurrent erasure recorded the key first: its result is this call's, when the request is the same.
		if res, rerr := c.replayErase(ctx, get, hash); res != nil || rerr != nil {
			return res, rerr
		}
	}
	if err != nil {
		return nil, err
	}
	return eraseResult(params.ErasureID, tombs), nil
}

// validateErase checks the whole request: at least one and at most MaxEraseFragments fragment IDs,
// none empty or repeated, a reason and a key.
func (c *Client) validateErase(req EraseRequest) error {
	var ps problems
	switch {
	case len(req.FragmentIDs) == 0:
		ps.Add("fragment_ids", "at least one fragment is required")
	case checkCount(&ps, "fragment_ids", len(req.FragmentIDs), MaxEraseFragments):
		seen := make(map[FragmentID]int, len(req.FragmentIDs))
		for i, id := range req.FragmentIDs {
			path := fmt.Sprintf("fragment_ids[%d]", i)
			checkText(&ps, path, string(id), true, c.cfg.Limits.MaxTextBytes)
			if j, ok := seen[id]; ok && id != "" {
				ps.Add(path, "repeats fragment_ids[%d]", j)
			}
			seen[id] = i
		}
	}
	checkText(&ps, "reason", req.Reason, true, 4096)
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, c.cfg.Limits.MaxTextBytes)
	return ps.Err()
}

// erasureActor is who p is to the erasure ledger: its profile, or the host.
func erasureActor(p Principal) store.ErasureActor {
	if p.Host {
		return store.ErasureActor{Kind: store.ErasureActorHost}
	}
	return store.ErasureActor{Kind: store.ErasureActorProfile, Profile: p.ProfileID}
}

// replayErase returns the result of the erasure recorded under get's key, rebuilt from the ledger
// (its tombstones), or nil when none is; ErrIdempotencyConflict when the key served another request.
func (c *Client) replayErase(ctx context.Context, get store.ErasureGetParams, hash string) (*EraseResult, error) {
	read, err := c.store.ErasureGet(ctx, get)
	if err != nil || read.Erasure == nil {
		return nil, err
	}
	if read.Erasure.RequestHash != hash {
		return nil, fmt.Errorf("%w: key was used for another erase request", ErrIdempotencyConflict)
	}
	out := eraseResult(read.Erasure.ID, read.Tombstones)
	out.Replayed = true
	return out, nil
}

// eraseResult shapes the tombstones of erasure id's fragments.
func eraseResult(id string, tombs []store.FragmentTombstone) *EraseResult {
	out := &EraseResult{ErasureID: id, Tombstones: make([]ErasureTombstone, 0, len(tombs))}
	for _, t := range tombs {
		out.Tombstones = append(out.Tombstones, ErasureTombstone{FragmentID: t.FragmentID, ErasureID: t.ErasureID,
			ContentSHA256: t.ContentHash, ContentLength: t.ContentLength, ErasedAt: t.ErasedAt,
			AlreadyErased: t.ErasureID != id})
	}
	return out
}

// erasureSupportLoss carries out what an erasure does to support (DESIGN §6.2): the fragments this
// call erased are retired (one fragment_retirements row each, cause erasure, unless a source revision
// retired it already), so their support links stop being effective; in the erasure's transaction,
// under the keys of every relationship they support (any owner's), the ledger's Retire recomputes
// those relationships by system transitions naming the retirement — one left without effective
// support drops to pending_evidence — re-plans the held statements whose prior left current state,
// and the touched keys' cases (and identity cases) are repaired or dismissed. tombs lists, per named
// fragment, the relationships it supports with their keys; those with ErasureID == erasure were
// erased by this call.
func (c *Client) erasureSupportLoss(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, erasure, reason string,
	tombs []store.FragmentTombstone, now time.Time) error {
	var keys []conflict.Key
	seen := map[conflict.Key]bool{}
	var erased []evidence.FragmentID
	for _, t := range tombs {
		if t.ErasureID != erasure {
			continue
		}
		if t.KeysTruncated {
			var ps problems
			ps.Add("fragment_ids", "the fragments support more than %d relationships (Limits.MaxRevisionRelationships): "+
				"their support cannot be recomputed in one erasure; erase fewer fragments at a time, or raise the limit",
				c.cfg.Limits.MaxRevisionRelationships)
			return ps.Err()
		}
		if !t.Retired {
			erased = append(erased, t.FragmentID)
		}
		for _, k := range t.Keys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(erased) == 0 {
		return nil
	}
	l := &ledger.Ledger{Team: p.TeamID, Actor: ledger.SystemActor, IngestID: erasure, Now: now, Policy: policy,
		NewID: func(prefix string) string { return c.newID(prefix, now) }}
	if len(keys) > 0 {
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: p.TeamID, Keys: keys, Predicates: true, Members: true,
			MaxLocks: c.cfg.Limits.MaxAdvisoryLocks})
		if err != nil {
			return err
		}
		l.Load(kl, kl.Predicates)
	}
	rows := make([]store.RetirementRow, 0, len(erased))
	for _, f := range erased {
		r := store.RetirementRow{Team: p.TeamID, ID: c.newID("ret", now), FragmentID: f, Cause: store.RetiredByErasure,
			ActorKind: store.ActorHost, Reason: reason, IngestID: erasure, CreatedAt: now}
		if !p.Host {
			r.ActorKind, r.ActorProfile = store.ActorProfile, p.ProfileID
		}
		rows = append(rows, r)
	}
	l.Retire(rows)
	for _, ks := range l.Touched() {
		l.Maintain(ks)
	}
	l.MaintainIdentities()
	return tx.WriteSetApply(ctx, l.WS)
}
