package densemem

import (
	"context"
	"errors"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/store"
)

// Remember stores the request's evidence verbatim, records one observation per proposal relationship,
// verifies every resolvable claim with one Verifier call, and places each accepted claim under the
// deterministic same-owner lifecycle rules, all in one transaction. It returns the placement: one
// outcome per proposal relationship.
//
// Errors: *ValidationError (nothing written), ErrForbidden, ErrIdempotencyConflict, ErrVerifier,
// ErrConflict after bounded retries, ErrUnavailable.
func (c *Client) Remember(ctx context.Context, p Principal, req RememberRequest) (*Placement, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the whole request before touching the database.
	if err := validateRemember(&req, c.cfg.Limits); err != nil {
		return nil, err
	}
	if err := checkPrincipal(p, identity.ScopeWrite); err != nil {
		return nil, err
	}
	normalizeTimes(&req)
	hash := requestHash(placement.Operation, req)
	in := placement.NewIntake(&req, p.ProfileID)

	// 2-3. Authorise and check idempotency from one read.
	// The read speculates on the live state of the keys the request can name when a subject may
	// exist: named by ID, or by a name this Client saw held (decision 156).
	var speculate *store.KeySpeculation
	if !c.lockedOnly && !c.wholeKeys {
		if sp := in.Speculation(p.TeamID); sp != nil && c.seen.mayExist(p.TeamID, sp) {
			speculate = sp
		}
	}
	prep, err := c.preparePlacement(ctx, p, req.IdempotencyKey, in, speculate)
	if err != nil {
		return nil, err
	}
	c.seen.addEntities(p.TeamID, prep.Candidates)
	if err := checkProfile(prep.Principal.Profile.Status, prep.Principal.Profile.Scopes, p, identity.ScopeWrite); err != nil {
		return nil, err
	}
	if prep.Idempotency != nil {
		return replay(prep.Idempotency, hash)
	}
	if err := in.CheckKnown(prep.Known); err != nil {
		return nil, err
	}
	if err := in.CheckAdopted(prep.Adoptable); err != nil {
		return nil, err
	}

	// 4-5. Resolve identities and predicates as far as possible before the transaction.
	claims := in.Claims(prep.Predicates, prep.Candidates, prep.Known)

	// 6. One verifier call, outside any transaction.
	verdicts, err := c.verify(ctx, claims)
	if err != nil {
		return nil, err
	}

	// 7-9. Gate, plan and commit in one transaction. A request that answers no case and revises or
	// adopts no source is planned from the read above (its keys' live state included) and written in
	// one round trip behind a fence that re-checks that read under the locks; otherwise, or when the
	// read did not cover its keys or the fence fails, the plan is recomputed from what the
	// transaction reads after its locks, so a retry starts from scratch.
	params := placement.Params{Team: p.TeamID, Profile: p.ProfileID, Request: &req, Intake: in, Now: c.now(),
		Policy: prep.Principal.Policy, Predicates: prep.Predicates, Verdicts: verdicts, Verifier: c.cfg.Verifier.Name(),
		Hash: hash, NewID: c.newID}
	out, err := c.placeOptimistic(ctx, p, params, prep)
	if err != nil {
		return nil, err
	}
	if out == nil {
		if out, err = c.placeLocked(ctx, p, params); err != nil {
			return nil, err
		}
	}
	if len(in.Names) > 0 {
		c.seen.add(p.TeamID, in.Names...)
	}
	c.cfg.Logger.DebugContext(ctx, "densemem: remember", "team", p.TeamID, "profile", p.ProfileID,
		"ingest_id", out.IngestID, "replayed", out.Replayed, "relationships", len(out.RelationshipOutcomes))
	return out, nil
}

