package densemem

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/internal/request"
	"github.com/densemem/densemem/relationship"
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

// validateRemember checks the whole request without the database and returns its problems. Counts
// are checked first: a request over a count limit is refused with those problems alone, before any
// per-item work, so its cost never grows with how far over the limits it is.
func validateRemember(req *RememberRequest, l Limits) error {
	if err := checkRememberCounts(req, l); err != nil {
		return err
	}
	var ps problems
	checkText(&ps, "idempotency_key", req.IdempotencyKey, true, l.MaxTextBytes)
	checkEvidence(&ps, req.Evidence, l, true)
	refs := checkEntities(&ps, req.Proposal.Entities, l)
	cited := make([]bool, len(req.Evidence))
	ids := map[string]bool{}
	if len(req.Proposal.Relationships) == 0 {
		ps.Add("proposal.relationships", "at least one relationship is required")
	}
	for i, r := range req.Proposal.Relationships {
		p := fmt.Sprintf("proposal.relationships[%d]", i)
		checkText(&ps, p+".proposal_id", r.ProposalID, true, l.MaxTextBytes)
		if ids[r.ProposalID] {
			ps.Add(p+".proposal_id", "duplicate proposal_id %q", r.ProposalID)
		}
		ids[r.ProposalID] = true
		checkRelationship(&ps, p, r, refs, l)
		if len(r.Evidence) == 0 {
			ps.Add(p+".evidence", "at least one citation is required")
		}
		for j, c := range r.Evidence {
			if checkCitation(&ps, fmt.Sprintf("%s.evidence[%d]", p, j), c, req.Evidence) {
				cited[c.EvidenceIndex] = true
			}
		}
	}
	for i, ok := range cited {
		if !ok {
			ps.Add(fmt.Sprintf("evidence[%d]", i), "is not cited by any relationship")
		}
	}
	checkRevisionAlone(&ps, req)
	return ps.Err()
}

// checkRevisionAlone refuses a request that mixes a source revision with a profile-local correction
// (DESIGN §13): a relationship naming corrects_relationship_id (the caller's correction of its own
// or another profile's relationship) or a conflict_response (the caller's answer to a team case at
// the version it read). A revision recomputes other profiles' relationships and cases by system
// transitions; a correction or an answer is the caller's own decision about one key. In one call the
// two could not be told apart in the ledger, and the answer would be judged against a case the same
// call changes; they go in separate calls.
func checkRevisionAlone(ps *problems, req *RememberRequest) {
	revision := slices.ContainsFunc(req.Evidence, EvidenceInput.Revises)
	if !revision {
		return
	}
	for i, r := range req.Proposal.Relationships {
		p := fmt.Sprintf("proposal.relationships[%d]", i)
		if r.CorrectsRelationshipID != "" {
			ps.Add(p+".corrects_relationship_id", "cannot go with a source revision (previous_source_revision): "+
				"a profile-local correction and a team-wide source retirement are separate calls")
		}
		if r.ConflictResponse != nil {
			ps.Add(p+".conflict_response", "cannot go with a source revision (previous_source_revision): "+
				"answer the case in a separate call")
		}
	}
}

