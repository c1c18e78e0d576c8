package densemem

import (
	"context"

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
	ctx, err := c.begin(ctx)
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
	prep, err := c.preparePlacement(ctx, p, req.IdempotencyKey, in)
	if err != nil {
		return nil, err
	}
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

	// 7-9. Gate, plan and commit in one transaction; the plan is recomputed from what the
	// transaction reads after its locks, so a retry starts from scratch.
	params := placement.Params{Team: p.TeamID, Profile: p.ProfileID, Request: &req, Intake: in, Now: c.now(),
		Policy: prep.Principal.Policy, Predicates: prep.Predicates, Verdicts: verdicts, Verifier: c.cfg.Verifier.Name(),
		Hash: hash, NewID: c.newID}
	var out *Placement
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		out, err = c.place(ctx, tx, p, params)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.cfg.Logger.DebugContext(ctx, "densemem: remember", "team", p.TeamID, "profile", p.ProfileID,
		"ingest_id", out.IngestID, "replayed", out.Replayed, "relationships", len(out.RelationshipOutcomes))
	return out, nil
}

// place is Remember's transaction: under the locks of the request's idempotency key and names it
// re-resolves the mentions, locks the conflict keys (and cases) the request touches, plans the rows
// from what it read, and writes them. A result stored meanwhile under the key is replayed.
func (c *Client) place(ctx context.Context, tx store.Tx, p Principal, params placement.Params) (*Placement, error) {
	pl, kl, rec, err := c.lockPlacement(ctx, tx, p, params)
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
