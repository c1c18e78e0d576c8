package densemem

import (
	"context"
	"encoding/json"

	"fmt"
	"slices"
	"strings"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/evidence"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

const opRemember = "remember"

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
	hash := requestHash(opRemember, req)
	in := newIntake(&req)

	// 2-3. Authorise and check idempotency from one read.
	prep, err := c.store.RememberPrepare(ctx, store.RememberPrepareParams{Team: p.TeamID, Profile: p.ProfileID,
		IdempotencyKey: req.IdempotencyKey, Names: in.names, KnownEntities: in.known})
	if err != nil {
		return nil, err
	}
	if prep.Principal == nil {
		return nil, fmt.Errorf("%w: profile %s is not a profile of team %s", ErrForbidden, p.ProfileID, p.TeamID)
	}
	if err := checkProfile(prep.Principal.Profile.Status, prep.Principal.Profile.Scopes, p, identity.ScopeWrite); err != nil {
		return nil, err
	}
	if prep.Idempotency != nil {
		return replay(prep.Idempotency, opRemember, hash)
	}
	if err := in.checkKnown(prep.Known); err != nil {
		return nil, err
	}

	// 4-5. Resolve identities and predicates as far as possible before the transaction.
	pre := in.resolve(prep.Candidates, prep.Known)
	claims := in.claims(prep.Predicates, pre)

	// 6. One verifier call, outside any transaction.
	verdicts, err := c.verify(ctx, claims)
	if err != nil {
		return nil, err
	}

	// 7-9. Gate, plan and commit in one transaction; the plan is recomputed from what the
	// transaction reads after its locks, so a retry starts from scratch.
	now := c.now()
	policy := prep.Principal.Policy
	var placement *Placement
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: p.TeamID, Profile: p.ProfileID,
			IdempotencyKey: req.IdempotencyKey, NameLocks: in.names, Names: in.names, KnownEntities: in.known,
			MaxLocks: c.cfg.Limits.MaxAdvisoryLocks})
		if err != nil {
			return err
		}
		if locked.Idempotency != nil {
			placement, err = replay(locked.Idempotency, opRemember, hash)
			return err
		}
		if err := checkProfile(profileStatus(locked.ProfileActive), locked.ProfileScopes, p, identity.ScopeWrite); err != nil {
			return err
		}
		pl := &planner{c: c, p: p, req: &req, in: in, now: now, policy: policy, verdicts: verdicts, hash: hash,
			preds: prep.Predicates, verifier: c.cfg.Verifier.Name()}
		pl.resolve(locked.Candidates, locked.Known)
		// Keys whose subject this call creates need no lock: no other transaction can see the new
		// entity before commit, and its name lock already serialises its creators.
		keys, cases := pl.keys(false), in.responses()
		var kl store.KeysLocked
		if len(keys) > 0 || len(cases) > 0 {
			if kl, err = tx.KeysLock(ctx, store.KeysLockParams{Team: p.TeamID, Keys: keys, Cases: cases,
				MaxLocks: c.cfg.Limits.MaxAdvisoryLocks}); err != nil {
				return err
			}
		}
		ws, out, err := pl.plan(kl)
		if err != nil {
			return err
		}
		if err := tx.WriteSetApply(ctx, ws); err != nil {
			return err
		}
		placement = out
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.cfg.Logger.DebugContext(ctx, "densemem: remember", "team", p.TeamID, "profile", p.ProfileID,
		"ingest_id", placement.IngestID, "replayed", placement.Replayed, "relationships", len(placement.RelationshipOutcomes))
	return placement, nil
}

func profileStatus(active bool) identity.ProfileStatus {
	if active {
		return identity.ProfileActive
	}
	return identity.ProfileDisabled
}

// replay returns a stored result, or ErrIdempotencyConflict when the key served another request.
func replay(rec *store.IdempotencyRecord, op, hash string) (*Placement, error) {
	if rec.Operation != op || rec.RequestHash != hash {
		return nil, fmt.Errorf("%w: key was used for another %s request", ErrIdempotencyConflict, rec.Operation)
	}
	var pl Placement
	if err := json.Unmarshal(rec.Result, &pl); err != nil {
		return nil, fmt.Errorf("densemem: stored placement of %s is unreadable: %v", rec.IngestID, err)
	}
	pl.Replayed = true
	return &pl, nil
}

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

// intake is the request reshaped for identity and predicate resolution.
type intake struct {
	req      *RememberRequest
	mentions map[string]identity.Mention // by ref
	order    []string                    // refs in request order
	names    []store.NameLookup
	known    []identity.EntityID
}

func newIntake(req *RememberRequest) *intake {
	in := &intake{req: req, mentions: map[string]identity.Mention{}}
	seen := map[store.NameLookup]bool{}
	for _, e := range req.Proposal.Entities {
		m := identity.Mention{Ref: e.Ref, Name: strings.TrimSpace(e.Name), Kind: e.EntityKind, Aliases: e.Aliases,
			Context: identity.NormalizeContext(e.IdentityContext), KnownID: e.KnownEntityID}
		in.mentions[e.Ref] = m
		in.order = append(in.order, e.Ref)
		if m.KnownID != "" {
			in.known = append(in.known, m.KnownID)
			continue
		}
		// Every name the call may write for a new entity is locked: its name and its aliases.
		for _, name := range append([]string{m.Name}, m.Aliases...) {
			key := identity.NormalizeName(name)
			n := store.NameLookup{Kind: m.Kind, Normalized: key, Skeleton: identity.Skeleton(key)}
			if !seen[n] {
				seen[n] = true
				in.names = append(in.names, n)
			}
		}
	}
	return in
}

