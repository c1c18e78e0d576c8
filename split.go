package densemem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/densemem/densemem/conflict"
	"github.com/densemem/densemem/identity"
	"github.com/densemem/densemem/internal/ledger"
	"github.com/densemem/densemem/internal/placement"
	"github.com/densemem/densemem/relationship"
	"github.com/densemem/densemem/store"
)

// Late split and merge (DESIGN §10): a profile moves the mentions of some of its own observations
// from one entity to another — a new entity (split) or another existing one (merge) — and its
// relationships built on them follow. Another profile's rows never move.

const (
	opSplit = "split"
	opMerge = "merge"
)

// SplitRequest names a late split: the caller's observations whose mentions of EntityID are about
// another identity, which the split gives a new entity.
type SplitRequest struct {
	// EntityID is the entity to split.
	EntityID EntityID `json:"entity_id"`
	// ObservationIDs are the caller's observations to move to the new entity: each must currently
	// resolve a mention to EntityID. Split requires at least one; PreviewSplit uses them to compute
	// which relationships would move (none: as if every listed observation were selected).
	ObservationIDs []string `json:"observation_ids,omitempty"`
	// Name is the new entity's canonical name; empty means EntityID's canonical name.
	Name string `json:"name,omitempty"`
	// IdentityContext distinguishes the new entity (for example {"team": "billing"}).
	IdentityContext map[string]string `json:"identity_context,omitempty"`
	// Evidence distinguishes the new identity; Split requires at least one item. It is stored as the
	// caller's fragments and cited by the decision.
	Evidence []EvidenceInput `json:"evidence,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	// IdempotencyKey is required by Split; a retry with the same key and request replays the first
	// result.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// MergeRequest names a late merge: the caller's observations whose mentions of FromEntityID are
// about IntoEntityID (an entity of the same kind and team).
type MergeRequest struct {
	FromEntityID EntityID `json:"from_entity_id"`
	IntoEntityID EntityID `json:"into_entity_id"`
	// ObservationIDs are the caller's observations to move: each must currently resolve a mention to
	// FromEntityID. Merge requires at least one; PreviewMerge as PreviewSplit.
	ObservationIDs []string `json:"observation_ids,omitempty"`
	// Evidence shows the two are one identity; Merge requires at least one item.
	Evidence       []EvidenceInput `json:"evidence,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// ReassignPreview lists what a split or merge would move: only the caller's observations and
// relationships, never another profile's.
type ReassignPreview struct {
	EntityID EntityID `json:"entity_id"`
	// Observations are the caller's observations with a mention that currently resolves to the
	// entity, oldest first; Selected marks those the request named.
	Observations          []MovableObservation `json:"observations"`
	ObservationsTruncated bool                 `json:"observations_truncated,omitempty"`
	// Relationships are the caller's current, pending or held relationships on the entity that the
	// selection (or, without one, every listed observation) would re-derive.
	Relationships          []MovableRelationship `json:"relationships"`
	RelationshipsTruncated bool                  `json:"relationships_truncated,omitempty"`
}

// MovableObservation is one of the caller's observations a split or merge may move.
type MovableObservation struct {
	ObservationID string `json:"observation_id"`
	// MentionRefs are its mentions that currently resolve to the entity.
	MentionRefs []string  `json:"mention_refs"`
	Selected    bool      `json:"selected,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// MovableRelationship is one of the caller's relationships a split or merge would re-derive.
type MovableRelationship struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	Status         Status         `json:"status"`
	Version        int            `json:"version"`
	// ObservationIDs are the moving observations that created or support it.
	ObservationIDs []string `json:"observation_ids"`
	// KeepsSupport is true when some of its supports come from observations that stay: its statement
	// is restated on both entities.
	KeepsSupport bool `json:"keeps_support,omitempty"`
}

// ReassignResult reports a confirmed split or merge.
type ReassignResult struct {
	DecisionID     string       `json:"decision_id"`
	Action         string       `json:"action"`
	FromEntityID   EntityID     `json:"from_entity_id"`
	ToEntityID     EntityID     `json:"to_entity_id"`
	ObservationIDs []string     `json:"observation_ids"`
	FragmentIDs    []FragmentID `json:"fragment_ids"`
	// Relationships name each relationship closed and what its statement became.
	Relationships []RederivedRelationship `json:"relationships,omitempty"`
	// Changes are the before and after of every relationship the decision changed or created.
	Changes []RelationshipChange `json:"changes"`
	// Conflicts are the team cases of the keys the decision touched, after it.
	Conflicts []ConflictRef `json:"conflicts,omitempty"`
	Replayed  bool          `json:"replayed"`
}

// RederivedRelationship names a relationship a split or merge closed (retracted, its transition
// naming the decision) and the relationships its statement is on now.
type RederivedRelationship struct {
	RelationshipID RelationshipID `json:"relationship_id"`
	// MovedTo is the relationship on the entity the mentions moved to (new, or an identical one of
	// the caller's that gained the supports).
	MovedTo RelationshipID `json:"moved_to"`
	// StayedAs is the restatement on the old entity with the supports that stay, if any.
	StayedAs RelationshipID `json:"stayed_as,omitempty"`
}

// reassign is one split or merge as the shared steps see it.
type reassign struct {
	op             string
	from, into     EntityID // into is "" for a split
	observations   []string
	name           string
	context        map[string]string
	evidence       []EvidenceInput
	reason, key    string
	fromPath, hash string
}

func (r SplitRequest) reassign() reassign {
	return reassign{op: opSplit, from: r.EntityID, observations: r.ObservationIDs, name: r.Name,
		context: r.IdentityContext, evidence: r.Evidence, reason: r.Reason, key: r.IdempotencyKey,
		fromPath: "entity_id", hash: requestHash(opSplit, r)}
}

func (r MergeRequest) reassign() reassign {
	return reassign{op: opMerge, from: r.FromEntityID, into: r.IntoEntityID, observations: r.ObservationIDs,
		evidence: r.Evidence, reason: r.Reason, key: r.IdempotencyKey, fromPath: "from_entity_id",
		hash: requestHash(opMerge, r)}
}

// PreviewSplit lists what Split would move for req: the caller's observations that currently resolve
// a mention to the entity and the caller's relationships on it the selection would re-derive. It
// writes nothing and never lists another profile's rows.
//
// Errors: *ValidationError, ErrForbidden, ErrNotFound (no such entity or observation in the team),
// ErrNotOwner (a selected observation of another profile).
func (c *Client) PreviewSplit(ctx context.Context, p Principal, req SplitRequest) (*ReassignPreview, error) {
	return c.preview(ctx, p, req.reassign())
}

// PreviewMerge lists what Merge would move for req, as PreviewSplit does.
//
// Errors: as PreviewSplit's; a *ValidationError also when the two entities are one or differ in kind.
func (c *Client) PreviewMerge(ctx context.Context, p Principal, req MergeRequest) (*ReassignPreview, error) {
	return c.preview(ctx, p, req.reassign())
}

// Split confirms a late split. In one transaction it creates the new entity (the library allocates
// its ID; the kind is the split entity's), stores the evidence, appends a resolution event moving
// each selected observation's mentions of the entity to the new one, re-derives the caller's
// relationships those observations created or support (each closed with a transition naming the
// decision, its statement restated on the new entity by the same-owner rules with the same supports,
// and on the old one with the supports that stay), re-plans the caller's held statements and
// maintains the team cases of every touched key, and appends the decision (actor, time, entities,
// observations, evidence, reason, idempotency key, the before and after of every change). Another
// profile's observations, resolutions and relationships never move.
//
// Errors: *ValidationError (bad fields, an observation that does not resolve to the entity, more
// than Limits.MaxReassignItems), ErrForbidden, ErrNotFound, ErrNotOwner (an observation of another
// profile), ErrStaleDecision (a selected observation moved since the preview, or a relationship
// changed meanwhile), ErrIdempotencyConflict. Nothing is written on any error.
func (c *Client) Split(ctx context.Context, p Principal, req SplitRequest) (*ReassignResult, error) {
	return c.confirm(ctx, p, req.reassign())
}

// Merge confirms a late merge: as Split, with the selected observations' mentions of FromEntityID
// moving to IntoEntityID, where the caller's relationships may already state the same (they gain
// the supports) or contradict it (the restatement is held for review, or supersedes by the
// same-owner rules). Entities are never deleted.
//
// Errors: as Split's; a *ValidationError also when the two entities are one or differ in kind.
func (c *Client) Merge(ctx context.Context, p Principal, req MergeRequest) (*ReassignResult, error) {
	return c.confirm(ctx, p, req.reassign())
}

// preview is PreviewSplit's and PreviewMerge's steps.
func (c *Client) preview(ctx context.Context, p Principal, r reassign) (*ReassignPreview, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate; 2. authorise a read.
	if err := validateReassign(r, c.cfg.Limits, false); err != nil {
		return nil, err
	}
	if _, err := c.authorize(ctx, p, identity.ScopeRead); err != nil {
		return nil, err
	}
	// 3. Read the entity, the caller's observations on it and the selected ones; check them.
	read, _, err := c.readSelection(ctx, p, r)
	if err != nil {
		return nil, err
	}
	// 4. Shape the caller's rows the selection would move.
	return previewOf(r, read), nil
}

// identityParams names the read of a split or merge.
func (c *Client) identityParams(p Principal, r reassign) store.IdentityReadParams {
	return store.IdentityReadParams{Team: p.TeamID, Profile: p.ProfileID, Entity: r.from, Selected: r.observations,
		Limit: c.cfg.Limits.MaxReassignItems}
}

// readSelection reads the entity to move from, the caller's observations on it and the selected
// ones (IdentityRead), and checks the entities (checkEntities) and the selection (checkSelected); it
// returns the read and, for a merge, the entity to move into.
func (c *Client) readSelection(ctx context.Context, p Principal, r reassign) (store.IdentityRead, *identity.Entity, error) {
	read, err := c.store.IdentityRead(ctx, c.identityParams(p, r))
	if err != nil {
		return read, nil, err
	}
	into, err := c.checkEntities(ctx, p, r, read.Entity)
	if err != nil {
		return read, nil, err
	}
	return read, into, checkSelected(p, r, read)
}

// checkEntities checks that the entity to move from exists and, for a merge, that the one to move
// into does and has its kind; it returns the latter (nil for a split).
func (c *Client) checkEntities(ctx context.Context, p Principal, r reassign, from *identity.Entity) (*identity.Entity, error) {
	if from == nil {
		return nil, fmt.Errorf("%w: entity %s", ErrNotFound, r.from)
	}
	if r.op != opMerge {
		return nil, nil
	}
	into, err := c.store.IdentityRead(ctx, store.IdentityReadParams{Team: p.TeamID, Profile: p.ProfileID, Entity: r.into, Limit: 1})
	if err != nil {
		return nil, err
	}
	return into.Entity, checkInto(r, from, into.Entity)
}

// checkInto checks a merge's entity to move into against the one to move from.
func checkInto(r reassign, from, into *identity.Entity) error {
	if into == nil {
		return fmt.Errorf("%w: entity %s", ErrNotFound, r.into)
	}
	if into.Kind != from.Kind {
		var ps problems
		ps.Add("into_entity_id", "entity %s is a %s, entity %s a %s: only entities of one kind merge", into.ID, into.Kind,
			from.ID, from.Kind)
		return ps.Err()
	}
	return nil
}

// checkSelected checks every selected observation: the team's (else ErrNotFound), the caller's (else
// ErrNotOwner), resolving a mention to the entity now (else stale when one did before, a
// *ValidationError when none ever did).
func checkSelected(p Principal, r reassign, read store.IdentityRead) error {
	var ps problems
	for i, id := range r.observations {
		j := slices.IndexFunc(read.Selected, func(o store.IdentityObservation) bool { return o.ID == id })
		if j < 0 {
			return fmt.Errorf("%w: observation %s", ErrNotFound, id)
		}
		o := read.Selected[j]
		switch {
		case o.Profile != p.ProfileID:
			return fmt.Errorf("%w: observation %s belongs to profile %s", ErrNotOwner, id, o.Profile)
		case len(mentionsOf(o, r.from)) > 0:
		case o.EverEntity:
			return fmt.Errorf("%w: observation %s no longer resolves a mention to entity %s (moved since the preview)",
				ErrStaleDecision, id, r.from)
		default:
			ps.Add(fmt.Sprintf("observation_ids[%d]", i), "observation %s does not resolve a mention to entity %s", id, r.from)
		}
	}
	return ps.Err()
}

// mentionsOf returns the mentions of o whose current resolution names entity.
func mentionsOf(o store.IdentityObservation, entity EntityID) []string {
	var out []string
	for _, e := range o.Current {
		if e.EntityID == entity {
			out = append(out, e.MentionRef)
		}
	}
	return out
}

// previewOf shapes what r would move: the movable observations and the relationships the selection
// (without one, every movable observation) re-derives.
func previewOf(r reassign, read store.IdentityRead) *ReassignPreview {
	out := &ReassignPreview{EntityID: r.from, Observations: []MovableObservation{}, Relationships: []MovableRelationship{},
		ObservationsTruncated: read.MovableTruncated, RelationshipsTruncated: read.RelationshipsTruncated}
	moved := map[string]bool{}
	for _, id := range r.observations {
		moved[id] = true
	}
	for _, o := range read.Movable {
		out.Observations = append(out.Observations, MovableObservation{ObservationID: o.ID, MentionRefs: mentionsOf(o, r.from),
			Selected: moved[o.ID], CreatedAt: o.CreatedAt})
	}
	if len(r.observations) == 0 {
		for _, o := range read.Movable {
			moved[o.ID] = true
		}
	}
	for _, ir := range read.Relationships {
		move, stay, ok := ledger.Moves(ir, moved)
		if !ok {
			continue
		}
		mr := MovableRelationship{RelationshipID: ir.Relationship.ID, Status: ir.Relationship.Status,
			Version: ir.Relationship.Version, ObservationIDs: []string{}, KeepsSupport: len(stay) > 0 && len(move) > 0}
		for _, s := range move {
			if !slices.Contains(mr.ObservationIDs, s.ObservationID) {
				mr.ObservationIDs = append(mr.ObservationIDs, s.ObservationID)
			}
		}
		if len(move) == 0 {
			mr.ObservationIDs = append(mr.ObservationIDs, ir.ObservationID)
		}
		out.Relationships = append(out.Relationships, mr)
	}
	return out
}

// confirm is Split's and Merge's steps.
func (c *Client) confirm(ctx context.Context, p Principal, r reassign) (*ReassignResult, error) {
	ctx, err := c.begin(ctx, actorOf(p))
	if err != nil {
		return nil, err
	}
	// 1. Validate the request.
	if err := validateReassign(r, c.cfg.Limits, true); err != nil {
		return nil, err
	}
	// 2. Authorise a write; a retry with a used key replays its stored result.
	pr, err := c.authorize(ctx, p, identity.ScopeWrite)
	if err != nil {
		return nil, err
	}
	if rec, err := c.store.IdempotencyGet(ctx, p.TeamID, p.ProfileID, r.key); err != nil {
		return nil, err
	} else if rec != nil {
		return replayReassign(rec, r)
	}
	// 3. Check the entities and the selection before any lock (they are checked again under it).
	read, into, err := c.readSelection(ctx, p, r)
	if err != nil {
		return nil, err
	}
	// 4. Move the mentions and re-derive the caller's relationships in one transaction.
	now := c.now()
	var result *ReassignResult
	err = c.store.Tx(ctx, func(ctx context.Context, tx store.Tx) error {
		result, err = c.reassignTx(ctx, tx, p, pr.Policy, r, *read.Entity, c.target(r, *read.Entity, into, now))
		return err
	})
	if errors.Is(err, ErrStaleVersion) {
		return nil, fmt.Errorf("%w: a relationship of entity %s changed meanwhile", ErrStaleDecision, r.from)
	}
	return result, err
}

// reassignTx is a split's or merge's transaction: under the idempotency key's lock and the name
// locks of the entities, it reads the selection again and checks it, locks the conflict keys of the
// relationships it re-derives (old and new), carries the decision out through the ledger, and stores
// the result under the idempotency key.
func (c *Client) reassignTx(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, r reassign,
	from, to identity.Entity) (*ReassignResult, error) {
	now := c.now()
	locked, err := tx.IntakeLock(ctx, store.IntakeLockParams{Team: p.TeamID, Profile: p.ProfileID, IdempotencyKey: r.key,
		NameLocks: nameLookups(from, to), KnownEntities: []EntityID{from.ID, to.ID}, MaxLocks: c.cfg.Limits.MaxAdvisoryLocks,
		DistinctionsOf: from.ID})
	if err != nil {
		return nil, err
	}
	if locked.Idempotency != nil {
		return replayReassign(locked.Idempotency, r)
	}
	if err := checkProfile(profileStatus(locked.ProfileActive), locked.ProfileScopes, p, identity.ScopeWrite); err != nil {
		return nil, err
	}
	if r.op == opMerge {
		if to, err = lockedInto(r, from, locked.Known); err != nil {
			return nil, err
		}
	}
	read, err := tx.IdentityRead(ctx, c.identityParams(p, r))
	if err != nil {
		return nil, err
	}
	if err := checkSelected(p, r, read); err != nil {
		return nil, err
	}
	if read.RelationshipsTruncated {
		var ps problems
		ps.Add(r.fromPath, "you hold more than %d relationships on entity %s (Limits.MaxReassignItems)",
			c.cfg.Limits.MaxReassignItems, r.from)
		return nil, ps.Err()
	}
	l, err := c.lockReassignKeys(ctx, tx, p, policy, r, read, to.ID, locked.Distinctions, now)
	if err != nil {
		return nil, err
	}
	return c.recordReassign(ctx, tx, l, p, r, read, to)
}

// target is the entity a split creates (its kind the split entity's, its name the request's or the
// split entity's canonical name) or, for a merge, into, the entity to move into (read again under
// the locks).
func (c *Client) target(r reassign, from identity.Entity, into *identity.Entity, now time.Time) identity.Entity {
	if into != nil {
		return *into
	}
	name := r.name
	if name == "" {
		name = from.CanonicalName()
	}
	return identity.Entity{ID: EntityID(c.newID("ent", now)), Kind: from.Kind, Context: identity.NormalizeContext(r.context),
		Names: []identity.Name{{Name: name, Normalized: identity.NormalizeName(name), Kind: identity.NameCanonical}}}
}

// lockedInto returns a merge's entity to move into as the locks read it, checked against from.
func lockedInto(r reassign, from identity.Entity, known []identity.Entity) (identity.Entity, error) {
	i := slices.IndexFunc(known, func(e identity.Entity) bool { return e.ID == r.into })
	if i < 0 {
		return identity.Entity{}, checkInto(r, &from, nil)
	}
	return known[i], checkInto(r, &from, &known[i])
}

// nameLookups are the name locks of a split or merge: every name of the entities it moves between,
// so it is serialised with the writers that create or reuse an entity of those names.
func nameLookups(entities ...identity.Entity) []store.NameLookup {
	var out []store.NameLookup
	for _, e := range entities {
		for _, n := range e.Names {
			out = append(out, store.NameLookup{Kind: e.Kind, Normalized: n.Normalized, Skeleton: identity.Skeleton(n.Normalized)})
		}
	}
	return out
}

// lockReassignKeys locks the conflict keys of every relationship of the caller the selection
// re-derives, as it is and as it will be (the entity replaced by to), and the identity cases the
// relationships on the entity moved from may be members of (its own, and those of the entities it
// was stated distinct from, distinct), and returns a ledger of the change loaded with their state.
func (c *Client) lockReassignKeys(ctx context.Context, tx store.Tx, p Principal, policy store.Policy, r reassign,
	read store.IdentityRead, to EntityID, distinct []EntityID, now time.Time) (*ledger.Ledger, error) {
	moved := map[string]bool{}
	for _, id := range r.observations {
		moved[id] = true
	}
	var keys []conflict.Key
	add := func(k conflict.Key) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, ir := range read.Relationships {
		if _, _, ok := ledger.Moves(ir, moved); !ok {
			continue
		}
		rel := ir.Relationship
		add(conflict.Key{Team: p.TeamID, Subject: rel.Subject, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
		if rel.Subject == r.from {
			add(conflict.Key{Team: p.TeamID, Subject: to, PredicateKey: rel.PredicateKey, Scope: rel.Scope})
		}
	}
	for _, e := range append([]EntityID{r.from}, distinct...) {
		add(conflict.IdentityKey(p.TeamID, e))
	}
	kl, err := tx.KeysLock(ctx, store.KeysLockParams{Team: p.TeamID, Keys: keys, Predicates: true,
		MaxLocks: c.cfg.Limits.MaxAdvisoryLocks, Members: true})
	if err != nil {
		return nil, err
	}
	if err := unchangedSince(read, kl, moved); err != nil {
		return nil, err
	}
	l := &ledger.Ledger{Team: p.TeamID, Actor: ledger.ProfileActor(p.ProfileID), IngestID: c.newID("ing", now),
		IdempotencyKey: r.key, Now: now, Policy: policy,
		NewID: func(prefix string) string { return c.newID(prefix, now) }}
	l.Load(kl, kl.Predicates)
	return l, nil
}

// unchangedSince checks that every moving relationship the selection read is, under its key's lock,
// at the version and with the supports read (a writer that reached it between the read and the lock
// makes the confirmation stale).
func unchangedSince(read store.IdentityRead, kl store.KeysLocked, moved map[string]bool) error {
	supports := map[RelationshipID]int{}
	for _, s := range kl.Supports {
		supports[s.RelationshipID]++
	}
	for _, ir := range read.Relationships {
		if _, _, ok := ledger.Moves(ir, moved); !ok {
			continue
		}
		id := ir.Relationship.ID
		i := slices.IndexFunc(kl.Relationships, func(r relationship.Relationship) bool { return r.ID == id })
		if i < 0 || kl.Relationships[i].Version != ir.Relationship.Version || supports[id] != len(ir.Supports) {
			return fmt.Errorf("%w: relationship %s changed while the selection was read", ErrStaleDecision, id)
		}
	}
	return nil
}

// recordReassign carries the split or merge out through the ledger (ledger.Reassign), appends the
// decision (ledger.DecideIdentity), stores the result under the idempotency key and writes the
// transaction's rows.
func (c *Client) recordReassign(ctx context.Context, tx store.Tx, l *ledger.Ledger, p Principal, r reassign,
	read store.IdentityRead, to identity.Entity) (*ReassignResult, error) {
	action := store.IdentitySplit
	if r.op == opMerge {
		action = store.IdentityMerge
	}
	res := &ReassignResult{DecisionID: c.newID("dec", l.Now), Action: action, FromEntityID: r.from, ToEntityID: to.ID,
		ObservationIDs: r.observations, FragmentIDs: []FragmentID{}}
	frags := placement.Fragments(p.TeamID, p.ProfileID, l.IngestID, r.evidence, l.Now, l.NewID)
	fragIDs := make([]string, len(frags))
	for i, f := range frags {
		fragIDs[i] = string(f.ID)
		res.FragmentIDs = append(res.FragmentIDs, f.ID)
	}
	rederived, cases := l.Reassign(ledger.Reassignment{DecisionID: res.DecisionID, Action: action, From: r.from, To: to,
		Create: r.op == opSplit, Observations: read.Selected, Relationships: read.Relationships, Fragments: frags,
		Reason: r.reason})
	for _, d := range rederived {
		res.Relationships = append(res.Relationships, RederivedRelationship{RelationshipID: d.From, MovedTo: d.Moved, StayedAs: d.Stayed})
	}
	for _, ref := range cases {
		res.Conflicts = append(res.Conflicts, ConflictRef{ConflictID: string(ref.ID), Version: ref.Version, Status: string(ref.Status)})
	}
	changes, err := l.DecideIdentity(ledger.IdentityDecision{ID: res.DecisionID, Action: action, From: r.from, To: to.ID,
		ObservationIDs: r.observations, FragmentIDs: fragIDs, Reason: r.reason})
	if err != nil {
		return nil, err
	}
	res.Changes = changes
	body, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	l.WS.Idempotency = &store.IdempotencyRow{Team: p.TeamID, Profile: p.ProfileID, Key: r.key, Operation: r.op,
		RequestHash: r.hash, IngestID: l.IngestID, Result: body, CreatedAt: l.Now}
	if err := tx.WriteSetApply(ctx, l.WS); err != nil {
		return nil, err
	}
	return res, nil
}

// replayReassign returns the result stored under a split's or merge's idempotency key.
func replayReassign(rec *store.IdempotencyRecord, r reassign) (*ReassignResult, error) {
	out, err := replayed[ReassignResult](rec, r.op, r.hash, r.op+" result")
	if err == nil {
		out.Replayed = true
	}
	return out, err
}

// validateReassign checks a split or merge request; confirm asks for what a confirmation needs (the
// selection, evidence and the idempotency key) besides what a preview does.
func validateReassign(r reassign, l Limits, confirm bool) error {
	var ps problems
	checkText(&ps, r.fromPath, string(r.from), true, l.MaxTextBytes)
	if r.op == opMerge {
		checkText(&ps, "into_entity_id", string(r.into), true, l.MaxTextBytes)
		if r.into != "" && r.into == r.from {
			ps.Add("into_entity_id", "is from_entity_id: an entity does not merge into itself")
		}
	}
	if confirm && len(r.observations) == 0 {
		ps.Add("observation_ids", "at least one observation to move is required")
	}
	if checkCount(&ps, "observation_ids", len(r.observations), l.MaxReassignItems) {
		for i, id := range r.observations {
			p := fmt.Sprintf("observation_ids[%d]", i)
			checkText(&ps, p, id, true, l.MaxTextBytes)
			if slices.Index(r.observations, id) < i {
				ps.Add(p, "repeats observation %s", quoted(id, 64))
			}
		}
	}
	if r.name != "" {
		checkName(&ps, "name", r.name, l.MaxTextBytes)
	}
	if len(r.context) > MaxIdentityContextKeys {
		ps.Add("identity_context", "has %d keys, more than the limit of %d", len(r.context), MaxIdentityContextKeys)
	} else {
		checkContext(&ps, "identity_context", r.context, l)
	}
	switch {
	case confirm && len(r.evidence) == 0:
		ps.Add("evidence", "a %s needs evidence that distinguishes the identities", r.op)
	case len(r.evidence) > 0 && checkCount(&ps, "evidence", len(r.evidence), l.MaxEvidence):
		checkEvidence(&ps, r.evidence, l, false)
	}
	checkText(&ps, "reason", r.reason, false, 4096)
	checkText(&ps, "idempotency_key", r.key, confirm, l.MaxTextBytes)
	return ps.Err()
}
