package densemem

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
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
	// ReviewItems are the items the retraction issued: the new questions of the caller's statements
	// that were held against the retracted relationship and are still held against another one.
	ReviewItems []AskedItem `json:"review_items,omitempty"`
	Replayed    bool        `json:"replayed"`
}

// Forget retracts a relationship the caller owns: in one transaction it appends a retraction
// transition and sets status=retracted, so the edge leaves semantic_edges at commit. Entities, values,
// evidence, verification, supports and transitions remain, and Trace shows them.
//
// Errors: *ValidationError, ErrForbidden, ErrNotFound, ErrNotOwner (another profile's relationship),
// ErrIdempotencyConflict.
func (c *Client) Forget(ctx context.Context, p Principal, req ForgetRequest) (*ForgetResult, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the request.
	var ps problems
	checkText(&ps, "relationship_id", string(req.RelationshipID), true, c.cfg.Limits.MaxTextBytes)
	checkText(&ps, "reason", req.Reason, false, 4096)
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, c.cfg.Limits.MaxTextBytes)
	if err := ps.Err(); err != nil {
		return nil, err
	}
	// 2. Authorise a write; a retry with a used key replays its stored result.
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
	// 3. Only the owner forgets a relationship.
	rel, err := c.store.RelationshipGet(ctx, p.TeamID, req.RelationshipID)
	if err != nil {
		return nil, err
	}
	if rel.Owner != p.ProfileID {
		return nil, fmt.Errorf("%w: relationship %s belongs to profile %s", ErrNotOwner, rel.ID, rel.Owner)
	}
	// 4. Retract it and repair its key's case in one transaction.
	now := c.now()
	var result *ForgetResult
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		result, err = c.retract(ctx, tx, p, pr.Policy, req, hash, rel, now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return result, nil
}

// retract is Forget's transaction: under the idempotency key's and the conflict key's locks it
// retracts rel (unless it already is), repairs the key's case (§6.7), and stores the result under the
// idempotency key.
func (c *Client) retract(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, req ForgetRequest, hash string,
	rel relationship.Relationship, now time.Time) (*ForgetResult, error) {
	k, err := c.lockKey(ctx, tx, p, policy, req.IdempotencyKey, rel, now)
	if err != nil {
		return nil, err
	}
	if k.stored != nil {
		return replayForget(k.stored, hash)
	}
	l, ks := k.l, k.ks
	cur := ks.Find(rel.ID)
	if cur == nil {
		return nil, fmt.Errorf("%w: relationship %s", ErrNotFound, rel.ID)
	}
	res := &ForgetResult{RelationshipID: cur.ID, Status: relationship.StatusRetracted, Version: cur.Version}
	if cur.Status == relationship.StatusRetracted {
		res.AlreadyRetracted = true
	} else {
		l.Retract(cur, req.Reason)
		res.TransitionID, res.Version = l.LastTransitionID(), cur.Version
		res.ReviewItems = askedItems(l.Settle()) // a relationship held against cur: re-planned (DESIGN §6.7)
		if ref := l.Maintain(ks); ref != nil {
			res.Conflict = &ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)}
		}
		l.MaintainIdentities()
	}
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	l.WS.Idempotency = &store.IdempotencyRow{Team: p.TeamID, Profile: p.ProfileID, Key: req.IdempotencyKey,
		Operation: opForget, RequestHash: hash, IngestID: l.IngestID, Result: body, CreatedAt: now}
	if err := tx.WriteSetApply(ctx, l.WS); err != nil {
		return nil, err
	}
	return res, nil
}

// replayForget returns the result stored under the request's idempotency key.
func replayForget(rec *store.IdempotencyRecord, hash string) (*ForgetResult, error) {
	out, err := replayed[ForgetResult](rec, opForget, hash, "forget result")
	if err == nil {
		out.Replayed = true
	}
	return out, err
}