// checkRelationship checks one proposed relationship at path p, its citations aside: its refs name
// proposal entities, exactly one object, known polarity and modality, a conflict response naming a
// case version, and a validity that ends after it starts.
func checkRelationship(ps *problems, p string, r ProposedRelationship, refs map[string]bool, l Limits) {
	if !refs[r.SubjectRef] {
		ps.Add(p+".subject_ref", "does not name a proposal entity ref")
	}
	checkText(ps, p+".predicate", r.Predicate, true, l.MaxTextBytes)
	switch {
	case r.ObjectRef != "" && r.ObjectValue != nil:
		ps.Add(p, "set exactly one of object_ref and object_value, not both")
	case r.ObjectRef == "" && r.ObjectValue == nil:
		ps.Add(p, "set exactly one of object_ref and object_value")
	case r.ObjectRef != "" && !refs[r.ObjectRef]:
		ps.Add(p+".object_ref", "does not name a proposal entity ref")
	case r.ObjectValue != nil:
		if _, err := request.CanonicalValue(*r.ObjectValue, DefaultMaxTextBytes); err != nil {
			ps.Add(p+".object_value", "%v", err)
		}
	}
	if r.Polarity != "" && !r.Polarity.Valid() {
		ps.Add(p+".polarity", "unknown polarity%s (%s)", quoted(string(r.Polarity), 64), oneOf(relationship.Polarities()))
	}
	if r.Modality != "" && !r.Modality.Valid() {
		ps.Add(p+".modality", "unknown modality%s (%s)", quoted(string(r.Modality), 64), oneOf(relationship.Modalities()))
	}
	checkText(ps, p+".scope", r.Scope, false, l.MaxTextBytes)
	checkText(ps, p+".corrects_relationship_id", string(r.CorrectsRelationshipID), false, l.MaxTextBytes)
	if cr := r.ConflictResponse; cr != nil {
		checkText(ps, p+".conflict_response.conflict_id", cr.ConflictID, true, l.MaxTextBytes)
		if cr.ExpectedVersion < 1 {
			ps.Add(p+".conflict_response.expected_version", "must be a case version (1 or more)")
		}
	}
	checkTime(ps, p+".valid_from", r.ValidFrom)
	checkTime(ps, p+".valid_to", r.ValidTo)
	if r.ValidFrom != nil && r.ValidTo != nil && !storedTime(*r.ValidFrom).Before(storedTime(*r.ValidTo)) {
		ps.Add(p+".valid_to", "must be after valid_from (at microsecond precision)")
	}
}

// checkCitation checks one citation at path cp: an evidence index, and a non-empty byte span of that
// item on UTF-8 character boundaries. The span of an adopted item is checked against the fragment's
// content once it is read (placement.Intake.CheckAdopted); here only that it is non-empty. It
// reports whether the citation names an evidence item.
func checkCitation(ps *problems, cp string, c Citation, items []EvidenceInput) bool {
	if c.EvidenceIndex < 0 || c.EvidenceIndex >= len(items) {
		ps.Add(cp+".evidence_index", "%d is not an index of evidence", c.EvidenceIndex)
		return false
	}
	if items[c.EvidenceIndex].Adopts() {
		switch {
		case c.Start < 0:
			ps.Add(cp+".start", "must not be negative")
		case c.Start >= c.End:
			ps.Add(cp+".end", "must be greater than start")
		}
		return true
	}
	request.CheckSpan(ps, cp, items[c.EvidenceIndex].Content, c.EvidenceIndex, c.Start, c.End)
	return true
}

// checkRememberCounts refuses a request over any count limit: evidence items, entities, aliases per
// entity, identity-context keys, names, relationships and citations per relationship. It reads only
// lengths (the per-entity and per-relationship loops run only once their lists are within limits).
func checkRememberCounts(req *RememberRequest, l Limits) error {
	var ps problems
	over := func(path string, n, max int, what string) {
		if n > max {
			ps.Add(path, "has %d %s, more than the limit of %d", n, what, max)
		}
	}
	over("evidence", len(req.Evidence), l.MaxEvidence, "items")
	over("proposal.entities", len(req.Proposal.Entities), l.MaxEntities, "items")
	over("proposal.relationships", len(req.Proposal.Relationships), l.MaxRelationships, "items")
	if ps.Any() {
		return ps.Err()
	}
	names := 0
	for i, e := range req.Proposal.Entities {
		over(fmt.Sprintf("proposal.entities[%d].aliases", i), len(e.Aliases), l.MaxAliasesPerEntity, "aliases")
		over(fmt.Sprintf("proposal.entities[%d].identity_context", i), len(e.IdentityContext), MaxIdentityContextKeys, "keys")
		if e.KnownEntityID == "" {
			names += 1 + len(e.Aliases)
		}
	}
	over("proposal.entities", names, l.MaxNames, "names (names and aliases of entities without known_entity_id)")
	for i, r := range req.Proposal.Relationships {
		over(fmt.Sprintf("proposal.relationships[%d].evidence", i), len(r.Evidence), l.MaxCitations, "citations")
	}
	return ps.Err()
}