// responses returns the conflict cases the request responds to.
func (in *intake) responses() []conflict.ID {
	var out []conflict.ID
	for _, r := range in.req.Proposal.Relationships {
		if r.ConflictResponse != nil && !slices.Contains(out, conflict.ID(r.ConflictResponse.ConflictID)) {
			out = append(out, conflict.ID(r.ConflictResponse.ConflictID))
		}
	}
	return out
}

// checkKnown fails the call when a known_entity_id is not an entity of the caller's team of that kind.
func (in *intake) checkKnown(known []identity.Entity) error {
	var ps problems
	byID := map[identity.EntityID]identity.Entity{}
	for _, e := range known {
		byID[e.ID] = e
	}
	for i, e := range in.req.Proposal.Entities {
		if e.KnownEntityID == "" {
			continue
		}
		path := fmt.Sprintf("proposal.entities[%d].known_entity_id", i)
		switch k, ok := byID[e.KnownEntityID]; {
		case !ok:
			ps.add(path, "%s is not an entity of the caller's team", e.KnownEntityID)
		case k.Kind != e.EntityKind:
			ps.add(path, "%s is a %s, not a %s", e.KnownEntityID, k.Kind, e.EntityKind)
		}
	}
	return ps.err()
}

// resolution is one mention's resolution within a call.
type resolution struct {
	identity.Resolution
	entity identity.Entity // the resolved entity (reused, known or to be created)
}

// resolve resolves every mention in request order. A mention that creates an entity makes that
// entity a candidate for later mentions of the same call, so one call never creates twins.
func (in *intake) resolve(candidates, known []identity.Entity) map[string]resolution {
	out := map[string]resolution{}
	byID := map[identity.EntityID]identity.Entity{}
	for _, e := range known {
		byID[e.ID] = e
	}
	pool := append([]identity.Entity{}, candidates...)
	for _, ref := range in.order {
		m := in.mentions[ref]
		if m.KnownID != "" {
			out[ref] = resolution{Resolution: identity.Resolution{Decision: identity.DecisionKnown, EntityID: m.KnownID}, entity: byID[m.KnownID]}
			continue
		}
		r := identity.Resolve(m, pool)
		res := resolution{Resolution: r}
		switch r.Decision {
		case identity.DecisionReused:
			for _, e := range pool {
				if e.ID == r.EntityID {
					res.entity = e
				}
			}
		case identity.DecisionCreated:
			// A placeholder ID marks the entity until the planner allocates the real one.
			res.entity = newEntity(identity.EntityID("new:"+ref), m)
			pool = append(pool, res.entity)
		}
		out[ref] = res
	}
	return out
}

// newEntity is the entity a mention creates: its name as canonical name and each alias whose key
// differs from every earlier name's key.
func newEntity(id identity.EntityID, m identity.Mention) identity.Entity {
	e := identity.Entity{ID: id, Kind: m.Kind, Context: m.Context,
		Names: []identity.Name{{Name: m.Name, Normalized: identity.NormalizeName(m.Name), Kind: identity.NameCanonical}}}
	for _, a := range m.Aliases {
		key := identity.NormalizeName(a)
		if !slices.ContainsFunc(e.Names, func(n identity.Name) bool { return n.Normalized == key }) {
			e.Names = append(e.Names, identity.Name{Name: strings.TrimSpace(a), Normalized: key, Kind: identity.NameAlias})
		}
	}
	return e
}

// claims builds the verifier claims of every statement whose entities resolved and whose predicate
// matched. The verdict concerns the proposal's text, so it stays valid if the transaction later
// maps a name to another entity.
func (in *intake) claims(preds []relationship.Predicate, res map[string]resolution) []evidence.Claim {
	var out []evidence.Claim
	for _, r := range in.req.Proposal.Relationships {
		_, mod, _ := normalizedRelationship(r)
		if mod != relationship.ModalityStatement {
			continue
		}
		if _, ok := relationship.MatchPredicate(r.Predicate, preds); !ok {
			continue
		}
		if res[r.SubjectRef].Decision == identity.DecisionAmbiguous ||
			(r.ObjectRef != "" && res[r.ObjectRef].Decision == identity.DecisionAmbiguous) {
			continue
		}
		out = append(out, in.claim(r))
	}
	return out
}

func (in *intake) claim(r ProposedRelationship) evidence.Claim {
	pol, _, _ := normalizedRelationship(r)
	cl := evidence.Claim{ProposalID: r.ProposalID, PredicatePhrase: r.Predicate, Negated: pol == relationship.PolarityNegative,
		ValidFrom: r.ValidFrom, SubjectNames: mentionNames(in.mentions[r.SubjectRef])}
	if r.ObjectValue != nil {
		cl.ObjectValue = strings.TrimSpace(r.ObjectValue.Value)
	} else {
		cl.ObjectNames = mentionNames(in.mentions[r.ObjectRef])
	}
	for _, cit := range r.Evidence {
		content := in.req.Evidence[cit.EvidenceIndex].Content
		cl.Cited = append(cl.Cited, evidence.CitedText{EvidenceIndex: cit.EvidenceIndex, Start: cit.Start, End: cit.End,
			Text: content[cit.Start:cit.End]})
	}
	return cl
}

func mentionNames(m identity.Mention) []string {
	return append([]string{m.Name}, m.Aliases...)
}