// placeOptimistic plans a placement from what preparePlacement read and writes it in one round trip
// (Tx.WriteSetApplyFenced), when the request needs nothing read under its locks that the prepared
// read could not cover: no case, no source revision or adoption, no identity case (a mention stated
// distinct from an entity); and its conflict keys, if any, are among those the prepared read
// speculated on (decision 153). It returns nil without an error when the request does not qualify,
// when the plan fails (the locked path decides, and reports, from fresh state), and when the fence
// finds that the read changed (or a concurrent write kept conflicting): the caller then places under
// the locks, so correctness never rests on this path.
func (c *Client) placeOptimistic(ctx context.Context, p Principal, params placement.Params, prep store.RememberPrepared) (*Placement, error) {
	in := params.Intake
	if c.lockedOnly || len(in.Adopt) > 0 || len(in.Revisions()) > 0 || len(in.Responses()) > 0 || len(params.AlsoLock) > 0 {
		return nil, nil
	}
	// As lockPlacement plans, from the prepared read instead of the locked one.
	pl := placement.New(params)
	pl.Resolve(prep.Candidates, prep.Known)
	pl.Adoptable(nil)
	if _, err := pl.Revise(nil, c.cfg.Limits.MaxRevisionRelationships); err != nil {
		return nil, nil
	}
	var kl store.KeysLocked
	var keysFence *store.KeysFence
	if keys := pl.Keys(); len(keys) > 0 {
		if c.wholeKeys || slices.ContainsFunc(keys, conflict.Key.Identity) {
			return nil, nil
		}
		kp := store.KeysLockParams{Team: p.TeamID, Keys: keys, MaxLocks: c.cfg.Limits.MaxAdvisoryLocks, LiveOnly: true,
			Named: correctedIDs(params.Request), ByObject: pl.ByObject()}
		var covered bool
		if kl, covered = prep.Speculated.Narrow(kp, pl.Creates); !covered {
			return nil, nil
		}
		f := store.NewKeysFence(kp, kl)
		keysFence = &f
	}
	ws, out, err := pl.Plan(kl)
	if err != nil {
		return nil, nil
	}
	fence := store.WriteFence{Team: p.TeamID, Profile: p.ProfileID, IdempotencyKey: params.Request.IdempotencyKey,
		NameLocks: in.Names, MaxLocks: c.cfg.Limits.MaxAdvisoryLocks, ProfileStatus: prep.Principal.Profile.Status,
		ProfileScopes: prep.Principal.Profile.Scopes, Names: in.Names, Candidates: prep.Candidates, Keys: keysFence}
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.WriteSetApplyFenced(ctx, fence, ws)
	})
	if errors.Is(err, store.ErrStaleVersion) || errors.Is(err, store.ErrConflict) {
		c.cfg.Logger.DebugContext(ctx, "densemem: remember placed under locks", "team", p.TeamID, "profile", p.ProfileID,
			"reason", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// placeLocked places the request in a transaction that plans from what it reads under its locks.
func (c *Client) placeLocked(ctx context.Context, p Principal, params placement.Params) (*Placement, error) {
	var out *Placement
	err := c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		out, err = c.place(ctx, tx, p, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// place is Remember's transaction: under the locks of the request's idempotency key and names it
// re-resolves the mentions, locks the conflict keys (and cases) the request touches, plans the rows
// from what it read, and writes them. A result stored meanwhile under the key is replayed.
func (c *Client) place(ctx context.Context, tx store.Tx, p Principal, params placement.Params) (*Placement, error) {
	pl, kl, rec, err := c.lockPlacement(ctx, tx, p, params, !c.wholeKeys)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		return replay(rec, params.Hash)
	}
	ws, out, err := pl.Plan(kl)
	if err != nil {
		return nil, err
	}
	if err := tx.WriteSetApply(ctx, ws); err != nil {
		return nil, err
	}
	return out, nil
}

// replay returns the placement stored under the request's idempotency key.
func replay(rec *store.IdempotencyRecord, hash string) (*Placement, error) {
	out, err := replayed[Placement](rec, placement.Operation, hash, "placement")
	if err == nil {
		out.Replayed = true
	}
	return out, err
}
