package densemem

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// The writers' shared steps: placing a request (Remember, and the Resolve actions that bring
// evidence: the one verifier call, the locks a placement plans under), and locking one
// relationship's key for a profile's lifecycle change (Forget, Resolve).

// verify calls the verifier once for every claim and checks that it answered in contract.
func (c *Client) verify(ctx context.Context, claims []evidence.Claim) (map[string]evidence.Result, error) {
	out := map[string]evidence.Result{}
	if len(claims) == 0 {
		return out, nil
	}
	req := evidence.VerifyRequest{Claims: claims}
	results, err := c.cfg.Verifier.Verify(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerifier, err)
	}
	if err := evidence.CheckResults(req, results); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrVerifier, err)
	}
	for _, r := range results {
		out[r.ProposalID] = r
	}
	return out, nil
}

// preparePlacement reads, in one round trip before any transaction, what a placement of in plans
// from: the caller's principal and policy, the team's predicates, the candidates of its names, its
// known entities (checked to be the team's), a result stored under key and, when speculate is set,
// the live state of the conflict keys the request can name.
func (c *Client) preparePlacement(ctx context.Context, p Principal, key string, in *placement.Intake,
	speculate *store.KeySpeculation) (store.RememberPrepared, error) {
	prep, err := c.store.RememberPrepare(ctx, store.RememberPrepareParams{Team: p.TeamID, Profile: p.ProfileID,
		IdempotencyKey: key, Names: in.Names, KnownEntities: in.Known, AdoptFragments: in.Adopt, Speculate: speculate})
	if err != nil {
		return prep, err
	}
	if prep.Principal == nil {
		return prep, fmt.Errorf("%w: profile %s is not a profile of team %s", ErrForbidden, p.ProfileID, p.TeamID)
	}
	return prep, nil
}

// lockPlacement takes a placement's locks in tx: the request's idempotency key and names, then,
// after re-resolving the mentions, the conflict keys (and cases) the request touches. It returns the
// planner and what the key locks read, or the record already stored under the key (to replay).
// liveOnly reads the keys' live relationships only (a Remember's, store.KeysLockParams.LiveOnly).
func (c *Client) lockPlacement(ctx context.Context, tx store.Tx, p Principal, params placement.Params, liveOnly bool) (*placement.Planner,
	store.KeysLocked, *store.IdempotencyRecord, error) {
	req, in := params.Request, params.Intake
	var kl store.KeysLocked
	locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: p.TeamID, Profile: p.ProfileID,
		IdempotencyKey: req.IdempotencyKey, NameLocks: in.Names, Names: in.Names, KnownEntities: in.Known,
		MaxLocks: c.cfg.Limits.MaxAdvisoryLocks, AdoptFragments: in.Adopt, AdoptSources: in.AdoptSources(), Revisions: in.Revisions(),
		MaxRevisionRelationships: c.cfg.Limits.MaxRevisionRelationships})
	if err != nil || locked.Idempotency != nil {
		return nil, kl, locked.Idempotency, err
	}
	if err := checkProfile(profileStatus(locked.ProfileActive), locked.ProfileScopes, p, identity.ScopeWrite); err != nil {
		return nil, kl, nil, err
	}
	pl := placement.New(params)
	pl.Resolve(locked.Candidates, locked.Known)
	pl.Adoptable(locked.Adoptable)
	// A source revision's retired fragments: the keys of every relationship they support, any
	// owner's, are locked with the request's own.
	revised, err := pl.Revise(locked.Sources, c.cfg.Limits.MaxRevisionRelationships)
	if err != nil {
		return nil, kl, nil, err
	}
	keys, cases := pl.Keys(), in.Responses()
	seen := map[conflict.Key]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for _, k := range append(slices.Clip(params.AlsoLock), revised...) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	// A Remember reads its keys' live relationships only: nothing it decides reads a key's closed
	// history (relationship.Decide, the cross-references and Settle look at live ones, a case at
	// active ones), except a correction naming a closed relationship, read by ID. A Resolve's
	// placement reads the whole key, as its decision checks do.
	named := correctedIDs(req)
	// A key whose statements compare by object (cardinality many, events) is read, further, for the
	// request's objects only — unless the request adopts more than one fragment, revises or answers
	// a case, whose steps look at the key's other statements (an adoption's link, a retirement's
	// recomputation, a case). A call adopting one fragment leaves out its other adopters, and reads
	// its keys whole after all when an adoption's first-choice target was not among what it read.
	var byObject []store.KeyObject
	if liveOnly && !c.liveKeysWhole && len(in.Adopt) <= 1 && len(in.Revisions()) == 0 && len(cases) == 0 && len(params.AlsoLock) == 0 {
		byObject = pl.ByObject()
	}
	if len(keys) > 0 || len(cases) > 0 {
		kp := store.KeysLockParams{Team: p.TeamID, Keys: keys, Cases: cases, MaxLocks: c.cfg.Limits.MaxAdvisoryLocks,
			Members: slices.ContainsFunc(keys, conflict.Key.Identity), LiveOnly: liveOnly, Named: named, ByObject: byObject}
		if kl, err = tx.KeysLock(ctx, kp); err != nil {
			return nil, kl, nil, err
		}
		if len(byObject) > 0 && !pl.AdoptionTargetsRead(byObject, kl) {
			kp.ByObject = nil
			if kl, err = tx.KeysLock(ctx, kp); err != nil {
				return nil, kl, nil, err
			}
		}
	}
	return pl, kl, nil, nil
}

