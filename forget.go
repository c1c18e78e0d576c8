package densemem

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/review"
	"github.com/densemem/densemem/store"
)

const opForget = "forget"

// ForgetRequest retracts one of the caller's own relationships.
type ForgetRequest struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	Reason         string         `json:"reason,omitempty"`
	// IdempotencyKey is required; a retry with the same key and request replays the first result.
	IdempotencyKey string `json:"idempotency_key"`
}

// ForgetResult reports a retraction.
type ForgetResult struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	Status         Status         `json:"status"`
	Version        int            `json:"version"`
	TransitionID   string         `json:"transition_id,omitempty"`
	// AlreadyRetracted is true when the relationship was retracted before this call; nothing changed.
	AlreadyRetracted bool `json:"already_retracted,omitempty"`
	// Conflict names the team conflict case of the relationship's key after the retraction (for
	// example dismissed, when the retraction left no material disagreement).
	Conflict *ConflictRef `json:"conflict,omitempty"`
	Replayed bool         `json:"replayed"`
}

// Forget retracts a relationship the caller owns: in one transaction it appends a retraction
// transition and sets status=retracted, so the edge leaves semantic_edges at commit. Entities, values,
// evidence, verification, supports and transitions remain, and Trace shows them.
//
// Errors: *ValidationError, ErrForbidden, ErrNotFound, ErrNotOwner (another profile's relationship),
// ErrIdempotencyConflict.
func (c *Client) Forget(ctx context.Context, p Principal, req ForgetRequest) (*ForgetResult, error) {
	ctx, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	var ps problems
	checkText(&ps, "relationship_id", string(req.RelationshipID), true, c.cfg.Limits.MaxTextBytes)
	checkText(&ps, "reason", req.Reason, false, 4096)
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, c.cfg.Limits.MaxTextBytes)
	if err := ps.err(); err != nil {
		return nil, err
	}
	pr, err := c.authorize(ctx, p, identity.ScopeWrite)
	if err != nil {
		return nil, err
	}
	hash := requestHash(opForget, req)
	if rec, err := c.store.IdempotencyGet(ctx, p.TeamID, p.ProfileID, req.IdempotencyKey); err != nil {
		return nil, err
	} else if rec != nil {
		return replayForget(rec, hash)
	}
	rel, err := c.store.RelationshipGet(ctx, p.TeamID, req.RelationshipID)
	if err != nil {
		return nil, fmt.Errorf("relationship %s: %w", req.RelationshipID, err)
	}
	if rel.Owner != p.ProfileID {
		return nil, fmt.Errorf("%w: relationship %s belongs to profile %s", ErrNotOwner, rel.ID, rel.Owner)
	}
	now := c.now()
	key := conflict.Key{Team: p.TeamID, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope}
	var result *ForgetResult
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: p.TeamID, Profile: p.ProfileID, IdempotencyKey: req.IdempotencyKey})
		if err != nil {
			return err
		}
		if locked.Idempotency != nil {
			result, err = replayForget(locked.Idempotency, hash)
			return err
		}
		if err := checkProfile(profileStatus(locked.ProfileActive), locked.ProfileScopes, p, identity.ScopeWrite); err != nil {
			return err
		}
		kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: p.TeamID, Keys: []conflict.Key{key}, Predicates: true})
		if err != nil {
			return err
		}
		ks := &review.KeyState{Key: key, Supports: map[relationship.ID][]evidence.Support{}}
		var cur *relationship.Relationship
		for i := range kl.Relationships {
			r := &kl.Relationships[i]
			ks.Rels = append(ks.Rels, r)
			if r.ID == rel.ID {
				cur = r
			}
		}
		if cur == nil {
			return fmt.Errorf("relationship %s: %w", rel.ID, ErrNotFound)
		}
		for _, s := range kl.Supports {
			ks.Supports[s.RelationshipID] = append(ks.Supports[s.RelationshipID], review.Support(s, pr.Policy.AuthoritativeProfiles))
		}
		for i := range kl.Cases {
			if kl.Cases[i].Status.Live() && kl.Cases[i].Key == key {
				ks.Live = &kl.Cases[i]
			}
		}
		ks.Pred, _ = relationship.MatchPredicate(key.PredicateKey, kl.Predicates)
		ingestID := c.newID("ing", now)
		res := &ForgetResult{RelationshipID: cur.ID, Status: relationship.StatusRetracted, Version: cur.Version}
		var ws store.WriteSet
		if cur.Status == relationship.StatusRetracted {
			res.AlreadyRetracted = true
		} else {
			reason := "forget"
			if req.Reason != "" {
				reason = "forget: " + req.Reason
			}
			res.TransitionID, res.Version = c.newID("trn", now), cur.Version+1
			ws.Updates = []store.RelationshipUpdate{{Team: p.TeamID, ID: cur.ID, ExpectVersion: cur.Version,
				Status: relationship.StatusRetracted, Tier: cur.Tier, ValidTo: cur.Validity.To, UpdatedAt: now}}
			ws.Transitions = []store.TransitionRow{{Team: p.TeamID, ID: res.TransitionID, RelationshipID: cur.ID,
				FromStatus: cur.Status, ToStatus: relationship.StatusRetracted, FromTier: cur.Tier, ToTier: cur.Tier,
				FromValidTo: cur.Validity.To, ToValidTo: cur.Validity.To, FromVersion: cur.Version, ToVersion: cur.Version + 1,
				Reason: reason, ActorKind: store.ActorProfile, ActorProfile: p.ProfileID, IngestID: ingestID,
				IdempotencyKey: req.IdempotencyKey, CreatedAt: now}}
			ws.Refreshes = []store.RefreshRow{{Team: p.TeamID, RelationshipID: cur.ID, Reason: "retracted", CreatedAt: now}}
			cur.Status, cur.Version = relationship.StatusRetracted, cur.Version+1
			// §6.7: the retraction repairs the key's case in the same transaction.
			keeper := &review.Keeper{Team: p.TeamID, ActorKind: store.ActorProfile, ActorProfile: p.ProfileID,
				IngestID: ingestID, Now: now, Policy: pr.Policy, WS: &ws, NewID: func(prefix string) string { return c.newID(prefix, now) }}
			if ref := keeper.Maintain(ks); ref != nil {
				res.Conflict = &ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
			}
		}
		body, err := json.Marshal(res)
		if err != nil {
			return err
		}
		ws.Idempotency = &store.IdempotencyRow{Team: p.TeamID, Profile: p.ProfileID, Key: req.IdempotencyKey,
			Operation: opForget, RequestHash: hash, IngestID: ingestID, Result: body, CreatedAt: now}
		if err := tx.WriteSetApply(ctx, ws); err != nil {
			return err
		}
		result = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}

func replayForget(rec *store.IdempotencyRecord, hash string) (*ForgetResult, error) {
	if rec.Operation != opForget || rec.RequestHash != hash {
		return nil, fmt.Errorf("%w: key was used for another %s request", ErrIdempotencyConflict, rec.Operation)
	}
	var res ForgetResult
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		return nil, fmt.Errorf("densemem: stored forget result of %s is unreadable: %v", rec.IngestID, err)
	}
	res.Replayed = true
	return &res, nil
}
