package densemem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/identity"
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
	ctx, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	// 1. Validate the request.
	if err := c.validateErase(req); err != nil {
		return nil, err
	}
	// 2. Authorise an erasure; a retry with a used key replays its stored result.
	if _, err := c.authorize(ctx, p, identity.ScopeErasure); err != nil {
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
		Reason: req.Reason, Key: req.IdempotencyKey, RequestHash: hash, Fragments: get.Fragments, Now: now}
	var tombs []store.FragmentTombstone
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		if tombs, err = tx.EvidenceErase(ctx, params); err != nil {
			return err
		}
		return c.erasureSupportLoss(ctx, tx, p, params.ErasureID, tombs, now)
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

// erasureSupportLoss is the seam between privacy erasure and the support re-evaluation of source
// revisions (DESIGN §6.2, §13): an erased fragment's support links stop being effective, so a
// relationship whose only effective support was erased drops to pending_evidence, and every other
// supported relationship has its tier recomputed, by system transitions in the erasure's own
// transaction. tombs lists, per named fragment, the relationships it supports; those with
// ErasureID == erasure were erased by this call.
//
// The retirement core (fragment_retirements with cause 'erasure', and the ledger verb that
// re-evaluates the relationships whose supports changed) is built on the revision branch. Once it
// is merged, this function appends one retirement (cause 'erasure') per fragment this call erased,
// locks the keys of the relationships they support (KeysLock), loads the ledger, runs that verb,
// maintains the touched keys' cases and applies the write set (WriteSetApply, which commits). Until
// then it changes nothing, and an erased fragment's support links stay effective (TestErasureDrops
// SupportToPendingEvidence is skipped until the merge).
func (c *Client) erasureSupportLoss(ctx context.Context, tx store.Tx, p Principal, erasure string,
	tombs []store.FragmentTombstone, now time.Time) error {
	_, _, _, _, _, _ = ctx, tx, p, erasure, tombs, now
	return nil
}