// correctedIDs returns the relationships req's proposals correct by ID (corrects_relationship_id).
func correctedIDs(req *RememberRequest) []relationship.ID {
	var out []relationship.ID
	for _, r := range req.Proposal.Relationships {
		if r.CorrectsRelationshipID != "" {
			out = append(out, r.CorrectsRelationshipID)
		}
	}
	return out
}

// lockIntake takes the lock of p's idempotency key in tx and re-reads p's profile (FOR SHARE),
// checking it may still write; it returns a result stored under the key meanwhile, to replay.
func lockIntake(ctx context.Context, tx store.Tx, p Principal, idempotencyKey string) (*store.IdempotencyRecord, error) {
	locked, err := lockIntakeOf(ctx, tx, p, idempotencyKey, "")
	return locked.Idempotency, err
}

// lockIntakeOf is lockIntake that also reads the entities subject was stated distinct from.
func lockIntakeOf(ctx context.Context, tx store.Tx, p Principal, idempotencyKey string, subject identity.EntityID) (store.IntakeLocked, error) {
	locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: p.TeamID, Profile: p.ProfileID, IdempotencyKey: idempotencyKey,
		DistinctionsOf: subject})
	if err != nil || locked.Idempotency != nil {
		return locked, err
	}
	return locked, checkProfile(profileStatus(locked.ProfileActive), locked.ProfileScopes, p, identity.ScopeWrite)
}

// keyLocked is what lockKey took and read: the ledger of the change, loaded with the key's state,
// and the key's state itself; or a result stored under the idempotency key meanwhile (stored, to
// replay; nothing else is set).
type keyLocked struct {
	l      *ledger.Ledger
	ks     *ledger.KeyState
	stored *store.IdempotencyRecord
}

// lockKey takes the locks of p's lifecycle change of rel in tx, in the writers' order: the
// idempotency key (with the profile re-read FOR SHARE and checked), then rel's conflict key, whose
// state it loads into a new ledger of the change at now.
func (c *Client) lockKey(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, idempotencyKey string,
	rel relationship.Relationship, now time.Time) (keyLocked, error) {
	locked, err := lockIntakeOf(ctx, tx, p, idempotencyKey, rel.Subject)
	if err != nil || locked.Idempotency != nil {
		return keyLocked{stored: locked.Idempotency}, err
	}
	// rel's key, and the identity cases rel may be a member of: its subject's, and those of the
	// entities its subject was stated distinct from (DESIGN §6.5).
	key := conflict.Key{Team: p.TeamID, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope}
	keys := []conflict.Key{key, conflict.IdentityKey(p.TeamID, rel.Subject)}
	for _, e := range locked.Distinctions {
		keys = append(keys, conflict.IdentityKey(p.TeamID, e))
	}
	kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: p.TeamID, Keys: keys, Predicates: true, Members: true})
	if err != nil {
		return keyLocked{}, err
	}
	l := &ledger.Ledger{Team: p.TeamID, Actor: ledger.ProfileActor(p.ProfileID), IngestID: c.newID("ing", now),
		IdempotencyKey: idempotencyKey, Now: now, Policy: policy,
		NewID: func(prefix string) string { return c.newID(prefix, now) }}
	l.Load(kl, kl.Predicates)
	return keyLocked{l: l, ks: l.Key(key)}, nil
}
